/* nbdkit-ftl: the paged map's cache: which groups of the map are in
 * memory, pinning them, loading them from their translation pages and
 * evicting clean ones (pmap.c has the translation pages' references,
 * their write-back by checkpoints and recovery; the design is there).
 *
 * A group's state word (gstate): PMAP_RES, PMAP_DIRTY, PMAP_WB (a
 * checkpoint is writing its copy), PMAP_EVICT and a count of pins.
 * Every access to a group's entries pins it: a pin is an atomic
 * increment of a resident group's word, so that eviction, which needs
 * the word to be exactly PMAP_RES (resident, clean, unpinned), cannot
 * race with an access.  Loading and evicting happen under the group's
 * glock; the clock hand under evict_lock.  Both are leaves: nothing is
 * taken under them but pm.lock (to read the directory) and the media's
 * own.  This module calls no other of the log layer: map.c and pmap.c
 * call it.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

_Static_assert (FTL_MAP_GROUP_SHIFT == FTL_TP_SHIFT,
                "a map group is a translation page's");
_Static_assert (__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
                "l2p pages are translation pages as they are");

uint64_t
ftl_default_map_cache (uint64_t logical_bytes, uint32_t page_size)
{
  uint64_t lpages = (logical_bytes + page_size - 1) / page_size;

  return MIN (pmap_whole_bytes (lpages), FTL_MAX_DEFAULT_MAP_CACHE);
}

uint64_t
pmap_cache_bytes (const struct ftl_options *o, uint64_t logical_bytes,
                  uint32_t page_size)
{
  if (o->map_cache_bytes)
    return o->map_cache_bytes;
  if (o->map_cache_hmb)
    return o->map_cache_hmb;
  if (o->map_cache_per_tb)
    return MIN ((uint64_t) ((double) o->map_cache_per_tb
                            * (double) logical_bytes / 1e12),
                FTL_MAX_DEFAULT_MAP_CACHE);
  return ftl_default_map_cache (logical_bytes, page_size);
}

uint64_t
pmap_fit_cache (uint64_t logical_pages, uint32_t blocks, uint64_t ckpt_bytes,
                uint64_t cache, uint64_t limit)
{
  const char *what = "";

  if (limit == 0)
    limit = space_memory_limit (&what);
  /* Under ulimit -v, the threads' stacks and the allocator's arenas
   * count too: a quarter of it is left to them.
   */
  if (strcmp (what, "ulimit -v allows") == 0)
    limit -= limit / 4;
  /* What map_memory_check counts beside the cache. */
  while (cache > 16 * PMAP_GROUP_BYTES &&
         pmap_memory (logical_pages, blocks, cache) + (uint64_t) blocks * 64
         + ckpt_bytes > limit)
    cache /= 2;
  return cache;
}

uint64_t
pmap_whole_bytes (uint64_t logical_pages)
{
  return fmt_map_groups (logical_pages) * PMAP_GROUP_BYTES;
}

uint64_t
pmap_memory (uint64_t logical_pages, uint32_t blocks, uint64_t cache)
{
  /* The cache and the checks beside it, its copies in a checkpoint
   * (up to a quarter of it dirty, a translation page per group), and
   * the arrays per group and per block.
   */
  uint64_t groups = fmt_map_groups (logical_pages);
  return 2 * cache + cache / PMAP_GROUP_BYTES / 4 * FTL_TP_BYTES
    + groups * (4 + 1 + 4 + 8 + 8 + 16 + 4 + 4) + (uint64_t) blocks * 4;
}

uint64_t
pmap_ctr (struct ftl *ftl, enum pmap_counter c)
{
  return ftl->pm.on ? ftl_shard_sum (&ftl->pm.ctr[0].v[c],
                                     sizeof ftl->pm.ctr[0]) : 0;
}

int
pmap_init (struct ftl *ftl)
{
  struct pmap *pm = &ftl->pm;
  uint64_t groups = fmt_map_groups (ftl->logical_pages);

  pm->groups = groups;
  pm->gstate = calloc (groups, sizeof *pm->gstate);
  pm->ref = calloc (groups, 1);
  pm->dir = calloc (groups, sizeof *pm->dir);
  pm->dirseq = calloc (groups, sizeof *pm->dirseq);
  pm->sdir[0] = calloc (groups, sizeof *pm->sdir[0]);
  pm->sdir[1] = calloc (groups, sizeof *pm->sdir[1]);
  pm->sver[0] = calloc (groups, sizeof *pm->sver[0]);
  pm->sver[1] = calloc (groups, sizeof *pm->sver[1]);
  pm->tvalid = calloc (ftl->blocks, sizeof *pm->tvalid);
  if (!pm->gstate || !pm->ref || !pm->dir || !pm->dirseq || !pm->sdir[0] ||
      !pm->sdir[1] || !pm->sver[0] || !pm->sver[1] || !pm->tvalid)
    return -ENOMEM;
  pm->slot = malloc (groups * sizeof *pm->slot);
  pm->maxchunks = DIV_ROUND_UP (groups, PMAP_CHUNK);
  pm->chunk = calloc (pm->maxchunks, sizeof *pm->chunk);
  pm->free_slots = malloc ((size_t) pm->maxchunks * PMAP_CHUNK
                           * sizeof *pm->free_slots);
  if (!pm->slot || !pm->chunk || !pm->free_slots)
    return -ENOMEM;
  for (uint64_t g = 0; g < groups; g++)
    pm->slot[g] = PMAP_NO_SLOT;
  pthread_mutex_init (&pm->slot_lock, NULL);
  pthread_mutex_init (&pm->lock, NULL);
  pthread_mutex_init (&pm->evict_lock, NULL);
  for (unsigned i = 0; i < PMAP_LOCKS; i++)
    pthread_mutex_init (&pm->glock[i], NULL);
  if (pm->limit == 0)
    pm->limit = 1;
  pm->limit = MIN (pm->limit, groups);
  /* A quarter of the cache may be dirty: a checkpoint then writes
   * them back (copying them first: that much memory again, at most),
   * while the rest keeps serving.
   */
  pm->dirty_limit = MAX (pm->limit / 4, 1);
  ftl->mapf.kind = FRONTIER_MAP;
  ftl->mapf.block = FTL_NO_BLOCK;
  return 0;
}

void
pmap_free (struct ftl *ftl)
{
  struct pmap *pm = &ftl->pm;

  if (!pm->gstate)
    return;
  free (pm->gstate);
  free (pm->ref);
  free (pm->dir);
  free (pm->dirseq);
  free (pm->sdir[0]);
  free (pm->sdir[1]);
  free (pm->tvalid);
  free (pm->sver[0]);
  free (pm->sver[1]);
  for (uint32_t c = 0; c < pm->nchunks; c++)
    ftl_lazy_free (pm->chunk[c], (uint64_t) PMAP_CHUNK * 2 * FTL_TP_BYTES);
  free (pm->chunk);
  free (pm->slot);
  free (pm->free_slots);
  pthread_mutex_destroy (&pm->slot_lock);
  pthread_mutex_destroy (&pm->lock);
  pthread_mutex_destroy (&pm->evict_lock);
  for (unsigned i = 0; i < PMAP_LOCKS; i++)
    pthread_mutex_destroy (&pm->glock[i]);
  pm->gstate = NULL;
}

uint32_t pmap_no_check;          /* what a check of no slot reads: 0 */

/* A free slot (a new chunk of them when none is left: the cache may
 * hold more groups than its limit for a while, as long as they are
 * dirty or pinned; the chunks stay, at the high-water mark).
 */
static uint32_t
slot_take (struct ftl *ftl)
{
  struct pmap *pm = &ftl->pm;
  uint32_t s;

  pthread_mutex_lock (&pm->slot_lock);
  if (pm->nfree_slots == 0) {
    uint32_t *c = NULL;
    if (pm->nchunks < pm->maxchunks)
      c = ftl_lazy_alloc ((uint64_t) PMAP_CHUNK * 2 * FTL_TP_BYTES);
    if (!c) {
      /* Every group resident is the most there can be: never here. */
      log_msg (ftl, FTL_LOG_ERROR, "the map's cache cannot grow: %s",
               strerror (ENOMEM));
      abort ();
    }
    pm->chunk[pm->nchunks] = c;
    for (uint32_t i = PMAP_CHUNK; i-- > 0; )
      pm->free_slots[pm->nfree_slots++] = pm->nchunks * PMAP_CHUNK + i;
    pm->nchunks++;
  }
  s = pm->free_slots[--pm->nfree_slots];
  pthread_mutex_unlock (&pm->slot_lock);
  return s;
}

static void
slot_give (struct ftl *ftl, uint32_t s)
{
  struct pmap *pm = &ftl->pm;

  pthread_mutex_lock (&pm->slot_lock);
  pm->free_slots[pm->nfree_slots++] = s;
  pthread_mutex_unlock (&pm->slot_lock);
}

/* Read g's translation page into a slot (under its glock, not
 * resident), its checks unknown.  The page is checked against its OOB entry: a translation
 * page of g at the version the directory names.  GC may move it
 * meanwhile (its erase waits for a barrier, but the page may be gone
 * by the time it is read): then the directory has changed, and it is
 * read again.  A page that stays damaged loses the group: its mapped
 * pages read as errors (FTL_LOST).
 */
static void
load_group (struct ftl *ftl, uint64_t g)
{
  struct pmap *pm = &ftl->pm;
  struct media *m = &ftl->media;
  uint32_t s = slot_take (ftl);
  uint32_t *dst = pmap_slot_at (ftl, s, 0, false);
  uint64_t n = MIN (FTL_TP_ENTRIES, ftl->logical_pages - (g << FTL_TP_SHIFT));
  uint8_t *page = NULL;
  int r = -EIO;

  /* A slot never used reads as zeros and holds no memory (its chunk
   * is a lazy mapping): its checks are not written, so that they take
   * memory only once a read heals one (a roll forward loads many
   * groups and reads none).
   */
  memset (dst, 0, FTL_TP_BYTES);
  uint32_t *chk = pmap_slot_at (ftl, s, 0, true);
  if (!all_zero (chk, FTL_TP_BYTES))
    memset (chk, 0, FTL_TP_BYTES);
  __atomic_store_n (&pm->slot[g], s, __ATOMIC_RELEASE);

  for (int attempt = 0; attempt < 8; attempt++) {
    pthread_mutex_lock (&pm->lock);
    uint32_t ppn = ~pm->dir[g];
    uint64_t version = pm->dirseq[g];
    pthread_mutex_unlock (&pm->lock);
    if (ppn == FTL_UNMAPPED)
      return;                   /* never written back: all unmapped */
    if (!page && !(page = malloc (ftl->page_size)))
      break;
    uint32_t b = media_ppn_block (m, ppn), p = media_ppn_page (m, ppn);
    uint8_t oob[FTL_OOB_BYTES];
    struct ftl_oob o;
    r = media_read_oob (m, b, p, 1, oob);
    /* The data page it locates is read after it: in the timing model
     * too, even where the caller's reads are overlapped (deferred).
     */
    if (r == 0)
      r = media_read_now (m, ppn, 1, page);
    __atomic_fetch_add (&pm->read_pages, 1, __ATOMIC_RELAXED);
    if (r == 0 &&
        fmt_oob_decode (oob, sizeof oob, &o) == FTL_FMT_OK &&
        o.kind == FTL_OOB_MAP && o.lpn == g && o.seq == version &&
        o.erase_count == media_erase_count (m, b) &&
        fmt_checksum (page, ftl->page_size, oob_seed (ftl, &o, ppn))
        == o.data_checksum) {
      for (uint64_t i = 0; i < n; i++) {
        uint32_t v;
        memcpy (&v, page + 4 * i, 4);
        /* An entry beyond the device is damage the checksum missed. */
        if (~v != FTL_UNMAPPED && ~v != FTL_LOST &&
            ~v >= (uint64_t) ftl->blocks * ftl->ppb)
          v = ~FTL_LOST;
        dst[i] = v;
      }
      free (page);
      return;
    }
    pthread_mutex_lock (&pm->lock);
    bool moved = ~pm->dir[g] != ppn;
    pthread_mutex_unlock (&pm->lock);
    if (!moved)
      break;
  }
  free (page);
  log_msg (ftl, FTL_LOG_ERROR, "the translation page of logical pages %"
           PRIu64 "..%" PRIu64 " is damaged (%s): their mapped pages read "
           "as errors", g << FTL_TP_SHIFT, (g << FTL_TP_SHIFT) + n - 1,
           r < 0 ? strerror (-r) : "it fails its checks");
  /* Which of them were mapped is not known: all read as errors until
   * they are rewritten or trimmed.
   */
  for (uint64_t i = 0; i < n; i++)
    dst[i] = ~FTL_LOST;
}

void
pmap_pin (struct ftl *ftl, uint64_t g)
{
  struct pmap *pm = &ftl->pm;
  uint32_t *st = &pm->gstate[g];
  uint32_t v = __atomic_load_n (st, __ATOMIC_ACQUIRE);

  while ((v & (PMAP_RES | PMAP_EVICT)) == PMAP_RES)
    if (__atomic_compare_exchange_n (st, &v, v + 1, true, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
      if (!__atomic_load_n (&pm->ref[g], __ATOMIC_RELAXED))
        __atomic_store_n (&pm->ref[g], 1, __ATOMIC_RELAXED);
      pmap_count (ftl, PMAP_HITS, 1);
      return;
    }
  /* Not resident, or being evicted: under the glock neither can be. */
  pthread_mutex_t *l = &pm->glock[g % PMAP_LOCKS];
  bool loaded = false;
  pthread_mutex_lock (l);
  v = __atomic_load_n (st, __ATOMIC_ACQUIRE);
  assert (!(v & PMAP_EVICT));
  if (!(v & PMAP_RES)) {
    load_group (ftl, g);
    __atomic_fetch_add (&pm->resident, 1, __ATOMIC_RELAXED);
    loaded = true;
  }
  __atomic_fetch_add (st, (loaded ? PMAP_RES : 0) + 1, __ATOMIC_ACQ_REL);
  pthread_mutex_unlock (l);
  __atomic_store_n (&pm->ref[g], 1, __ATOMIC_RELAXED);
  pmap_count (ftl, loaded ? PMAP_MISSES : PMAP_HITS, 1);
  if (loaded)
    pmap_shrink (ftl);
}

bool
pmap_pin_if_resident (struct ftl *ftl, uint64_t g)
{
  uint32_t *st = &ftl->pm.gstate[g];
  uint32_t v = __atomic_load_n (st, __ATOMIC_ACQUIRE);

  while ((v & (PMAP_RES | PMAP_EVICT)) == PMAP_RES)
    if (__atomic_compare_exchange_n (st, &v, v + 1, true, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE))
      return true;
  return false;
}

void
pmap_unpin_dirty (struct ftl *ftl, uint64_t g)
{
  uint32_t v = __atomic_fetch_or (&ftl->pm.gstate[g], PMAP_DIRTY,
                                  __ATOMIC_ACQ_REL);
  if (!(v & PMAP_DIRTY))
    __atomic_fetch_add (&ftl->pm.dirty, 1, __ATOMIC_RELAXED);
  pmap_unpin (ftl, g);
}

uint32_t
pmap_load (struct ftl *ftl, uint64_t lpn)
{
  uint64_t g = lpn >> FTL_TP_SHIFT;
  uint32_t v;

  pmap_pin (ftl, g);
  v = ~__atomic_load_n (l2p_at (ftl, lpn), __ATOMIC_ACQUIRE);
  pmap_unpin (ftl, g);
  return v;
}

/* Evict g if it is resident, clean and unpinned. */
static bool
evict (struct ftl *ftl, uint64_t g)
{
  struct pmap *pm = &ftl->pm;
  uint32_t *st = &pm->gstate[g];
  pthread_mutex_t *l = &pm->glock[g % PMAP_LOCKS];
  uint32_t v = PMAP_RES;

  if (__atomic_load_n (st, __ATOMIC_RELAXED) != PMAP_RES)
    return false;
  pthread_mutex_lock (l);
  if (!__atomic_compare_exchange_n (st, &v, PMAP_RES | PMAP_EVICT, false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
    pthread_mutex_unlock (l);
    return false;
  }
  uint32_t slot = pm->slot[g];
  __atomic_store_n (&pm->slot[g], PMAP_NO_SLOT, __ATOMIC_RELEASE);
  __atomic_store_n (st, 0, __ATOMIC_RELEASE);
  slot_give (ftl, slot);
  __atomic_fetch_sub (&pm->resident, 1, __ATOMIC_RELAXED);
  pthread_mutex_unlock (l);
  pmap_count (ftl, PMAP_EVICTIONS, 1);
  return true;
}

/* Over the cache's limit, and some resident group may be clean: one
 * beside the group that the caller just loaded (pinned, clean) that is
 * neither dirty nor being written.  When none is, the hand would pass
 * every group of the map for nothing, at every miss: so did a roll
 * forward, which dirties each group it loads, on a disk of two million
 * groups (8 TiB).  A group dirtied while its page is written counts
 * twice here: then the cache stays over its limit until a miss after
 * the checkpoint.
 */
static bool
shrink_due (struct pmap *pm)
{
  uint64_t resident = __atomic_load_n (&pm->resident, __ATOMIC_RELAXED);

  return resident > pm->limit &&
    resident > __atomic_load_n (&pm->dirty, __ATOMIC_RELAXED)
    + __atomic_load_n (&pm->wb, __ATOMIC_RELAXED) + 1;
}

void
pmap_shrink (struct ftl *ftl)
{
  struct pmap *pm = &ftl->pm;

  if (!shrink_due (pm) || pthread_mutex_trylock (&pm->evict_lock) != 0)
    return;
  /* The clock: a group used since the hand last passed gets another
   * round.  Two sweeps at most: past them every resident group is
   * dirty, pinned or being written, and the checkpoint that the dirty
   * count makes due will clean them.
   */
  for (uint64_t steps = 0; steps < 2 * pm->groups && shrink_due (pm);
       steps++) {
    uint64_t g = pm->hand;
    pm->hand = g + 1 == pm->groups ? 0 : g + 1;
    pm->swept++;
    if (!(__atomic_load_n (&pm->gstate[g], __ATOMIC_RELAXED) & PMAP_RES))
      continue;
    if (__atomic_load_n (&pm->ref[g], __ATOMIC_RELAXED)) {
      __atomic_store_n (&pm->ref[g], 0, __ATOMIC_RELAXED);
      continue;
    }
    evict (ftl, g);
  }
  pthread_mutex_unlock (&pm->evict_lock);
}

