/* nbdkit-ftl: host data into the log.
 *
 *   write_through    a write straight to the log (no write cache, or
 *                  write-cache=0): its whole pages hashed with no
 *                  lock held (LPN seeds) -> stripe locks of its range
 *                  -> host frontier -> alloc_frontier_open (a free block,
 *                  leaving the reserve) -> alloc_program: OOB entries,
 *                  media_program, map_install;
 *   write_bypass   a large write of whole pages with a write cache:
 *                  as write_through, and after each program, still
 *                  under the stripe locks (which GC may make it let go
 *                  between programs), the cache's copies of the pages
 *                  just programmed leave it (cache_supersede), in
 *                  flight or not.  A destage batch holds the stripe
 *                  locks of its pages from its check (cache_current) to
 *                  its map updates, so for each page it either ran
 *                  wholly before the new version's program (and is
 *                  overwritten) or finds its copy gone and skips it: an
 *                  older cached version never lands in the log after
 *                  the newer one.  A page that a failed write did not
 *                  program keeps what the cache or the log held;
 *   write_cached   a batch of the write cache's pages, any logical
 *                  pages: the stripe locks of all of them, shared (no
 *                  other batch holds these pages: map.c), then per
 *                  temperature one frontier; each page is checked to be
 *                  still the cache's (not trimmed meanwhile) under those
 *                  locks, just before it is programmed from the cache's
 *                  buffer;
 *   write_unmap    trim: stripe locks -> trimlog_append (recorded
 *                  first) -> drop cached versions -> map_unmap; a
 *                  record that finds no block for its page changes
 *                  nothing and is tried again after GC;
 *   write_barrier  trim records written, then a sync.
 *
 * When a frontier needs a block and free blocks are low, the writer
 * drops its stripe and frontier locks, collects garbage (gc_make_room,
 * gc.c), and takes them again.  Each run of pages gets its sequence
 * numbers and its map updates under one hold of the stripe locks, so
 * that the map and the log agree on the order of writes to a logical
 * page.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

static void
stripes_lock (struct ftl *ftl, uint64_t mask, bool shared)
{
  if (shared)
    map_lock_mask_shared (ftl, mask);
  else
    map_lock_mask (ftl, mask);
}

/* Make sure the writer's host frontier *fp has an open erase block.
 * The caller holds the stripe locks in mask (shared: as a destage batch
 * does) and the frontier's lock; when free blocks are low they are
 * released while garbage is collected, then taken again.  A hot
 * frontier drained since separation stopped opens nothing: the writer
 * goes on at its stream's cold frontier (*fp changes; the hot one's
 * lock is let go first, as no writer holds two frontier locks).
 */
static int
host_frontier_ready (struct ftl *ftl, struct frontier **fp, uint64_t mask,
                     bool shared)
{
  struct frontier *f = *fp;
  bool collected = false;
  int r;

  while (f->block == FTL_NO_BLOCK) {
    if (alloc_frontier_drained (ftl, f)) {
      pthread_mutex_unlock (&f->lock);
      *fp = f = alloc_host_frontier (ftl, false, f->group);
      dl_lock (&f->lock);
      continue;
    }
    if (collected || alloc_nfree (ftl) > ftl->gc.low) {
      r = alloc_frontier_open (ftl, f, ALLOC_HOST);
      if (r == 0) {
        /* The background erases ahead of need up to its drain target,
         * a batch at a time.
         */
        if (ftl_bell_listening (&ftl->bell)
            && alloc_nfree (ftl) <= ftl->gc.drain_ring)
          ftl_bell_ring (&ftl->bell);
        break;
      }
      if (r != -ENOSPC)
        return r;
    }
    pthread_mutex_unlock (&f->lock);
    map_unlock_mask (ftl, mask);
    /* First as usual at the low watermark; if the host still cannot
     * get a block above the reserve, up to the reserve or fail.
     */
    r = gc_make_room (ftl, collected);
    stripes_lock (ftl, mask, shared);
    dl_lock (&f->lock);
    if (r < 0)
      return r;
    collected = true;
  }
  return 0;
}

/* Program n whole pages for lpn.. at frontier f (caller holds f's lock,
 * the stripe locks in mask and ckpt_rw shared).  With supersede, the
 * write cache's copies of each program's pages leave it at once, before
 * host_frontier_ready may let the stripe locks go for GC: a destage
 * batch that takes them then finds its older copies gone.
 */
static int
write_pages (struct ftl *ftl, struct frontier **fp, uint64_t mask,
             uint64_t lpn, uint64_t n, const uint8_t *data,
             const uint64_t *sums, bool supersede)
{
  struct log_page pages[ALLOC_PROGRAM_MAX];

  while (n > 0) {
    int r = host_frontier_ready (ftl, fp, mask, false);
    if (r < 0)
      return r;
    struct frontier *f = *fp;
    uint32_t k = MIN (n, alloc_frontier_room (ftl, f));
    k = MIN (k, ALLOC_PROGRAM_MAX);
    int slot;
    uint64_t seq = seq_reserve (ftl, k, &slot);
    for (uint32_t i = 0; i < k; i++)
      pages[i] = (struct log_page) {
        .kind = FTL_OOB_DATA, .lpn = lpn + i, .seq = seq + i,
        .from = FTL_UNMAPPED,
        .has_sum = sums != NULL, .sum = sums ? sums[i] : 0,
      };
    r = alloc_program (ftl, f, pages, k, data, NULL);
    seq_release (ftl, slot);
    if (r < 0)
      return r;
    if (supersede)
      __atomic_fetch_add (&ftl->cache.coalesced,
                          cache_supersede (ftl, lpn, lpn + k),
                          __ATOMIC_RELAXED);
    /* Part of the request is in the map: from now on an abort only
     * changes its reply (all or nothing).
     */
    dl_commit ();
    lpn += k;
    n -= k;
    data += (size_t) k << ftl->page_shift;
    if (sums)
      sums += k;
  }
  return 0;
}

/* The checksums of the n whole pages at data for lpn.., computed before
 * any lock is taken: seeded by LPN (format version 7), a page's checksum
 * does not depend on where it lands, and the request's buffer does not
 * change.  Hashing under the frontier's lock made a stream's writers
 * queue behind each other's hashing as well as behind their programs.
 * Returns NULL (the pages are hashed in alloc_programv, with their PPN
 * if the image seeds by it) for older images, or without memory; a
 * result other than stack is the caller's to free.
 */
static uint64_t *
hash_pages (struct ftl *ftl, uint64_t lpn, uint64_t n, const uint8_t *data,
            uint64_t *stack, size_t stack_n)
{
  uint64_t *sums;

  if (!seeds_by_lpn (ftl) || n == 0)
    return NULL;
  sums = n <= stack_n ? stack : malloc (n * sizeof *sums);
  if (!sums)
    return NULL;
  for (uint64_t i = 0; i < n; i++)
    sums[i] = data_sum (ftl, lpn + i, data + (i << ftl->page_shift));
  return sums;
}

static int
write_range (struct ftl *ftl, const uint8_t *buf, uint64_t count,
             uint64_t offset, bool drop_cached)
{
  uint64_t pos = offset, end = offset + count;
  uint64_t first = offset >> ftl->page_shift;
  uint64_t last = (end - 1) >> ftl->page_shift;
  struct alloc_hits hits = { 0 };
  struct frontier *f =
    alloc_host_frontier (ftl, alloc_range_is_hot (ftl, first, last, &hits),
                         place_host_group (ftl, first));
  uint64_t mask = map_stripe_mask (first, last);
  uint8_t *bounce = NULL;
  int r = 0;
  /* The whole pages of the range: [whole, whole + nwhole). */
  uint64_t whole = DIV_ROUND_UP (offset, ftl->page_size);
  uint64_t nwhole = buf && end >> ftl->page_shift > whole ?
    (end >> ftl->page_shift) - whole : 0;
  uint64_t stack[ALLOC_PROGRAM_MAX];
  uint64_t *sums = hash_pages (ftl, whole, nwhole,
                               buf ? buf + ((whole << ftl->page_shift)
                                            - offset) : NULL,
                               stack, ALLOC_PROGRAM_MAX);

  alloc_hits_add (ftl, &hits);
  map_lock_mask (ftl, mask);
  dl_lock (&f->lock);
  while (pos < end) {
    uint64_t lpn = pos >> ftl->page_shift;
    uint32_t in = pos & (ftl->page_size - 1);
    if (buf && in == 0 && end - pos >= ftl->page_size) {
      uint64_t n = (end - pos) >> ftl->page_shift;
      assert (lpn == whole && n == nwhole);
      r = write_pages (ftl, &f, mask, lpn, n, buf + (pos - offset),
                       sums, drop_cached);
      if (r < 0) break;
      pos += n << ftl->page_shift;
    }
    else {
      /* Read-modify-write of one page, under its stripe lock. */
      uint32_t len = MIN (ftl->page_size - in, end - pos);
      if (!bounce && !(bounce = malloc (ftl->page_size))) {
        r = -ENOMEM;
        break;
      }
      r = read_pages (ftl, lpn, 1, bounce);
      if (r < 0) break;
      if (buf)
        memcpy (bounce + in, buf + (pos - offset), len);
      else
        memset (bounce + in, 0, len);
      assert (!drop_cached);
      r = write_pages (ftl, &f, mask, lpn, 1, bounce, NULL, false);
      if (r < 0) break;
      pos += len;
    }
  }
  pthread_mutex_unlock (&f->lock);
  map_unlock_mask (ftl, mask);
  free (bounce);
  if (sums != stack)
    free (sums);
  return r;
}

/* A range of the device that spans namespaces (ftl_write, not
 * ftl_ns_write) in pieces of one namespace each, when namespaces have
 * host frontiers of their own (placement, log/state.h).
 */
static int
write_split (struct ftl *ftl, const uint8_t *buf, uint64_t count,
             uint64_t offset, bool drop_cached)
{
  const struct place *p = &ftl->place;

  while (count > 0) {
    uint64_t lpn = offset >> ftl->page_shift, next = UINT64_MAX;
    for (unsigned i = 0; i < p->nns; i++)
      if (p->first[i] > lpn && p->first[i] < next)
        next = p->first[i];
    if (next == UINT64_MAX || (next << ftl->page_shift) >= offset + count)
      break;
    uint64_t n = (next << ftl->page_shift) - offset;
    int r = write_range (ftl, buf, n, offset, drop_cached);
    if (r < 0)
      return r;
    if (buf)
      buf += n;
    offset += n;
    count -= n;
  }
  return write_range (ftl, buf, count, offset, drop_cached);
}

int
write_through (struct ftl *ftl, const uint8_t *buf, uint64_t count,
               uint64_t offset)
{
  if (__builtin_expect (ftl->place.host_groups > 1, 0))
    return write_split (ftl, buf, count, offset, false);
  return write_range (ftl, buf, count, offset, false);
}

int
write_bypass (struct ftl *ftl, const uint8_t *buf, uint64_t count,
              uint64_t offset)
{
  assert (buf && (offset & (ftl->page_size - 1)) == 0 &&
          (count & (ftl->page_size - 1)) == 0);
  if (__builtin_expect (ftl->place.host_groups > 1, 0))
    return write_split (ftl, buf, count, offset, true);
  return write_range (ftl, buf, count, offset, true);
}

int
write_cached (struct ftl *ftl, struct cache_entry *e, uint32_t n)
{
  struct log_page pages[ALLOC_PROGRAM_MAX];
  const uint8_t *ptrs[ALLOC_PROGRAM_MAX];
  uint32_t idx[ALLOC_PROGRAM_MAX];
  uint8_t hot[ALLOC_PROGRAM_MAX];   /* its temperature, + 2 * group */
  uint64_t sum[ALLOC_PROGRAM_MAX];
  /* Seeded by LPN, a checksum does not depend on where the page goes:
   * it is computed here, before the locks (a page in flight does not
   * change).  Else alloc_programv computes it with the PPN.
   */
  bool by_lpn = seeds_by_lpn (ftl);
  struct alloc_hits hits = { 0 };
  uint64_t mask = 0;
  int r = 0;

  assert (n <= ALLOC_PROGRAM_MAX);
  for (uint32_t i = 0; i < n; i++) {
    mask |= map_stripe_mask (e[i].lpn, e[i].lpn);
    hot[i] = alloc_range_is_hot (ftl, e[i].lpn, e[i].lpn, &hits)
      + 2 * place_host_group (ftl, e[i].lpn);
    if (by_lpn)
      sum[i] = data_sum (ftl, e[i].lpn, cache_page (ftl, e[i].slot));
  }
  alloc_hits_add (ftl, &hits);
  map_lock_mask_shared (ftl, mask);
  /* Per placement group and temperature, one frontier each. */
  for (unsigned temp = 0; temp < 2 * MAX (ftl->place.host_groups, 1) &&
         r == 0; temp++) {
    uint32_t cnt = 0, i = 0;
    for (uint32_t j = 0; j < n; j++)
      if (hot[j] == temp)
        idx[cnt++] = j;
    if (cnt == 0)
      continue;
    struct frontier *f = alloc_host_frontier (ftl, temp % 2, temp / 2);
    pthread_mutex_lock (&f->lock);
    while (i < cnt) {
      r = host_frontier_ready (ftl, &f, mask, true);
      if (r < 0)
        break;
      uint32_t room = MIN (alloc_frontier_room (ftl, f), ALLOC_PROGRAM_MAX);
      uint32_t k = 0, first = i;
      for (; i < cnt && k < room; i++) {
        struct cache_entry *x = &e[idx[i]];
        if (!cache_current (ftl, x))
          continue;             /* trimmed since it was picked */
        pages[k] = (struct log_page) {
          .kind = FTL_OOB_DATA, .lpn = x->lpn, .from = FTL_UNMAPPED,
          .has_sum = by_lpn, .sum = by_lpn ? sum[idx[i]] : 0,
        };
        ptrs[k++] = cache_page (ftl, x->slot);
      }
      if (k == 0)
        continue;
      int slot;
      uint64_t seq = seq_reserve (ftl, k, &slot);
      for (uint32_t j = 0; j < k; j++)
        pages[j].seq = seq + j;
      r = alloc_programv (ftl, f, pages, k, ptrs, NULL);
      seq_release (ftl, slot);
      if (r < 0)
        break;
      for (uint32_t j = first; j < i; j++)
        e[idx[j]].done = true;
    }
    pthread_mutex_unlock (&f->lock);
  }
  map_unlock_mask (ftl, mask);
  return r;
}

/* Unmap [lpn, lpn+n) under its stripe locks, the trim record first.
 * When the record cannot be appended (-ENOSPC: no block for its page)
 * nothing changes, in the map or in the write cache.
 */
static int
unmap_range (struct ftl *ftl, uint64_t lpn, uint64_t n)
{
  bool any = false;
  int r = 0;

  map_lock (ftl, lpn, lpn + n - 1);
  for (uint64_t l = lpn; l < lpn + n && !any; l++)
    any = l2p_load (ftl, l) != FTL_UNMAPPED;
  /* Logged before unmapping: see ftl-internal.h. */
  if (any)
    r = trimlog_append (ftl, lpn, n);
  if (r == 0) {
    if (any)
      for (uint64_t l = lpn; l < lpn + n; l++)
        map_unmap (ftl, l);
    /* Cached versions go too, after the map (so that a partial write
     * filling a page from the log meanwhile reads the unmapped page,
     * or is dropped): no batch programs them after this.
     */
    if (ftl->cache.nslots)
      __atomic_fetch_add (&ftl->cache.dropped, cache_drop (ftl, lpn, lpn + n),
                          __ATOMIC_RELAXED);
  }
  map_unlock (ftl, lpn, lpn + n - 1);
  return r;
}

int
write_unmap (struct ftl *ftl, uint64_t lpn, uint64_t n)
{
  bool urgent = false;
  int r;

  if (n == 0)
    return 0;
  /* The trim record may need a block for its page: collect first,
   * without locks, as usual at the low watermark; if the record still
   * finds no block, down to the reserve (or fail), and try again.
   */
  do {
    dl_hold ();
    r = gc_make_room (ftl, urgent);
    dl_release ();
    if (r < 0)
      return r;
    r = unmap_range (ftl, lpn, n);
    urgent = true;
  } while (r == -ENOSPC);
  if (r == 0)
    ctr_add (ftl, FTL_CTR_HOST_TRIM, n);
  return r;
}

/* Writing buffered trim records and checkpoints is work done for
 * everybody: the deadline of the request that happens to do it does
 * not interrupt it (deadline.h), only the sync after it.
 */
int
write_barrier (struct ftl *ftl)
{
  int r;

  /* Buffered trim records find no room only after a failed program
   * (trimlog.c), when no block was free above the reserve: collect,
   * then try again.
   */
  for (bool urgent = false; ; urgent = true) {
    r = trimlog_barrier (ftl, NULL);
    if (r != -ENOSPC || urgent)
      break;
    dl_hold ();
    r = gc_make_room (ftl, true);
    dl_release ();
    if (r < 0)
      break;
  }
  /* The barrier covers the victims that wait for their erase: erase
   * them now, with no sync of their own, unless garbage collection is
   * busy (it erases them itself before it syncs or collects again).
   * Collecting is left to the writers and the background thread: here
   * it would take a sync of its own before the client's flush returns.
   */
  if (r == 0)
    r = gc_erase_covered (ftl);
  return r < 0 ? r : 0;
}
