/* nbdkit-ftl: creating an image: the geometry of a new image from the
 * options, and formatting an empty file as that image.  Called by
 * open.c; see format.h for the layout it writes.
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

/* Write a new, empty image through the backing-file operations io: the
 * file's size, then an empty checkpoint in slot 0, synced, then
 * superblock copy A, synced, then copy B, synced.  The superblock is
 * the commit: until copy A is whole the file holds no superblock; once
 * either copy is whole, checkpoint slot 0 is too.  As with every later
 * superblock update (ckpt.c), at most one copy is ever being written.
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

  r = media_io_set_size (io, fd, size);
  if (r < 0) {
    snprintf (errbuf, errlen, "setting the image size to %" PRIu64 ": %s",
              size, strerror (-r));
    return r;
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
  memset (sbbuf, 0, sizeof sbbuf);
  fmt_sb_encode (sb, sbbuf);
  for (int i = 0; i < 2 && r == 0; i++) {
    r = io->pwrite (io->opaque, fd, sbbuf, sizeof sbbuf, i * FTL_SB_SLOT);
    if (r == 0)
      r = io->sync (io->opaque, fd);
  }
  if (r < 0)
    snprintf (errbuf, errlen, "writing the new image: %s", strerror (-r));
  return r;
}

/* Format an empty file as a new image, and sync its directory. */
int
create_image (int fd, const struct ftl_options *o, char *errbuf,
              size_t errlen)
{
  const struct ftl_io *io = o->io ? o->io : &media_default_io;
  struct ftl_superblock sb;
  int r;

  if (!o->logical_bytes) {
    snprintf (errbuf, errlen, "the file is empty: give a size to create "
              "a new image");
    return -EINVAL;
  }
  if (o->readonly) {
    snprintf (errbuf, errlen, "the file is empty and a new image cannot "
              "be created read-only");
    return -EROFS;
  }
  r = new_geometry (o, &sb, errbuf, errlen);
  if (r == 0)
    r = format_image (fd, io, &sb, errbuf, errlen);
  /* The file's name too must survive a power cut, once the open that
   * created the image has returned.
   */
  if (r == 0) {
    r = media_io_sync_dir (io, o->path);
    if (r < 0)
      snprintf (errbuf, errlen, "syncing the directory of the new image: "
                "%s", strerror (-r));
  }
  if (r < 0 && media_io_set_size (io, fd, 0) < 0) {
    /* leave it empty as it was, if we can */
  }
  return r;
}
