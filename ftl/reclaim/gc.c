/* nbdkit-ftl: garbage collection: victims, relocation and erases.
 *
 * Victim selection is greedy (the FULL block with the fewest valid pages)
 * or cost-benefit (see pick_victim).  Relocation reads the victim's OOB
 * entries once, then for each page that is still valid (l2p[oob.lpn] ==
 * ppn) reads the data, checks it against its OOB checksum and programs
 * it at a GC frontier with its original sequence number (alloc_program);
 * the map entry moves by compare-and-swap (map_relocate): if a host
 * write replaced the page meanwhile, the copy is garbage.  Pages of trim
 * records are copied while a replay could still need them (their
 * sequence number is not older than that of the older checkpoint slot,
 * which recovery falls back to if the newest is damaged).
 *
 * When nothing in the victim is valid any more it is erased, once a
 * barrier (trimlog_barrier) that began after its last valid page was
 * replaced has completed (map_drained_durably): one barrier serves every
 * block drained before it, a client's flush included.  Relocated
 * victims wait for it (gc.pending, up to gc.erase_batch of them): a
 * client's flush or a background barrier may cover them first, and then
 * they are erased without a sync of their own (gc.erases_unsynced);
 * otherwise one barrier serves them all (flush_pending) when the batch
 * is full, when the free pool alone is down to gc.high, when a
 * foreground collection needs room, or when GC needs a block for its
 * own copies.  A background sync then serves erase_batch victims
 * instead of one, for erase_batch - 1 blocks of spare space (the
 * background thread keeps free + pending above gc.high + erase_batch -
 * 1, see bg.c, and one more while erase counts are uneven, see
 * wl_free_choice in wl.c).  After its erase a block is retired if worn
 * out (wl.c) or returns to the free pool.
 *
 * Drained blocks (FULL, nothing valid, no trim page a replay may need)
 * cost nothing to reclaim: collections take them first (find_drained),
 * and the background thread (bg.c) erases them ahead of need
 * (gc_erase_drained), running their barrier itself outside gc.lock.
 *
 * Who runs it: a request that finds the free pool at the low watermark
 * (gc_make_room, before it takes its stripe locks), and background
 * steps (bg.c), which keep the pool above the high watermark one
 * victim (or slice) per step and leave the wear leveling move that
 * follows a victim to the next step (gc.wl_after).  Everything
 * here runs under gc.lock, with ckpt_rw held shared by the caller and no
 * stripe or frontier lock (GC moves mappings by compare-and-swap and
 * owns its own frontiers, gcw and gcf).
 *
 * Modes (gc.mode):
 *
 *   watermark  the background thread reclaims one whole victim per hold
 *              of gc.lock; foreground GC picks victims by the policy.
 *   deadline   the background thread reclaims in slices of GC_SLICE
 *              pages (gc_slice): the victim's state (gc.cur) survives
 *              between slices, when gc.lock and ckpt_rw are released.
 *              Between slices the background thread yields while a
 *              request's deadline is near (bg.c).  Foreground GC, when a
 *              deadline is near, reclaims just enough for the writer to
 *              go on (the low watermark), from the victim with the fewest
 *              pages to copy (the one in progress included: it goes on
 *              from where the background thread stopped), and does no
 *              wear leveling.  Another victim starts only if its copies
 *              and what is left of the one in progress fit together in
 *              what GC may take (gc_victim_fits); else foreground GC
 *              finishes the one in progress first.
 *
 * The free pool (the account: log/state.h): GC takes blocks for its
 * copies as ALLOC_GC, down to the crash reserve, and never starts a
 * victim whose copies do not fit in the GC frontiers' room and the
 * blocks it may take (gc_victim_fits): so it never stops half way through
 * a victim for want of a block, even after a victim gave up (a failed
 * program or erase) having used part of GC's reserve.
 *
 * Invariants:
 *   - A victim stays FULL until it is erased, so no frontier takes it;
 *     pick_victim skips the victim in progress (only foreground GC may
 *     take it over, to finish it) and the pending ones.
 *   - A victim's OOB entries stay valid while it is reclaimed: nothing
 *     programs a FULL block and only GC, under gc.lock, erases.
 *   - A block is erased only with no valid page (asserted) and after a
 *     barrier that began after its last valid page left it.
 *   - A victim's copy of replay_seq may be older than the current one
 *     after a checkpoint: it then copies a few trim pages that were no
 *     longer needed, never too few.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl-internal.h"

#define GC_SLICE 8              /* pages relocated per background slice
                                 * (deadline mode) */

int
gc_init (struct ftl *ftl)
{
  struct gc *gc = &ftl->gc;

  pthread_mutex_init (&gc->lock, NULL);
  gc->buf_pages = MIN (GC_BATCH, ftl->ppb);
  gc->buf = malloc ((size_t) gc->buf_pages * ftl->page_size);
  gc->oob = malloc ((size_t) ftl->ppb * FTL_OOB_BYTES);
  gc->cur.block = FTL_NO_BLOCK;
  gc->cur.oob = malloc ((size_t) ftl->ppb * FTL_OOB_BYTES);
  if (!gc->buf || !gc->oob || !gc->cur.oob)
    return -ENOMEM;
  return 0;
}

void
gc_free (struct ftl *ftl)
{
  struct gc *gc = &ftl->gc;

  free (gc->buf);
  free (gc->oob);
  free (gc->cur.oob);
  gc->buf = gc->oob = gc->cur.oob = NULL;
  pthread_mutex_destroy (&gc->lock);
}

const char *
ftl_gc_policy_name (enum ftl_gc_policy p)
{
  switch (p) {
  case FTL_GC_GREEDY: return "greedy";
  case FTL_GC_COST_BENEFIT: return "cost-benefit";
  }
  return "unknown";
}

int
ftl_gc_policy_from_name (const char *name)
{
  if (strcmp (name, "greedy") == 0)
    return FTL_GC_GREEDY;
  if (strcmp (name, "cost-benefit") == 0)
    return FTL_GC_COST_BENEFIT;
  return -1;
}

const char *
ftl_gc_mode_name (enum ftl_gc_mode m)
{
  switch (m) {
  case FTL_GC_WATERMARK: return "watermark";
  case FTL_GC_DEADLINE: return "deadline";
  }
  return "unknown";
}

int
ftl_gc_mode_from_name (const char *name)
{
  if (strcmp (name, "watermark") == 0)
    return FTL_GC_WATERMARK;
  if (strcmp (name, "deadline") == 0)
    return FTL_GC_DEADLINE;
  return -1;
}

bool
gc_deadline_near (struct ftl *ftl)
{
  if (ftl->gc.mode != FTL_GC_DEADLINE || !ftl->dl.timeout_ns)
    return false;
  uint64_t when = dl_earliest (&ftl->dl);
  if (when == UINT64_MAX)
    return false;
  uint64_t now = clock_now ();
  return when <= now || when - now < ftl->dl.timeout_ns / 2;
}

/* Choose a victim among the FULL blocks, or FTL_NO_BLOCK if reclaiming
 * any of them would free nothing (blocks on their last cycle included:
 * their erase retires them).
 *
 * The cost of a block is the pages that must be copied (gc_victim_cost):
 * valid pages and the trim pages a replay may need.  Erasing frees the
 * whole block, so u = cost / pages_per_block, unwritten pages of a
 * block closed early (at a restart) included.  A block whose copies do
 * not fit in what GC may take (gc_victim_fits) is no candidate.
 *
 *   greedy        the lowest u.
 *   cost-benefit  the highest (1 - u) * age / (1 + u), where age is the
 *                 number of sequence numbers issued since the block
 *                 filled up: an old block's remaining data is likely to
 *                 stay valid (cold), so reclaiming it now is worth more
 *                 than its count of valid pages says.
 *
 * greedy: use the greedy score whatever the policy.  The victim that
 * background GC reclaims in slices (gc.cur) is a candidate only if
 * take_cur (foreground GC, which then finishes it).  Caller holds
 * gc.lock.
 */
static uint32_t
pick_victim (struct ftl *ftl, bool greedy, bool take_cur)
{
  uint32_t best = FTL_NO_BLOCK;
  double best_score = -1.0;
  uint64_t now = __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
  enum ftl_gc_policy policy = greedy ? FTL_GC_GREEDY : ftl->gc.policy;

  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] != FTL_BLK_FULL)
      continue;
    if (b == ftl->gc.cur.block && !take_cur)
      continue;
    if (gc_is_pending (ftl, b))
      continue;
    /* Its erase would retire it: reclaiming it gives no block back
     * (wl.c).  If nothing in it is valid, gc_find_drained takes it.
     */
    if (wl_on_last_cycle (ftl, b))
      continue;
    uint32_t cost = gc_victim_cost (ftl, b);
    if (cost >= ftl->ppb || !gc_victim_fits (ftl, b, cost))
      continue;
    double u = (double) cost / ftl->ppb, score;
    if (policy == FTL_GC_COST_BENEFIT) {
      double age = (double) (now - MIN (now, ftl->close_seq[b])) + 1.0;
      score = (1.0 - u) * age / (1.0 + u);
    }
    else
      score = 1.0 - u;
    if (score > best_score) {
      best = b;
      best_score = score;
      if (cost == 0 && policy == FTL_GC_GREEDY)
        break;
    }
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  return best;
}

/* ---- relocation ---- */

/* Program the batch (data in gc.buf) at GC frontier f; the mappings
 * move as the pages land.  Pages may span two GC blocks.  When f needs
 * a block and none is free, the other GC frontier's open block takes
 * the pages: data of two temperatures share a block, rather than GC
 * failing.  With that, one free block is all a victim's copies need:
 * whatever the two frontiers' open blocks hold, the pages that do not
 * fit there are fewer than a block.
 */
static int
program_batch (struct ftl *ftl, struct frontier *f,
               const struct log_page *mv, uint32_t n, const uint8_t *buf)
{
  struct frontier *other = alloc_gc_frontier (ftl, f->group,
                                              f->temp == FRONTIER_COLD);
  uint32_t done = 0;
  int r;

  while (done < n) {
    struct frontier *to = f;
    r = alloc_frontier_open (ftl, f, ALLOC_GC);
    if (r == -ENOSPC && ftl->gc.npending > 0) {
      /* Short of a block while victims wait for their erase. */
      r = gc_flush_pending (ftl);
      if (r < 0)
        return r;
      continue;
    }
    if (r == -ENOSPC && alloc_frontier_room (ftl, other) > 0) {
      log_debug (ftl, FTL_DEBUG_GC, "gc: no free block: %u pages go to the "
                 "other GC frontier", n - done);
      to = other;
      r = 0;
    }
    if (r < 0) {
      log_msg (ftl, FTL_LOG_ERROR, "no free erase block for relocated data "
               "(free pool exhausted)");
      return r;
    }
    uint32_t k = MIN (n - done, alloc_frontier_room (ftl, to));
    uint32_t moved = 0;
    k = MIN (k, ALLOC_PROGRAM_MAX);
    r = alloc_program (ftl, to, mv + done,  k,
                       buf + ((size_t) done << ftl->page_shift), &moved);
    if (r < 0)
      return r;
    ctr_add (ftl, ftl->gc.moving_for_wl ? FTL_CTR_WL_MOVED
             : FTL_CTR_GC_COPIED, moved);
    if (ftl->gc.from_slc)
      __atomic_fetch_add (&ftl->slc.folded, moved, __ATOMIC_RELAXED);
    done += k;
  }
  return 0;
}

/* Read the pages of a batch from the victim into gc.buf and verify them
 * against the victim's OOB entries (read_batch).
 */
static int
read_runs (struct ftl *ftl, const struct gc_victim *v,
           struct log_page *mv, uint32_t n)
{
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *p = ftl->gc.buf + ((size_t) i << ftl->page_shift);
    const uint8_t *ob;
    struct ftl_oob o;
    int r;

    /* Read runs of consecutive pages in one call. */
    uint32_t run = 1;
    while (i + run < n && mv[i + run].from == mv[i].from + run)
      run++;
    r = media_read (&ftl->media, mv[i].from, run, p);
    if (r < 0)
      return r;
    for (uint32_t j = 0; j < run; j++) {
      ob = v->oob
        + (size_t) media_ppn_page (&ftl->media, mv[i + j].from) * FTL_OOB_BYTES;
      uint8_t *pj = p + ((size_t) j << ftl->page_shift);
      if (fmt_oob_decode (ob, FTL_OOB_BYTES, &o) != FTL_FMT_OK) {
        log_msg (ftl, FTL_LOG_ERROR, "gc: page %u of block %u: its OOB "
                 "entry is damaged",
                 media_ppn_page (&ftl->media, mv[i + j].from), v->block);
        return -EIO;
      }
      bool intact = o.data_checksum ==
        fmt_checksum (pj, ftl->page_size,
                      oob_seed (ftl, &o, mv[i + j].from));
      if (mv[i + j].kind == FTL_OOB_MAP && !intact) {
        /* A damaged translation page stays where it is (its group's
         * load reports it); the victim is left alone.
         */
        log_msg (ftl, FTL_LOG_ERROR, "gc: the translation page at page %u "
                 "of block %u fails its checksum",
                 media_ppn_page (&ftl->media, mv[i + j].from), v->block);
        return -EIO;
      }
      if (!intact) {
        /* A mapped page damaged after it was written: what it held is
         * lost, and its logical page must go on reading as an error,
         * never as something else: it moves as poison (format.h).
         */
        log_msg (ftl, FTL_LOG_WARN, "gc: logical page %u: page %u of "
                 "block %u fails its checksum; moved as lost data",
                 mv[i + j].lpn, media_ppn_page (&ftl->media, mv[i + j].from),
                 v->block);
        mv[i + j].kind = FTL_OOB_POISON;
      }
      else if (mv[i + j].kind == FTL_OOB_DATA &&
               errmodel_relocation_lost (ftl, mv[i + j].from,
                                         o.erase_count)) {
        /* The error model's uncorrectable page: lost as well. */
        log_msg (ftl, FTL_LOG_WARN, "gc: logical page %u: page %u of "
                 "block %u is uncorrectable; moved as lost data",
                 mv[i + j].lpn, media_ppn_page (&ftl->media, mv[i + j].from),
                 v->block);
        mv[i + j].kind = FTL_OOB_POISON;
      }
      if (mv[i + j].kind == FTL_OOB_POISON)
        memset (pj, 0, ftl->page_size);
      else if (ftl->seed_flags) {
        /* Verified, and its copy's seed is the same: the program takes
         * the checksum as it is instead of hashing the page again.
         */
        mv[i + j].has_sum = true;
        mv[i + j].sum = o.data_checksum;
      }
    }
    i += run - 1;
  }
  return 0;
}

/* The trim pages among v's OOB entries that a replay may need; and
 * what the block holds of them, for gc_victim_cost: unknown after a
 * restart, and counted by the OOB entries now.  A block whose trim
 * pages are known to be none, or none live, is not scanned.
 */
static uint32_t
victim_live_trims (struct ftl *ftl, const struct gc_victim *v, uint32_t b)
{
  uint32_t ec = media_erase_count (&ftl->media, b);
  uint32_t trims = 0, live = 0;
  uint64_t end = __atomic_load_n (&ftl->trim_seq_end[b], __ATOMIC_RELAXED);

  if (end <= v->live_trim)
    return 0;
  end = 0;

  for (uint32_t p = 0; p < v->wp; p++) {
    struct ftl_oob o;
    if (fmt_oob_decode (v->oob + (size_t) p * FTL_OOB_BYTES, FTL_OOB_BYTES,
                        &o) != FTL_FMT_OK || o.erase_count != ec ||
        o.kind != FTL_OOB_TRIM)
      continue;
    trims++;
    end = MAX (end, o.seq + 1);
    live += o.seq >= v->live_trim;
  }
  __atomic_store_n (&ftl->trim_pages[b], trims, __ATOMIC_RELAXED);
  __atomic_store_n (&ftl->trim_seq_end[b], end, __ATOMIC_RELAXED);
  return live;
}

/* Start reclaiming victim: read its OOB entries into v->oob, and count
 * what it copies at most.  -EAGAIN: left alone, as its copies do not
 * fit (gc_victim_fits) or, with gain, they would free nothing (its live
 * trim pages, which gc_victim_cost did not know, fill it).
 */
static int
victim_begin (struct ftl *ftl, struct gc_victim *v, uint32_t victim,
              bool gain)
{
  uint32_t cost;
  int r;

  assert (ftl->state[victim] == FTL_BLK_FULL);
  assert (v->block == FTL_NO_BLOCK || v->block == victim);
  __atomic_store_n (&v->block, FTL_NO_BLOCK, __ATOMIC_RELAXED);
  v->wp = ftl->media.wp[victim];
  v->next = 0;
  /* Trim pages stay while either checkpoint slot may need them. */
  v->live_trim = __atomic_load_n (&ftl->replay_seq, __ATOMIC_ACQUIRE);
  r = media_read_oob (&ftl->media, victim, 0, v->wp, v->oob);
  if (r < 0)
    return r;
  cost = __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED)
    + victim_live_trims (ftl, v, victim);
  if ((gain && cost >= ftl->ppb) || !gc_victim_fits (ftl, victim, cost)) {
    log_debug (ftl, FTL_DEBUG_GC, "gc: block %u left alone: %u pages to "
               "copy, %" PRIu64 " pages of room", victim, cost,
               gc_room (ftl));
    return -EAGAIN;
  }
  __atomic_store_n (&v->block, victim, __ATOMIC_RELAXED);
  return 0;
}

/* Choose what to move among the victim's next pages, at most max of
 * them: the valid data pages, and the intact trim pages that a replay
 * may need.  Returns how many, or a negative errno.
 */
static int
choose_moves (struct ftl *ftl, struct gc_victim *v, struct log_page *mv,
              uint32_t max)
{
  uint32_t n = 0, victim = v->block;
  uint32_t ec = media_erase_count (&ftl->media, victim);

  while (v->next < v->wp && n < max) {
    uint32_t page = v->next++;
    uint32_t ppn = media_ppn (&ftl->media, victim, page);
    struct ftl_oob o;

    /* An entry that does not decode, or that is older than the block's
     * last erase, belongs to a page whose programming failed or was
     * torn: nothing maps to it.  (Were a mapped page's entry damaged,
     * the victim's valid count would not reach zero in victim_finish,
     * and GC would fail with an error.)
     */
    if (fmt_oob_decode (v->oob + (size_t) page * FTL_OOB_BYTES,
                        FTL_OOB_BYTES, &o) != FTL_FMT_OK ||
        o.erase_count != ec)
      continue;
    if (o.kind == FTL_OOB_TRIM) {
      if (o.seq < v->live_trim)
        continue;
      /* Still needed by a replay; it may be torn (written just before a
       * crash, and dropped by the recovery that followed): copied only
       * if intact.
       */
      uint8_t *p = ftl->gc.buf;
      int r = media_read (&ftl->media, ppn, 1, p);
      if (r < 0)
        return r;
      if (fmt_checksum (p, ftl->page_size, oob_seed (ftl, &o, ppn))
          == o.data_checksum)
        mv[n++] = (struct log_page) {
          .kind = FTL_OOB_TRIM, .trim_entries = o.trim_entries,
          .seq = o.seq, .from = ppn,
          .has_sum = ftl->seed_flags != 0, .sum = o.data_checksum };
    }
    else if (o.kind == FTL_OOB_MAP) {
      /* A translation page that the map or a checkpoint names (pmap.c):
       * moved like data; its copy keeps its version.
       */
      if (pmap_tp_live (ftl, o.lpn, ppn))
        mv[n++] = (struct log_page) {
          .kind = FTL_OOB_MAP, .lpn = o.lpn, .seq = o.seq, .from = ppn };
    }
    else if (o.lpn < ftl->logical_pages && l2p_load (ftl, o.lpn) == ppn)
      mv[n++] = (struct log_page) {
        .kind = o.kind, .lpn = o.lpn, .seq = o.seq, .from = ppn };
  }
  return n;
}

/* With the timing model, the runs of a batch are read at once, each on
 * its dies, and the batch waits once, for the last of them.
 */
static int
read_batch (struct ftl *ftl, const struct gc_victim *v,
            struct log_page *mv, uint32_t n)
{
  int r;
  uint64_t end;

  media_defer (&ftl->media);
  r = read_runs (ftl, v, mv, n);
  end = media_deferred (&ftl->media);
  if (r == 0)
    r = media_wait (&ftl->media, end);
  return r;
}

/* Relocate the valid pages among the next ones of the victim, at most
 * max of them (one batch at most).  Returns 1 when every page of the
 * victim has been looked at, 0 if there are more, or a negative errno.
 */
static int
victim_step (struct ftl *ftl, struct gc_victim *v, uint32_t max)
{
  struct log_page mv[GC_BATCH];
  uint32_t cnt[FTL_NS_MAX], young[FTL_NS_MAX], at = 0;
  unsigned groups;
  int n, r = 0;

  n = choose_moves (ftl, v, mv, MIN (max, ftl->gc.buf_pages));
  if (n < 0)
    return n;
  if (n == 0)
    return v->next >= v->wp;
  groups = gc_partition_groups (ftl, mv, n, cnt);
  for (unsigned g = 0; g < groups; at += cnt[g++])
    young[g] = cnt[g] ? gc_partition_young (ftl, g, mv + at, cnt[g]) : 0;
  /* Pages of an SLC victim are folded (slc.c). */
  ftl->gc.from_slc = media_block_slc (&ftl->media, v->block);
  r = read_batch (ftl, v, mv, n);
  at = 0;
  for (unsigned g = 0; g < groups && r == 0; at += cnt[g++]) {
    const uint8_t *buf = ftl->gc.buf + ((size_t) at << ftl->page_shift);
    if (young[g] > 0)
      r = program_batch (ftl, alloc_gc_frontier (ftl, g, true), mv + at,
                         young[g], buf);
    if (r == 0 && young[g] < cnt[g])
      r = program_batch (ftl, alloc_gc_frontier (ftl, g, false),
                         mv + at + young[g], cnt[g] - young[g],
                         buf + ((size_t) young[g] << ftl->page_shift));
  }
  if (r < 0)
    return r;
  return v->next >= v->wp;
}

/* Every page of the victim has been looked at: erase it, now or (within
 * gc_reclaim) with the next batch of pending victims.
 */
static int
victim_finish (struct ftl *ftl, struct gc_victim *v)
{
  struct gc *gc = &ftl->gc;
  uint32_t victim = v->block;
  int r;

  /* Host writes that replaced pages of the victim decrement its valid
   * count just after their exchange; wait for any still in flight (a
   * few instructions each).  A count that stays up means a mapped page
   * whose OOB entry is damaged: the block is left alone.
   */
  for (unsigned spins = 0;
       __atomic_load_n (&ftl->valid[victim], __ATOMIC_ACQUIRE) != 0;
       spins++) {
    if (spins > 1000) {
      struct timespec ts = { .tv_nsec = 1000000 };
      nanosleep (&ts, NULL);
    }
    if (spins > 3000) {
      log_msg (ftl, FTL_LOG_ERROR, "gc: erase block %u still has %u valid "
               "pages after relocation: their OOB entries are damaged",
               victim,
               __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED));
      return -EIO;
    }
    sched_yield ();
  }

  /* Within gc_reclaim, and while the pool has room to spare, the erase
   * waits: several victims share one barrier, or a client's flush
   * covers them (see flush_pending).
   */
  if (gc->defer && !gc->moving_for_wl &&
      gc->npending < gc->erase_batch && alloc_nfree (ftl) > gc->low) {
    gc->pending[gc->npending] = victim;
    __atomic_store_n (&gc->npending, gc->npending + 1, __ATOMIC_RELAXED);
    return 0;
  }

  /* Nothing may refer to the victim once it is erased: the copies and
   * host writes that replaced its pages, and the trim records that
   * unmapped them, must be durable first.
   */
  if (map_drained_durably (ftl, victim))
    return gc_erase_one_covered (ftl, victim);
  r = gc_barrier (ftl, true);
  if (r < 0)
    return r;
  return gc_erase_block (ftl, victim);
}

/* Go on with v until the victim is erased.  v is left empty (block
 * FTL_NO_BLOCK) whatever happens: after an error the block stays FULL,
 * and a later reclaim starts it again from its OOB entries.
 */
static int
victim_complete (struct ftl *ftl, struct gc_victim *v)
{
  int r;

  do
    r = victim_step (ftl, v, UINT32_MAX);
  while (r == 0);
  if (r > 0)
    r = victim_finish (ftl, v);
  __atomic_store_n (&v->block, FTL_NO_BLOCK, __ATOMIC_RELAXED);
  return r;
}

/* Relocate what is valid in the victim and erase it: at once, or, for
 * the victim in progress, from where its last slice stopped.  gain:
 * only if that frees a page (victim_begin).  -EAGAIN: left alone.
 */
static int
reclaim_block (struct ftl *ftl, uint32_t victim, bool gain)
{
  struct gc_victim v = { .block = FTL_NO_BLOCK, .oob = ftl->gc.oob };
  int r;

  if (victim == ftl->gc.cur.block)
    return victim_complete (ftl, &ftl->gc.cur);
  r = victim_begin (ftl, &v, victim, gain);
  if (r < 0)
    return r;
  return victim_complete (ftl, &v);
}

int
gc_reclaim_block (struct ftl *ftl, uint32_t b)
{
  int r;

  assert (b < ftl->blocks);
  ckpt_shared (ftl);
  gc_lock (ftl);
  r = ftl->state[b] == FTL_BLK_FULL ? reclaim_block (ftl, b, false)
    : -EINVAL;
  if (r >= 0)
    r = gc_flush_pending (ftl);
  gc_unlock (ftl);
  ckpt_release (ftl);
  return r < 0 ? r : 0;
}

/* Static wear leveling (wl.c chooses the block), only when the free
 * pool is above the low watermark, so that it never competes with host
 * writes for the last free blocks.  Returns 1 if it moved a block, 0
 * if none was due, or a negative errno.  Caller holds gc.lock.
 */
static int
wear_level (struct ftl *ftl)
{
  uint32_t b;
  int r;

  /* Victims waiting for their erase count as free. */
  if (alloc_nfree (ftl) + ftl->gc.npending <= ftl->gc.low)
    return 0;
  b = wl_pick (ftl, gc_holds);
  if (b == FTL_NO_BLOCK)
    return 0;
  ftl->gc.moving_for_wl = true;
  r = reclaim_block (ftl, b, false);
  ftl->gc.moving_for_wl = false;
  if (r == -EAGAIN)
    return 0;                   /* no room for its copies now */
  return r < 0 ? r : 1;
}

/* Read reclaim: a block whose reads or corrected errors near the
 * limit (noted by the error model) is reclaimed like a victim, out of
 * turn, only when the free pool is above the low watermark.  Its copies
 * count as GC copies (in the WAF), its erase as a GC run, and the block
 * in gc.reclaimed_blocks.
 * Caller holds gc.lock.
 */
static int
read_reclaim (struct ftl *ftl)
{
  uint32_t b;
  int r;

  if (alloc_nfree (ftl) + ftl->gc.npending <= ftl->gc.low)
    return 0;
  b = errmodel_reclaim_pick (ftl, gc_holds);
  if (b == FTL_NO_BLOCK)
    return 0;
  log_debug (ftl, FTL_DEBUG_GC, "read reclaim of block %u", b);
  r = reclaim_block (ftl, b, false);
  if (r == -EAGAIN)
    return 0;                   /* no room for its copies now */
  if (r >= 0)
    r = gc_flush_pending (ftl);
  if (r < 0)
    return r;
  errmodel_reclaimed (ftl);
  return 1;
}

/* ---- entry points ---- */

/* One step of a collection: erase or sync for a drained block, else
 * reclaim one victim, then (foreground GC that is not in a hurry) make
 * a wear leveling move; the background thread leaves that move to its
 * next step (gc.wl_after).  Returns 1 if a victim was reclaimed, 0 if
 * a drained block was handled or a victim left alone (its OOB entries
 * showed more to copy than its cost said: victim_begin learned it, and
 * the next pick knows), or a negative errno (-ENOSPC: nothing to
 * reclaim).  Caller holds gc.lock.
 */
static int
reclaim_step (struct ftl *ftl, bool hurry, bool bg, bool *cheap)
{
  bool ready;
  uint32_t drained = gc_find_drained (ftl, &ready);
  int r;

  /* First the blocks with nothing to copy: erased at once if a barrier
   * already made what replaced them durable; if not, one barrier serves
   * all of them.
   */
  if (drained != FTL_NO_BLOCK) {
    r = ready ? gc_erase_one_covered (ftl, drained) : gc_barrier (ftl, true);
    if (r == 0 && ready && bg)
      ctr_add (ftl, FTL_CTR_GC_BG_RUNS, 1);
    return r;
  }
  alloc_hot_cold_step (ftl);
  uint32_t victim = pick_victim (ftl, hurry, true);
  if (victim == FTL_NO_BLOCK) {
    if (ftl->gc.npending == 0)
      return -ENOSPC;
    r = gc_flush_pending (ftl);
    return r < 0 ? r : 0;
  }
  *cheap = __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED) == 0;
  log_debug (ftl, FTL_DEBUG_GC, "gc: victim block %u, %u valid pages, "
             "%u free blocks%s", victim,
             __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED),
             alloc_nfree (ftl),
             victim == ftl->gc.cur.block ? " (in progress)" : "");
  r = reclaim_block (ftl, victim, true);
  if (r == -EAGAIN)
    return 0;
  if (r == 0 && bg)
    ftl->gc.wl_after = true;
  else if (r == 0 && !hurry)
    r = wear_level (ftl);
  return r < 0 ? r : 1;
}

int
gc_reclaim (struct ftl *ftl, uint32_t target, bool bg)
{
  struct gc *gc = &ftl->gc;
  int r = 0;

  gc_lock (ftl);
  /* In deadline mode a writer that runs GC while a deadline is near
   * reclaims only down to the low watermark, the cheapest victims
   * first, and leaves wear leveling to the background thread.
   */
  bool hurry = !bg && gc_deadline_near (ftl);
  if (hurry)
    target = MIN (target, gc->low);
  gc->defer = true;
  r = gc_erase_covered_pending (ftl);
  while (r >= 0 && alloc_nfree (ftl) + gc->npending <= target) {
    bool cheap = false;
    r = reclaim_step (ftl, hurry, bg, &cheap);
    if (r < 0)
      break;
    if (r > 0 && bg) {
      ctr_add (ftl, FTL_CTR_GC_BG_RUNS, 1);
      /* One victim at a time, so that a checkpoint or a foreground
       * collection waits for one victim at most; or several with
       * nothing to copy, which cost an erase each and share a sync.
       */
      if (!cheap || gc->npending == 0 || gc->npending >= gc->erase_batch) {
        r = 0;
        break;
      }
    }
    r = 0;
  }
  if (r > 0)
    r = 0;
  /* The pending victims wait for a barrier that covers them while the
   * free pool alone is above gc.high and the batch has room; a
   * foreground collection wants the room now.
   */
  if (!bg || gc->npending >= gc->erase_batch ||
      alloc_nfree (ftl) <= gc->high) {
    int r2 = gc_flush_pending (ftl);
    if (r == 0 && r2 < 0)
      r = r2;
  }
  gc->defer = false;
  gc_unlock (ftl);
  return r;
}

int
gc_make_room (struct ftl *ftl, bool urgent)
{
  struct dl_wait w;
  uint64_t t;
  int r;

  if (!urgent && alloc_nfree (ftl) > ftl->gc.low)
    return 0;
  /* The request that runs this waits for a free block: its gc stage;
   * and for another thread's collection (gc.lock), whose host work
   * (syncs) is then its host stall too.
   */
  t = dl_stage_begin (FTL_STAGE_GC);
  dl_wait_begin (&w);
  if (!urgent) {
    /* With a background thread, reclaim just enough to go on. */
    r = gc_reclaim (ftl, ftl_bell_listening (&ftl->bell) ? ftl->gc.low : ftl->gc.high,
                    false);
    dl_wait_end (&w);
    dl_stage_end (t);
    return r == -ENOSPC ? 0 : r;
  }
  r = gc_reclaim (ftl, FTL_RESERVE_BLOCKS, false);
  dl_wait_end (&w);
  dl_stage_end (t);
  if (r < 0 && wl_worn_out (ftl))
    return -EROFS;              /* GC retired the last blocks it could */
  if (r == -ENOSPC)
    log_msg (ftl, FTL_LOG_ERROR, "device full: garbage collection found "
             "no erase block to reclaim");
  return r;
}

int
gc_slice (struct ftl *ftl)
{
  struct gc *gc = &ftl->gc;
  struct gc_victim *v = &gc->cur;
  int r = 1;

  gc_lock (ftl);
  if (v->block == FTL_NO_BLOCK) {
    if (alloc_nfree (ftl) > gc->high + wl_free_choice (ftl)) {
      r = 0;
      goto out;
    }
    alloc_hot_cold_step (ftl);
    uint32_t victim = pick_victim (ftl, false, false);
    if (victim == FTL_NO_BLOCK) {
      r = -ENOSPC;
      goto out;
    }
    log_debug (ftl, FTL_DEBUG_GC, "gc: victim block %u, %u valid pages, "
               "%u free blocks (in slices)", victim,
               __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED),
               alloc_nfree (ftl));
    r = victim_begin (ftl, v, victim, true);
    if (r == -EAGAIN)
      r = 1;                    /* learned its cost: pick again */
    if (r != 0)
      goto out;
  }
  r = victim_step (ftl, v, GC_SLICE);
  __atomic_fetch_add (&gc->slices, 1, __ATOMIC_RELAXED);
  if (r > 0) {
    r = victim_finish (ftl, v);
    __atomic_store_n (&v->block, FTL_NO_BLOCK, __ATOMIC_RELAXED);
    if (r == 0) {
      ctr_add (ftl, FTL_CTR_GC_BG_RUNS, 1);
      gc->wl_after = true;
    }
  }
  else if (r < 0)                 /* starts again from its OOB entries */
    __atomic_store_n (&v->block, FTL_NO_BLOCK, __ATOMIC_RELAXED);
  if (r == 0)
    r = 1;
 out:
  gc_unlock (ftl);
  return r;
}

/* Fold the oldest SLC block (slc.c): relocate its valid pages into
 * native blocks and erase it, as any victim, whatever its valid count.
 * Only when the free pool is above the low watermark.  Caller holds
 * gc.lock.
 */
static int
fold (struct ftl *ftl)
{
  uint32_t b;
  int r;

  if (alloc_nfree (ftl) + ftl->gc.npending <= ftl->gc.low ||
      !slc_fold_due (ftl))
    return 0;
  b = slc_fold_pick (ftl, gc_holds);
  if (b == FTL_NO_BLOCK)
    return 0;
  log_debug (ftl, FTL_DEBUG_GC, "fold of SLC block %u, %u valid pages", b,
             __atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED));
  r = reclaim_block (ftl, b, false);
  if (r == -EAGAIN)
    return 0;                   /* no room for its copies now */
  if (r >= 0)
    r = gc_flush_pending (ftl);
  return r < 0 ? r : 1;
}

int
gc_fold (struct ftl *ftl)
{
  int r;

  gc_lock (ftl);
  r = gc_deadline_near (ftl) ? 0 : fold (ftl);
  gc_unlock (ftl);
  return r;
}

int
gc_read_reclaim (struct ftl *ftl)
{
  int r;

  gc_lock (ftl);
  r = gc_deadline_near (ftl) ? 0 : read_reclaim (ftl);
  gc_unlock (ftl);
  return r;
}

int
gc_wear_level (struct ftl *ftl)
{
  int r = 0;

  gc_lock (ftl);
  if (ftl->gc.wl_after) {
    ftl->gc.wl_after = false;
    if (!gc_deadline_near (ftl))
      r = wear_level (ftl);
  }
  gc_unlock (ftl);
  return r;
}
