/* nbdkit-ftl: garbage collection.
 *
 * Victim selection is greedy (the FULL block with the fewest valid pages)
 * or cost-benefit (see pick_victim).
 * Relocation reads the victim's OOB entries once, then for each page that
 * is still valid (l2p[oob.lpn] == ppn) reads the data, checks it against
 * its OOB checksum, programs it at the GC frontier with its original
 * sequence number, and moves the map entry with a compare-and-swap: if a
 * host write replaced the page meanwhile, the swap fails and the copy is
 * garbage.  Pages of trim records are copied while a replay could still
 * need them (their sequence number is not older than that of the older
 * checkpoint slot, which recovery falls back to if the newest is
 * damaged).  When nothing in the victim is valid any more it is erased,
 * once a barrier (gc_barrier: buffered trim records logged, then a sync)
 * that began after its last valid page was replaced has completed (see
 * drain_epoch in ftl-internal.h): one barrier serves every block drained
 * before it, a client's flush included.  Within one collection
 * (reclaim_until), up to FTL_GC_ERASE_BATCH relocated victims wait and
 * share one barrier (gc_flush_pending), unless the free pool is down to
 * two blocks or GC needs a block for its own copies.
 *
 * Drained blocks (FULL, nothing valid, no trim page a replay may need)
 * cost nothing to reclaim: collections take them first (find_drained),
 * and the background thread erases them ahead of need, up to
 * gc_drain_target free blocks, running their barrier itself outside
 * gc_lock (background_drain), so that writers seldom wait for a sync.
 *
 * Everything here runs under gc_lock with ckpt_rw held shared by the
 * caller: a writer that finds the free pool at the low watermark
 * (foreground GC), or the background thread, which keeps the pool above
 * the high watermark.
 *
 * Modes (gc_mode):
 *
 *   watermark  the background thread reclaims one whole victim per hold
 *              of gc_lock; foreground GC picks victims by the policy.
 *   deadline   the background thread reclaims in slices of GC_SLICE
 *              pages: a victim's state (struct gc_victim, ftl->gc_cur)
 *              survives between slices, when gc_lock and ckpt_rw are
 *              released.  Before each slice it asks the deadline tracker
 *              for the earliest deadline of the running requests; while
 *              one has less than half its timeout left, and the free
 *              pool is above the low watermark, it yields (waits
 *              GC_YIELD_NS and asks again).  Foreground GC, when a
 *              deadline is near, reclaims just enough for the writer to
 *              go on (the low watermark), from the victim with the fewest
 *              pages to copy (the one in progress included: it goes on
 *              from where the background thread stopped), and does no
 *              wear leveling.
 *
 * A victim reclaimed in slices keeps reclaim's invariants: it stays FULL
 * until erased (no frontier takes it), pick_victim skips it (only
 * foreground GC may take it over, to finish it), each slice moves pages
 * by compare-and-swap as a whole reclaim does, and the erase waits, as
 * always, for the valid count to reach zero, the trim log flush and the
 * sync.  Its OOB entries stay valid: nothing programs a FULL block and
 * only GC, under gc_lock, erases.  Its copy of replay_seq may be older
 * than the current one after a checkpoint: it then copies a few trim
 * pages that were no longer needed, never too few.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl-internal.h"

#define GC_BATCH 64             /* pages read and programmed together */
#define GC_SLICE 8              /* pages relocated per background slice
                                 * (deadline mode) */
#define GC_YIELD_NS (500 * UINT64_C (1000))  /* one wait for a request */

int
gc_init (struct ftl *ftl)
{
  pthread_mutex_init (&ftl->gc_lock, NULL);
  ftl->gc_buf_pages = MIN (GC_BATCH, ftl->ppb);
  ftl->gc_buf = malloc ((size_t) ftl->gc_buf_pages * ftl->page_size);
  /* OOB of a whole block (victim) + encode space for one batch. */
  ftl->gc_oob = malloc ((size_t) (ftl->ppb + ftl->gc_buf_pages)
                        * FTL_OOB_BYTES);
  ftl->gc_cur.block = FTL_NO_BLOCK;
  ftl->gc_cur.oob = malloc ((size_t) ftl->ppb * FTL_OOB_BYTES);
  ftl->drain_epoch = calloc (ftl->blocks, sizeof *ftl->drain_epoch);
  ftl->trim_seq_end = malloc (ftl->blocks * sizeof *ftl->trim_seq_end);
  if (!ftl->gc_buf || !ftl->gc_oob || !ftl->gc_cur.oob || !ftl->drain_epoch ||
      !ftl->trim_seq_end)
    return -ENOMEM;
  /* What the blocks written before this open hold is unknown until
   * they are erased.
   */
  for (uint32_t b = 0; b < ftl->blocks; b++)
    ftl->trim_seq_end[b] = UINT64_MAX;
  return 0;
}

void
gc_free (struct ftl *ftl)
{
  free (ftl->gc_buf);
  free (ftl->gc_oob);
  free (ftl->gc_cur.oob);
  free (ftl->drain_epoch);
  free (ftl->trim_seq_end);
  ftl->drain_epoch = NULL;
  ftl->trim_seq_end = NULL;
  ftl->gc_buf = NULL;
  ftl->gc_oob = NULL;
  ftl->gc_cur.oob = NULL;
  pthread_mutex_destroy (&ftl->gc_lock);
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

/* Deadline mode: does a running request have less than half its
 * timeout left?
 */
static bool
deadline_near (struct ftl *ftl)
{
  if (ftl->gc_mode != FTL_GC_DEADLINE || !ftl->dl.timeout_ns)
    return false;
  uint64_t when = dl_earliest (&ftl->dl);
  if (when == UINT64_MAX)
    return false;
  uint64_t now = timing_now ();
  return when <= now || when - now < ftl->dl.timeout_ns / 2;
}

/* Choose a victim among the FULL blocks, or FTL_NO_BLOCK if reclaiming
 * any of them would free nothing.
 *
 * The cost of a block is the pages that must be copied: valid pages and
 * trim pages written since the last checkpoint.  Erasing frees the whole
 * block, so u = cost / pages_per_block, unwritten pages of a block
 * closed early (at a restart) included.
 *
 *   greedy        the lowest u.
 *   cost-benefit  the highest (1 - u) * age / (1 + u), where age is the
 *                 number of sequence numbers issued since the block
 *                 filled up: an old block's remaining data is likely to
 *                 stay valid (cold), so reclaiming it now is worth more
 *                 than its count of valid pages says.
 *
 * greedy: use the greedy score whatever the policy.  The victim that
 * background GC reclaims in slices (gc_cur) is a candidate only if
 * take_cur (foreground GC, which then finishes it).  Caller holds
 * gc_lock.
 */
/* Is b relocated and waiting for its erase (under gc_lock)? */
static bool
is_pending (const struct ftl *ftl, uint32_t b)
{
  for (unsigned i = 0; i < ftl->gc_npending; i++)
    if (ftl->gc_pending[i] == b)
      return true;
  return false;
}

static uint32_t
pick_victim (struct ftl *ftl, bool greedy, bool take_cur)
{
  uint32_t best = FTL_NO_BLOCK;
  double best_score = -1.0;
  uint64_t now = __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
  enum ftl_gc_policy policy = greedy ? FTL_GC_GREEDY : ftl->gc_policy;

  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] != FTL_BLK_FULL)
      continue;
    if (b == ftl->gc_cur.block && !take_cur)
      continue;
    if (is_pending (ftl, b))
      continue;
    uint32_t cost = __atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED)
      + __atomic_load_n (&ftl->trim_pages[b], __ATOMIC_RELAXED);
    if (cost >= ftl->ppb)
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

/* One page to relocate. */
struct move {
  uint32_t from;                /* PPN in the victim */
  uint32_t lpn;                 /* or FTL_P2L_TRIM */
  uint64_t seq;
};

/* Program the batch (data in gc_buf) at the GC frontier and move the map
 * entries.  Pages may span two GC blocks.
 */
static int
program_batch (struct ftl *ftl, struct frontier *f, const struct move *mv,
               uint32_t n, uint8_t *buf)
{
  uint8_t *oob = ftl->gc_oob + (size_t) ftl->ppb * FTL_OOB_BYTES;
  uint32_t done = 0;
  int r;

  while (done < n) {
    r = frontier_ensure_block (ftl, f);
    if (r < 0)
      return r;
    uint32_t blk = f->block, page = f->wp;
    uint32_t k = MIN (n - done, ftl->ppb - page);
    uint8_t *data = buf + ((size_t) done << ftl->page_shift);
    uint32_t ec = media_erase_count (&ftl->media, blk);
    uint64_t seqs = 0;

    for (uint32_t i = 0; i < k; i++) {
      const struct move *m = &mv[done + i];
      uint32_t ppn = media_ppn (&ftl->media, blk, page + i);
      struct ftl_oob o = {
        .kind = m->lpn == FTL_P2L_TRIM ? FTL_OOB_TRIM : FTL_OOB_DATA,
        .lpn = m->lpn,
        .seq = m->seq,
        .erase_count = ec,
        .data_checksum = ftl_checksum (data + ((size_t) i << ftl->page_shift),
                                       ftl->page_size, ppn),
      };
      if (m->lpn == FTL_P2L_TRIM) {
        /* The OOB lpn field of a trim page counts its entries. */
        uint32_t cnt;
        memcpy (&cnt, data + ((size_t) i << ftl->page_shift), 4);
        o.lpn = le32toh (cnt);
        gc_note_trim_page (ftl, blk, m->seq);
      }
      ftl_oob_encode (&o, oob + (size_t) i * FTL_OOB_BYTES);
      seqs += m->seq;
    }
    block_note_seqs (ftl, blk, seqs, k);
    r = media_program (&ftl->media, blk, page, k, data, oob);
    if (r < 0) {
      frontier_advance (ftl, f, k);
      ftl_log (ftl, FTL_LOG_ERROR, "gc: programming block %u: %s",
               blk, strerror (-r));
      return r;
    }
    for (uint32_t i = 0; i < k; i++) {
      const struct move *m = &mv[done + i];
      uint32_t ppn = media_ppn (&ftl->media, blk, page + i);
      uint32_t expect = m->from;

      if (m->lpn == FTL_P2L_TRIM) {
        __atomic_fetch_add (&ftl->trim_pages[blk], 1, __ATOMIC_RELAXED);
        continue;
      }
      __atomic_fetch_add (&ftl->valid[blk], 1, __ATOMIC_RELAXED);
      if (__atomic_compare_exchange_n (&ftl->l2p[m->lpn], &expect, ppn,
                                       false, __ATOMIC_ACQ_REL,
                                       __ATOMIC_ACQUIRE)) {
        uint32_t vb = media_ppn_block (&ftl->media, m->from);
        gc_note_drain (ftl, vb);
        __atomic_fetch_sub (&ftl->valid[vb], 1, __ATOMIC_RELEASE);
        ctr_add (ftl, ftl->gc_wl ? FTL_CTR_WL_MOVED : FTL_CTR_GC_COPIED, 1);
      }
      else {                    /* a host write won: the copy is garbage */
        gc_note_drain (ftl, blk);
        __atomic_fetch_sub (&ftl->valid[blk], 1, __ATOMIC_RELEASE);
      }
    }
    frontier_advance (ftl, f, k);
    done += k;
  }
  return 0;
}

/* Put the moves of data younger than hot_age first (stable), and return
 * how many there are.  They go to their own GC frontier: data that GC
 * finds still valid soon after it was written is likely rewritten soon
 * again, and mixing it with long-lived data would make those blocks
 * partly invalid again before long.  Trim pages count as old.
 */
static uint32_t
partition_young (struct ftl *ftl, struct move *mv, uint32_t n)
{
  uint64_t now = __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
  struct move tmp[GC_BATCH];
  uint32_t young = 0, old = 0;

  if (one_log (ftl))
    return 0;
  for (uint32_t i = 0; i < n; i++) {
    if (mv[i].lpn != FTL_P2L_TRIM && now - MIN (now, mv[i].seq) < ftl->hot_age)
      mv[young++] = mv[i];
    else
      tmp[old++] = mv[i];
  }
  memcpy (mv + young, tmp, old * sizeof *tmp);
  return young;
}

/* Read the pages of a batch from the victim into gc_buf and verify them
 * against the victim's OOB entries.
 */
static int
read_batch (struct ftl *ftl, const struct gc_victim *v, const struct move *mv,
            uint32_t n)
{
  for (uint32_t i = 0; i < n; i++) {
    uint8_t *p = ftl->gc_buf + ((size_t) i << ftl->page_shift);
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
      if (ftl_oob_decode (ob, FTL_OOB_BYTES, &o) != FTL_FMT_OK ||
          o.data_checksum != ftl_checksum (p + ((size_t) j << ftl->page_shift),
                                           ftl->page_size, mv[i + j].from)) {
        ftl_log (ftl, FTL_LOG_ERROR, "gc: page %u of block %u fails its "
                 "checksum", media_ppn_page (&ftl->media, mv[i + j].from),
                 v->block);
        return -EIO;
      }
    }
    i += run - 1;
  }
  return 0;
}

/* Start reclaiming victim: read its OOB entries into v->oob. */
static int
victim_begin (struct ftl *ftl, struct gc_victim *v, uint32_t victim)
{
  int r;

  __atomic_store_n (&v->block, victim, __ATOMIC_RELAXED);
  v->wp = ftl->media.wp[victim];
  v->next = 0;
  /* Trim pages stay while either checkpoint slot may need them. */
  v->live_trim = __atomic_load_n (&ftl->replay_seq, __ATOMIC_ACQUIRE);
  r = media_read_oob (&ftl->media, victim, 0, v->wp, v->oob);
  if (r < 0)
    __atomic_store_n (&v->block, FTL_NO_BLOCK, __ATOMIC_RELAXED);
  return r;
}

/* Relocate the valid pages among the next ones of the victim, at most
 * max of them (one batch at most).  Returns 1 when every page of the
 * victim has been looked at, 0 if there are more, or a negative errno.
 */
static int
victim_step (struct ftl *ftl, struct gc_victim *v, uint32_t max)
{
  struct move mv[GC_BATCH];
  uint32_t n = 0, victim = v->block;
  int r;

  max = MIN (max, ftl->gc_buf_pages);
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
    if (ftl_oob_decode (v->oob + (size_t) page * FTL_OOB_BYTES,
                        FTL_OOB_BYTES, &o) != FTL_FMT_OK ||
        o.erase_count != media_erase_count (&ftl->media, victim))
      continue;
    if (o.kind == FTL_OOB_TRIM) {
      if (o.seq < v->live_trim)
        continue;
      /* Still needed by a replay; it may be torn (written just before a
       * crash, and dropped by the recovery that followed): copied only
       * if intact.
       */
      uint8_t *p = ftl->gc_buf + ((size_t) n << ftl->page_shift);
      r = media_read (&ftl->media, ppn, 1, p);
      if (r < 0)
        return r;
      if (ftl_checksum (p, ftl->page_size, ppn) == o.data_checksum)
        mv[n++] = (struct move) {
          .from = ppn, .lpn = FTL_P2L_TRIM, .seq = o.seq };
    }
    else if (o.lpn < ftl->logical_pages && l2p_load (ftl, o.lpn) == ppn)
      mv[n++] = (struct move) { .from = ppn, .lpn = o.lpn, .seq = o.seq };
  }

  if (n > 0) {
    uint32_t young = partition_young (ftl, mv, n);
    r = read_batch (ftl, v, mv, n);
    if (r == 0 && young > 0)
      r = program_batch (ftl, &ftl->gcw, mv, young, ftl->gc_buf);
    if (r == 0 && young < n)
      r = program_batch (ftl, &ftl->gcf, mv + young, n - young,
                         ftl->gc_buf + ((size_t) young << ftl->page_shift));
    if (r < 0)
      return r;
  }
  return v->next >= v->wp;
}

/* Every page of the victim has been looked at: sync and erase it. */
static int erase_synced (struct ftl *ftl, uint32_t victim);

int
gc_barrier (struct ftl *ftl)
{
  uint64_t k = __atomic_fetch_add (&ftl->barrier_started, 1, __ATOMIC_SEQ_CST);
  int r;

  /* Writing trim records is work done for everybody: a request's
   * deadline does not interrupt it (deadline.h), only the sync after.
   */
  dl_hold ();
  r = trimlog_flush (ftl);
  dl_release ();
  if (r == 0)
    r = media_sync (&ftl->media);
  if (r < 0)
    return r;
  atomic_max_u64 (&ftl->barrier_done, k + 1);
  return 0;
}

/* A barrier that GC runs for its erases (counted: gc.syncs). */
static int
gc_sync (struct ftl *ftl)
{
  int r = gc_barrier (ftl);
  if (r == 0)
    __atomic_fetch_add (&ftl->gc_barriers, 1, __ATOMIC_RELAXED);
  return r;
}

/* Erase a drained block that an earlier barrier covers (counted:
 * gc.erases_unsynced).
 */
static int
erase_covered (struct ftl *ftl, uint32_t b)
{
  int r = erase_synced (ftl, b);
  if (r == 0)
    __atomic_fetch_add (&ftl->gc_erases_unsynced, 1, __ATOMIC_RELAXED);
  return r;
}

/* Has a barrier that began after the last page of block b (valid count
 * zero) was superseded completed?  Then b can be erased at once.
 */
static bool
drained_before_barrier (struct ftl *ftl, uint32_t b)
{
  if (__atomic_load_n (&ftl->valid[b], __ATOMIC_ACQUIRE) != 0)
    return false;
  uint64_t e = __atomic_load_n (&ftl->drain_epoch[b], __ATOMIC_RELAXED);
  if (e == 0) {
    /* Nothing ever left it (no page of it was ever valid): what it
     * holds is garbage to any recovery, but note it anyway, so that
     * the rule has no exception.
     */
    gc_note_drain (ftl, b);
    e = __atomic_load_n (&ftl->drain_epoch[b], __ATOMIC_RELAXED);
  }
  return __atomic_load_n (&ftl->barrier_done, __ATOMIC_SEQ_CST) >= e;
}

/* A FULL block with nothing to copy (no valid page, no trim page that
 * a replay may need: see trim_seq_end), not in the hands of GC already.
 * *ready: whether one of them can be erased without a barrier; returns
 * that one, else any such block, else FTL_NO_BLOCK.  Caller holds
 * gc_lock.
 */
static bool is_pending (const struct ftl *ftl, uint32_t b);

static uint32_t
find_drained (struct ftl *ftl, bool *ready)
{
  uint32_t any = FTL_NO_BLOCK;
  uint64_t replay = __atomic_load_n (&ftl->replay_seq, __ATOMIC_ACQUIRE);

  *ready = false;
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] != FTL_BLK_FULL ||
        __atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED) != 0 ||
        __atomic_load_n (&ftl->trim_seq_end[b], __ATOMIC_RELAXED) > replay ||
        b == ftl->gc_cur.block || is_pending (ftl, b))
      continue;
    if (drained_before_barrier (ftl, b)) {
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

static int
victim_finish (struct ftl *ftl, struct gc_victim *v)
{
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
      ftl_log (ftl, FTL_LOG_ERROR, "gc: erase block %u still has %u valid "
               "pages after relocation: their OOB entries are damaged",
               victim,
               __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED));
      return -EIO;
    }
    sched_yield ();
  }

  /* Within reclaim_until, and while the pool has room to spare, the
   * erase waits: several victims share one sync (see gc_flush_pending).
   */
  if (ftl->gc_defer && !ftl->gc_wl &&
      ftl->gc_npending < FTL_GC_ERASE_BATCH && alloc_nfree (ftl) > 2) {
    ftl->gc_pending[ftl->gc_npending++] = victim;
    return 0;
  }

  /* Nothing may refer to the victim once it is erased: the copies and
   * host writes that replaced its pages, and the trim records that
   * unmapped them, must be durable first.
   */
  if (drained_before_barrier (ftl, victim))
    return erase_covered (ftl, victim);
  r = gc_sync (ftl);
  if (r < 0)
    return r;
  return erase_synced (ftl, victim);
}

int
gc_flush_pending (struct ftl *ftl)
{
  uint32_t pending[FTL_GC_ERASE_BATCH];
  unsigned n = ftl->gc_npending;
  int r;

  if (n == 0)
    return 0;
  /* Emptied first: the trim records logged here may need a block, and
   * frontier_ensure_block must not come back here for it.  After an
   * error the rest stay FULL, with nothing valid: GC takes them again.
   */
  memcpy (pending, ftl->gc_pending, n * sizeof *pending);
  ftl->gc_npending = 0;
  r = gc_sync (ftl);
  for (unsigned i = 0; i < n && r == 0; i++)
    r = erase_synced (ftl, pending[i]);
  return r < 0 ? r : (int) n;
}

/* Erase a drained victim once everything written before is durable. */
static int
erase_synced (struct ftl *ftl, uint32_t victim)
{
  int r;

  /* The victim stays FULL (never picked twice: only GC picks victims,
   * under gc_lock, and it skips the one in progress and the pending
   * ones) until the erase is done.
   */
  r = media_erase (&ftl->media, victim,
                   __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED));
  if (r < 0) {
    ftl_log (ftl, FTL_LOG_ERROR, "gc: erasing block %u: %s", victim,
             strerror (-r));
    return r;
  }
  __atomic_store_n (&ftl->trim_pages[victim], 0, __ATOMIC_RELAXED);
  __atomic_store_n (&ftl->drain_epoch[victim], 0, __ATOMIC_RELAXED);
  pthread_mutex_lock (&ftl->alloc_lock);
  if (media_erase_count (&ftl->media, victim) >= ftl->endurance) {
    /* Worn out: retired for good. */
    ftl->state[victim] = FTL_BLK_RETIRED;
    ftl->retired++;
    ftl_debug (ftl, FTL_DEBUG_GC, "block %u retired after %u erases",
               victim, media_erase_count (&ftl->media, victim));
    check_worn_out (ftl);
  }
  else {
    ftl->state[victim] = FTL_BLK_FREE;
    ftl->nfree++;
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  if (!ftl->gc_wl)
    ctr_add (ftl, FTL_CTR_GC_RUNS, 1);
  return 0;
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

/* Relocate what is valid in the victim, sync, and erase it: at once, or,
 * for the victim in progress, from where its last slice stopped.
 */
static int
reclaim_block (struct ftl *ftl, uint32_t victim)
{
  struct gc_victim v = { .oob = ftl->gc_oob };
  int r;

  if (victim == ftl->gc_cur.block)
    return victim_complete (ftl, &ftl->gc_cur);
  r = victim_begin (ftl, &v, victim);
  if (r < 0)
    return r;
  return victim_complete (ftl, &v);
}

/* Static wear leveling (under gc_lock).  Dynamic wear leveling only
 * spreads erases over the blocks that get erased; a block holding cold
 * data is never a GC victim and keeps a low erase count while the rest
 * wear out.  When the spread between the most-erased block and the
 * least-erased full block reaches wl_threshold, move that block's data
 * (to the GC frontier, as GC would) and erase it: it rejoins the free
 * pool, where the next frontier to need a block takes it first.  Only
 * when the free pool is above the low watermark, so that wear leveling
 * never competes with host writes for the last free blocks.
 */
static int
wear_level (struct ftl *ftl)
{
  uint32_t max_ec = 0, min_ec = UINT32_MAX, coldest = FTL_NO_BLOCK;
  int r;

  /* Victims waiting for their erase count as free. */
  if (alloc_nfree (ftl) + ftl->gc_npending <= ftl->gc_low)
    return 0;
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    uint32_t ec = media_erase_count (&ftl->media, b);
    if (ftl->state[b] == FTL_BLK_RETIRED)
      continue;
    max_ec = MAX (max_ec, ec);
    if (ftl->state[b] == FTL_BLK_FULL && b != ftl->gc_cur.block &&
        !is_pending (ftl, b) &&
        (coldest == FTL_NO_BLOCK || ec < min_ec ||
         (ec == min_ec && ftl->close_seq[b] < ftl->close_seq[coldest]))) {
      min_ec = ec;
      coldest = b;
    }
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  if (coldest == FTL_NO_BLOCK || max_ec - min_ec < ftl->wl_threshold)
    return 0;

  ftl_debug (ftl, FTL_DEBUG_GC, "wear leveling: block %u (erase count %u, "
             "%u valid pages); most erased: %u", coldest, min_ec,
             __atomic_load_n (&ftl->valid[coldest], __ATOMIC_RELAXED), max_ec);
  ftl->gc_wl = true;
  r = reclaim_block (ftl, coldest);
  ftl->gc_wl = false;
  return r;
}

/* Set while this thread holds gc_lock: the metadata frontier may then
 * take the last free blocks (see keep_free), and trim logging must not
 * start GC again.
 */
static __thread bool tls_in_gc;

bool
gc_running_here (void)
{
  return tls_in_gc;
}

/* Reclaim until more than target blocks are free.  bg: called by the
 * background thread in watermark mode (counted apart).  In deadline
 * mode a writer that runs GC while a deadline is near reclaims only
 * down to the low watermark, the cheapest victims first, and leaves
 * wear leveling to the background thread.
 */
static int
reclaim_until (struct ftl *ftl, uint32_t target, bool bg)
{
  int r = 0;

  pthread_mutex_lock (&ftl->gc_lock);
  tls_in_gc = true;
  dl_hold ();                   /* a writer's abort does not stop GC */
  bool hurry = !bg && deadline_near (ftl);
  if (hurry)
    target = MIN (target, ftl->gc_low);
  ftl->gc_defer = true;
  while (alloc_nfree (ftl) + ftl->gc_npending <= target) {
    /* First the blocks with nothing to copy: erased at once if a
     * barrier already made what replaced them durable; if not, one
     * barrier serves all of them.
     */
    bool ready;
    uint32_t drained = find_drained (ftl, &ready);
    if (drained != FTL_NO_BLOCK) {
      r = ready ? erase_covered (ftl, drained) : gc_sync (ftl);
      if (r < 0)
        break;
      if (ready && bg)
        ctr_add (ftl, FTL_CTR_GC_BG_RUNS, 1);
      continue;
    }
    uint32_t victim = pick_victim (ftl, hurry, true);
    if (victim == FTL_NO_BLOCK) {
      if (ftl->gc_npending > 0) {
        r = gc_flush_pending (ftl);
        if (r < 0)
          break;
        r = 0;
        continue;
      }
      r = -ENOSPC;
      break;
    }
    bool cheap = __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED) == 0;
    ftl_debug (ftl, FTL_DEBUG_GC, "gc: victim block %u, %u valid pages, "
               "%u free blocks%s", victim,
               __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED),
               alloc_nfree (ftl),
               victim == ftl->gc_cur.block ? " (in progress)" : "");
    r = reclaim_block (ftl, victim);
    if (r == 0 && !hurry)
      r = wear_level (ftl);
    if (r < 0)
      break;
    if (bg) {
      ctr_add (ftl, FTL_CTR_GC_BG_RUNS, 1);
      /* One victim at a time, so that a checkpoint or a foreground
       * collection waits for one victim at most; or several with
       * nothing to copy, which cost an erase each and share a sync.
       */
      if (!cheap || ftl->gc_npending == 0 ||
          ftl->gc_npending >= FTL_GC_ERASE_BATCH)
        break;
    }
  }
  {
    int r2 = gc_flush_pending (ftl);
    if (r == 0 && r2 < 0)
      r = r2;
  }
  ftl->gc_defer = false;
  dl_release ();
  tls_in_gc = false;
  pthread_mutex_unlock (&ftl->gc_lock);
  return r;
}

/* Deadline mode: one slice of background GC, holding ckpt_rw shared and
 * gc_lock for it alone.  Starts a victim if none is in progress and the
 * pool is at or below the high watermark; relocates up to GC_SLICE of
 * its pages; erases it when all are moved.  Returns 1 if a slice was
 * done, 0 if there was nothing to do, or a negative errno.
 */
static int
background_slice (struct ftl *ftl)
{
  struct gc_victim *v = &ftl->gc_cur;
  int r = 1;

  pthread_rwlock_rdlock (&ftl->ckpt_rw);
  pthread_mutex_lock (&ftl->gc_lock);
  tls_in_gc = true;
  dl_hold ();
  if (v->block == FTL_NO_BLOCK) {
    if (alloc_nfree (ftl) > ftl->gc_high) {
      r = 0;
      goto out;
    }
    uint32_t victim = pick_victim (ftl, false, false);
    if (victim == FTL_NO_BLOCK) {
      r = -ENOSPC;
      goto out;
    }
    ftl_debug (ftl, FTL_DEBUG_GC, "gc: victim block %u, %u valid pages, "
               "%u free blocks (in slices)", victim,
               __atomic_load_n (&ftl->valid[victim], __ATOMIC_RELAXED),
               alloc_nfree (ftl));
    r = victim_begin (ftl, v, victim);
    if (r < 0)
      goto out;
  }
  r = victim_step (ftl, v, GC_SLICE);
  __atomic_fetch_add (&ftl->gc_slices, 1, __ATOMIC_RELAXED);
  if (r > 0) {
    r = victim_finish (ftl, v);
    __atomic_store_n (&v->block, FTL_NO_BLOCK, __ATOMIC_RELAXED);
    if (r == 0) {
      ctr_add (ftl, FTL_CTR_GC_BG_RUNS, 1);
      if (!deadline_near (ftl))
        r = wear_level (ftl);
    }
  }
  else if (r < 0)                 /* starts again from its OOB entries */
    __atomic_store_n (&v->block, FTL_NO_BLOCK, __ATOMIC_RELAXED);
  if (r == 0)
    r = 1;
 out:
  dl_release ();
  tls_in_gc = false;
  pthread_mutex_unlock (&ftl->gc_lock);
  pthread_rwlock_unlock (&ftl->ckpt_rw);
  return r;
}

/* Deadline mode: before the next slice, wait while a request's deadline
 * is near and the free pool is above the low watermark; at most one
 * timeout in a row, so that a request that is stuck elsewhere does not
 * stop GC for good.
 */
static void
background_yield (struct ftl *ftl)
{
  uint64_t start = timing_now ();

  while (!__atomic_load_n (&ftl->bg_stop, __ATOMIC_ACQUIRE) &&
         deadline_near (ftl) && alloc_nfree (ftl) > ftl->gc_low &&
         timing_now () - start < ftl->dl.timeout_ns) {
    __atomic_fetch_add (&ftl->gc_yields, 1, __ATOMIC_RELAXED);
    timing_sleep_until (timing_now () + GC_YIELD_NS);
  }
}

int
gc_reclaim (struct ftl *ftl, uint32_t target)
{
  return reclaim_until (ftl, target, false);
}

void
gc_wake (struct ftl *ftl)
{
  pthread_mutex_lock (&ftl->bg_lock);
  pthread_cond_signal (&ftl->bg_cond);
  pthread_mutex_unlock (&ftl->bg_lock);
}

void
gc_kick (struct ftl *ftl, uint32_t nfree)
{
  if (__atomic_load_n (&ftl->bg_running, __ATOMIC_ACQUIRE) &&
      nfree <= ftl->gc_drain_target) {
    pthread_mutex_lock (&ftl->bg_lock);
    pthread_cond_signal (&ftl->bg_cond);
    pthread_mutex_unlock (&ftl->bg_lock);
  }
}

/* Background thread: erase drained blocks (nothing to copy, see
 * find_drained) until more than gc_drain_target blocks are free, a few
 * at a time under gc_lock.  When those left wait for a barrier, run it
 * here, outside gc_lock, while writers go on with the free blocks: a
 * large sequential overwrite then seldom waits for a sync.  Returns 1
 * if it erased or synced anything, 0 if not, or a negative errno.
 * Caller holds ckpt_rw shared.
 */
static int
background_drain (struct ftl *ftl)
{
  int did = 0;

  while (alloc_nfree (ftl) <= ftl->gc_drain_target &&
         !__atomic_load_n (&ftl->bg_stop, __ATOMIC_ACQUIRE)) {
    bool ready = false;
    uint32_t b = FTL_NO_BLOCK;
    int r = 0;

    pthread_mutex_lock (&ftl->gc_lock);
    tls_in_gc = true;
    dl_hold ();
    for (unsigned i = 0; i < 8 && alloc_nfree (ftl) <= ftl->gc_drain_target;
         i++) {
      b = find_drained (ftl, &ready);
      if (b == FTL_NO_BLOCK || !ready)
        break;
      r = erase_covered (ftl, b);
      if (r < 0)
        break;
      ctr_add (ftl, FTL_CTR_GC_BG_RUNS, 1);
      did = 1;
    }
    dl_release ();
    tls_in_gc = false;
    pthread_mutex_unlock (&ftl->gc_lock);
    if (r < 0)
      return r;
    if (b == FTL_NO_BLOCK)
      break;                    /* nothing drained */
    if (!ready) {
      /* Drained blocks wait for a barrier: one serves them all. */
      r = trimlog_make_room (ftl);
      if (r == 0)
        r = gc_sync (ftl);
      if (r < 0)
        return r;
      did = 1;
    }
  }
  return did;
}

/* The background thread: sleep until a writer finds the free pool at or
 * below gc_drain_target or a checkpoint due (or 100 ms pass); write the
 * checkpoint (ckpt_maybe); erase drained blocks up to
 * that target (background_drain); then, while the pool is at or below
 * gc_high, reclaim one victim at a time (deadline mode: one slice at a
 * time, yielding between slices), holding ckpt_rw shared only for that
 * victim (or slice), until more than gc_high blocks are free.
 */
static void *
background (void *arg)
{
  struct ftl *ftl = arg;
  bool drained_idle = false;    /* the last drain found nothing to do */

  pthread_mutex_lock (&ftl->bg_lock);
  while (!ftl->bg_stop) {
    bool slices = ftl->gc_mode == FTL_GC_DEADLINE;
    bool drain = alloc_nfree (ftl) <= ftl->gc_drain_target && !drained_idle;
    bool idle =
      (alloc_nfree (ftl) > ftl->gc_high && !drain &&
       !(slices && __atomic_load_n (&ftl->gc_cur.block, __ATOMIC_RELAXED)
                   != FTL_NO_BLOCK)) ||
      __atomic_load_n (&ftl->worn_out, __ATOMIC_ACQUIRE);
    if (idle && !ckpt_due (ftl)) {
      struct timespec ts;
      clock_gettime (CLOCK_REALTIME, &ts);
      ts.tv_nsec += 100 * 1000 * 1000;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      drained_idle = false;     /* kicked, or 100 ms: look again */
      pthread_cond_timedwait (&ftl->bg_cond, &ftl->bg_lock, &ts);
      continue;
    }
    pthread_mutex_unlock (&ftl->bg_lock);

    ckpt_maybe (ftl, true);
    if (idle) {
      pthread_mutex_lock (&ftl->bg_lock);
      continue;
    }
    int r = 0;
    if (drain) {
      pthread_rwlock_rdlock (&ftl->ckpt_rw);
      r = background_drain (ftl);
      pthread_rwlock_unlock (&ftl->ckpt_rw);
      drained_idle = r == 0;
      if (r < 0) {
        pthread_mutex_lock (&ftl->bg_lock);
        goto failed;
      }
      if (alloc_nfree (ftl) > ftl->gc_high) {
        pthread_mutex_lock (&ftl->bg_lock);
        continue;
      }
    }
    if (slices) {
      background_yield (ftl);
      r = background_slice (ftl);
    }
    else {
      pthread_rwlock_rdlock (&ftl->ckpt_rw);
      r = reclaim_until (ftl, ftl->gc_high, true);
      pthread_rwlock_unlock (&ftl->ckpt_rw);
    }

    pthread_mutex_lock (&ftl->bg_lock);
  failed:
    if (r < 0 && !ftl->bg_stop) {
      /* Nothing to reclaim now (or an error, already logged): wait for
       * the next kick rather than spin.
       */
      struct timespec ts;
      clock_gettime (CLOCK_REALTIME, &ts);
      ts.tv_sec++;
      pthread_cond_timedwait (&ftl->bg_cond, &ftl->bg_lock, &ts);
    }
  }
  pthread_mutex_unlock (&ftl->bg_lock);
  return NULL;
}

int
ftl_start_background (struct ftl *ftl)
{
  int r;

  if (ftl->readonly || ftl->bg_running)
    return 0;
  __atomic_store_n (&ftl->bg_stop, false, __ATOMIC_RELEASE);
  /* Signals belong to the caller's threads, not to this one. */
  sigset_t all, old;
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  r = pthread_create (&ftl->bg_thread, NULL, background, ftl);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  if (r != 0)
    return -r;
  __atomic_store_n (&ftl->bg_running, true, __ATOMIC_RELEASE);
  return 0;
}

void
ftl_stop_background (struct ftl *ftl)
{
  if (!ftl->bg_running)
    return;
  pthread_mutex_lock (&ftl->bg_lock);
  __atomic_store_n (&ftl->bg_stop, true, __ATOMIC_RELEASE);
  pthread_cond_signal (&ftl->bg_cond);
  pthread_mutex_unlock (&ftl->bg_lock);
  pthread_join (ftl->bg_thread, NULL);
  __atomic_store_n (&ftl->bg_running, false, __ATOMIC_RELEASE);
}
