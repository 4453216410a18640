/* nbdkit-ftl: the request path: read, write, trim, zero, flush and
 * extents.
 *
 * A write flows one way, and takes its locks in the documented order
 * (ftl-internal.h):
 *
 *   ftl_write -> deadline ticket -> ckpt_rw shared
 *     -> stripe locks of its range -> host frontier lock
 *     -> alloc_frontier_open (a free block, leaving the reserve)
 *     -> alloc_program: OOB entries, media_program, map_install
 *
 *   When the frontier needs a block and free blocks are low, the write
 *   drops its stripe and frontier locks, collects garbage
 *   (gc_make_room, gc.c), and takes them again.  Each run of pages gets
 *   its sequence numbers and its map updates under one hold of the
 *   stripe locks, so that the map and the log agree on the order of
 *   writes to a logical page.
 *
 *   ftl_trim, ftl_zero -> gc_make_room -> stripe locks
 *     -> trimlog_append (recorded first) -> map_unmap
 *
 *   ftl_flush -> gc_make_room -> trimlog_barrier (trim records written,
 *     then a sync)
 *
 *   ftl_read -> l2p (atomic load, no lock) -> media_read + the pages'
 *     OOB entries (checksum, LPN, erase count), validated by the erase
 *     block's generation: if GC erased the block meanwhile, look again.
 *
 * No function here is called by a lower module, except
 * request_read_pages (read-modify-write of partial pages).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

/* Longest run of pages read with one call (bounds the OOB buffer). */
#define READ_RUN_MAX 128

static void ckpt_maybe_held (struct ftl *ftl);

bool
ftl_is_read_only (struct ftl *ftl)
{
  return ftl->readonly || wl_worn_out (ftl);
}


static int
check_range (struct ftl *ftl, uint64_t count, uint64_t offset)
{
  if (offset > ftl->logical_bytes || count > ftl->logical_bytes - offset) {
    log_msg (ftl, FTL_LOG_ERROR, "request beyond the end of the disk "
             "(offset %" PRIu64 ", count %" PRIu64 ")", offset, count);
    return -EINVAL;
  }
  return 0;
}

/* Read a run of logical pages that map to consecutive physical pages of
 * one block.  Returns -EAGAIN if the block was erased meanwhile.
 */
static int
read_run (struct ftl *ftl, uint64_t lpn, uint32_t ppn, uint32_t n,
          uint8_t *buf)
{
  struct media *m = &ftl->media;
  uint32_t blk = media_ppn_block (m, ppn);
  uint8_t oob[READ_RUN_MAX * FTL_OOB_BYTES];
  uint32_t gen, ec;
  int r;

  /* One block, at most READ_RUN_MAX pages (the OOB buffer). */
  assert (n >= 1 && n <= READ_RUN_MAX);
  assert (media_ppn_page (m, ppn) + n <= ftl->ppb);
  gen = media_block_gen (m, blk);
  if (l2p_load (ftl, lpn) != ppn)
    return -EAGAIN;
  r = media_read (m, ppn, n, buf);
  if (r == 0)
    r = media_read_oob (m, blk, media_ppn_page (m, ppn), n, oob);
  /* The erase count must be taken before the generation is checked
   * again: an erase that starts after that check would otherwise make
   * a good read look like a stale page.
   */
  ec = media_erase_count_acquire (m, blk);
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  if (media_block_gen (m, blk) != gen)
    return -EAGAIN;
  if (r < 0) {
    if (r != -ETIMEDOUT)
      log_msg (ftl, FTL_LOG_ERROR, "reading erase block %u: %s", blk,
               strerror (-r));
    return r;
  }
  for (uint32_t i = 0; i < n; i++) {
    struct ftl_oob o;
    const uint8_t *p = buf + ((size_t) i << ftl->page_shift);
    enum ftl_fmt_status s = fmt_oob_decode (oob + i * FTL_OOB_BYTES,
                                            FTL_OOB_BYTES, &o);
    if (s != FTL_FMT_OK || o.kind != FTL_OOB_DATA || o.lpn != lpn + i ||
        o.erase_count != ec ||
        o.data_checksum != fmt_checksum (p, ftl->page_size, ppn + i)) {
      log_msg (ftl, FTL_LOG_ERROR, "logical page %" PRIu64 ": page %u of "
               "erase block %u is damaged (%s)", lpn + i,
               media_ppn_page (m, ppn + i), blk,
               s != FTL_FMT_OK ? fmt_status_string (s) :
               o.kind != FTL_OOB_DATA ? "it holds trim records" :
               o.lpn != lpn + i ? "it belongs to another logical page" :
               o.erase_count != ec ?
               "it was written before the block's last erase" :
               "data checksum mismatch");
      return -EIO;
    }
  }
  return 0;
}

int
request_read_pages (struct ftl *ftl, uint64_t lpn, uint32_t n, uint8_t *buf)
{
  uint32_t i = 0;

  while (i < n) {
    uint8_t *p = buf + ((size_t) i << ftl->page_shift);
    uint32_t ppn = l2p_load (ftl, lpn + i);
    if (ppn == FTL_UNMAPPED) {
      memset (p, 0, ftl->page_size);
      i++;
      continue;
    }
    uint32_t room = ftl->ppb - media_ppn_page (&ftl->media, ppn);
    uint32_t run = 1;
    while (i + run < n && run < room && run < READ_RUN_MAX &&
           l2p_load (ftl, lpn + i + run) == ppn + run)
      run++;
    int r = read_run (ftl, lpn + i, ppn, run, p);
    if (r == -EAGAIN)
      continue;                 /* the map moved under us: look again */
    if (r < 0)
      return r;
    i += run;
  }
  return 0;
}

static int
do_read (struct ftl *ftl, void *buf, uint64_t count, uint64_t offset)
{
  uint64_t pos = offset, end = offset + count;
  uint8_t *out = buf;
  uint8_t *bounce = NULL;
  int r;

  r = check_range (ftl, count, offset);
  if (r < 0)
    return r;
  while (pos < end) {
    uint64_t lpn = pos >> ftl->page_shift;
    uint32_t in = pos & (ftl->page_size - 1);
    if (in == 0 && end - pos >= ftl->page_size) {
      uint64_t n = MIN ((end - pos) >> ftl->page_shift, UINT32_MAX);
      r = request_read_pages (ftl, lpn, n, out);
      if (r < 0) goto out;
      out += n << ftl->page_shift;
      pos += n << ftl->page_shift;
    }
    else {
      uint32_t len = MIN (ftl->page_size - in, end - pos);
      if (!bounce && !(bounce = malloc (ftl->page_size))) {
        r = -ENOMEM;
        goto out;
      }
      r = request_read_pages (ftl, lpn, 1, bounce);
      if (r < 0) goto out;
      memcpy (out, bounce + in, len);
      out += len;
      pos += len;
    }
  }
  ctr_add (ftl, FTL_CTR_HOST_READ, DIV_ROUND_UP (count, ftl->page_size));
 out:
  free (bounce);
  return r;
}

/* Make sure host frontier f has an open erase block.  The caller holds
 * the stripe locks of [first, last] and f's lock; when free blocks are
 * low they are released while garbage is collected, then taken again.
 */
static int
host_frontier_ready (struct ftl *ftl, struct frontier *f, uint64_t first,
                     uint64_t last)
{
  bool collected = false;
  int r;

  while (f->block == FTL_NO_BLOCK) {
    if (collected || alloc_nfree (ftl) > ftl->gc.low) {
      r = alloc_frontier_open (ftl, f, FTL_RESERVE_BLOCKS);
      if (r == 0) {
        bg_kick (ftl);
        break;
      }
      if (r != -ENOSPC)
        return r;
    }
    pthread_mutex_unlock (&f->lock);
    map_unlock (ftl, first, last);
    /* First as usual at the low watermark; if the host still cannot
     * get a block above the reserve, up to the reserve or fail.
     */
    r = gc_make_room (ftl, collected);
    map_lock (ftl, first, last);
    pthread_mutex_lock (&f->lock);
    if (r < 0)
      return r;
    collected = true;
  }
  return 0;
}

/* Program n whole pages for lpn.. at frontier f (caller holds f's lock,
 * the stripe locks of [first, last] and ckpt_rw shared).
 */
static int
write_pages (struct ftl *ftl, struct frontier *f, uint64_t first,
             uint64_t last, uint64_t lpn, uint64_t n, const uint8_t *data)
{
  struct log_page pages[ALLOC_PROGRAM_MAX];

  while (n > 0) {
    int r = host_frontier_ready (ftl, f, first, last);
    if (r < 0)
      return r;
    uint32_t k = MIN (n, alloc_frontier_room (ftl, f));
    k = MIN (k, ALLOC_PROGRAM_MAX);
    uint64_t seq = __atomic_fetch_add (&ftl->next_seq, k, __ATOMIC_RELAXED);
    for (uint32_t i = 0; i < k; i++)
      pages[i] = (struct log_page) {
        .kind = FTL_OOB_DATA, .lpn = lpn + i, .seq = seq + i,
        .from = FTL_UNMAPPED,
      };
    r = alloc_program (ftl, f, pages, k, data, NULL);
    if (r < 0)
      return r;
    /* Part of the request is in the map: from now on an abort only
     * changes its reply (all or nothing).
     */
    dl_commit ();
    ctr_add (ftl, FTL_CTR_HOST_WRITE, k);
    lpn += k;
    n -= k;
    data += (size_t) k << ftl->page_shift;
  }
  return 0;
}

/* Write [offset, offset+count) from buf, or zeros if buf is NULL (used by
 * zero for partial pages).  Caller holds ckpt_rw shared.
 */
static int
write_range (struct ftl *ftl, const uint8_t *buf, uint64_t count,
             uint64_t offset)
{
  uint64_t pos = offset, end = offset + count;
  uint64_t first = offset >> ftl->page_shift;
  uint64_t last = (end - 1) >> ftl->page_shift;
  struct frontier *f =
    alloc_host_frontier (ftl, alloc_range_is_hot (ftl, first, last));
  uint8_t *bounce = NULL;
  int r = 0;

  map_lock (ftl, first, last);
  pthread_mutex_lock (&f->lock);
  while (pos < end) {
    uint64_t lpn = pos >> ftl->page_shift;
    uint32_t in = pos & (ftl->page_size - 1);
    if (buf && in == 0 && end - pos >= ftl->page_size) {
      uint64_t n = (end - pos) >> ftl->page_shift;
      r = write_pages (ftl, f, first, last, lpn, n, buf + (pos - offset));
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
      r = request_read_pages (ftl, lpn, 1, bounce);
      if (r < 0) break;
      if (buf)
        memcpy (bounce + in, buf + (pos - offset), len);
      else
        memset (bounce + in, 0, len);
      r = write_pages (ftl, f, first, last, lpn, 1, bounce);
      if (r < 0) break;
      pos += len;
    }
  }
  pthread_mutex_unlock (&f->lock);
  map_unlock (ftl, first, last);
  free (bounce);
  return r;
}

static int
do_write (struct ftl *ftl, const void *buf, uint64_t count, uint64_t offset,
          unsigned flags)
{
  int r;

  if (ftl_is_read_only (ftl))
    return -EROFS;
  r = check_range (ftl, count, offset);
  if (r < 0)
    return r;
  ckpt_maybe_held (ftl);
  pthread_rwlock_rdlock (&ftl->ckpt_rw);
  if (count > 0)
    r = write_range (ftl, buf, count, offset);
  if (r == 0 && (flags & FTL_FUA))
    r = media_sync (&ftl->media);
  pthread_rwlock_unlock (&ftl->ckpt_rw);
  return r;
}

/* Unmap n whole logical pages from lpn.  Caller holds ckpt_rw shared. */
static int
unmap_pages (struct ftl *ftl, uint64_t lpn, uint64_t n)
{
  bool any = false;
  int r = 0;

  if (n == 0)
    return 0;
  /* The trim record may need a block: collect first, without locks. */
  dl_hold ();
  r = gc_make_room (ftl, false);
  dl_release ();
  if (r < 0)
    return r;
  map_lock (ftl, lpn, lpn + n - 1);
  for (uint64_t l = lpn; l < lpn + n && !any; l++)
    any = l2p_load (ftl, l) != FTL_UNMAPPED;
  if (any) {
    /* Logged before unmapping: see ftl-internal.h. */
    r = trimlog_append (ftl, lpn, n, FTL_META_KEEP_BLOCKS);
    if (r == 0)
      for (uint64_t l = lpn; l < lpn + n; l++)
        map_unmap (ftl, l);
  }
  map_unlock (ftl, lpn, lpn + n - 1);
  if (r == 0)
    ctr_add (ftl, FTL_CTR_HOST_TRIM, n);
  return r;
}

/* The whole pages inside [offset, offset+count): the last page of a disk
 * whose size is not a multiple of the page size counts as whole.
 */
static void
whole_pages (struct ftl *ftl, uint64_t count, uint64_t offset,
             uint64_t *first, uint64_t *end)
{
  *first = DIV_ROUND_UP (offset, ftl->page_size);
  if (offset + count == ftl->logical_bytes)
    *end = ftl->logical_pages;
  else
    *end = (offset + count) >> ftl->page_shift;
}

/* Writing buffered trim records and checkpoints is work done for
 * everybody: the deadline of the request that happens to do it does
 * not interrupt it (deadline.h), only the sync after it.
 */
static int
sync_fua (struct ftl *ftl)
{
  int r;

  dl_hold ();
  r = gc_make_room (ftl, false);
  dl_release ();
  if (r == 0)                   /* lets GC erase what it drained before */
    r = trimlog_barrier (ftl, FTL_META_KEEP_BLOCKS);
  return r;
}

/* At the start of a request, with no lock held: a checkpoint is left to
 * the background thread if there is one (the request's latency would
 * carry its syncs), unless twice the interval has passed: then the
 * background thread is behind (busy collecting) and the bound on
 * recovery comes first.
 */
static void
ckpt_maybe_held (struct ftl *ftl)
{
  if (!ckpt_due (ftl))
    return;
  if (bg_running (ftl) &&
      __atomic_load_n (&ftl->pages_since_ckpt, __ATOMIC_RELAXED)
      < 2 * ftl->ckpt_interval) {
    bg_wake (ftl);
    return;
  }
  dl_hold ();
  ckpt_maybe (ftl);
  dl_release ();
}

static int
do_trim (struct ftl *ftl, uint64_t count, uint64_t offset, unsigned flags)
{
  uint64_t first, end;
  int r;

  if (ftl_is_read_only (ftl))
    return -EROFS;
  r = check_range (ftl, count, offset);
  if (r < 0)
    return r;
  whole_pages (ftl, count, offset, &first, &end);
  ckpt_maybe_held (ftl);
  pthread_rwlock_rdlock (&ftl->ckpt_rw);
  if (first < end)
    r = unmap_pages (ftl, first, end - first);
  if (r == 0 && (flags & FTL_FUA))
    r = sync_fua (ftl);
  pthread_rwlock_unlock (&ftl->ckpt_rw);
  return r;
}

static int
do_zero (struct ftl *ftl, uint64_t count, uint64_t offset, unsigned flags)
{
  uint64_t first, end, end_off;
  int r;

  if (ftl_is_read_only (ftl))
    return -EROFS;
  r = check_range (ftl, count, offset);
  if (r < 0 || count == 0)
    return r;
  whole_pages (ftl, count, offset, &first, &end);
  end_off = offset + count;
  ckpt_maybe_held (ftl);
  pthread_rwlock_rdlock (&ftl->ckpt_rw);
  if (first >= end)             /* inside one page, or across one boundary */
    r = write_range (ftl, NULL, count, offset);
  else {
    uint64_t a = first << ftl->page_shift;
    uint64_t b = MIN (end << ftl->page_shift, ftl->logical_bytes);
    if (offset < a)
      r = write_range (ftl, NULL, a - offset, offset);
    if (r == 0)
      r = unmap_pages (ftl, first, end - first);
    if (r == 0 && b < end_off)
      r = write_range (ftl, NULL, end_off - b, b);
  }
  if (r == 0 && (flags & FTL_FUA))
    r = sync_fua (ftl);
  pthread_rwlock_unlock (&ftl->ckpt_rw);
  return r;
}

static int
do_flush (struct ftl *ftl)
{
  int r = 0;

  if (!ftl->readonly) {
    pthread_rwlock_rdlock (&ftl->ckpt_rw);
    r = sync_fua (ftl);
    pthread_rwlock_unlock (&ftl->ckpt_rw);
    ckpt_maybe_held (ftl);
  }
  ctr_add (ftl, FTL_CTR_FLUSH, 1);
  return r;
}

static int
do_extents (struct ftl *ftl, uint64_t count, uint64_t offset,
            ftl_extent_fn fn, void *opaque)
{
  uint64_t end = offset + count, pos = offset;
  int r;

  r = check_range (ftl, count, offset);
  if (r < 0)
    return r;
  while (pos < end) {
    uint64_t lpn = pos >> ftl->page_shift;
    bool hole = l2p_load (ftl, lpn) == FTL_UNMAPPED;
    uint64_t l = lpn + 1;
    while ((l << ftl->page_shift) < end &&
           (l2p_load (ftl, l) == FTL_UNMAPPED) == hole)
      l++;
    uint64_t run_end = MIN (l << ftl->page_shift, end);
    if (fn (opaque, pos, run_end - pos, hole) == -1)
      break;
    pos = run_end;
  }
  return 0;
}

/* ---- the public data path: every request is registered with the
 * deadline tracker for its whole duration (deadline.h) ----
 */

int
ftl_read (struct ftl *ftl, void *buf, uint64_t count, uint64_t offset)
{
  struct dl_ticket t;
  int r = dl_begin (&ftl->dl, FTL_OP_READ, &t);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_read (ftl, buf, count, offset));
}

int
ftl_write (struct ftl *ftl, const void *buf, uint64_t count, uint64_t offset,
           unsigned flags)
{
  struct dl_ticket t;
  int r = dl_begin (&ftl->dl, FTL_OP_WRITE, &t);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_write (ftl, buf, count, offset, flags));
}

int
ftl_trim (struct ftl *ftl, uint64_t count, uint64_t offset, unsigned flags)
{
  struct dl_ticket t;
  int r = dl_begin (&ftl->dl, FTL_OP_TRIM, &t);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_trim (ftl, count, offset, flags));
}

int
ftl_zero (struct ftl *ftl, uint64_t count, uint64_t offset, unsigned flags)
{
  struct dl_ticket t;
  int r = dl_begin (&ftl->dl, FTL_OP_WRITE, &t);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_zero (ftl, count, offset, flags));
}

int
ftl_flush (struct ftl *ftl)
{
  struct dl_ticket t;
  int r = dl_begin (&ftl->dl, FTL_OP_FLUSH, &t);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_flush (ftl));
}

int
ftl_extents (struct ftl *ftl, uint64_t count, uint64_t offset,
             ftl_extent_fn fn, void *opaque)
{
  struct dl_ticket t;
  int r = dl_begin (&ftl->dl, FTL_OP_EXTENTS, &t);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_extents (ftl, count, offset, fn, opaque));
}
