/* nbdkit-ftl: unit tests of the SLC cache (ftl/slc.c).
 *
 * The budget arithmetic, then on small images with manual background
 * steps: host writes fill SLC blocks (each holding pages_per_block /
 * cell_bits pages) until the budget is exhausted, then native blocks;
 * folds empty the cache; the mode of each block survives a clean
 * restart and a crash; a full disk with the cache on takes rewrites.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"
#include "helpers.h"

#define PS 4096
#define PPB 64
#define BITS 4
#define CAP (PPB / BITS)
#define LPAGES 1024             /* 16 erase blocks of data */

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "slc.img");
}

/* op 100: 16 blocks of spare, FTL_MIN_SPARE_BLOCKS (1) = 10 of them
 * needed: the static part may take (16 - 10) * 64 / 2 / 48 = 4 blocks.
 */
static struct ftl *
open_slc (uint64_t static_bytes, uint64_t dynamic_bytes)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = (uint64_t) LPAGES * PS, .page_size = PS,
    .pages_per_block = PPB, .op_percent = 100, .streams = 1,
    .one_log = true, .log = unit_log, .io = unit_nosync_io (),
    .manual_background = true,
    .slc = {
      .static_bytes = static_bytes, .dynamic_bytes = dynamic_bytes,
      .cell_bits = BITS, .fold_idle_ns = UINT64_MAX,
    },
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);

  ck_assert_msg (r == 0, "ftl_open: %s", err);
  ck_assert_int_eq (ftl_start_background (ftl), 0);
  return ftl;
}

static void
write_pages (struct ftl *ftl, uint64_t first, uint64_t n, uint64_t version)
{
  uint8_t buf[8 * PS];

  for (uint64_t l = first; l < first + n; l += 8) {
    uint64_t k = MIN (8, first + n - l);
    for (uint64_t i = 0; i < k; i++)
      unit_fill_page (buf + i * PS, PS, l + i, version);
    ck_assert_int_eq (ftl_write (ftl, buf, k * PS, l * PS, 0), 0);
  }
}

static void
check_pages (struct ftl *ftl, uint64_t first, uint64_t n, uint64_t version)
{
  uint8_t page[PS];
  uint64_t lpn, v;

  for (uint64_t l = first; l < first + n; l++) {
    ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
    ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &v), 1);
    ck_assert_uint_eq (lpn, l);
    ck_assert_uint_eq (v, version);
  }
}

/* Blocks in SLC mode, each checked: never more than CAP pages. */
static uint32_t
count_slc (struct ftl *ftl)
{
  uint32_t n = 0;

  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (!media_block_slc (&ftl->media, b))
      continue;
    n++;
    ck_assert_uint_le (ftl->media.wp[b], CAP);
    ck_assert (ftl->state[b] == FTL_BLK_OPEN ||
               ftl->state[b] == FTL_BLK_FULL);
  }
  ck_assert_uint_eq (n, ftl->slc.used);
  return n;
}

/* Run background steps until none has anything to do. */
static void
idle_fold (struct ftl *ftl)
{
  int r, steps = 0;

  ftl->slc.fold_idle_ns = 1;
  while ((r = ftl_background_step (ftl)) == 1)
    ck_assert_int_lt (++steps, 10000);
  ck_assert_int_eq (r, 0);
}

START_TEST (test_budget)
{
  /* Static blocks, plus a block per ppb logical pages free. */
  ck_assert_uint_eq (slc_budget_blocks (2, UINT64_MAX, 1024, 0, 64), 18);
  ck_assert_uint_eq (slc_budget_blocks (2, UINT64_MAX, 1024, 640, 64), 8);
  ck_assert_uint_eq (slc_budget_blocks (2, UINT64_MAX, 1024, 1000, 64), 2);
  /* A full disk keeps the static part only. */
  ck_assert_uint_eq (slc_budget_blocks (2, UINT64_MAX, 1024, 1024, 64), 2);
  ck_assert_uint_eq (slc_budget_blocks (0, UINT64_MAX, 1024, 1024, 64), 0);
  /* The dynamic limit. */
  ck_assert_uint_eq (slc_budget_blocks (2, 5, 1024, 0, 64), 7);
  ck_assert_uint_eq (slc_budget_blocks (2, 0, 1024, 0, 64), 2);
  /* Static: half the spare beyond the minimum, in wasted pages:
   * (32 - 10) * 64 / 2 = 704 pages, 48 wasted per QLC block in SLC
   * mode (16 for TLC at 64/3 = 21 pages, 43 wasted).
   */
  ck_assert_uint_eq (slc_static_limit (32, 10, 64, 16), 14);
  ck_assert_uint_eq (slc_static_limit (32, 10, 64, 21), 16);
  ck_assert_uint_eq (slc_static_limit (10, 10, 64, 16), 0);
  ck_assert_uint_eq (slc_static_limit (5, 10, 64, 16), 0);

  /* The dynamic part's waste always fits in the free logical space:
   * blocks * (ppb - cap) <= logical - mapped, for every fill level.
   */
  for (uint64_t mapped = 0; mapped <= 1024; mapped += 7) {
    uint64_t d = slc_budget_blocks (0, UINT64_MAX, 1024, mapped, 64);
    ck_assert_uint_le (d * (64 - 16), 1024 - mapped);
  }
}
END_TEST

/* Refused: a static part larger than the spare allows, bad cell bits. */
START_TEST (test_options)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = (uint64_t) LPAGES * PS, .page_size = PS,
    .pages_per_block = PPB, .op_percent = 100, .streams = 1,
    .log = unit_log, .io = unit_nosync_io (),
    .slc = { .static_bytes = 5 * CAP * PS, .cell_bits = BITS },
  };
  struct ftl *ftl;
  char err[512];

  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), -EINVAL);
  ck_assert_msg (strstr (err, "slc-static") != NULL, "%s", err);
  o.slc.static_bytes = 4 * CAP * PS;
  o.slc.cell_bits = 5;
  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), -EINVAL);
  ck_assert_msg (strstr (err, "cell-bits") != NULL, "%s", err);
  o.slc.cell_bits = BITS;
  int r = ftl_open (&o, &ftl, err, sizeof err);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert (ftl->slc.enabled);
  ck_assert_uint_eq (ftl->slc.static_blocks, 4);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* Writes fill the cache, then fall to native blocks (the cliff); an idle
 * fold empties it, data intact.
 */
START_TEST (test_fill_and_fold)
{
  struct ftl *ftl = open_slc (2 * CAP * PS, FTL_SLC_AUTO);
  struct ftl_stats st;

  ftl_get_stats (ftl, &st);
  ck_assert (st.slc);
  ck_assert_uint_eq (st.slc_size_pages, (2 + LPAGES / PPB) * CAP);
  ck_assert_uint_eq (st.slc_exhausted, 0);

  /* A few pages: SLC. */
  write_pages (ftl, 0, 40, 1);
  ck_assert_uint_eq (count_slc (ftl), 3);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.slc_used_pages, 40);

  /* Past the budget: k blocks hold 16 k pages, budget 2 + (1024 -
   * 16 k) / 64: exhausted at 14 blocks (224 pages); the rest native.
   */
  write_pages (ftl, 40, 600, 1);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.slc_exhausted, 1);
  ck_assert_uint_eq (count_slc (ftl), 14);
  ck_assert_uint_eq (st.slc_used_pages, 14 * CAP);
  ck_assert_uint_eq (st.slc_folded_pages, 0);
  uint64_t programs = st.media_program_pages;

  /* Idle: everything folds (what is beyond the budget first). */
  idle_fold (ftl);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (count_slc (ftl), 0);
  ck_assert_uint_eq (st.slc_used_pages, 0);
  ck_assert_uint_eq (st.slc_folded_pages, 14 * CAP);
  /* Folds are programs: in the WAF. */
  ck_assert_uint_eq (st.media_program_pages, programs + 14 * CAP);
  check_pages (ftl, 0, 640, 1);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);

  /* The cache fills again, and the cliff counts again. */
  write_pages (ftl, 640, 384, 1);
  write_pages (ftl, 0, 200, 2);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.slc_exhausted, 2);
  check_pages (ftl, 0, 200, 2);
  check_pages (ftl, 200, 824, 1);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* The mode survives a clean restart and a crash. */
START_TEST (test_persist)
{
  struct ftl *ftl = open_slc (2 * CAP * PS, FTL_SLC_AUTO);
  uint8_t slc[512];

  write_pages (ftl, 0, 100, 1);
  ck_assert_uint_eq (count_slc (ftl), 7);
  for (uint32_t b = 0; b < ftl->blocks; b++)
    slc[b] = media_block_slc (&ftl->media, b);
  ck_assert_int_eq (ftl_close (ftl), 0);

  ftl = open_slc (2 * CAP * PS, FTL_SLC_AUTO);
  ck_assert_uint_eq (count_slc (ftl), 7);
  for (uint32_t b = 0; b < ftl->blocks; b++)
    ck_assert_uint_eq (media_block_slc (&ftl->media, b), slc[b]);
  check_pages (ftl, 0, 100, 1);

  /* Written after the checkpoint, then a crash: the blocks scanned
   * say their mode.
   */
  write_pages (ftl, 100, 60, 1);
  uint32_t n = count_slc (ftl);
  ck_assert_uint_gt (n, 7);
  open_abandon (ftl);
  ftl = open_slc (2 * CAP * PS, FTL_SLC_AUTO);
  ck_assert_uint_eq (count_slc (ftl), n);
  check_pages (ftl, 0, 160, 1);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);

  /* Opened without the cache: the blocks are still folded. */
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = open_slc (0, 0);
  ck_assert (!ftl->slc.enabled);
  ck_assert_uint_eq (count_slc (ftl), n);
  idle_fold (ftl);
  ck_assert_uint_eq (count_slc (ftl), 0);
  check_pages (ftl, 0, 160, 1);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* A full disk with the cache on: rewrites never fail, the dynamic part
 * is gone and the static part stays.
 */
START_TEST (test_full_disk)
{
  struct ftl *ftl = open_slc (4 * CAP * PS, FTL_SLC_AUTO);
  struct ftl_stats st;
  uint64_t rnd = 42;

  write_pages (ftl, 0, LPAGES, 1);
  for (int round = 2; round <= 6; round++) {
    for (int i = 0; i < 64; i++) {
      uint64_t l = unit_rnd (&rnd) % (LPAGES - 16);
      write_pages (ftl, l, 16, round * 1000 + i);
    }
    /* Every few rounds the background runs a while. */
    if (round % 2 == 0)
      for (int i = 0; i < 8; i++)
        ck_assert_int_ge (ftl_background_step (ftl), 0);
  }
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.mapped_pages, LPAGES);
  ck_assert_uint_eq (st.slc_size_pages, 4 * CAP);
  ck_assert_uint_le (count_slc (ftl), 4 + 1);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  idle_fold (ftl);
  ck_assert_uint_eq (count_slc (ftl), 0);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* A read retry step re-reads the page: on a block in SLC mode it costs
 * the SLC read time, elsewhere the block's native one.  The modeled end
 * is recorded (media_defer), not slept, and compared with the clock
 * read around the call: the check does not depend on the host's speed.
 */
START_TEST (test_retry_time)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = (uint64_t) LPAGES * PS, .page_size = PS,
    .pages_per_block = PPB, .op_percent = 100, .streams = 1,
    .one_log = true, .log = unit_log, .io = unit_nosync_io (),
    .manual_background = true,
    .slc = {
      .cell_bits = BITS, .fold_idle_ns = UINT64_MAX, .read_ns = 1000000,
    },
    .timing = {
      .enabled = true, .channels = 1, .dies = 1, .planes = 1,
      .read_ns = 10000000,
    },
  };
  struct ftl *ftl;
  struct media *m;
  char err[256];
  const uint32_t steps = 4;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  m = &ftl->media;
  ck_assert_ptr_nonnull (m->timing);
  for (int slc = 1; slc >= 0; slc--) {
    uint32_t blk = ftl->blocks - 1;
    bool was = media_block_slc (m, blk);
    uint64_t lat = slc ? 1000000 : 10000000;
    media_set_slc (m, blk, slc);
    /* The unit is idle once its earlier work has ended. */
    uint64_t free = __atomic_load_n (&m->timing->die_free[0],
                                     __ATOMIC_RELAXED);
    free = MAX (free, __atomic_load_n (&m->timing->die_rfree[0],
                                       __ATOMIC_RELAXED));
    uint64_t before = clock_now ();
    media_defer (m);
    ck_assert_int_eq (media_read_retry (m, blk, steps), 0);
    uint64_t end = media_deferred (m);
    uint64_t after = clock_now ();
    media_set_slc (m, blk, was);
    ck_assert_msg (end >= before + steps * lat, "%s: %u retry steps end "
                   "%" PRIu64 " ns after the call, expected %" PRIu64,
                   slc ? "SLC" : "native", steps, end - before,
                   steps * lat);
    ck_assert_msg (end <= MAX (after, free) + steps * lat, "%s: %u retry "
                   "steps end %" PRIu64 " ns after the call, expected %"
                   PRIu64, slc ? "SLC" : "native", steps, end - before,
                   steps * lat);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

static Suite *
slc_suite (void)
{
  Suite *s = suite_create ("slc");
  TCase *tc = tcase_create ("slc");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_budget);
  tcase_add_test (tc, test_options);
  tcase_add_test (tc, test_fill_and_fold);
  tcase_add_test (tc, test_persist);
  tcase_add_test (tc, test_full_disk);
  tcase_add_test (tc, test_retry_time);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (slc_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
