/* nbdkit-ftl: the log layer's functions (log/): the map, allocation and
 * frontiers, the trim log, checkpoints, durable points, creation,
 * recovery and the self-check.  Callable from this layer and the ones
 * above it (reclaim/, host/, report/, mngt/).
 */
#ifndef FTL_LOG_H
#define FTL_LOG_H

#ifndef FTL_INTERNAL_H
#error "included by ftl-internal.h, after the handle"
#endif

/* No hot/cold separation for good: hot-cold=false, or too little spare
 * left (wl.c).
 */
static inline bool
one_log_for_good (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->one_log, __ATOMIC_RELAXED);
}

/* No hot/cold separation now: for good, or hot-cold=auto found no hot
 * set (alloc.c).
 */
static inline bool
one_log (struct ftl *ftl)
{
  return one_log_for_good (ftl) ||
    __atomic_load_n (&ftl->sep_off, __ATOMIC_RELAXED);
}

/* mapcache.c and pmap.c: the paged map.  A group of FTL_TP_ENTRIES
 * logical pages is resident (its l2p page holds it) or not (its
 * translation page in the log does); every access to a group's entries
 * pins it.
 */
extern int pmap_init (struct ftl *ftl);
extern void pmap_free (struct ftl *ftl);
extern void pmap_pin (struct ftl *ftl, uint64_t g);
/* Pin g if it is resident; false if not (nothing to do then). */
extern bool pmap_pin_if_resident (struct ftl *ftl, uint64_t g);
static inline void
pmap_unpin (struct ftl *ftl, uint64_t g)
{
  __atomic_fetch_sub (&ftl->pm.gstate[g], 1, __ATOMIC_RELEASE);
}
/* Unpin g, which the caller changed. */
extern void pmap_unpin_dirty (struct ftl *ftl, uint64_t g);
extern uint32_t pmap_load (struct ftl *ftl, uint64_t lpn);
/* Evict clean groups while more than the cache holds are resident. */
extern void pmap_shrink (struct ftl *ftl);
/* Is ppn the translation page of group g that the map or a checkpoint
 * slot names (GC: a live page)?
 */
extern bool pmap_tp_live (struct ftl *ftl, uint64_t g, uint32_t ppn);
/* A checkpoint programmed g's translation page at ppn (version seq). */
extern void pmap_tp_written (struct ftl *ftl, uint64_t g, uint32_t ppn,
                             uint64_t seq);
/* GC copied g's translation page from one page to another. */
extern void pmap_tp_moved (struct ftl *ftl, uint64_t g, uint32_t from,
                           uint32_t to);
/* Checkpoints (ckpt.c): the dirty groups' pages are copied into buf
 * (FTL_TP_BYTES each, at most max groups, into gs[]) and marked as
 * being written (ckpt_rw held exclusively); then ckpt.c programs them;
 * then, once the checkpoint in slot is durable, the slot's directory is
 * the map's (pmap_ckpt_commit), or on failure the groups not written
 * are dirty again (pmap_ckpt_abort).
 */
extern uint64_t pmap_ckpt_collect (struct ftl *ftl, uint8_t *buf,
                                   uint64_t *gs, uint64_t max);
/* Group g's translation page as its entries are now (buf NULL above:
 * the caller copies each later, nothing changing the map meanwhile).
 */
extern void pmap_tp_copy (struct ftl *ftl, uint64_t g, uint8_t *p);
/* The directory of the checkpoint for slot, and the other slot's, as
 * they are now: the checkpoint's snapshot takes them with its block
 * table (ckpt_rw exclusive), so that each page they name lies in the
 * written part of its block as the table has it.
 */
extern void pmap_ckpt_encode_dir (struct ftl *ftl, uint8_t *body,
                                  unsigned slot);
extern void pmap_ckpt_commit (struct ftl *ftl, unsigned slot);
extern void pmap_ckpt_abort (struct ftl *ftl, const uint64_t *gs,
                             uint64_t from, uint64_t n);
/* Set a mapping at recovery, keeping the valid counts and mapped. */
extern void pmap_recover_set (struct ftl *ftl, uint64_t lpn, uint32_t ppn);
/* Count the translation pages the map and the slots name (recovery). */
extern void pmap_count_refs (struct ftl *ftl);
extern uint64_t pmap_ctr (struct ftl *ftl, enum pmap_counter c);
static inline void
pmap_count (struct ftl *ftl, enum pmap_counter c, uint64_t n)
{
  __atomic_fetch_add (&ftl->pm.ctr[ftl_shard ()].v[c], n, __ATOMIC_RELAXED);
}
/* A group in the cache, as a drive counts it: its 4-byte entries (as
 * much again is in memory beside them: their checks).
 */
#define PMAP_GROUP_BYTES FTL_TP_BYTES
/* The cache that holds a whole map; the memory a paged map takes with
 * a cache of cache bytes.
 */
extern uint64_t pmap_whole_bytes (uint64_t logical_pages);
/* The largest cache up to cache bytes (halved while it does not fit)
 * with which a paged map fits in limit (0: what the host allows):
 * for a default cache, which a small host makes smaller.
 */
extern uint64_t pmap_fit_cache (uint64_t logical_pages, uint32_t blocks,
                                uint64_t ckpt_bytes, uint64_t cache,
                                uint64_t limit);
/* The cache that the options give a disk (map-cache=, a preset's). */
extern uint64_t pmap_cache_bytes (const struct ftl_options *o,
                                  uint64_t logical_bytes, uint32_t page_size);
extern uint64_t pmap_memory (uint64_t logical_pages, uint32_t blocks,
                             uint64_t cache);

/* A paged map: lpn's entry and check in its group's slot (the group
 * pinned); a check of a group not resident reads as 0 (unknown).
 */
static inline uint32_t *
pmap_slot_at (struct ftl *ftl, uint32_t slot, uint64_t lpn, bool check)
{
  return ftl->pm.chunk[slot >> PMAP_CHUNK_SHIFT]
    + ((((size_t) (slot & (PMAP_CHUNK - 1)) * 2 + check) << FTL_TP_SHIFT)
       | (lpn & (FTL_TP_ENTRIES - 1)));
}

static inline uint32_t *
l2p_at (struct ftl *ftl, uint64_t lpn)
{
  if (ftl->pm.on)
    return pmap_slot_at (ftl, __atomic_load_n (&ftl->pm.slot[lpn >>
                                                             FTL_TP_SHIFT],
                                               __ATOMIC_ACQUIRE),
                         lpn, false);
  return &ftl->l2p[lpn];
}

extern uint32_t pmap_no_check;
static inline uint32_t *
check_at (struct ftl *ftl, uint64_t lpn)
{
  if (ftl->pm.on) {
    uint32_t s = __atomic_load_n (&ftl->pm.slot[lpn >> FTL_TP_SHIFT],
                                  __ATOMIC_ACQUIRE);
    if (s == PMAP_NO_SLOT)
      return &pmap_no_check;
    return pmap_slot_at (ftl, s, lpn, true);
  }
  return &ftl->check[lpn];
}

/* l2p[] holds ~ppn, so that an unmapped page is 0 and the array's
 * pages that hold no mapping stay unallocated (map.c).  With a paged
 * map, through pmap_load.
 */
static inline uint32_t
l2p_load (struct ftl *ftl, uint64_t lpn)
{
  if (__builtin_expect (ftl->pm.on, 0))
    return pmap_load (ftl, lpn);
  return ~__atomic_load_n (&ftl->l2p[lpn], __ATOMIC_ACQUIRE);
}

extern void map_grant_checks (struct ftl *ftl, uint64_t g);

/* Note that lpn's group may hold a mapping, before one is stored; the
 * first time, the group gets page checks if memory for them is left.
 */
static inline void
map_populate (struct ftl *ftl, uint64_t lpn)
{
  uint64_t g = lpn >> FTL_MAP_GROUP_SHIFT, bit = UINT64_C (1) << (g % 64);

  if (!(__atomic_load_n (&ftl->l2p_pop[g / 64], __ATOMIC_RELAXED) & bit) &&
      !(__atomic_fetch_or (&ftl->l2p_pop[g / 64], bit, __ATOMIC_RELAXED)
        & bit) && !ftl->checks_all)
    map_grant_checks (ftl, g);
}

/* Are page checks kept for lpn's group?  A store into check[] of a
 * group without them would take memory that map_memory_check did not
 * count; a load finds 0 there (unknown), which is always right.
 */
static inline bool
map_has_checks (struct ftl *ftl, uint64_t lpn)
{
  uint64_t g = lpn >> FTL_MAP_GROUP_SHIFT;

  return ftl->checks_all ||
    (__atomic_load_n (&ftl->l2p_chk[g / 64], __ATOMIC_RELAXED)
     >> (g % 64) & 1);
}

/* Set a mapping while nothing else runs (recovery, tests). */
static inline void
l2p_set (struct ftl *ftl, uint64_t lpn, uint32_t ppn)
{
  if (ppn != FTL_UNMAPPED)
    map_populate (ftl, lpn);
  if (ftl->pm.on) {
    pmap_pin (ftl, lpn >> FTL_MAP_GROUP_SHIFT);
    *l2p_at (ftl, lpn) = ~ppn;
    pmap_unpin_dirty (ftl, lpn >> FTL_MAP_GROUP_SHIFT);
    return;
  }
  ftl->l2p[lpn] = ~ppn;
}

static inline uint32_t
check_load (struct ftl *ftl, uint64_t lpn)
{
  return __atomic_load_n (check_at (ftl, lpn), __ATOMIC_RELAXED);
}

/* A page's data checksum (fmt_checksum) as kept in check[]: 32 bits,
 * never 0 (which means unknown).
 */
/* The seed of the data checksum of the page at ppn that holds kind and
 * field (fmt_page_seed: the image's seeds); for a decoded OOB entry,
 * oob_seed.
 */
static inline uint64_t
page_seed (const struct ftl *ftl, unsigned kind, uint32_t field,
           uint32_t ppn)
{
  return fmt_page_seed (ftl->seed_flags, kind, field, ppn);
}

static inline uint64_t
oob_seed (const struct ftl *ftl, const struct ftl_oob *o, uint32_t ppn)
{
  return fmt_oob_seed (ftl->seed_flags, o, ppn);
}

/* Does the image seed data checksums with the logical page (format
 * version 7)?  Then a data page's checksum does not depend on where it
 * lands, and writers compute it before they take any lock (write.c);
 * data_sum is that checksum of the page for lpn.
 */
static inline bool
seeds_by_lpn (const struct ftl *ftl)
{
  return ftl->seed_flags & FTL_SB_LPN_SEED;
}

static inline uint64_t
data_sum (const struct ftl *ftl, uint64_t lpn, const uint8_t *page)
{
  return fmt_checksum (page, ftl->page_size,
                       page_seed (ftl, FTL_OOB_DATA, lpn, 0));
}

static inline uint32_t
map_check_fold (uint64_t sum)
{
  uint32_t c = (uint32_t) (sum ^ (sum >> 32));
  return c ? c : 1;
}

/* map.c: the map, valid counts, stripe locks and drain notes. */
extern int map_init (struct ftl *ftl);
extern void map_clear (struct ftl *ftl);
/* The first logical page from lpn on whose group may hold a mapping,
 * or logical_pages: for (l = map_next (ftl, 0); l < logical_pages;
 * l = map_next (ftl, l + 1)) visits every mapped page and skips the
 * groups that hold none.
 */
extern uint64_t map_next (struct ftl *ftl, uint64_t lpn);
extern void map_free (struct ftl *ftl);
/* (paged_cache: a paged map with a cache of that many bytes; 0: not
 * paged.)  Refuse an image of logical_bytes in pages of page_size (lpages of
 * them, in blocks erase blocks, checkpoints of ckpt_bytes) whose map
 * needs more memory than this process may use: 0, or -ENOMEM with
 * errbuf naming the memory needed and the limit.  The page checks are
 * a hint (map.c): where a full disk's would not fit beside the map,
 * *check_groups (if not NULL) is how many groups of the map may keep
 * them, else UINT64_MAX.  limit: the memory to count with instead of
 * the host's (0: the host's).
 */
extern int map_memory_check (uint64_t logical_bytes, uint32_t page_size,
                             uint64_t lpages, uint64_t blocks,
                             uint64_t ckpt_bytes, char *errbuf,
                             size_t errlen, uint64_t limit,
                             uint64_t *check_groups, uint64_t paged_cache);
extern void map_lock (struct ftl *ftl, uint64_t first, uint64_t last);
extern void map_unlock (struct ftl *ftl, uint64_t first, uint64_t last);
/* The stripes of [first, last] as a bit mask, and locking a set of
 * stripes (in ascending order) for writes of scattered pages:
 * exclusively, or shared (map_lock_mask_shared) by writers whose pages
 * no other holder can be writing (destage batches: map.c).
 */
extern uint64_t map_stripe_mask (uint64_t first, uint64_t last);
extern void map_lock_mask (struct ftl *ftl, uint64_t mask);
extern void map_lock_mask_shared (struct ftl *ftl, uint64_t mask);
extern void map_unlock_mask (struct ftl *ftl, uint64_t mask);
/* A host write programmed lpn at ppn, whose data has the check check
 * (map_check_fold; 0 if none may be trusted).  Caller holds lpn's
 * stripe.
 */
extern void map_install (struct ftl *ftl, uint64_t lpn, uint32_t ppn,
                         uint32_t check);
/* Unmap lpn (caller holds its stripe); true if it was mapped. */
extern bool map_unmap (struct ftl *ftl, uint64_t lpn);
/* GC copied lpn from page from to page to (whose data has the check
 * check, or 0): move the mapping if lpn still maps to from.  Returns
 * whether it moved.
 */
extern bool map_relocate (struct ftl *ftl, uint64_t lpn, uint32_t from,
                          uint32_t to, uint32_t check);
/* A read verified lpn's page by its OOB entry, whose checksum folds to
 * check: note it, unless lpn's check changed from seen meanwhile.
 */
extern void map_check_heal (struct ftl *ftl, uint64_t lpn, uint32_t seen,
                            uint32_t check);
/* After recovery: the checks of every mapped page, from the OOB entries
 * (a page whose entry does not vouch for it gets none, and is read the
 * slow way).  Returns 0 or -ENOMEM.
 */
extern int map_checks_load (struct ftl *ftl);
/* Block b loses a valid page: note the drain epoch, then decrement. */
extern void map_drop_valid (struct ftl *ftl, uint32_t b);
extern void map_note_drain (struct ftl *ftl, uint32_t b);
/* Is b empty of valid pages, and has a barrier that began after its
 * last valid page left completed?  Then b may be erased at once.
 */
extern bool map_drained_durably (struct ftl *ftl, uint32_t b);
/* The same, without noting a drain: for assertions. */
extern bool map_erase_allowed (struct ftl *ftl, uint32_t b);
extern uint64_t map_barrier_begin (struct ftl *ftl);
extern void map_barrier_done (struct ftl *ftl, uint64_t k);
/* After b was erased. */
extern void map_block_erased (struct ftl *ftl, uint32_t b);

/* alloc.c: erase blocks, frontiers and programming at a frontier. */
extern int alloc_init (struct ftl *ftl);
extern void alloc_free (struct ftl *ftl);
/* Placement (state.h): set ftl->place from the namespace table. */
extern void alloc_place_init (struct ftl *ftl);
/* The namespace (its index in the table) whose range holds lpn; a page
 * in no namespace's range counts as the one below it (or the first).
 */
static inline unsigned
place_ns (const struct ftl *ftl, uint64_t lpn)
{
  const struct place *p = &ftl->place;
  unsigned lo = 0, hi = p->nns;

  if (hi <= 1)
    return 0;
  while (hi - lo > 1) {
    unsigned mid = (lo + hi) / 2;
    if (lpn >= p->first[mid])
      lo = mid;
    else
      hi = mid;
  }
  return p->ns[lo];
}
/* The placement groups of lpn's host writes and of GC's copies. */
static inline unsigned
place_host_group (const struct ftl *ftl, uint64_t lpn)
{
  return ftl->place.host_groups > 1 ? place_ns (ftl, lpn) : 0;
}
static inline unsigned
place_gc_group (const struct ftl *ftl, uint64_t lpn)
{
  return ftl->place.gc_groups > 1 ? place_ns (ftl, lpn) : 0;
}
/* Group g's GC frontier for young (gcw) or old (gcf) data. */
static inline struct frontier *
alloc_gc_frontier (struct ftl *ftl, unsigned g, bool young)
{
  if (g == 0)
    return young ? &ftl->gcw : &ftl->gcf;
  return young ? &ftl->pgx[g - 1].gcw : &ftl->pgx[g - 1].gcf;
}
/* Spare blocks needed (FTL_MIN_SPARE_BLOCKS, state.h) and needed for
 * hot/cold separation (FTL_SEPARATION_SPARE_BLOCKS), with the
 * frontiers of every placement group: each group's host streams and,
 * with isolated placement, each group's two GC frontiers hold a block
 * open.
 */
static inline uint32_t
alloc_min_spare (const struct ftl *ftl)
{
  unsigned hg = MAX (ftl->place.host_groups, 1);
  unsigned gg = MAX (ftl->place.gc_groups, 1);

  return FTL_MIN_SPARE_BLOCKS (ftl->nstreams * hg) + 2 * (gg - 1);
}
static inline uint32_t
alloc_separation_spare (const struct ftl *ftl)
{
  return alloc_min_spare (ftl)
    + ftl->nstreams * MAX (ftl->place.host_groups, 1)
    + MAX (ftl->place.gc_groups, 1);
}
/* The calling thread's host frontier of placement group g for hot or
 * cold data.  Without separation (one_log) its stream's hot frontier
 * while that still has an open block (drained, see
 * alloc_frontier_drained), else the cold one.
 */
extern struct frontier *alloc_host_frontier (struct ftl *ftl, bool hot,
                                             unsigned g);
/* Host frontier f (its lock held) has no open block and must not open
 * one: a hot frontier without separation.  The writer takes
 * alloc_host_frontier (ftl, false, f->group) instead.
 */
extern bool alloc_frontier_drained (struct ftl *ftl,
                                    const struct frontier *f);
/* Is the data of these logical pages hot (rewritten soon after it was
 * last written)?  Decided by the majority of the mapped pages; false
 * without separation.  The mapped pages count as overwrites for
 * hot-cold=auto (added to *hits, which alloc_hits_add then counts).
 */
struct alloc_hits { uint64_t overwrites, young[HOT_COLD_AGES]; };
extern bool alloc_range_is_hot (struct ftl *ftl, uint64_t first,
                                uint64_t last, struct alloc_hits *hits);
extern void alloc_hits_add (struct ftl *ftl, const struct alloc_hits *hits);
/* hot-cold=auto: every so many overwrites, turn separation off or on
 * (state.h).  Caller holds gc.lock.
 */
extern void alloc_hot_cold_step (struct ftl *ftl);
/* Its state and last decision (st->hot_cold), without gc.lock. */
extern void alloc_hot_cold_stats (struct ftl *ftl, struct ftl_stats *st);
/* Free blocks now (an atomic read; exact under alloc_lock). */
static inline uint32_t
alloc_nfree (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->nfree, __ATOMIC_RELAXED);
}
/* Give f an open erase block if it has none, for who (the free pool's
 * account, state.h): the one function that takes free blocks.  Returns
 * 0, or -ENOSPC if that would leave fewer free than who's floor
 * (alloc_floor; it never collects garbage: callers do, before they
 * call it, or fail).  Caller owns f.
 */
/* Every open block was closed (recovery after a crash, a close): with
 * the free pool down to the crash reserve, GC may take it until the
 * pool is above it again (spor_short).
 */
extern void alloc_blocks_closed (struct ftl *ftl);
/* The free pool by erase count: count it again from the block table
 * (recovery, after it decided every block's state), and note a block
 * that became FREE (caller holds alloc_lock).  A build that cannot
 * allocate it chooses free blocks by a scan of the whole table.
 */
extern void alloc_free_ec_recount (struct ftl *ftl);
extern void alloc_block_freed (struct ftl *ftl, uint32_t b);
/* With the free pool at or below the crash reserve once every open
 * block was closed (an open), give the GC frontiers the blocks closed
 * before they were full that have the most room left, one page past
 * their last programmed one: GC copies into them before it takes the
 * crash reserve.  A server killed while GC held the reserve left an
 * image with no free block and a victim half copied (its copies in two
 * programs, to both GC frontiers, or in several batches); that image
 * found nothing to reclaim without copying, and failed every write.
 * Recovery scans a block closed early from its write pointer, so the
 * pages programmed after a reopen are found whatever the checkpoint
 * says.  Caller has exclusive access (open).
 */
extern void alloc_reopen_for_gc (struct ftl *ftl);
extern int alloc_frontier_open (struct ftl *ftl, struct frontier *f,
                                enum alloc_taker who);
/* The free blocks who must leave: FTL_RESERVE_BLOCKS, or for GC the
 * crash reserve (none while spor_short).
 */
extern uint32_t alloc_floor (struct ftl *ftl, enum alloc_taker who);
/* Self-check builds: assert the free pool's account (state.h) after a
 * take or an erase (caller holds alloc_lock).
 */
extern void alloc_pool_assert (struct ftl *ftl);
/* Pages f's open block can still take (0 if none is open). */
static inline uint32_t
alloc_frontier_room (const struct ftl *ftl, const struct frontier *f)
{
  return f->block == FTL_NO_BLOCK ? 0
    : media_block_pages (&ftl->media, f->block) - f->wp;
}
/* Program n pages (n <= ALLOC_PROGRAM_MAX, n <= the room of f's open
 * block) described by pages[], data in data; then change the map as
 * pages[] says and advance f, closing its block when full.  *moved (if
 * not NULL) counts relocated pages whose mapping moved.  After a
 * failed program the pages count as programmed (garbage) and the map
 * is unchanged.  Caller owns f and holds what the map changes need
 * (stripe locks for host writes; gc.lock for relocations).
 */
extern int alloc_program (struct ftl *ftl, struct frontier *f,
                          const struct log_page *pages, uint32_t n,
                          const uint8_t *data, uint32_t *moved);
/* The same, page i's data at data[i] (the write cache's pages). */
extern int alloc_programv (struct ftl *ftl, struct frontier *f,
                           const struct log_page *pages, uint32_t n,
                           const uint8_t *const *data, uint32_t *moved);
/* Every frontier (host, hot and the two GC ones of every placement
 * group, the metadata and translation page ones): fills
 * all[FTL_FRONTIERS] and returns how many.
 */
#define FTL_FRONTIERS (FTL_NS_MAX * (2 * FTL_MAX_STREAMS + 2) + 2)
extern unsigned alloc_frontiers (struct ftl *ftl, struct frontier **all);
/* Close every open block (at shutdown).  Caller has exclusive access. */
extern void alloc_close_frontiers (struct ftl *ftl);

/* trimlog.c: the trim record buffer and barriers. */
extern int trimlog_init (struct ftl *ftl);
extern void trimlog_free (struct ftl *ftl);
/* Record that [lpn, lpn+count) is unmapped (before unmapping it).  May
 * write a full buffer to the log; opens a block for the metadata
 * frontier (ALLOC_TRIM) if it has no room left for the record's page.
 * Returns 0, or -ENOSPC (nothing recorded: collect garbage and try
 * again), or the error of a program.
 */
extern int trimlog_append (struct ftl *ftl, uint64_t lpn, uint64_t count);
/* Write buffered trim records to the log (not synced), in the room the
 * metadata frontier keeps.  Only after a failed program took that room
 * may it need a block: the metadata frontier's (ALLOC_TRIM), else, if
 * spare is not NULL, the room of spare (a GC frontier that the caller
 * owns, under gc.lock) or a block for it (ALLOC_GC); without one it
 * returns -ENOSPC and the records stay buffered.  Caller holds ckpt_rw
 * shared and not trim_lock.
 */
extern int trimlog_flush (struct ftl *ftl, struct frontier *spare);
/* A barrier: write the buffered trim records (as trimlog_flush) and
 * sync.  Every write, trim and relocation completed before the call is
 * durable when it returns 0.  Caller holds ckpt_rw shared and not
 * trim_lock.
 */
extern int trimlog_barrier (struct ftl *ftl, struct frontier *spare);
extern void trimlog_drop_before (struct ftl *ftl, uint64_t seq);

/* ckpt.c: superblocks and checkpoints. */

/* ckpt_rw: every change of the map holds it shared for its whole
 * duration, a checkpoint's snapshot exclusively (ftl-internal.h).  It
 * is taken and released through these, so that a self-check build
 * knows whether this thread holds it and map.c can assert the rule
 * where the map changes.  ckpt_shared_dl counts a wait for it as the
 * request's queue stage (deadline.h).
 */
#ifdef FTL_SELF_CHECK
extern FTL_TLS int ckpt_rw_holds;
#define CKPT_RW_NOTE(d) (ckpt_rw_holds += (d))
#else
#define CKPT_RW_NOTE(d) ((void) 0)
#endif

static inline void
ckpt_shared (struct ftl *ftl)
{
  pthread_rwlock_rdlock (&ftl->ckpt_rw);
  CKPT_RW_NOTE (1);
}

static inline void
ckpt_shared_dl (struct ftl *ftl)
{
  dl_rdlock (&ftl->ckpt_rw);
  CKPT_RW_NOTE (1);
}

static inline void
ckpt_exclusive (struct ftl *ftl)
{
  pthread_rwlock_wrlock (&ftl->ckpt_rw);
  CKPT_RW_NOTE (1);
}

static inline void
ckpt_release (struct ftl *ftl)
{
  CKPT_RW_NOTE (-1);
  pthread_rwlock_unlock (&ftl->ckpt_rw);
}

/* Does this thread hold ckpt_rw (always true without self-checks)? */
static inline bool
ckpt_held (void)
{
#ifdef FTL_SELF_CHECK
  return ckpt_rw_holds > 0;
#else
  return true;
#endif
}

extern int ckpt_init (struct ftl *ftl);
extern void ckpt_free (struct ftl *ftl);
extern int ckpt_write_superblock (struct ftl *ftl, enum ftl_sb_state state,
                                  uint64_t clean_ckpt_gen);
extern int ckpt_write (struct ftl *ftl, bool clean);
/* Write bytes of buf at base of the file (through m if not NULL, else
 * through io) in FTL_CKPT_CHUNK pieces; a piece that nonzero does not
 * flag is all zeros, and is skipped where zero says the file holds
 * zeros already or the file has a hole there.  zero is updated to what
 * the file holds.
 */
extern int ckpt_write_chunks (const struct ftl_io *io, int fd,
                              struct media *m, uint64_t base,
                              const uint8_t *buf, uint64_t bytes,
                              const uint8_t *nonzero, uint8_t *zero);
/* Write a checkpoint if one is due and no other thread writes one.
 * Returns 1 if it wrote one, 0 if not, or a negative errno.
 */
extern int ckpt_maybe (struct ftl *ftl);
/* Due: an interval of pages or of trim pages since the last one;
 * overdue: two.
 */
extern bool ckpt_due (struct ftl *ftl);
extern bool ckpt_overdue (struct ftl *ftl);

/* durable.c: durable points (see there). */
extern int durable_init (struct ftl *ftl);
extern void durable_free (struct ftl *ftl);
extern uint64_t seq_reserve (struct ftl *ftl, uint32_t k, int *slot);
extern void seq_release (struct ftl *ftl, int slot);
extern uint64_t durable_sample (struct ftl *ftl);
extern void durable_synced (struct ftl *ftl, uint64_t sample);
extern int durable_commit (struct ftl *ftl);
extern int durable_load (struct ftl *ftl);

/* create.c: format fd, a blank file (empty, or old_size bytes of
 * zeros), as a new image with the geometry that the options o give,
 * then sync the directory that holds it; errbuf says why it cannot.
 */
extern int create_image (int fd, const struct ftl_options *o,
                         uint64_t old_size, char *errbuf, size_t errlen);
/* A file of size bytes with no valid superblock copy, copy B all zeros
 * (and copy A too if sbs_zero): blank (only zeros: sets *blank, returns
 * 0), or -EINVAL, with errbuf replaced if it is an image whose creation
 * was cut short (left as the caller wrote it otherwise).
 */
extern int create_examine (int fd, uint64_t size, bool sbs_zero,
                           bool *blank, char *errbuf, size_t errlen);
/* What is said of an image whose creation was cut short. */
#define CREATE_CUT_SHORT "an incomplete image (creation was cut short): " \
  "remove the file to create the image again"

/* recovery.c: load the newest checkpoint and roll the log forward. */
extern int recovery_run (struct ftl *ftl, char *errbuf, size_t errlen);

/* selfcheck.c: cross-check the map, the valid counts, the block table,
 * the free pool and the frontiers; report every inconsistency.  Returns
 * 0, -EIO if anything is inconsistent, or -ENOMEM.  The caller makes
 * sure nothing changes meanwhile.  selfcheck_assert aborts on an
 * inconsistency in builds configured with --enable-self-check and does
 * nothing in others.
 */
extern int selfcheck_run (struct ftl *ftl, const char *when);
extern void selfcheck_assert (struct ftl *ftl, const char *when);

#endif /* FTL_LOG_H */
