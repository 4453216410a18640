/* nbdkit-ftl: creating an image: the geometry of a new image from the
 * options, formatting a file as that image, and telling what a
 * creation cut short leaves.  Called by open.c; see format.h for the
 * layout it writes.
 *
 * Creating an image writes, in order (format_image), each step
 * durable before the next begins:
 *
 *   size      the file's size: bytes not written read as zeros
 *   slot 0    an empty checkpoint                              sync
 *   copy A    the superblock, which names checkpoint slot 0,
 *             and the namespace table after it, if any         sync
 *   copy B    the superblock and table again                   sync
 *   name      the directory that holds the file                sync
 *
 * The superblock is the commit: an image opens once a copy of it is
 * whole.  A power cut before that leaves one of these, which is never
 * opened as an image, and never formatted again unless it provably
 * holds nothing:
 *
 *   no file, or an empty one, or nothing but zeros: a blank file;
 *       given a size, the image is created in it (again)
 *   no valid superblock copy, copy B all zeros, and the empty
 *       checkpoint (or the start of it) where slot 0 goes: an image
 *       whose creation was cut short (CREATE_CUT_SHORT,
 *       create_examine); refused, and left as it is
 *   a checkpoint torn without its first sector: not told apart from
 *       other files, refused as not an image
 *
 * Zeros where the superblocks go do not prove that a file is ours
 * (other formats leave their first 8 KiB empty too, e.g. a ZFS vdev):
 * only a file with nothing at all in it is formatted without asking.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ftl-internal.h"

/* Where a new image with pages of ps bytes puts checkpoint slot 0: at
 * the first page after the two superblock copies.
 */
static uint64_t
ckpt_slot0_offset (uint32_t ps)
{
  return ROUND_UP (2 * FTL_SB_SLOT, ps);
}

/* The namespace table of a new image (format.h) from o->namespaces:
 * in the order given, each right after the one before from logical
 * page 0.  The logical size is size=, which they must fit in, or their
 * sum.  Without namespaces=, t->count is 0 (no table: one namespace ""
 * of the whole size).
 */
static int
new_namespaces (const struct ftl_options *o, uint32_t ps, uint64_t *logical,
                struct ftl_ns_table *t, char *errbuf, size_t errlen)
{
  uint64_t sum = 0;

  memset (t, 0, sizeof *t);
  *logical = o->logical_bytes;
  if (!o->nnamespaces && o->placement > FTL_PLACE_SHARED) {
    snprintf (errbuf, errlen, "placement=%s needs namespaces= (an image "
              "of one namespace has nothing to keep apart)",
              ftl_placement_name (o->placement - 1));
    return -EINVAL;
  }
  if (!o->nnamespaces)
    return 0;
  if (o->nnamespaces > FTL_NS_MAX) {
    snprintf (errbuf, errlen, "namespaces: %u of them, at most %u",
              o->nnamespaces, FTL_NS_MAX);
    return -EINVAL;
  }
  t->version = FTL_FORMAT_VERSION;
  t->count = o->nnamespaces;
  t->placement = o->placement ? o->placement - 1 : FTL_PLACEMENT_SHARED;
  for (unsigned i = 0; i < o->nnamespaces; i++) {
    const struct ftl_ns_spec *n = &o->namespaces[i];
    size_t len = strlen (n->name);
    if (!fmt_ns_name_ok (n->name, len)) {
      snprintf (errbuf, errlen, "namespaces: bad name '%.64s' (1 to %u "
                "characters of A-Z a-z 0-9 . _ -)", n->name,
                FTL_NS_NAME_MAX);
      return -EINVAL;
    }
    if (n->bytes == 0 || n->bytes % ps != 0) {
      snprintf (errbuf, errlen, "namespaces: '%s' has size %" PRIu64 ", "
                "not a positive multiple of the page size (%u)", n->name,
                n->bytes, ps);
      return -EINVAL;
    }
    memcpy (t->ns[i].name, n->name, len + 1);
    t->ns[i].bytes = n->bytes;
    t->ns[i].base = sum / ps;
    if (n->bytes > UINT64_MAX / 2 || sum > UINT64_MAX / 2) {
      snprintf (errbuf, errlen, "namespaces: too large");
      return -EINVAL;
    }
    sum += n->bytes;
  }
  if (!*logical)
    *logical = sum;
  else if (sum > *logical / ps * ps) {
    char a[32], b[32];
    snprintf (errbuf, errlen, "namespaces: they take %" PRIu64 " bytes "
              "(%s), more than the image's size holds: %" PRIu64 " bytes "
              "(%s) available", sum, space_human (sum, a, sizeof a),
              *logical / ps * ps,
              space_human (*logical / ps * ps, b, sizeof b));
    return -EINVAL;
  }
  /* Names unique, ranges apart (the same checks as a decoder's). */
  if (!fmt_ns_check (t, ps, *logical, errbuf, errlen)) {
    char why[256];
    snprintf (why, sizeof why, "%s", errbuf);
    snprintf (errbuf, errlen, "namespaces: %s", why);
    return -EINVAL;
  }
  return 0;
}

/* Work out the geometry of a new image from the options, and its
 * namespace table (new_namespaces).
 */
static int
new_geometry (const struct ftl_options *o, struct ftl_superblock *sb,
              struct ftl_ns_table *t, char *errbuf, size_t errlen)
{
  uint32_t ps = o->page_size ? o->page_size : FTL_DEFAULT_PAGE_SIZE;
  uint32_t ppb = o->pages_per_block ? o->pages_per_block
    : FTL_DEFAULT_PAGES_PER_BLOCK;
  double op = o->op_percent > 0 ? o->op_percent : FTL_DEFAULT_OP_PERCENT;
  unsigned streams = o->streams ? o->streams : 1;
  uint64_t lpages, data_blocks, blocks, logical;
  int r;

  if (o->logical_bytes % 512 != 0) {
    snprintf (errbuf, errlen, "size %" PRIu64 " is not a multiple of 512",
              o->logical_bytes);
    return -EINVAL;
  }
  r = new_namespaces (o, ps, &logical, t, errbuf, errlen);
  if (r < 0)
    return r;
  lpages = DIV_ROUND_UP (logical, ps);
  data_blocks = DIV_ROUND_UP (lpages, ppb);
  blocks = (uint64_t) ((double) lpages * (1.0 + op / 100.0) / ppb + 0.999999);
  if (lpages >= FTL_PAGES_LIMIT || blocks * ppb >= FTL_PAGES_LIMIT) {
    snprintf (errbuf, errlen, "size %" PRIu64 " is too large for page size "
              "%u (at most 2^32 - 2 physical pages)", logical, ps);
    return -EINVAL;
  }
  /* Each namespace's frontiers hold blocks open (alloc_min_spare). */
  unsigned hg = t->placement != FTL_PLACEMENT_SHARED ? t->count : 1;
  unsigned gg = t->placement == FTL_PLACEMENT_ISOLATED ? t->count : 1;
  uint32_t min_spare = FTL_MIN_SPARE_BLOCKS (streams * hg) + 2 * (gg - 1);
  if (blocks < data_blocks + min_spare) {
    snprintf (errbuf, errlen, "impossible geometry: size %" PRIu64 " with "
              "op=%g%% and %u pages per block gives %" PRIu64 " spare erase "
              "blocks, but at least %u are needed%s (raise size or op, or "
              "lower pages-per-block)", logical, op, ppb,
              blocks - data_blocks, min_spare,
              hg > 1 ? " by the frontiers of each namespace's placement" : "");
    return -EINVAL;
  }

  bool paged = false;
  memset (sb, 0, sizeof *sb);
  sb->version = FTL_FORMAT_VERSION;
  sb->generation = 1;
  sb->page_size = ps;
  sb->pages_per_block = ppb;
  sb->blocks = blocks;
  sb->meta_pages = fmt_meta_pages (ps, ppb);
  sb->logical_bytes = logical;
  /* A map cache smaller than the whole map: the map is paged (pmap.c),
   * and the checkpoints hold its directory.
   */
  uint64_t cache = pmap_cache_bytes (o, logical, ps);
  if (cache < pmap_whole_bytes (lpages)) {
    if (ps < FTL_TP_BYTES) {
      if (o->map_cache_bytes) {
        snprintf (errbuf, errlen, "map-cache=%" PRIu64 " is below the whole "
                  "map (%" PRIu64 " bytes), and a paged map needs a page "
                  "size of at least %u (page-size is %u)", cache,
                  pmap_whole_bytes (lpages), FTL_TP_BYTES, ps);
        return -EINVAL;
      }
    }
    else
      paged = true;
  }
  sb->ckpt_bytes = paged ? fmt_ckpt_pbytes (ps, lpages, blocks)
    : fmt_ckpt_bytes (ps, lpages, blocks);
  sb->ckpt_offset[0] = ckpt_slot0_offset (ps);
  sb->ckpt_offset[1] = sb->ckpt_offset[0] + sb->ckpt_bytes;
  fmt_place_regions (sb);
  sb->state = FTL_SB_CLEAN;
  sb->op_ppm = (uint32_t) (op * 10000.0 + 0.5);
  sb->clean_ckpt_gen = 1;
  if (getrandom (sb->uuid, sizeof sb->uuid, 0) != sizeof sb->uuid)
    sb->uuid[0] = time (NULL) ^ getpid ();
  sb->created = time (NULL);
  if (paged)
    sb->flags |= FTL_SB_PAGED;
  /* A copy keeps its page's checksum (format.h, version 7). */
  sb->flags |= FTL_SB_LPN_SEED;
  return 0;
}

/* Write a new, empty image through the backing-file operations io, in
 * a file already given its size (set_file_size): an empty checkpoint
 * in slot 0, synced, then
 * superblock copy A, synced, then copy B, synced.  The superblock is
 * the commit: until copy A is whole the file holds no superblock; once
 * either copy is whole, checkpoint slot 0 is too.  As with every later
 * superblock update (ckpt.c), at most one copy is ever being written.
 */
static int
format_image (int fd, const struct ftl_io *io, const struct ftl_superblock *sb,
              const struct ftl_ns_table *t, char *errbuf, size_t errlen)
{
  uint64_t lpages = DIV_ROUND_UP (sb->logical_bytes, sb->page_size);
  struct ftl_ckpt_header h = {
    .version = FTL_FORMAT_VERSION,
    .generation = 1,
    .seq = 1,
    .paged = (sb->flags & FTL_SB_PAGED) != 0,
    .logical_pages = lpages,
    .blocks = sb->blocks,
    .pages_per_block = sb->pages_per_block,
    .clean = 1,
  };
  uint8_t sbbuf[FTL_SB_SLOT];
  uint64_t chunks = DIV_ROUND_UP (sb->ckpt_bytes, FTL_CKPT_CHUNK);
  uint8_t *ck, *nonzero, *zero;
  uint64_t blocks_at = h.paged ? fmt_ckpt_pblock_offset (lpages, 0)
    : fmt_ckpt_block_offset (lpages, 0);
  int r;

  h.body_bytes = fmt_ckpt_hbody_bytes (&h);

  /* All logical pages unmapped (zeros, format.h); all blocks free with
   * erase count 0.  Only the header's piece and the block table's are
   * written: the map is zeros, and the new file holds zeros there
   * (ckpt_write_chunks).  The buffer's untouched pages take no memory.
   */
  ck = ftl_lazy_alloc (sb->ckpt_bytes);
  if (!ck)
    return -ENOMEM;
  nonzero = calloc (chunks, 1);
  zero = calloc (chunks, 1);
  if (!nonzero || !zero) {
    r = -ENOMEM;
    goto out;
  }
  for (uint32_t b = 0; b < sb->blocks; b++) {
    struct ftl_ckpt_block cb = { .state = FTL_BLK_FREE };
    fmt_ckpt_block_encode (&cb, ck + FTL_CKPT_HDR_BYTES + blocks_at
                           + (uint64_t) b * FTL_CKPT_BLOCK_BYTES);
  }
  nonzero[0] = 1;
  /* A paged body is all zeros but for its header: a free block's entry
   * (erase count 0) is zeros too.
   */
  for (uint64_t i = (FTL_CKPT_HDR_BYTES + blocks_at)
         / FTL_CKPT_CHUNK; i < chunks; i++)
    nonzero[i] = i == 0 || !h.paged;
  h.body_checksum = fmt_checksum_sparse (ck + FTL_CKPT_HDR_BYTES,
                                         h.body_bytes, FTL_CKPT_HDR_BYTES,
                                         FTL_CKPT_CHUNK, nonzero);
  fmt_ckpt_header_encode (&h, ck);
  r = ckpt_write_chunks (io, fd, NULL, sb->ckpt_offset[0], ck,
                         sb->ckpt_bytes, nonzero, zero);
 out:
  ftl_lazy_free (ck, sb->ckpt_bytes);
  free (nonzero);
  free (zero);
  if (r == 0)
    r = io->sync (io->opaque, fd);
  memset (sbbuf, 0, sizeof sbbuf);
  fmt_sb_encode (sb, sbbuf);
  /* The namespace table, in the slot with the superblock that names
   * it (create_image set ns_check).
   */
  if (t->count)
    fmt_ns_encode (t, sbbuf + FTL_NS_OFFSET);
  for (int i = 0; i < 2 && r == 0; i++) {
    r = io->pwrite (io->opaque, fd, sbbuf, sizeof sbbuf, i * FTL_SB_SLOT);
    if (r == 0)
      r = io->sync (io->opaque, fd);
  }
  if (r < 0)
    snprintf (errbuf, errlen, "writing the new image: %s", strerror (-r));
  return r;
}

/* The file's size, which the filesystem may not allow (ext4 holds
 * files of up to 16 TiB with 4 KiB blocks): refused, naming the limit.
 */
static int
set_file_size (int fd, const struct ftl_io *io, const struct ftl_superblock *sb,
               uint64_t old_size, char *errbuf, size_t errlen)
{
  uint64_t size = fmt_image_bytes (sb), max;
  char a[32], b[32], c[32];
  const char *fs;
  int r;

  r = media_io_set_size (io, fd, size);
  if (r != -EFBIG) {
    if (r < 0)
      snprintf (errbuf, errlen, "setting the image size to %" PRIu64 ": %s",
                size, strerror (-r));
    return r;
  }
  space_human (sb->logical_bytes, a, sizeof a);
  space_human (size, b, sizeof b);
  if (space_max_file_size (fd, old_size, size, &max) < 0) {
    snprintf (errbuf, errlen, "size %s: the image would be a file of %s, "
              "larger than this filesystem can hold (%s)", a, b,
              strerror (-r));
    return r;
  }
  fs = space_fs_name (fd);
  snprintf (errbuf, errlen, "size %s is larger than the largest file this "
            "filesystem can hold (%s%s%s): the image would be a file of %s",
            a, space_human (max, c, sizeof c), fs ? " on " : "",
            fs ? fs : "", b);
  return r;
}

/* Reserve the whole file (preallocate=true), once its size is known to
 * fit: where the filesystem lacks the space, or cannot, say so.
 */
static int
preallocate (int fd, uint64_t size, char *errbuf, size_t errlen)
{
  uint64_t avail = 0;
  char a[32], b[32];
  bool known = space_free (fd, &avail) == 0;
  int r = space_allocate (fd, size);

  if (r == -ENOSPC || r == -EDQUOT) {
    if (known)
      snprintf (errbuf, errlen, "preallocating %" PRIu64 " bytes (%s): %s "
                "(the filesystem has %s free)", size,
                space_human (size, a, sizeof a), strerror (-r),
                space_human (avail, b, sizeof b));
    else
      snprintf (errbuf, errlen, "preallocating %" PRIu64 " bytes (%s): %s",
                size, space_human (size, a, sizeof a), strerror (-r));
  }
  else if (r == -EOPNOTSUPP)
    snprintf (errbuf, errlen, "preallocating %" PRIu64 " bytes: %s cannot "
              "preallocate (fallocate: %s); use preallocate=false",
              size, space_fs_name (fd) ? space_fs_name (fd)
              : "the filesystem", strerror (-r));
  else if (r < 0)
    snprintf (errbuf, errlen, "preallocating %" PRIu64 " bytes: %s", size,
              strerror (-r));
  return r;
}

/* Format a blank file (empty, or old_size bytes of zeros) as a new
 * image, and sync its directory.  Before anything is written: the
 * file's size, which the filesystem must allow, the memory the map
 * needs, and with preallocate=true the file's space.
 */
int
create_image (int fd, const struct ftl_options *o, uint64_t old_size,
              char *errbuf, size_t errlen)
{
  const struct ftl_io *io = o->io ? o->io : &media_default_io;
  const char *what = old_size ? "holds only zeros" : "is empty";
  struct ftl_superblock sb;
  struct ftl_ns_table t;
  int r;

  if (!o->logical_bytes && !o->nnamespaces) {
    snprintf (errbuf, errlen, "the file %s: give a size to create a new "
              "image", what);
    return -EINVAL;
  }
  if (o->readonly) {
    snprintf (errbuf, errlen, "the file %s and a new image cannot be "
              "created read-only", what);
    return -EROFS;
  }
  r = new_geometry (o, &sb, &t, errbuf, errlen);
  if (r < 0)
    return r;
  if (t.count) {
    uint8_t tb[FTL_NS_MAX_BYTES];
    sb.flags |= FTL_SB_NAMESPACES;
    sb.ns_check = fmt_ns_encode (&t, tb);
  }
  r = set_file_size (fd, io, &sb, old_size, errbuf, errlen);
  if (r == 0)
    r = map_memory_check (sb.logical_bytes, sb.page_size,
                          DIV_ROUND_UP (sb.logical_bytes, sb.page_size),
                          sb.blocks, sb.ckpt_bytes, errbuf, errlen,
                          o->memory_limit, NULL,
                          (sb.flags & FTL_SB_PAGED)
                          ? (o->map_cache_bytes ? o->map_cache_bytes
                             : pmap_fit_cache (DIV_ROUND_UP
                                               (sb.logical_bytes,
                                                sb.page_size), sb.blocks,
                                               sb.ckpt_bytes,
                                               pmap_cache_bytes
                                               (o, sb.logical_bytes,
                                                sb.page_size),
                                               o->memory_limit)) : 0);
  if (r == 0 && o->preallocate)
    r = preallocate (fd, fmt_image_bytes (&sb), errbuf, errlen);
  if (r == 0)
    r = format_image (fd, io, &sb, &t, errbuf, errlen);
  /* The file's name too must survive a power cut, once the open that
   * created the image has returned.
   */
  if (r == 0) {
    r = media_io_sync_dir (io, o->path);
    if (r < 0)
      snprintf (errbuf, errlen, "syncing the directory of the new image: "
                "%s", strerror (-r));
  }
  /* Leave the file blank, as it was (empty), if we can. */
  if (r < 0 && media_io_set_size (io, fd, 0) < 0) {
    /* nothing more to do */
  }
  return r;
}

/* Are bytes [off, end) of the file zeros?  1: yes, 0: no, or a
 * negative errno.
 */
static int
range_is_zero (int fd, uint8_t *buf, size_t chunk, uint64_t off,
               uint64_t end)
{
  while (off < end) {
    ssize_t n = pread (fd, buf, MIN (chunk, end - off), off);
    if (n == -1 && errno == EINTR)
      continue;
    if (n == -1)
      return -errno;
    if (n == 0)                         /* shorter than it was */
      return 1;
    if (!all_zero (buf, n))
      return 0;
    off += n;
  }
  return 1;
}

/* Does the file hold only zeros?  1: yes, 0: no, or a negative errno.
 * Holes are skipped (SEEK_DATA), where the file system knows them.
 */
static int
file_is_zero (int fd, uint64_t size)
{
  const size_t chunk = 65536;
  uint8_t *buf = malloc (chunk);
  uint64_t off = 0;
  int r = 1;

  if (!buf)
    return -ENOMEM;
  while (off < size && r == 1) {
    off_t data = lseek (fd, off, SEEK_DATA), end = size;
    if (data == -1 && errno == ENXIO)
      break;                            /* a hole up to the end */
    if (data == -1 && errno != EINVAL) {
      r = -errno;
      break;
    }
    if (data == -1)                     /* no SEEK_DATA: read it all */
      data = off;
    else if ((end = lseek (fd, data, SEEK_HOLE)) == -1) {
      r = -errno;
      break;
    }
    r = range_is_zero (fd, buf, chunk, data, end);
    off = end;
  }
  free (buf);
  return r;
}

/* Is there the empty checkpoint of a creation where a new image puts
 * checkpoint slot 0, for some page size: its magic, and either a torn
 * header or a whole one of generation 1?  (A whole one of a later
 * generation belongs to an image that was used.)
 */
static bool
creation_ckpt_found (int fd, uint64_t size)
{
  for (uint32_t ps = FTL_MIN_PAGE_SIZE; ps <= FTL_MAX_PAGE_SIZE; ps *= 2) {
    uint64_t off = ckpt_slot0_offset (ps);
    uint8_t hb[FTL_CKPT_HDR_BYTES] = { 0 };
    struct ftl_ckpt_header h;
    ssize_t n;

    if (off + 8 > size)
      continue;
    n = pread (fd, hb, sizeof hb, off);
    if (n < 8 || memcmp (hb, FTL_CKPT_MAGIC, 8) != 0)
      continue;
    if (fmt_ckpt_header_decode (hb, sizeof hb, &h) != FTL_FMT_OK ||
        h.generation == 1)
      return true;
  }
  return false;
}

int
create_examine (int fd, uint64_t size, bool sbs_zero, bool *blank,
                char *errbuf, size_t errlen)
{
  *blank = false;
  if (sbs_zero) {
    int r = file_is_zero (fd, size);
    if (r < 0) {
      snprintf (errbuf, errlen, "reading the file: %s", strerror (-r));
      return r;
    }
    if (r == 1) {
      *blank = true;
      return 0;
    }
  }
  if (creation_ckpt_found (fd, size))
    snprintf (errbuf, errlen, "%s", CREATE_CUT_SHORT);
  return -EINVAL;
}
