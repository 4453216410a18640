/* nbdkit-ftl: unit tests of alloc.c: erase-block allocation, frontiers
 * and the map updates (valid counts, mapped pages).
 *
 * The tests open small images through ftl_open and look at (and, to
 * build a situation, set) the handle's internal fields declared in
 * ftl-internal.h.  Images whose state was set by hand are abandoned,
 * never closed, so nothing inconsistent is written.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"
#include "helpers.h"

/* 64 logical pages of 4 KiB, 8 pages per block, 150% over-provisioning:
 * 20 erase blocks, 12 of them spare.
 */
#define PS      4096
#define PPB     8
#define LPAGES  64
#define SIZE    ((uint64_t) LPAGES * PS)
#define OP      150

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "alloc.img");
}

static struct ftl *
open_new (unsigned streams)
{
  struct ftl *ftl = unit_open (path, SIZE, PS, PPB, OP, streams,
                               unit_nosync_io ());
  ck_assert_uint_eq (ftl->blocks, 20);
  ck_assert_uint_eq (ftl->ppb, PPB);
  return ftl;
}

static void
write_page (struct ftl *ftl, uint64_t lpn, uint64_t version)
{
  uint8_t page[PS];
  unit_fill_page (page, PS, lpn, version);
  ck_assert_int_eq (ftl_write (ftl, page, PS, lpn * PS, 0), 0);
}

static uint32_t
block_of_lpn (struct ftl *ftl, uint64_t lpn)
{
  uint32_t ppn = l2p_load (ftl, lpn);
  ck_assert_uint_ne (ppn, FTL_UNMAPPED);
  return media_ppn_block (&ftl->media, ppn);
}

/* The free block with the lowest erase count now. */
static uint32_t
lowest_free (struct ftl *ftl)
{
  uint32_t best = FTL_NO_BLOCK, best_ec = UINT32_MAX;
  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (ftl->state[b] == FTL_BLK_FREE &&
        media_erase_count (&ftl->media, b) < best_ec) {
      best = b;
      best_ec = media_erase_count (&ftl->media, b);
    }
  return best;
}

/* The free block with the highest erase count now. */
static uint32_t
highest_free (struct ftl *ftl)
{
  uint32_t best = FTL_NO_BLOCK, best_ec = 0;
  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (ftl->state[b] == FTL_BLK_FREE &&
        (best == FTL_NO_BLOCK || media_erase_count (&ftl->media, b) > best_ec)) {
      best = b;
      best_ec = media_erase_count (&ftl->media, b);
    }
  return best;
}

/* The frontiers of short-lived data (hot host writes, GC of young data,
 * metadata) open the free block with the lowest erase count; those of
 * long-lived data (the host stream's cold frontier, which takes first
 * writes and rewrites of cold data, and GC of cold data) the one with
 * the highest.  Erase counts are set by hand on the free blocks of a
 * new image; then single pages are written (and a trim is logged) and
 * the blocks they land in are checked.
 */
START_TEST (test_lowest_erase_count)
{
  struct ftl *ftl = open_new (1);
  static const uint32_t order[] = { 13, 7, 2, 18 };
  /* Blocks with the highest counts, 119, 118 and 117 (b * 7 % 20 is 19,
   * 18 and 17).
   */
  static const uint32_t worn[] = { 17, 14, 11 };

  ck_assert_uint_eq (ftl->nfree, ftl->blocks);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    ck_assert_uint_eq (ftl->state[b], FTL_BLK_FREE);
    media_set_block (&ftl->media, b, 100 + (b * 7) % 20, 0);
  }
  for (uint32_t i = 0; i < 4; i++)
    media_set_block (&ftl->media, order[i], 10 + i, 0);
  alloc_free_ec_recount (ftl);   /* erase counts and states set by hand */

  /* First writes go to the cold host frontier: the first page opens
   * block 17; when it is full, block 14.
   */
  ck_assert (!ftl->one_log);
  for (uint32_t i = 0; i < 2; i++) {
    write_page (ftl, i * PPB, 1);
    ck_assert_uint_eq (block_of_lpn (ftl, i * PPB), worn[i]);
    ck_assert_uint_eq (ftl->state[worn[i]], FTL_BLK_OPEN);
    for (uint32_t p = 1; p < PPB; p++) {
      write_page (ftl, i * PPB + p, 1);
      ck_assert_uint_eq (block_of_lpn (ftl, i * PPB + p), worn[i]);
    }
    ck_assert_uint_eq (ftl->state[worn[i]], FTL_BLK_FULL);
    ck_assert_uint_eq (ftl->valid[worn[i]], PPB);
  }
  ck_assert_uint_eq (ftl->nfree, ftl->blocks - 2);

  /* Rewrites of data just written are hot: the hot frontier opens
   * block 13 (count 10).
   */
  write_page (ftl, 0, 2);
  ck_assert_uint_eq (block_of_lpn (ftl, 0), order[0]);
  ck_assert_uint_eq (ftl->state[order[0]], FTL_BLK_OPEN);
  ck_assert_uint_eq (ftl->valid[worn[0]], PPB - 1);

  /* The GC frontier of young data: block 7 (count 11). */
  ckpt_shared (ftl);
  ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcw, ALLOC_GC), 0);
  ckpt_release (ftl);
  ck_assert_uint_eq (ftl->gcw.block, order[1]);
  ck_assert_uint_eq (ftl->state[order[1]], FTL_BLK_OPEN);

  /* The GC frontier of cold data: the most worn free block left, count
   * 117.
   */
  ck_assert_uint_eq (highest_free (ftl), worn[2]);
  ckpt_shared (ftl);
  ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcf, ALLOC_GC), 0);
  ckpt_release (ftl);
  ck_assert_uint_eq (ftl->gcf.block, worn[2]);
  ck_assert_uint_eq (media_erase_count (&ftl->media, worn[2]), 117);

  /* The metadata frontier: the least worn free block left, block 2
   * (count 12); a trim record page goes there.
   */
  uint32_t want = lowest_free (ftl);
  ck_assert_uint_eq (want, order[2]);
  ck_assert_int_eq (ftl_trim (ftl, 2 * PS, 0, 0), 0);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  ck_assert_uint_eq (ftl->metaf.block, want);
  struct ftl_oob o;
  ck_assert_int_eq (unit_oob_at (ftl, media_ppn (&ftl->media, want, 0), &o),
                    0);
  ck_assert_uint_eq (o.kind, FTL_OOB_TRIM);
  ck_assert_uint_eq (ftl->nfree, ftl->blocks - 6);

  /* Nothing was erased: the counts are the ones set. */
  ck_assert_uint_eq (media_erase_count (&ftl->media, 13), 10);
  ck_assert_uint_eq (media_count (&ftl->media, MEDIA_ERASES), 0);
  open_abandon (ftl);
}
END_TEST

/* With one log (no hot/cold separation) a host stream's data is of
 * every temperature: its frontier opens the least worn free block, and
 * so does the GC frontier.
 */
START_TEST (test_one_log_least_worn)
{
  struct ftl *ftl = open_new (1);

  for (uint32_t b = 0; b < ftl->blocks; b++)
    media_set_block (&ftl->media, b, 100 + (b * 7) % 20, 0);
  alloc_free_ec_recount (ftl);   /* erase counts and states set by hand */
  ftl->one_log = true;
  write_page (ftl, 0, 1);
  ck_assert_uint_eq (block_of_lpn (ftl, 0), 0);          /* count 100 */
  ckpt_shared (ftl);
  ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcf, ALLOC_GC), 0);
  ckpt_release (ftl);
  ck_assert_uint_eq (ftl->gcf.block, 3);                 /* count 101 */
  open_abandon (ftl);
}
END_TEST

/* The free pool's count by erase count (alloc.c) has as many buckets as
 * the wear of the free blocks needs, not one per cycle the endurance
 * allows: a million buckets with endurance=1000000, and none at all
 * (the count wrapped) with endurance=4294967295.  It grows when a block
 * more worn than its last exact bucket is freed, and the most worn
 * free block is still the one a frontier of long-lived data takes.
 */
static void
erase_to (struct ftl *ftl, uint32_t b, uint32_t ec)
{
  pthread_mutex_lock (&ftl->alloc_lock);
  ck_assert_uint_eq (ftl->state[b], FTL_BLK_FREE);
  ftl->state[b] = FTL_BLK_FULL;
  ftl->nfree--;
  ftl->free_ec[MIN (media_erase_count (&ftl->media, b),
                    ftl->free_ec_n - 1)]--;
  media_set_block (&ftl->media, b, ec - 1, 0);
  ck_assert_int_eq (media_erase (&ftl->media, b, 0), 0);
  wl_erased (ftl, b);
  ck_assert_uint_eq (ftl->state[b], FTL_BLK_FREE);
  pthread_mutex_unlock (&ftl->alloc_lock);
  ck_assert_uint_eq (media_erase_count (&ftl->media, b), ec);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
}

START_TEST (test_free_ec_follows_wear)
{
  static const uint32_t endurance[] = { 1000000, UINT32_MAX };

  for (int i = 0; i < 2; i++) {
    struct ftl *ftl = open_new (1);

    ftl->wl.endurance = endurance[i];   /* as endurance= would */
    alloc_free_ec_recount (ftl);
    ck_assert_ptr_nonnull (ftl->free_ec);
    ck_assert_uint_eq (ftl->free_ec_n, 64);

    /* Block 5 freed with 1001 erases: counted again, with room. */
    erase_to (ftl, 5, 1001);
    ck_assert_uint_eq (ftl->free_ec_n, 2 * 1001 + 2);
    ck_assert_uint_eq (ftl->free_ec[1001], 1);
    /* Block 9 with 100000: past the most buckets, in the last one. */
    erase_to (ftl, 9, 100000);
    ck_assert_uint_eq (ftl->free_ec_n, 65536);
    ck_assert_uint_eq (ftl->free_ec[65535], 1);
    ck_assert_uint_eq (ftl->free_ec[1001], 1);

    /* Long-lived data takes the most worn, then the next; short-lived
     * the least worn.
     */
    ckpt_shared (ftl);
    ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcf, ALLOC_GC),
                      0);
    ck_assert_uint_eq (ftl->gcf.block, 9);
    ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcw, ALLOC_GC),
                      0);
    ck_assert_uint_eq (ftl->gcw.block, 0);
    ckpt_release (ftl);
    ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);

    /* A recount keeps what the wear needs. */
    alloc_free_ec_recount (ftl);
    ck_assert_uint_eq (ftl->free_ec_n, 2 * 1001 + 2);
    ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
    open_abandon (ftl);
    unit_dir_clean ();
  }
}
END_TEST

/* map_install and map_unmap keep the per-block valid counts and the
 * number of mapped logical pages right through install, remap, unmap
 * and unmapping what is not mapped.
 */
START_TEST (test_map_install_unmap)
{
  struct ftl *ftl = open_new (1);
  struct media *m = &ftl->media;

  ck_assert_uint_eq (ftl->mapped, 0);
  for (uint32_t b = 0; b < ftl->blocks; b++)
    ck_assert_uint_eq (ftl->valid[b], 0);

  /* Changes of the map hold ckpt_rw shared (map.c). */
  ckpt_shared (ftl);
  map_install (ftl, 5, media_ppn (m, 3, 0), 0);
  ck_assert_uint_eq (l2p_load (ftl, 5), media_ppn (m, 3, 0));
  ck_assert_uint_eq (ftl->valid[3], 1);
  ck_assert_uint_eq (ftl->mapped, 1);

  map_install (ftl, 6, media_ppn (m, 3, 1), 0);
  ck_assert_uint_eq (ftl->valid[3], 2);
  ck_assert_uint_eq (ftl->mapped, 2);

  /* Remap: the old block loses a valid page, the count of mapped pages
   * does not change.
   */
  map_install (ftl, 5, media_ppn (m, 4, 0), 0);
  ck_assert_uint_eq (l2p_load (ftl, 5), media_ppn (m, 4, 0));
  ck_assert_uint_eq (ftl->valid[3], 1);
  ck_assert_uint_eq (ftl->valid[4], 1);
  ck_assert_uint_eq (ftl->mapped, 2);

  /* Remap within one block. */
  map_install (ftl, 6, media_ppn (m, 3, 2), 0);
  ck_assert_uint_eq (ftl->valid[3], 1);
  ck_assert_uint_eq (ftl->mapped, 2);

  ck_assert (map_unmap (ftl, 5));
  ck_assert_uint_eq (l2p_load (ftl, 5), FTL_UNMAPPED);
  ck_assert_uint_eq (ftl->valid[4], 0);
  ck_assert_uint_eq (ftl->mapped, 1);
  ck_assert (!map_unmap (ftl, 5));
  ck_assert (!map_unmap (ftl, 7));
  ck_assert_uint_eq (ftl->mapped, 1);
  ck_assert_uint_eq (ftl->valid[3], 1);

  ck_assert (map_unmap (ftl, 6));
  ck_assert_uint_eq (ftl->valid[3], 0);
  ck_assert_uint_eq (ftl->mapped, 0);

  /* The last logical page. */
  map_install (ftl, LPAGES - 1, media_ppn (m, 19, PPB - 1), 0);
  ck_assert_uint_eq (ftl->valid[19], 1);
  ck_assert (map_unmap (ftl, LPAGES - 1));
  ck_assert_uint_eq (ftl->valid[19], 0);
  ck_assert_uint_eq (ftl->mapped, 0);
  ckpt_release (ftl);
  open_abandon (ftl);
}
END_TEST

/* Recount valid pages, mapped pages and free blocks from the map and
 * the block states, and compare with the handle's counters.
 */
static void
check_accounting (struct ftl *ftl)
{
  uint32_t *valid = calloc (ftl->blocks, sizeof *valid);
  uint64_t mapped = 0;
  uint32_t nfree = 0, open = 0, frontiers = 0;
  struct ftl_stats st;

  for (uint64_t l = 0; l < ftl->logical_pages; l++) {
    uint32_t ppn = l2p_load (ftl, l);
    if (ppn == FTL_UNMAPPED)
      continue;
    mapped++;
    struct ftl_oob o;
    ck_assert_int_eq (unit_oob_at (ftl, ppn, &o), 0);
    ck_assert_uint_eq (o.kind, FTL_OOB_DATA);
    ck_assert_uint_eq (o.lpn, l);
    valid[media_ppn_block (&ftl->media, ppn)]++;
  }
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    ck_assert_msg (valid[b] == ftl->valid[b], "block %u: %u valid pages, "
                   "the counter says %u", b, valid[b], ftl->valid[b]);
    if (ftl->state[b] == FTL_BLK_FREE) {
      nfree++;
      ck_assert_uint_eq (ftl->media.wp[b], 0);
    }
    if (ftl->state[b] == FTL_BLK_OPEN)
      open++;
  }
  for (unsigned i = 0; i < FTL_MAX_STREAMS; i++) {
    frontiers += ftl->host[i].block != FTL_NO_BLOCK;
    frontiers += ftl->hot[i].block != FTL_NO_BLOCK;
  }
  frontiers += ftl->gcf.block != FTL_NO_BLOCK;
  frontiers += ftl->gcw.block != FTL_NO_BLOCK;
  frontiers += ftl->metaf.block != FTL_NO_BLOCK;
  ck_assert_uint_eq (mapped, ftl->mapped);
  ck_assert_uint_eq (nfree, ftl->nfree);
  ck_assert_uint_eq (open, frontiers);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.mapped_pages, mapped);
  ck_assert_uint_eq (st.blocks_free, nfree);
  free (valid);
}

/* Through the public API (writes, overwrites, trims and zeros, with
 * garbage collection running), valid counts, mapped pages, free blocks
 * and open blocks always agree with the map.
 */
START_TEST (test_accounting_through_api)
{
  struct ftl *ftl = open_new (0);
  uint64_t rng = 42;
  uint8_t buf[4 * PS];

  for (unsigned i = 0; i < 3000; i++) {
    uint64_t lpn = unit_rnd (&rng) % LPAGES;
    uint64_t n = 1 + unit_rnd (&rng) % 4;
    if (lpn + n > LPAGES)
      n = LPAGES - lpn;
    switch (unit_rnd (&rng) % 10) {
    case 0:
      ck_assert_int_eq (ftl_trim (ftl, n * PS, lpn * PS, 0), 0);
      break;
    case 1:
      ck_assert_int_eq (ftl_zero (ftl, n * PS - 100, lpn * PS + 50, 0), 0);
      break;
    case 2:
      ck_assert_int_eq (ftl_flush (ftl), 0);
      break;
    default:
      for (uint64_t k = 0; k < n; k++)
        unit_fill_page (buf + k * PS, PS, lpn + k, i + 1);
      ck_assert_int_eq (ftl_write (ftl, buf, n * PS, lpn * PS, 0), 0);
    }
    if (i % 50 == 0)
      check_accounting (ftl);
  }
  check_accounting (ftl);
  ck_assert_uint_gt (media_count (&ftl->media, MEDIA_ERASES), 50);
  ck_assert_int_eq (ftl_close (ftl), 0);

  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  check_accounting (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* Make frontier f's open block FULL of valid pages by hand (nothing
 * maps to them: the image must be abandoned afterwards).
 */
static void
close_by_hand (struct ftl *ftl, struct frontier *f)
{
  ftl->state[f->block] = FTL_BLK_FULL;
  ftl->valid[f->block] = PPB;
  media_set_block (&ftl->media, f->block, 0, PPB);
  f->block = FTL_NO_BLOCK;
  f->wp = 0;
}

/* Host frontiers never take the last FTL_RESERVE_BLOCKS free blocks:
 * every block but RESERVE + 1 is made FULL of valid pages by hand (so
 * that GC finds no victim); the host takes one free block, and when it
 * is full the next host write fails with -ENOSPC and leaves the reserve
 * free.  The metadata frontier (outside GC) may then take blocks down
 * to FTL_RESERVE_BLOCKS, and the GC frontier the rest but the crash
 * reserve, which only an open after a crash lets it take.
 */
START_TEST (test_host_reserve)
{
  struct ftl *ftl = open_new (1);
  const uint32_t keep = FTL_RESERVE_BLOCKS + 1;
  uint8_t page[PS];

  ck_assert_uint_eq (FTL_SPOR_RESERVE_BLOCKS, 1);
  ck_assert_uint_eq (FTL_RESERVE_BLOCKS, 2);
  ck_assert_uint_eq (alloc_floor (ftl, ALLOC_HOST), FTL_RESERVE_BLOCKS);
  ck_assert_uint_eq (alloc_floor (ftl, ALLOC_TRIM), FTL_RESERVE_BLOCKS);
  ck_assert_uint_eq (alloc_floor (ftl, ALLOC_MAP), FTL_RESERVE_BLOCKS);
  ck_assert_uint_eq (alloc_floor (ftl, ALLOC_GC), FTL_SPOR_RESERVE_BLOCKS);
  for (uint32_t b = keep; b < ftl->blocks; b++) {
    ftl->state[b] = FTL_BLK_FULL;
    ftl->valid[b] = PPB;
    media_set_block (&ftl->media, b, 0, PPB);
  }
  ftl->nfree = keep;
  alloc_free_ec_recount (ftl);   /* erase counts and states set by hand */

  for (uint64_t l = 0; l < PPB; l++)
    write_page (ftl, l, 1);
  ck_assert_uint_eq (block_of_lpn (ftl, 0), 0);
  ck_assert_uint_eq (ftl->state[0], FTL_BLK_FULL);
  ck_assert_uint_eq (ftl->nfree, FTL_RESERVE_BLOCKS);

  /* No victim, no block: the host gets -ENOSPC, twice. */
  unit_quiet = true;
  unit_fill_page (page, PS, PPB, 1);
  ck_assert_int_eq (ftl_write (ftl, page, PS, PPB * PS, 0), -ENOSPC);
  ck_assert_msg (strstr (unit_last_error, "full") != NULL,
                 "error message: '%s'", unit_last_error);
  unit_fill_page (page, PS, 0, 2);
  ck_assert_int_eq (ftl_write (ftl, page, PS, 0, 0), -ENOSPC);
  ck_assert_uint_eq (ftl->nfree, FTL_RESERVE_BLOCKS);
  for (uint32_t b = 1; b < keep; b++)
    ck_assert_uint_eq (ftl->state[b], FTL_BLK_FREE);
  unit_quiet = false;

  /* What was written is intact. */
  for (uint64_t l = 0; l < PPB; l++) {
    uint64_t lpn, version;
    ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
    ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &version), 1);
    ck_assert_uint_eq (lpn, l);
    ck_assert_uint_eq (version, 1);
  }

  /* A client's trim records take blocks down to their keep, and no
   * further; then GC takes every one that is left but the crash
   * reserve; after an open that found the pool down to the reserve
   * (spor_short), that too.
   */
  ckpt_shared (ftl);
  while (alloc_frontier_open (ftl, &ftl->metaf, ALLOC_TRIM) == 0)
    close_by_hand (ftl, &ftl->metaf);
  ck_assert_uint_eq (ftl->nfree, FTL_RESERVE_BLOCKS);
  for (int pass = 0; pass < 2; pass++) {
    while (ftl->nfree > (pass ? 0 : FTL_SPOR_RESERVE_BLOCKS)) {
      uint32_t before = ftl->nfree;
      ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcf, ALLOC_GC),
                        0);
      ck_assert_uint_eq (ftl->nfree, before - 1);
      ck_assert (ftl->gcf.block >= 1 && ftl->gcf.block < keep);
      close_by_hand (ftl, &ftl->gcf);
    }
    ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcf, ALLOC_GC),
                      -ENOSPC);
    ftl->spor_short = true;
  }
  ckpt_release (ftl);
  open_abandon (ftl);
}
END_TEST

/* Make free blocks FULL of valid pages by hand (nothing maps to them:
 * the image must be abandoned afterwards) until leave are free; the
 * first of them in *first (FTL_NO_BLOCK if none).
 */
static void
fill_by_hand (struct ftl *ftl, uint32_t leave, uint32_t *first)
{
  *first = FTL_NO_BLOCK;
  for (uint32_t b = 0; b < ftl->blocks && ftl->nfree > leave; b++)
    if (ftl->state[b] == FTL_BLK_FREE) {
      ftl->state[b] = FTL_BLK_FULL;
      ftl->valid[b] = PPB;
      media_set_block (&ftl->media, b, 0, PPB);
      ftl->nfree--;
      if (*first == FTL_NO_BLOCK)
        *first = b;
    }
  alloc_free_ec_recount (ftl);   /* erase counts and states set by hand */
  ck_assert_uint_eq (ftl->nfree, leave);
}

/* The trim log keeps a page of room: while records wait in the buffer,
 * the metadata frontier has an open block with room for their page,
 * through full buffers written out and full blocks replaced; so a
 * barrier (which GC runs before its erases) succeeds with no free
 * block at all.
 */
START_TEST (test_trim_room)
{
  struct ftl *ftl = open_new (1);
  uint32_t first_block, blocks_used = 0, prev = FTL_NO_BLOCK, hand;

  ckpt_shared (ftl);
  ck_assert_uint_eq (ftl->trim_count, 0);
  ck_assert_uint_eq (ftl->metaf.block, FTL_NO_BLOCK);
  for (uint32_t i = 0; i < 2 * PPB * ftl->trim_cap + 1; i++) {
    ck_assert_int_eq (trimlog_append (ftl, i % LPAGES, 1), 0);
    ck_assert_uint_gt (ftl->trim_count, 0);
    ck_assert_uint_ne (ftl->metaf.block, FTL_NO_BLOCK);
    ck_assert_uint_ge (alloc_frontier_room (ftl, &ftl->metaf), 1);
    if (ftl->metaf.block != prev) {
      blocks_used++;
      prev = ftl->metaf.block;
    }
  }
  /* Two blocks filled with trim pages, the third opened for the last
   * record.
   */
  ck_assert_uint_eq (blocks_used, 3);
  ck_assert_uint_eq (ftl->metaf.wp, 0);
  first_block = ftl->metaf.block;

  /* No free block left: the barrier writes the buffer anyway. */
  fill_by_hand (ftl, 0, &hand);
  ck_assert_int_eq (trimlog_barrier (ftl, NULL), 0);
  ck_assert_uint_eq (ftl->trim_count, 0);
  ck_assert_uint_eq (ftl->metaf.block, first_block);
  ck_assert_uint_eq (ftl->metaf.wp, 1);
  /* A record that finds no block refuses, and changes nothing. */
  ftl->metaf.wp = PPB - 1;
  media_set_block (&ftl->media, first_block, 0, PPB - 1);
  ck_assert_int_eq (trimlog_append (ftl, 0, 1), 0);
  ck_assert_int_eq (trimlog_flush (ftl, NULL), 0);
  ck_assert_uint_eq (ftl->metaf.block, FTL_NO_BLOCK);
  ck_assert_int_eq (trimlog_append (ftl, 0, 1), -ENOSPC);
  ck_assert_uint_eq (ftl->trim_count, 0);
  ckpt_release (ftl);
  open_abandon (ftl);
}
END_TEST

/* A trim whose record finds no block for its page collects garbage
 * down to the reserve and tries again.  The low watermark is lowered by
 * hand, so that the usual collection before a trim does nothing, as
 * when another thread takes the free block between that collection
 * and the record.  With nothing to reclaim the trim fails with -ENOSPC
 * and changes nothing; with garbage it succeeds.
 */
START_TEST (test_trim_retries)
{
  struct ftl *ftl = open_new (1);
  uint32_t hand, need = 1;
  uint8_t page[PS];
  uint64_t lpn, version, erases;

  for (uint64_t l = 0; l < 4 * PPB; l++)
    write_page (ftl, l, 1);
  ck_assert_uint_eq (ftl->host[0].block, FTL_NO_BLOCK);
  /* Blocks 0 to 3 took the writes: the ones filled by hand follow. */
  fill_by_hand (ftl, FTL_RESERVE_BLOCKS, &hand);
  ck_assert_uint_eq (hand, 4);
  ftl->gc.low = FTL_RESERVE_BLOCKS - 1;
  ck_assert_uint_eq (ftl->metaf.block, FTL_NO_BLOCK);

  /* Nothing to reclaim: the device is full. */
  unit_quiet = true;
  ck_assert_int_eq (ftl_trim (ftl, PS, 0, 0), -ENOSPC);
  unit_quiet = false;
  ck_assert_msg (strstr (unit_last_error, "full") != NULL,
                 "error message: '%s'", unit_last_error);
  ck_assert_uint_eq (ftl->trim_count, 0);
  ck_assert_int_eq (ftl_read (ftl, page, PS, 0), 0);
  ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &version), 1);
  ck_assert_uint_eq (version, 1);

  /* Blocks filled by hand turn to garbage (their pages are not valid
   * any more): the second attempt reclaims them and succeeds.
   */
  for (uint32_t i = 0; i < need; i++)
    ftl->valid[hand + i] = 0;
  erases = media_count (&ftl->media, MEDIA_ERASES);
  ck_assert_int_eq (ftl_trim (ftl, PS, 0, 0), 0);
  ck_assert_uint_ge (media_count (&ftl->media, MEDIA_ERASES), erases + need);
  ck_assert_uint_eq (l2p_load (ftl, 0), FTL_UNMAPPED);
  ck_assert_uint_eq (ftl->trim_count, 1);
  ck_assert_uint_ne (ftl->metaf.block, FTL_NO_BLOCK);
  ck_assert_int_eq (ftl_read (ftl, page, PS, 0), 0);
  ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &version), 0);
  open_abandon (ftl);
}
END_TEST

/* A GC frontier that needs a block when none is free gives its pages
 * to the other GC frontier: the young pages of a victim (for gcw) land
 * in gcf's open block, and the collection succeeds with no free block.
 */
START_TEST (test_gc_other_frontier)
{
  struct ftl *ftl = open_new (1);
  uint32_t victim, hand;
  uint8_t page[PS];
  uint64_t lpn, version;

  for (uint64_t l = 0; l < PPB; l++)
    write_page (ftl, l, 1);
  victim = block_of_lpn (ftl, 0);
  for (uint64_t l = 0; l < PPB / 2; l++)
    write_page (ftl, l, 2);
  ck_assert_uint_eq (ftl->valid[victim], PPB / 2);
  /* Its pages are young: they would go to gcw. */
  ck_assert_uint_lt (ftl->next_seq, ftl->hot_age);

  ckpt_shared (ftl);
  ck_assert_int_eq (alloc_frontier_open (ftl, &ftl->gcf, ALLOC_GC), 0);
  fill_by_hand (ftl, 0, &hand);
  ck_assert_uint_eq (ftl->gcw.block, FTL_NO_BLOCK);
  ck_assert_int_eq (gc_reclaim (ftl, 0, false), 0);
  ckpt_release (ftl);

  ck_assert_uint_eq (ftl->state[victim], FTL_BLK_FREE);
  ck_assert_uint_eq (ftl->nfree, 1);
  ck_assert_uint_eq (ftl->gcw.block, FTL_NO_BLOCK);
  ck_assert_uint_eq (ftl->gcf.wp, PPB / 2);
  for (uint64_t l = PPB / 2; l < PPB; l++) {
    ck_assert_uint_eq (block_of_lpn (ftl, l), ftl->gcf.block);
    ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
    ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &version), 1);
    ck_assert_uint_eq (lpn, l);
    ck_assert_uint_eq (version, 1);
  }
  open_abandon (ftl);
}
END_TEST

/* Threads are spread over the host streams: two threads writing at
 * once on an image with two streams append to two different blocks.
 */
struct one_write {
  struct ftl *ftl;
  uint64_t lpn;
  pthread_barrier_t *barrier;
  int r;
};

static void *
writer_thread (void *arg)
{
  struct one_write *w = arg;
  uint8_t page[PS];

  unit_fill_page (page, PS, w->lpn, 1);
  pthread_barrier_wait (w->barrier);
  w->r = ftl_write (w->ftl, page, PS, w->lpn * PS, 0);
  return NULL;
}

START_TEST (test_streams_per_thread)
{
  struct ftl *ftl = open_new (2);
  pthread_barrier_t barrier;
  struct one_write w[2] = {
    { .ftl = ftl, .lpn = 10, .barrier = &barrier },
    { .ftl = ftl, .lpn = 20, .barrier = &barrier },
  };
  pthread_t t[2];

  ck_assert_uint_eq (ftl->nstreams, 2);
  pthread_barrier_init (&barrier, NULL, 2);
  for (int i = 0; i < 2; i++)
    ck_assert_int_eq (pthread_create (&t[i], NULL, writer_thread, &w[i]), 0);
  for (int i = 0; i < 2; i++) {
    pthread_join (t[i], NULL);
    ck_assert_int_eq (w[i].r, 0);
  }
  pthread_barrier_destroy (&barrier);
  ck_assert_uint_ne (block_of_lpn (ftl, 10), block_of_lpn (ftl, 20));
  ck_assert_uint_ne (ftl->host[0].block, FTL_NO_BLOCK);
  ck_assert_uint_ne (ftl->host[1].block, FTL_NO_BLOCK);
  ck_assert_uint_eq (ftl->nfree, ftl->blocks - 2);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* A block that is open and partly written at shutdown stays partly
 * written: after reopening it is FULL with its program pointer kept, the
 * next write opens another block, and the data is there.
 */
START_TEST (test_close_partial_block)
{
  struct ftl *ftl = open_new (1);
  uint32_t b;
  uint8_t page[PS];
  uint64_t lpn, version;

  for (uint64_t l = 0; l < 3; l++)
    write_page (ftl, l, 1);
  b = block_of_lpn (ftl, 0);
  ck_assert_uint_eq (ftl->state[b], FTL_BLK_OPEN);
  ck_assert_int_eq (ftl_close (ftl), 0);

  ftl = unit_open (path, 0, 0, 0, 0, 1, unit_nosync_io ());
  ck_assert_uint_eq (ftl->state[b], FTL_BLK_FULL);
  ck_assert_uint_eq (ftl->media.wp[b], 3);
  ck_assert_uint_eq (ftl->valid[b], 3);
  ck_assert_uint_eq (ftl->nfree, ftl->blocks - 1);
  write_page (ftl, 3, 1);
  ck_assert_uint_ne (block_of_lpn (ftl, 3), b);
  for (uint64_t l = 0; l < 4; l++) {
    ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
    ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &version), 1);
    ck_assert_uint_eq (lpn, l);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

static Suite *
alloc_suite (void)
{
  Suite *s = suite_create ("alloc");
  TCase *tc = tcase_create ("alloc");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_lowest_erase_count);
  tcase_add_test (tc, test_one_log_least_worn);
  tcase_add_test (tc, test_free_ec_follows_wear);
  tcase_add_test (tc, test_map_install_unmap);
  tcase_add_test (tc, test_accounting_through_api);
  tcase_add_test (tc, test_host_reserve);
  tcase_add_test (tc, test_trim_room);
  tcase_add_test (tc, test_trim_retries);
  tcase_add_test (tc, test_gc_other_frontier);
  tcase_add_test (tc, test_streams_per_thread);
  tcase_add_test (tc, test_close_partial_block);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (alloc_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
