/* nbdkit-ftl: a full consistency check of the in-memory state.
 *
 * The cheap invariants are asserted where they live (map.c, alloc.c,
 * gc.c, media.c).  This walks everything and cross-checks it:
 *
 *   - the map against the valid counts: every mapped logical page points
 *     into a programmed page of an OPEN or FULL block, no two logical
 *     pages share a physical page, valid[b] is the number of logical
 *     pages mapping into b, mapped is the number of mapped pages;
 *   - the block table against the free pool and the frontiers: nfree is
 *     the number of FREE blocks, and not below the crash reserve
 *     (FTL_SPOR_RESERVE_BLOCKS) unless the session opened below it,
 *     wl.retired the number of RETIRED ones, wl.last_cycle the number
 *     of blocks whose next erase retires them,
 *     a FREE block is unwritten and holds nothing, the OPEN blocks are
 *     exactly those of the frontiers, and each frontier's write pointer
 *     is the media's.
 *
 * It costs a pass over the map (and a bit per physical page), so it
 * runs only in builds configured with --enable-self-check: after
 * opening, at every checkpoint (inside its exclusive section) and at a
 * clean shutdown.  The unit tests call it directly in every build.
 *
 * The caller makes sure nothing changes meanwhile (ckpt_rw held
 * exclusively, or the handle not yet or no longer shared).
 */

#include <config.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "ftl-internal.h"

#define MAX_REPORTS 20

struct report {
  struct ftl *ftl;
  const char *when;
  unsigned n;
};

static void
report (struct report *rp, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));

static void
report (struct report *rp, const char *fs, ...)
{
  char msg[256];
  va_list ap;

  if (rp->n++ >= MAX_REPORTS)
    return;
  va_start (ap, fs);
  vsnprintf (msg, sizeof msg, fs, ap);
  va_end (ap);
  log_msg (rp->ftl, FTL_LOG_ERROR, "self-check (%s): %s", rp->when, msg);
}

/* The map against the valid counts and the block states. */
static int
check_map (struct ftl *ftl, struct report *rp)
{
  uint64_t phys = (uint64_t) ftl->blocks * ftl->ppb, mapped = 0;
  uint64_t *seen = calloc (DIV_ROUND_UP (phys, 64), sizeof *seen);
  uint32_t *count = calloc (ftl->blocks, sizeof *count);

  if (!seen || !count) {
    free (seen);
    free (count);
    return -ENOMEM;
  }
  for (uint64_t lpn = map_next (ftl, 0); lpn < ftl->logical_pages;
       lpn = map_next (ftl, lpn + 1)) {
    uint32_t ppn = l2p_load (ftl, lpn);
    if (ppn == FTL_UNMAPPED)
      continue;
    mapped++;
    if (ppn == FTL_LOST)
      continue;                 /* lost in a crash of the host: no page */
    if (ppn >= phys) {
      report (rp, "logical page %" PRIu64 " maps beyond the device (%u)",
              lpn, ppn);
      continue;
    }
    uint32_t b = media_ppn_block (&ftl->media, ppn);
    if ((ftl->state[b] != FTL_BLK_OPEN && ftl->state[b] != FTL_BLK_FULL) ||
        media_ppn_page (&ftl->media, ppn) >= ftl->media.wp[b])
      report (rp, "logical page %" PRIu64 " maps to page %u of erase block "
              "%u (state %u, %u pages programmed)", lpn,
              media_ppn_page (&ftl->media, ppn), b, ftl->state[b],
              ftl->media.wp[b]);
    if (seen[ppn / 64] & (UINT64_C (1) << (ppn % 64)))
      report (rp, "logical page %" PRIu64 " maps to physical page %u, as "
              "another one does", lpn, ppn);
    seen[ppn / 64] |= UINT64_C (1) << (ppn % 64);
    count[b]++;
  }
  /* A paged map's translation pages count once per page that the map
   * or a checkpoint slot names (pmap.c).
   */
  if (ftl->pm.on) {
    struct pmap *pm = &ftl->pm;
    pthread_mutex_lock (&pm->lock);
    for (uint64_t g = 0; g < pm->groups; g++) {
      uint32_t n[3] = { pm->dir[g], pm->sdir[0][g], pm->sdir[1][g] };
      for (int i = 0; i < 3; i++) {
        if (!n[i] || (i > 0 && n[i] == n[0]) || (i > 1 && n[i] == n[1]))
          continue;
        uint32_t ppn = ~n[i];
        if (ppn >= phys) {
          report (rp, "the translation page of group %" PRIu64 " is beyond "
                  "the device (%u)", g, ppn);
          continue;
        }
        uint32_t b = media_ppn_block (&ftl->media, ppn);
        if (seen[ppn / 64] & (UINT64_C (1) << (ppn % 64)))
          report (rp, "physical page %u is a translation page and mapped "
                  "data", ppn);
        count[b]++;
      }
    }
    pthread_mutex_unlock (&pm->lock);
  }
  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (count[b] != ftl->valid[b])
      report (rp, "erase block %u has %u valid pages in the map, %u "
              "counted", b, count[b], ftl->valid[b]);
  if (mapped != ftl->mapped)
    report (rp, "%" PRIu64 " logical pages are mapped, %" PRIu64 " counted",
            mapped, ftl->mapped);
  free (seen);
  free (count);
  return 0;
}

/* Is b the open block of a frontier?  Checks that frontier's pointer. */
static bool
open_in_frontier (struct ftl *ftl, uint32_t b, struct report *rp)
{
  struct frontier *all[FTL_FRONTIERS];
  unsigned n = alloc_frontiers (ftl, all), owners = 0;

  for (unsigned i = 0; i < n; i++)
    if (all[i]->block == b) {
      owners++;
      if (all[i]->wp != ftl->media.wp[b])
        report (rp, "a frontier's write pointer in erase block %u is %u, "
                "the media's %u", b, all[i]->wp, ftl->media.wp[b]);
    }
  if (owners > 1)
    report (rp, "erase block %u is open in %u frontiers", b, owners);
  return owners > 0;
}

/* The block table against the free pool and the frontiers. */
static void
check_blocks (struct ftl *ftl, struct report *rp)
{
  uint32_t nfree = 0, retired = 0, last_cycle = 0;

  for (uint32_t b = 0; b < ftl->blocks; b++) {
    bool open = open_in_frontier (ftl, b, rp);
    last_cycle += wl_on_last_cycle (ftl, b);
    switch (ftl->state[b]) {
    case FTL_BLK_FREE:
      nfree++;
      if (ftl->media.wp[b] != 0 || ftl->valid[b] != 0)
        report (rp, "free erase block %u has %u pages programmed, %u "
                "valid", b, ftl->media.wp[b], ftl->valid[b]);
      break;
    case FTL_BLK_RETIRED:
      retired++;
      break;
    case FTL_BLK_OPEN:
      if (!open)
        report (rp, "erase block %u is open but no frontier has it", b);
      break;
    case FTL_BLK_FULL:
      if (ftl->valid[b] > ftl->media.wp[b])
        report (rp, "full erase block %u has %u valid pages of %u "
                "programmed", b, ftl->valid[b], ftl->media.wp[b]);
      break;
    default:
      report (rp, "erase block %u has an unknown state %u", b,
              ftl->state[b]);
    }
    if (open && ftl->state[b] != FTL_BLK_OPEN)
      report (rp, "a frontier has erase block %u, whose state is %u", b,
              ftl->state[b]);
  }
  if (nfree != ftl->nfree)
    report (rp, "%u erase blocks are free, %u counted", nfree, ftl->nfree);
  /* The free pool by erase count (alloc.c). */
  if (ftl->free_ec) {
    uint32_t n = ftl->free_ec_n;
    uint32_t *count = calloc (n, sizeof *count);
    if (count) {
      for (uint32_t b = 0; b < ftl->blocks; b++)
        if (ftl->state[b] == FTL_BLK_FREE)
          count[MIN (media_erase_count (&ftl->media, b), n - 1)]++;
      for (uint32_t e = 0; e < n; e++)
        if (count[e] != ftl->free_ec[e])
          report (rp, "%u free erase blocks have erase count %u%s, %u "
                  "counted", count[e], e, e == n - 1 ? " or more" : "",
                  ftl->free_ec[e]);
      free (count);
    }
  }
  if (nfree < FTL_SPOR_RESERVE_BLOCKS && !ftl->spor_short &&
      !__atomic_load_n (&ftl->wl.worn_out, __ATOMIC_RELAXED))
    report (rp, "%u erase blocks are free, fewer than the %u kept for an "
            "open after a crash", nfree, FTL_SPOR_RESERVE_BLOCKS);
  if (retired != ftl->wl.retired)
    report (rp, "%u erase blocks are retired, %u counted", retired,
            ftl->wl.retired);
  if (last_cycle != ftl->wl.last_cycle)
    report (rp, "%u erase blocks are on their last cycle, %u counted",
            last_cycle, ftl->wl.last_cycle);
  /* Buffered trim records may wait without room after a failed
   * program (trimlog.c).
   */
}

int
selfcheck_run (struct ftl *ftl, const char *when)
{
  struct report rp = { .ftl = ftl, .when = when };
  int r;

  pthread_mutex_lock (&ftl->alloc_lock);
  r = check_map (ftl, &rp);
  if (r == 0)
    check_blocks (ftl, &rp);
  pthread_mutex_unlock (&ftl->alloc_lock);
  if (r < 0)
    return r;
  if (rp.n > MAX_REPORTS)
    log_msg (ftl, FTL_LOG_ERROR, "self-check (%s): %u more inconsistencies",
             when, rp.n - MAX_REPORTS);
  return rp.n ? -EIO : 0;
}

void
selfcheck_assert (struct ftl *ftl, const char *when)
{
#ifdef FTL_SELF_CHECK
  if (selfcheck_run (ftl, when) == -EIO)
    abort ();
#else
  (void) ftl;
  (void) when;
#endif
}
