/* nbdkit-ftl: the SLC cache.
 *
 * NAND that stores cell_bits bits per cell (3: TLC, 4: QLC) can program
 * an erase block one bit per cell (SLC mode): much faster, but the
 * block then holds cap = pages_per_block / cell_bits pages.  Drives use
 * free blocks so as a write cache: host writes land in SLC blocks while
 * the cache has room, and the background "folds" them (relocates their
 * valid pages into native blocks, then erases them) when the host is
 * idle.  When the cache is exhausted, host writes go to native blocks at
 * the native program time: the write cliff.
 *
 * Here:
 *   - A host frontier that takes a free block opens it in SLC mode if
 *     the budget allows (slc_block_opened, under alloc_lock); GC,
 *     folding, wear leveling and trim records write native blocks.  The
 *     mode lives in media.slc[b] (media.h): media.c times the block's
 *     programs and reads at the SLC latencies and asserts that no more
 *     than cap pages are programmed in it; the frontier closes it after
 *     cap pages (alloc.c).
 *   - A fold is a garbage collection of an SLC victim whatever its
 *     valid count (gc_fold in gc.c, relocation and erase as any
 *     victim's, after the barrier that gc.c's erase rule asks for).  Its
 *     copies are media programs, so they count in the WAF, and in
 *     slc.folded_pages.  The background folds the oldest SLC block
 *     first, one per step, when host writes paused for fold_idle_ns, or
 *     at once when more blocks are in SLC mode than the budget allows
 *     (the disk filled and the dynamic part shrank).  Ordinary GC also
 *     takes SLC blocks as victims: with at most cap valid pages they
 *     are cheap ones (a victim copied so is counted as folded too).
 *   - Persistence: every OOB entry of an SLC block carries FTL_OOB_SLC,
 *     and a checkpoint's block table FTL_CKPT_BLK_SLC (format.h,
 *     version 3), so recovery knows which blocks still need folding,
 *     after a clean shutdown (from the checkpoint) and after a crash
 *     (the blocks scanned since the checkpoint: from their entries).
 *     Recovered blocks are closed (FULL) whatever their mode; their
 *     capacity matters only to a frontier that writes them.
 *
 * The budget (slc_budget_blocks), in blocks that may be in SLC mode at
 * once.  L logical pages, V of them mapped, S spare blocks (beyond
 * ceil (L / ppb)), M of which the FTL needs (FTL_MIN_SPARE_BLOCKS and
 * the write cache's room), k blocks in SLC mode.  An SLC block takes a
 * whole block for cap pages, wasting w = ppb - cap pages, so the data
 * takes at most V + k w physical pages.
 *
 *   static part  s blocks, taken from the spare beyond M: at most half
 *                of it, s w <= (S - M) ppb / 2 (slc_static_limit), so
 *                that GC keeps M blocks and half the extra spare
 *                whatever s is.  Refused at open if larger.
 *   dynamic part d = floor ((L - V) / ppb) blocks, at most dynamic_max:
 *                its waste d w < d ppb <= L - V fits in the logical
 *                space not holding data, and shrinks to nothing as the
 *                disk fills.  The data it holds, once folded, takes
 *                d cap = (L - V) / cell_bits pages: what vendors quote
 *                as "free capacity / bits per cell".
 *
 * With k <= s + d, V + k w <= L + (S - M) ppb / 2: the spare that GC
 * needs stays free.  When V grows while k is unchanged, k may exceed the
 * budget: the background folds at once, and foreground GC, which always
 * finds an SLC block a victim (it frees at least w pages), never fails
 * with ENOSPC while any is left: a full disk with the cache on accepts
 * writes at the native speed.  A host frontier opens an SLC block only
 * if k < budget and more than gc.low + FTL_RESERVE_BLOCKS blocks are
 * free, so that the cache never takes the blocks GC keeps.  A fold
 * copies at most cap pages into the GC frontiers: like any victim's, one
 * free block beyond their room is all it needs.
 *
 * Invariants: slc.used is the number of blocks with media.slc set that
 * are OPEN or FULL (changed under alloc_lock); a FREE or RETIRED block
 * is never in SLC mode; a block enters SLC mode only unwritten, when a
 * host frontier takes it, and leaves it only by an erase (or, unwritten,
 * when its frontier is closed).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "ftl-internal.h"

uint64_t
slc_budget_blocks (uint32_t static_blocks, uint64_t dynamic_max,
                   uint64_t logical_pages, uint64_t mapped, uint32_t ppb)
{
  uint64_t free_pages = logical_pages > mapped ? logical_pages - mapped : 0;
  uint64_t dyn = free_pages / ppb;

  return static_blocks + MIN (dyn, dynamic_max);
}

uint32_t
slc_static_limit (uint32_t spare, uint32_t min_spare, uint32_t ppb,
                  uint32_t cap)
{
  if (spare <= min_spare || cap >= ppb)
    return 0;
  return (uint32_t) ((uint64_t) (spare - min_spare) * ppb / 2
                     / (ppb - cap));
}

uint64_t
slc_budget (struct ftl *ftl)
{
  if (!ftl->slc.enabled)
    return 0;
  return slc_budget_blocks (ftl->slc.static_blocks, ftl->slc.dynamic_max,
                            ftl->logical_pages,
                            __atomic_load_n (&ftl->mapped, __ATOMIC_RELAXED),
                            ftl->ppb);
}

int
slc_init (struct ftl *ftl, const struct ftl_slc *o, uint32_t spare,
          char *errbuf, size_t errlen)
{
  struct slc *slc = &ftl->slc;
  unsigned bits = o->cell_bits ? o->cell_bits : FTL_DEFAULT_CELL_BITS;

  slc->enabled = false;
  slc->bits = bits;
  if (bits < 2 || bits > 4) {
    snprintf (errbuf, errlen, "cell-bits must be 2, 3 or 4: %u", bits);
    return -EINVAL;
  }
  slc->cap = ftl->ppb / bits;
  ftl->media.slc_pages = MAX (slc->cap, 1);
  slc->fold_idle_ns = o->fold_idle_ns ? o->fold_idle_ns
    : FTL_DEFAULT_SLC_FOLD_IDLE_NS;
  /* Blocks found in SLC mode are read and programmed at these, whether
   * the cache is on now or not.
   */
  if (ftl->timing.enabled) {
    ftl->timing.slc_program_ns = o->program_ns ? o->program_ns
      : ftl->timing.program_ns / bits;
    ftl->timing.slc_read_ns = o->read_ns ? o->read_ns : ftl->timing.read_ns;
  }
  /* A preset's shares of the logical size. */
  uint64_t logical = (uint64_t) ftl->logical_pages * ftl->page_size;
  uint64_t static_bytes = o->static_bytes, dynamic_bytes = o->dynamic_bytes;
  bool scaled = false;
  if (static_bytes == 0 && o->static_per_million) {
    static_bytes = logical / 1000000 * o->static_per_million;
    scaled = true;
  }
  if (dynamic_bytes == 0 && o->dynamic_per_million)
    dynamic_bytes = MAX (logical / 1000000 * o->dynamic_per_million, 1);
  if ((static_bytes == 0 && dynamic_bytes == 0) || ftl->readonly)
    return 0;
  if (slc->cap < 1) {
    snprintf (errbuf, errlen, "an SLC cache needs at least %u pages per "
              "erase block with cell-bits=%u (the image has %u)", bits, bits,
              ftl->ppb);
    return -EINVAL;
  }

  uint64_t block_bytes = (uint64_t) slc->cap * ftl->page_size;
  uint32_t min = alloc_min_spare (ftl)
    + cache_spare_blocks (ftl->cache.nslots, ftl->ppb);
  uint32_t limit = slc_static_limit (spare, min, ftl->ppb, slc->cap);
  uint64_t want = DIV_ROUND_UP (static_bytes, block_bytes);
  if (want > limit && scaled)
    want = limit;               /* a preset's share of a small disk */
  if (want > limit) {
    snprintf (errbuf, errlen, "slc-static of %" PRIu64 " bytes needs %"
              PRIu64 " SLC erase blocks; the spare allows at most %u (%"
              PRIu64 " bytes: half the %u spare blocks beyond the %u the "
              "FTL needs, at %u of %u pages per block; lower slc-static, "
              "or raise op)", static_bytes, want, limit,
              (uint64_t) limit * block_bytes, spare > min ? spare - min : 0,
              min, slc->cap, ftl->ppb);
    return -EINVAL;
  }
  slc->static_blocks = want;
  slc->dynamic_max = dynamic_bytes == FTL_SLC_AUTO ? UINT64_MAX
    : DIV_ROUND_UP (dynamic_bytes, block_bytes);
  slc->enabled = true;
  return 0;
}

void
slc_block_opened (struct ftl *ftl, uint32_t b)
{
  struct slc *slc = &ftl->slc;

  assert (ftl->media.wp[b] == 0 && !media_block_slc (&ftl->media, b));
  if (!slc->enabled)
    return;
  if (slc->used >= slc_budget (ftl)) {
    /* The cliff: counted once per transition. */
    if (!slc->exhausted) {
      slc->exhausted = true;
      __atomic_fetch_add (&slc->exhaustions, 1, __ATOMIC_RELAXED);
      log_debug (ftl, FTL_DEBUG_ALLOC, "SLC cache exhausted (%u blocks): "
                 "host writes go to native blocks", slc->used);
    }
    return;
  }
  /* The free pool decides too, but does not count as exhaustion. */
  if (ftl->nfree <= ftl->gc.low + FTL_RESERVE_BLOCKS)
    return;
  slc->exhausted = false;
  media_set_slc (&ftl->media, b, true);
  __atomic_store_n (&slc->used, slc->used + 1, __ATOMIC_RELAXED);
}

void
slc_block_released (struct ftl *ftl, uint32_t b)
{
  if (!media_block_slc (&ftl->media, b))
    return;
  media_set_slc (&ftl->media, b, false);
  assert (ftl->slc.used > 0);
  __atomic_store_n (&ftl->slc.used, ftl->slc.used - 1, __ATOMIC_RELAXED);
}

bool
slc_fold_due (struct ftl *ftl)
{
  struct slc *slc = &ftl->slc;
  uint32_t used = __atomic_load_n (&slc->used, __ATOMIC_RELAXED);

  if (used == 0)
    return false;
  if (used > slc_budget (ftl))
    return true;
  if (slc->fold_idle_ns == UINT64_MAX)
    return false;
  uint64_t last = __atomic_load_n (&slc->last_write_ns, __ATOMIC_RELAXED);
  uint64_t now = clock_now ();
  return now - MIN (now, last) >= slc->fold_idle_ns;
}

uint32_t
slc_fold_pick (struct ftl *ftl, bool (*skip) (struct ftl *, uint32_t))
{
  uint32_t best = FTL_NO_BLOCK;

  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] != FTL_BLK_FULL || !media_block_slc (&ftl->media, b) ||
        skip (ftl, b) || wl_on_last_cycle (ftl, b))
      continue;
    if (best == FTL_NO_BLOCK || ftl->close_seq[b] < ftl->close_seq[best])
      best = b;
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  return best;
}

void
slc_recovered (struct ftl *ftl)
{
  uint32_t used = 0;

  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (!media_block_slc (&ftl->media, b))
      continue;
    if (ftl->state[b] == FTL_BLK_OPEN || ftl->state[b] == FTL_BLK_FULL)
      used++;
    else
      media_set_slc (&ftl->media, b, false);
  }
  ftl->slc.used = used;
  /* The idle clock starts now. */
  ftl->slc.last_write_ns = clock_now ();
}

void
slc_get_stats (struct ftl *ftl, struct ftl_stats *st)
{
  struct slc *slc = &ftl->slc;
  uint64_t used_pages = 0;

  st->slc = slc->enabled;
  st->slc_size_pages = slc_budget (ftl) * slc->cap;
  /* Without alloc_lock (a snapshot, as the erase counts in stats.c):
   * writers do not wait for a scan of every block.
   */
  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (media_block_slc (&ftl->media, b))
      used_pages += __atomic_load_n (&ftl->media.wp[b], __ATOMIC_RELAXED);
  st->slc_used_pages = used_pages;
  st->slc_folded_pages = __atomic_load_n (&slc->folded, __ATOMIC_RELAXED);
  st->slc_exhausted = __atomic_load_n (&slc->exhaustions, __ATOMIC_RELAXED);
}
