/* nbdkit-ftl: opening, creating and closing an image.
 *
 * ftl_open is a sequence of steps (open_steps below); each sets up one
 * part of the handle and has an undo that releases it.  When a step
 * fails, the steps done so far are undone in reverse order; free_handle
 * undoes them all.  In order:
 *
 *   file          open the backing file (creating and formatting it if
 *                 needed, create.c), lock it, read the superblocks, check
 *                 the options against them
 *   geometry      derive sizes and the number of host streams
 *   fault, deadline, timing      the leaf modules
 *   media, map, blocks, trim log, gc, wear, background, checkpoints
 *                 the in-memory structures (each module's init/free)
 *   policies      GC watermarks, hot/cold separation, checkpoint interval
 *   recovery      load the newest checkpoint, roll the log forward
 *   in use        a checkpoint after a roll-forward, then the superblock
 *                 marked in use (sync=false: with the session's mark and
 *                 pinned checkpoint, the open's one sync); if the
 *                 filesystem is full, the image is served read-only
 *                 instead
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
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftl-internal.h"

/* ---- opening ---- */

/* Read both superblock copies and keep the newest valid one, with its
 * namespace table (a copy whose table is damaged, or not the one it
 * names, is not valid).  When
 * neither is valid nor newer, *zero_copies has bit i set if copy i reads
 * as zeros: with copy B never written the file may be blank, or an
 * image whose creation was cut short (create_examine tells).
 */
static int
read_superblock (int fd, uint64_t file_size, struct ftl_superblock *sb,
                 struct ftl_ns_table *nst, unsigned *zero_copies,
                 char *errbuf, size_t errlen)
{
  uint8_t buf[FTL_SB_SLOT];
  struct ftl_superblock s[2];
  struct ftl_ns_table t[2];
  enum ftl_fmt_status st[2];
  char why[2][128];
  bool magic = false;
  unsigned zero = 0;
  int best = -1;

  *zero_copies = 0;
  for (int i = 0; i < 2; i++) {
    ssize_t n = pread (fd, buf, sizeof buf, i * FTL_SB_SLOT);
    if (n < 0) {
      snprintf (errbuf, errlen, "reading the superblock: %s",
                strerror (errno));
      return -errno;
    }
    if (i == 0)
      magic = n >= 8 && memcmp (buf, FTL_SB_MAGIC, 8) == 0;
    if (all_zero (buf, MIN (n, FTL_SB_BYTES)))
      zero |= 1u << i;
    st[i] = fmt_sb_decode (buf, n, &s[i], why[i], sizeof why[i]);
    if (st[i] == FTL_FMT_OK && (s[i].flags & FTL_SB_NAMESPACES))
      st[i] = fmt_ns_decode (buf + FTL_NS_OFFSET,
                             n > FTL_NS_OFFSET ? n - FTL_NS_OFFSET : 0,
                             &s[i], &t[i], why[i], sizeof why[i]);
    else if (st[i] == FTL_FMT_OK)
      fmt_ns_default (&s[i], &t[i]);
    if (st[i] == FTL_FMT_OK && (best == -1 ||
                                s[i].generation > s[best].generation))
      best = i;
  }
  if (best == -1) {
    if (magic && file_size < 2 * FTL_SB_SLOT)
      snprintf (errbuf, errlen, "the image is truncated: %" PRIu64 " bytes, "
                "too short to hold its superblocks", file_size);
    else if (st[0] == FTL_FMT_BAD_VERSION || st[1] == FTL_FMT_BAD_VERSION) {
      snprintf (errbuf, errlen, "the image has a newer format (%s)",
                why[st[0] == FTL_FMT_BAD_VERSION ? 0 : 1]);
      return -EINVAL;
    }
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
    *zero_copies = zero;
    return -EINVAL;
  }
  *sb = s[best];
  *nst = t[best];

  uint64_t need = fmt_image_bytes (sb);
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
               const struct ftl_ns_table *t, char *errbuf, size_t errlen)
{
  int r = ns_check_options (o, t, errbuf, errlen);

  if (r < 0)
    return r;
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
        o->timing.erase_ns > FTL_MAX_DURATION_NS ||
        o->timing.command_ns > FTL_MAX_DURATION_NS ||
        o->timing.host_command_ns > FTL_MAX_DURATION_NS ||
        o->timing.suspend_ns > FTL_MAX_DURATION_NS ||
        o->timing.plp_buffer > FTL_MAX_NAND_BLOCK) {
      snprintf (errbuf, errlen, "a NAND latency is too long (at most %d s)",
                (int) (FTL_MAX_DURATION_NS / 1000000000));
      return -EINVAL;
    }
    if (o->timing.planes > FTL_MAX_PLANES ||
        o->timing.nand_page > FTL_MAX_NAND_PAGE ||
        o->timing.nand_block > FTL_MAX_NAND_BLOCK) {
      snprintf (errbuf, errlen, "planes (at most %d), nand-page (at most "
                "%d bytes) or nand-block (at most 4 GiB) out of range",
                FTL_MAX_PLANES, FTL_MAX_NAND_PAGE);
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
  bool no_block;                /* the checkpoint after recovery found no
                                 * free erase block (not a full host) */
};

/* Open or create the backing file and lock it. */
static int
open_file (struct ftl *ftl, struct open_ctx *c)
{
  const struct ftl_options *o = c->o;

  ftl->fd = open (o->path, (o->readonly ? O_RDONLY : O_RDWR) | O_CLOEXEC);
  if (ftl->fd == -1 && errno == ENOENT &&
      (o->logical_bytes || o->nnamespaces) && !o->readonly) {
    ftl->fd = open (o->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    c->created = ftl->fd >= 0;
  }
  if (ftl->fd == -1) {
    int e = errno;
    if (e == ENOENT && !o->logical_bytes && !o->nnamespaces)
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

/* Open the file and read its superblock; format it first if it is
 * blank (create.c says which files are).
 */
static int
step_file (struct ftl *ftl, struct open_ctx *c)
{
  struct stat st;
  uint64_t size;
  unsigned zero_copies;
  bool blank;
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
  size = st.st_size;
  blank = size == 0;
  if (!blank) {
    r = read_superblock (ftl->fd, size, &ftl->sb, &ftl->ns_table,
                         &zero_copies, c->err, c->errlen);
    if (r < 0 && (zero_copies & 2))
      r = create_examine (ftl->fd, size, zero_copies == 3, &blank, c->err,
                          c->errlen);
    if (r < 0)
      return r;
  }
  if (blank) {
    r = create_image (ftl->fd, c->o, size, c->err, c->errlen);
    if (r == 0 && fstat (ftl->fd, &st) == -1)
      r = -errno;
    if (r < 0)
      return r;
    if (size > 0)
      log_msg (ftl, FTL_LOG_WARN, "%s held only zeros (%" PRIu64 " bytes): "
               "a new image was created in it", ftl->path, size);
    r = read_superblock (ftl->fd, st.st_size, &ftl->sb, &ftl->ns_table,
                         &zero_copies, c->err, c->errlen);
    if (r < 0)
      return r;
  }
  return check_options (c->o, &ftl->sb, &ftl->ns_table, c->err, c->errlen);
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
  ns_init (ftl);
  alloc_place_init (ftl);
  data_blocks = DIV_ROUND_UP (ftl->logical_pages, ftl->ppb);
  c->spare = ftl->blocks - data_blocks;
  /* By default the streams grow with the spare (see
   * FTL_SPARE_PER_STREAM), which the streams of every placement group
   * share.
   */
  ftl->nstreams = o->streams ? o->streams
    : MAX (1, MIN (c->spare / FTL_SPARE_PER_STREAM
                   / ftl->place.host_groups, FTL_DEFAULT_STREAMS));
  if (c->spare < alloc_min_spare (ftl)) {
    if (ftl->place.host_groups > 1)
      snprintf (c->err, c->errlen, "placement=%s with %u namespaces and "
                "streams=%u needs %u spare erase blocks (the open blocks of "
                "each namespace's frontiers); the image has %u",
                ftl_placement_name (ftl->place.mode), ftl->place.nns,
                ftl->nstreams, alloc_min_spare (ftl), c->spare);
    else
      snprintf (c->err, c->errlen, "streams=%u needs %u spare erase blocks; "
                "the image has %u", ftl->nstreams, alloc_min_spare (ftl),
                c->spare);
    return -EINVAL;
  }
  /* The map's cache: a paged map holds as many groups as it allows;
   * a map that is not paged is whole.
   */
  uint64_t whole = pmap_whole_bytes (ftl->logical_pages);
  uint64_t cache = pmap_cache_bytes (o, ftl->logical_bytes, ftl->page_size);
  ftl->pm.on = (ftl->sb.flags & FTL_SB_PAGED) != 0;
  ftl->seed_flags = ftl->sb.flags & FTL_SB_LPN_SEED;
  if (!ftl->pm.on && o->map_cache_bytes && cache < whole) {
    char a[32];
    snprintf (c->err, c->errlen, "map-cache=%" PRIu64 " is below the whole "
              "map (%s), but the image was made without a paged map: it "
              "keeps its whole map in memory (leave map-cache out)",
              cache, space_human (whole, a, sizeof a));
    return -EINVAL;
  }
  if (ftl->pm.on) {
    cache = MIN (MAX (cache, PMAP_GROUP_BYTES), whole);
    /* A cache that map-cache= did not give is what the host allows. */
    if (!o->map_cache_bytes) {
      uint64_t fit = pmap_fit_cache (ftl->logical_pages, ftl->blocks,
                                     ftl->sb.ckpt_bytes, cache,
                                     o->memory_limit);
      if (fit < cache) {
        char a[32], b[32];
        log_msg (ftl, FTL_LOG_WARN, "the map's cache is %s, not %s: what "
                 "memory allows", space_human (fit, a, sizeof a),
                 space_human (cache, b, sizeof b));
        cache = fit;
      }
    }
    ftl->pm.limit = cache / PMAP_GROUP_BYTES;
  }
  /* An image made on a larger host, before the map is allocated. */
  return map_memory_check (ftl->logical_bytes, ftl->page_size,
                           ftl->logical_pages, ftl->blocks,
                           ftl->sb.ckpt_bytes, c->err, c->errlen,
                           c->o->memory_limit, &ftl->check_budget,
                           ftl->pm.on ? cache : 0);
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
  const struct ftl_options *o = c->o;
  uint64_t slow = o->slow_threshold_ns;
  int r = dl_init (&ftl->dl, o->timeout_ns, o->timeout_retries,
                   &ftl->fault, o->log, o->log_opaque);

  if (r == 0 && o->slow_log) {
    if (slow == 0)
      slow = o->timeout_ns ? o->timeout_ns / 4 : FTL_SLOW_DEFAULT_NS;
    r = dl_slow_init (&ftl->dl, slow);
  }
  return r;
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
  int r = media_init (&ftl->media, ftl->fd, c->o->io, ftl->page_size,
                      ftl->ppb, ftl->blocks, ftl->sb.meta_pages,
                      ftl->sb.meta_offset, ftl->sb.data_offset);
  /* sync=false: from here on media_sync does not sync (recovery
   * writes nothing; the mark is synced by media_sync_always).
   */
  ftl->no_sync = c->o->no_sync && !ftl->readonly;
  ftl->media.nosync = ftl->no_sync;
  return r;
}

static void
undo_media (struct ftl *ftl)
{
  media_free (&ftl->media);
}

static int
step_errors (struct ftl *ftl, struct open_ctx *c)
{
  return errmodel_init (&ftl->em, &c->o->errors, ftl->blocks, ftl->page_size,
                        ftl->sb.created);
}

static void
undo_errors (struct ftl *ftl)
{
  errmodel_free (&ftl->em);
}

static int
step_wear (struct ftl *ftl, struct open_ctx *c)
{
  wl_init (ftl, c->o->wl_threshold, c->o->endurance);
  return 0;
}

/* The write cache.  Its pages need room to be destaged beyond the
 * spare the FTL needs anyway (cache_spare_blocks): the default takes at
 * most a quarter of the spare blocks beyond that minimum.
 */
static int
step_cache (struct ftl *ftl, struct open_ctx *c)
{
  uint64_t bytes = c->o->write_cache_bytes;
  uint32_t min = alloc_min_spare (ftl);
  uint32_t room = c->spare > min ? c->spare - min : 0;
  uint64_t block_bytes = (uint64_t) ftl->ppb * ftl->page_size;
  int r;

  if (ftl->readonly)
    return 0;
  if (bytes == FTL_WRITE_CACHE_AUTO) {
    uint64_t cap = room >= 2 ? MAX (room / 4, 1) * block_bytes : 0;
    bytes = MIN (ftl_default_write_cache (ftl->logical_bytes), cap);
    bytes = MIN (bytes, ftl->logical_bytes);
  }
  if (bytes != 0 && bytes < ftl->page_size) {
    snprintf (c->err, c->errlen, "write-cache must be 0 or at least one "
              "page (%" PRIu32 " bytes): %" PRIu64, ftl->page_size, bytes);
    return -EINVAL;
  }
  if (bytes > ftl->logical_bytes) {
    snprintf (c->err, c->errlen, "write-cache (%" PRIu64 " bytes) is "
              "larger than the disk (%" PRIu64 " bytes)", bytes,
              ftl->logical_bytes);
    return -EINVAL;
  }
  if (cache_spare_blocks (bytes / ftl->page_size, ftl->ppb) > room) {
    snprintf (c->err, c->errlen, "write-cache of %" PRIu64 " bytes needs "
              "%u spare erase blocks to destage it, beyond the %u the FTL "
              "needs; the image has %u spare (lower write-cache, or raise "
              "op)", bytes, cache_spare_blocks (bytes / ftl->page_size,
                                                 ftl->ppb), min, c->spare);
    return -EINVAL;
  }
  if (c->o->write_cache_bypass != 0 &&
      c->o->write_cache_bypass < ftl->page_size) {
    snprintf (c->err, c->errlen, "write-cache-bypass must be 0 or at least "
              "one page (%" PRIu32 " bytes): %" PRIu64, ftl->page_size,
              c->o->write_cache_bypass);
    return -EINVAL;
  }
  r = cache_init (ftl, bytes);
  if (r == -EINVAL)
    snprintf (c->err, c->errlen, "write-cache of %" PRIu64 " bytes is too "
              "large for %" PRIu32 " byte pages", bytes, ftl->page_size);
  if (r == 0 && ftl->cache.nslots)
    ftl->cache.bypass_bytes = c->o->write_cache_bypass;
  return r;
}

static int
step_background (struct ftl *ftl, struct open_ctx *c)
{
  bg_init (ftl, c->o->manual_background);
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
    spare < alloc_separation_spare (ftl);
  /* hot-cold=auto: on until the writes show no hot set. */
  ftl->hot_cold_always = o->hot_cold_always;
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
  /* Victims that wait, relocated, for one barrier to cover them all:
   * each holds a block that is neither free nor holds data, so they
   * cost spare space as the watermarks do (see gc.c).
   */
  ftl->gc.erase_batch = spare > FTL_GC_BATCH_FREE_SPARE
    ? (spare - FTL_GC_BATCH_FREE_SPARE) / FTL_GC_BATCH_SPARE_DIV : 0;
  ftl->gc.erase_batch = MIN (MAX (ftl->gc.erase_batch, 1),
                             FTL_GC_ERASE_BATCH);
  /* The background thread erases blocks with nothing left to copy up
   * to here (bg.c).
   */
  ftl->gc.drain_target = ftl->gc.high + spare / 4;
  /* Writers wake it once the pool is a batch of erases below that (see
   * bg.c), not at every block they open: during a sequential overwrite
   * that was one wake-up per erase block, with its context switches,
   * for one erase.  Never below high, where victims with pages to copy
   * wait for it.
   */
  ftl->gc.drain_ring = ftl->gc.drain_target
    - MIN (FTL_GC_DRAIN_RING_SLACK, (ftl->gc.drain_target - ftl->gc.high) / 2);
  /* A checkpoint every eighth of the physical pages bounds recovery and
   * costs about 4 bytes per logical page each time.  It also releases
   * trim pages, which GC must keep until then: so that they can never
   * fill the spare space, checkpoint too once they reach a quarter of
   * it.  (Counting every page against that quarter, as before, wrote a
   * checkpoint 2.3 times as often on a 1 GiB disk, with no trims.)
   */
  ftl->ckpt_interval = MAX ((uint64_t) ftl->blocks * ftl->ppb / 8, ftl->ppb);
  ftl->ckpt_trim_interval = MAX ((uint64_t) spare * ftl->ppb / 4, 1);
  return 0;
}

/* The SLC cache (slc.c): after the write cache and the policies. */
static int
step_slc (struct ftl *ftl, struct open_ctx *c)
{
  return slc_init (ftl, &c->o->slc, c->spare, c->err, c->errlen);
}

static int
step_recovery (struct ftl *ftl, struct open_ctx *c)
{
  int r = recovery_run (ftl, c->err, c->errlen);
  if (r == 0) {
    slc_recovered (ftl);
    wl_recovered (ftl);
    errmodel_recovered (ftl);
    if ((r = map_checks_load (ftl)) < 0)
      snprintf (c->err, c->errlen, "loading the page checks: %s",
                strerror (-r));
  }
  return r;
}

/* A checkpoint after a roll-forward, so that the next recovery does not
 * depend on this one; then mark the image in use.
 */
static int
mark_in_use (struct ftl *ftl, struct open_ctx *c)
{
  int r;

  /* sync=false: pin the checkpoint that recovery loaded, durable
   * before this open wrote anything (or made so by the sync that
   * marks the image in use below, which covers every write before it).
   * Every superblock written from here on carries the mark and the pin
   * (ckpt_write_superblock), and no checkpoint of the session goes to
   * the pinned slot (ckpt.c).
   */
  if (ftl->no_sync) {
    ftl->pinned_gen = ftl->ckpt_gen;
    ftl->pinned_slot = ftl->ckpt_slot;
    ftl->pinned_seq = ftl->durable_ckpt_seq;
  }
  /* An older image becomes this version: its superblock says so
   * before anything of the new version is written (format.h).
   */
  if (ftl->sb.version < FTL_FORMAT_VERSION) {
    ftl->sb.version = FTL_FORMAT_VERSION;
    r = ckpt_write_superblock (ftl, FTL_SB_DIRTY, 0);
    if (r < 0) {
      snprintf (c->err, c->errlen, "upgrading the image to format "
                "version %u: %s", FTL_FORMAT_VERSION, strerror (-r));
      return r;
    }
  }
  /* A power cycle, and an unsafe shutdown if the last session did not
   * close.  That session's own power cycle is in the image only if it
   * wrote a checkpoint; if the newest checkpoint is a clean one, it did
   * not, and it is counted now.
   */
  ctr_add (ftl, FTL_CTR_POWER_CYCLES, 1);
  if (ftl->was_unclean) {
    ctr_add (ftl, FTL_CTR_UNSAFE_SHUTDOWNS, 1);
    if (ftl->last_ckpt_clean)
      ctr_add (ftl, FTL_CTR_POWER_CYCLES, 1);
  }
  if (ftl->sb.state != FTL_SB_CLEAN) {
    r = host_ckpt (ftl, false, false);
    if (r < 0) {
      /* A paged map's translation pages need a free block, and garbage
       * collection found none to give (it said so).
       */
      c->no_block = r == -ENOSPC && alloc_nfree (ftl) <= FTL_RESERVE_BLOCKS;
      snprintf (c->err, c->errlen, "writing a checkpoint after recovery "
                "failed: %s", c->no_block ? "no free erase block for its "
                "translation pages" : strerror (-r));
      return r;
    }
  }
  r = ckpt_write_superblock (ftl, FTL_SB_DIRTY, 0);
  if (r < 0)
    snprintf (c->err, c->errlen, "marking the image in use: %s",
              strerror (-r));
  return r;
}

/* Mark the image in use.  When the filesystem that holds it is full
 * (a sparse image lets it fill under the disk), nothing of this was
 * committed (a checkpoint counts once the superblock names it, and an
 * unwritten superblock leaves the previous one): the image is served
 * read-only, as recovery found it, and the health log says so.  Freeing
 * space and opening it again makes it writable.
 */
static int
step_in_use (struct ftl *ftl, struct open_ctx *c)
{
  int r;

  if (ftl->readonly)
    return 0;
  r = mark_in_use (ftl, c);
  if (r == -ENOSPC && c->no_block) {
    log_msg (ftl, FTL_LOG_ERROR, "%s: %s (%u erase blocks free): the disk "
             "is read-only", ftl->path, c->err, alloc_nfree (ftl));
    ftl->readonly = true;
    if (c->errlen)
      c->err[0] = '\0';
    r = 0;
  }
  else if (r == -ENOSPC || r == -EDQUOT) {
    log_msg (ftl, FTL_LOG_ERROR, "%s: the filesystem that holds the image "
             "is full (%s): the disk is read-only; free space on it and "
             "open the image again to write", ftl->path,
             c->errlen && c->err[0] ? c->err : strerror (-r));
    ftl->readonly = true;
    ftl->host_full = true;
    if (c->errlen)
      c->err[0] = '\0';
    r = 0;
  }
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
  { "errors",      NULL,          step_errors,     undo_errors },
  { "map",         map_init,      NULL,            map_free },
  { "durable",     durable_init,  NULL,            durable_free },
  { "write cache", NULL,          step_cache,      cache_free },
  { "blocks",      alloc_init,    NULL,            alloc_free },
  { "trim log",    trimlog_init,  NULL,            trimlog_free },
  { "gc",          gc_init,       NULL,            gc_free },
  { "wear",        NULL,          step_wear,       NULL },
  { "background",  NULL,          step_background, bg_free },
  { "checkpoints", ckpt_init,     NULL,            ckpt_free },
  { "policies",    NULL,          step_policies,   NULL },
  { "slc cache",   NULL,          step_slc,        NULL },
  { "recovery",    NULL,          step_recovery,   NULL },
  { "in use",      NULL,          step_in_use,     NULL },
  { "attach",      NULL,          step_attach,     NULL },
};
#define N_OPEN_STEPS (sizeof open_steps / sizeof open_steps[0])

/* -D ftl.recovery=1: what a step of the open took, in time and in the
 * process's peak memory so far (a slow open after a crash is found
 * here).
 */
static void
step_took (struct ftl *ftl, const char *name, uint64_t t0)
{
  struct rusage ru;

  if (!(ftl->logger.debug & FTL_DEBUG_RECOVERY))
    return;
  if (getrusage (RUSAGE_SELF, &ru) < 0)
    ru.ru_maxrss = 0;
  log_debug (ftl, FTL_DEBUG_RECOVERY, "open step \"%s\": %.3f s, peak RSS "
             "%ld MiB", name, (clock_now () - t0) / 1e9, ru.ru_maxrss / 1024);
}

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
  /* Aligned as its type says (its counter shards and the deadline
   * tracker's hot fields are on cache lines of their own).
   */
  ftl = aligned_alloc (_Alignof (struct ftl), sizeof *ftl);
  if (!ftl)
    return -ENOMEM;
  memset (ftl, 0, sizeof *ftl);
  ftl->fd = -1;
  ftl->readonly = o->readonly;
  ftl->logger = (struct ftl_logger) {
    .fn = o->log, .opaque = o->log_opaque, .debug = o->debug,
    .off = &ftl->powered_off,
  };
  ftl->path = strdup (o->path);
  if (!ftl->path) {
    free (ftl);
    return -ENOMEM;
  }

  ftl->opening = true;
  for (i = 0; i < N_OPEN_STEPS; i++) {
    const struct open_step *s = &open_steps[i];
    uint64_t t0 = clock_now ();
    r = s->init ? s->init (ftl) : s->init_ctx (ftl, &c);
    step_took (ftl, s->name, t0);
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

  ftl->opening = false;
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
  /* After a power cut nothing is written: the next open recovers. */
  if (!ftl->readonly && !powered_off (ftl)) {
    /* The write cache's pages go to the log before anything closes. */
    if (ftl->cache.nslots)
      r = destage_until (ftl, UINT64_MAX);
    ckpt_shared (ftl);
    ftl->closing = true;
    /* The last trim records, in the room kept for them (which only a
     * failed program takes: then GC makes room first).
     */
    if (r == 0 && (r = trimlog_flush (ftl, NULL)) == -ENOSPC &&
        (r = gc_make_room (ftl, true)) == 0)
      r = trimlog_flush (ftl, NULL);
    ckpt_release (ftl);
    alloc_close_frontiers (ftl);
    selfcheck_assert (ftl, "close");
    if (r == 0)
      r = host_ckpt (ftl, true, false);
    /* sync=false: nothing of the session was synced.  The mark may be
     * cleared only once all of it is durable (else a crash of the host
     * could leave a clean superblock over lost data): one sync, then
     * the clean superblock and its own sync (ckpt_write_superblock),
     * so that the next open need not verify the image.
     */
    if (r == 0 && ftl->no_sync)
      r = media_sync_always (&ftl->media);
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
  ftl_stop_background (ftl);
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

