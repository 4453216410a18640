/* nbdkit-ftl: erases: the barrier before them, drained blocks, and
 * the victims waiting for a barrier (gc.pending); gc.lock; and GC's
 * share of the free pool's account (gc_room, gc_victim_fits: what GC
 * may take for a victim's copies, log/state.h).
 *
 * An erase destroys the older copies of the pages that replaced the
 * block's; it is allowed only once everything written before is
 * durable (ftl-internal.h, durability invariants): a block is erased
 * after a barrier that began after its last valid page left it
 * (map_drained_durably), either one GC runs (gc_barrier, for a batch of
 * up to gc.erase_batch victims) or one that already happened (a
 * client's flush, a background barrier: "covered", counted as
 * gc.erases_unsynced).  Relocation and victim choice are in gc.c, which
 * calls this module; nothing here calls gc.c.
 *
 * Locks: gc_lock takes gc.lock and holds the caller's deadline (an
 * aborted request does not stop GC half way); every function here but
 * gc_barrier, gc_erase_drained and gc_erase_covered is called with it
 * held.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "ftl-internal.h"

void
gc_lock (struct ftl *ftl)
{
  pthread_mutex_lock (&ftl->gc.lock);
  __atomic_store_n (&ftl->gc.owner, pthread_self (), __ATOMIC_RELAXED);
  __atomic_store_n (&ftl->gc.owned, true, __ATOMIC_RELEASE);
  dl_hold ();                   /* a request's abort does not stop GC */
}

void
gc_unlock (struct ftl *ftl)
{
  dl_release ();
  __atomic_store_n (&ftl->gc.owned, false, __ATOMIC_RELEASE);
  pthread_mutex_unlock (&ftl->gc.lock);
}

/* Is b relocated and waiting for its erase (under gc.lock)? */
bool
gc_is_pending (const struct ftl *ftl, uint32_t b)
{
  for (unsigned i = 0; i < ftl->gc.npending; i++)
    if (ftl->gc.pending[i] == b)
      return true;
  return false;
}

/* Is b in GC's hands already: in progress in slices, or pending? */
bool
gc_holds (struct ftl *ftl, uint32_t b)
{
  return b == ftl->gc.cur.block || gc_is_pending (ftl, b);
}

/* A barrier run for erases (counted: gc.syncs).  The trim page it may
 * write has its room already (trimlog.c), unless a failed program took
 * it and no block was free above the reserve: then, with gc.lock held,
 * the page goes to a GC frontier, in its room or in a block of GC's
 * reserve, which the erases after the barrier give back (state.h).
 */
int
gc_barrier (struct ftl *ftl, bool held)
{
  struct frontier *spare = NULL;

  if (held)
    spare = alloc_frontier_room (ftl, &ftl->gcf) == 0 &&
      alloc_frontier_room (ftl, &ftl->gcw) > 0 ? &ftl->gcw : &ftl->gcf;
  int r = trimlog_barrier (ftl, spare);
  if (r == 0)
    __atomic_fetch_add (&ftl->gc.barriers, 1, __ATOMIC_RELAXED);
  return r;
}

/* Erase a drained victim once everything written before is durable
 * (the caller made sure of it), then retire it or free it.
 */
int
gc_erase_block (struct ftl *ftl, uint32_t victim)
{
  int r;

  assert (ftl->state[victim] == FTL_BLK_FULL);
  assert (map_erase_allowed (ftl, victim));    /* no valid page either */
  r = media_erase (&ftl->media, victim,
                   __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED));
  if (r < 0) {
    log_msg (ftl, FTL_LOG_ERROR, "gc: erasing block %u: %s", victim,
             strerror (-r));
    return r;
  }
  __atomic_store_n (&ftl->trim_pages[victim], 0, __ATOMIC_RELAXED);
  map_block_erased (ftl, victim);
  errmodel_erased (&ftl->em, victim);
  pthread_mutex_lock (&ftl->alloc_lock);
  slc_block_released (ftl, victim);    /* its mode ends with the erase */
  wl_erased (ftl, victim);
  alloc_pool_assert (ftl);
  pthread_mutex_unlock (&ftl->alloc_lock);
  if (!ftl->gc.moving_for_wl)
    ctr_add (ftl, FTL_CTR_GC_RUNS, 1);
  return 0;
}

/* Erase a drained block that an earlier barrier covers (counted:
 * gc.erases_unsynced).
 */
int
gc_erase_one_covered (struct ftl *ftl, uint32_t b)
{
  int r = gc_erase_block (ftl, b);
  if (r == 0)
    __atomic_fetch_add (&ftl->gc.erases_unsynced, 1, __ATOMIC_RELAXED);
  return r;
}

/* A FULL block with nothing to copy (no valid page, no trim page that
 * a replay may need: see trim_seq_end), not in the hands of GC already.
 * *ready: whether one of them can be erased without a barrier; returns
 * that one, else any such block, else FTL_NO_BLOCK.  Caller holds
 * gc.lock.
 */
uint32_t
gc_find_drained (struct ftl *ftl, bool *ready)
{
  uint32_t any = FTL_NO_BLOCK;
  uint64_t replay = __atomic_load_n (&ftl->replay_seq, __ATOMIC_ACQUIRE);

  *ready = false;
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] != FTL_BLK_FULL ||
        __atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED) != 0 ||
        __atomic_load_n (&ftl->trim_seq_end[b], __ATOMIC_RELAXED) > replay ||
        gc_holds (ftl, b))
      continue;
    if (map_drained_durably (ftl, b)) {
      *ready = true;
      any = b;
      break;
    }
    if (any == FTL_NO_BLOCK)
      any = b;
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  return any;
}

/* Erase the pending victims that a barrier already covers (a client's
 * flush, a background barrier), without one of their own.  Returns how
 * many it erased, or a negative errno.  Caller holds gc.lock.
 */
int
gc_erase_covered_pending (struct ftl *ftl)
{
  struct gc *gc = &ftl->gc;
  unsigned n = gc->npending, kept = 0;
  int done = 0, r = 0;

  for (unsigned i = 0; i < n; i++) {
    uint32_t b = gc->pending[i];
    /* After an error the rest stay FULL, with nothing valid, and GC
     * takes them again.
     */
    if (r == 0 && map_drained_durably (ftl, b)) {
      r = gc_erase_one_covered (ftl, b);
      if (r == 0)
        done++;
    }
    else if (r == 0)
      gc->pending[kept++] = b;
  }
  __atomic_store_n (&gc->npending, kept, __ATOMIC_RELAXED);
  return r < 0 ? r : done;
}

/* Erase the victims waiting for a barrier: those already covered
 * without one, the rest after one barrier.  Returns how many were
 * erased, or a negative errno.  Caller holds gc.lock.
 */
int
gc_flush_pending (struct ftl *ftl)
{
  struct gc *gc = &ftl->gc;
  uint32_t pending[FTL_GC_ERASE_BATCH];
  unsigned n;
  int r, done;

  done = gc_erase_covered_pending (ftl);
  n = gc->npending;
  if (done < 0 || n == 0)
    return done;
  /* Emptied first: after an error the rest stay FULL, with nothing
   * valid, and GC takes them again.
   */
  memcpy (pending, gc->pending, n * sizeof *pending);
  __atomic_store_n (&gc->npending, 0, __ATOMIC_RELAXED);
  r = gc_barrier (ftl, true);
  for (unsigned i = 0; i < n && r == 0; i++)
    r = gc_erase_block (ftl, pending[i]);
  return r < 0 ? r : done + (int) n;
}

int
gc_erase_drained (struct ftl *ftl, unsigned max, uint32_t target,
                  bool *waiting)
{
  unsigned n = 0;
  int r = 0;

  *waiting = false;
  gc_lock (ftl);
  r = gc_erase_covered_pending (ftl);
  if (r > 0)
    n += r;
  while (r >= 0 && n < max && alloc_nfree (ftl) <= target) {
    bool ready;
    uint32_t b = gc_find_drained (ftl, &ready);
    if (b == FTL_NO_BLOCK)
      break;
    if (!ready) {
      *waiting = true;
      break;
    }
    r = gc_erase_one_covered (ftl, b);
    if (r < 0)
      break;
    ctr_add (ftl, FTL_CTR_GC_BG_RUNS, 1);
    n++;
  }
  gc_unlock (ftl);
  return r < 0 ? r : (int) n;
}

int
gc_erase_covered (struct ftl *ftl)
{
  int r;

  if (gc_npending (ftl) == 0)
    return 0;
  /* Whoever holds gc.lock erases covered victims before it syncs for
   * them (flush_pending) or collects again (gc_reclaim): no need to
   * wait for it.
   */
  if (pthread_mutex_trylock (&ftl->gc.lock) != 0)
    return 0;
  __atomic_store_n (&ftl->gc.owner, pthread_self (), __ATOMIC_RELAXED);
  __atomic_store_n (&ftl->gc.owned, true, __ATOMIC_RELEASE);
  dl_hold ();
  r = gc_erase_covered_pending (ftl);
  gc_unlock (ftl);
  return r;
}

/* Pages GC may program and leave the free pool's account whole
 * (state.h): the room of the GC frontiers' open blocks, and the blocks
 * between its floor and the others' floor (writers may take those
 * above it meanwhile); victims waiting for their erase count as free
 * (program_batch erases them when it is short).  The crash reserve,
 * which GC takes after an open that found the pool down to it, counts
 * a page short: killed while GC copies into it, the image opens with
 * it closed early, and the next open skips the page after the last
 * one programmed (alloc_reopen_for_gc), so that what is left of the
 * victim still fits there.  Caller holds gc.lock.
 */
uint64_t
gc_room (struct ftl *ftl)
{
  uint32_t avail = MIN (alloc_nfree (ftl) + ftl->gc.npending,
                        FTL_RESERVE_BLOCKS);
  uint32_t fl = alloc_floor (ftl, ALLOC_GC);
  uint64_t room = (uint64_t) alloc_frontier_room (ftl, &ftl->gcf)
    + alloc_frontier_room (ftl, &ftl->gcw);

  if (avail > fl)
    room += (uint64_t) (avail - fl) * ftl->ppb - (fl == 0);
  return room;
}

/* What reclaiming block b would copy, at most: its valid pages, and its
 * trim pages if the newest of them may be needed by a replay
 * (trim_seq_end; all of them count, as they are not counted by age;
 * unknown after a restart until GC reads the block's OOB entries, see
 * victim_begin).
 */
uint32_t
gc_victim_cost (struct ftl *ftl, uint32_t b)
{
  uint64_t replay = __atomic_load_n (&ftl->replay_seq, __ATOMIC_ACQUIRE);
  uint32_t cost = __atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED);

  if (__atomic_load_n (&ftl->trim_seq_end[b], __ATOMIC_RELAXED) > replay)
    cost += __atomic_load_n (&ftl->trim_pages[b], __ATOMIC_RELAXED);
  return cost;
}

/* May GC start (or go on with) block b, which copies at most cost
 * pages?  Only if they fit in gc_room, with what is left of the victim
 * in progress in slices, if another: GC never starts what it cannot
 * finish, so a victim that gave up (a failed program or erase) leaves
 * no other half copied for want of a block.  The victim in progress
 * always may go on.  (The trim page of the barrier before an erase
 * needs no room of GC's but after a failed program: erase.c,
 * gc_barrier.)  Caller holds gc.lock.
 */
bool
gc_victim_fits (struct ftl *ftl, uint32_t b, uint32_t cost)
{
  uint32_t cur = ftl->gc.cur.block;
  uint64_t need = cost;

  if (b == cur)
    return true;
  if (cur != FTL_NO_BLOCK)
    need += gc_victim_cost (ftl, cur);
  return need <= gc_room (ftl);
}
