/* nbdkit-ftl: the map from logical to physical pages, the valid page
 * counts of the erase blocks, and the drain notes that tell when a
 * block's last valid page left it.
 *
 * A mapping changes in exactly three ways, one function each:
 *
 *   map_install    a host write placed lpn at ppn (under the stripe lock
 *                  of lpn): the new block gains a valid page, the old
 *                  one (if any) loses one;
 *   map_unmap      a trim or zero removed lpn (under its stripe lock);
 *   map_relocate   GC copied lpn from one page to another: only if lpn
 *                  still maps to the old page (compare-and-swap, without
 *                  the stripe lock), so that a host write that raced wins.
 *
 * All three run with ckpt_rw held shared (asserted in self-check
 * builds): a checkpoint's snapshot, which takes it exclusively, sees no
 * change half made, and with a paged map it marks the groups it copies
 * clean knowing that no change is between the copy and the mark.
 *
 * Invariants:
 *   - valid[b] is the number of logical pages that map into block b, at
 *     every instant at which no mapping change is in flight.  A new page
 *     is counted before it is published in l2p and the page it replaces
 *     is uncounted after, so valid[b] never undercounts what l2p shows;
 *     0 <= valid[b] <= pages_per_block.
 *   - Before valid[b] is decremented, drain_epoch[b] is raised to 1 +
 *     the number of barriers begun so far (map_drop_valid).  A barrier
 *     (trimlog_barrier) makes durable every write, trim and relocation
 *     completed before it began; so when valid[b] is 0 and a barrier
 *     numbered drain_epoch[b] or later has completed (barrier_done),
 *     nothing durable refers to b any more and b may be erased
 *     (map_drained_durably).
 *   - mapped is the number of logical pages with a mapping.
 *
 * Checks: check[lpn] is the data checksum of the page that lpn maps to,
 * folded to 32 bits (map_check_fold), so that a read can verify a page
 * without reading its OOB entry; 0 means "not known here".  It is a
 * hint, never trusted on its own: a read accepts a page whose data
 * matches it (a check left from another page of lpn matches only the
 * same data: its seed is that page's PPN, or lpn itself), and verifies
 * any other page against its OOB entry, as before, then notes the
 * check it found there.  A host write sets it before it publishes the
 * new mapping, a relocation after its compare-and-swap; a check that a
 * race left stale only sends one read to the OOB entry.  Poison pages
 * (format.h) never get one.  map_checks_load fills them at open from
 * the OOB entries of every written page.  With the map that is 8 bytes
 * per logical page.
 *
 * Stripe locks: LPN ranges of 2^FTL_STRIPE_SHIFT pages hash to
 * FTL_STRIPES reader-writer locks.  A request locks every stripe it
 * touches in ascending index order, so writers of different regions run
 * in parallel and writers of one region are ordered (their sequence
 * numbers follow the order in which they update the map).  Writes
 * straight to the log and trims take them exclusively.  Destage
 * batches (write_cached) take them shared: their pages are the write
 * cache's pages in flight, which no other batch holds and no writer
 * changes until the batch completes (cache.c), so batches only need to
 * be ordered against the exclusive holders, and a batch of scattered
 * pages, which spans nearly every stripe, does not stop the others.
 * Writers are preferred, so that a stream of batches never starves a
 * trim; nobody takes a stripe it already holds.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

#ifdef FTL_SELF_CHECK
FTL_TLS int ckpt_rw_holds;      /* ckpt_rw held by this thread (log.h) */
#endif

/* l2p and check: 0 is their empty value (l2p holds ~ppn), so they are
 * lazy mappings (ftl_lazy_alloc): the memory they take follows the
 * logical pages written, not the capacity.
 */
static uint64_t
map_groups (struct ftl *ftl)
{
  return DIV_ROUND_UP (ftl->logical_pages,
                       UINT64_C (1) << FTL_MAP_GROUP_SHIFT);
}

int
map_init (struct ftl *ftl)
{
  /* A paged map keeps its groups in the cache's slots (mapcache.c). */
  if (!ftl->pm.on) {
    ftl->l2p = ftl_lazy_alloc (ftl->logical_pages * sizeof *ftl->l2p);
    ftl->check = ftl_lazy_alloc (ftl->logical_pages * sizeof *ftl->check);
  }
  ftl->l2p_pop = calloc (DIV_ROUND_UP (map_groups (ftl), 64),
                         sizeof *ftl->l2p_pop);
  ftl->l2p_chk = calloc (DIV_ROUND_UP (map_groups (ftl), 64),
                         sizeof *ftl->l2p_chk);
  /* A paged map keeps the checks of its resident groups only. */
  ftl->checks_all = ftl->pm.on || ftl->check_budget >= map_groups (ftl);
  ftl->check_left = ftl->checks_all ? 0 : ftl->check_budget;
  if (!ftl->checks_all) {
    char a[32], b[32];
    log_msg (ftl, FTL_LOG_WARN, "page checks are kept for %s of the "
             "disk's %s, what memory allows beside the map (reads of the "
             "rest verify each page's OOB entry)",
             space_human (ftl->check_budget << FTL_MAP_GROUP_SHIFT
                          << ftl->page_shift, a, sizeof a),
             space_human (ftl->logical_bytes, b, sizeof b));
  }
  ftl->valid = calloc (ftl->blocks, sizeof *ftl->valid);
  ftl->drain_epoch = calloc (ftl->blocks, sizeof *ftl->drain_epoch);
  if (((!ftl->l2p || !ftl->check) && !ftl->pm.on) || !ftl->l2p_pop ||
      !ftl->l2p_chk ||
      !ftl->valid ||
      !ftl->drain_epoch)
    return -ENOMEM;
  if (ftl->pm.on) {
    int r = pmap_init (ftl);
    if (r < 0)
      return r;
  }
  pthread_rwlockattr_t a;
  pthread_rwlockattr_init (&a);
  pthread_rwlockattr_setkind_np (&a,
                                 PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  for (unsigned i = 0; i < FTL_STRIPES; i++)
    pthread_rwlock_init (&ftl->stripe[i], &a);
  pthread_rwlockattr_destroy (&a);
  return 0;
}

/* The memory the map needs at its peak: l2p and check (8 bytes per
 * logical page), the arrays of the erase blocks (media, blocks, error
 * model: less than 64 bytes each), and a checkpoint's buffer while one
 * is written or loaded (ckpt.c, recovery.c).
 */
int
map_memory_check (uint64_t logical_bytes, uint32_t page_size,
                  uint64_t lpages, uint64_t blocks, uint64_t ckpt_bytes,
                  char *errbuf, size_t errlen, uint64_t limit,
                  uint64_t *check_groups, uint64_t paged_cache)
{
  const char *what = "memory_limit allows";

  if (limit == 0)
    limit = space_memory_limit (&what);
  if (paged_cache) {
    /* A paged map: its cache, not the capacity.  Under ulimit -v, the
     * threads' stacks and the allocator's arenas count too: a quarter
     * of it is left to them (pmap_fit_cache).
     */
    uint64_t need = pmap_memory (lpages, blocks, paged_cache) + blocks * 64
      + ckpt_bytes;
    if (strcmp (what, "ulimit -v allows") == 0)
      need += need / 3;
    char a[32], b[32], c[32], d[32];
    if (check_groups)
      *check_groups = UINT64_MAX;
    if (need <= limit)
      return 0;
    snprintf (errbuf, errlen, "size %s with a map cache of %s needs %s of "
              "memory, but %s %s (lower map-cache, or raise page-size or "
              "pages-per-block)",
              space_human (logical_bytes, a, sizeof a),
              space_human (paged_cache, b, sizeof b),
              space_human (need, c, sizeof c), what,
              space_human (limit, d, sizeof d));
    return -ENOMEM;
  }
  /* Under ulimit -v the mappings count whole, touched or not; else
   * only what is written: the checks of a full disk may then be left
   * out where they do not fit, the map and a checkpoint may not.
   */
  bool virt = strcmp (what, "ulimit -v allows") == 0;
  uint64_t checks = lpages * sizeof (uint32_t);
  uint64_t need = lpages * sizeof (uint32_t) + blocks * 64 + ckpt_bytes
    + (virt ? checks : 0);
  char a[32], b[32], c[32], d[32];

  if (need <= limit) {
    if (check_groups)
      *check_groups = virt || limit - need >= checks ? UINT64_MAX
        : (limit - need) / (sizeof (uint32_t) << FTL_MAP_GROUP_SHIFT);
    return 0;
  }
  snprintf (errbuf, errlen, "size %s in %" PRIu32 "-byte pages needs %s of "
            "memory (%s bytes per page for the map, and a checkpoint of "
            "%s), but %s %s (raise page-size, or lower size)",
            space_human (logical_bytes, a, sizeof a), page_size,
            space_human (need, b, sizeof b), virt ? "8" : "4",
            space_human (ckpt_bytes, c, sizeof c), what,
            space_human (limit, d, sizeof d));
  return -ENOMEM;
}

void
map_grant_checks (struct ftl *ftl, uint64_t g)
{
  uint64_t left = __atomic_load_n (&ftl->check_left, __ATOMIC_RELAXED);

  while (left > 0)
    if (__atomic_compare_exchange_n (&ftl->check_left, &left, left - 1,
                                     false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED)) {
      __atomic_fetch_or (&ftl->l2p_chk[g / 64], UINT64_C (1) << (g % 64),
                         __ATOMIC_RELAXED);
      return;
    }
}

void
map_clear (struct ftl *ftl)
{
  if (ftl->l2p)
    ftl_lazy_zero (ftl->l2p, ftl->logical_pages * sizeof *ftl->l2p);
  memset (ftl->l2p_pop, 0,
          DIV_ROUND_UP (map_groups (ftl), 64) * sizeof *ftl->l2p_pop);
  memset (ftl->l2p_chk, 0,
          DIV_ROUND_UP (map_groups (ftl), 64) * sizeof *ftl->l2p_chk);
  ftl->check_left = ftl->checks_all ? 0 : ftl->check_budget;
}

uint64_t
map_next (struct ftl *ftl, uint64_t lpn)
{
  uint64_t g = lpn >> FTL_MAP_GROUP_SHIFT, ng = map_groups (ftl);

  while (g < ng) {
    uint64_t w = __atomic_load_n (&ftl->l2p_pop[g / 64], __ATOMIC_RELAXED)
      >> (g % 64);
    if (w & 1)
      return MAX (lpn, g << FTL_MAP_GROUP_SHIFT);
    if (w)
      g += __builtin_ctzll (w);
    else
      g = (g / 64 + 1) * 64;
  }
  return ftl->logical_pages;
}

void
map_free (struct ftl *ftl)
{
  pmap_free (ftl);
  ftl_lazy_free (ftl->l2p, ftl->logical_pages * sizeof *ftl->l2p);
  ftl_lazy_free (ftl->check, ftl->logical_pages * sizeof *ftl->check);
  free (ftl->l2p_pop);
  free (ftl->l2p_chk);
  ftl->l2p_pop = NULL;
  ftl->l2p_chk = NULL;
  free (ftl->valid);
  free (ftl->drain_epoch);
  ftl->l2p = NULL;
  ftl->check = NULL;
  ftl->valid = NULL;
  ftl->drain_epoch = NULL;
  for (unsigned i = 0; i < FTL_STRIPES; i++)
    pthread_rwlock_destroy (&ftl->stripe[i]);
}

uint64_t
map_stripe_mask (uint64_t first, uint64_t last)
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
map_lock_mask (struct ftl *ftl, uint64_t mask)
{
  /* In ascending order (the lock order), one step per stripe held. */
  for (uint64_t m = mask; m; m &= m - 1)
    dl_wrlock (&ftl->stripe[__builtin_ctzll (m)]);
}

void
map_lock_mask_shared (struct ftl *ftl, uint64_t mask)
{
  for (uint64_t m = mask; m; m &= m - 1)
    dl_rdlock (&ftl->stripe[__builtin_ctzll (m)]);
}

void
map_unlock_mask (struct ftl *ftl, uint64_t mask)
{
  for (uint64_t m = mask; m; ) {
    unsigned i = 63 - __builtin_clzll (m);
    pthread_rwlock_unlock (&ftl->stripe[i]);
    m &= ~(UINT64_C (1) << i);
  }
}

void
map_lock (struct ftl *ftl, uint64_t first, uint64_t last)
{
  map_lock_mask (ftl, map_stripe_mask (first, last));
}

void
map_unlock (struct ftl *ftl, uint64_t first, uint64_t last)
{
  map_unlock_mask (ftl, map_stripe_mask (first, last));
}

/* Count a page of block b that is about to be published in the map. */
static void
add_valid (struct ftl *ftl, uint32_t b)
{
  uint32_t v = __atomic_fetch_add (&ftl->valid[b], 1, __ATOMIC_RELAXED);
  assert (v < ftl->ppb);
  (void) v;
}

void
map_note_drain (struct ftl *ftl, uint32_t b)
{
  atomic_max_u64 (&ftl->drain_epoch[b],
                  __atomic_load_n (&ftl->barrier_started, __ATOMIC_SEQ_CST)
                  + 1);
}

void
map_drop_valid (struct ftl *ftl, uint32_t b)
{
  map_note_drain (ftl, b);
  uint32_t v = __atomic_fetch_sub (&ftl->valid[b], 1, __ATOMIC_RELEASE);
  assert (v > 0);
  (void) v;
}

void
map_install (struct ftl *ftl, uint64_t lpn, uint32_t ppn, uint32_t check)
{
  uint32_t old;

  assert (lpn < ftl->logical_pages);
  assert (ckpt_held ());
  map_populate (ftl, lpn);
  if (ftl->pm.on)
    pmap_pin (ftl, lpn >> FTL_MAP_GROUP_SHIFT);
  if (map_has_checks (ftl, lpn))
    __atomic_store_n (check_at (ftl, lpn), check, __ATOMIC_RELAXED);
  add_valid (ftl, media_ppn_block (&ftl->media, ppn));
  old = ~__atomic_exchange_n (l2p_at (ftl, lpn), ~ppn, __ATOMIC_ACQ_REL);
  if (ftl->pm.on)
    pmap_unpin_dirty (ftl, lpn >> FTL_MAP_GROUP_SHIFT);
  assert (old != ppn);
  if (old == FTL_UNMAPPED)
    __atomic_fetch_add (&ftl->mapped, 1, __ATOMIC_RELAXED);
  else if (old != FTL_LOST)     /* lost data has no page */
    map_drop_valid (ftl, media_ppn_block (&ftl->media, old));
}

bool
map_unmap (struct ftl *ftl, uint64_t lpn)
{
  uint32_t old;

  assert (lpn < ftl->logical_pages);
  assert (ckpt_held ());
  if (ftl->pm.on) {
    /* A group that never held a mapping has nothing to unmap. */
    uint64_t g = lpn >> FTL_MAP_GROUP_SHIFT;
    if (!(__atomic_load_n (&ftl->l2p_pop[g / 64], __ATOMIC_RELAXED)
          >> (g % 64) & 1))
      return false;
    pmap_pin (ftl, g);
    old = ~__atomic_exchange_n (l2p_at (ftl, lpn), ~FTL_UNMAPPED,
                                __ATOMIC_ACQ_REL);
    if (old == FTL_UNMAPPED)
      pmap_unpin (ftl, g);
    else
      pmap_unpin_dirty (ftl, g);
  }
  else {
    if (l2p_load (ftl, lpn) == FTL_UNMAPPED)
      return false;
    old = ~__atomic_exchange_n (&ftl->l2p[lpn], ~FTL_UNMAPPED,
                                __ATOMIC_ACQ_REL);
  }
  if (old == FTL_UNMAPPED)
    return false;
  __atomic_fetch_sub (&ftl->mapped, 1, __ATOMIC_RELAXED);
  if (old != FTL_LOST)
    map_drop_valid (ftl, media_ppn_block (&ftl->media, old));
  return true;
}

bool
map_relocate (struct ftl *ftl, uint64_t lpn, uint32_t from, uint32_t to,
              uint32_t check)
{
  uint32_t expect = ~from;
  uint32_t tb = media_ppn_block (&ftl->media, to);

  assert (lpn < ftl->logical_pages);
  assert (ckpt_held ());
  assert (media_ppn_block (&ftl->media, from) != tb);
  add_valid (ftl, tb);
  if (ftl->pm.on)
    pmap_pin (ftl, lpn >> FTL_MAP_GROUP_SHIFT);
  if (__atomic_compare_exchange_n (l2p_at (ftl, lpn), &expect, ~to, false,
                                   __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
    if (map_has_checks (ftl, lpn))
      __atomic_store_n (check_at (ftl, lpn), check, __ATOMIC_RELAXED);
    if (ftl->pm.on)
      pmap_unpin_dirty (ftl, lpn >> FTL_MAP_GROUP_SHIFT);
    map_drop_valid (ftl, media_ppn_block (&ftl->media, from));
    return true;
  }
  if (ftl->pm.on)
    pmap_unpin (ftl, lpn >> FTL_MAP_GROUP_SHIFT);
  /* A host write or trim won: the copy is garbage. */
  map_drop_valid (ftl, tb);
  return false;
}

bool
map_drained_durably (struct ftl *ftl, uint32_t b)
{
  if (__atomic_load_n (&ftl->valid[b], __ATOMIC_ACQUIRE) != 0)
    return false;
  uint64_t e = __atomic_load_n (&ftl->drain_epoch[b], __ATOMIC_RELAXED);
  if (e == 0) {
    /* Nothing ever left it (no page of it was ever valid): what it
     * holds is garbage to any recovery, but note it anyway, so that
     * the rule has no exception.
     */
    map_note_drain (ftl, b);
    e = __atomic_load_n (&ftl->drain_epoch[b], __ATOMIC_RELAXED);
  }
  return __atomic_load_n (&ftl->barrier_done, __ATOMIC_SEQ_CST) >= e;
}

bool
map_erase_allowed (struct ftl *ftl, uint32_t b)
{
  uint64_t e = __atomic_load_n (&ftl->drain_epoch[b], __ATOMIC_RELAXED);
  return __atomic_load_n (&ftl->valid[b], __ATOMIC_ACQUIRE) == 0 &&
    (e == 0 || __atomic_load_n (&ftl->barrier_done, __ATOMIC_SEQ_CST) >= e);
}

uint64_t
map_barrier_begin (struct ftl *ftl)
{
  return __atomic_fetch_add (&ftl->barrier_started, 1, __ATOMIC_SEQ_CST);
}

void
map_barrier_done (struct ftl *ftl, uint64_t k)
{
  atomic_max_u64 (&ftl->barrier_done, k + 1);
}

void
map_block_erased (struct ftl *ftl, uint32_t b)
{
  assert (__atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED) == 0);
  __atomic_store_n (&ftl->drain_epoch[b], 0, __ATOMIC_RELAXED);
}

void
map_check_heal (struct ftl *ftl, uint64_t lpn, uint32_t seen, uint32_t check)
{
  if (ftl->pm.on) {
    uint64_t g = lpn >> FTL_MAP_GROUP_SHIFT;
    if (pmap_pin_if_resident (ftl, g)) {
      __atomic_compare_exchange_n (check_at (ftl, lpn), &seen, check, false,
                                   __ATOMIC_RELAXED, __ATOMIC_RELAXED);
      pmap_unpin (ftl, g);
    }
    return;
  }
  if (map_has_checks (ftl, lpn))
    __atomic_compare_exchange_n (&ftl->check[lpn], &seen, check, false,
                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED);
}

int
map_checks_load (struct ftl *ftl)
{
  struct media *m = &ftl->media;
  uint8_t *oob = malloc ((size_t) ftl->ppb * FTL_OOB_BYTES);

  if (!oob)
    return -ENOMEM;
  /* A paged map's checks are healed by reads as groups are loaded. */
  if (ftl->pm.on) {
    free (oob);
    return 0;
  }
  ftl_lazy_zero (ftl->check, ftl->logical_pages * sizeof *ftl->check);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    uint32_t wp = m->wp[b], ec = media_erase_count (m, b);
    if (wp == 0 || ftl->valid[b] == 0 ||
        media_read_oob (m, b, 0, wp, oob) < 0)
      continue;                 /* its pages are read the slow way */
    for (uint32_t i = 0; i < wp; i++) {
      struct ftl_oob o;
      uint32_t ppn = media_ppn (m, b, i);
      if (fmt_oob_decode (oob + (size_t) i * FTL_OOB_BYTES, FTL_OOB_BYTES,
                          &o) == FTL_FMT_OK &&
          o.kind == FTL_OOB_DATA && o.lpn < ftl->logical_pages &&
          o.erase_count == ec && l2p_load (ftl, o.lpn) == ppn &&
          map_has_checks (ftl, o.lpn))
        ftl->check[o.lpn] = map_check_fold (o.data_checksum);
    }
  }
  free (oob);
  return 0;
}
