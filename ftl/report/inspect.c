/* nbdkit-ftl: the inspection API (see inspect.h).
 *
 * This module owns no state: it reads the handle and the file for
 * ftlctl.  Its reads of the handle's fields are all in the first
 * section below (the path, the superblock, the newest checkpoint, the
 * map, each block's state and valid count, the allocator's counts and
 * the worn-out flag) and its reads of the media go through media.h, so
 * that a change to struct ftl touches this file in one place.
 *
 * Invariant: nothing here writes to the handle or to the file.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ftl-internal.h"
#include "inspect.h"

/* ---- what this module reads of struct ftl ---- */

static struct media *
handle_media (struct ftl *ftl)
{
  return &ftl->media;
}

/* The image as a whole; the block states and the allocator's counts
 * under the allocator's lock, so that they agree with each other while
 * the handle serves.
 */
static void
handle_image (struct ftl *ftl, struct ftl_image_info *ii)
{
  /* The superblock changes only when the image is opened and closed. */
  ii->path = ftl->path;
  ii->sb = ftl->sb;
  ii->mapped_count = __atomic_load_n (&ftl->mapped, __ATOMIC_RELAXED);
  ii->worn_out = __atomic_load_n (&ftl->wl.worn_out, __ATOMIC_RELAXED);
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->state[b] <= FTL_BLK_RETIRED)
      ii->blocks_in_state[ftl->state[b]]++;
    else
      ii->blocks_unknown++;
  }
  ii->free_pool = ftl->nfree;
  ii->retired_count = ftl->wl.retired;
  pthread_mutex_unlock (&ftl->alloc_lock);
  if (ftl->pm.on) {
    pthread_mutex_lock (&ftl->pm.lock);
    for (uint64_t g = 0; g < ftl->pm.groups; g++)
      ii->map_pages += ftl->pm.dir[g] != 0;
    pthread_mutex_unlock (&ftl->pm.lock);
  }
}

int
ftl_inspect_map_page (struct ftl *ftl, uint64_t g, uint32_t *ppn,
                      uint64_t *version)
{
  if (!ftl->pm.on || g >= ftl->pm.groups)
    return -EINVAL;
  pthread_mutex_lock (&ftl->pm.lock);
  *ppn = ~ftl->pm.dir[g];
  *version = ftl->pm.dirseq[g];
  pthread_mutex_unlock (&ftl->pm.lock);
  return 0;
}

/* The newest checkpoint, which ckpt.c changes under ckpt_lock. */
static void
handle_checkpoint (struct ftl *ftl, uint64_t *generation, unsigned *slot)
{
  pthread_mutex_lock (&ftl->ckpt_lock);
  *generation = ftl->ckpt_gen;
  *slot = ftl->ckpt_slot;
  pthread_mutex_unlock (&ftl->ckpt_lock);
}

static uint32_t
handle_block_state (struct ftl *ftl, uint32_t b)
{
  return ftl->state[b];
}

/* The valid data pages: a paged map's translation pages are counted
 * apart (pmap.c).
 */
static uint32_t
handle_valid (struct ftl *ftl, uint32_t b)
{
  uint32_t v = __atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED);
  if (ftl->pm.on) {
    pthread_mutex_lock (&ftl->pm.lock);
    v -= MIN (v, ftl->pm.tvalid[b]);
    pthread_mutex_unlock (&ftl->pm.lock);
  }
  return v;
}

static uint32_t
handle_map (struct ftl *ftl, uint64_t lpn)
{
  return l2p_load (ftl, lpn);
}

/* The geometry (ftl.h), for the plugin and the statistics. */
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

/* ---- the file, raw ---- */

/* Read exactly len bytes at off: 0, or a negative errno (-EIO when the
 * file ends first).
 */
static int
read_at (int fd, void *buf, size_t len, uint64_t off)
{
  return media_default_io.pread (NULL, fd, buf, len, off);
}

int
ftl_inspect_read_sb (int fd, int copy, struct ftl_superblock *sb,
                     enum ftl_fmt_status *status, char *why, size_t whylen)
{
  uint8_t buf[FTL_SB_SLOT];
  int r;

  if (why && whylen)
    why[0] = '\0';
  if (copy != 0 && copy != 1)
    return -EINVAL;
  r = read_at (fd, buf, sizeof buf, (uint64_t) copy * FTL_SB_SLOT);
  if (r < 0)
    return r;
  *status = fmt_sb_decode (buf, sizeof buf, sb, why, whylen);
  return 0;
}

int
ftl_inspect_read_oob (int fd, const struct ftl_superblock *sb, uint32_t block,
                      uint32_t page, uint8_t *oob)
{
  if (block >= sb->blocks || page >= sb->pages_per_block)
    return -EINVAL;
  return read_at (fd, oob, FTL_OOB_BYTES, fmt_meta_area_offset (sb, block)
                  + FTL_BLKHDR_BYTES + (uint64_t) page * FTL_OOB_BYTES);
}

int
ftl_inspect_read_ckpt_header (int fd, const struct ftl_superblock *sb,
                              int slot, struct ftl_ckpt_header *h,
                              enum ftl_fmt_status *status)
{
  uint8_t buf[FTL_CKPT_HDR_BYTES];
  int r;

  if (slot != 0 && slot != 1)
    return -EINVAL;
  r = read_at (fd, buf, sizeof buf, sb->ckpt_offset[slot]);
  if (r < 0)
    return r;
  *status = fmt_ckpt_header_decode (buf, sizeof buf, h);
  return 0;
}

int
ftl_inspect_read_ckpt_body (int fd, const struct ftl_superblock *sb,
                            int slot, const struct ftl_ckpt_header *h,
                            uint8_t *body, uint8_t *present)
{
  uint64_t off = sb->ckpt_offset[slot] + FTL_CKPT_HDR_BYTES;

  if (slot != 0 && slot != 1)
    return -EINVAL;
  if (!present)
    return read_at (fd, body, h->body_bytes, off);
  for (uint64_t i = 0, pos = 0; pos < h->body_bytes;
       i++, pos += FTL_INSPECT_PIECE) {
    uint64_t n = MIN (FTL_INSPECT_PIECE, h->body_bytes - pos);
    present[i] = !media_io_is_hole (&media_default_io, fd, off + pos, n);
    if (present[i]) {
      int r = read_at (fd, body + pos, n, off + pos);
      if (r < 0)
        return r;
    }
  }
  return 0;
}

uint8_t *
ftl_inspect_body_alloc (uint64_t bytes)
{
  return ftl_lazy_alloc (bytes);
}

void
ftl_inspect_body_free (uint8_t *body, uint64_t bytes)
{
  ftl_lazy_free (body, bytes);
}

bool
ftl_inspect_body_check (const struct ftl_ckpt_header *h, const uint8_t *body,
                        const uint8_t *present)
{
  if (!present)
    return fmt_ckpt_body_check (h, body);
  return fmt_checksum_sparse (body, h->body_bytes, 0, FTL_INSPECT_PIECE,
                              present) == h->body_checksum;
}

/* ---- an open image ---- */

void
ftl_inspect_image (struct ftl *ftl, struct ftl_image_info *ii)
{
  struct media *m = handle_media (ftl);
  const uint64_t *u;

  memset (ii, 0, sizeof *ii);
  handle_image (ftl, ii);
  u = ii->sb.uuid;
  snprintf (ii->uuid, sizeof ii->uuid, "%08" PRIx64 "-%04" PRIx64 "-%04"
            PRIx64 "-%04" PRIx64 "-%012" PRIx64,
            u[0] >> 32, (u[0] >> 16) & 0xffff, u[0] & 0xffff, u[1] >> 48,
            u[1] & UINT64_C (0xffffffffffff));
  ii->block_bytes = (uint64_t) (m->meta_pages + m->pages_per_block)
    * m->page_size;
  ii->image_bytes = media_image_bytes (m);
  ii->physical_bytes = (uint64_t) m->blocks * m->pages_per_block
    * m->page_size;
}

void
ftl_inspect_checkpoint (struct ftl *ftl, uint64_t *generation, unsigned *slot)
{
  handle_checkpoint (ftl, generation, slot);
}

int
ftl_inspect_block (struct ftl *ftl, uint32_t block, struct ftl_block_info *bi)
{
  struct media *m = handle_media (ftl);

  if (block >= m->blocks)
    return -EINVAL;
  bi->state = handle_block_state (ftl, block);
  bi->erase_count = media_erase_count (m, block);
  bi->write_pointer = m->wp[block];
  bi->valid = handle_valid (ftl, block);
  bi->meta_offset = media_meta_offset (m, block);
  bi->data_offset = media_page_offset (m, media_ppn (m, block, 0));
  return 0;
}

int
ftl_inspect_lookup (struct ftl *ftl, uint64_t lpn, uint32_t *ppn)
{
  struct ftl_geometry g;

  ftl_get_geometry (ftl, &g);
  if (lpn >= g.logical_pages)
    return -EINVAL;
  *ppn = handle_map (ftl, lpn);
  return 0;
}

uint64_t
ftl_inspect_next_mapped (struct ftl *ftl, uint64_t lpn)
{
  return map_next (ftl, lpn);
}

bool
ftl_inspect_meta_unwritten (struct ftl *ftl, uint32_t first, uint32_t n)
{
  return media_meta_is_hole (handle_media (ftl), first, n);
}

uint64_t
ftl_inspect_page_seed (struct ftl *ftl, const struct ftl_oob *o,
                       uint32_t ppn)
{
  return oob_seed (ftl, o, ppn);
}

size_t
ftl_inspect_meta_bytes (struct ftl *ftl)
{
  struct media *m = handle_media (ftl);

  return (size_t) m->meta_pages << m->page_shift;
}

int
ftl_inspect_read_meta (struct ftl *ftl, uint32_t block, uint8_t *buf)
{
  struct media *m = handle_media (ftl);

  if (block >= m->blocks)
    return -EINVAL;
  return media_read_meta (m, block, buf);
}

const uint8_t *
ftl_inspect_header_copy (struct ftl *ftl, const uint8_t *meta,
                         int copy)
{
  return media_header_copy (handle_media (ftl), meta, copy);
}

const uint8_t *
ftl_inspect_oob_entry (const uint8_t *meta, uint32_t page)
{
  return meta + FTL_BLKHDR_BYTES + (size_t) page * FTL_OOB_BYTES;
}

int
ftl_inspect_read_pages (struct ftl *ftl, uint32_t ppn, uint32_t n, void *buf)
{
  struct media *m = handle_media (ftl);

  if (n == 0 || media_ppn_block (m, ppn) >= m->blocks ||
      media_ppn_page (m, ppn) + (uint64_t) n > m->pages_per_block)
    return -EINVAL;
  return media_read (m, ppn, n, buf);
}
