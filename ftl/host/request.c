/* nbdkit-ftl: the request path: read, write, trim, zero, flush and
 * extents.
 *
 * Requests flow one way, and take their locks in the documented order
 * (ftl-internal.h):
 *
 *   ftl_write -> deadline ticket
 *     with a write cache: -> cache_write, page by page (a shard lock
 *       each); a writer whose shard is full runs a destage batch itself
 *       (destage.c), or waits for one in flight; a FUA write then
 *       destages everything written up to it and syncs;
 *     a write of whole pages of at least write-cache-bypass bytes:
 *       -> ckpt_rw shared -> write_bypass (write.c): to the log on the
 *       request's own thread, as a drive streams large sequential
 *       writes to NAND, then the cache's older copies of its pages go;
 *     without: -> ckpt_rw shared -> write_through (write.c): stripe locks
 *       -> host frontier -> alloc_program.
 *
 *   ftl_trim, ftl_zero -> gc_make_room -> stripe locks ->
 *     trimlog_append (recorded first) -> drop cached pages -> map_unmap
 *     (write.c); a zero's partial pages are writes of zeros.
 *
 *   ftl_flush -> destage_until (every page written before the flush
 *     into the log) -> gc_make_room -> trimlog_barrier (trim records
 *     written, then a sync).
 *
 *   ftl_read -> per page: the cache if its bit is set (cache.c), else
 *     the log (read.c: l2p, media_read, each page's OOB entry checked).
 *
 * Nothing below calls into this file.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

static void ckpt_maybe_held (struct ftl *ftl);
static int sync_fua (struct ftl *ftl);

bool
ftl_is_powered_off (struct ftl *ftl)
{
  return powered_off (ftl);
}

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

/* Read n whole pages: those the write cache holds from it, runs of the
 * others from the log.
 */
static int
read_host_pages (struct ftl *ftl, uint64_t lpn, uint64_t n, uint8_t *out)
{
  uint64_t i = 0;

  while (i < n) {
    uint8_t *p = out + (i << ftl->page_shift);
    uint64_t run = cache_absent_run (ftl, lpn + i, MIN (n - i, UINT32_MAX));
    if (run > 0) {
      int r = read_pages (ftl, lpn + i, run, p);
      if (r < 0)
        return r;
      i += run;
      continue;
    }
    if (!cache_read (ftl, lpn + i, p)) {
      /* It reached the log meanwhile. */
      int r = read_pages (ftl, lpn + i, 1, p);
      if (r < 0)
        return r;
    }
    i++;
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
      uint64_t n = (end - pos) >> ftl->page_shift;
      r = read_host_pages (ftl, lpn, n, out);
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
      r = read_host_pages (ftl, lpn, 1, bounce);
      if (r < 0) goto out;
      memcpy (out, bounce + in, len);
      out += len;
      pos += len;
    }
  }
  uint64_t *v = ctr_mine (ftl);
  ctr_add_to (v, FTL_CTR_HOST_READ, DIV_ROUND_UP (count, ftl->page_size));
  ctr_add_to (v, FTL_CTR_HOST_READ_CMDS, 1);
  ctr_add_to (v, FTL_CTR_HOST_READ_BYTES, count);
 out:
  if (bounce)                   /* (page-aligned reads have none) */
    free (bounce);
  return r;
}

/* Wait for room in a full shard of the write cache, for a batch that
 * another thread runs: with the timing model, the host work that held
 * it up is this request's host stall too (dl_wait_begin).
 */
static bool
wait_slot (struct ftl *ftl, unsigned shard)
{
  struct dl_wait w;
  bool ok;

  dl_wait_begin (&w);
  ok = cache_wait_slot (ftl, shard);
  dl_wait_end (&w);
  return ok;
}

/* Put [offset, offset+count) from buf (zeros if NULL) into the write
 * cache.  Once one page is in, the request is not interrupted (all or
 * nothing, deadline.h).
 */
static int
cache_write_range (struct ftl *ftl, const uint8_t *buf, uint64_t count,
                   uint64_t offset)
{
  uint64_t pos = offset, end = offset + count;
  bool waited = false;
  uint64_t t = 0;

  while (pos < end) {
    uint64_t lpn = pos >> ftl->page_shift;
    uint32_t in = pos & (ftl->page_size - 1);
    uint32_t len = MIN (ftl->page_size - in, end - pos);
    const uint8_t *src = buf ? buf + (pos - offset) : NULL;
    int r;

    while ((r = cache_write (ftl, lpn, in, len, src)) == -EAGAIN) {
      unsigned shard = cache_shard_index (ftl, lpn);
      if (!waited) {
        __atomic_fetch_add (&ftl->cache.write_waits, 1, __ATOMIC_RELAXED);
        waited = true;
        t = dl_stage_begin (FTL_STAGE_CACHE);
      }
      /* The shard is full: destage a batch from it here, or wait for
       * one in flight to complete.
       */
      r = destage_batch (ftl, UINT64_MAX, shard, ALLOC_PROGRAM_MAX);
      if (r == 0 && !wait_slot (ftl, shard))
        r = -ETIMEDOUT;
      if (r < 0)
        break;
    }
    dl_stage_end (t);
    t = 0;
    if (r < 0)
      return r;
    dl_commit ();
    pos += len;
  }
  destage_kick (ftl);
  return 0;
}

/* Make every page written to the cache so far reach the log. */
static int
cache_flush (struct ftl *ftl)
{
  uint64_t v = cache_version (ftl);

  if (cache_dirty_upto (ftl, v))
    __atomic_fetch_add (&ftl->cache.flush_waits, 1, __ATOMIC_RELAXED);
  return destage_until (ftl, v);
}

/* Does a write go past the write cache?  Data (not zeros) in whole
 * pages, at least write-cache-bypass bytes of it.
 */
static bool
bypasses (struct ftl *ftl, const uint8_t *buf, uint64_t count,
          uint64_t offset)
{
  uint64_t b = ftl->cache.bypass_bytes;

  return b != 0 && buf && count >= b &&
    ((offset | count) & (ftl->page_size - 1)) == 0;
}

/* Write [offset, offset+count) from buf, or zeros if buf is NULL: into
 * the cache if there is one (unless it bypasses it), else straight to
 * the log.
 */
static int
host_write (struct ftl *ftl, const uint8_t *buf, uint64_t count,
            uint64_t offset)
{
  int r;

  if (count == 0)
    return 0;
  if (ftl->cache.nslots && !bypasses (ftl, buf, count, offset))
    r = cache_write_range (ftl, buf, count, offset);
  else if (ftl->cache.nslots) {
    ckpt_shared_dl (ftl);
    r = write_bypass (ftl, buf, count, offset);
    ckpt_release (ftl);
    if (r == 0)
      __atomic_fetch_add (&ftl->cache.bypassed, count >> ftl->page_shift,
                          __ATOMIC_RELAXED);
  }
  else {
    ckpt_shared_dl (ftl);
    r = write_through (ftl, buf, count, offset);
    ckpt_release (ftl);
  }
  if (r == 0)
    ctr_add (ftl, FTL_CTR_HOST_WRITE,
             ((offset + count - 1) >> ftl->page_shift)
             - (offset >> ftl->page_shift) + 1);
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
  r = host_write (ftl, buf, count, offset);
  if (r == 0 && (flags & FTL_FUA)) {
    uint64_t durable, t = dl_stage_begin (FTL_STAGE_SYNC);
    if (ftl->cache.nslots)
      r = cache_flush (ftl);
    durable = durable_sample (ftl);
    if (r == 0)
      r = media_sync (&ftl->media);
    if (r == 0) {
      durable_synced (ftl, durable);
      r = durable_commit (ftl);
    }
    dl_stage_end (t);
  }
  if (r == 0) {
    uint64_t *v = ctr_mine (ftl);
    ctr_add_to (v, FTL_CTR_HOST_WRITE_CMDS, 1);
    ctr_add_to (v, FTL_CTR_HOST_WRITE_BYTES, count);
  }
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
  if (ftl_bell_listening (&ftl->bell) && !ckpt_overdue (ftl)) {
    ftl_bell_ring (&ftl->bell);
    return;
  }
  uint64_t t = dl_stage_begin (FTL_STAGE_SYNC);
  dl_hold ();
  host_ckpt (ftl, false, true);
  dl_release ();
  dl_stage_end (t);
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
  ckpt_shared_dl (ftl);
  if (first < end)
    r = write_unmap (ftl, first, end - first);
  ckpt_release (ftl);
  if (r == 0 && (flags & FTL_FUA))
    r = sync_fua (ftl);
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
  if (first >= end)             /* inside one page, or across one boundary */
    r = host_write (ftl, NULL, count, offset);
  else {
    uint64_t a = first << ftl->page_shift;
    uint64_t b = MIN (end << ftl->page_shift, ftl->logical_bytes);
    if (offset < a)
      r = host_write (ftl, NULL, a - offset, offset);
    if (r == 0) {
      ckpt_shared_dl (ftl);
      r = write_unmap (ftl, first, end - first);
      ckpt_release (ftl);
    }
    if (r == 0 && b < end_off)
      r = host_write (ftl, NULL, end_off - b, b);
  }
  if (r == 0 && (flags & FTL_FUA))
    r = sync_fua (ftl);
  /* A command of the health log, but no data units (NVMe counts none
   * for Write Zeroes).
   */
  if (r == 0)
    ctr_add (ftl, FTL_CTR_HOST_WRITE_CMDS, 1);
  return r;
}

/* Make every write, trim and zero completed before the call durable:
 * the write cache's pages into the log, then a barrier.
 */
static int
sync_fua (struct ftl *ftl)
{
  uint64_t t = dl_stage_begin (FTL_STAGE_SYNC);
  int r = 0;

  if (ftl->cache.nslots)
    r = cache_flush (ftl);
  if (r == 0) {
    ckpt_shared_dl (ftl);
    r = write_barrier (ftl);
    ckpt_release (ftl);
  }
  /* Recovery must know that these pages were durable (durable.c). */
  if (r == 0)
    r = durable_commit (ftl);
  dl_stage_end (t);
  return r;
}

static int
do_flush (struct ftl *ftl)
{
  int r = 0;

  if (!ftl->readonly) {
    r = sync_fua (ftl);
    ckpt_maybe_held (ftl);
  }
  ctr_add (ftl, FTL_CTR_FLUSH, 1);
  return r;
}

/* A page that reads as zeros: unmapped, and not in the write cache. */
static bool
is_hole (struct ftl *ftl, uint64_t lpn)
{
  return l2p_load (ftl, lpn) == FTL_UNMAPPED && !cache_holds (ftl, lpn);
}

/* The end of the run of pages from lpn (before limit) that are holes,
 * or data, as lpn is.  A run of holes skips the parts of the map that
 * never held a mapping (map_next) where the write cache holds none of
 * their pages either: a large disk that holds little data is walked in
 * what it holds.
 */
static uint64_t
run_end (struct ftl *ftl, uint64_t lpn, bool hole, uint64_t limit)
{
  uint64_t l = lpn + 1;

  while (l < limit) {
    if (hole) {
      uint64_t next = MIN (map_next (ftl, l), limit);
      if (next > l) {
        uint64_t absent = cache_absent_run (ftl, l, next - l);
        l += absent;
        if (l < next)
          break;                /* a page of the cache: data */
        continue;
      }
    }
    if (is_hole (ftl, l) != hole)
      break;
    l++;
  }
  return l;
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
    bool hole = is_hole (ftl, lpn);
    uint64_t limit = (end + ftl->page_size - 1) >> ftl->page_shift;
    uint64_t l = run_end (ftl, lpn, hole, limit);
    uint64_t stop = MIN (l << ftl->page_shift, end);
    if (fn (opaque, pos, stop - pos, hole) == -1)
      break;
    pos = stop;
  }
  return 0;
}

/* ---- the public data path: every request is registered with the
 * deadline tracker for its whole duration (deadline.h) ----
 */

/* After a power cut (powercut.c) the disk answers nothing. */
static int
begin (struct ftl *ftl, enum ftl_op op, struct dl_ticket *t,
       uint64_t count, uint64_t offset, unsigned flags)
{
  t->count = count;
  t->offset = offset;
  t->flags = flags;
  if (powered_off (ftl))
    return -EIO;
  return dl_begin (&ftl->dl, op, t);
}

/* With the timing model: the host side of a command that began at t0
 * (the controller's overhead and the host link, timing.h).
 */
static int
host_side (struct ftl *ftl, uint64_t t0, uint64_t done, uint64_t bytes,
           bool read, int r)
{
  if (r == 0)
    r = media_wait (&ftl->media,
                    timing_host (&ftl->timing, t0, done, bytes, read));
  return r;
}

int
ftl_read (struct ftl *ftl, void *buf, uint64_t count, uint64_t offset)
{
  struct dl_ticket t;
  uint64_t t0 = ftl->timing.enabled ? clock_now () : 0;
  int r = begin (ftl, FTL_OP_READ, &t, count, offset, 0);

  if (r < 0)
    return r;
  if (ftl->timing.enabled) {
    /* The page reads of all its runs are issued at once; the request
     * sleeps once, for them and the host side.
     */
    media_defer (&ftl->media);
    r = do_read (ftl, buf, count, offset);
    uint64_t done = media_deferred (&ftl->media);
    return dl_end (&ftl->dl, &t,
                   host_side (ftl, t0, done, count, true, r));
  }
  return dl_end (&ftl->dl, &t, do_read (ftl, buf, count, offset));
}

int
ftl_write (struct ftl *ftl, const void *buf, uint64_t count, uint64_t offset,
           unsigned flags)
{
  struct dl_ticket t;
  uint64_t t0 = ftl->timing.enabled ? clock_now () : 0;
  int r = begin (ftl, FTL_OP_WRITE, &t, count, offset, flags);

  if (r < 0)
    return r;
  if (ftl->timing.enabled) {
    r = do_write (ftl, buf, count, offset, flags);
    return dl_end (&ftl->dl, &t,
                   host_side (ftl, t0, 0, count, false, r));
  }
  return dl_end (&ftl->dl, &t, do_write (ftl, buf, count, offset, flags));
}

int
ftl_trim (struct ftl *ftl, uint64_t count, uint64_t offset, unsigned flags)
{
  struct dl_ticket t;
  int r = begin (ftl, FTL_OP_TRIM, &t, count, offset, flags);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_trim (ftl, count, offset, flags));
}

int
ftl_zero (struct ftl *ftl, uint64_t count, uint64_t offset, unsigned flags)
{
  struct dl_ticket t;
  int r = begin (ftl, FTL_OP_WRITE, &t, count, offset, flags);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_zero (ftl, count, offset, flags));
}

int
ftl_flush (struct ftl *ftl)
{
  struct dl_ticket t;
  int r = begin (ftl, FTL_OP_FLUSH, &t, 0, 0, 0);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_flush (ftl));
}

int
ftl_age (struct ftl *ftl, uint64_t seconds, uint32_t pe)
{
  struct errmodel *em = &ftl->em;

  if (ftl->readonly)
    return -EROFS;
  if (powered_off (ftl))
    return -EIO;
  if (seconds > INT64_MAX / 2 || (uint64_t) em->pe_offset + pe > UINT32_MAX)
    return -EOVERFLOW;
  /* Under the checkpoint lock: a checkpoint's snapshot reads them. */
  pthread_mutex_lock (&ftl->ckpt_lock);
  errmodel_set_clock (em, errmodel_skew (em) + (int64_t) seconds,
                      em->pe_offset + pe);
  pthread_mutex_unlock (&ftl->ckpt_lock);
  return host_ckpt (ftl, false, false);
}

int
host_ckpt (struct ftl *ftl, bool clean, bool maybe)
{
  int r;

  for (int attempt = 0; ; attempt++) {
    r = maybe ? ckpt_maybe (ftl) : ckpt_write (ftl, clean);
    if (r != -ENOSPC || !ftl->pm.on || attempt == 8)
      return r;
    /* Relocations hold ckpt_rw shared, as every change of the map does:
     * else a checkpoint could copy a group while GC moves one of its
     * entries, and clear its dirty mark after the move.
     */
    ckpt_shared_dl (ftl);
    r = gc_make_room (ftl, attempt > 0);
    ckpt_release (ftl);
    if (r < 0)
      return r;
  }
}

int
ftl_destage (struct ftl *ftl)
{
  if (!ftl->cache.nslots || powered_off (ftl))
    return 0;
  return destage_until (ftl, UINT64_MAX);
}

int
ftl_extents (struct ftl *ftl, uint64_t count, uint64_t offset,
             ftl_extent_fn fn, void *opaque)
{
  struct dl_ticket t;
  int r = begin (ftl, FTL_OP_EXTENTS, &t, count, offset, 0);

  if (r < 0)
    return r;
  return dl_end (&ftl->dl, &t, do_extents (ftl, count, offset, fn, opaque));
}
