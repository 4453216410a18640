/* nbdkit-ftl: the order of a batch of GC's moves (gc.c's victim_step):
 * with isolated placement, runs of one placement group, each to its
 * group's own GC frontiers; within a run, young data first, to the
 * young GC frontier (hot/cold separation).  Both partitions are stable
 * and work on the caller's batch in place; nothing here takes a lock
 * (the caller holds gc.lock) or calls gc.c.
 */

#include <config.h>

#include <assert.h>
#include <string.h>

#include "ftl-internal.h"

/* The placement group of a move: its logical page's for data, the
 * first group's for trim records and translation pages.
 */
static unsigned
move_group (struct ftl *ftl, const struct log_page *m)
{
  return m->kind == FTL_OOB_DATA || m->kind == FTL_OOB_POISON
    ? place_gc_group (ftl, m->lpn) : 0;
}

/* With isolated placement, put the moves in runs of one placement
 * group (stable), each group's pages to its own GC frontiers: cnt[g]
 * moves of group g, groups in order.  Else one run, of group 0.
 */
unsigned
gc_partition_groups (struct ftl *ftl, struct log_page *mv, uint32_t n,
                  uint32_t *cnt)
{
  struct log_page tmp[GC_BATCH];
  uint32_t at = 0;

  memset (cnt, 0, FTL_NS_MAX * sizeof *cnt);
  if (ftl->place.gc_groups <= 1) {
    cnt[0] = n;
    return 1;
  }
  for (unsigned g = 0; g < ftl->place.gc_groups; g++)
    for (uint32_t i = 0; i < n; i++)
      if (move_group (ftl, &mv[i]) == g) {
        tmp[at++] = mv[i];
        cnt[g]++;
      }
  assert (at == n);
  memcpy (mv, tmp, n * sizeof *tmp);
  return ftl->place.gc_groups;
}

/* Put the moves of data younger than hot_age first (stable), and return
 * how many there are.  They go to their own GC frontier: data that GC
 * finds still valid soon after it was written is likely rewritten soon
 * again, and mixing it with long-lived data would make those blocks
 * partly invalid again before long.  Trim pages count as old,
 * translation pages as young.  Without separation the first moves fill
 * what the young frontier's open block has left, and it opens no other.
 */
uint32_t
gc_partition_young (struct ftl *ftl, unsigned g, struct log_page *mv,
                 uint32_t n)
{
  uint64_t now = __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
  struct log_page tmp[GC_BATCH];
  uint32_t young = 0, old = 0;

  if (one_log (ftl))
    return MIN (n, alloc_frontier_room (ftl, alloc_gc_frontier (ftl, g,
                                                                true)));
  for (uint32_t i = 0; i < n; i++) {
    /* Translation pages are rewritten by every checkpoint that finds
     * their group dirty: hot, kept apart from cold data.
     */
    if ((mv[i].kind == FTL_OOB_DATA &&
         now - MIN (now, mv[i].seq) < ftl->hot_age) ||
        mv[i].kind == FTL_OOB_MAP)
      mv[young++] = mv[i];
    else
      tmp[old++] = mv[i];
  }
  memcpy (mv + young, tmp, old * sizeof *tmp);
  return young;
}
