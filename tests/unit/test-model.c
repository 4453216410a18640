/* nbdkit-ftl: randomized model test.
 *
 * Drives the FTL with a seeded random mix of writes, trims, zeros, reads
 * and flushes of any alignment on a tiny geometry (so that garbage
 * collection runs thousands of times), and compares every read with a
 * plain reference array.  In the middle it closes and reopens the image
 * (clean shutdown) and abandons it after a flush (as if the process had
 * been killed), and checks that the reopened image matches the model.
 *
 * FTL_MODEL_SEED and FTL_MODEL_OPS in the environment override the seed
 * and the number of operations; the seed is printed.  make check runs a
 * tenth of the operations given below (about 190,000), make check-long
 * (FTL_CHECK_LONG=1) all of them.  A trim that unmapped one page past
 * its range at every 7th page fails every case of the short form
 * within a few hundred operations.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl.h"
#include "ftl-internal.h"

static char tmpdir[] = "/tmp/ftl-model.XXXXXX";
static char path[256];

/* The directory is made and removed by the parent process (unchecked
 * fixture), so that it goes away even when a test fails or is killed in
 * its forked child; each test starts without the image.
 */
static void
dir_create (void)
{
  if (mkdtemp (tmpdir) == NULL) {
    perror ("mkdtemp");
    abort ();
  }
  snprintf (path, sizeof path, "%s/disk.img", tmpdir);
}

static void
dir_remove (void)
{
  unlink (path);
  rmdir (tmpdir);
}

static void
setup (void)
{
  unlink (path);
}

static void
quiet_log (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level == FTL_LOG_ERROR)
    fprintf (stderr, "ftl error: %s\n", msg);
}

/* xorshift64*: a small seeded generator. */
static uint64_t rng;
static uint64_t
rnd (void)
{
  rng ^= rng >> 12; rng ^= rng << 25; rng ^= rng >> 27;
  return rng * 0x2545F4914F6CDD1DULL;
}

static uint64_t
getenv_u64 (const char *name, uint64_t def)
{
  const char *s = getenv (name);
  return s && *s ? strtoull (s, NULL, 0) : def;
}

/* The model checks the FTL's logic, not the disk: syncs are free. */
static int
nosync (void *opaque, int fd)
{
  return 0;
}
static struct ftl_io model_io;
static enum ftl_gc_policy model_policy = FTL_GC_GREEDY;
static uint32_t model_wl;       /* wl_threshold, 0 = default */
static uint64_t model_cache;    /* write_cache_bytes, 0 = none */
/* The write cache's counters, summed over the opens of a run. */
static uint64_t cache_hits, cache_coalesced, cache_destaged, cache_dropped;

static void
sum_cache_stats (struct ftl *ftl)
{
  struct ftl_stats st;

  ftl_get_stats (ftl, &st);
  cache_hits += st.cache.hits;
  cache_coalesced += st.cache.coalesced_pages;
  cache_destaged += st.cache.destaged_pages;
  cache_dropped += st.cache.dropped_pages;
}

static struct ftl *
open_image (uint64_t size, uint32_t ps, uint32_t ppb, double op,
            unsigned streams)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = size, .page_size = ps,
    .pages_per_block = ppb, .op_percent = op, .streams = streams,
    .log = quiet_log, .io = &model_io, .gc_policy = model_policy,
    .wl_threshold = model_wl, .write_cache_bytes = model_cache,
    .endurance = 1000000,       /* these runs erase each block ~10000 times */
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);
  ck_assert_msg (r == 0, "ftl_open: %s", err);
  return ftl;
}

static void
check_all (struct ftl *ftl, const uint8_t *ref, uint64_t size)
{
  uint8_t *buf = malloc (size);
  ck_assert_int_eq (ftl_read (ftl, buf, size, 0), 0);
  for (uint64_t i = 0; i < size; i++)
    if (buf[i] != ref[i])
      ck_abort_msg ("byte %" PRIu64 " is %u, expected %u", i, buf[i], ref[i]);
  free (buf);
}

/* Check the FTL's own accounting against the map. */
static void
check_invariants (struct ftl *ftl)
{
  uint32_t *valid = calloc (ftl->blocks, sizeof *valid);
  uint64_t mapped = 0;
  for (uint64_t l = 0; l < ftl->logical_pages; l++) {
    uint32_t ppn = l2p_load (ftl, l);
    if (ppn == FTL_UNMAPPED) continue;
    mapped++;
    struct ftl_oob o;
    uint8_t ob[FTL_OOB_BYTES];
    ck_assert_int_eq (media_read_oob (&ftl->media,
                                      media_ppn_block (&ftl->media, ppn),
                                      media_ppn_page (&ftl->media, ppn), 1,
                                      ob), 0);
    ck_assert_int_eq (fmt_oob_decode (ob, sizeof ob, &o), FTL_FMT_OK);
    ck_assert_uint_eq (o.kind, FTL_OOB_DATA);
    ck_assert_uint_eq (o.lpn, l);
    valid[media_ppn_block (&ftl->media, ppn)]++;
  }
  ck_assert_uint_eq (mapped, ftl->mapped);
  uint32_t nfree = 0;
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    ck_assert_uint_eq (valid[b], ftl->valid[b]);
    if (ftl->state[b] == FTL_BLK_FREE) {
      nfree++;
      ck_assert_uint_eq (valid[b], 0);
      ck_assert_uint_eq (ftl->media.wp[b], 0);
    }
  }
  ck_assert_uint_eq (nfree, ftl->nfree);
  free (valid);
  /* The library's own cross-check agrees. */
  ck_assert_int_eq (selfcheck_run (ftl, "model"), 0);
}

static void
run_model (uint64_t size, uint32_t ps, uint32_t ppb, double op,
           unsigned streams, uint64_t nops)
{
  uint64_t seed = getenv_u64 ("FTL_MODEL_SEED", 0);
  uint8_t *ref = calloc (1, size), *buf = malloc (size), *pat = malloc (size);
  struct ftl *ftl;
  struct ftl_stats st;

  model_io = media_default_io;
  model_io.sync = nosync;
  if (!seed) seed = 0x9e3779b97f4a7c15ULL ^ (uint64_t) getpid ();
  rng = seed;
  /* make check runs a tenth of each test's operations, make check-long
   * (FTL_CHECK_LONG=1) all of them; the checks are the same.
   */
  if (!getenv_u64 ("FTL_CHECK_LONG", 0))
    nops /= 10;
  nops = getenv_u64 ("FTL_MODEL_OPS", nops);
  printf ("model: size %" PRIu64 " page %u ppb %u op %g streams %u gc %s "
          "write cache %" PRIu64 ": %" PRIu64 " ops, FTL_MODEL_SEED=%" PRIu64
          "\n", size, ps, ppb, op, streams, ftl_gc_policy_name (model_policy),
          model_cache, nops, seed);

  ftl = open_image (size, ps, ppb, op, streams);
  for (uint64_t i = 0; i < nops; i++) {
    uint64_t kind = rnd () % 100;
    uint64_t off, len;
    /* Mostly small requests, sometimes large ones. */
    if (rnd () % 8 == 0) {
      off = rnd () % size;
      len = 1 + rnd () % (size - off);
    }
    else {
      off = rnd () % size;
      len = 1 + rnd () % MIN (4 * ps, size - off);
    }
    if (rnd () % 2) {           /* aligned */
      off = off / ps * ps;
      len = MAX (ps, len / ps * ps);
      if (off + len > size) len = size - off;
    }
    if (kind < 60) {
      for (uint64_t k = 0; k < len; k++) pat[k] = rnd ();
      ck_assert_int_eq (ftl_write (ftl, pat, len, off,
                                   rnd () % 16 == 0 ? FTL_FUA : 0), 0);
      memcpy (ref + off, pat, len);
    }
    else if (kind < 70) {
      ck_assert_int_eq (ftl_trim (ftl, len, off, 0), 0);
      /* Trim may unmap the whole pages inside the range: they read as
       * zeros; partial pages are untouched.
       */
      uint64_t a = (off + ps - 1) / ps * ps, b = (off + len) / ps * ps;
      if (off + len == size) b = size;
      if (a < b) memset (ref + a, 0, b - a);
    }
    else if (kind < 78) {
      ck_assert_int_eq (ftl_zero (ftl, len, off, 0), 0);
      memset (ref + off, 0, len);
    }
    else if (kind < 97) {
      ck_assert_int_eq (ftl_read (ftl, buf, len, off), 0);
      if (memcmp (buf, ref + off, len) != 0) {
        for (uint64_t k = 0; k < len; k++)
          if (buf[k] != ref[off + k])
            ck_abort_msg ("op %" PRIu64 ": byte %" PRIu64 " is %u, expected "
                          "%u (seed %" PRIu64 ")", i, off + k, buf[k],
                          ref[off + k], seed);
      }
    }
    else if (kind < 99)
      ck_assert_int_eq (ftl_flush (ftl), 0);
    else {
      check_invariants (ftl);
      sum_cache_stats (ftl);
      if (rnd () % 2) {
        ck_assert_int_eq (ftl_close (ftl), 0);
      }
      else {
        /* Killed after a flush: everything must be there. */
        ck_assert_int_eq (ftl_flush (ftl), 0);
        open_abandon (ftl);
      }
      ftl = open_image (0, 0, 0, 0, streams);
      check_invariants (ftl);
      check_all (ftl, ref, size);
    }
  }
  check_invariants (ftl);
  check_all (ftl, ref, size);
  sum_cache_stats (ftl);
  ftl_get_stats (ftl, &st);
  printf ("model: %" PRIu64 " host pages written, %" PRIu64 " programmed, "
          "%" PRIu64 " GC runs, %" PRIu64 " pages copied, waf %.3f, "
          "erase counts %u..%u\n", st.host_write_pages,
          st.media_program_pages, st.gc_runs, st.gc_copied_pages, st.waf,
          st.erase_min, st.erase_max);
  if (model_cache) {
    printf ("model: write cache: %" PRIu64 " hits, %" PRIu64 " coalesced, "
            "%" PRIu64 " destaged, %" PRIu64 " dropped\n", cache_hits,
            cache_coalesced, cache_destaged, cache_dropped);
    ck_assert_uint_gt (cache_hits, nops / 100);
    ck_assert_uint_gt (cache_coalesced, nops / 100);
    ck_assert_uint_gt (cache_destaged, nops / 10);
    ck_assert_uint_gt (cache_dropped, nops / 100);
  }
  ck_assert_uint_gt (st.gc_runs, nops / 50);
  printf ("model: static wear leveling (threshold %u) moved %" PRIu64
          " pages\n", st.wl_threshold, st.wl_moved_pages);
  if (model_wl)
    ck_assert_uint_gt (st.wl_moved_pages, 0);
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* And once more after the final clean shutdown. */
  ftl = open_image (0, 0, 0, 0, 0);
  check_all (ftl, ref, size);
  ck_assert_int_eq (ftl_close (ftl), 0);
  free (ref);
  free (buf);
  free (pat);
}

START_TEST (test_model_small_pages)
{
  run_model (64 * 1024, 512, 8, 100, 1, 600000);
}
END_TEST

START_TEST (test_model_4k_streams)
{
  run_model (1024 * 1024, 4096, 8, 50, 2, 400000);
}
END_TEST

START_TEST (test_model_odd_size)
{
  /* A size that is not a multiple of the page size. */
  run_model (300 * 1024 + 512, 4096, 8, 150, 1, 200000);
}
END_TEST

START_TEST (test_model_cost_benefit)
{
  /* With a tight wear leveling threshold, so that it runs often. */
  model_policy = FTL_GC_COST_BENEFIT;
  model_wl = 2;
  run_model (128 * 1024, 512, 16, 60, 1, 300000);
  model_policy = FTL_GC_GREEDY;
  model_wl = 0;
}
END_TEST

START_TEST (test_model_write_cache)
{
  /* A cache of 16 pages of 512 bytes: full most of the time, so that
   * writes destage, trims and zeros drop cached pages, and reads,
   * partial writes and flushes meet pages in flight.
   */
  model_cache = 16 * 512;
  run_model (64 * 1024, 512, 8, 100, 1, 400000);
  model_cache = 0;
}
END_TEST

/* The self-check finds what is wrong, one line per inconsistency. */
static unsigned selfcheck_lines;

static void
selfcheck_log (void *opaque, enum ftl_log_level level, const char *msg)
{
  (void) opaque;
  if (level == FTL_LOG_ERROR && strstr (msg, "self-check (test)"))
    selfcheck_lines++;
}

START_TEST (test_selfcheck_finds_damage)
{
  char err[256];
  uint8_t page[512];
  struct ftl *ftl;

  struct ftl_options o = {
    .path = path, .logical_bytes = 64 * 1024, .page_size = 512,
    .pages_per_block = 8, .op_percent = 100, .log = selfcheck_log,
  };
  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
  for (uint32_t l = 0; l < 40; l++) {
    memset (page, l + 1, sizeof page);
    ck_assert_int_eq (ftl_write (ftl, page, sizeof page, l * 512, 0), 0);
  }
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  ck_assert_uint_eq (selfcheck_lines, 0);

  /* A valid count off by one. */
  uint32_t b = media_ppn_block (&ftl->media, l2p_load (ftl, 3));
  ftl->valid[b]++;
  ck_assert_int_eq (selfcheck_run (ftl, "test"), -EIO);
  ck_assert_uint_ge (selfcheck_lines, 1);
  ftl->valid[b]--;

  /* Two logical pages on one physical page. */
  uint32_t saved = l2p_load (ftl, 5);
  l2p_set (ftl, 5, l2p_load (ftl, 4));
  selfcheck_lines = 0;
  ck_assert_int_eq (selfcheck_run (ftl, "test"), -EIO);
  ck_assert_uint_ge (selfcheck_lines, 1);
  l2p_set (ftl, 5, saved);

  /* The free pool miscounted. */
  ftl->nfree++;
  selfcheck_lines = 0;
  ck_assert_int_eq (selfcheck_run (ftl, "test"), -EIO);
  ck_assert_uint_eq (selfcheck_lines, 1);
  ftl->nfree--;

  selfcheck_lines = 0;
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  ck_assert_uint_eq (selfcheck_lines, 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

static Suite *
model_suite (void)
{
  Suite *s = suite_create ("model");
  TCase *tc = tcase_create ("model");
  tcase_add_unchecked_fixture (tc, dir_create, dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_model_small_pages);
  tcase_add_test (tc, test_model_4k_streams);
  tcase_add_test (tc, test_model_odd_size);
  tcase_add_test (tc, test_model_cost_benefit);
  tcase_add_test (tc, test_model_write_cache);
  tcase_add_test (tc, test_selfcheck_finds_damage);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (model_suite ());
  int failed;
  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
