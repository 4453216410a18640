/* nbdkit-ftl: unit tests of wl.c: blocks on their last cycle, and the
 * end of life.
 *
 * With a low endurance, a disk overwritten at random wears out within
 * seconds.  Its end must be clean: the write that finds the disk worn
 * out fails with -EROFS (never -ENOSPC, which would mean the free pool
 * ran dry first), every page still reads as its last version, and the
 * image opens read-only afterwards.  Near the end almost every erase
 * would retire its block, so a free pool that counted on erases giving
 * blocks back would drain; this is checked on images with a little and
 * with a lot of spare, with one stream and with the default streams,
 * with trims and flushes mixed in.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"

#define PS 4096

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "wl.img");
}

static struct ftl *
open_worn (uint64_t lpages, uint32_t ppb, double op, unsigned streams,
           uint32_t endurance)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = lpages * PS, .page_size = PS,
    .pages_per_block = ppb, .op_percent = op, .streams = streams,
    .endurance = endurance, .log = unit_log, .io = unit_nosync_io (),
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);

  ck_assert_msg (r == 0, "ftl_open: %s", err);
  return ftl;
}

static void
check_page (struct ftl *ftl, uint64_t l, uint64_t want, const char *when)
{
  uint8_t page[PS];
  uint64_t lpn, version;
  int r;

  ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
  r = unit_page_identify (page, PS, &lpn, &version);
  ck_assert_msg (r >= 0 && version == want && (r == 0 || lpn == l),
                 "%s: page %" PRIu64 " reads as version %" PRIu64
                 " (kind %d), not %" PRIu64, when, l, version, r, want);
}

/* Overwrite the disk at random (with trims and flushes if asked) until
 * a write fails: it must fail with -EROFS, with the data intact, and
 * the disk must stay read-only after a restart.
 */
static void
wear_out (uint64_t lpages, uint32_t ppb, double op, unsigned streams,
          uint32_t endurance, bool trims, uint64_t seed)
{
  struct ftl *ftl = open_worn (lpages, ppb, op, streams, endurance);
  uint64_t *ver = calloc (lpages, sizeof *ver);
  uint64_t rng = seed, n = 0, next = 1;
  struct ftl_stats st;
  uint8_t page[PS];
  int r;

  ck_assert_ptr_nonnull (ver);
  for (uint64_t l = 0; l < lpages; l++) {
    unit_fill_page (page, PS, l, next);
    ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
    ver[l] = next++;
  }
  for (;; n++) {
    uint64_t l = unit_rnd (&rng) % lpages, what = unit_rnd (&rng) % 64;
    if (trims && what == 0) {
      uint64_t k = 1 + unit_rnd (&rng) % 8;
      k = MIN (k, lpages - l);
      r = ftl_trim (ftl, k * PS, l * PS, 0);
      for (uint64_t i = 0; r == 0 && i < k; i++)
        ver[l + i] = 0;
    }
    else if (trims && what == 1)
      r = ftl_flush (ftl);
    else {
      unit_fill_page (page, PS, l, next);
      r = ftl_write (ftl, page, PS, l * PS, 0);
      if (r == 0)
        ver[l] = next++;
    }
    if (r < 0)
      break;
    ck_assert_msg (n < 1000 * lpages, "the disk never wore out");
  }
  ftl_get_stats (ftl, &st);
  printf ("wear out: %" PRIu64 " pages, %u blocks of %u, op %g%%, %u "
          "streams, endurance %u%s: %s after %" PRIu64 " requests, %u "
          "blocks retired, %u on their last cycle, erase counts %u..%u\n",
          lpages, ftl->blocks, ppb, op, ftl->nstreams, endurance,
          trims ? ", trims" : "", strerror (-r), n, st.retired_blocks,
          st.last_cycle_blocks, st.erase_min, st.erase_max);
  ck_assert_msg (r == -EROFS, "the disk ended with %s, not as worn out",
                 strerror (-r));
  ck_assert (st.read_only);
  ck_assert_uint_le (st.erase_max, endurance);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  for (uint64_t l = 0; l < lpages; l++)
    check_page (ftl, l, ver[l], "worn out");
  ck_assert_int_eq (ftl_close (ftl), 0);

  ftl = open_worn (lpages, ppb, op, streams, endurance);
  ck_assert (ftl_is_read_only (ftl));
  for (uint64_t l = 0; l < lpages; l++)
    check_page (ftl, l, ver[l], "after a restart");
  unit_fill_page (page, PS, 0, next);
  ck_assert_int_eq (ftl_write (ftl, page, PS, 0, 0), -EROFS);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unlink (path);
  free (ver);
}

/* How many seeds of a wear-out case to run: all of them in make
 * check-long (FTL_CHECK_LONG set, not 0), the first in make check,
 * which still runs every configuration to its end of life.
 */
static uint64_t
seeds (uint64_t all)
{
  const char *e = getenv ("FTL_CHECK_LONG");

  return e && *e && strcmp (e, "0") != 0 ? all : 1;
}

/* The fewest spare blocks one stream allows (10 of 74). */
START_TEST (test_end_of_life_min_spare)
{
  for (uint64_t seed = 1; seed <= seeds (3); seed++)
    wear_out (1024, 16, 15.625, 1, 20, false, seed);
}
END_TEST

/* 28% over-provisioning, 18 spare blocks: the default streams, and one
 * stream with trims and flushes.
 */
START_TEST (test_end_of_life_small)
{
  for (uint64_t seed = 1; seed <= seeds (3); seed++) {
    wear_out (4096, 64, 28, 0, 20, false, seed);
    wear_out (4096, 64, 28, 1, 20, true, seed);
  }
}
END_TEST

/* 72 spare blocks: many blocks must retire before the disk is worn out
 * by their count alone, and near the end nearly every erase retires
 * its block.
 */
START_TEST (test_end_of_life_large)
{
  for (uint64_t seed = 1; seed <= seeds (2); seed++) {
    wear_out (16384, 64, 28, 0, 10, false, seed);
    wear_out (16384, 64, 28, 1, 10, true, seed);
  }
}
END_TEST

/* A block on its last cycle is no GC victim even when it holds the
 * least valid data: its erase would retire it and give nothing back.
 * Block A, on its last cycle, holds 1 valid page; block B, not, holds
 * 4; GC reclaims B and leaves A as it is.  A is given its erase count
 * by hand while free, then filled through the cold GC frontier (which
 * takes the most worn free block).  Then the count of blocks on their
 * last cycle follows B through its last two erases.
 */
START_TEST (test_last_cycle_not_victim)
{
  const uint32_t ppb = 8, endurance = 5;
  struct ftl *ftl = open_worn (64, ppb, 150, 1, endurance);
  struct log_page lp[8];
  uint8_t data[8 * PS];
  uint32_t a, b;

  ckpt_shared (ftl);
  media_set_block (&ftl->media, 0, endurance - 1, 0);
  alloc_free_ec_recount (ftl);   /* erase counts and states set by hand */
  ftl->wl.last_cycle = 1;
  ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcf, ALLOC_GC), 0);
  a = ftl->gcf.block;
  ck_assert_uint_eq (a, 0);
  ck_assert (wl_on_last_cycle (ftl, a));
  for (uint32_t i = 0; i < ppb; i++) {
    unit_fill_page (data + (size_t) i * PS, PS, i, 1);
    lp[i] = (struct log_page) {
      .kind = FTL_OOB_DATA, .lpn = i, .seq = ftl->next_seq++,
      .from = FTL_UNMAPPED,
    };
  }
  ck_assert_int_eq (alloc_program (ftl, &ftl->gcf, lp, ppb, data, NULL), 0);
  ckpt_release (ftl);
  ck_assert_uint_eq (ftl->state[a], FTL_BLK_FULL);

  /* A keeps page 0; B (the third host block) keeps 4 of 8. */
  for (uint64_t l = 1; l < 3 * ppb; l++) {
    unit_fill_page (data, PS, l, 2);
    ck_assert_int_eq (ftl_write (ftl, data, PS, l * PS, 0), 0);
  }
  b = media_ppn_block (&ftl->media, l2p_load (ftl, 2 * ppb));
  for (uint64_t l = 2 * ppb; l < 2 * ppb + 4; l++) {
    unit_fill_page (data, PS, l, 3);
    ck_assert_int_eq (ftl_write (ftl, data, PS, l * PS, 0), 0);
  }
  ck_assert_uint_eq (ftl->valid[a], 1);
  ck_assert_uint_eq (ftl->valid[b], 4);
  ck_assert_uint_eq (ftl->state[b], FTL_BLK_FULL);
  ck_assert (!wl_on_last_cycle (ftl, b));
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);

  /* Collect until one more block than now is free (the GC frontiers
   * have room for B's pages).
   */
  ckpt_shared (ftl);
  ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcw, ALLOC_GC), 0);
  ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcf, ALLOC_GC), 0);
  ck_assert_int_eq (gc_reclaim (ftl, ftl->nfree, false), 0);
  ckpt_release (ftl);
  ck_assert_uint_eq (ftl->state[a], FTL_BLK_FULL);
  ck_assert_uint_eq (ftl->valid[a], 1);
  ck_assert_uint_eq (ftl->state[b], FTL_BLK_FREE);
  ck_assert_uint_eq (media_erase_count (&ftl->media, b), 1);
  ck_assert_uint_eq (ftl->wl.last_cycle, 1);
  ck_assert_uint_eq (ftl->wl.retired, 0);
  check_page (ftl, 0, 1, "after GC");
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);

  /* Erases that bring B to its last cycle, then retire it. */
  pthread_mutex_lock (&ftl->alloc_lock);
  ftl->state[b] = FTL_BLK_FULL;
  ftl->nfree--;
  media_set_block (&ftl->media, b, endurance - 2, 0);
  alloc_free_ec_recount (ftl);   /* erase counts and states set by hand */
  ck_assert_int_eq (media_erase (&ftl->media, b, 0), 0);
  wl_erased (ftl, b);
  ck_assert_uint_eq (ftl->state[b], FTL_BLK_FREE);
  ck_assert_uint_eq (ftl->wl.last_cycle, 2);
  ftl->state[b] = FTL_BLK_FULL;
  ftl->nfree--;
  alloc_free_ec_recount (ftl);
  ck_assert_int_eq (media_erase (&ftl->media, b, 0), 0);
  wl_erased (ftl, b);
  ck_assert_uint_eq (ftl->state[b], FTL_BLK_RETIRED);
  ck_assert_uint_eq (ftl->wl.last_cycle, 1);
  ck_assert_uint_eq (ftl->wl.retired, 1);
  pthread_mutex_unlock (&ftl->alloc_lock);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  open_abandon (ftl);
}
END_TEST

static Suite *
wl_suite (void)
{
  Suite *s = suite_create ("wl");
  TCase *tc = tcase_create ("wl");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_last_cycle_not_victim);
  tcase_add_test (tc, test_end_of_life_min_spare);
  tcase_add_test (tc, test_end_of_life_small);
  tcase_add_test (tc, test_end_of_life_large);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (wl_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
