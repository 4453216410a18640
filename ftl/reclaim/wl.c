/* nbdkit-ftl: wear leveling, retirement and end of life.
 *
 * Dynamic wear leveling is in alloc.c: a frontier takes the least worn
 * free block (the frontiers of long-lived data, cold GC relocations
 * and the host streams' cold data, the most worn one).  That only
 * spreads erases over the blocks that get erased; a block holding cold
 * data is never a GC victim and keeps a low erase count while the rest
 * wear out.  Static wear leveling (wl_pick) therefore chooses, when the
 * spread between the most erased block and the least erased FULL block
 * reaches wl.threshold, that least erased block; GC moves its data (to
 * the cold GC frontier) and erases it, and it rejoins the free pool,
 * where the next frontier to need a block takes it first.
 *
 * Dynamic wear leveling needs a choice: a frontier that takes the only
 * free block takes whatever was erased last.  On a small disk the
 * background thread keeps few blocks free (gc.high, one erase batch),
 * and under skewed writes the GC frontiers mostly take the last one:
 * the erase counts drift apart until static wear leveling copies.  So
 * while the spread that wl_pick found is at least 3/8 of the threshold
 * (6 by default), the background thread keeps one block more free
 * (wl_free_choice): spare space spent only while wear is uneven.
 *
 * A block whose erase count reaches wl.endurance is retired after its
 * last erase (wl_erased) and never used again.  A block one erase short
 * of that is on its last cycle (wl_on_last_cycle): it may be written
 * once more, but reclaiming it would give no block back, only use up
 * the room its copies take.  So garbage collection leaves such blocks
 * alone unless nothing in them is valid, and static wear leveling does
 * not move them; their data stays where it is, readable.
 *
 * The end of life counts both: when the blocks neither retired nor on
 * their last cycle cannot hold the logical capacity plus the blocks
 * the FTL needs to make progress (FTL_MIN_SPARE_BLOCKS) and to destage
 * the write cache (cache_spare_blocks: its pages were acknowledged), the
 * disk turns read-only for good (wl_check_end_of_life): reads go on working,
 * writes fail with EROFS.  Counting the blocks on their last cycle is
 * what makes this come before the free blocks run out: were GC to
 * reclaim them, each erase near the end of life would retire its
 * victim and consume the room of its copies, and the free pool would
 * drain (-ENOSPC) long before enough blocks were retired to call the
 * disk worn out.  Those that GC does reclaim now always give their
 * block back, and the spare they work in never falls below the
 * minimum; the price is at most one cycle of each block's life.
 * Before that, when the spare cannot hold the extra frontiers of
 * hot/cold separation, the FTL falls back to one log per stream.
 *
 * Invariants: wl.retired is the number of RETIRED blocks and
 * wl.last_cycle the number of blocks on their last cycle (both under
 * alloc_lock; a block is counted in last_cycle until the erase that
 * retires it); a RETIRED block is never FREE again; worn_out and
 * one_log only ever go from false to true.
 */

#include <config.h>

#include <assert.h>

#include "ftl-internal.h"

/* The spread, as a fraction of the threshold, from which the background
 * thread keeps a block more free.  64 MiB disk, 90/10 random writes,
 * 100 drive writes: 4/8 left erase counts 121-129 (WAF 1.60), 3/8
 * 123-128 (1.61); without, 115-132 (1.59).  256 MiB, 7 drive writes
 * (bench/fio-waf.sh), steady WAF uniform / 80/20 / 90/10: 2.54-2.55 /
 * 2.12-2.13 / 1.52-1.54 with 3/8 (three runs), 2.54 / 2.11 / 1.52 with
 * 4/8 (one), 2.53-2.54 / 2.11-2.12 / 1.52 without (two).
 */
#define WL_CHOICE_NUM 3
#define WL_CHOICE_DEN 8

void
wl_init (struct ftl *ftl, uint32_t threshold, uint32_t endurance)
{
  ftl->wl.threshold = threshold ? threshold : FTL_DEFAULT_WL_THRESHOLD;
  ftl->wl.endurance = endurance ? endurance : FTL_DEFAULT_ENDURANCE;
  ftl->wl.retired = 0;
  ftl->wl.last_cycle = 0;
  ftl->wl.spread = 0;
  ftl->wl.worn_out = false;
}

void
wl_recovered (struct ftl *ftl)
{
  ftl->wl.last_cycle = 0;
  for (uint32_t b = 0; b < ftl->blocks; b++)
    ftl->wl.last_cycle += wl_on_last_cycle (ftl, b);
  wl_check_end_of_life (ftl);
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
        !wl_on_last_cycle (ftl, b) &&
        (coldest == FTL_NO_BLOCK || ec < min_ec ||
         (ec == min_ec && ftl->close_seq[b] < ftl->close_seq[coldest]))) {
      min_ec = ec;
      coldest = b;
    }
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  __atomic_store_n (&ftl->wl.spread,
                    coldest == FTL_NO_BLOCK ? 0 : max_ec - min_ec,
                    __ATOMIC_RELAXED);
  if (coldest == FTL_NO_BLOCK || max_ec - min_ec < ftl->wl.threshold)
    return FTL_NO_BLOCK;
  log_debug (ftl, FTL_DEBUG_GC, "wear leveling: block %u (erase count %u, "
             "%u valid pages); most erased: %u", coldest, min_ec,
             __atomic_load_n (&ftl->valid[coldest], __ATOMIC_RELAXED), max_ec);
  return coldest;
}

uint32_t
wl_free_choice (struct ftl *ftl)
{
  uint64_t trigger = (uint64_t) ftl->wl.threshold * WL_CHOICE_NUM
    / WL_CHOICE_DEN;

  return __atomic_load_n (&ftl->wl.spread, __ATOMIC_RELAXED) >=
    MAX (trigger, 1);
}

void
wl_erased (struct ftl *ftl, uint32_t b)
{
  uint32_t ec = media_erase_count (&ftl->media, b);

  assert (ftl->state[b] == FTL_BLK_FULL);
  if (ec >= ftl->wl.endurance) {
    /* Worn out: retired for good.  It was on its last cycle, unless
     * this was its first erase (an endurance of 1).
     */
    if (ec > 1) {
      assert (ftl->wl.last_cycle > 0);
      ftl->wl.last_cycle--;
    }
    ftl->state[b] = FTL_BLK_RETIRED;
    ftl->wl.retired++;
    log_debug (ftl, FTL_DEBUG_GC, "block %u retired after %u erases",
               b, ec);
  }
  else {
    ftl->state[b] = FTL_BLK_FREE;
    __atomic_store_n (&ftl->nfree, ftl->nfree + 1, __ATOMIC_RELAXED);
    alloc_block_freed (ftl, b);
    if (!wl_on_last_cycle (ftl, b))
      return;
    ftl->wl.last_cycle++;
  }
  wl_check_end_of_life (ftl);
}

/* Blocks that must stay usable for the disk to take writes. */
static uint64_t
blocks_needed (struct ftl *ftl)
{
  return DIV_ROUND_UP (ftl->logical_pages, ftl->ppb)
    + alloc_min_spare (ftl)
    + cache_spare_blocks (ftl->cache.nslots, ftl->ppb);
}

unsigned
wl_available_spare (struct ftl *ftl)
{
  uint64_t need = blocks_needed (ftl), usable, spare;

  if (wl_worn_out (ftl) || ftl->blocks <= need)
    return 0;
  pthread_mutex_lock (&ftl->alloc_lock);
  usable = ftl->blocks - ftl->wl.retired - ftl->wl.last_cycle;
  pthread_mutex_unlock (&ftl->alloc_lock);
  spare = ftl->blocks - need;
  if (usable <= need)
    return 0;
  /* Round down, but say 100 only while nothing is used up. */
  return (unsigned) ((usable - need) * 100 / spare);
}

void
wl_check_end_of_life (struct ftl *ftl)
{
  uint64_t data_blocks = DIV_ROUND_UP (ftl->logical_pages, ftl->ppb);
  uint64_t usable = ftl->blocks - ftl->wl.retired - ftl->wl.last_cycle;

  if (wl_worn_out (ftl))
    return;
  if (!one_log_for_good (ftl) &&
      usable < data_blocks + alloc_separation_spare (ftl)) {
    /* Too few blocks left to keep hot and cold data apart: the hot
     * frontiers and the young GC one fill their open blocks and open
     * no more (alloc_host_frontier, partition_young in gc.c).
     */
    __atomic_store_n (&ftl->one_log, true, __ATOMIC_RELAXED);
    log_msg (ftl, FTL_LOG_WARN, "%u of %u erase blocks are retired and %u "
             "on their last cycle: hot and cold data are no longer kept "
             "apart", ftl->wl.retired, ftl->blocks, ftl->wl.last_cycle);
  }
  /* The write cache's pages were acknowledged: the blocks to destage
   * them stay usable (cache_spare_blocks).
   */
  if (usable < data_blocks + alloc_min_spare (ftl) +
      cache_spare_blocks (ftl->cache.nslots, ftl->ppb)) {
    __atomic_store_n (&ftl->wl.worn_out, true, __ATOMIC_RELEASE);
    log_msg (ftl, FTL_LOG_ERROR, "the disk is worn out: %u of %u erase "
             "blocks are retired and %u on their last cycle (endurance %u "
             "erases), too few remain to sustain writes; it is read-only "
             "from now on", ftl->wl.retired, ftl->blocks,
             ftl->wl.last_cycle, ftl->wl.endurance);
  }
}
