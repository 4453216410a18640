/* nbdkit-ftl: the inspection API: an image as it is, for ftlctl.
 *
 * ftl.h serves a disk; this reads what is behind it, at two levels:
 *
 *   the file    the superblock copies and the checkpoint slots, read
 *               raw and decoded (format.h), without ftl_open: for
 *               images that the library would refuse, or whose damaged
 *               copy or slot it would quietly pass over.
 *   a handle    an image opened with ftl_open, read-only (recovery then
 *               runs in memory and writes nothing): what recovery
 *               arrived at (the map, each erase block's state, erase
 *               count, program pointer and valid count, the counts the
 *               handle keeps) and the metadata areas and data pages
 *               behind it, read from the media.
 *
 * Ownership: the caller owns every buffer and every structure filled
 * in; nothing here allocates, keeps a pointer or writes to the file.
 * The calls on a handle, but ftl_inspect_image and
 * ftl_inspect_checkpoint, read it without its locks: nothing else may
 * change it meanwhile (a read-only handle used by one thread).  Those
 * two may be called while it serves.
 *
 * Errors: 0 or a negative errno, as in ftl.h:
 *   -EINVAL  an erase block, physical or logical page beyond the last
 *   -EIO     the file ends before the structure asked for, or its read
 *            failed
 * A structure that was read but does not decode is not an error of the
 * call: its enum ftl_fmt_status says what is wrong with it.
 */

#ifndef FTL_INSPECT_H
#define FTL_INSPECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl.h"
#include "format/format.h"

/* ---- the file, raw ---- */

/* Read and decode superblock copy 'copy' (0: A, at offset 0; 1: B) of
 * the image file open on fd.  Returns 0 and sets *status to what the
 * decoder found (FTL_FMT_OK: *sb is filled in; why, which may be NULL,
 * says which field is bad), or a negative errno if it cannot be read.
 */
extern int ftl_inspect_read_sb (int fd, int copy, struct ftl_superblock *sb,
                                enum ftl_fmt_status *status,
                                char *why, size_t whylen);

/* Read and decode the header of checkpoint slot 'slot' (0 or 1) of the
 * image whose superblock is sb.  As ftl_inspect_read_sb.  It is for
 * the caller to apply the rest of the validity rule (format.h).
 */
extern int ftl_inspect_read_ckpt_header (int fd,
                                         const struct ftl_superblock *sb,
                                         int slot, struct ftl_ckpt_header *h,
                                         enum ftl_fmt_status *status);

/* Read the body of checkpoint slot 'slot', h->body_bytes of it (h is
 * the slot's decoded header), into body.  With present (one byte per
 * FTL_INSPECT_PIECE bytes of the body), a piece that is a hole of the
 * file is not read: body must hold zeros there (ftl_inspect_body_alloc
 * gives such a buffer, whose unread pages take no memory) and its byte
 * in present is 0, else 1.  ftl_inspect_body_check checks the body
 * against the header's checksum, reading only the pieces present says.
 */
#define FTL_INSPECT_PIECE (UINT64_C (1) << 16)
/* Read the OOB entry of page page of erase block block from the file
 * (FTL_OOB_BYTES into oob): 0 or a negative errno.
 */
extern int ftl_inspect_read_oob (int fd, const struct ftl_superblock *sb,
                                 uint32_t block, uint32_t page,
                                 uint8_t *oob);
extern int ftl_inspect_read_ckpt_body (int fd,
                                       const struct ftl_superblock *sb,
                                       int slot,
                                       const struct ftl_ckpt_header *h,
                                       uint8_t *body, uint8_t *present);
extern uint8_t *ftl_inspect_body_alloc (uint64_t bytes);
extern void ftl_inspect_body_free (uint8_t *body, uint64_t bytes);
extern bool ftl_inspect_body_check (const struct ftl_ckpt_header *h,
                                    const uint8_t *body,
                                    const uint8_t *present);

/* ---- an open image ---- */

/* The image as a whole. */
struct ftl_image_info {
  const char *path;             /* as given to ftl_open; the handle's */
  struct ftl_superblock sb;     /* the newest valid copy, as opened */
  char uuid[37];                /* sb.uuid as 8-4-4-4-12 hex digits */
  uint64_t block_bytes;         /* what an erase block takes in the
                                 * file, its metadata area included */
  uint64_t image_bytes;         /* the size the file needs (format.h) */
  uint64_t physical_bytes;      /* the data pages of every erase block */
  /* Erase blocks by state (enum ftl_block_state), counted from each
   * block's state; and the counts that the handle keeps alongside.
   */
  uint32_t blocks_in_state[FTL_BLK_RETIRED + 1];
  uint32_t blocks_unknown;      /* in no known state */
  uint32_t free_pool;           /* the allocator's count of free blocks */
  uint32_t retired_count;       /* ... of retired blocks */
  uint64_t mapped_count;        /* ... of mapped logical pages */
  bool worn_out;                /* too few erase blocks left to write */
  uint64_t map_pages;           /* a paged map: groups that have a
                                 * translation page (sb.flags has
                                 * FTL_SB_PAGED) */
};
extern void ftl_inspect_image (struct ftl *ftl, struct ftl_image_info *ii);

/* A paged map's translation page of group g (FTL_TP_ENTRIES logical
 * pages from g * FTL_TP_ENTRIES): where the map has it now (*ppn,
 * FTL_UNMAPPED if none) and its version.  -EINVAL if the map is not
 * paged or g is beyond it.
 */
extern int ftl_inspect_map_page (struct ftl *ftl, uint64_t g, uint32_t *ppn,
                                 uint64_t *version);

/* The newest checkpoint: the one recovery started from, or the last
 * written since; its generation and slot.  While the handle serves,
 * this waits for a checkpoint being written.
 */
extern void ftl_inspect_checkpoint (struct ftl *ftl, uint64_t *generation,
                                    unsigned *slot);

/* One erase block. */
struct ftl_block_info {
  uint32_t state;               /* enum ftl_block_state, as recovered */
  uint32_t erase_count;
  uint32_t write_pointer;       /* pages programmed since its erase */
  uint32_t valid;               /* the handle's count of its valid pages */
  uint64_t meta_offset;         /* file offset of its metadata area */
  uint64_t data_offset;         /* ... of its first data page */
};
extern int ftl_inspect_block (struct ftl *ftl, uint32_t block,
                              struct ftl_block_info *bi);

/* The physical page that logical page lpn maps to, or FTL_UNMAPPED, or
 * FTL_LOST (format.h).
 */
extern int ftl_inspect_lookup (struct ftl *ftl, uint64_t lpn, uint32_t *ppn);
/* The first logical page from lpn on that may be mapped (the map skips
 * groups of pages that never held a mapping), or logical_pages: a walk
 * of the map with it costs what the map holds, not the capacity.
 */
extern uint64_t ftl_inspect_next_mapped (struct ftl *ftl, uint64_t lpn);
/* Were the metadata areas of blocks first .. first + n - 1 never
 * written (a hole of the file)?  false if not known.
 */
extern bool ftl_inspect_meta_unwritten (struct ftl *ftl, uint32_t first,
                                        uint32_t n);

/* The metadata area of an erase block: ftl_inspect_meta_bytes bytes,
 * the two copies of its block header and an OOB entry per page
 * (format.h).  ftl_inspect_header_copy and ftl_inspect_oob_entry point
 * into a buffer read so: copy 0 is the first (odd erase counts), 1 the
 * second (even ones); the entry of page 'page' of the block.
 */
extern size_t ftl_inspect_meta_bytes (struct ftl *ftl);
extern int ftl_inspect_read_meta (struct ftl *ftl, uint32_t block,
                                  uint8_t *buf);
extern const uint8_t *ftl_inspect_header_copy (struct ftl *ftl,
                                               const uint8_t *meta,
                                               int copy);
extern const uint8_t *ftl_inspect_oob_entry (const uint8_t *meta,
                                             uint32_t page);

/* The seed of the data checksum of the page at ppn whose OOB entry is
 * o (fmt_page_seed: the LPN field, or the PPN in images made before
 * format version 7).
 */
extern uint64_t ftl_inspect_page_seed (struct ftl *ftl,
                                       const struct ftl_oob *o,
                                       uint32_t ppn);

/* Read n data pages from physical page ppn on, all in its erase block
 * (-EINVAL if they are not), as they are on the media, whatever the map
 * says of them.  (Page p of an erase block is at its data_offset + p *
 * page_size in the file.)
 */
extern int ftl_inspect_read_pages (struct ftl *ftl, uint32_t ppn, uint32_t n,
                                   void *buf);

#endif /* FTL_INSPECT_H */
