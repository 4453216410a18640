/* nbdkit-ftl: erase-block allocation, frontiers, and programming pages
 * at a frontier.
 *
 * A frontier appends to one open erase block.  When its block is full it
 * is closed (FULL) and the frontier takes a free block (dynamic wear
 * leveling): a frontier of long-lived data takes the most worn one, so
 * that the data rests there, and the others the least worn one, so that
 * the rewrites wear it (see frontier_long_lived).  The caller says how
 * who it is (enum alloc_taker), and the free pool's account (state.h:
 * the reserves, who may dip into each and what pays each back) says
 * how many free blocks must remain: alloc_frontier_open is the one
 * place where a free block is taken.  This module never collects
 * garbage itself: when it refuses a block, the caller runs GC (gc.c)
 * without holding its stripe and frontier locks, and asks again, or
 * fails.
 *
 * alloc_program is the one place where pages are programmed at a
 * frontier, for host writes, relocations and trim records alike: it
 * encodes each page's OOB entry (kind, LPN or trim record count,
 * sequence number, the block's erase count, the data's checksum),
 * programs them in order (media.c asserts the NAND rules), moves the
 * map entries (map.c) and advances the frontier.
 *
 * Frontiers, by temperature (hot/cold separation, unless one_log):
 *
 *   host[s]   stream s: first writes and rewrites of cold data
 *   hot[s]    stream s: rewrites of data younger than hot_age
 *   gcw       GC: relocated data younger than hot_age
 *   gcf       GC: relocated older data, and wear-leveling moves
 *   metaf     trim records
 *
 * Placement (state.h): with placement other than shared each namespace
 * has host[] and hot[] of its own (a placement group), and with
 * isolated placement gcf and gcw too; the callers choose the group by
 * the logical page (place_host_group, place_gc_group in log.h).
 *
 * The age of data being replaced is estimated from its erase block: each
 * block keeps the sum and count of its pages' write sequence numbers
 * (seq_sum, seq_cnt), so no memory per logical page is needed.
 *
 * hot-cold=auto (alloc_hot_cold_step, run by GC under gc.lock): the
 * host path counts, per thread shard, the overwrites and those of young
 * data; every window of overwrites their share is set against the live
 * data's (state.h), and separation stops (sep_off) while the writes
 * show no hot set.  Stopped, for good (one_log) or for now (sep_off),
 * the hot frontiers and gcw fill their open blocks and open no more
 * (alloc_host_frontier, alloc_frontier_drained, partition_young in
 * gc.c): a block left open would be spare space that GC misses.
 *
 * An open that finds the free pool at or below the crash reserve
 * (state.h) gives the GC frontiers the blocks closed early with the most
 * room left, one page past their last programmed one
 * (alloc_reopen_for_gc), before GC takes the reserve.
 *
 * A host frontier may open its block in SLC mode (slc.c): the block then
 * holds media.slc_pages pages, and the frontier closes it after them.
 *
 * Invariants: a block is FREE, OPEN (owned by exactly one frontier),
 * FULL or RETIRED; state and nfree change under alloc_lock; nfree is
 * the number of FREE blocks; a FREE block has wp 0 and no valid pages;
 * a frontier's wp equals the media's program pointer of its block; a
 * block turns FULL only after every page programmed in it is in the
 * map (so GC never sees a FULL block whose pages are not yet mapped).
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
static FTL_TLS unsigned tls_stream = UINT32_MAX;

/* Frontier i of placement group g, in the order alloc_frontiers
 * gives them: host[0], hot[0], host[1], ..., then gcf and gcw.
 */
static struct frontier *
group_frontier (struct ftl *ftl, unsigned g, unsigned i)
{
  struct frontier *host = g ? ftl->pgx[g - 1].host : ftl->host;
  struct frontier *hot = g ? ftl->pgx[g - 1].hot : ftl->hot;

  if (i < 2 * FTL_MAX_STREAMS)
    return i % 2 ? &hot[i / 2] : &host[i / 2];
  return alloc_gc_frontier (ftl, g, i % 2);
}

void
alloc_place_init (struct ftl *ftl)
{
  const struct ftl_ns_table *t = &ftl->ns_table;
  struct place *p = &ftl->place;

  p->mode = t->placement;
  p->nns = t->count;
  p->host_groups = p->mode == FTL_PLACEMENT_SHARED ? 1 : t->count;
  p->gc_groups = p->mode == FTL_PLACEMENT_ISOLATED ? t->count : 1;
  /* Insertion sort by first page: at most FTL_NS_MAX of them. */
  for (unsigned i = 0; i < t->count; i++) {
    unsigned j = i;
    for (; j > 0 && p->first[j - 1] > t->ns[i].base; j--) {
      p->first[j] = p->first[j - 1];
      p->ns[j] = p->ns[j - 1];
    }
    p->first[j] = t->ns[i].base;
    p->ns[j] = i;
  }
}

int
alloc_init (struct ftl *ftl)
{
  ftl->state = calloc (ftl->blocks, 1);
  ftl->close_seq = calloc (ftl->blocks, sizeof *ftl->close_seq);
  ftl->seq_sum = calloc (ftl->blocks, sizeof *ftl->seq_sum);
  ftl->seq_cnt = calloc (ftl->blocks, sizeof *ftl->seq_cnt);
  ftl->trim_pages = calloc (ftl->blocks, sizeof *ftl->trim_pages);
  ftl->trim_seq_end = malloc (ftl->blocks * sizeof *ftl->trim_seq_end);
  if (!ftl->state || !ftl->close_seq || !ftl->seq_sum || !ftl->seq_cnt ||
      !ftl->trim_pages || !ftl->trim_seq_end)
    return -ENOMEM;
  /* What the blocks written before this open hold is unknown until
   * they are erased.
   */
  for (uint32_t b = 0; b < ftl->blocks; b++)
    ftl->trim_seq_end[b] = UINT64_MAX;
  pthread_mutex_init (&ftl->alloc_lock, NULL);
  for (unsigned g = 0; g < FTL_NS_MAX; g++)
    for (unsigned i = 0; i < 2 * FTL_MAX_STREAMS + 2; i++) {
      struct frontier *f = group_frontier (ftl, g, i);
      if (i < 2 * FTL_MAX_STREAMS)
        pthread_mutex_init (&f->lock, NULL);
      f->kind = i < 2 * FTL_MAX_STREAMS ? FRONTIER_HOST : FRONTIER_GC;
      f->temp = i % 2 ? FRONTIER_HOT : FRONTIER_COLD;
      f->group = g;
      f->block = FTL_NO_BLOCK;
    }
  ftl->metaf.kind = FRONTIER_META;
  ftl->metaf.block = FTL_NO_BLOCK;
  ftl->mapf.kind = FRONTIER_MAP;
  ftl->mapf.block = FTL_NO_BLOCK;
  return 0;
}

void
alloc_free (struct ftl *ftl)
{
  free (ftl->state);
  free (ftl->free_ec);
  ftl->free_ec = NULL;
  ftl->free_ec_n = 0;
  free (ftl->close_seq);
  free (ftl->seq_sum);
  free (ftl->seq_cnt);
  free (ftl->trim_pages);
  free (ftl->trim_seq_end);
  ftl->state = NULL;
  ftl->close_seq = NULL;
  ftl->seq_sum = NULL;
  ftl->seq_cnt = NULL;
  ftl->trim_pages = NULL;
  ftl->trim_seq_end = NULL;
  pthread_mutex_destroy (&ftl->alloc_lock);
  for (unsigned g = 0; g < FTL_NS_MAX; g++)
    for (unsigned i = 0; i < 2 * FTL_MAX_STREAMS; i++)
      pthread_mutex_destroy (&group_frontier (ftl, g, i)->lock);
}

struct frontier *
alloc_host_frontier (struct ftl *ftl, bool hot, unsigned g)
{
  struct frontier *host = g ? ftl->pgx[g - 1].host : ftl->host;
  struct frontier *hotf = g ? ftl->pgx[g - 1].hot : ftl->hot;
  unsigned s;

  if (tls_stream == UINT32_MAX)
    tls_stream = __atomic_fetch_add (&ftl->next_stream, 1, __ATOMIC_RELAXED);
  s = tls_stream % ftl->nstreams;
  if (one_log (ftl)) {
    /* Separation stopped: the hot frontier's open block is filled
     * before the cold frontier takes everything, so that it does not
     * stay open, spare space that GC misses, until a restart.
     */
    if (__atomic_load_n (&hotf[s].block, __ATOMIC_RELAXED)
        != FTL_NO_BLOCK)
      return &hotf[s];
    return &host[s];
  }
  return hot ? &hotf[s] : &host[s];
}

bool
alloc_frontier_drained (struct ftl *ftl, const struct frontier *f)
{
  return f->block == FTL_NO_BLOCK && f->kind == FRONTIER_HOST &&
    f->temp == FRONTIER_HOT && one_log (ftl);
}

/* The mean write sequence number of the data in block b. */
static uint64_t
block_data_seq (struct ftl *ftl, uint32_t b)
{
  uint32_t n = __atomic_load_n (&ftl->seq_cnt[b], __ATOMIC_RELAXED);
  uint64_t sum = __atomic_load_n (&ftl->seq_sum[b], __ATOMIC_RELAXED);

  return n ? sum / n : 0;
}

/* The ages hot-cold=auto compares (state.h). */
static inline uint64_t
hot_cold_age (const struct ftl *ftl, unsigned i)
{
  return i == 0 ? ftl->hot_age >> HOT_COLD_SHORT_SHIFT : ftl->hot_age;
}

bool
alloc_range_is_hot (struct ftl *ftl, uint64_t first, uint64_t last,
                    struct alloc_hits *hits)
{
  uint64_t now = __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
  uint32_t hot = 0, cold = 0;

  /* Nothing to decide, nothing to learn. */
  if (one_log_for_good (ftl))
    return false;
  for (uint64_t l = first; l <= last && hot + cold < 64; l++) {
    uint32_t ppn = l2p_load (ftl, l);
    if (ppn == FTL_UNMAPPED || ppn == FTL_LOST) {
      cold++;
      continue;
    }
    uint64_t age = now - MIN (now, block_data_seq (ftl, media_ppn_block
                                                   (&ftl->media, ppn)));
    if (age < ftl->hot_age)
      hot++;
    else
      cold++;
    hits->overwrites++;
    for (unsigned i = 0; i < HOT_COLD_AGES; i++)
      hits->young[i] += age < hot_cold_age (ftl, i);
  }
  return hot > cold && !one_log (ftl);
}

void
alloc_hits_add (struct ftl *ftl, const struct alloc_hits *hits)
{
  struct sep_shard *sh;

  if (hits->overwrites == 0)
    return;
  sh = &ftl->sep_ctr[ftl_shard ()];
  __atomic_fetch_add (&sh->overwrites, hits->overwrites, __ATOMIC_RELAXED);
  for (unsigned i = 0; i < HOT_COLD_AGES; i++)
    __atomic_fetch_add (&sh->young[i], hits->young[i], __ATOMIC_RELAXED);
}

void
alloc_hot_cold_step (struct ftl *ftl)
{
  struct sep_state *sp = &ftl->sep;
  uint64_t now, window, ow, young[HOT_COLD_AGES];
  uint64_t live = 0, live_young[HOT_COLD_AGES] = { 0 };
  double best_hit = 0.0, best_live = 0.0, best_lift = 0.0;
  bool off, was_off, known = false;

  if (ftl->hot_cold_always || one_log_for_good (ftl))
    return;
  ow = ftl_shard_sum (&ftl->sep_ctr[0].overwrites, sizeof ftl->sep_ctr[0]);
  window = MAX (ftl->logical_pages / HOT_COLD_WINDOW_DIV,
                HOT_COLD_WINDOW_MIN);
  if (ow - sp->overwrites < window)
    return;
  for (unsigned i = 0; i < HOT_COLD_AGES; i++)
    young[i] = ftl_shard_sum (&ftl->sep_ctr[0].young[i],
                              sizeof ftl->sep_ctr[0]);
  /* The live data's ages, as the host path estimates them (by block). */
  now = __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] != FTL_BLK_FULL && ftl->state[b] != FTL_BLK_OPEN)
      continue;
    uint32_t v = __atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED);
    uint64_t age = now - MIN (now, block_data_seq (ftl, b));
    live += v;
    for (unsigned i = 0; i < HOT_COLD_AGES; i++)
      if (age < hot_cold_age (ftl, i))
        live_young[i] += v;
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  for (unsigned i = 0; i < HOT_COLD_AGES; i++) {
    double hit = (double) (young[i] - sp->young[i]) / (ow - sp->overwrites);
    double frac = live ? (double) live_young[i] / live : 1.0;
    double lift = frac > 0.0 ? hit / frac : 0.0;
    log_debug (ftl, FTL_DEBUG_GC, "hot-cold: %.3f of overwrites and %.3f "
               "of live data younger than %" PRIu64 ": lift %.2f", hit, frac,
               hot_cold_age (ftl, i), lift);
    if (frac <= 0.0 || frac > HOT_COLD_MAX_LIVE ||
        (known && lift <= best_lift))
      continue;
    known = true;
    best_hit = hit;
    best_live = frac;
    best_lift = lift;
  }
  sp->overwrites = ow;
  memcpy (sp->young, young, sizeof young);
  __atomic_fetch_add (&sp->decisions, 1, __ATOMIC_RELAXED);
  was_off = __atomic_load_n (&ftl->sep_off, __ATOMIC_RELAXED);
  off = was_off;
  if (known) {
    /* Read by ftl_get_stats without gc.lock. */
    __atomic_store (&sp->hit, &best_hit, __ATOMIC_RELAXED);
    __atomic_store (&sp->live, &best_live, __ATOMIC_RELAXED);
    __atomic_store (&sp->lift, &best_lift, __ATOMIC_RELAXED);
    if (best_lift < HOT_COLD_OFF_LIFT)
      off = true;
    else if (best_lift > HOT_COLD_ON_LIFT)
      off = false;
  }
  if (off != was_off) {
    log_debug (ftl, FTL_DEBUG_GC, "hot-cold: separation %s (lift %.2f)",
               off ? "off" : "on", best_lift);
    __atomic_store_n (&ftl->sep_off, off, __ATOMIC_RELAXED);
    __atomic_fetch_add (&sp->switches, 1, __ATOMIC_RELAXED);
  }
}

void
alloc_hot_cold_stats (struct ftl *ftl, struct ftl_stats *st)
{
  struct sep_state *sp = &ftl->sep;

  st->hot_cold.separating = !one_log (ftl);
  st->hot_cold.automatic = !ftl->hot_cold_always &&
    !one_log_for_good (ftl);
  __atomic_load (&sp->hit, &st->hot_cold.young_overwrites, __ATOMIC_RELAXED);
  __atomic_load (&sp->live, &st->hot_cold.young_live, __ATOMIC_RELAXED);
  __atomic_load (&sp->lift, &st->hot_cold.lift, __ATOMIC_RELAXED);
  st->hot_cold.decisions = __atomic_load_n (&sp->decisions,
                                            __ATOMIC_RELAXED);
  st->hot_cold.switches = __atomic_load_n (&sp->switches, __ATOMIC_RELAXED);
}

/* Whether the data f writes stays long where it lands: that of the
 * frontier of cold relocated data (gcf) and, with hot/cold separation,
 * that of the host streams' cold frontiers (first writes and rewrites
 * of cold data), unless the SLC cache takes their blocks (folded soon,
 * slc.c).  Measured on a 64 MiB disk under 90/10 random writes, a
 * block opened by host[0] or gcf held its data for 185 and 177 block
 * openings, one opened by hot[0] or gcw for 26 and 42.  Taking the
 * least worn free block for host[0], as for hot data, left little-worn
 * blocks resting under cold data: after 100 drive writes the erase
 * counts had a standard deviation of 2.7 and static wear leveling had
 * moved 1400 to 4100 pages; taking the most worn, 1.8 to 2.3 and 0 to
 * 700 pages.
 */
static bool
frontier_long_lived (struct ftl *ftl, const struct frontier *f)
{
  if (one_log (ftl) || f->temp != FRONTIER_COLD)
    return false;
  if (f->kind == FRONTIER_GC)
    return true;
  return f->kind == FRONTIER_HOST && !ftl->slc.enabled;
}

/* The free pool by erase count.  Choosing the least or most worn free
 * block scanned the whole block table under alloc_lock at every block
 * opened: 8.6 million entries on an 8 TiB disk, 13% of the server's
 * CPU under random writes, with writers waiting for the lock.  With
 * the count of free blocks at each erase count, the erase count wanted
 * is known before the scan, which stops at the first free block that
 * has it: the same block as the whole scan would find (the first in
 * the table among the best).  Buckets: one per erase count below the
 * last, the last for erase counts at or past it, as many as the most
 * worn free block needs with room to grow (twice its count), and never
 * more than the endurance and one more (free blocks are retired there,
 * but an image may be opened with a lower endurance) nor
 * FREE_EC_MAX_BUCKETS.  So the memory and the search for the wanted
 * count follow the wear the blocks have, not the endurance they may
 * reach: with endurance=1000000, one bucket per cycle allowed cost 4
 * MB, cleared at every recount, and a search of a million buckets for
 * the most worn block at every block opened for long-lived data.
 */
#define FREE_EC_MAX_BUCKETS 65536

static uint32_t
free_ec_bucket (const struct ftl *ftl, uint32_t ec)
{
  return MIN (ec, ftl->free_ec_n - 1);
}

/* The most buckets this handle's free pool may have. */
static uint32_t
free_ec_limit (const struct ftl *ftl)
{
  return MIN ((uint64_t) ftl->wl.endurance + 1, FREE_EC_MAX_BUCKETS);
}

void
alloc_free_ec_recount (struct ftl *ftl)
{
  uint32_t max_ec = 0, n;

  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (ftl->state[b] == FTL_BLK_FREE)
      max_ec = MAX (max_ec, media_erase_count (&ftl->media, b));
  n = MIN ((uint64_t) MAX (max_ec, 31) * 2 + 2, free_ec_limit (ftl));
  if (ftl->free_ec_n != n) {
    free (ftl->free_ec);
    ftl->free_ec = NULL;
    ftl->free_ec_n = 0;
    uint32_t *p = calloc (n, sizeof *p);
    if (!p)
      return;                   /* whole-table scans */
    ftl->free_ec = p;
    ftl->free_ec_n = n;
  }
  memset (ftl->free_ec, 0, n * sizeof *ftl->free_ec);
  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (ftl->state[b] == FTL_BLK_FREE)
      ftl->free_ec[free_ec_bucket (ftl, media_erase_count (&ftl->media,
                                                           b))]++;
}

void
alloc_block_freed (struct ftl *ftl, uint32_t b)
{
  uint32_t ec = media_erase_count (&ftl->media, b);

  assert (ftl->state[b] == FTL_BLK_FREE);
  if (!ftl->free_ec)
    return;
  /* Past the last exact bucket, while there may be more: counted again
   * with twice its erase count (b included, already FREE).
   */
  if (ec >= ftl->free_ec_n - 1 && ftl->free_ec_n < free_ec_limit (ftl))
    alloc_free_ec_recount (ftl);
  else
    ftl->free_ec[free_ec_bucket (ftl, ec)]++;
}

/* The erase count that take_free_block wants: the lowest (or highest)
 * of the free blocks', or UINT32_MAX where only a whole scan can tell
 * (no counts, or the last bucket, which holds several).
 */
static uint32_t
free_ec_wanted (const struct ftl *ftl, bool most_worn)
{
  uint32_t n = ftl->free_ec_n;

  if (!ftl->free_ec)
    return UINT32_MAX;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t e = most_worn ? n - 1 - i : i;
    if (ftl->free_ec[e])
      return e == n - 1 ? UINT32_MAX : e;
  }
  return UINT32_MAX;
}

uint32_t
alloc_floor (struct ftl *ftl, enum alloc_taker who)
{
  switch (who) {
  case ALLOC_HOST:
  case ALLOC_TRIM:
  case ALLOC_MAP:
    return FTL_RESERVE_BLOCKS;
  case ALLOC_GC:
    /* The crash reserve too, after an open that found the pool down
     * to it (spor_short), until the pool is above it again.
     */
    return __atomic_load_n (&ftl->spor_short, __ATOMIC_RELAXED)
      ? 0 : FTL_SPOR_RESERVE_BLOCKS;
  }
  abort ();
}

void
alloc_pool_assert (struct ftl *ftl)
{
#ifdef FTL_SELF_CHECK
  uint64_t sum = 0;

  if (ftl->free_ec) {
    for (uint32_t e = 0; e < ftl->free_ec_n; e++)
      sum += ftl->free_ec[e];
    assert (sum == ftl->nfree);
  }
  assert (ftl->nfree >= FTL_SPOR_RESERVE_BLOCKS || ftl->spor_short ||
          __atomic_load_n (&ftl->wl.worn_out, __ATOMIC_RELAXED));
#else
  (void) ftl;
#endif
}

/* Take a free block for who, leaving at least its floor free (under
 * alloc_lock): the one with the lowest erase count, or for a frontier
 * of long-lived data (most_worn) the one with the highest, so that
 * long-lived data rests on worn blocks and the little-worn ones take
 * the rewrites.
 */
static uint32_t
take_free_block (struct ftl *ftl, enum alloc_taker who, bool most_worn)
{
  uint32_t best = FTL_NO_BLOCK, best_ec = 0, want;

  if (ftl->spor_short && ftl->nfree > FTL_SPOR_RESERVE_BLOCKS)
    __atomic_store_n (&ftl->spor_short, false, __ATOMIC_RELAXED);
  if (ftl->nfree <= alloc_floor (ftl, who))
    return FTL_NO_BLOCK;
  want = free_ec_wanted (ftl, most_worn);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] == FTL_BLK_FREE) {
      uint32_t ec = media_erase_count (&ftl->media, b);
      if (best == FTL_NO_BLOCK || (most_worn ? ec > best_ec : ec < best_ec)) {
        best = b;
        best_ec = ec;
      }
      if (ec == want)
        break;
      /* None is less worn than one never erased, and the first found
       * is taken among equals: on a large disk that holds little data
       * the rest of the scan (millions of blocks) would find no other.
       */
      if (!most_worn && ec == 0)
        break;
    }
  }
  if (NEVER (best == FTL_NO_BLOCK))
    return FTL_NO_BLOCK;
  assert (ftl->media.wp[best] == 0);
  assert (__atomic_load_n (&ftl->valid[best], __ATOMIC_RELAXED) == 0);
  __atomic_store_n (&ftl->seq_sum[best], 0, __ATOMIC_RELAXED);
  __atomic_store_n (&ftl->seq_cnt[best], 0, __ATOMIC_RELAXED);
  __atomic_store_n (&ftl->trim_seq_end[best], 0, __ATOMIC_RELAXED);
  assert (want == UINT32_MAX || best_ec == want);
  if (ftl->free_ec) {
    assert (ftl->free_ec[free_ec_bucket (ftl, best_ec)] > 0);
    ftl->free_ec[free_ec_bucket (ftl, best_ec)]--;
  }
  ftl->state[best] = FTL_BLK_OPEN;
  __atomic_store_n (&ftl->nfree, ftl->nfree - 1, __ATOMIC_RELAXED);
  alloc_pool_assert (ftl);
  return best;
}

static const char *
frontier_name (const struct frontier *f)
{
  switch (f->kind) {
  case FRONTIER_HOST: return "host";
  case FRONTIER_GC: return "gc";
  case FRONTIER_META: return "trim record";
  case FRONTIER_MAP: return "translation page";
  }
  return "?";
}

int
alloc_frontier_open (struct ftl *ftl, struct frontier *f,
                     enum alloc_taker who)
{
  uint32_t b;

  if (f->block != FTL_NO_BLOCK) {
    assert (f->wp < media_block_pages (&ftl->media, f->block));
    return 0;
  }
  pthread_mutex_lock (&ftl->alloc_lock);
  b = take_free_block (ftl, who, frontier_long_lived (ftl, f));
  /* Host data goes to the SLC cache while it has room (slc.c). */
  if (b != FTL_NO_BLOCK && f->kind == FRONTIER_HOST)
    slc_block_opened (ftl, b);
  pthread_mutex_unlock (&ftl->alloc_lock);
  if (b == FTL_NO_BLOCK)
    return -ENOSPC;
  log_debug (ftl, FTL_DEBUG_ALLOC, "%s frontier opens block %u "
             "(erase count %u%s)", frontier_name (f), b,
             media_erase_count (&ftl->media, b),
             media_block_slc (&ftl->media, b) ? ", SLC mode" : "");
  __atomic_store_n (&f->block, b, __ATOMIC_RELAXED);
  f->wp = 0;
  return 0;
}

/* Account n pages programmed at the frontier; close the block when full. */
static void
frontier_advance (struct ftl *ftl, struct frontier *f, uint32_t n)
{
  uint32_t cap;

  assert (f->block != FTL_NO_BLOCK);
  cap = media_block_pages (&ftl->media, f->block);   /* SLC: fewer */
  f->wp += n;
  assert (f->wp <= cap);
  assert (ftl->media.wp[f->block] == f->wp);
  __atomic_fetch_add (&ftl->pages_since_ckpt, n, __ATOMIC_RELAXED);
  if (f->kind == FRONTIER_HOST)
    slc_host_wrote (ftl);
  if (f->wp == cap) {
    pthread_mutex_lock (&ftl->alloc_lock);
    assert (ftl->state[f->block] == FTL_BLK_OPEN);
    ftl->state[f->block] = FTL_BLK_FULL;
    ftl->close_seq[f->block] =
      __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
    pthread_mutex_unlock (&ftl->alloc_lock);
    __atomic_store_n (&f->block, FTL_NO_BLOCK, __ATOMIC_RELAXED);
    f->wp = 0;
  }
}

/* Count the data pages of a program for their namespaces (state.h):
 * all of them, and the copies (GC, wear leveling) among them.  With
 * one namespace, once for the program, and not the copies: its
 * copies are the device's (ftl_ns_get_stats).
 */
static void
place_count (struct ftl *ftl, const struct log_page *pages, uint32_t n,
             uint32_t data)
{
  uint64_t (*v)[NS__MAX] = ftl->ns_ctr[ftl_shard ()].v;

  if (__builtin_expect (ftl->place.nns > 1, 0)) {
    for (uint32_t i = 0; i < n; i++) {
      const struct log_page *lp = &pages[i];
      if (lp->kind != FTL_OOB_DATA && lp->kind != FTL_OOB_POISON)
        continue;
      unsigned ns = place_ns (ftl, lp->lpn);
      __atomic_fetch_add (&v[ns][NS_MEDIA_PAGES], 1, __ATOMIC_RELAXED);
      if (lp->from != FTL_UNMAPPED)
        __atomic_fetch_add (&v[ns][NS_GC_PAGES], 1, __ATOMIC_RELAXED);
    }
    return;
  }
  __atomic_fetch_add (&v[0][NS_MEDIA_PAGES], data, __ATOMIC_RELAXED);
}

int
alloc_programv (struct ftl *ftl, struct frontier *f,
                const struct log_page *pages, uint32_t n,
                const uint8_t *const *data, uint32_t *moved)
{
  uint8_t oob[ALLOC_PROGRAM_MAX * FTL_OOB_BYTES];
  uint32_t check[ALLOC_PROGRAM_MAX];
  uint32_t blk = f->block, page = f->wp, ec;
  bool slc;
  uint64_t seq_sum = 0;
  uint32_t nseq = 0;
  int r;

  assert (n > 0 && n <= ALLOC_PROGRAM_MAX);
  assert (blk != FTL_NO_BLOCK &&
          n <= media_block_pages (&ftl->media, blk) - page);
  ec = media_erase_count (&ftl->media, blk);
  slc = media_block_slc (&ftl->media, blk);
  for (uint32_t i = 0; i < n; i++) {
    const struct log_page *lp = &pages[i];
    uint32_t ppn = media_ppn (&ftl->media, blk, page + i);
    struct ftl_oob o = {
      .kind = lp->kind,
      .seq = lp->seq,
      .erase_count = ec,
      .slc = slc,
    };
    if (lp->kind == FTL_OOB_TRIM) {
      o.trim_entries = lp->trim_entries;
      /* Before it is programmed: GC must not erase this block while a
       * replay may need the page (see find_drained in gc.c).
       */
      atomic_max_u64 (&ftl->trim_seq_end[blk], lp->seq + 1);
    }
    else if (lp->kind == FTL_OOB_MAP) {
      assert (ftl->pm.on && lp->lpn < ftl->pm.groups);
      o.lpn = lp->lpn;
    }
    else {
      assert ((lp->kind == FTL_OOB_DATA || lp->kind == FTL_OOB_POISON) &&
              lp->lpn < ftl->logical_pages);
      o.lpn = lp->lpn;
      seq_sum += lp->seq;
      nseq++;
    }
    /* A copy's checksum under LPN seeds is the one it was verified
     * against (gc.c); else the page is hashed here.
     */
    assert (!lp->has_sum || ftl->seed_flags);
    o.data_checksum = lp->has_sum ? lp->sum :
      fmt_checksum (data[i], ftl->page_size, oob_seed (ftl, &o, ppn));
#ifdef FTL_SELF_CHECK
    assert (o.data_checksum ==
            fmt_checksum (data[i], ftl->page_size, oob_seed (ftl, &o, ppn)));
#endif
    /* A poison page's checksum vouches for damaged data: no check. */
    check[i] = lp->kind == FTL_OOB_DATA ?
      map_check_fold (o.data_checksum) : 0;
    fmt_oob_encode (&o, oob + (size_t) i * FTL_OOB_BYTES);
  }
  __atomic_fetch_add (&ftl->seq_sum[blk], seq_sum, __ATOMIC_RELAXED);
  __atomic_fetch_add (&ftl->seq_cnt[blk], nseq, __ATOMIC_RELAXED);

  if (page == 0)
    errmodel_programmed (&ftl->em, errmodel_now (&ftl->em), blk);
  r = media_program (&ftl->media, blk, page, n, data, oob);
  if (r < 0) {
    /* The pages count as programmed (never reprogrammed), hold nothing
     * the map points to, and are garbage for GC.
     */
    frontier_advance (ftl, f, n);
    if (r != -ETIMEDOUT)
      log_msg (ftl, FTL_LOG_ERROR, "programming %s pages in erase block "
               "%u: %s", frontier_name (f), blk, strerror (-r));
    return r;
  }

  place_count (ftl, pages, n, nseq);
  /* The map changes before the block can close (frontier_advance). */
  for (uint32_t i = 0; i < n; i++) {
    const struct log_page *lp = &pages[i];
    uint32_t ppn = media_ppn (&ftl->media, blk, page + i);
    if (lp->kind == FTL_OOB_TRIM) {
      __atomic_fetch_add (&ftl->trim_pages[blk], 1, __ATOMIC_RELAXED);
      __atomic_fetch_add (&ftl->trim_pages_since_ckpt, 1, __ATOMIC_RELAXED);
      __atomic_fetch_add (&ftl->trim_pages_since_pin, 1, __ATOMIC_RELAXED);
    }
    else if (lp->kind == FTL_OOB_MAP) {
      if (lp->from == FTL_UNMAPPED)
        pmap_tp_written (ftl, lp->lpn, ppn, lp->seq);
      else
        pmap_tp_moved (ftl, lp->lpn, lp->from, ppn);
    }
    else if (lp->from == FTL_UNMAPPED)
      map_install (ftl, lp->lpn, ppn, check[i]);
    else if (map_relocate (ftl, lp->lpn, lp->from, ppn, check[i]) && moved)
      ++*moved;
  }
  frontier_advance (ftl, f, n);
  return 0;
}

int
alloc_program (struct ftl *ftl, struct frontier *f,
               const struct log_page *pages, uint32_t n,
               const uint8_t *data, uint32_t *moved)
{
  const uint8_t *ptrs[ALLOC_PROGRAM_MAX];

  assert (n <= ALLOC_PROGRAM_MAX);
  for (uint32_t i = 0; i < n; i++)
    ptrs[i] = data + ((size_t) i << ftl->page_shift);
  return alloc_programv (ftl, f, pages, n, ptrs, moved);
}

unsigned
alloc_frontiers (struct ftl *ftl, struct frontier **all)
{
  unsigned n = 0;
  /* The groups placement uses: the others never open a block. */
  unsigned groups = MAX (MAX (ftl->place.host_groups, ftl->place.gc_groups),
                         1);

  for (unsigned g = 0; g < groups; g++)
    for (unsigned i = 0; i < 2 * FTL_MAX_STREAMS + 2; i++)
      all[n++] = group_frontier (ftl, g, i);
  all[n++] = &ftl->metaf;
  all[n++] = &ftl->mapf;
  return n;
}

void
alloc_close_frontiers (struct ftl *ftl)
{
  struct frontier *all[FTL_FRONTIERS];
  unsigned n = alloc_frontiers (ftl, all);

  for (unsigned i = 0; i < n; i++) {
    if (all[i]->block != FTL_NO_BLOCK) {
      if (all[i]->wp == 0) {
        slc_block_released (ftl, all[i]->block);
        ftl->state[all[i]->block] = FTL_BLK_FREE;
        ftl->nfree++;
        alloc_block_freed (ftl, all[i]->block);
      }
      else {
        ftl->state[all[i]->block] = FTL_BLK_FULL;
        ftl->close_seq[all[i]->block] = ftl->next_seq;
      }
      all[i]->block = FTL_NO_BLOCK;
      all[i]->wp = 0;
    }
  }
  /* The last checkpoint of a paged map needs a block for its
   * translation pages.
   */
  alloc_blocks_closed (ftl);
}

void
alloc_blocks_closed (struct ftl *ftl)
{
  if (ftl->nfree <= FTL_SPOR_RESERVE_BLOCKS)
    ftl->spor_short = true;
}

/* With isolated placement, the GC frontier of block b's placement
 * group (that of the logical page of its first page) that has no open
 * block, if any; else gcf or gcw as *i says.
 */
static struct frontier *
reopen_frontier (struct ftl *ftl, uint32_t b, unsigned *i)
{
  uint8_t oob[FTL_OOB_BYTES];
  struct ftl_oob o;
  unsigned g = 0;

  if (ftl->place.gc_groups <= 1)
    return alloc_gc_frontier (ftl, 0, (*i)++);
  if (media_read_oob (&ftl->media, b, 0, 1, oob) == 0 &&
      fmt_oob_decode (oob, FTL_OOB_BYTES, &o) == FTL_FMT_OK &&
      o.kind == FTL_OOB_DATA && o.lpn < ftl->logical_pages)
    g = place_gc_group (ftl, o.lpn);
  (*i)++;
  for (unsigned y = 0; y < 2; y++)
    if (alloc_gc_frontier (ftl, g, y)->block == FTL_NO_BLOCK)
      return alloc_gc_frontier (ftl, g, y);
  return NULL;
}

void
alloc_reopen_for_gc (struct ftl *ftl)
{
  if (ftl->nfree > FTL_SPOR_RESERVE_BLOCKS)
    return;
  for (unsigned i = 0; i < 2; ) {
    uint32_t best = FTL_NO_BLOCK, room = 0;

    for (uint32_t b = 0; b < ftl->blocks; b++) {
      uint32_t cap = media_block_pages (&ftl->media, b);
      uint32_t wp = ftl->media.wp[b];
      if (ftl->state[b] != FTL_BLK_FULL || media_block_slc (&ftl->media, b))
        continue;
      /* A page after the last one programmed may have been partly
       * programmed when the power went: it is skipped.
       */
      if (wp + 1 < cap && cap - wp - 1 > room) {
        best = b;
        room = cap - wp - 1;
      }
    }
    if (best == FTL_NO_BLOCK)
      return;
    struct frontier *f = reopen_frontier (ftl, best, &i);
    if (f == NULL)
      continue;
    assert (f->block == FTL_NO_BLOCK);
    media_set_block (&ftl->media, best, media_erase_count (&ftl->media, best),
                     ftl->media.wp[best] + 1);
    ftl->state[best] = FTL_BLK_OPEN;
    f->block = best;
    f->wp = ftl->media.wp[best];
    log_debug (ftl, FTL_DEBUG_ALLOC, "gc frontier reopens block %u at page "
               "%u (%u free blocks)", best, f->wp, ftl->nfree);
  }
}
