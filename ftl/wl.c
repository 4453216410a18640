/* nbdkit-ftl: wear leveling, retirement and end of life.
 *
 * Dynamic wear leveling is in alloc.c: a frontier takes the least worn
 * free block (the cold GC frontier the most worn one).  That only
 * spreads erases over the blocks that get erased; a block holding cold
 * data is never a GC victim and keeps a low erase count while the rest
 * wear out.  Static wear leveling (wl_pick) therefore chooses, when the
 * spread between the most erased block and the least erased FULL block
 * reaches wl.threshold, that least erased block; GC moves its data (to
 * the cold GC frontier) and erases it, and it rejoins the free pool,
 * where the next frontier to need a block takes it first.
 *
 * A block whose erase count reaches wl.endurance is retired after its
 * last erase (wl_erased) and never used again.  When so many are
 * retired that the rest cannot hold the logical capacity plus the
 * blocks the FTL needs to make progress (and to destage the write
 * cache, whose pages were acknowledged), the disk turns read-only for
 * good (wl_check_end_of_life): reads go on working, writes fail with
 * EROFS.  Before that, when the spare cannot hold the extra frontiers
 * of hot/cold separation, the FTL falls back to one log per stream.
 *
 * Invariants: wl.retired is the number of RETIRED blocks (under
 * alloc_lock); a RETIRED block is never FREE again; worn_out and
 * one_log only ever go from false to true.
 */

#include <config.h>

#include <assert.h>

#include "ftl-internal.h"

void
wl_init (struct ftl *ftl, uint32_t threshold, uint32_t endurance)
{
  ftl->wl.threshold = threshold ? threshold : FTL_DEFAULT_WL_THRESHOLD;
  ftl->wl.endurance = endurance ? endurance : FTL_DEFAULT_ENDURANCE;
  ftl->wl.retired = 0;
  ftl->wl.worn_out = false;
}

uint32_t
wl_pick (struct ftl *ftl, bool (*skip) (struct ftl *, uint32_t))
{
  uint32_t max_ec = 0, min_ec = UINT32_MAX, coldest = FTL_NO_BLOCK;

  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    uint32_t ec = media_erase_count (&ftl->media, b);
    if (ftl->state[b] == FTL_BLK_RETIRED)
      continue;
    max_ec = MAX (max_ec, ec);
    if (ftl->state[b] == FTL_BLK_FULL && !skip (ftl, b) &&
        (coldest == FTL_NO_BLOCK || ec < min_ec ||
         (ec == min_ec && ftl->close_seq[b] < ftl->close_seq[coldest]))) {
      min_ec = ec;
      coldest = b;
    }
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  if (coldest == FTL_NO_BLOCK || max_ec - min_ec < ftl->wl.threshold)
    return FTL_NO_BLOCK;
  log_debug (ftl, FTL_DEBUG_GC, "wear leveling: block %u (erase count %u, "
             "%u valid pages); most erased: %u", coldest, min_ec,
             __atomic_load_n (&ftl->valid[coldest], __ATOMIC_RELAXED), max_ec);
  return coldest;
}

void
wl_erased (struct ftl *ftl, uint32_t b)
{
  assert (ftl->state[b] == FTL_BLK_FULL);
  if (media_erase_count (&ftl->media, b) >= ftl->wl.endurance) {
    /* Worn out: retired for good. */
    ftl->state[b] = FTL_BLK_RETIRED;
    ftl->wl.retired++;
    log_debug (ftl, FTL_DEBUG_GC, "block %u retired after %u erases",
               b, media_erase_count (&ftl->media, b));
    wl_check_end_of_life (ftl);
  }
  else {
    ftl->state[b] = FTL_BLK_FREE;
    __atomic_store_n (&ftl->nfree, ftl->nfree + 1, __ATOMIC_RELAXED);
  }
}

void
wl_check_end_of_life (struct ftl *ftl)
{
  uint64_t data_blocks = DIV_ROUND_UP (ftl->logical_pages, ftl->ppb);
  uint64_t usable = ftl->blocks - ftl->wl.retired;

  if (wl_worn_out (ftl))
    return;
  if (!one_log (ftl) &&
      usable < data_blocks + FTL_SEPARATION_SPARE_BLOCKS (ftl->nstreams)) {
    /* Too few blocks left to keep hot and cold data apart: the open
     * hot frontiers fill up and are not replaced.
     */
    __atomic_store_n (&ftl->one_log, true, __ATOMIC_RELAXED);
    log_msg (ftl, FTL_LOG_WARN, "%u of %u erase blocks are retired: hot "
             "and cold data are no longer kept apart", ftl->wl.retired,
             ftl->blocks);
  }
  /* The write cache's pages were acknowledged: the blocks to destage
   * them stay usable (cache_spare_blocks).
   */
  if (usable < data_blocks + FTL_MIN_SPARE_BLOCKS (ftl->nstreams) +
      cache_spare_blocks (ftl->cache.nslots, ftl->ppb)) {
    __atomic_store_n (&ftl->wl.worn_out, true, __ATOMIC_RELEASE);
    log_msg (ftl, FTL_LOG_ERROR, "the disk is worn out: %u of %u erase "
             "blocks are retired (endurance %u erases), too few remain to "
             "sustain writes; it is read-only from now on", ftl->wl.retired,
             ftl->blocks, ftl->wl.endurance);
  }
}
