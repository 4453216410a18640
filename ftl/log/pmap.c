/* nbdkit-ftl: the paged map: translation pages in the log, a directory
 * of them in memory, and a bounded cache of groups.
 *
 * An image made with a paged map (FTL_SB_PAGED) keeps its map in the
 * log as translation pages: one per group of FTL_TP_ENTRIES logical
 * pages, the group's ~ppn entries (format.h).  In memory, l2p stays one
 * lazy array, but only the pages of the resident groups hold memory:
 * a group that is not resident is loaded from its translation page on
 * the first access (a map miss: one page read, through the media and
 * the timing model like any other), and a clean group is evicted
 * (its l2p and check pages given back) when more than the cache's
 * limit are resident.  The checks (map.c) of a group are not kept in
 * its translation page: after a load they are unknown, and reads heal
 * them.
 *
 * A group is written back only by a checkpoint (ckpt.c): under ckpt_rw
 * exclusively it copies every dirty group (pmap_ckpt_collect), then
 * programs the copies as translation pages at the map frontier (mapf),
 * and the checkpoint names them in its directory.  (The checkpoint of
 * an open copies each group as it programs it: nothing else changes the
 * map then, and a roll forward may have dirtied more groups than the
 * cache holds.)  So the translation
 * pages a checkpoint names hold the map as of its sequence number, and
 * recovery rolls the log forward over them as over a whole map.  A
 * checkpoint is due once dirty_limit groups are dirty, which bounds
 * both what a checkpoint writes and what a recovery reloads.
 *
 * References: a translation page is live while the map (dir) or a
 * checkpoint slot (sdir[0], sdir[1]: recovery may fall back to the
 * older slot) names it.  A live page counts once in valid[] of its
 * block (and in tvalid[]), whatever names it; GC moves it like a data
 * page (its copy keeps its version, and recovery takes a copy whose
 * version is the one its directory names), and the drain rule of
 * map.c applies when the last name of a page goes.  A copy that GC
 * made before the newest checkpoint lies in a block that recovery does
 * not scan: so each checkpoint records, beside its own directory, the
 * other slot's as GC has moved it (sdir, sver), and recovery takes the
 * other slot's names from there, if that slot still holds the
 * checkpoint they are of.
 *
 * The cache itself (pinning, loading, evicting) is mapcache.c, below
 * this module; this one keeps the references to translation pages
 * (dir, sdir, tvalid, under pm.lock, a leaf), their write-back by
 * checkpoints (ckpt.c programs the copies collected here) and what
 * recovery needs.  An image without a paged map never comes here
 * (pm.on is false).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

/* ---- references to translation pages (under pm.lock) ---- */

static bool
named (const struct pmap *pm, uint64_t g, uint32_t inv)
{
  return pm->dir[g] == inv || pm->sdir[0][g] == inv || pm->sdir[1][g] == inv;
}

static void
ref_add (struct ftl *ftl, uint32_t ppn)
{
  uint32_t b = media_ppn_block (&ftl->media, ppn);
  uint32_t v = __atomic_fetch_add (&ftl->valid[b], 1, __ATOMIC_RELAXED);
  assert (v < ftl->ppb);
  (void) v;
  ftl->pm.tvalid[b]++;
}

static void
ref_drop (struct ftl *ftl, uint32_t ppn)
{
  uint32_t b = media_ppn_block (&ftl->media, ppn);
  assert (ftl->pm.tvalid[b] > 0);
  ftl->pm.tvalid[b]--;
  map_drop_valid (ftl, b);
}

bool
pmap_tp_live (struct ftl *ftl, uint64_t g, uint32_t ppn)
{
  struct pmap *pm = &ftl->pm;
  bool live;

  if (!pm->on || g >= pm->groups)
    return false;
  pthread_mutex_lock (&pm->lock);
  live = named (pm, g, ~ppn);
  pthread_mutex_unlock (&pm->lock);
  return live;
}

void
pmap_tp_written (struct ftl *ftl, uint64_t g, uint32_t ppn, uint64_t seq)
{
  struct pmap *pm = &ftl->pm;

  pthread_mutex_lock (&pm->lock);
  uint32_t old = pm->dir[g];
  assert (old != ~ppn);
  ref_add (ftl, ppn);
  pm->dir[g] = ~ppn;
  pm->dirseq[g] = seq;
  if (old && !named (pm, g, old))
    ref_drop (ftl, ~old);
  pthread_mutex_unlock (&pm->lock);
}

void
pmap_tp_moved (struct ftl *ftl, uint64_t g, uint32_t from, uint32_t to)
{
  struct pmap *pm = &ftl->pm;
  bool any = false;

  pthread_mutex_lock (&pm->lock);
  if (pm->dir[g] == ~from) {
    pm->dir[g] = ~to;
    any = true;
  }
  for (int s = 0; s < 2; s++)
    if (pm->sdir[s][g] == ~from) {
      pm->sdir[s][g] = ~to;
      any = true;
    }
  /* Not named any more (a checkpoint dropped it meanwhile): the copy is
   * garbage, and nothing was counted for it.
   */
  if (any) {
    ref_add (ftl, to);
    ref_drop (ftl, from);
    pmap_count (ftl, PMAP_MOVED, 1);
  }
  pthread_mutex_unlock (&pm->lock);
}

/* ---- checkpoints ---- */

void
pmap_tp_copy (struct ftl *ftl, uint64_t g, uint8_t *p)
{
  uint64_t first = g << FTL_TP_SHIFT;
  uint64_t k = MIN (FTL_TP_ENTRIES, ftl->logical_pages - first);

  memcpy (p, l2p_at (ftl, first), k * 4);
  memset (p + k * 4, 0, (FTL_TP_ENTRIES - k) * 4);
}

uint64_t
pmap_ckpt_collect (struct ftl *ftl, uint8_t *buf, uint64_t *gs, uint64_t max)
{
  struct pmap *pm = &ftl->pm;
  uint64_t n = 0;

  for (uint64_t g = 0; g < pm->groups && n < max; g++) {
    uint32_t v = __atomic_load_n (&pm->gstate[g], __ATOMIC_ACQUIRE);
    if (!(v & PMAP_DIRTY))
      continue;
    /* Resident: only a clean group is evicted.  Not pinned by a
     * change: ckpt_rw is held exclusively.
     */
    assert (v & PMAP_RES);
    if (buf)
      pmap_tp_copy (ftl, g, buf + n * FTL_TP_BYTES);
    __atomic_fetch_or (&pm->gstate[g], PMAP_WB, __ATOMIC_ACQ_REL);
    __atomic_fetch_add (&pm->wb, 1, __ATOMIC_RELAXED);
    __atomic_fetch_and (&pm->gstate[g], ~PMAP_DIRTY, __ATOMIC_ACQ_REL);
    __atomic_fetch_sub (&pm->dirty, 1, __ATOMIC_RELAXED);
    gs[n++] = g;
  }
  return n;
}

void
pmap_ckpt_abort (struct ftl *ftl, const uint64_t *gs, uint64_t from,
                 uint64_t n)
{
  for (uint64_t i = from; i < n; i++) {
    uint32_t v = __atomic_fetch_or (&ftl->pm.gstate[gs[i]], PMAP_DIRTY,
                                    __ATOMIC_ACQ_REL);
    if (!(v & PMAP_DIRTY))
      __atomic_fetch_add (&ftl->pm.dirty, 1, __ATOMIC_RELAXED);
    __atomic_fetch_and (&ftl->pm.gstate[gs[i]], ~PMAP_WB, __ATOMIC_ACQ_REL);
    __atomic_fetch_sub (&ftl->pm.wb, 1, __ATOMIC_RELAXED);
  }
}

void
pmap_ckpt_encode_dir (struct ftl *ftl, uint8_t *body, unsigned slot)
{
  struct pmap *pm = &ftl->pm;
  uint8_t *other = body + fmt_ckpt_podir_offset (ftl->logical_pages);
  unsigned o = 1 - slot;

  pthread_mutex_lock (&pm->lock);
  for (uint64_t g = 0; g < pm->groups; g++) {
    if (pm->dir[g])
      fmt_ckpt_dir_encode (~pm->dir[g], pm->dirseq[g],
                           body + g * FTL_CKPT_DIR_BYTES);
    if (pm->sdir[o][g])
      fmt_ckpt_dir_encode (~pm->sdir[o][g], pm->sver[o][g],
                           other + g * FTL_CKPT_DIR_BYTES);
  }
  pthread_mutex_unlock (&pm->lock);
}

void
pmap_ckpt_commit (struct ftl *ftl, unsigned slot)
{
  struct pmap *pm = &ftl->pm;

  pthread_mutex_lock (&pm->lock);
  for (uint64_t g = 0; g < pm->groups; g++) {
    uint32_t old = pm->sdir[slot][g];
    pm->sver[slot][g] = pm->dirseq[g];
    if (old == pm->dir[g])
      continue;
    pm->sdir[slot][g] = pm->dir[g];
    if (old && !named (pm, g, old))
      ref_drop (ftl, ~old);
  }
  pthread_mutex_unlock (&pm->lock);
}

/* ---- recovery ---- */

void
pmap_recover_set (struct ftl *ftl, uint64_t lpn, uint32_t ppn)
{
  uint64_t g = lpn >> FTL_TP_SHIFT;
  uint32_t old;

  if (ppn != FTL_UNMAPPED)
    map_populate (ftl, lpn);
  pmap_pin (ftl, g);
  old = ~*l2p_at (ftl, lpn);
  *l2p_at (ftl, lpn) = ~ppn;
  pmap_unpin_dirty (ftl, g);
  if (old == ppn)
    return;
  if (old != FTL_UNMAPPED && old != FTL_LOST) {
    uint32_t b = media_ppn_block (&ftl->media, old);
    if (ftl->valid[b] > 0)
      ftl->valid[b]--;
  }
  if (ppn != FTL_UNMAPPED && ppn != FTL_LOST)
    ftl->valid[media_ppn_block (&ftl->media, ppn)]++;
  if (old == FTL_UNMAPPED)
    ftl->mapped++;
  else if (ppn == FTL_UNMAPPED)
    ftl->mapped--;
}

void
pmap_count_refs (struct ftl *ftl)
{
  struct pmap *pm = &ftl->pm;

  memset (pm->tvalid, 0, ftl->blocks * sizeof *pm->tvalid);
  for (uint64_t g = 0; g < pm->groups; g++) {
    uint32_t a = pm->dir[g], b = pm->sdir[0][g], c = pm->sdir[1][g];
    if (a)
      ref_add (ftl, ~a);
    if (b && b != a)
      ref_add (ftl, ~b);
    if (c && c != a && c != b)
      ref_add (ftl, ~c);
  }
}
