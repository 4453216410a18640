/* nbdkit-ftl: the media layer.  See media.h. */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "track/deadline.h"
#include "track/fault.h"
#include "format/format.h"
#include "nand/media.h"
#include "nand/timing.h"
#include "util/clock.h"
#include "util/util.h"

static int
default_pwrite (void *opaque, int fd, const void *buf, size_t len, off_t off)
{
  const char *p = buf;
  while (len > 0) {
    ssize_t r = pwrite (fd, p, len, off);
    if (r == -1) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += r; len -= r; off += r;
  }
  return 0;
}

static int
default_pwritev (void *opaque, int fd, const struct iovec *iov, int iovcnt,
                 off_t off)
{
  struct iovec v[MEDIA_IOV_MAX];
  int n = 0;

  assert (iovcnt <= MEDIA_IOV_MAX);
  memcpy (v, iov, iovcnt * sizeof *iov);
  while (n < iovcnt) {
    ssize_t r = pwritev (fd, v + n, iovcnt - n, off);
    if (r == -1) {
      if (errno == EINTR) continue;
      return -errno;
    }
    off += r;
    /* A short write: skip what was written, go on with the rest. */
    while (n < iovcnt && (size_t) r >= v[n].iov_len)
      r -= v[n++].iov_len;
    if (n < iovcnt) {
      v[n].iov_base = (char *) v[n].iov_base + r;
      v[n].iov_len -= r;
    }
  }
  return 0;
}

static int
default_pread (void *opaque, int fd, void *buf, size_t len, off_t off)
{
  char *p = buf;
  while (len > 0) {
    ssize_t r = pread (fd, p, len, off);
    if (r == -1) {
      if (errno == EINTR) continue;
      return -errno;
    }
    if (r == 0)                 /* beyond the end: the file is short */
      return -EIO;
    p += r; len -= r; off += r;
  }
  return 0;
}

static int
default_sync (void *opaque, int fd)
{
  if (fdatasync (fd) == -1)
    return -errno;
  return 0;
}

/* ftruncate: bytes beyond the old end read as zeros. */
static int
default_set_size (void *opaque, int fd, uint64_t size)
{
  if (size > INT64_MAX)
    return -EFBIG;
  while (ftruncate (fd, size) == -1)
    if (errno != EINTR)
      return -errno;
  return 0;
}

/* fsync the directory that holds path. */
static int
default_sync_dir (void *opaque, const char *path)
{
  const char *slash = strrchr (path, '/');
  char *dir;
  int fd, r = 0;

  if (!slash)
    dir = strdup (".");
  else
    dir = strndup (path, slash == path ? 1 : (size_t) (slash - path));
  if (!dir)
    return -ENOMEM;
  fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free (dir);
  if (fd == -1)
    return -errno;
  /* Some file systems cannot sync a directory (EINVAL): they have
   * nothing to offer, and the image is still usable.
   */
  if (fsync (fd) == -1 && errno != EINVAL)
    r = -errno;
  close (fd);
  return r;
}

/* SEEK_DATA from off: no data before off + len means a hole there.
 * A file system without SEEK_DATA reports the whole file as data.
 */
static int
default_is_hole (void *opaque, int fd, uint64_t off, uint64_t len)
{
  off_t d = lseek (fd, off, SEEK_DATA);

  if (d == -1)
    return errno == ENXIO;      /* no data from off to the end */
  return (uint64_t) d >= off + len;
}

const struct ftl_io media_default_io = {
  .pwrite = default_pwrite,
  .pread  = default_pread,
  .sync   = default_sync,
  .opaque = NULL,
  .pwritev = default_pwritev,
  .set_size = default_set_size,
  .sync_dir = default_sync_dir,
  .is_hole = default_is_hole,
};

bool
media_io_is_hole (const struct ftl_io *io, int fd, uint64_t off,
                  uint64_t len)
{
  return io->is_hole && io->is_hole (io->opaque, fd, off, len) == 1;
}

int
media_io_set_size (const struct ftl_io *io, int fd, uint64_t size)
{
  if (io->set_size)
    return io->set_size (io->opaque, fd, size);
  return default_set_size (NULL, fd, size);
}

int
media_io_sync_dir (const struct ftl_io *io, const char *path)
{
  if (io->sync_dir)
    return io->sync_dir (io->opaque, path);
  return default_sync_dir (NULL, path);
}

int
media_init (struct media *m, int fd, const struct ftl_io *io,
            uint32_t page_size, uint32_t pages_per_block, uint32_t blocks,
            uint32_t meta_pages, uint64_t meta_offset, uint64_t data_offset)
{
  assert (is_power_of_2 (page_size));
  assert (is_power_of_2 (pages_per_block));
  memset (m, 0, sizeof *m);
  pthread_mutex_init (&m->write_lock, NULL);
  m->fd = fd;
  m->io = io ? io : &media_default_io;
  m->page_size = page_size;
  m->pages_per_block = pages_per_block;
  m->blocks = blocks;
  m->meta_pages = meta_pages;
  m->page_shift = log2_u64 (page_size);
  m->ppb_shift = log2_u64 (pages_per_block);
  m->meta_offset = meta_offset;
  m->data_offset = data_offset;
  m->block_bytes = (uint64_t) (pages_per_block
                               + (meta_offset ? 0 : meta_pages)) * page_size;
  m->wp = calloc (blocks, sizeof *m->wp);
  m->erase_count = calloc (blocks, sizeof *m->erase_count);
  m->gen = calloc (blocks, sizeof *m->gen);
  m->slc = calloc (blocks, sizeof *m->slc);
  m->slc_pages = pages_per_block;
  m->zeros = calloc (meta_pages, page_size);
  if (!m->wp || !m->erase_count || !m->gen || !m->slc || !m->zeros) {
    media_free (m);
    return -ENOMEM;
  }
  return 0;
}

void
media_free (struct media *m)
{
  free (m->wp);
  free (m->erase_count);
  free (m->gen);
  free (m->slc);
  m->slc = NULL;
  free (m->zeros);
  m->wp = m->erase_count = m->gen = NULL;
  m->zeros = NULL;
}

void
media_attach (struct media *m, struct timing *t, struct deadline *dl,
              struct fault *f)
{
  m->timing = t && t->enabled ? t : NULL;
  if (m->timing)
    timing_geometry (m->timing, m->page_size, m->pages_per_block);
  m->dl = dl;
  m->fault = f && fault_enabled (f) ? f : NULL;
}

static bool
should_abort (struct media *m)
{
  return m->dl && dl_should_abort (m->dl);
}

/* Sleep until t, or give up (-ETIMEDOUT) if the request is aborted
 * meanwhile: the wait is cut into slices of at most 1 ms.
 */
static int
wait_until (struct media *m, uint64_t t)
{
  for (;;) {
    if (should_abort (m))
      return -ETIMEDOUT;
    uint64_t now = clock_now ();
    if (now >= t)
      return 0;
    clock_sleep_until (MIN (t, now + 1000000));
  }
}

/* The fault gate, at the start of every operation: an injected delay,
 * then an injected stall (wait until it is lifted), then a last check
 * that the request has not been aborted.
 */
static int
gate_wait (struct media *m, uint64_t d)
{
  if (d > 0) {
    int r = wait_until (m, clock_now () + d);
    if (r < 0)
      return r;
  }
  while (fault_stalled (m->fault)) {
    if (should_abort (m))
      return -ETIMEDOUT;
    clock_sleep_until (clock_now () + 1000000);
    fault_refresh (m->fault);
  }
  return 0;
}

/* The waits count as the request's media stage (deadline.h). */
static int
gate (struct media *m)
{
  if (__atomic_load_n (&m->off, __ATOMIC_ACQUIRE))
    return -EIO;
  if (m->fault) {
    fault_refresh (m->fault);
    uint64_t d = fault_delay (m->fault);
    if (d > 0 || fault_stalled (m->fault)) {
      uint64_t t = dl_stage_begin (FTL_STAGE_MEDIA);
      int r = gate_wait (m, d);
      dl_stage_end (t);
      if (r < 0)
        return r;
    }
  }
  return should_abort (m) ? -ETIMEDOUT : 0;
}

/* Sleep until the modeled end of a piece of an operation (timing.h
 * computes it for the whole piece at once).  The wait is cut into
 * slices of about 1 ms so that an aborted request gives up: plain
 * sleeps, then the last slice, up to 1 ms + CLOCK_YIELD_NS, waits for
 * the modeled end itself (clock_wait_model: on time, never early).  The modeled device is working meanwhile: each slice reports
 * progress so that a request queued behind it is not taken for
 * stalled.
 */
static int
model_wait (struct media *m, uint64_t end, uint32_t n)
{
  uint64_t now = clock_now ();
  uint64_t t = dl_stage_begin_at (FTL_STAGE_MEDIA, now);

  dl_model_end (end);

  for (;;) {
    if (should_abort (m)) {
      dl_stage_end_at (t, now);
      return -ETIMEDOUT;
    }
    if (now >= end)
      break;
    if (end - now > 1000000 + CLOCK_YIELD_NS) {
      /* A slice before the last: a plain sleep, which needs no
       * precision (the last slice's wait is the modeled end's).
       */
      clock_sleep_until (now + 1000000);
      if (m->dl)
        dl_progress (m->dl, 1);
    }
    else
      clock_wait_model (end);
    now = clock_now ();
  }
  /* The media stage is the time slept (the clock reads of the loop). */
  dl_stage_end_at (t, now);
  if (m->dl)
    dl_progress (m->dl, n ? n : 1);
  return 0;
}

enum op_kind { OP_READ, OP_PROGRAM, OP_ERASE, OP_RETRY };

/* Deferred waits (media_defer): this thread's operations reserve the
 * model and record their end here instead of sleeping.
 */
static FTL_TLS bool defer;
static FTL_TLS uint64_t defer_end;

void
media_defer (struct media *m)
{
  if (m->timing) {
    defer = true;
    defer_end = 0;
  }
}

uint64_t
media_deferred (struct media *m)
{
  uint64_t e = defer_end;

  defer = false;
  defer_end = 0;
  return e;
}

int
media_wait (struct media *m, uint64_t end)
{
  if (!m->timing || end == 0)
    return 0;
  return model_wait (m, end, 0);
}

/* Wait for an operation's modeled end, or record it (deferred). */
static int
model_end (struct media *m, uint64_t end, uint32_t n)
{
  if (defer) {
    defer_end = MAX (defer_end, end);
    if (m->dl)
      dl_progress (m->dl, n ? n : 1);
    return 0;
  }
  return model_wait (m, end, n);
}

/* The timing model of an operation: a run of pages is modeled one
 * stripe at a time (at most one program group per die: units x k
 * pages), with one sleep per stripe.  So a run no longer than a stripe
 * (the common case) sleeps once, and an operation that gives up leaves
 * at most one group of work on each die: a die cannot take back what
 * it started, but the controller drops what it had not yet issued.
 */
static int
model (struct media *m, enum op_kind kind, uint32_t blk, uint32_t page,
       uint32_t n, uint64_t lat)
{
  struct timing *t = m->timing;
  uint32_t stripe = t->units * t->group;

  if (kind == OP_ERASE)
    return model_end (m, timing_erase (t, blk, lat), 0);
  if (kind == OP_RETRY)
    return model_end (m, timing_read_retry (t, blk, n, lat), n);
  while (n > 0) {
    uint32_t c = MIN (n, stripe - page % t->group);
    uint64_t end = kind == OP_READ ? timing_read (t, blk, page, c, lat)
      : timing_program (t, blk, page, c, lat);
    if (kind == OP_PROGRAM)     /* with power-loss protection */
      end = end > t->plp_window_ns ? end - t->plp_window_ns : 0;
    int r = model_end (m, end, c);
    if (r < 0)
      return r;
    page += c;
    n -= c;
  }
  return 0;
}

/* Before an operation on n pages from `page` of block blk (an erase:
 * n = 0) of NAND latency lat: the gate, then the timing model.
 * Progress without the model is reported by op_end.
 */
static int
op_begin (struct media *m, enum op_kind kind, uint32_t blk, uint32_t page,
          uint32_t n, uint64_t lat)
{
  int r;

  if (m->dl)
    dl_media_begin (m->dl);
  r = gate (m);
  if (r == 0 && m->timing)
    r = model (m, kind, blk, page, n, lat);
  return r;
}

static int
op_end (struct media *m, uint32_t n, int r)
{
  if (m->dl) {
    if (r == 0 && !m->timing)
      dl_progress (m->dl, n ? n : 1);
    dl_media_end (m->dl);
  }
  return r;
}

/* Operations that the timing model does not time. */
static int
untimed_begin (struct media *m)
{
  if (m->dl)
    dl_media_begin (m->dl);
  return gate (m);
}

static int
untimed_end (struct media *m, int r)
{
  if (m->dl) {
    if (r == 0)
      dl_progress (m->dl, 1);
    dl_media_end (m->dl);
  }
  return r;
}

int
media_probe (struct media *m)
{
  uint8_t buf[512];

  if (m->fault) {
    fault_refresh (m->fault);
    if (fault_stalled (m->fault))
      return -EAGAIN;
  }
  return m->io->pread (m->io->opaque, m->fd, buf, sizeof buf, 0);
}

/* Every write to the file, one at a time (see write_lock in media.h). */
static int
file_pwrite (struct media *m, const void *buf, size_t len, off_t off)
{
  int r;

  pthread_mutex_lock (&m->write_lock);
  r = m->io->pwrite (m->io->opaque, m->fd, buf, len, off);
  pthread_mutex_unlock (&m->write_lock);
  return r;
}

static int
file_pwritev (struct media *m, const struct iovec *iov, int cnt, off_t off)
{
  int r;

  pthread_mutex_lock (&m->write_lock);
  r = m->io->pwritev (m->io->opaque, m->fd, iov, cnt, off);
  pthread_mutex_unlock (&m->write_lock);
  return r;
}

/* Write n pages at off from the pages' buffers: runs of pages adjacent
 * in memory become one piece, and the pieces one pwritev (or, for hooks
 * without it, one pwrite each).
 */
static int
write_pages (struct media *m, uint32_t n, const uint8_t *const *data,
             off_t off)
{
  struct iovec iov[MEDIA_IOV_MAX];
  int cnt = 0;

  for (uint32_t i = 0; i < n; i++) {
    if (cnt > 0 && (const uint8_t *) iov[cnt - 1].iov_base
        + iov[cnt - 1].iov_len == data[i])
      iov[cnt - 1].iov_len += m->page_size;
    else
      iov[cnt++] = (struct iovec) { (void *) data[i], m->page_size };
  }
  if (cnt == 1 || !m->io->pwritev) {
    for (int i = 0; i < cnt; i++) {
      int r = file_pwrite (m, iov[i].iov_base, iov[i].iov_len, off);
      if (r < 0)
        return r;
      off += iov[i].iov_len;
    }
    return 0;
  }
  return file_pwritev (m, iov, cnt, off);
}

int
media_program (struct media *m, uint32_t blk, uint32_t page, uint32_t n,
               const uint8_t *const *data, const uint8_t *oob)
{
  int r;

  /* The NAND rules. */
  assert (blk < m->blocks);
  assert (n > 0 && n <= MEDIA_IOV_MAX);
  assert (page == m->wp[blk]);             /* in order, never twice */
  assert (page + n <= media_block_pages (m, blk));  /* SLC: fewer */

  /* Even after an error the pages count as programmed: they may hold
   * anything, and NAND does not allow programming them again.
   */
  __atomic_store_n (&m->wp[blk], page + n, __ATOMIC_RELAXED);
  r = op_begin (m, OP_PROGRAM, blk, page, n,
                !m->timing ? 0 : media_block_slc (m, blk) ?
                m->timing->slc_program_ns : m->timing->program_ns);
  if (r < 0)
    return op_end (m, n, r);
  /* The file's writes (and a wait for its write lock) are media. */
  uint64_t t = clock_ticks ();
  r = write_pages (m, n, data,
                   media_page_offset (m, media_ppn (m, blk, page)));
  if (r == 0)
    r = file_pwrite (m, oob, (size_t) n * FTL_OOB_BYTES,
                     media_meta_offset (m, blk) + FTL_BLKHDR_BYTES
                     + (uint64_t) page * FTL_OOB_BYTES);
  dl_io_end (t);
  if (r == 0)
    media_count_add (m, MEDIA_PROGRAMS, n);
  return op_end (m, n, r);
}

int
media_read (struct media *m, uint32_t ppn, uint32_t n, void *buf)
{
  assert (media_ppn_block (m, ppn) < m->blocks);
  assert (media_ppn_page (m, ppn) + n <= m->pages_per_block);
  uint32_t blk = media_ppn_block (m, ppn);
  int r = op_begin (m, OP_READ, blk, media_ppn_page (m, ppn), n,
                    !m->timing ? 0 : media_block_slc (m, blk) ?
                    m->timing->slc_read_ns : m->timing->read_ns);
  if (r < 0)
    return op_end (m, n, r);
  media_count_add (m, MEDIA_READS, n);
  uint64_t t = clock_ticks ();
  r = m->io->pread (m->io->opaque, m->fd, buf, (size_t) n << m->page_shift,
                    media_page_offset (m, ppn));
  dl_io_end (t);
  return op_end (m, n, r);
}

int
media_read_now (struct media *m, uint32_t ppn, uint32_t n, void *buf)
{
  bool d = defer;
  int r;

  defer = false;
  r = media_read (m, ppn, n, buf);
  defer = d;
  return r;
}

int
media_read_retry (struct media *m, uint32_t blk, uint32_t n)
{
  if (!m->timing)
    return 0;
  /* Each step reads the page again: at the block's mode's read time. */
  return op_end (m, n, op_begin (m, OP_RETRY, blk, 0, n,
                                media_block_slc (m, blk) ?
                                m->timing->slc_read_ns :
                                m->timing->read_ns));
}

int
media_read_oob (struct media *m, uint32_t blk, uint32_t page, uint32_t n,
                uint8_t *buf)
{
  assert (blk < m->blocks);
  assert (page + n <= m->pages_per_block);
  int r = untimed_begin (m);
  if (r == 0) {
    uint64_t t = clock_ticks ();
    r = m->io->pread (m->io->opaque, m->fd, buf, (size_t) n * FTL_OOB_BYTES,
                      media_meta_offset (m, blk) + FTL_BLKHDR_BYTES
                      + (uint64_t) page * FTL_OOB_BYTES);
    dl_io_end (t);
  }
  return untimed_end (m, r);
}

int
media_read_meta (struct media *m, uint32_t blk, uint8_t *buf)
{
  assert (blk < m->blocks);
  int r = untimed_begin (m);
  if (r == 0)
    r = m->io->pread (m->io->opaque, m->fd, buf,
                      (size_t) m->meta_pages << m->page_shift,
                      media_meta_offset (m, blk));
  return untimed_end (m, r);
}

bool
media_meta_is_hole (const struct media *m, uint32_t first, uint32_t n)
{
  uint64_t meta_bytes = (uint64_t) m->meta_pages << m->page_shift;

  assert (n > 0 && first + (uint64_t) n <= m->blocks);
  if (n > 1 && !m->meta_offset)
    return false;
  return media_io_is_hole (m->io, m->fd, media_meta_offset (m, first),
                           media_meta_offset (m, first + n - 1) + meta_bytes
                           - media_meta_offset (m, first));
}

bool
media_meta_at (const struct media *m, uint64_t off, uint32_t *blk,
               uint64_t *in)
{
  uint64_t meta_bytes = (uint64_t) m->meta_pages << m->page_shift;
  uint64_t start = media_regions_offset (m);
  uint64_t stride = m->meta_offset ? meta_bytes : m->block_bytes;

  if (off < start || (off - start) / stride >= m->blocks ||
      (off - start) % stride >= meta_bytes)
    return false;
  *blk = (off - start) / stride;
  *in = (off - start) % stride;
  return true;
}

uint64_t
media_header_offset (const struct media *m, uint32_t blk,
                     uint32_t erase_count)
{
  uint64_t meta_bytes = (uint64_t) m->meta_pages << m->page_shift;

  if (erase_count & 1)
    return media_meta_offset (m, blk);
  return media_meta_offset (m, blk) + meta_bytes - FTL_BLKHDR_BYTES;
}

int
media_header_ec (const struct media *m, const uint8_t *meta, uint32_t *ec)
{
  struct ftl_block_header h;
  int found = 0;

  for (int i = 0; i < 2; i++)
    if (fmt_blkhdr_decode (media_header_copy (m, meta, i), FTL_BLKHDR_BYTES,
                           &h) == FTL_FMT_OK &&
        (!found || h.erase_count > *ec)) {
      *ec = h.erase_count;
      found = 1;
    }
  return found;
}

int
media_erase (struct media *m, uint32_t blk, uint64_t seq)
{
  struct ftl_block_header h;
  uint8_t buf[FTL_BLKHDR_BYTES];
  uint64_t meta = media_meta_offset (m, blk);
  uint64_t meta_bytes = (uint64_t) m->meta_pages << m->page_shift;
  int r;

  assert (blk < m->blocks);
  assert (meta_bytes >= FTL_BLKHDR_BYTES * 2
          + (uint64_t) m->pages_per_block * FTL_OOB_BYTES);

  r = op_begin (m, OP_ERASE, blk, 0, 0, m->timing ? m->timing->erase_ns : 0);
  if (r < 0)
    return op_end (m, 0, r);

  /* Readers that looked this block up before the erase see the
   * generation change and retry.
   */
  __atomic_fetch_add (&m->gen[blk], 1, __ATOMIC_SEQ_CST);

  /* The OOB entries, not the header copies nor the data pages (see
   * above): an overwrite in place, which allocates nothing in the file.
   */
  r = file_pwrite (m, m->zeros,
                     meta_bytes - 2 * FTL_BLKHDR_BYTES, meta + FTL_BLKHDR_BYTES);
  if (r < 0)
    return op_end (m, 0, r);
  __atomic_store_n (&m->wp[blk], 0, __ATOMIC_RELAXED);
  h.erase_count = media_erase_count (m, blk) + 1;
  h.erase_seq = seq;
  __atomic_store_n (&m->erase_count[blk], h.erase_count, __ATOMIC_RELEASE);
  media_count_add (m, MEDIA_ERASES, 1);
  fmt_blkhdr_encode (&h, buf);
  r = file_pwrite (m, buf, sizeof buf,
                     media_header_offset (m, blk, h.erase_count));
  return op_end (m, 0, r);
}

int
media_sync_always (struct media *m)
{
  int r = untimed_begin (m);
  if (r == 0) {
    uint64_t t0 = clock_now ();
    r = m->io->sync (m->io->opaque, m->fd);
    uint64_t t1 = clock_now ();
    media_count_add (m, MEDIA_SYNC_NS, t1 - t0);
    /* The model has no time for it: host work (deadline.h), but for
     * the part that deferred programs of this thread cover.
     */
    if (m->timing)
      dl_host_work (m->dl, t0, t1, defer ? defer_end : 0);
  }
  if (r == 0)
    media_count_add (m, MEDIA_SYNCS, 1);
  return untimed_end (m, r);
}

int
media_sync (struct media *m)
{
  int r;

  if (!m->nosync)
    return media_sync_always (m);
  /* The gate still applies: a powered-off or stalled file fails as it
   * would for a real sync.
   */
  r = untimed_begin (m);
  if (r == 0)
    media_count_add (m, MEDIA_SYNCS_SKIPPED, 1);
  return untimed_end (m, r);
}

int
media_tear (struct media *m, uint32_t ppn, uint32_t keep)
{
  uint32_t blk = media_ppn_block (m, ppn);

  assert (blk < m->blocks && keep < m->page_size);
  assert (media_ppn_page (m, ppn) < m->wp[blk]);
  return file_pwrite (m, m->zeros,
                        m->page_size - keep,
                        media_page_offset (m, ppn) + keep);
}

void
media_power_off (struct media *m)
{
  __atomic_store_n (&m->off, true, __ATOMIC_RELEASE);
}

int
media_pwrite_raw (struct media *m, const void *buf, size_t len, uint64_t off)
{
  assert (off + len <= media_regions_offset (m));
  int r = untimed_begin (m);
  if (r == 0)
    r = file_pwrite (m, buf, len, off);
  return untimed_end (m, r);
}

int
media_pread_raw (struct media *m, void *buf, size_t len, uint64_t off)
{
  assert (off + len <= media_regions_offset (m));
  int r = untimed_begin (m);
  if (r == 0)
    r = m->io->pread (m->io->opaque, m->fd, buf, len, off);
  return untimed_end (m, r);
}

void
media_set_block (struct media *m, uint32_t blk, uint32_t erase_count,
                 uint32_t wp)
{
  assert (blk < m->blocks);
  assert (wp <= m->pages_per_block);
  __atomic_store_n (&m->wp[blk], wp, __ATOMIC_RELAXED);
  __atomic_store_n (&m->erase_count[blk], erase_count, __ATOMIC_RELAXED);
}
