/* nbdkit-ftl: unit tests of data placement (placement=, log/alloc.c)
 * and of the counters of each namespace (ftl_ns_get_stats).
 *
 * Isolated placement: two namespaces written in turn, at random, until
 * garbage collection has copied pages many times, through the write
 * cache and around it: no erase block holds data pages of both, before
 * GC, after it and after a reopen (which keeps the placement, and
 * refuses another).  Initially isolated: the blocks the host frontiers
 * opened hold one namespace each; GC's may mix.  Shared: the checker
 * finds blocks that mix them (so that it can fail).  The counters:
 * exact bytes for writes, partial writes, reads, trims and mapped
 * pages, and the copies of GC charged to the namespace of each page
 * copied, which add up to the device's.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"
#include "helpers.h"

#define PS   4096
#define PPB  16

static const struct ftl_ns_spec two[] = {
  { "a", 1 << 20 }, { "b", 1 << 20 },
};

static struct ftl *
open_place (const char *path, unsigned placement, bool cached,
            char *err, size_t errlen, int *r)
{
  struct ftl_options o = {
    .path = path, .page_size = PS, .pages_per_block = PPB,
    .op_percent = 60, .streams = 1, .placement = placement,
    .namespaces = two, .nnamespaces = 2,
    .write_cache_bytes = cached ? 64 * PS : 0,
    .log = unit_log, .io = unit_nosync_io (),
  };
  struct ftl *ftl = NULL;

  *r = ftl_open (&o, &ftl, err, errlen);
  return ftl;
}

/* The namespace of logical page lpn, from the image's table. */
static int
ns_of (struct ftl *ftl, uint64_t lpn)
{
  for (unsigned i = 0; i < ftl->ns_table.count; i++) {
    const struct ftl_ns_entry *e = &ftl->ns_table.ns[i];
    if (lpn >= e->base && lpn < e->base + e->bytes / PS)
      return i;
  }
  return -1;
}

/* The namespaces whose data pages block b holds since its last erase:
 * a bit each.
 */
static unsigned
block_namespaces (struct ftl *ftl, uint32_t b)
{
  uint32_t ec = media_erase_count (&ftl->media, b);
  unsigned bits = 0;

  for (uint32_t p = 0; p < ftl->media.wp[b]; p++) {
    struct ftl_oob o;
    if (unit_oob_at (ftl, media_ppn (&ftl->media, b, p), &o) < 0 ||
        o.erase_count != ec || o.kind != FTL_OOB_DATA)
      continue;
    int ns = ns_of (ftl, o.lpn);
    ck_assert_int_ge (ns, 0);
    bits |= 1u << ns;
  }
  return bits;
}

/* Blocks holding data of more than one namespace. */
static unsigned
mixed_blocks (struct ftl *ftl)
{
  unsigned mixed = 0;

  for (uint32_t b = 0; b < ftl->blocks; b++) {
    unsigned bits = block_namespaces (ftl, b);
    mixed += (bits & (bits - 1)) != 0;
  }
  return mixed;
}

/* Blocks that host frontiers hold open now, with their erase count
 * (remembered by the caller: such a block holds host writes of its
 * group only until its next erase).
 */
struct seen { uint32_t ec[4096]; bool host[4096]; };

static void
note_host_blocks (struct ftl *ftl, struct seen *s)
{
  for (unsigned g = 0; g < ftl->place.host_groups; g++)
    for (unsigned hot = 0; hot < 2; hot++) {
      struct frontier *f = alloc_host_frontier (ftl, hot, g);
      if (f->block != FTL_NO_BLOCK) {
        ck_assert_uint_lt (f->block, 4096);
        s->host[f->block] = true;
        s->ec[f->block] = media_erase_count (&ftl->media, f->block);
      }
    }
}

/* Write the two namespaces in turn at random pages, n writes; note
 * the host frontiers' blocks after each if s.
 */
static void
write_turns (struct ftl *ftl, uint64_t *rnd, unsigned n, struct seen *s)
{
  uint8_t page[PS];

  for (unsigned i = 0; i < n; i++) {
    struct ftl_ns *ns = ftl_ns_at (ftl, i % 2);
    uint64_t off = unit_rnd (rnd) % ((1 << 20) / PS) * PS;
    unit_fill_page (page, PS, i, 1);
    ck_assert_int_eq (ftl_ns_write (ns, page, PS, off, 0), 0);
    if (s)
      note_host_blocks (ftl, s);
  }
  ck_assert_int_eq (ftl_flush (ftl), 0);
}

static uint64_t
gc_copies (struct ftl *ftl)
{
  struct ftl_stats st;

  ftl_get_stats (ftl, &st);
  return st.gc_copied_pages + st.wl_moved_pages;
}

START_TEST (test_isolated)
{
  char path[256], err[512];
  uint64_t rnd = 7;
  struct ftl *ftl;
  int r;

  for (int cached = 0; cached < 2; cached++) {
    unit_dir_create ();
    unit_path (path, sizeof path, "iso.img");
    ftl = open_place (path, FTL_PLACE_ISOLATED, cached, err, sizeof err, &r);
    ck_assert_msg (r == 0, "%s", err);
    ck_assert_uint_eq (ftl->place.host_groups, 2);
    ck_assert_uint_eq (ftl->place.gc_groups, 2);
    /* Each namespace once over: no GC yet. */
    write_turns (ftl, &rnd, 512, NULL);
    ck_assert_uint_eq (mixed_blocks (ftl), 0);
    /* Overwrites: GC copies pages many times over. */
    write_turns (ftl, &rnd, 4096, NULL);
    ck_assert_uint_gt (gc_copies (ftl), 512);
    ck_assert_uint_eq (mixed_blocks (ftl), 0);
    ck_assert_int_eq (ftl_close (ftl), 0);

    /* Reopened, with the placement left out: the image's. */
    ftl = open_place (path, FTL_PLACE_DEFAULT, cached, err, sizeof err, &r);
    ck_assert_msg (r == 0, "%s", err);
    ck_assert_uint_eq (ftl->place.mode, FTL_PLACEMENT_ISOLATED);
    ck_assert_uint_eq (mixed_blocks (ftl), 0);
    write_turns (ftl, &rnd, 2048, NULL);
    ck_assert_uint_eq (mixed_blocks (ftl), 0);
    ck_assert_int_eq (ftl_close (ftl), 0);

    /* Another placement is refused, with the image's named. */
    unit_quiet = true;
    ftl = open_place (path, FTL_PLACE_SHARED, cached, err, sizeof err, &r);
    unit_quiet = false;
    ck_assert_int_eq (r, -EINVAL);
    ck_assert_ptr_nonnull (strstr (err, "placement=shared differs from the "
                                   "image's placement=isolated"));
    unit_dir_remove ();
  }
}
END_TEST

START_TEST (test_initially_isolated)
{
  char path[256], err[512];
  uint64_t rnd = 11;
  struct seen *s = calloc (1, sizeof *s);
  struct ftl *ftl;
  unsigned checked = 0;
  int r;

  ck_assert_ptr_nonnull (s);
  unit_dir_create ();
  unit_path (path, sizeof path, "init.img");
  ftl = open_place (path, FTL_PLACE_INITIALLY_ISOLATED, false, err,
                    sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl->place.host_groups, 2);
  ck_assert_uint_eq (ftl->place.gc_groups, 1);
  write_turns (ftl, &rnd, 4096, s);
  ck_assert_uint_gt (gc_copies (ftl), 512);
  /* Every block a host frontier opened, not erased since: one
   * namespace.
   */
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (!s->host[b] || media_erase_count (&ftl->media, b) != s->ec[b])
      continue;
    unsigned bits = block_namespaces (ftl, b);
    ck_assert_msg ((bits & (bits - 1)) == 0, "host block %u holds data of "
                   "namespaces 0x%x", b, bits);
    checked++;
  }
  ck_assert_uint_gt (checked, 4);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_dir_remove ();
  free (s);
}
END_TEST

/* The checker finds mixed blocks where there are some. */
START_TEST (test_shared_mixes)
{
  char path[256], err[512];
  uint64_t rnd = 13;
  struct ftl *ftl;
  int r;

  unit_dir_create ();
  unit_path (path, sizeof path, "shared.img");
  ftl = open_place (path, FTL_PLACE_DEFAULT, false, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl->place.mode, FTL_PLACEMENT_SHARED);
  ck_assert_uint_eq (ftl->place.host_groups, 1);
  write_turns (ftl, &rnd, 512, NULL);
  ck_assert_uint_gt (mixed_blocks (ftl), 8);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_dir_remove ();
}
END_TEST

/* Geometries that cannot hold each namespace's frontiers: refused. */
START_TEST (test_place_refused)
{
  char path[256], err[512];
  struct ftl_options o = {
    .page_size = PS, .pages_per_block = PPB, .op_percent = 20,
    .streams = 1, .placement = FTL_PLACE_ISOLATED,
    .namespaces = two, .nnamespaces = 2,
    .log = unit_log, .io = unit_nosync_io (),
  };
  struct ftl *ftl = NULL;

  unit_dir_create ();
  unit_path (path, sizeof path, "small.img");
  o.path = path;
  unit_quiet = true;
  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), -EINVAL);
  ck_assert_msg (strstr (err, "needed by the frontiers of each "
                         "namespace's placement") != NULL, "%s", err);
  /* One namespace: nothing to keep apart. */
  o.op_percent = 60;
  o.nnamespaces = 0;
  o.logical_bytes = 1 << 20;
  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), -EINVAL);
  ck_assert_msg (strstr (err, "placement=isolated needs namespaces=")
                 != NULL, "%s", err);
  unit_quiet = false;
  unit_dir_remove ();
}
END_TEST

START_TEST (test_ns_counters)
{
  char path[256], err[512];
  uint8_t buf[8 * PS];
  struct ftl_ns_stats a, b;
  struct ftl_stats st;
  uint64_t rnd = 17;
  struct ftl *ftl;
  int r;

  unit_dir_create ();
  unit_path (path, sizeof path, "ctr.img");
  ftl = open_place (path, FTL_PLACE_ISOLATED, false, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  struct ftl_ns *na = ftl_ns_at (ftl, 0), *nb = ftl_ns_at (ftl, 1);

  memset (buf, 0x5a, sizeof buf);
  ck_assert_int_eq (ftl_ns_write (na, buf, 8 * PS, 0, 0), 0);
  ck_assert_int_eq (ftl_ns_write (na, buf, 2 * PS, 16 * PS, 0), 0);
  /* 512 bytes: a page programmed for them. */
  ck_assert_int_eq (ftl_ns_write (nb, buf, 512, 3 * PS + 512, 0), 0);
  ck_assert_int_eq (ftl_ns_read (na, buf, 3 * PS, PS), 0);
  ck_assert_int_eq (ftl_ns_read (nb, buf, 100, 0), 0);
  ck_assert_int_eq (ftl_ns_trim (na, 2 * PS, 16 * PS, 0), 0);
  /* Out of range: refused, not counted. */
  unit_quiet = true;
  ck_assert_int_eq (ftl_ns_write (nb, buf, PS, 1 << 20, 0), -EINVAL);
  unit_quiet = false;

  ftl_ns_get_stats (na, &a);
  ftl_ns_get_stats (nb, &b);
  ck_assert_uint_eq (a.host_write_bytes, 10 * PS);
  ck_assert_uint_eq (a.host_write_commands, 2);
  ck_assert_uint_eq (a.host_read_bytes, 3 * PS);
  ck_assert_uint_eq (a.host_read_commands, 1);
  ck_assert_uint_eq (a.host_trim_bytes, 2 * PS);
  ck_assert_uint_eq (a.host_trim_commands, 1);
  ck_assert_uint_eq (a.mapped_pages, 8);
  ck_assert_uint_eq (a.media_write_bytes, 10 * PS);
  ck_assert_uint_eq (a.gc_write_bytes, 0);
  ck_assert (a.waf == 1.0);
  ck_assert_uint_eq (b.host_write_bytes, 512);
  ck_assert_uint_eq (b.host_write_commands, 1);
  ck_assert_uint_eq (b.host_read_bytes, 100);
  ck_assert_uint_eq (b.host_trim_bytes, 0);
  ck_assert_uint_eq (b.mapped_pages, 1);
  ck_assert_uint_eq (b.media_write_bytes, PS);
  ck_assert (b.waf == 8.0);

  /* Overwrites of both: GC's copies are charged to the namespace of
   * each page, and add up to the device's.
   */
  write_turns (ftl, &rnd, 4096, NULL);
  ftl_ns_get_stats (na, &a);
  ftl_ns_get_stats (nb, &b);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_gt (a.gc_write_bytes, 0);
  ck_assert_uint_gt (b.gc_write_bytes, 0);
  ck_assert_uint_eq (a.gc_write_bytes + b.gc_write_bytes,
                     (st.gc_copied_pages + st.wl_moved_pages) * PS);
  ck_assert_uint_eq (a.host_write_bytes, 10 * PS + 2048 * PS);
  ck_assert_uint_eq (b.host_write_bytes, 512 + 2048 * PS);
  ck_assert_uint_eq (a.media_write_bytes,
                     10 * PS + 2048 * PS + a.gc_write_bytes);
  ck_assert_uint_eq (b.media_write_bytes, PS + 2048 * PS + b.gc_write_bytes);
  ck_assert_uint_eq (a.mapped_pages + b.mapped_pages, st.mapped_pages);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_dir_remove ();
}
END_TEST

static Suite *
placement_suite (void)
{
  Suite *s = suite_create ("placement");
  TCase *tc;

  tc = tcase_create ("placement");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_isolated);
  tcase_add_test (tc, test_initially_isolated);
  tcase_add_test (tc, test_shared_mixes);
  tcase_add_test (tc, test_place_refused);
  tcase_add_test (tc, test_ns_counters);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (placement_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
