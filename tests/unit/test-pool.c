/* nbdkit-ftl: unit tests of the free pool's account (log/state.h):
 * the reserves, and the holes through which a taker could empty GC's.
 *
 *   trim_failed_program  a trim page whose program fails on the last
 *                        page of the metadata frontier's block, with
 *                        the pool at the host's floor: the block that
 *                        replaces it is not taken from GC's reserve
 *                        (no erase would give it back); the records
 *                        wait, a flush collects and writes them, and
 *                        writes go on.
 *   trim_pages_cost      a block full of trim pages that a replay may
 *                        need, after a checkpoint: GC does not take it
 *                        for a victim that costs nothing (it would copy
 *                        the whole block for no gain).
 *   gave_up              a victim whose copies fail (a failed program)
 *                        with the pool at the host's floor has used
 *                        GC's reserve with no erase to give it back:
 *                        GC then starts no victim whose copies do not
 *                        fit in what is left ("free pool exhausted"
 *                        half way through one), and says the device is
 *                        full instead.
 *   slices               deadline mode: a victim in progress in slices
 *                        holds what its copies took; a foreground
 *                        collection at 1 free block does not start a
 *                        victim that does not fit with what is left of
 *                        it, and finishes it first.
 *
 * Failed programs come from an I/O layer that fails the next write into
 * the data area of an erase block.  GC runs in the test's thread (no
 * background thread).
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

#define PS      4096
#define OP      150

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "pool.img");
}

/* ---- failed programs ---- */

static struct {
  struct ftl *ftl;              /* whose media the offsets are */
  unsigned fail;                /* fail this many data writes */
  unsigned failed;
} inj;

static int
inj_pwrite (void *opaque, int fd, const void *buf, size_t len, off_t off)
{
  if (inj.ftl && inj.fail > 0) {
    const struct media *m = &inj.ftl->media;
    uint32_t blk;
    uint64_t in;
    if ((uint64_t) off >= m->data_offset &&
        (uint64_t) off < m->data_offset + (uint64_t) m->blocks * m->block_bytes
        && !media_meta_at (m, off, &blk, &in)) {
      inj.fail--;
      inj.failed++;
      return -EIO;
    }
  }
  return unit_nosync_io ()->pwrite (opaque, fd, buf, len, off);
}

static struct ftl_io inj_io;

static const struct ftl_io *
inj_io_get (void)
{
  inj_io = *unit_nosync_io ();
  inj_io.pwrite = inj_pwrite;
  inj_io.pwritev = NULL;        /* every piece through inj_pwrite */
  return &inj_io;
}

/* unit_log, and whether GC said it found no block for its copies. */
static bool exhausted;

static void
pool_log (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level == FTL_LOG_ERROR && strstr (msg, "free pool exhausted"))
    exhausted = true;
  unit_log (opaque, level, msg);
}

static struct ftl *
open_pool (uint64_t lpages, uint32_t ppb, bool one_log,
           enum ftl_gc_policy policy, enum ftl_gc_mode mode)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = lpages * PS, .page_size = PS,
    .pages_per_block = ppb, .op_percent = OP, .streams = 1,
    .one_log = one_log, .hot_cold_always = !one_log,
    .gc_policy = policy, .gc_mode = mode, .manual_background = true,
    .log = pool_log, .io = inj_io_get (),
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);

  ck_assert_msg (r == 0, "ftl_open: %s", err);
  memset (&inj, 0, sizeof inj);
  inj.ftl = ftl;
  exhausted = false;
  return ftl;
}

static int
write_page (struct ftl *ftl, uint64_t lpn, uint64_t version)
{
  uint8_t page[PS];
  unit_fill_page (page, PS, lpn, version);
  return ftl_write (ftl, page, PS, lpn * PS, 0);
}

/* Every page reads back as version ver[lpn] (0: unmapped, zeros). */
static void
verify (struct ftl *ftl, const uint64_t *ver, uint64_t lpages)
{
  uint8_t page[PS];

  for (uint64_t l = 0; l < lpages; l++) {
    uint64_t lpn, v;
    ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
    int k = unit_page_identify (page, PS, &lpn, &v);
    ck_assert_msg (k >= 0, "page %" PRIu64 " holds garbage", l);
    if (k == 0)
      v = 0;
    else
      ck_assert_uint_eq (lpn, l);
    ck_assert_msg (v == ver[l], "page %" PRIu64 " holds version %" PRIu64
                   ", not %" PRIu64, l, v, ver[l]);
  }
}

/* Make free blocks FULL of valid pages by hand (nothing maps to them,
 * so GC never takes them: the image is abandoned afterwards) until
 * leave are free.
 */
static void
fill_by_hand (struct ftl *ftl, uint32_t leave)
{
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks && ftl->nfree > leave; b++)
    if (ftl->state[b] == FTL_BLK_FREE) {
      ftl->state[b] = FTL_BLK_FULL;
      ftl->valid[b] = ftl->ppb;
      media_set_block (&ftl->media, b, 0, ftl->ppb);
      ftl->nfree--;
    }
  alloc_free_ec_recount (ftl);
  pthread_mutex_unlock (&ftl->alloc_lock);
  ck_assert_uint_eq (ftl->nfree, leave);
}

static uint32_t
block_of (struct ftl *ftl, uint64_t lpn)
{
  uint32_t ppn = l2p_load (ftl, lpn);
  ck_assert_uint_ne (ppn, FTL_UNMAPPED);
  return media_ppn_block (&ftl->media, ppn);
}

/* ---- a trim page's failed program ---- */

#define T_LPAGES 64
#define T_PPB    8

START_TEST (test_trim_failed_program)
{
  struct ftl *ftl = open_pool (T_LPAGES, T_PPB, false, FTL_GC_GREEDY,
                               FTL_GC_WATERMARK);
  uint64_t ver[T_LPAGES] = { 0 }, rng = 7, v = 1;
  int r;

  /* A collection before each request only when it cannot go on. */
  ftl->gc.low = FTL_RESERVE_BLOCKS - 1;
  for (uint64_t l = 0; l < T_LPAGES; l++) {
    ck_assert_int_eq (write_page (ftl, l, v), 0);
    ver[l] = v;
  }
  /* Trim pages, one per flush, until the metadata frontier has one
   * page of room, with the pool at the host's floor.
   */
  for (int i = 0; i < 2000; i++) {
    uint64_t l = unit_rnd (&rng) % T_LPAGES;
    if (alloc_frontier_room (ftl, &ftl->metaf) == 1 &&
        ftl->trim_count == 0 && alloc_nfree (ftl) == FTL_RESERVE_BLOCKS)
      break;
    if (i % 3 == 2) {
      ck_assert_int_eq (ftl_trim (ftl, PS, l * PS, 0), 0);
      ver[l] = 0;
      ck_assert_int_eq (ftl_flush (ftl), 0);
    }
    else {
      ck_assert_int_eq (write_page (ftl, l, ++v), 0);
      ver[l] = v;
    }
  }
  ck_assert_uint_eq (alloc_frontier_room (ftl, &ftl->metaf), 1);
  ck_assert_uint_eq (alloc_nfree (ftl), FTL_RESERVE_BLOCKS);
  /* A record for that page; its program fails. */
  uint64_t l = 0;
  while (ver[l] == 0)
    l++;
  ck_assert_int_eq (ftl_trim (ftl, PS, l * PS, 0), 0);
  ver[l] = 0;
  ck_assert_uint_eq (ftl->trim_count, 1);
  unit_quiet = true;
  inj.fail = 1;
  r = ftl_flush (ftl);
  unit_quiet = false;
  ck_assert_uint_eq (inj.failed, 1);
  ck_assert_int_eq (r, -EIO);
  ck_assert_msg (alloc_nfree (ftl) >= FTL_RESERVE_BLOCKS,
                 "after a trim page's failed program %u erase blocks are "
                 "free: the trim records took GC's reserve",
                 alloc_nfree (ftl));

  /* The records are written by the next flush, and writes, trims and
   * GC go on.
   */
  ck_assert_int_eq (ftl_flush (ftl), 0);
  ck_assert_uint_eq (ftl->trim_count, 0);
  for (int i = 0; i < 40 * T_LPAGES; i++) {
    uint64_t x = unit_rnd (&rng), k = (x >> 8) % T_LPAGES;
    if (x % 8 == 0) {
      ck_assert_int_eq (ftl_trim (ftl, PS, k * PS, 0), 0);
      ver[k] = 0;
    }
    else {
      ck_assert_int_eq (write_page (ftl, k, ++v), 0);
      ver[k] = v;
    }
    if (x % 16 == 1)
      ck_assert_int_eq (ftl_flush (ftl), 0);
  }
  ck_assert (!exhausted);
  verify (ftl, ver, T_LPAGES);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* ---- trim pages in a victim's cost ---- */

START_TEST (test_trim_pages_cost)
{
  struct ftl *ftl = open_pool (T_LPAGES, T_PPB, false, FTL_GC_GREEDY,
                               FTL_GC_WATERMARK);
  uint64_t ver[T_LPAGES] = { 0 }, v = 1;
  uint32_t tblk = FTL_NO_BLOCK;

  for (uint64_t l = 0; l < T_LPAGES; l++) {
    ck_assert_int_eq (write_page (ftl, l, v), 0);
    ver[l] = v;
  }
  /* Trim pages, one per flush, until a block is full of them; a page
   * of each data block in turn, so that none is left empty.
   */
  for (uint64_t i = 0; i < T_LPAGES && tblk == FTL_NO_BLOCK; i++) {
    uint32_t b = ftl->metaf.block;
    uint64_t l = (i % T_PPB) * T_PPB + i / T_PPB;
    ck_assert_int_eq (ftl_trim (ftl, PS, l * PS, 0), 0);
    ver[l] = 0;
    ck_assert_int_eq (ftl_flush (ftl), 0);
    if (b != FTL_NO_BLOCK && ftl->metaf.block != b &&
        ftl->state[b] == FTL_BLK_FULL)
      tblk = b;
  }
  ck_assert_uint_ne (tblk, FTL_NO_BLOCK);
  ck_assert_uint_eq (ftl->valid[tblk], 0);
  /* A checkpoint: its trim pages stay live (the older checkpoint is
   * older than them), and the counts of trim pages per block were
   * reset by it.
   */
  ck_assert_int_eq (host_ckpt (ftl, false, false), 0);
  ck_assert_uint_ge (ftl->trim_seq_end[tblk], ftl->replay_seq + 1);
  /* Garbage elsewhere: overwrites of half the data. */
  for (uint64_t l = T_LPAGES / 2; l < T_LPAGES; l += 2) {
    ck_assert_int_eq (write_page (ftl, l, ++v), 0);
    ver[l] = v;
  }
  uint64_t w = ftl->media.wp[tblk];
  ckpt_shared (ftl);
  ck_assert_int_eq (gc_reclaim (ftl, alloc_nfree (ftl) + 1, false), 0);
  ckpt_release (ftl);
  ck_assert_msg (ftl->state[tblk] == FTL_BLK_FULL &&
                 ftl->media.wp[tblk] == w,
                 "GC reclaimed erase block %u, %" PRIu64 " live trim pages "
                 "and nothing else", tblk, w);
  verify (ftl, ver, T_LPAGES);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* ---- a victim that gave up ---- */

START_TEST (test_gave_up)
{
  struct ftl *ftl = open_pool (T_LPAGES, T_PPB, true, FTL_GC_GREEDY,
                               FTL_GC_WATERMARK);
  uint64_t v = 1;
  int r;

  /* Blocks of 8 pages with 5 valid each. */
  for (uint64_t l = 0; l < T_LPAGES; l++)
    ck_assert_int_eq (write_page (ftl, l, v), 0);
  for (uint64_t l = 0; l < T_LPAGES; l++)
    if (l % T_PPB < 3)
      ck_assert_int_eq (write_page (ftl, l, v + 1), 0);
  ck_assert_uint_eq (ftl->valid[block_of (ftl, T_PPB + 3)], 5);
  ck_assert_uint_eq (ftl->gcf.block, FTL_NO_BLOCK);
  ck_assert_uint_eq (ftl->gcw.block, FTL_NO_BLOCK);
  ckpt_shared (ftl);
  fill_by_hand (ftl, FTL_RESERVE_BLOCKS);

  /* The victim's copies take GC's reserve; their program fails. */
  unit_quiet = true;
  inj.fail = 1;
  r = gc_reclaim (ftl, FTL_RESERVE_BLOCKS, false);
  ck_assert_uint_eq (inj.failed, 1);
  ck_assert_int_eq (r, -EIO);
  ck_assert_uint_eq (alloc_nfree (ftl), FTL_RESERVE_BLOCKS - 1);
  ck_assert_uint_eq (alloc_frontier_room (ftl, &ftl->gcf), T_PPB - 5);

  /* No victim fits in what is left: the device is full, and GC does
   * not take one half way.
   */
  r = gc_reclaim (ftl, FTL_RESERVE_BLOCKS, false);
  unit_quiet = false;
  ck_assert_int_eq (r, -ENOSPC);
  ck_assert_msg (!exhausted, "GC began a victim it could not finish: %s",
                 unit_last_error);
  ck_assert_uint_eq (alloc_nfree (ftl), FTL_RESERVE_BLOCKS - 1);
  ckpt_release (ftl);
  open_abandon (ftl);
}
END_TEST

/* ---- deadline mode: a victim in progress ---- */

#define S_LPAGES 128
#define S_PPB    16

START_TEST (test_slices)
{
  struct ftl *ftl = open_pool (S_LPAGES, S_PPB, true, FTL_GC_GREEDY,
                               FTL_GC_DEADLINE);
  uint64_t ver[S_LPAGES] = { 0 }, v = 1;
  uint32_t y, c, yec, cec;

  for (uint64_t l = 0; l < S_LPAGES; l++) {
    ck_assert_int_eq (write_page (ftl, l, v), 0);
    ver[l] = v;
  }
  y = block_of (ftl, 0);
  c = block_of (ftl, S_PPB);
  /* y: 14 valid pages, c: 11. */
  for (uint64_t l = 0; l < 2; l++) {
    ck_assert_int_eq (write_page (ftl, l, ++v), 0);
    ver[l] = v;
  }
  for (uint64_t l = S_PPB; l < S_PPB + 5; l++) {
    ck_assert_int_eq (write_page (ftl, l, ++v), 0);
    ver[l] = v;
  }
  ck_assert_uint_eq (ftl->valid[y], 14);
  ck_assert_uint_eq (ftl->valid[c], 11);
  ck_assert_uint_ge (alloc_frontier_room (ftl, &ftl->host[0]), 4);
  fill_by_hand (ftl, FTL_RESERVE_BLOCKS);
  yec = media_erase_count (&ftl->media, y);
  cec = media_erase_count (&ftl->media, c);

  /* A slice of the background's: c, the cheapest, is in progress, its
   * first copies in the block of GC's reserve.
   */
  ckpt_shared (ftl);
  ck_assert_int_eq (gc_slice (ftl), 1);
  ckpt_release (ftl);
  ck_assert_uint_eq (ftl->gc.cur.block, c);
  ck_assert_uint_eq (ftl->valid[c], 3);
  ck_assert_uint_eq (alloc_nfree (ftl), FTL_RESERVE_BLOCKS - 1);
  ck_assert_uint_eq (alloc_frontier_room (ftl, &ftl->gcf), S_PPB - 8);

  /* y loses 4 more pages (into the host frontier's open block), and
   * cost-benefit finds it the best victim: it is old, c is young.
   */
  for (uint64_t l = 2; l < 6; l++) {
    ck_assert_int_eq (write_page (ftl, l, ++v), 0);
    ver[l] = v;
  }
  ck_assert_uint_eq (ftl->valid[y], 10);
  ck_assert_uint_eq (alloc_nfree (ftl), FTL_RESERVE_BLOCKS - 1);
  ftl->gc.policy = FTL_GC_COST_BENEFIT;
  ftl->close_seq[y] = 0;
  ftl->close_seq[c] = ftl->next_seq;

  /* A foreground collection at 1 free block: y's 10 copies and c's 3
   * do not fit in the 8 pages of room; c is finished first, and its
   * erase pays for y's.
   */
  unit_quiet = true;
  ckpt_shared (ftl);
  gc_reclaim (ftl, FTL_RESERVE_BLOCKS, false);
  ckpt_release (ftl);
  unit_quiet = false;
  ck_assert_msg (!exhausted, "GC began a victim that did not fit with the "
                 "one in progress: %s", unit_last_error);
  ck_assert_uint_eq (ftl->gc.cur.block, FTL_NO_BLOCK);
  ck_assert_uint_gt (media_erase_count (&ftl->media, c), cec);
  ck_assert_uint_gt (media_erase_count (&ftl->media, y), yec);
  ck_assert_uint_ge (alloc_nfree (ftl), FTL_RESERVE_BLOCKS - 1);
  verify (ftl, ver, S_LPAGES);
  open_abandon (ftl);
}
END_TEST

static Suite *
pool_suite (void)
{
  Suite *s = suite_create ("pool");
  TCase *tc = tcase_create ("core");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_trim_failed_program);
  tcase_add_test (tc, test_trim_pages_cost);
  tcase_add_test (tc, test_gave_up);
  tcase_add_test (tc, test_slices);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  int failed;
  SRunner *sr = srunner_create (pool_suite ());

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
