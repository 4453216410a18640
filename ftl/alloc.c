/* nbdkit-ftl: erase-block allocation, frontiers, stripe locks and map
 * updates.
 *
 * A frontier appends to one open erase block.  When its block is full it
 * is closed (FULL) and the frontier takes a free block: the one with the
 * lowest erase count (dynamic wear leveling), except the frontier of cold
 * relocated data (gcf), which takes the most worn one so that long-lived
 * data rests there.  Host frontiers may only take a block while more
 * than FTL_RESERVE_BLOCKS are free; below that they run garbage
 * collection first.  Trim records written for clients leave
 * FTL_META_KEEP_BLOCKS; GC itself may take the last ones.
 *
 * Frontiers, by temperature (hot/cold separation, unless one_log):
 *
 *   host[s]   stream s: first writes and rewrites of cold data
 *   hot[s]    stream s: rewrites of data younger than hot_age
 *   gcw       GC: relocated data younger than hot_age
 *   gcf       GC: relocated older data, and wear-leveling moves
 *   metaf     trim records
 *
 * The age of data being replaced is estimated from its erase block: each
 * block keeps the sum and count of its pages' write sequence numbers
 * (seq_sum, seq_cnt), so no memory per logical page is needed.
 *
 * Invariants: a block is FREE, OPEN (owned by exactly one frontier),
 * FULL or RETIRED; state and nfree change under alloc_lock; a FREE block
 * has wp 0 and no valid pages.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

/* Which host stream a thread writes to.  Threads are assigned round
 * robin on their first write and keep their stream: a request's work
 * stays on the thread that received it, and concurrent connections
 * append to different erase blocks without sharing a lock.  This is an
 * index only; each handle reduces it modulo its own stream count.
 */
static __thread unsigned tls_stream = UINT32_MAX;

int
alloc_init (struct ftl *ftl)
{
  ftl->state = calloc (ftl->blocks, 1);
  ftl->close_seq = calloc (ftl->blocks, sizeof *ftl->close_seq);
  ftl->seq_sum = calloc (ftl->blocks, sizeof *ftl->seq_sum);
  ftl->seq_cnt = calloc (ftl->blocks, sizeof *ftl->seq_cnt);
  if (!ftl->state || !ftl->close_seq || !ftl->seq_sum || !ftl->seq_cnt)
    return -ENOMEM;
  pthread_mutex_init (&ftl->alloc_lock, NULL);
  for (unsigned i = 0; i < FTL_STRIPES; i++)
    pthread_mutex_init (&ftl->stripe[i], NULL);
  for (unsigned i = 0; i < FTL_MAX_STREAMS; i++) {
    pthread_mutex_init (&ftl->host[i].lock, NULL);
    ftl->host[i].kind = FRONTIER_HOST;
    ftl->host[i].block = FTL_NO_BLOCK;
    pthread_mutex_init (&ftl->hot[i].lock, NULL);
    ftl->hot[i].kind = FRONTIER_HOST;
    ftl->hot[i].block = FTL_NO_BLOCK;
  }
  ftl->gcf.kind = FRONTIER_GC;
  ftl->gcf.block = FTL_NO_BLOCK;
  ftl->gcw.kind = FRONTIER_GC;
  ftl->gcw.block = FTL_NO_BLOCK;
  ftl->metaf.kind = FRONTIER_META;
  ftl->metaf.block = FTL_NO_BLOCK;
  return 0;
}

void
alloc_free (struct ftl *ftl)
{
  free (ftl->state);
  free (ftl->close_seq);
  free (ftl->seq_sum);
  free (ftl->seq_cnt);
  ftl->state = NULL;
  ftl->close_seq = NULL;
  ftl->seq_sum = NULL;
  ftl->seq_cnt = NULL;
  pthread_mutex_destroy (&ftl->alloc_lock);
  for (unsigned i = 0; i < FTL_STRIPES; i++)
    pthread_mutex_destroy (&ftl->stripe[i]);
  for (unsigned i = 0; i < FTL_MAX_STREAMS; i++) {
    pthread_mutex_destroy (&ftl->host[i].lock);
    pthread_mutex_destroy (&ftl->hot[i].lock);
  }
}

struct frontier *
alloc_host_frontier (struct ftl *ftl, bool hot)
{
  if (tls_stream == UINT32_MAX)
    tls_stream = __atomic_fetch_add (&ftl->next_stream, 1, __ATOMIC_RELAXED);
  if (hot && !one_log (ftl))
    return &ftl->hot[tls_stream % ftl->nstreams];
  return &ftl->host[tls_stream % ftl->nstreams];
}

/* The mean write sequence number of the data in block b. */
static uint64_t
block_data_seq (struct ftl *ftl, uint32_t b)
{
  uint32_t n = __atomic_load_n (&ftl->seq_cnt[b], __ATOMIC_RELAXED);
  uint64_t sum = __atomic_load_n (&ftl->seq_sum[b], __ATOMIC_RELAXED);

  return n ? sum / n : 0;
}

bool
alloc_range_is_hot (struct ftl *ftl, uint64_t first, uint64_t last)
{
  uint64_t now = __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
  uint32_t hot = 0, cold = 0;

  if (one_log (ftl))
    return false;
  for (uint64_t l = first; l <= last && hot + cold < 64; l++) {
    uint32_t ppn = l2p_load (ftl, l);
    if (ppn == FTL_UNMAPPED)
      cold++;
    else if (now - MIN (now, block_data_seq (ftl, media_ppn_block (&ftl->media, ppn)))
             < ftl->hot_age)
      hot++;
    else
      cold++;
  }
  return hot > cold;
}

uint32_t
alloc_nfree (struct ftl *ftl)
{
  uint32_t n;
  pthread_mutex_lock (&ftl->alloc_lock);
  n = ftl->nfree;
  pthread_mutex_unlock (&ftl->alloc_lock);
  return n;
}

/* How many free blocks a frontier of this kind must leave behind.  Trim
 * records logged by GC itself (before an erase) may take the last block,
 * as GC's relocations may: the erase that follows gives one back.  So
 * may the last records written by ftl_close, when nothing else runs.
 */
static uint32_t
keep_free (const struct ftl *ftl, enum frontier_kind kind)
{
  switch (kind) {
  case FRONTIER_HOST: return FTL_RESERVE_BLOCKS;
  case FRONTIER_GC: return 0;
  case FRONTIER_META:
    return gc_running_here () || ftl->closing ? 0 : FTL_META_KEEP_BLOCKS;
  }
  abort ();
}

/* Take a free block (under alloc_lock): the one with the lowest erase
 * count, or for the frontier of cold relocated data (most_worn) the one
 * with the highest, so that long-lived data rests on worn blocks and the
 * little-worn ones take the rewrites.
 */
static uint32_t
take_free_block (struct ftl *ftl, enum frontier_kind kind, bool most_worn)
{
  uint32_t best = FTL_NO_BLOCK, best_ec = 0;

  if (ftl->nfree <= keep_free (ftl, kind))
    return FTL_NO_BLOCK;
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] == FTL_BLK_FREE) {
      uint32_t ec = media_erase_count (&ftl->media, b);
      if (best == FTL_NO_BLOCK || (most_worn ? ec > best_ec : ec < best_ec)) {
        best = b;
        best_ec = ec;
      }
    }
  }
  if (NEVER (best == FTL_NO_BLOCK))
    return FTL_NO_BLOCK;
  assert (ftl->media.wp[best] == 0);
  assert (__atomic_load_n (&ftl->valid[best], __ATOMIC_RELAXED) == 0);
  __atomic_store_n (&ftl->seq_sum[best], 0, __ATOMIC_RELAXED);
  __atomic_store_n (&ftl->seq_cnt[best], 0, __ATOMIC_RELAXED);
  __atomic_store_n (&ftl->trim_seq_end[best], 0, __ATOMIC_RELAXED);
  ftl->state[best] = FTL_BLK_OPEN;
  ftl->nfree--;
  return best;
}

/* Make sure f has an open block with room.  A host frontier runs garbage
 * collection when the free pool is down to the GC watermark.  The caller
 * holds f's lock (or the lock that owns f) and ckpt_rw shared.
 */
int
frontier_ensure_block (struct ftl *ftl, struct frontier *f)
{
  uint32_t b;

  if (f->block != FTL_NO_BLOCK) {
    assert (f->wp < ftl->ppb);
    return 0;
  }

  for (;;) {
    if (f->kind == FRONTIER_HOST && alloc_nfree (ftl) <= ftl->gc_low) {
      /* With a background thread, reclaim just enough to go on. */
      int r = gc_reclaim (ftl, __atomic_load_n (&ftl->bg_running, __ATOMIC_ACQUIRE)
                           ? ftl->gc_low : ftl->gc_high);
      if (r < 0 && r != -ENOSPC)
        return r;
    }
    pthread_mutex_lock (&ftl->alloc_lock);
    b = take_free_block (ftl, f->kind, f == &ftl->gcf && !one_log (ftl));
    uint32_t nfree = ftl->nfree;
    pthread_mutex_unlock (&ftl->alloc_lock);
    if (b != FTL_NO_BLOCK) {
      gc_kick (ftl, nfree);
      break;
    }
    /* GC short of a block while victims wait for their erase: erase
     * them now.
     */
    if (gc_running_here () && ftl->gc_npending > 0) {
      int r = gc_flush_pending (ftl);
      if (r < 0)
        return r;
      continue;
    }
    if (f->kind != FRONTIER_HOST) {
      /* Trim records are written under trim_lock, which GC takes too:
       * trimlog_make_room ran GC before it (see trim.c).
       */
      ftl_log (ftl, FTL_LOG_ERROR,
               "no free erase block for %s data (free pool exhausted)",
               f->kind == FRONTIER_GC ? "relocated" : "trim record");
      return -ENOSPC;
    }
    /* Host: GC could not get above the reserve. */
    int r = gc_reclaim (ftl, FTL_RESERVE_BLOCKS);
    if (r < 0 && ftl_is_read_only (ftl))
      return -EROFS;            /* GC retired the last blocks it could */
    if (r < 0) {
      ftl_log (ftl, FTL_LOG_ERROR, "device full: garbage collection found "
               "no erase block to reclaim");
      return -ENOSPC;
    }
  }

  ftl_debug (ftl, FTL_DEBUG_ALLOC, "%s frontier opens block %u "
             "(erase count %u)",
             f->kind == FRONTIER_HOST ? "host" :
             f->kind == FRONTIER_GC ? "gc" : "meta",
             b, media_erase_count (&ftl->media, b));
  f->block = b;
  f->wp = 0;
  return 0;
}

/* Account n pages programmed at the frontier; close the block when full. */
void
frontier_advance (struct ftl *ftl, struct frontier *f, uint32_t n)
{
  assert (f->block != FTL_NO_BLOCK);
  f->wp += n;
  assert (f->wp <= ftl->ppb);
  assert (ftl->media.wp[f->block] == f->wp);
  __atomic_fetch_add (&ftl->pages_since_ckpt, n, __ATOMIC_RELAXED);
  if (f->wp == ftl->ppb) {
    pthread_mutex_lock (&ftl->alloc_lock);
    ftl->state[f->block] = FTL_BLK_FULL;
    ftl->close_seq[f->block] =
      __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
    pthread_mutex_unlock (&ftl->alloc_lock);
    f->block = FTL_NO_BLOCK;
    f->wp = 0;
  }
}

/* Close every open block (at shutdown and after recovery): they stay
 * partly written until GC reclaims them.  Caller has exclusive access.
 */
void
frontier_close_all (struct ftl *ftl)
{
  struct frontier *all[2 * FTL_MAX_STREAMS + 3];
  unsigned n = 0;

  for (unsigned i = 0; i < FTL_MAX_STREAMS; i++) {
    all[n++] = &ftl->host[i];
    all[n++] = &ftl->hot[i];
  }
  all[n++] = &ftl->gcf;
  all[n++] = &ftl->gcw;
  all[n++] = &ftl->metaf;
  for (unsigned i = 0; i < n; i++) {
    if (all[i]->block != FTL_NO_BLOCK) {
      if (all[i]->wp == 0) {
        ftl->state[all[i]->block] = FTL_BLK_FREE;
        ftl->nfree++;
      }
      else {
        ftl->state[all[i]->block] = FTL_BLK_FULL;
        ftl->close_seq[all[i]->block] = ftl->next_seq;
      }
      all[i]->block = FTL_NO_BLOCK;
      all[i]->wp = 0;
    }
  }
}

/* Stripe locks: LPN ranges of 2^FTL_STRIPE_SHIFT pages hash to
 * FTL_STRIPES mutexes.  A request locks every stripe it touches in
 * ascending index order, so writers of different regions run in parallel
 * and writers of one region are ordered (their sequence numbers follow
 * the order in which they update the map).
 */
static uint64_t
stripe_mask (uint64_t first, uint64_t last)
{
  uint64_t a = first >> FTL_STRIPE_SHIFT, b = last >> FTL_STRIPE_SHIFT;
  uint64_t mask = 0;

  if (b - a + 1 >= FTL_STRIPES)
    return UINT64_MAX;
  for (uint64_t s = a; s <= b; s++)
    mask |= UINT64_C (1) << (s % FTL_STRIPES);
  return mask;
}

void
stripes_lock (struct ftl *ftl, uint64_t first, uint64_t last)
{
  uint64_t mask = stripe_mask (first, last);
  for (unsigned i = 0; i < FTL_STRIPES; i++)
    if (mask & (UINT64_C (1) << i))
      pthread_mutex_lock (&ftl->stripe[i]);
}

void
stripes_unlock (struct ftl *ftl, uint64_t first, uint64_t last)
{
  uint64_t mask = stripe_mask (first, last);
  for (unsigned i = FTL_STRIPES; i-- > 0; )
    if (mask & (UINT64_C (1) << i))
      pthread_mutex_unlock (&ftl->stripe[i]);
}

void
map_install (struct ftl *ftl, uint64_t lpn, uint32_t ppn)
{
  uint32_t old;

  assert (lpn < ftl->logical_pages);
  __atomic_fetch_add (&ftl->valid[media_ppn_block (&ftl->media, ppn)], 1,
                      __ATOMIC_RELAXED);
  old = __atomic_exchange_n (&ftl->l2p[lpn], ppn, __ATOMIC_ACQ_REL);
  if (old == FTL_UNMAPPED)
    __atomic_fetch_add (&ftl->mapped, 1, __ATOMIC_RELAXED);
  else {
    uint32_t ob = media_ppn_block (&ftl->media, old);
    gc_note_drain (ftl, ob);
    uint32_t v = __atomic_fetch_sub (&ftl->valid[ob], 1, __ATOMIC_RELEASE);
    assert (v > 0);
    (void) v;
  }
}

bool
map_unmap (struct ftl *ftl, uint64_t lpn)
{
  uint32_t old;

  if (l2p_load (ftl, lpn) == FTL_UNMAPPED)
    return false;
  old = __atomic_exchange_n (&ftl->l2p[lpn], FTL_UNMAPPED, __ATOMIC_ACQ_REL);
  if (old == FTL_UNMAPPED)
    return false;
  __atomic_fetch_sub (&ftl->mapped, 1, __ATOMIC_RELAXED);
  uint32_t ob = media_ppn_block (&ftl->media, old);
  gc_note_drain (ftl, ob);
  uint32_t v = __atomic_fetch_sub (&ftl->valid[ob], 1, __ATOMIC_RELEASE);
  assert (v > 0);
  (void) v;
  return true;
}
