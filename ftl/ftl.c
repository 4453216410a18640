/* nbdkit-ftl: the public API: open, close and the data path.
 *
 * A request flows one way:
 *
 *   ftl_write ---> stripe locks ---> host frontier ---> media_program
 *                                          |                |
 *                                          v                v
 *                                  (no free block?)     map_install
 *                                     gc_reclaim
 *
 *   ftl_read ----> l2p (atomic load) ---> media_read + OOB check,
 *                                         validated by erase generation
 *
 *   ftl_trim/zero -> stripe locks ---> trim log entry ---> map_unmap
 *
 * See ftl-internal.h for the locks and the durability invariants.
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

/* Longest run of pages read with one call (bounds the OOB buffer). */
#define READ_RUN_MAX 128

void
ftl_log (struct ftl *ftl, enum ftl_log_level level, const char *fs, ...)
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
ftl_debug (struct ftl *ftl, unsigned category, const char *fs, ...)
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
  if (lpages >= FTL_P2L_TRIM || blocks * ppb >= FTL_P2L_TRIM) {
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
  sb->meta_pages = ftl_meta_pages (ps, ppb);
  sb->logical_bytes = o->logical_bytes;
  sb->ckpt_bytes = ftl_ckpt_bytes (ps, lpages, blocks);
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

static int
pwrite_all (int fd, const void *buf, size_t len, off_t off)
{
  return ftl_default_io.pwrite (NULL, fd, buf, len, off);
}

/* Write a new, empty image: an empty checkpoint, then the superblocks. */
static int
format_image (int fd, const struct ftl_superblock *sb, char *errbuf,
              size_t errlen)
{
  uint64_t lpages = DIV_ROUND_UP (sb->logical_bytes, sb->page_size);
  uint64_t size = sb->data_offset + (uint64_t) sb->blocks
    * (sb->meta_pages + sb->pages_per_block) * sb->page_size;
  struct ftl_ckpt_header h = {
    .version = FTL_FORMAT_VERSION,
    .generation = 1,
    .seq = 1,
    .body_bytes = ftl_ckpt_body_bytes (lpages, sb->blocks),
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
    ftl_ckpt_map_encode (FTL_UNMAPPED, ck + FTL_CKPT_HDR_BYTES
                         + lpn * FTL_CKPT_MAP_ENTRY_BYTES);
  h.body_checksum = ftl_checksum (ck + FTL_CKPT_HDR_BYTES, h.body_bytes, 0);
  ftl_ckpt_header_encode (&h, ck);
  r = pwrite_all (fd, ck, sb->ckpt_bytes, sb->ckpt_offset[0]);
  free (ck);
  if (r == 0 && fdatasync (fd) == -1)
    r = -errno;
  if (r == 0) {
    memset (sbbuf, 0, sizeof sbbuf);
    ftl_sb_encode (sb, sbbuf);
    r = pwrite_all (fd, sbbuf, sizeof sbbuf, 0);
    if (r == 0)
      r = pwrite_all (fd, sbbuf, sizeof sbbuf, FTL_SB_SLOT);
    if (r == 0 && fsync (fd) == -1)
      r = -errno;
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
    st[i] = ftl_sb_decode (buf, n, &s[i], why[i], sizeof why[i]);
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
                ftl_fmt_status_string (st[0]), why[0][0] ? ", " : "", why[0],
                ftl_fmt_status_string (st[1]), why[1][0] ? ", " : "", why[1]);
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

static void
ftl_free (struct ftl *ftl)
{
  if (!ftl)
    return;
  gc_free (ftl);
  alloc_free (ftl);
  for (unsigned i = 0; i < FTL_MAX_STREAMS; i++) {
    free (ftl->host[i].oob);
    free (ftl->hot[i].oob);
  }
  free (ftl->gcf.oob);
  free (ftl->metaf.oob);
  free (ftl->trim_buf);
  free (ftl->trim_page);
  free (ftl->l2p);
  free (ftl->valid);
  free (ftl->trim_pages);
  media_free (&ftl->media);
  dl_free (&ftl->dl);
  timing_free (&ftl->timing);
  fault_free (&ftl->fault);
  pthread_mutex_destroy (&ftl->trim_lock);
  pthread_mutex_destroy (&ftl->bg_lock);
  pthread_cond_destroy (&ftl->bg_cond);
  pthread_mutex_destroy (&ftl->ckpt_lock);
  pthread_rwlock_destroy (&ftl->ckpt_rw);
  if (ftl->fd >= 0)
    close (ftl->fd);
  free (ftl->path);
  free (ftl);
}

int
ftl_open (const struct ftl_options *o, struct ftl **ftlp, char *errbuf,
          size_t errlen)
{
  struct ftl *ftl;
  struct stat st;
  bool created = false;
  uint32_t data_blocks, spare;
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
  ftl->path = strdup (o->path);
  ftl->readonly = o->readonly;
  ftl->debug = o->debug;
  ftl->log = o->log;
  ftl->log_opaque = o->log_opaque;
  pthread_mutex_init (&ftl->trim_lock, NULL);
  pthread_mutex_init (&ftl->bg_lock, NULL);
  pthread_cond_init (&ftl->bg_cond, NULL);
  pthread_mutex_init (&ftl->ckpt_lock, NULL);
  /* Writer-preferring: under a steady stream of requests a checkpoint
   * must not starve.  Nothing takes ckpt_rw shared twice in one thread,
   * which this kind of lock would not allow.
   */
  pthread_rwlockattr_t rwattr;
  pthread_rwlockattr_init (&rwattr);
  pthread_rwlockattr_setkind_np (&rwattr,
                                 PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init (&ftl->ckpt_rw, &rwattr);
  pthread_rwlockattr_destroy (&rwattr);
  if (!ftl->path) { r = -ENOMEM; goto fail; }
  r = fault_init (&ftl->fault, o->fault_file);
  if (r == 0)
    r = dl_init (&ftl->dl, o->timeout_ns, o->timeout_retries, &ftl->fault,
                 o->log, o->log_opaque);
  if (r == 0)
    r = timing_init (&ftl->timing, &o->timing);
  if (r < 0)
    goto fail;

  /* Open or create the file. */
  ftl->fd = open (o->path, (o->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (ftl->fd == -1 && errno == ENOENT && o->logical_bytes && !o->readonly) {
    ftl->fd = open (o->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    created = ftl->fd >= 0;
  }
  if (ftl->fd == -1) {
    r = -errno;
    if (errno == ENOENT && !o->logical_bytes)
      snprintf (errbuf, errlen, "no such file (give a size to create a "
                "new image)");
    else
      snprintf (errbuf, errlen, "%s", strerror (errno));
    goto fail;
  }
  if (flock (ftl->fd, (o->readonly ? LOCK_SH : LOCK_EX) | LOCK_NB) == -1) {
    r = -errno;
    snprintf (errbuf, errlen, "the image is in use by another process");
    goto fail;
  }
  if (fstat (ftl->fd, &st) == -1) {
    r = -errno;
    snprintf (errbuf, errlen, "%s", strerror (errno));
    goto fail;
  }
  if (!S_ISREG (st.st_mode)) {
    r = -EINVAL;
    snprintf (errbuf, errlen, "not a regular file");
    goto fail;
  }

  if (st.st_size == 0) {
    struct ftl_superblock sb;
    if (!o->logical_bytes) {
      r = -EINVAL;
      snprintf (errbuf, errlen, "the file is empty: give a size to create "
                "a new image");
      goto fail;
    }
    if (o->readonly) {
      r = -EROFS;
      snprintf (errbuf, errlen, "the file is empty and a new image cannot "
                "be created read-only");
      goto fail;
    }
    r = new_geometry (o, &sb, errbuf, errlen);
    if (r == 0)
      r = format_image (ftl->fd, &sb, errbuf, errlen);
    if (r < 0) {
      if (ftruncate (ftl->fd, 0) == -1) { /* leave it empty as it was */ }
      goto fail;
    }
    if (fstat (ftl->fd, &st) == -1) {
      r = -errno;
      goto fail;
    }
  }

  r = read_superblock (ftl->fd, st.st_size, &ftl->sb, errbuf, errlen);
  if (r < 0)
    goto fail;
  r = check_options (o, &ftl->sb, errbuf, errlen);
  if (r < 0)
    goto fail;

  ftl->logical_bytes = ftl->sb.logical_bytes;
  ftl->page_size = ftl->sb.page_size;
  ftl->page_shift = log2_u64 (ftl->page_size);
  ftl->ppb = ftl->sb.pages_per_block;
  ftl->blocks = ftl->sb.blocks;
  ftl->logical_pages = DIV_ROUND_UP (ftl->logical_bytes, ftl->page_size);

  /* Streams: as many as asked (or the default) that the spare blocks
   * can hold open at once.
   */
  data_blocks = DIV_ROUND_UP (ftl->logical_pages, ftl->ppb);
  spare = ftl->blocks - data_blocks;
  if (o->streams) {
    if (spare < FTL_MIN_SPARE_BLOCKS (o->streams)) {
      r = -EINVAL;
      snprintf (errbuf, errlen, "streams=%u needs %u spare erase blocks; "
                "the image has %u", o->streams,
                FTL_MIN_SPARE_BLOCKS (o->streams), spare);
      goto fail;
    }
    ftl->nstreams = o->streams;
  }
  else {
    ftl->nstreams = FTL_DEFAULT_STREAMS;
    while (ftl->nstreams > 1 &&
           spare < FTL_MIN_SPARE_BLOCKS (ftl->nstreams) + ftl->nstreams)
      ftl->nstreams--;
  }

  /* The in-memory structures. */
  r = media_init (&ftl->media, ftl->fd, o->io, ftl->page_size, ftl->ppb,
                  ftl->blocks, ftl->sb.meta_pages, ftl->sb.data_offset);
  if (r < 0)
    goto fail;
  ftl->l2p = malloc (ftl->logical_pages * sizeof *ftl->l2p);
  ftl->valid = calloc (ftl->blocks, sizeof *ftl->valid);
  ftl->trim_pages = calloc (ftl->blocks, sizeof *ftl->trim_pages);
  ftl->trim_cap = ftl_trim_page_capacity (ftl->page_size);
  ftl->trim_buf = malloc (ftl->trim_cap * sizeof *ftl->trim_buf);
  ftl->trim_page = malloc (ftl->page_size);
  if (!ftl->l2p || !ftl->valid || !ftl->trim_pages ||
      !ftl->trim_buf ||
      !ftl->trim_page) {
    r = -ENOMEM;
    goto fail;
  }
  r = alloc_init (ftl);
  if (r == 0)
    r = gc_init (ftl);
  if (r < 0)
    goto fail;
  for (unsigned i = 0; i < FTL_MAX_STREAMS; i++) {
    ftl->host[i].oob = malloc ((size_t) ftl->ppb * FTL_OOB_BYTES);
    ftl->hot[i].oob = malloc ((size_t) ftl->ppb * FTL_OOB_BYTES);
    if (!ftl->host[i].oob || !ftl->hot[i].oob) { r = -ENOMEM; goto fail; }
  }

  /* Hot/cold separation, where the spare blocks allow it (see alloc.c
   * and gc.c).
   */
  ftl->one_log = o->one_log ||
    spare < FTL_SEPARATION_SPARE_BLOCKS (ftl->nstreams);
  ftl->hot_age = MAX (ftl->logical_pages * HOT_AGE_NUM / HOT_AGE_DEN, ftl->ppb);

  /* Foreground GC keeps a few blocks beyond the reserve free. */
  ftl->gc_policy = o->gc_policy;
  ftl->gc_mode = o->gc_mode;
  ftl->wl_threshold = o->wl_threshold ? o->wl_threshold
    : FTL_DEFAULT_WL_THRESHOLD;
  ftl->endurance = o->endurance ? o->endurance : FTL_DEFAULT_ENDURANCE;
  ftl->gc_low = FTL_GC_LOW_BLOCKS;
  ftl->gc_high = ftl->gc_low + MIN (spare / 16, 8);
  /* The background thread erases blocks with nothing left to copy up
   * to here (gc.c, background_drain).
   */
  ftl->gc_drain_target = ftl->gc_high + spare / 4;
  /* A checkpoint every eighth of the physical pages bounds recovery and
   * costs about 4 bytes per logical page each time.  It also releases
   * trim pages, which GC must keep until then: so that they can never
   * fill the spare space, checkpoint at least every quarter of it.
   */
  ftl->ckpt_interval = MIN ((uint64_t) ftl->blocks * ftl->ppb / 8,
                            (uint64_t) spare * ftl->ppb / 4);
  ftl->ckpt_interval = MAX (ftl->ckpt_interval, ftl->ppb);

  r = recovery_run (ftl, errbuf, errlen);
  if (r < 0)
    goto fail;
  check_worn_out (ftl);

  if (!ftl->readonly) {
    /* A checkpoint after a roll-forward, so that the next recovery does
     * not depend on this one; then mark the image in use.
     */
    if (ftl->sb.state != FTL_SB_CLEAN) {
      r = ckpt_write (ftl, false);
      if (r < 0) {
        snprintf (errbuf, errlen, "writing a checkpoint after recovery "
                  "failed: %s", strerror (-r));
        goto fail;
      }
    }
    r = sb_write (ftl, FTL_SB_DIRTY, 0);
    if (r < 0) {
      snprintf (errbuf, errlen, "marking the image in use: %s",
                strerror (-r));
      goto fail;
    }
  }

  /* From here on the media is timed and faults may be injected;
   * recovery is neither.
   */
  media_attach (&ftl->media, &ftl->timing, &ftl->dl, &ftl->fault);

  /* Recovery's buffers (a checkpoint body is as large as the map) are
   * freed: give their memory back rather than keep it in malloc's heap.
   */
#ifdef __GLIBC__
  malloc_trim (0);
#endif

  ftl_debug (ftl, FTL_DEBUG_RECOVERY, "opened %s: %" PRIu64 " bytes, %u "
             "erase blocks of %u pages of %u bytes, %u free, %u streams",
             ftl->path, ftl->logical_bytes, ftl->blocks, ftl->ppb,
             ftl->page_size, ftl->nfree, ftl->nstreams);
  *ftlp = ftl;
  return 0;

 fail:
  if (created)
    unlink (o->path);
  if (errlen && !errbuf[0])
    snprintf (errbuf, errlen, "%s", strerror (-r));
  ftl_free (ftl);
  return r;
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
    pthread_rwlock_rdlock (&ftl->ckpt_rw);
    ftl->closing = true;
    r = trimlog_flush (ftl);
    pthread_rwlock_unlock (&ftl->ckpt_rw);
    frontier_close_all (ftl);
    if (r == 0)
      r = ckpt_write (ftl, true);
    if (r == 0)
      r = sb_write (ftl, FTL_SB_CLEAN, ftl->ckpt_gen);
  }
  ftl_free (ftl);
  return r;
}

void
check_worn_out (struct ftl *ftl)
{
  uint64_t data_blocks = DIV_ROUND_UP (ftl->logical_pages, ftl->ppb);
  uint64_t usable = ftl->blocks - ftl->retired;

  if (__atomic_load_n (&ftl->worn_out, __ATOMIC_RELAXED))
    return;
  if (!one_log (ftl) &&
      usable < data_blocks + FTL_SEPARATION_SPARE_BLOCKS (ftl->nstreams)) {
    /* Too few blocks left to keep hot and cold data apart: the open
     * hot frontiers fill up and are not replaced.
     */
    __atomic_store_n (&ftl->one_log, true, __ATOMIC_RELAXED);
    ftl_log (ftl, FTL_LOG_WARN, "%u of %u erase blocks are retired: hot "
             "and cold data are no longer kept apart", ftl->retired,
             ftl->blocks);
  }
  if (usable < data_blocks + FTL_MIN_SPARE_BLOCKS (ftl->nstreams)) {
    __atomic_store_n (&ftl->worn_out, true, __ATOMIC_RELEASE);
    ftl_log (ftl, FTL_LOG_ERROR, "the disk is worn out: %u of %u erase "
             "blocks are retired (endurance %u erases), too few remain to "
             "sustain writes; it is read-only from now on", ftl->retired,
             ftl->blocks, ftl->endurance);
  }
}

bool
ftl_is_read_only (struct ftl *ftl)
{
  return ftl->readonly || __atomic_load_n (&ftl->worn_out, __ATOMIC_ACQUIRE);
}

void
ftl_abandon (struct ftl *ftl)
{
  ftl_stop_watchdog (ftl);
  ftl_free (ftl);
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

/* ---- the data path ---- */

static void ckpt_maybe_held (struct ftl *ftl);

static int
check_range (struct ftl *ftl, uint64_t count, uint64_t offset)
{
  if (offset > ftl->logical_bytes || count > ftl->logical_bytes - offset) {
    ftl_log (ftl, FTL_LOG_ERROR, "request beyond the end of the disk "
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
      ftl_log (ftl, FTL_LOG_ERROR, "reading erase block %u: %s", blk,
               strerror (-r));
    return r;
  }
  for (uint32_t i = 0; i < n; i++) {
    struct ftl_oob o;
    const uint8_t *p = buf + ((size_t) i << ftl->page_shift);
    enum ftl_fmt_status s = ftl_oob_decode (oob + i * FTL_OOB_BYTES,
                                            FTL_OOB_BYTES, &o);
    if (s != FTL_FMT_OK || o.kind != FTL_OOB_DATA || o.lpn != lpn + i ||
        o.erase_count != ec ||
        o.data_checksum != ftl_checksum (p, ftl->page_size, ppn + i)) {
      ftl_log (ftl, FTL_LOG_ERROR, "logical page %" PRIu64 ": page %u of "
               "erase block %u is damaged (%s)", lpn + i,
               media_ppn_page (m, ppn + i), blk,
               s != FTL_FMT_OK ? ftl_fmt_status_string (s) :
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
ftl_read_pages (struct ftl *ftl, uint64_t lpn, uint32_t n, uint8_t *buf)
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
      r = ftl_read_pages (ftl, lpn, n, out);
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
      r = ftl_read_pages (ftl, lpn, 1, bounce);
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

/* Program n whole pages for lpn.. at frontier f (whose lock the caller
 * holds, with the stripe locks of the pages and ckpt_rw shared).
 */
static int
write_pages (struct ftl *ftl, struct frontier *f, uint64_t lpn, uint64_t n,
             const uint8_t *data)
{
  while (n > 0) {
    int r = frontier_ensure_block (ftl, f);
    if (r < 0)
      return r;
    uint32_t blk = f->block, page = f->wp;
    uint32_t k = MIN (n, ftl->ppb - page);
    uint32_t ec = media_erase_count (&ftl->media, blk);
    uint64_t seq = __atomic_fetch_add (&ftl->next_seq, k, __ATOMIC_RELAXED);

    for (uint32_t i = 0; i < k; i++) {
      uint32_t ppn = media_ppn (&ftl->media, blk, page + i);
      struct ftl_oob o = {
        .kind = FTL_OOB_DATA,
        .lpn = lpn + i,
        .seq = seq + i,
        .erase_count = ec,
        .data_checksum = ftl_checksum (data + ((size_t) i << ftl->page_shift),
                                       ftl->page_size, ppn),
      };
      ftl_oob_encode (&o, f->oob + (size_t) i * FTL_OOB_BYTES);
    }
    block_note_seqs (ftl, blk, k * seq + (uint64_t) k * (k - 1) / 2, k);
    r = media_program (&ftl->media, blk, page, k, data, f->oob);
    if (r < 0) {
      /* The pages count as programmed (never reprogrammed), hold nothing
       * the map points to, and are garbage for GC.
       */
      frontier_advance (ftl, f, k);
      if (r != -ETIMEDOUT)
        ftl_log (ftl, FTL_LOG_ERROR, "programming erase block %u: %s", blk,
                 strerror (-r));
      return r;
    }
    /* Installed before the block can close, so GC never sees a FULL
     * block whose pages are not yet in the map.
     */
    for (uint32_t i = 0; i < k; i++)
      map_install (ftl, lpn + i, media_ppn (&ftl->media, blk, page + i));
    /* Part of the request is in the map: from now on an abort only
     * changes its reply (all or nothing).
     */
    dl_commit ();
    frontier_advance (ftl, f, k);
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

  stripes_lock (ftl, first, last);
  pthread_mutex_lock (&f->lock);
  while (pos < end) {
    uint64_t lpn = pos >> ftl->page_shift;
    uint32_t in = pos & (ftl->page_size - 1);
    if (buf && in == 0 && end - pos >= ftl->page_size) {
      uint64_t n = (end - pos) >> ftl->page_shift;
      r = write_pages (ftl, f, lpn, n, buf + (pos - offset));
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
      r = ftl_read_pages (ftl, lpn, 1, bounce);
      if (r < 0) break;
      if (buf)
        memcpy (bounce + in, buf + (pos - offset), len);
      else
        memset (bounce + in, 0, len);
      r = write_pages (ftl, f, lpn, 1, bounce);
      if (r < 0) break;
      pos += len;
    }
  }
  pthread_mutex_unlock (&f->lock);
  stripes_unlock (ftl, first, last);
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
  stripes_lock (ftl, lpn, lpn + n - 1);
  for (uint64_t l = lpn; l < lpn + n && !any; l++)
    any = l2p_load (ftl, l) != FTL_UNMAPPED;
  if (any) {
    /* Logged before unmapping: see ftl-internal.h. */
    r = trimlog_append (ftl, lpn, n, NULL);
    if (r == 0)
      for (uint64_t l = lpn; l < lpn + n; l++)
        map_unmap (ftl, l);
  }
  stripes_unlock (ftl, lpn, lpn + n - 1);
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
  r = trimlog_make_room (ftl);
  dl_release ();
  if (r == 0)
    r = gc_barrier (ftl);       /* lets GC erase what it drained before */
  return r;
}

static void
ckpt_maybe_held (struct ftl *ftl)
{
  dl_hold ();
  ckpt_maybe (ftl, false);
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
