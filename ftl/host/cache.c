/* nbdkit-ftl: the write cache, a drive's DRAM buffer.
 *
 * Host writes complete once their pages are here; the destager
 * (destage.c) takes dirty pages in batches and writes them to the log
 * (write.c).  What is here and not yet in the log is volatile: a power
 * cut (or a killed server) loses it, as on a drive without power-loss
 * protection.
 *
 * Layout: nslots page buffers in one array, split into shards (a power
 * of 2, at most CACHE_SHARDS), each with its own mutex, an
 * open-addressing table from LPN to slot, a free list and a dirty list
 * ordered by last write (oldest first).  A logical page hashes to one
 * shard, so writers of different pages rarely meet on a lock.  One bit
 * per logical page (bits[]; on a large disk a counting filter, so that
 * memory follows the cache) says "maybe here": a reader whose bit is
 * clear goes to the log without taking any lock.
 *
 * A slot in use is in exactly one state:
 *   DIRTY    newer than the log; on the dirty list; ver is the global
 *            write counter at its last write (so the dirty list is
 *            sorted by ver);
 *   FLIGHT   picked by a destage batch, which programs it from the
 *            slot's buffer: its data must not change, so a writer of
 *            that page waits until the batch completes.
 *
 * Invariants (under the shard's lock):
 *   - a logical page is in at most one slot; bits[lpn] is set while it
 *     is, and cleared only after the slot leaves;
 *   - a slot leaves the cache only after its data is in the map (a
 *     completed destage), or when a trim drops it or a write past the
 *     cache supersedes it (under the stripe lock of its page, so that
 *     no batch programs it after the trim or the newer version: batches
 *     check cache_current under the same stripe locks);
 *   - so a reader that misses here finds in the map a version at least
 *     as new as the last one that left;
 *   - used = slots on the dirty list + slots in flight; dirty counts
 *     the DIRTY ones.
 *
 * Lock order: stripe locks -> shard lock -> flight_lock.  A thread never
 * waits for a slot while it holds a stripe lock.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl-internal.h"

#define NONE UINT32_MAX
enum { SLOT_DIRTY = 1, SLOT_FLIGHT = 2 };

uint64_t
ftl_default_write_cache (uint64_t logical_bytes)
{
  uint64_t b = logical_bytes / 1024;

  return MIN (MAX (b, FTL_MIN_WRITE_CACHE), FTL_MAX_DEFAULT_WRITE_CACHE);
}

static inline uint64_t
hash_lpn (uint64_t lpn)
{
  return lpn * UINT64_C (0x9E3779B97F4A7C15);
}

static inline struct cache_shard *
shard_of (struct cache *c, uint64_t lpn)
{
  return &c->shard[c->shard_bits ? hash_lpn (lpn) >> (64 - c->shard_bits)
                   : 0];
}

static inline uint32_t
table_home (const struct cache_shard *s, uint64_t lpn)
{
  return (hash_lpn (lpn) >> 17) & s->tmask;
}

/* "Maybe here": a bit per logical page while that costs at most
 * CACHE_BITS_MAX pages' worth (512 KiB: a 128 GiB disk); beyond, so
 * that its memory follows the cache and not the capacity, a counting
 * filter: a counter per hash of FILTER_SHIFT-aligned runs of pages, 64
 * counters per slot (a page not cached finds a counter of 0 but for 1
 * in 64 or so, which costs it a look in its shard).
 */
#define CACHE_BITS_MAX (UINT64_C (1) << 22)
#define FILTER_SHIFT 3
#define FILTER_PER_SLOT 64

static inline uint16_t *
filter_of (struct cache *c, uint64_t lpn)
{
  return &c->filter[hash_lpn (lpn >> FILTER_SHIFT) >> 32 & c->filter_mask];
}

static inline bool
bit_test (struct cache *c, uint64_t lpn)
{
  if (c->bits)
    return __atomic_load_n (&c->bits[lpn / 64], __ATOMIC_ACQUIRE)
      & (UINT64_C (1) << (lpn % 64));
  return __atomic_load_n (filter_of (c, lpn), __ATOMIC_ACQUIRE) != 0;
}

static inline void
bit_set (struct cache *c, uint64_t lpn)
{
  if (c->bits)
    __atomic_fetch_or (&c->bits[lpn / 64], UINT64_C (1) << (lpn % 64),
                       __ATOMIC_RELEASE);
  else
    __atomic_fetch_add (filter_of (c, lpn), 1, __ATOMIC_RELEASE);
}

static inline void
bit_clear (struct cache *c, uint64_t lpn)
{
  if (c->bits)
    __atomic_fetch_and (&c->bits[lpn / 64], ~(UINT64_C (1) << (lpn % 64)),
                        __ATOMIC_RELEASE);
  else {
    uint16_t v = __atomic_fetch_sub (filter_of (c, lpn), 1,
                                     __ATOMIC_RELEASE);
    assert (v > 0);
    (void) v;
  }
}

/* The bits of [lpn, lpn + span) (span <= 64 - lpn % 64), shifted down
 * to bit 0: with the filter, a run's pages all look present if any of
 * its counters is set.
 */
static inline uint64_t
bits_of (struct cache *c, uint64_t lpn, uint64_t span)
{
  uint64_t w = 0;

  if (c->bits)
    w = __atomic_load_n (&c->bits[lpn / 64], __ATOMIC_ACQUIRE) >> (lpn % 64);
  else
    for (uint64_t i = 0; i < span; ) {
      uint64_t run = MIN (span - i, (UINT64_C (1) << FILTER_SHIFT)
                          - ((lpn + i) & ((UINT64_C (1) << FILTER_SHIFT) - 1)));
      if (__atomic_load_n (filter_of (c, lpn + i), __ATOMIC_ACQUIRE))
        w |= ((UINT64_C (1) << run) - 1) << i;
      i += run;
    }
  if (span < 64)
    w &= (UINT64_C (1) << span) - 1;
  return w;
}

int
cache_init (struct ftl *ftl, uint64_t bytes)
{
  struct cache *c = &ftl->cache;
  uint32_t per;

  c->nslots = 0;
  if (bytes == 0 || ftl->readonly)
    return 0;
  if (bytes / ftl->page_size > UINT32_MAX / 4)
    return -EINVAL;
  c->nslots = MAX (bytes / ftl->page_size, 1);
  /* Shards of at least 16 slots each. */
  c->shard_bits = 0;
  while ((1u << c->shard_bits) < CACHE_SHARDS &&
         (c->nslots >> (c->shard_bits + 1)) >= 16)
    c->shard_bits++;
  unsigned ns = 1u << c->shard_bits;
  per = c->nslots / ns;
  c->nslots = per * ns;

  if (posix_memalign ((void **) &c->data, 4096,
                      (size_t) c->nslots << ftl->page_shift) != 0) {
    c->data = NULL;
    return -ENOMEM;
  }
  c->lpn = malloc (c->nslots * sizeof *c->lpn);
  c->ver = calloc (c->nslots, sizeof *c->ver);
  c->prev = malloc (c->nslots * sizeof *c->prev);
  c->next = malloc (c->nslots * sizeof *c->next);
  c->flags = calloc (c->nslots, 1);
  if (ftl->logical_pages <= CACHE_BITS_MAX * 8)
    c->bits = calloc (DIV_ROUND_UP (ftl->logical_pages, 64), sizeof *c->bits);
  else {
    uint64_t n = 1;
    while (n < (uint64_t) c->nslots * FILTER_PER_SLOT)
      n <<= 1;
    c->filter = calloc (n, sizeof *c->filter);
    c->filter_mask = n - 1;
  }
  c->shard = calloc (ns, sizeof *c->shard);
  if (!c->lpn || !c->ver || !c->prev || !c->next || !c->flags ||
      (!c->bits && !c->filter) || !c->shard)
    return -ENOMEM;
  for (unsigned i = 0; i < ns; i++) {
    struct cache_shard *s = &c->shard[i];
    uint32_t tsize = 1;
    while (tsize < 2 * per)
      tsize <<= 1;
    s->first = i * per;
    s->n = per;
    s->tmask = tsize - 1;
    s->table = malloc (tsize * sizeof *s->table);
    if (!s->table)
      return -ENOMEM;
    for (uint32_t j = 0; j < tsize; j++)
      s->table[j] = NONE;
    s->free_head = NONE;
    for (uint32_t j = per; j-- > 0; ) {
      c->next[s->first + j] = s->free_head;
      s->free_head = s->first + j;
    }
    s->dirty_head = s->dirty_tail = NONE;
    pthread_mutex_init (&s->lock, NULL);
    pthread_cond_init (&s->cond, NULL);
  }
  /* The destager starts at half full and stops at a quarter. */
  c->start = MAX (c->nslots / 2, 1);
  c->low = c->nslots / 4;
  pthread_mutex_init (&c->flight_lock, NULL);
  pthread_cond_init (&c->flight_cond, NULL);
  return 0;
}

void
cache_free (struct ftl *ftl)
{
  struct cache *c = &ftl->cache;

  if (c->shard) {
    for (unsigned i = 0; i < (1u << c->shard_bits); i++) {
      if (!c->shard[i].table)
        continue;
      free (c->shard[i].table);
      pthread_mutex_destroy (&c->shard[i].lock);
      pthread_cond_destroy (&c->shard[i].cond);
    }
    if (c->nslots) {
      pthread_mutex_destroy (&c->flight_lock);
      pthread_cond_destroy (&c->flight_cond);
    }
  }
  free (c->data);
  free (c->lpn);
  free (c->ver);
  free (c->prev);
  free (c->next);
  free (c->flags);
  free (c->bits);
  free (c->filter);
  c->bits = NULL;
  c->filter = NULL;
  free (c->shard);
  memset (c, 0, sizeof *c);
}

/* ---- the table and the lists (caller holds the shard's lock) ---- */

static uint32_t
lookup (struct cache *c, struct cache_shard *s, uint64_t lpn)
{
  for (uint32_t i = table_home (s, lpn); ; i = (i + 1) & s->tmask) {
    uint32_t slot = s->table[i];
    if (slot == NONE || c->lpn[slot] == lpn)
      return slot;
  }
}

static void
table_insert (struct cache *c, struct cache_shard *s, uint32_t slot)
{
  uint32_t i = table_home (s, c->lpn[slot]);

  while (s->table[i] != NONE)
    i = (i + 1) & s->tmask;
  s->table[i] = slot;
}

/* Remove by shifting later entries of the probe run back (no
 * tombstones: lookups stay short however long the cache runs).
 */
static void
table_remove (struct cache *c, struct cache_shard *s, uint32_t slot)
{
  uint32_t i = table_home (s, c->lpn[slot]);

  while (s->table[i] != slot)
    i = (i + 1) & s->tmask;
  for (uint32_t j = (i + 1) & s->tmask; s->table[j] != NONE;
       j = (j + 1) & s->tmask) {
    uint32_t h = table_home (s, c->lpn[s->table[j]]);
    /* Entry j may fill hole i if its home is not in (i, j]. */
    if (((j - h) & s->tmask) >= ((j - i) & s->tmask)) {
      s->table[i] = s->table[j];
      i = j;
    }
  }
  s->table[i] = NONE;
}

static void
dirty_unlink (struct cache *c, struct cache_shard *s, uint32_t slot)
{
  uint32_t p = c->prev[slot], n = c->next[slot];

  if (p == NONE) s->dirty_head = n; else c->next[p] = n;
  if (n == NONE) s->dirty_tail = p; else c->prev[n] = p;
}

static void
dirty_append (struct cache *c, struct cache_shard *s, uint32_t slot)
{
  c->prev[slot] = s->dirty_tail;
  c->next[slot] = NONE;
  if (s->dirty_tail == NONE) s->dirty_head = slot;
  else c->next[s->dirty_tail] = slot;
  s->dirty_tail = slot;
}

static void
dirty_prepend (struct cache *c, struct cache_shard *s, uint32_t slot)
{
  c->prev[slot] = NONE;
  c->next[slot] = s->dirty_head;
  if (s->dirty_head == NONE) s->dirty_tail = slot;
  else c->prev[s->dirty_head] = slot;
  s->dirty_head = slot;
}

/* A slot leaves the cache (DIRTY ones are unlinked by the caller). */
static void
slot_release (struct cache *c, struct cache_shard *s, uint32_t slot)
{
  table_remove (c, s, slot);
  bit_clear (c, c->lpn[slot]);
  c->flags[slot] = 0;
  c->next[slot] = s->free_head;
  s->free_head = slot;
  __atomic_fetch_sub (&s->used, 1, __ATOMIC_RELAXED);
}

static inline uint8_t *
slot_data (struct ftl *ftl, uint32_t slot)
{
  return ftl->cache.data + ((size_t) slot << ftl->page_shift);
}

const uint8_t *
cache_page (struct ftl *ftl, uint32_t slot)
{
  return slot_data (ftl, slot);
}

/* ---- the request side ---- */

static void
wait_shard (struct cache_shard *s)
{
  struct timespec ts;

  clock_gettime (CLOCK_REALTIME, &ts);
  ts.tv_nsec += 10 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  s->waiters++;
  pthread_cond_timedwait (&s->cond, &s->lock, &ts);
  s->waiters--;
}

int
cache_write (struct ftl *ftl, uint64_t lpn, uint32_t in, uint32_t len,
             const uint8_t *src)
{
  struct cache *c = &ftl->cache;
  struct cache_shard *s = shard_of (c, lpn);
  uint32_t slot;
  bool partial;
  int r = 0;

  assert (lpn < ftl->logical_pages && in + len <= ftl->page_size);
  dl_lock (&s->lock);
  for (;;) {
    slot = lookup (c, s, lpn);
    if (slot == NONE || !(c->flags[slot] & SLOT_FLIGHT))
      break;
    /* Being programmed from this buffer: wait for its batch. */
    if (dl_should_abort (&ftl->dl)) {
      r = -ETIMEDOUT;
      goto out;
    }
    uint64_t t = dl_stage_begin (FTL_STAGE_CACHE);
    wait_shard (s);
    dl_stage_end (t);
  }
  if (slot != NONE) {
    assert (c->flags[slot] == SLOT_DIRTY);
    dirty_unlink (c, s, slot);
    __atomic_fetch_add (&c->coalesced, 1, __ATOMIC_RELAXED);
  }
  else {
    if (s->free_head == NONE) {
      r = -EAGAIN;
      goto out;
    }
    slot = s->free_head;
    partial = in != 0 || len != ftl->page_size;
    if (partial) {
      /* A partial page: its other bytes come from the log.  Counted
       * in filling from before the map is read until the bit is set,
       * so that a trim racing with it drops what it inserts (see
       * cache_drop).
       */
      __atomic_add_fetch (&c->filling, 1, __ATOMIC_SEQ_CST);
      __atomic_thread_fence (__ATOMIC_SEQ_CST);
      r = read_pages (ftl, lpn, 1, slot_data (ftl, slot));
      if (r < 0) {
        __atomic_sub_fetch (&c->filling, 1, __ATOMIC_RELEASE);
        goto out;
      }
    }
    s->free_head = c->next[slot];
    __atomic_fetch_add (&s->used, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add (&s->dirty, 1, __ATOMIC_RELAXED);
    __atomic_fetch_add (&c->dirty, 1, __ATOMIC_RELAXED);
    c->lpn[slot] = lpn;
    c->flags[slot] = SLOT_DIRTY;
    table_insert (c, s, slot);
    bit_set (c, lpn);
    if (partial)
      __atomic_sub_fetch (&c->filling, 1, __ATOMIC_RELEASE);
  }
  if (src)
    memcpy (slot_data (ftl, slot) + in, src, len);
  else
    memset (slot_data (ftl, slot) + in, 0, len);
  c->ver[slot] = __atomic_add_fetch (&c->next_ver, 1, __ATOMIC_RELAXED);
  dirty_append (c, s, slot);
 out:
  pthread_mutex_unlock (&s->lock);
  return r;
}

unsigned
cache_shard_index (struct ftl *ftl, uint64_t lpn)
{
  return shard_of (&ftl->cache, lpn) - ftl->cache.shard;
}

bool
cache_wait_slot (struct ftl *ftl, unsigned shard)
{
  struct cache_shard *s = &ftl->cache.shard[shard];
  bool aborted;

  pthread_mutex_lock (&s->lock);
  aborted = dl_should_abort (&ftl->dl);
  if (!aborted && s->free_head == NONE)
    wait_shard (s);
  pthread_mutex_unlock (&s->lock);
  return !aborted;
}

bool
cache_read (struct ftl *ftl, uint64_t lpn, uint8_t *dst)
{
  struct cache *c = &ftl->cache;
  struct cache_shard *s;
  uint32_t slot;

  if (!bit_test (c, lpn))
    return false;
  s = shard_of (c, lpn);
  pthread_mutex_lock (&s->lock);
  slot = lookup (c, s, lpn);
  if (slot != NONE)
    memcpy (dst, slot_data (ftl, slot), ftl->page_size);
  pthread_mutex_unlock (&s->lock);
  if (slot != NONE)
    __atomic_fetch_add (&c->hits, 1, __ATOMIC_RELAXED);
  return slot != NONE;
}

bool
cache_holds (struct ftl *ftl, uint64_t lpn)
{
  return ftl->cache.nslots && bit_test (&ftl->cache, lpn);
}

uint64_t
cache_absent_run (struct ftl *ftl, uint64_t lpn, uint64_t n)
{
  struct cache *c = &ftl->cache;
  uint64_t i = 0;

  if (!c->nslots)
    return n;
  while (i < n) {
    uint64_t l = lpn + i;
    uint64_t span = MIN (64 - l % 64, n - i);
    uint64_t w = bits_of (c, l, span);
    if (w)
      return i + __builtin_ctzll (w);
    i += span;
  }
  return n;
}

/* Drop lpn's slot if it has one (caller holds its stripe lock). */
static bool
drop_one (struct cache *c, uint64_t lpn)
{
  struct cache_shard *s = shard_of (c, lpn);
  uint32_t slot;

  pthread_mutex_lock (&s->lock);
  slot = lookup (c, s, lpn);
  if (slot != NONE) {
    /* A batch that picked it checks cache_current before it programs
     * (under the stripe lock the caller holds) and skips it.
     */
    if (c->flags[slot] & SLOT_DIRTY) {
      dirty_unlink (c, s, slot);
      __atomic_fetch_sub (&s->dirty, 1, __ATOMIC_RELAXED);
      __atomic_fetch_sub (&c->dirty, 1, __ATOMIC_RELAXED);
    }
    slot_release (c, s, slot);
    pthread_cond_broadcast (&s->cond);
  }
  pthread_mutex_unlock (&s->lock);
  return slot != NONE;
}

/* The caller has unmapped the pages already.  A page whose bit is
 * clear is skipped without its shard lock, unless a partial write is
 * filling a page: it may have read the map before the caller unmapped
 * it and not have set its bit yet; then every page's lock is taken,
 * and what it inserted goes.  (Either that write counted itself in
 * filling before this load, or its read of the map comes after the
 * caller's unmap: the fences order the two.)
 */
uint64_t
cache_drop (struct ftl *ftl, uint64_t first, uint64_t end)
{
  struct cache *c = &ftl->cache;
  uint64_t n = 0;

  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  if (__atomic_load_n (&c->filling, __ATOMIC_SEQ_CST) != 0)
    return cache_supersede (ftl, first, end);
  for (uint64_t lpn = first; lpn < end; lpn++) {
    if (lpn % 64 == 0 && end - lpn >= 64 && bits_of (c, lpn, 64) == 0) {
      lpn += 63;
      continue;
    }
    if (bit_test (c, lpn))
      n += drop_one (c, lpn);
  }
  return n;
}

/* Unlike cache_drop, every page's shard lock is taken, bit set or not:
 * a partial write that misses reads the log's version and inserts the
 * merged page under that lock, before its bit is set.  Either it ran
 * before (its page goes here) or after (it read the map, which holds
 * the caller's new version already).
 */
uint64_t
cache_supersede (struct ftl *ftl, uint64_t first, uint64_t end)
{
  uint64_t n = 0;

  for (uint64_t lpn = first; lpn < end; lpn++)
    n += drop_one (&ftl->cache, lpn);
  return n;
}

/* ---- the destage side ---- */

/* Register a batch before it picks anything (min_ver 0: "may hold
 * anything"), so that a flush never misses pages in flight.
 */
static int
flight_register (struct cache *c)
{
  int t = -1;

  pthread_mutex_lock (&c->flight_lock);
  while (t < 0) {
    for (unsigned i = 0; i < CACHE_BATCHES; i++)
      if (!c->flight_used[i]) {
        c->flight_used[i] = true;
        c->flight_min[i] = 0;
        t = i;
        break;
      }
    if (t < 0)
      pthread_cond_wait (&c->flight_cond, &c->flight_lock);
  }
  pthread_mutex_unlock (&c->flight_lock);
  return t;
}

static void
flight_unregister (struct cache *c, int t)
{
  pthread_mutex_lock (&c->flight_lock);
  c->flight_used[t] = false;
  pthread_cond_broadcast (&c->flight_cond);
  pthread_mutex_unlock (&c->flight_lock);
}

static int
entry_cmp (const void *a, const void *b)
{
  const struct cache_entry *x = a, *y = b;
  return x->lpn < y->lpn ? -1 : x->lpn > y->lpn;
}

/* Move lpn's slot, if it is DIRTY, into flight as e[*n] (the shard's
 * lock is taken here).
 */
static bool
pick_lpn (struct ftl *ftl, uint64_t lpn, struct cache_entry *e, uint32_t *n,
          uint64_t *min_ver)
{
  struct cache *c = &ftl->cache;
  struct cache_shard *s;
  uint32_t slot;
  bool ok = false;

  if (lpn >= ftl->logical_pages || !bit_test (c, lpn))
    return false;
  s = shard_of (c, lpn);
  pthread_mutex_lock (&s->lock);
  slot = lookup (c, s, lpn);
  if (slot != NONE && c->flags[slot] == SLOT_DIRTY) {
    dirty_unlink (c, s, slot);
    __atomic_fetch_sub (&s->dirty, 1, __ATOMIC_RELAXED);
    __atomic_fetch_sub (&c->dirty, 1, __ATOMIC_RELAXED);
    c->flags[slot] = SLOT_FLIGHT;
    e[(*n)++] = (struct cache_entry) {
      .lpn = lpn, .ver = c->ver[slot], .slot = slot,
    };
    *min_ver = MIN (*min_ver, c->ver[slot]);
    ok = true;
  }
  pthread_mutex_unlock (&s->lock);
  return ok;
}

uint32_t
cache_pick (struct ftl *ftl, struct cache_entry *e, uint32_t max,
            uint64_t max_ver, int prefer, int *ticket)
{
  struct cache *c = &ftl->cache;
  unsigned ns = 1u << c->shard_bits;
  uint32_t n = 0, quota = MAX (DIV_ROUND_UP (max, ns), 16);
  uint64_t min_ver = UINT64_MAX;
  unsigned start = prefer >= 0 ? (unsigned) prefer
    : __atomic_fetch_add (&c->pick_shard, 1, __ATOMIC_RELAXED) % ns;

  *ticket = flight_register (c);
  for (unsigned k = 0; k < ns && n < max; k++) {
    struct cache_shard *s = &c->shard[(start + k) % ns];
    uint32_t take = k == 0 && prefer >= 0 ? max : quota;
    while (n < max && take > 0) {
      if (__atomic_load_n (&s->dirty, __ATOMIC_RELAXED) == 0)
        break;
      /* The oldest page of the shard... */
      pthread_mutex_lock (&s->lock);
      uint32_t slot = s->dirty_head;
      bool ok = slot != NONE && c->ver[slot] <= max_ver;
      uint32_t first = n;
      if (ok) {
        dirty_unlink (c, s, slot);
        __atomic_fetch_sub (&s->dirty, 1, __ATOMIC_RELAXED);
        __atomic_fetch_sub (&c->dirty, 1, __ATOMIC_RELAXED);
        c->flags[slot] = SLOT_FLIGHT;
        e[n++] = (struct cache_entry) {
          .lpn = c->lpn[slot], .ver = c->ver[slot], .slot = slot,
        };
        min_ver = MIN (min_ver, c->ver[slot]);
      }
      pthread_mutex_unlock (&s->lock);
      if (!ok)
        break;
      /* ... and the dirty pages logically next to it, whatever their
       * shard or age: data written in a run lands in a run on the media
       * and reads back with one call.
       */
      uint64_t lpn = e[first].lpn;
      for (uint64_t l = lpn + 1; n < max && pick_lpn (ftl, l, e, &n, &min_ver);
           l++)
        ;
      for (uint64_t l = lpn; n < max && l > 0 &&
             pick_lpn (ftl, l - 1, e, &n, &min_ver); l--)
        ;
      take -= MIN (take, n - first);
    }
  }
  if (n == 0) {
    flight_unregister (c, *ticket);
    *ticket = -1;
    return 0;
  }
  pthread_mutex_lock (&c->flight_lock);
  c->flight_min[*ticket] = min_ver;
  pthread_mutex_unlock (&c->flight_lock);
  /* Logical order: a run of consecutive pages lands on consecutive
   * physical pages and reads back with one call.
   */
  qsort (e, n, sizeof *e, entry_cmp);
  return n;
}

bool
cache_current (struct ftl *ftl, const struct cache_entry *e)
{
  struct cache *c = &ftl->cache;
  struct cache_shard *s = shard_of (c, e->lpn);
  bool ok;

  pthread_mutex_lock (&s->lock);
  ok = c->flags[e->slot] == SLOT_FLIGHT && c->lpn[e->slot] == e->lpn &&
    c->ver[e->slot] == e->ver;
  pthread_mutex_unlock (&s->lock);
  return ok;
}

void
cache_complete (struct ftl *ftl, struct cache_entry *e, uint32_t n,
                int ticket, int r)
{
  struct cache *c = &ftl->cache;
  uint64_t done = 0;

  for (uint32_t i = 0; i < n; i++) {
    struct cache_shard *s = shard_of (c, e[i].lpn);
    uint32_t slot = e[i].slot;
    pthread_mutex_lock (&s->lock);
    if (c->flags[slot] == SLOT_FLIGHT && c->lpn[slot] == e[i].lpn &&
        c->ver[slot] == e[i].ver) {
      if (e[i].done) {
        slot_release (c, s, slot);
        done++;
      }
      else {
        /* Not programmed (an error): dirty again, first in line. */
        c->flags[slot] = SLOT_DIRTY;
        dirty_prepend (c, s, slot);
        __atomic_fetch_add (&s->dirty, 1, __ATOMIC_RELAXED);
        __atomic_fetch_add (&c->dirty, 1, __ATOMIC_RELAXED);
      }
      pthread_cond_broadcast (&s->cond);
    }
    pthread_mutex_unlock (&s->lock);
  }
  __atomic_fetch_add (&c->destaged, done, __ATOMIC_RELAXED);
  if (r < 0)
    __atomic_store_n (&c->error, r, __ATOMIC_RELAXED);
  flight_unregister (c, ticket);
}

void
cache_wait_flights (struct ftl *ftl, uint64_t max_ver)
{
  struct cache *c = &ftl->cache;

  pthread_mutex_lock (&c->flight_lock);
  for (;;) {
    bool busy = false;
    for (unsigned i = 0; i < CACHE_BATCHES && !busy; i++)
      busy = c->flight_used[i] && c->flight_min[i] <= max_ver;
    if (!busy)
      break;
    pthread_cond_wait (&c->flight_cond, &c->flight_lock);
  }
  pthread_mutex_unlock (&c->flight_lock);
}

bool
cache_dirty_upto (struct ftl *ftl, uint64_t max_ver)
{
  struct cache *c = &ftl->cache;
  bool any = false;

  for (unsigned i = 0; i < (1u << c->shard_bits) && !any; i++) {
    struct cache_shard *s = &c->shard[i];
    pthread_mutex_lock (&s->lock);
    any = s->dirty_head != NONE && c->ver[s->dirty_head] <= max_ver;
    pthread_mutex_unlock (&s->lock);
  }
  return any;
}

uint64_t
cache_version (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->cache.next_ver, __ATOMIC_RELAXED);
}

/* The cache's members of st, and its pages in st->mapped_pages (which
 * the caller has set from the map).
 */
void
cache_get_stats (struct ftl *ftl, struct ftl_stats *st)
{
  struct cache *c = &ftl->cache;
  uint64_t used = 0;

  /* A cached page whose logical page the map does not hold yet holds
   * data all the same: mapped_pages counts it.
   */
  for (unsigned i = 0; c->nslots && i < (1u << c->shard_bits); i++) {
    struct cache_shard *s = &c->shard[i];
    pthread_mutex_lock (&s->lock);
    used += __atomic_load_n (&s->used, __ATOMIC_RELAXED);
    for (uint32_t slot = s->first; slot < s->first + s->n; slot++)
      if (c->flags[slot] && l2p_load (ftl, c->lpn[slot]) == FTL_UNMAPPED)
        st->mapped_pages++;
    pthread_mutex_unlock (&s->lock);
  }
  st->cache.size_bytes = (uint64_t) c->nslots << ftl->page_shift;
  st->cache.dirty_bytes = used << ftl->page_shift;
  st->cache.hits = __atomic_load_n (&c->hits, __ATOMIC_RELAXED);
  st->cache.coalesced_pages = __atomic_load_n (&c->coalesced,
                                               __ATOMIC_RELAXED);
  st->cache.destaged_pages = __atomic_load_n (&c->destaged, __ATOMIC_RELAXED);
  st->cache.dropped_pages = __atomic_load_n (&c->dropped, __ATOMIC_RELAXED);
  st->cache.flush_waits = __atomic_load_n (&c->flush_waits, __ATOMIC_RELAXED);
  st->cache.write_waits = __atomic_load_n (&c->write_waits, __ATOMIC_RELAXED);
  st->cache.bypassed_pages = __atomic_load_n (&c->bypassed, __ATOMIC_RELAXED);
  st->cache.destage_stalls = __atomic_load_n (&c->destage_stalls,
                                              __ATOMIC_RELAXED);
  st->cache.destage_stall_ns = __atomic_load_n (&c->destage_stall_ns,
                                                __ATOMIC_RELAXED);
}
