/* nbdkit-ftl: the reclaim layer's functions (reclaim/): garbage
 * collection and wear leveling.  Callable from host/, report/, mngt/.
 */
#ifndef FTL_RECLAIM_H
#define FTL_RECLAIM_H

#ifndef FTL_INTERNAL_H
#error "included by ftl-internal.h, after the handle"
#endif

/* gc.c: victims, relocation and erases. */
extern int gc_init (struct ftl *ftl);
extern void gc_free (struct ftl *ftl);
/* Reclaim blocks until more than target are free (caller holds
 * ckpt_rw shared and no stripe or frontier lock).  bg: the background
 * thread's call (counted apart, one victim at a time).  Returns 0, or
 * -ENOSPC when nothing can be reclaimed.
 */
extern int gc_reclaim (struct ftl *ftl, uint32_t target, bool bg);
/* Relocate what is valid in FULL block b and erase it (for tests);
 * -EAGAIN if its copies do not fit in what GC may take (gc_room).
 */
extern int gc_reclaim_block (struct ftl *ftl, uint32_t b);
/* Before a request takes blocks (holding no stripe lock): collect if
 * free blocks are at the low watermark.  urgent: the host could not
 * get a block above the reserve; collect up to it or fail with
 * -ENOSPC (device full) or -EROFS (worn out).
 */
extern int gc_make_room (struct ftl *ftl, bool urgent);
/* Erase drained blocks that an earlier barrier covers (pending victims
 * first), up to max of them and while at most target are free (pending
 * victims whatever the pool).  Returns how many it erased
 * (or a negative errno); *waiting tells whether drained blocks wait for
 * a barrier (gc_barrier then serves them all).
 */
extern int gc_erase_drained (struct ftl *ftl, unsigned max, uint32_t target,
                             bool *waiting);
/* After a barrier (a client's flush): erase the victims waiting for
 * one that it covered, unless somebody holds gc.lock (who then does
 * it).  Returns how many it erased, or a negative errno.
 */
extern int gc_erase_covered (struct ftl *ftl);
/* A barrier run for erases (counted: gc.syncs); held: the caller holds
 * gc.lock, and a trim page that finds no room may go to a GC frontier
 * (erase.c).
 */
extern int gc_barrier (struct ftl *ftl, bool held);

/* Pages GC reads and programs together (one batch). */
#define GC_BATCH 64

/* gcsort.c, for gc.c (gc.lock held): put a batch's n moves in runs of
 * one placement group (cnt[g] of group g; returns how many groups), and
 * within group g's run the young data first (returns how many are
 * young; without separation, how many fit the young frontier's block).
 */
extern unsigned gc_partition_groups (struct ftl *ftl, struct log_page *mv,
                                     uint32_t n, uint32_t *cnt);
extern uint32_t gc_partition_young (struct ftl *ftl, unsigned g,
                                    struct log_page *mv, uint32_t n);

/* erase.c, for gc.c: gc.lock, erases with it held, and GC's share of
 * the free pool's account (log/state.h; callers hold gc.lock): the
 * pages GC may program, what reclaiming block b copies at most, and
 * whether a victim of that cost fits with the one in progress.
 */
extern uint64_t gc_room (struct ftl *ftl);
extern uint32_t gc_victim_cost (struct ftl *ftl, uint32_t b);
extern bool gc_victim_fits (struct ftl *ftl, uint32_t b, uint32_t cost);
extern void gc_lock (struct ftl *ftl);
extern void gc_unlock (struct ftl *ftl);
/* Is b relocated and waiting for its erase (under gc.lock)? */
extern bool gc_is_pending (const struct ftl *ftl, uint32_t b);
/* Is b in GC's hands already: in progress in slices, or pending? */
extern bool gc_holds (struct ftl *ftl, uint32_t b);
/* Erase a FULL block with no valid page, after a barrier that covers
 * it (the caller made sure), then retire it or free it.
 */
extern int gc_erase_block (struct ftl *ftl, uint32_t victim);
/* The same for a block an earlier barrier covered (gc.erases_unsynced). */
extern int gc_erase_one_covered (struct ftl *ftl, uint32_t b);
/* A FULL block with nothing to copy, not in GC's hands: one that needs
 * no barrier (*ready) if any, else any, else FTL_NO_BLOCK.
 */
extern uint32_t gc_find_drained (struct ftl *ftl, bool *ready);
/* Erase the pending victims a barrier already covers; returns how many,
 * or a negative errno.
 */
extern int gc_erase_covered_pending (struct ftl *ftl);
/* Erase every pending victim: the covered ones, the rest after one
 * barrier.  Returns how many, or a negative errno.
 */
extern int gc_flush_pending (struct ftl *ftl);
/* Deadline mode: one slice of background GC.  Returns 1 if it did a
 * slice, 0 if there was nothing to do, or a negative errno.
 */
extern int gc_slice (struct ftl *ftl);
/* After background GC reclaimed a victim (gc.wl_after): one static
 * wear leveling move, if a block is due for one and no deadline is
 * near.  Returns 1 if it moved a block, 0 if not, or a negative errno.
 * Caller holds ckpt_rw shared.
 */
extern int gc_wear_level (struct ftl *ftl);
/* Deadline mode: has a running request less than half its timeout
 * left?
 */
extern bool gc_deadline_near (struct ftl *ftl);
/* Does the calling thread hold gc.lock?  (Tests classify what GC
 * writes; nothing in the FTL decides anything by it.)
 */
static inline bool
gc_running_here (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->gc.owned, __ATOMIC_ACQUIRE) &&
    pthread_equal (__atomic_load_n (&ftl->gc.owner, __ATOMIC_RELAXED),
                   pthread_self ());
}
/* Victims relocated and waiting for a barrier (read outside gc.lock). */
static inline unsigned
gc_npending (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->gc.npending, __ATOMIC_RELAXED);
}
/* Is a victim being reclaimed in slices? */
static inline bool
gc_in_progress (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->gc.cur.block, __ATOMIC_RELAXED)
    != FTL_NO_BLOCK;
}

/* wl.c: static wear leveling, retirement and end of life. */
extern void wl_init (struct ftl *ftl, uint32_t threshold, uint32_t endurance);
/* The FULL block static wear leveling should move now, or FTL_NO_BLOCK.
 * skip(b) excludes blocks GC holds.  Caller holds gc.lock.
 */
extern uint32_t wl_pick (struct ftl *ftl, bool (*skip) (struct ftl *,
                                                        uint32_t));
/* Free blocks the background thread keeps beyond gc.high so that a
 * frontier has a choice of erase counts: 1 while the spread that
 * wl_pick found last is at least 3/8 of the static threshold, else 0.
 */
extern uint32_t wl_free_choice (struct ftl *ftl);
/* After block b was erased (caller holds alloc_lock): retire it if it
 * is worn out, else return it to the free pool.
 */
extern void wl_erased (struct ftl *ftl, uint32_t b);
/* Will the next erase of block b retire it?  (Not for a block never
 * erased: with an endurance of 1 a new disk can be written once.)  A
 * block on its last cycle is no GC victim: its erase would give no
 * block back.
 */
static inline bool
wl_on_last_cycle (struct ftl *ftl, uint32_t b)
{
  uint32_t ec = media_erase_count (&ftl->media, b);
  return ftl->state[b] != FTL_BLK_RETIRED && ec > 0 &&
    ec + 1 >= ftl->wl.endurance;
}
/* After recovery: count the blocks on their last cycle, then check the
 * end of life.
 */
extern void wl_recovered (struct ftl *ftl);
/* Turn the disk read-only if the blocks left cannot sustain writes,
 * and stop hot/cold separation if they cannot hold its frontiers.
 */
extern void wl_check_end_of_life (struct ftl *ftl);
/* The health log's available spare: the percentage of the blocks
 * beyond what writes need (the logical capacity, the minimum spare and
 * the write cache's room) that are neither retired nor on their last
 * cycle; 0 once the disk is worn out.  Takes alloc_lock.
 */
extern unsigned wl_available_spare (struct ftl *ftl);
static inline bool
wl_worn_out (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->wl.worn_out, __ATOMIC_ACQUIRE);
}

/* gc.c: fold one SLC block, if one is due and the pool allows.
 * Returns 1 if it folded one, 0 if not, or a negative errno.  Caller
 * holds ckpt_rw shared.
 */
extern int gc_fold (struct ftl *ftl);

#endif /* FTL_RECLAIM_H */
