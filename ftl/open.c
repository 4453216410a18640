/* nbdkit-ftl: opening, creating and closing an image.
 *
 * ftl_open is a sequence of steps (open_steps below); each sets up one
 * part of the handle and has an undo that releases it.  When a step
 * fails, the steps done so far are undone in reverse order; free_handle
 * undoes them all.  In order:
 *
 *   file          open (or create and format) the backing file, lock it,
 *                 read the superblocks, check the options against them
 *   geometry      derive sizes and the number of host streams
 *   fault, deadline, timing      the leaf modules
 *   media, map, blocks, trim log, gc, wear, background, checkpoints
 *                 the in-memory structures (each module's init/free)
 *   policies      GC watermarks, hot/cold separation, checkpoint interval
 *   recovery      load the newest checkpoint, roll the log forward
 *   in use        a checkpoint after a roll-forward, then the superblock
 *                 marked in use
 *   attach        from here on the media is timed and faults may be
 *                 injected; recovery is neither
 *
 * A failed open never modifies an existing image; a file it created is
 * removed again.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ftl-internal.h"

void
log_msg (struct ftl *ftl, enum ftl_log_level level, const char *fs, ...)
{
  char msg[512];
  va_list ap;

  if (!ftl->log)
    return;
  va_start (ap, fs);
  vsnprintf (msg, sizeof msg, fs, ap);
  va_end (ap);
  ftl->log (ftl->log_opaque, level, msg);
}

void
log_debug (struct ftl *ftl, unsigned category, const char *fs, ...)
{
  char msg[512];
  va_list ap;

  if (!ftl->log || !(ftl->debug & category))
    return;
  va_start (ap, fs);
  vsnprintf (msg, sizeof msg, fs, ap);
  va_end (ap);
  ftl->log (ftl->log_opaque, FTL_LOG_DEBUG, msg);
}

/* ---- creating an image ---- */

/* Work out the geometry of a new image from the options. */
static int
new_geometry (const struct ftl_options *o, struct ftl_superblock *sb,
              char *errbuf, size_t errlen)
{
  uint32_t ps = o->page_size ? o->page_size : FTL_DEFAULT_PAGE_SIZE;
  uint32_t ppb = o->pages_per_block ? o->pages_per_block
    : FTL_DEFAULT_PAGES_PER_BLOCK;
  double op = o->op_percent > 0 ? o->op_percent : FTL_DEFAULT_OP_PERCENT;
  unsigned streams = o->streams ? o->streams : 1;
  uint64_t lpages, data_blocks, blocks;

  if (o->logical_bytes % 512 != 0) {
    snprintf (errbuf, errlen, "size %" PRIu64 " is not a multiple of 512",
              o->logical_bytes);
    return -EINVAL;
  }
  lpages = DIV_ROUND_UP (o->logical_bytes, ps);
  data_blocks = DIV_ROUND_UP (lpages, ppb);
  blocks = (uint64_t) ((double) lpages * (1.0 + op / 100.0) / ppb + 0.999999);
  if (lpages >= FTL_PAGES_LIMIT || blocks * ppb >= FTL_PAGES_LIMIT) {
    snprintf (errbuf, errlen, "size %" PRIu64 " is too large for page size "
              "%u (at most 2^32 - 2 physical pages)", o->logical_bytes, ps);
    return -EINVAL;
  }
  if (blocks < data_blocks + FTL_MIN_SPARE_BLOCKS (streams)) {
    snprintf (errbuf, errlen, "impossible geometry: size %" PRIu64 " with "
              "op=%g%% and %u pages per block gives %" PRIu64 " spare erase "
              "blocks, but at least %u are needed (raise size or op, or "
              "lower pages-per-block)", o->logical_bytes, op, ppb,
              blocks - data_blocks, FTL_MIN_SPARE_BLOCKS (streams));
    return -EINVAL;
  }

  memset (sb, 0, sizeof *sb);
  sb->version = FTL_FORMAT_VERSION;
  sb->generation = 1;
  sb->page_size = ps;
  sb->pages_per_block = ppb;
  sb->blocks = blocks;
  sb->meta_pages = fmt_meta_pages (ps, ppb);
  sb->logical_bytes = o->logical_bytes;
  sb->ckpt_bytes = fmt_ckpt_bytes (ps, lpages, blocks);
  sb->ckpt_offset[0] = ROUND_UP (2 * FTL_SB_SLOT, ps);
  sb->ckpt_offset[1] = sb->ckpt_offset[0] + sb->ckpt_bytes;
  sb->data_offset = sb->ckpt_offset[1] + sb->ckpt_bytes;
  sb->state = FTL_SB_CLEAN;
  sb->op_ppm = (uint32_t) (op * 10000.0 + 0.5);
  sb->clean_ckpt_gen = 1;
  if (getrandom (sb->uuid, sizeof sb->uuid, 0) != sizeof sb->uuid)
    sb->uuid[0] = time (NULL) ^ getpid ();
  sb->created = time (NULL);
  return 0;
}

/* Write a new, empty image through the backing-file operations io: an
 * empty checkpoint, synced, then the superblocks, synced.  Until the
 * first superblock is written the file holds no superblock and is
 * refused as not an image; after that both checkpoint slot 0 and the
 * superblock it names are complete.
 */
static int
format_image (int fd, const struct ftl_io *io, const struct ftl_superblock *sb,
              char *errbuf, size_t errlen)
{
  uint64_t lpages = DIV_ROUND_UP (sb->logical_bytes, sb->page_size);
  uint64_t size = sb->data_offset + (uint64_t) sb->blocks
    * (sb->meta_pages + sb->pages_per_block) * sb->page_size;
  struct ftl_ckpt_header h = {
    .version = FTL_FORMAT_VERSION,
    .generation = 1,
    .seq = 1,
    .body_bytes = fmt_ckpt_body_bytes (lpages, sb->blocks),
    .logical_pages = lpages,
    .blocks = sb->blocks,
    .pages_per_block = sb->pages_per_block,
    .clean = 1,
  };
  uint8_t sbbuf[FTL_SB_SLOT];
  uint8_t *ck;
  int r;

  if (ftruncate (fd, size) == -1) {
    snprintf (errbuf, errlen, "setting the image size to %" PRIu64 ": %s",
              size, strerror (errno));
    return -errno;
  }
  ck = calloc (1, sb->ckpt_bytes);
  if (!ck)
    return -ENOMEM;
  /* All logical pages unmapped; all blocks free with erase count 0. */
  for (uint64_t lpn = 0; lpn < lpages; lpn++)
    fmt_ckpt_map_encode (FTL_UNMAPPED, ck + FTL_CKPT_HDR_BYTES
                         + lpn * FTL_CKPT_MAP_ENTRY_BYTES);
  h.body_checksum = fmt_checksum (ck + FTL_CKPT_HDR_BYTES, h.body_bytes, 0);
  fmt_ckpt_header_encode (&h, ck);
  r = io->pwrite (io->opaque, fd, ck, sb->ckpt_bytes, sb->ckpt_offset[0]);
  free (ck);
  if (r == 0)
    r = io->sync (io->opaque, fd);
  if (r == 0) {
    memset (sbbuf, 0, sizeof sbbuf);
    fmt_sb_encode (sb, sbbuf);
    r = io->pwrite (io->opaque, fd, sbbuf, sizeof sbbuf, 0);
    if (r == 0)
      r = io->pwrite (io->opaque, fd, sbbuf, sizeof sbbuf, FTL_SB_SLOT);
    if (r == 0)
      r = io->sync (io->opaque, fd);
  }
  if (r < 0)
    snprintf (errbuf, errlen, "writing the new image: %s", strerror (-r));
  return r;
}

/* ---- opening ---- */

/* Read both superblock copies and keep the newest valid one. */
static int
read_superblock (int fd, uint64_t file_size, struct ftl_superblock *sb,
                 char *errbuf, size_t errlen)
{
  uint8_t buf[FTL_SB_SLOT];
  struct ftl_superblock s[2];
  enum ftl_fmt_status st[2];
  char why[2][128];
  bool magic = false;
  int best = -1;

  for (int i = 0; i < 2; i++) {
    ssize_t n = pread (fd, buf, sizeof buf, i * FTL_SB_SLOT);
    if (n < 0) {
      snprintf (errbuf, errlen, "reading the superblock: %s",
                strerror (errno));
      return -errno;
    }
    if (i == 0)
      magic = n >= 8 && memcmp (buf, FTL_SB_MAGIC, 8) == 0;
    st[i] = fmt_sb_decode (buf, n, &s[i], why[i], sizeof why[i]);
    if (st[i] == FTL_FMT_OK && (best == -1 ||
                                s[i].generation > s[best].generation))
      best = i;
  }
  if (best == -1) {
    if (magic && file_size < 2 * FTL_SB_SLOT)
      snprintf (errbuf, errlen, "the image is truncated: %" PRIu64 " bytes, "
                "too short to hold its superblocks", file_size);
    else if (st[0] == FTL_FMT_BAD_VERSION || st[1] == FTL_FMT_BAD_VERSION)
      snprintf (errbuf, errlen, "the image has a newer format (%s)",
                why[st[0] == FTL_FMT_BAD_VERSION ? 0 : 1]);
    else if ((st[0] == FTL_FMT_BAD_MAGIC || st[0] == FTL_FMT_EMPTY ||
              st[0] == FTL_FMT_BAD_LENGTH) &&
             (st[1] == FTL_FMT_BAD_MAGIC || st[1] == FTL_FMT_EMPTY ||
              st[1] == FTL_FMT_BAD_LENGTH))
      snprintf (errbuf, errlen, "not an nbdkit-ftl image (no superblock "
                "found)");
    else
      snprintf (errbuf, errlen, "both superblock copies are damaged "
                "(copy A: %s%s%s; copy B: %s%s%s)",
                fmt_status_string (st[0]), why[0][0] ? ", " : "", why[0],
                fmt_status_string (st[1]), why[1][0] ? ", " : "", why[1]);
    return -EINVAL;
  }
  *sb = s[best];

  uint64_t need = sb->data_offset + (uint64_t) sb->blocks
    * (sb->meta_pages + sb->pages_per_block) * sb->page_size;
  if (file_size < need) {
    snprintf (errbuf, errlen, "the image is truncated: %" PRIu64 " bytes, "
              "its geometry needs %" PRIu64, file_size, need);
    return -EINVAL;
  }
  return 0;
}

/* Options given for an existing image must agree with it. */
static int
check_options (const struct ftl_options *o, const struct ftl_superblock *sb,
               char *errbuf, size_t errlen)
{
  if (o->logical_bytes && o->logical_bytes != sb->logical_bytes) {
    snprintf (errbuf, errlen, "size %" PRIu64 " differs from the image's "
              "size %" PRIu64, o->logical_bytes, sb->logical_bytes);
    return -EINVAL;
  }
  if (o->page_size && o->page_size != sb->page_size) {
    snprintf (errbuf, errlen, "page size %u differs from the image's %u",
              o->page_size, sb->page_size);
    return -EINVAL;
  }
  if (o->pages_per_block && o->pages_per_block != sb->pages_per_block) {
    snprintf (errbuf, errlen, "pages per block %u differs from the image's "
              "%u", o->pages_per_block, sb->pages_per_block);
    return -EINVAL;
  }
  if (o->op_percent > 0 &&
      (uint32_t) (o->op_percent * 10000.0 + 0.5) != sb->op_ppm) {
    snprintf (errbuf, errlen, "op=%g%% differs from the image's %g%%",
              o->op_percent, sb->op_ppm / 10000.0);
    return -EINVAL;
  }
  return 0;
}

static int
validate_options (const struct ftl_options *o, char *errbuf, size_t errlen)
{
  if (!o->path || !*o->path) {
    snprintf (errbuf, errlen, "no image file given");
    return -EINVAL;
  }
  if (o->page_size &&
      (!is_power_of_2 (o->page_size) || o->page_size < FTL_MIN_PAGE_SIZE ||
       o->page_size > FTL_MAX_PAGE_SIZE)) {
    snprintf (errbuf, errlen, "page size %u must be a power of 2 from %d "
              "to %d", o->page_size, FTL_MIN_PAGE_SIZE, FTL_MAX_PAGE_SIZE);
    return -EINVAL;
  }
  if (o->pages_per_block &&
      (!is_power_of_2 (o->pages_per_block) ||
       o->pages_per_block < FTL_MIN_PAGES_PER_BLOCK ||
       o->pages_per_block > FTL_MAX_PAGES_PER_BLOCK)) {
    snprintf (errbuf, errlen, "pages per block %u must be a power of 2 from "
              "%d to %d", o->pages_per_block, FTL_MIN_PAGES_PER_BLOCK,
              FTL_MAX_PAGES_PER_BLOCK);
    return -EINVAL;
  }
  if (o->op_percent != 0 &&
      !(o->op_percent >= FTL_MIN_OP_PERCENT &&
        o->op_percent <= FTL_MAX_OP_PERCENT)) {
    snprintf (errbuf, errlen, "over-provisioning %g%% is out of range "
              "(%g to %g)", o->op_percent, FTL_MIN_OP_PERCENT,
              FTL_MAX_OP_PERCENT);
    return -EINVAL;
  }
  if (o->gc_policy != FTL_GC_GREEDY && o->gc_policy != FTL_GC_COST_BENEFIT) {
    snprintf (errbuf, errlen, "unknown garbage collection policy %d",
              (int) o->gc_policy);
    return -EINVAL;
  }
  if (o->gc_mode != FTL_GC_WATERMARK && o->gc_mode != FTL_GC_DEADLINE) {
    snprintf (errbuf, errlen, "unknown garbage collection mode %d",
              (int) o->gc_mode);
    return -EINVAL;
  }
  if (o->streams > FTL_MAX_STREAMS) {
    snprintf (errbuf, errlen, "streams %u is out of range (1 to %d)",
              o->streams, FTL_MAX_STREAMS);
    return -EINVAL;
  }
  if (o->timeout_ns > FTL_MAX_DURATION_NS) {
    snprintf (errbuf, errlen, "timeout is too long (at most %d s)",
              (int) (FTL_MAX_DURATION_NS / 1000000000));
    return -EINVAL;
  }
  if (o->timing.enabled) {
    uint64_t ch = o->timing.channels ? o->timing.channels
      : FTL_DEFAULT_CHANNELS;
    uint64_t dies = o->timing.dies ? o->timing.dies : FTL_DEFAULT_DIES;
    if (ch * dies > FTL_MAX_UNITS) {
      snprintf (errbuf, errlen, "channels x dies is %" PRIu64 ", more than "
                "%d parallel units", ch * dies, FTL_MAX_UNITS);
      return -EINVAL;
    }
    if (o->timing.read_ns > FTL_MAX_DURATION_NS ||
        o->timing.program_ns > FTL_MAX_DURATION_NS ||
        o->timing.erase_ns > FTL_MAX_DURATION_NS) {
      snprintf (errbuf, errlen, "a NAND latency is too long (at most %d s)",
                (int) (FTL_MAX_DURATION_NS / 1000000000));
      return -EINVAL;
    }
  }
  return 0;
}

/* What the steps share while an image is opened. */
struct open_ctx {
  const struct ftl_options *o;
  char *err;
  size_t errlen;
  bool created;                 /* the file did not exist before */
  uint32_t spare;               /* erase blocks beyond the logical size */
};

/* Open or create the backing file and lock it. */
static int
open_file (struct ftl *ftl, struct open_ctx *c)
{
  const struct ftl_options *o = c->o;

  ftl->fd = open (o->path, (o->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (ftl->fd == -1 && errno == ENOENT && o->logical_bytes && !o->readonly) {
    ftl->fd = open (o->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    c->created = ftl->fd >= 0;
  }
  if (ftl->fd == -1) {
    int e = errno;
    if (e == ENOENT && !o->logical_bytes)
      snprintf (c->err, c->errlen, "no such file (give a size to create a "
                "new image)");
    else
      snprintf (c->err, c->errlen, "%s", strerror (e));
    return -e;
  }
  if (flock (ftl->fd, (o->readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) == -1) {
    int e = errno;
    snprintf (c->err, c->errlen, "the image is in use by another process");
    return -e;
  }
  return 0;
}

/* Format an empty file as a new image. */
static int
create_image (struct ftl *ftl, struct open_ctx *c)
{
  const struct ftl_options *o = c->o;
  struct ftl_superblock sb;
  int r;

  if (!o->logical_bytes) {
    snprintf (c->err, c->errlen, "the file is empty: give a size to create "
              "a new image");
    return -EINVAL;
  }
  if (o->readonly) {
    snprintf (c->err, c->errlen, "the file is empty and a new image cannot "
              "be created read-only");
    return -EROFS;
  }
  r = new_geometry (o, &sb, c->err, c->errlen);
  if (r == 0)
    r = format_image (ftl->fd, o->io ? o->io : &media_default_io, &sb,
                      c->err, c->errlen);
  if (r < 0 && ftruncate (ftl->fd, 0) == -1) {
    /* leave it empty as it was, if we can */
  }
  return r;
}

static int
step_file (struct ftl *ftl, struct open_ctx *c)
{
  struct stat st;
  int r;

  r = open_file (ftl, c);
  if (r < 0)
    return r;
  if (fstat (ftl->fd, &st) == -1) {
    snprintf (c->err, c->errlen, "%s", strerror (errno));
    return -errno;
  }
  if (!S_ISREG (st.st_mode)) {
    snprintf (c->err, c->errlen, "not a regular file");
    return -EINVAL;
  }
  if (st.st_size == 0) {
    r = create_image (ftl, c);
    if (r == 0 && fstat (ftl->fd, &st) == -1)
      r = -errno;
    if (r < 0)
      return r;
  }
  r = read_superblock (ftl->fd, st.st_size, &ftl->sb, c->err, c->errlen);
  if (r == 0)
    r = check_options (c->o, &ftl->sb, c->err, c->errlen);
  return r;
}

static void
undo_file (struct ftl *ftl)
{
  if (ftl->fd >= 0)
    close (ftl->fd);
  ftl->fd = -1;
}

/* Sizes, and the host streams that the spare blocks can hold open. */
static int
step_geometry (struct ftl *ftl, struct open_ctx *c)
{
  const struct ftl_options *o = c->o;
  uint32_t data_blocks;

  ftl->logical_bytes = ftl->sb.logical_bytes;
  ftl->page_size = ftl->sb.page_size;
  ftl->page_shift = log2_u64 (ftl->page_size);
  ftl->ppb = ftl->sb.pages_per_block;
  ftl->blocks = ftl->sb.blocks;
  ftl->logical_pages = DIV_ROUND_UP (ftl->logical_bytes, ftl->page_size);
  data_blocks = DIV_ROUND_UP (ftl->logical_pages, ftl->ppb);
  c->spare = ftl->blocks - data_blocks;
  /* By default the streams grow with the spare (see
   * FTL_SPARE_PER_STREAM).
   */
  ftl->nstreams = o->streams ? o->streams
    : MAX (1, MIN (c->spare / FTL_SPARE_PER_STREAM, FTL_DEFAULT_STREAMS));
  if (c->spare < FTL_MIN_SPARE_BLOCKS (ftl->nstreams)) {
    snprintf (c->err, c->errlen, "streams=%u needs %u spare erase blocks; "
              "the image has %u", ftl->nstreams,
              FTL_MIN_SPARE_BLOCKS (ftl->nstreams), c->spare);
    return -EINVAL;
  }
  return 0;
}

static int
step_fault (struct ftl *ftl, struct open_ctx *c)
{
  return fault_init (&ftl->fault, c->o->fault_file);
}

static void
undo_fault (struct ftl *ftl)
{
  fault_free (&ftl->fault);
}

static int
step_deadline (struct ftl *ftl, struct open_ctx *c)
{
  return dl_init (&ftl->dl, c->o->timeout_ns, c->o->timeout_retries,
                  &ftl->fault, c->o->log, c->o->log_opaque);
}

static void
undo_deadline (struct ftl *ftl)
{
  dl_free (&ftl->dl);
}

static int
step_timing (struct ftl *ftl, struct open_ctx *c)
{
  return timing_init (&ftl->timing, &c->o->timing);
}

static void
undo_timing (struct ftl *ftl)
{
  timing_free (&ftl->timing);
}

static int
step_media (struct ftl *ftl, struct open_ctx *c)
{
  return media_init (&ftl->media, ftl->fd, c->o->io, ftl->page_size, ftl->ppb,
                     ftl->blocks, ftl->sb.meta_pages, ftl->sb.data_offset);
}

static void
undo_media (struct ftl *ftl)
{
  media_free (&ftl->media);
}

static int
step_wear (struct ftl *ftl, struct open_ctx *c)
{
  wl_init (ftl, c->o->wl_threshold, c->o->endurance);
  return 0;
}

static int
step_cache (struct ftl *ftl, struct open_ctx *c)
{
  int r = cache_init (ftl, c->o->write_cache_bytes);

  if (r == -EINVAL)
    snprintf (c->err, c->errlen, "write-cache of %" PRIu64 " bytes is too "
              "large for %" PRIu32 " byte pages", c->o->write_cache_bytes,
              ftl->page_size);
  return r;
}

static int
step_background (struct ftl *ftl, struct open_ctx *c)
{
  (void) c;
  bg_init (ftl);
  return 0;
}

/* GC watermarks, hot/cold separation and the checkpoint interval. */
static int
step_policies (struct ftl *ftl, struct open_ctx *c)
{
  const struct ftl_options *o = c->o;
  uint32_t spare = c->spare;

  /* Hot/cold separation, where the spare blocks allow it (see alloc.c
   * and gc.c).
   */
  ftl->one_log = o->one_log ||
    spare < FTL_SEPARATION_SPARE_BLOCKS (ftl->nstreams);
  ftl->hot_age = MAX (ftl->logical_pages * HOT_AGE_NUM / HOT_AGE_DEN,
                      ftl->ppb);
  ftl->gc.policy = o->gc_policy;
  ftl->gc.mode = o->gc_mode;
  /* Foreground GC keeps the reserve free, and the background thread a
   * few blocks more on large disks: every block kept free is spare
   * space that holds no data, so they are at most a 128th of it (at
   * most 8).  Deadline mode needs room between the watermarks, where
   * background GC may yield to a request.
   */
  ftl->gc.low = FTL_GC_LOW_BLOCKS;
  ftl->gc.high = ftl->gc.low + MIN (spare / FTL_GC_HIGH_SPARE_DIV, 8);
  if (ftl->gc.mode == FTL_GC_DEADLINE)
    ftl->gc.high = MAX (ftl->gc.high, ftl->gc.low + 2);
  /* The background thread erases blocks with nothing left to copy up
   * to here (bg.c).
   */
  ftl->gc.drain_target = ftl->gc.high + spare / 4;
  /* A checkpoint every eighth of the physical pages bounds recovery and
   * costs about 4 bytes per logical page each time.  It also releases
   * trim pages, which GC must keep until then: so that they can never
   * fill the spare space, checkpoint at least every quarter of it.
   */
  ftl->ckpt_interval = MIN ((uint64_t) ftl->blocks * ftl->ppb / 8,
                            (uint64_t) spare * ftl->ppb / 4);
  ftl->ckpt_interval = MAX (ftl->ckpt_interval, ftl->ppb);
  return 0;
}

static int
step_recovery (struct ftl *ftl, struct open_ctx *c)
{
  int r = recovery_run (ftl, c->err, c->errlen);
  if (r == 0)
    wl_recovered (ftl);
  return r;
}

/* A checkpoint after a roll-forward, so that the next recovery does not
 * depend on this one; then mark the image in use.
 */
static int
step_in_use (struct ftl *ftl, struct open_ctx *c)
{
  int r;

  if (ftl->readonly)
    return 0;
  if (ftl->sb.state != FTL_SB_CLEAN) {
    r = ckpt_write (ftl, false);
    if (r < 0) {
      snprintf (c->err, c->errlen, "writing a checkpoint after recovery "
                "failed: %s", strerror (-r));
      return r;
    }
  }
  r = ckpt_write_superblock (ftl, FTL_SB_DIRTY, 0);
  if (r < 0)
    snprintf (c->err, c->errlen, "marking the image in use: %s",
              strerror (-r));
  return r;
}

static int
step_attach (struct ftl *ftl, struct open_ctx *c)
{
  (void) c;
  media_attach (&ftl->media, &ftl->timing, &ftl->dl, &ftl->fault);
  selfcheck_assert (ftl, "open");
  /* Recovery's buffers (a checkpoint body is as large as the map) are
   * freed: give their memory back rather than keep it in malloc's heap.
   */
#ifdef __GLIBC__
  malloc_trim (0);
#endif
  return 0;
}

struct open_step {
  const char *name;
  int (*init) (struct ftl *);                     /* one of these two */
  int (*init_ctx) (struct ftl *, struct open_ctx *);
  void (*undo) (struct ftl *);                    /* may be NULL */
};

static const struct open_step open_steps[] = {
  { "file",        NULL,          step_file,       undo_file },
  { "geometry",    NULL,          step_geometry,   NULL },
  { "fault",       NULL,          step_fault,      undo_fault },
  { "deadline",    NULL,          step_deadline,   undo_deadline },
  { "timing",      NULL,          step_timing,     undo_timing },
  { "media",       NULL,          step_media,      undo_media },
  { "map",         map_init,      NULL,            map_free },
  { "write cache", NULL,          step_cache,      cache_free },
  { "blocks",      alloc_init,    NULL,            alloc_free },
  { "trim log",    trimlog_init,  NULL,            trimlog_free },
  { "gc",          gc_init,       NULL,            gc_free },
  { "wear",        NULL,          step_wear,       NULL },
  { "background",  NULL,          step_background, bg_free },
  { "checkpoints", ckpt_init,     NULL,            ckpt_free },
  { "policies",    NULL,          step_policies,   NULL },
  { "recovery",    NULL,          step_recovery,   NULL },
  { "in use",      NULL,          step_in_use,     NULL },
  { "attach",      NULL,          step_attach,     NULL },
};
#define N_OPEN_STEPS (sizeof open_steps / sizeof open_steps[0])

/* Undo the first n steps, last first, and free the handle. */
static void
undo_steps (struct ftl *ftl, size_t n)
{
  while (n-- > 0)
    if (open_steps[n].undo)
      open_steps[n].undo (ftl);
  free (ftl->path);
  free (ftl);
}

static void
free_handle (struct ftl *ftl)
{
  if (ftl)
    undo_steps (ftl, N_OPEN_STEPS);
}

int
ftl_open (const struct ftl_options *o, struct ftl **ftlp, char *errbuf,
          size_t errlen)
{
  struct open_ctx c = { .o = o, .err = errbuf, .errlen = errlen };
  struct ftl *ftl;
  size_t i;
  int r;

  *ftlp = NULL;
  if (errlen) errbuf[0] = '\0';
  r = validate_options (o, errbuf, errlen);
  if (r < 0)
    return r;
  ftl = calloc (1, sizeof *ftl);
  if (!ftl)
    return -ENOMEM;
  ftl->fd = -1;
  ftl->readonly = o->readonly;
  ftl->debug = o->debug;
  ftl->log = o->log;
  ftl->log_opaque = o->log_opaque;
  ftl->path = strdup (o->path);
  if (!ftl->path) {
    free (ftl);
    return -ENOMEM;
  }

  for (i = 0; i < N_OPEN_STEPS; i++) {
    const struct open_step *s = &open_steps[i];
    r = s->init ? s->init (ftl) : s->init_ctx (ftl, &c);
    if (r < 0) {
      /* The step that failed undoes itself too: its undo frees what
       * it allocated, whatever it got to.
       */
      log_debug (ftl, FTL_DEBUG_RECOVERY, "opening %s failed at step "
                 "\"%s\": %s", o->path, s->name, strerror (-r));
      if (c.created)
        unlink (o->path);
      if (errlen && !errbuf[0])
        snprintf (errbuf, errlen, "%s", strerror (-r));
      undo_steps (ftl, i + 1);
      return r;
    }
  }

  log_debug (ftl, FTL_DEBUG_RECOVERY, "opened %s: %" PRIu64 " bytes, %u "
             "erase blocks of %u pages of %u bytes, %u free, %u streams",
             ftl->path, ftl->logical_bytes, ftl->blocks, ftl->ppb,
             ftl->page_size, ftl->nfree, ftl->nstreams);
  *ftlp = ftl;
  return 0;
}

int
ftl_close (struct ftl *ftl)
{
  int r = 0;

  if (!ftl)
    return 0;
  ftl_stop_watchdog (ftl);
  ftl_stop_background (ftl);
  if (!ftl->readonly) {
    /* The write cache's pages go to the log before anything closes. */
    if (ftl->cache.nslots)
      r = destage_until (ftl, UINT64_MAX);
    pthread_rwlock_rdlock (&ftl->ckpt_rw);
    ftl->closing = true;
    /* The last trim records, in the room kept for them. */
    if (r == 0)
      r = trimlog_flush (ftl);
    pthread_rwlock_unlock (&ftl->ckpt_rw);
    alloc_close_frontiers (ftl);
    selfcheck_assert (ftl, "close");
    if (r == 0)
      r = ckpt_write (ftl, true);
    if (r == 0)
      r = ckpt_write_superblock (ftl, FTL_SB_CLEAN, ftl->ckpt_gen);
  }
  free_handle (ftl);
  return r;
}

void
open_abandon (struct ftl *ftl)
{
  ftl_stop_watchdog (ftl);
  free_handle (ftl);
}

static int
probe (void *opaque)
{
  struct ftl *ftl = opaque;
  return media_probe (&ftl->media);
}

int
ftl_start_watchdog (struct ftl *ftl)
{
  return dl_start (&ftl->dl, probe, ftl);
}

void
ftl_stop_watchdog (struct ftl *ftl)
{
  dl_stop (&ftl->dl);
}

void
ftl_get_geometry (const struct ftl *ftl, struct ftl_geometry *g)
{
  g->page_size = ftl->page_size;
  g->pages_per_block = ftl->ppb;
  g->blocks = ftl->blocks;
  g->logical_bytes = ftl->logical_bytes;
  g->logical_pages = ftl->logical_pages;
  g->op_percent = ftl->sb.op_ppm / 10000.0;
}
