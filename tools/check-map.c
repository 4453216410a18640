/* ftlctl check: the image as the library recovered it.
 *
 * The library rebuilds its counts from the map when it opens an image;
 * this recomputes them once more, independently, and then reads the
 * media to see that what the map promises is there:
 *
 *   erase blocks  every state is known; the free pool and the retired
 *                 count in the handle match the states; free + open +
 *                 full + retired = all erase blocks.
 *   the map       every mapped logical page lies in the written part of
 *                 an erase block that is neither free nor retired (or
 *                 is FTL_LOST: an error, which --repair unmaps); no
 *                 two logical pages map to one physical page; the mapped
 *                 count and each block's valid count match the map; the
 *                 reverse map agrees.
 *   each block    its header decodes and has the block's erase count; a
 *                 free or retired block has nothing written (program
 *                 pointer 0, every OOB entry empty).
 *   each mapped   its OOB entry decodes, describes data, names this
 *   page          logical page and the block's erase count, and the
 *                 page's data matches the checksum in it.
 *
 * Blocks are read in order, each metadata area once and the mapped
 * pages in runs, so the walk reads the file sequentially.
 */

#include <config.h>

#include <inttypes.h>
#include <string.h>

#include <glib.h>

#include "check.h"
#include "ftlctl.h"

/* Read at most this many bytes of data pages at once. */
#define READ_BYTES (1024 * 1024)

/* The image being checked. */
struct image {
  struct ftl *ftl;
  struct ftl_geometry g;
  struct ftl_image_info ii;
  struct ftl_block_info *bi;    /* per erase block */
};

/* Where a mapped page is, for messages. */
#define WHERE_FMT "logical page %" PRIu64 " (physical page %u: erase " \
  "block %u, page %u)"
#define WHERE(im, lpn, ppn) (lpn), (ppn), (ppn) / (im)->g.pages_per_block, \
    (ppn) % (im)->g.pages_per_block

/* Erase block states and the counts kept for them. */
static void
check_block_states (struct checker *c, const struct image *im)
{
  const uint32_t *n = im->ii.blocks_in_state;
  uint32_t known = 0;

  for (uint32_t b = 0; b < im->g.blocks; b++)
    if (im->bi[b].state > FTL_BLK_RETIRED)
      check_error (c, "erase block %u has an unknown state %u", b,
                   im->bi[b].state);
  for (unsigned s = 0; s <= FTL_BLK_RETIRED; s++)
    known += n[s];
  if (im->ii.free_pool != n[FTL_BLK_FREE])
    check_error (c, "the free pool counts %u erase blocks, but %u are free",
                 im->ii.free_pool, n[FTL_BLK_FREE]);
  if (im->ii.retired_count != n[FTL_BLK_RETIRED])
    check_error (c, "the image counts %u retired erase blocks, but %u are "
                 "retired", im->ii.retired_count, n[FTL_BLK_RETIRED]);
  if (known != im->g.blocks)
    check_error (c, "%u free, %u open, %u full and %u retired erase blocks "
                 "make %u, not %u", n[FTL_BLK_FREE], n[FTL_BLK_OPEN],
                 n[FTL_BLK_FULL], n[FTL_BLK_RETIRED], known, im->g.blocks);
  c->free_blocks = n[FTL_BLK_FREE];
  c->blocks = im->g.blocks;
}

/* Walk the map: fill rev[ppn] (1 + the logical page mapping to each
 * physical page, 0: none) and count[b] (mapped pages per erase block).
 * Only the parts of the map that may hold mappings are visited
 * (ftl_inspect_next_mapped).  Returns the number of mapped logical
 * pages.
 */
static uint64_t
check_map (struct checker *c, const struct image *im, uint32_t *rev,
           uint32_t *count)
{
  uint32_t ppb = im->g.pages_per_block;
  uint64_t phys = (uint64_t) im->g.blocks * ppb;
  uint64_t mapped = 0;

  for (uint64_t lpn = ftl_inspect_next_mapped (im->ftl, 0);
       lpn < im->g.logical_pages;
       lpn = ftl_inspect_next_mapped (im->ftl, lpn + 1)) {
    const struct ftl_block_info *bi;
    uint32_t ppn, b, page;

    if (ftl_inspect_lookup (im->ftl, lpn, &ppn) < 0 || ppn == FTL_UNMAPPED)
      continue;
    if (ppn == FTL_LOST) {
      /* No page: its data was lost in a crash of the host during a
       * sync=false session, and it reads as an error.
       */
      check_error (c, "logical page %" PRIu64 ": its data was lost in a "
                   "crash of the host (sync=false)", lpn);
      check_fix (c, lpn, FIX_UNMAP, "its data was lost in a crash of the "
                 "host");
      mapped++;
      continue;
    }
    if (ppn >= phys) {
      check_error (c, "logical page %" PRIu64 " maps to physical page %u, "
                   "beyond the last (%" PRIu64 ")", lpn, ppn, phys - 1);
      continue;
    }
    b = ppn / ppb;
    page = ppn % ppb;
    bi = &im->bi[b];
    if (bi->state == FTL_BLK_FREE || bi->state == FTL_BLK_RETIRED) {
      check_error (c, WHERE_FMT ": the erase block is %s",
                   WHERE (im, lpn, ppn), block_state_name (bi->state));
      continue;
    }
    if (page >= bi->write_pointer) {
      check_error (c, WHERE_FMT ": beyond the %u pages written in the "
                   "erase block", WHERE (im, lpn, ppn), bi->write_pointer);
      continue;
    }
    if (rev[ppn] != 0) {
      check_error (c, "logical pages %u and %" PRIu64 " both map to "
                   "physical page %u", rev[ppn] - 1, lpn, ppn);
      continue;
    }
    rev[ppn] = lpn + 1;
    count[b]++;
    mapped++;
  }

  if (im->ii.mapped_count != mapped)
    check_error (c, "the image counts %" PRIu64 " mapped logical pages, "
                 "the map has %" PRIu64, im->ii.mapped_count, mapped);
  for (uint32_t b = 0; b < im->g.blocks; b++)
    if (im->bi[b].valid != count[b])
      check_error (c, "erase block %u: its valid count is %u, but %u "
                   "logical pages map to it", b, im->bi[b].valid, count[b]);
  return mapped;
}

/* The block header of erase block b, from its metadata area: two
 * copies (format.h), at its start and at its end, and the higher valid
 * one counts.  A copy that does not decode next to a valid one is what
 * a crash during an erase leaves (the copy being rewritten): a note,
 * not an error.
 */
static void
check_header (struct checker *c, const struct image *im, uint32_t b,
              const uint8_t *meta)
{
  const char *name[2] = { "first", "second" };
  enum ftl_fmt_status s[2];
  uint32_t ec = im->bi[b].erase_count, best = 0;
  bool found = false;

  for (int i = 0; i < 2; i++) {
    struct ftl_block_header bh;
    s[i] = fmt_blkhdr_decode (ftl_inspect_header_copy (im->ftl, meta, i),
                              FTL_BLKHDR_BYTES, &bh);
    if (s[i] == FTL_FMT_OK && (!found || bh.erase_count > best)) {
      best = bh.erase_count;
      found = true;
    }
  }
  for (int i = 0; i < 2; i++) {
    if (s[i] == FTL_FMT_OK || s[i] == FTL_FMT_EMPTY)
      continue;
    if (found)
      check_note (c, "erase block %u: the %s block header copy is damaged "
                  "(%s); the other gives erase count %u", b, name[i],
                  fmt_status_string (s[i]), best);
    else
      check_error (c, "erase block %u: block header (%s copy): %s", b,
                   name[i], fmt_status_string (s[i]));
  }
  /* No valid copy and none damaged: never erased, or its header lost
   * in a crash.
   */
  if (found && best != ec)
    check_error (c, "erase block %u: the block header gives erase count "
                 "%u, the image %u", b, best, ec);
}

/* A free or retired erase block has nothing written. */
static void
check_unwritten (struct checker *c, const struct image *im, uint32_t b,
                 const uint8_t *meta)
{
  const struct ftl_block_info *bi = &im->bi[b];
  const char *state = block_state_name (bi->state);
  uint32_t used = 0, first = 0;

  if (bi->write_pointer != 0)
    check_error (c, "erase block %u is %s but has %u pages written", b,
                 state, bi->write_pointer);
  for (uint32_t p = 0; p < im->g.pages_per_block; p++) {
    struct ftl_oob o;
    if (fmt_oob_decode (ftl_inspect_oob_entry (meta, p), FTL_OOB_BYTES,
                        &o) != FTL_FMT_EMPTY && used++ == 0)
      first = p;
  }
  if (used)
    check_error (c, "erase block %u is %s but %u of its pages have an OOB "
                 "entry (the first: page %u): it was never erased", b, state,
                 used, first);
}

/* One mapped page: its OOB entry and its data (NULL if unreadable). */
static void
check_page (struct checker *c, const struct image *im, uint64_t lpn,
            uint32_t ppn, const uint8_t *oob, const uint8_t *data)
{
  uint32_t ec = im->bi[ppn / im->g.pages_per_block].erase_count;
  enum ftl_fmt_status s;
  struct ftl_oob o;

  s = fmt_oob_decode (oob, FTL_OOB_BYTES, &o);
  if (s != FTL_FMT_OK) {
    check_error (c, WHERE_FMT ": OOB entry: %s", WHERE (im, lpn, ppn),
                 fmt_status_string (s));
    check_fix (c, lpn, FIX_UNMAP, "its OOB entry is damaged");
    return;
  }
  if (o.kind != FTL_OOB_DATA) {
    check_error (c, WHERE_FMT ": the page holds trim records, not data",
                 WHERE (im, lpn, ppn));
    check_fix (c, lpn, FIX_UNMAP, "the page holds trim records");
    return;
  }
  if (o.lpn != lpn) {
    check_error (c, WHERE_FMT ": the page holds logical page %u",
                 WHERE (im, lpn, ppn), o.lpn);
    check_fix (c, lpn, FIX_UNMAP, "the page holds another logical page");
    return;
  }
  if (o.erase_count != ec)
    check_error (c, WHERE_FMT ": its OOB entry gives erase count %u, the "
                 "erase block's is %u", WHERE (im, lpn, ppn), o.erase_count,
                 ec);
  if (data == NULL)
    return;                     /* reported with the read error */
  if (fmt_checksum (data, im->g.page_size,
                    ftl_inspect_page_seed (im->ftl, &o, ppn))
      != o.data_checksum) {
    check_error (c, WHERE_FMT ": data checksum mismatch",
                 WHERE (im, lpn, ppn));
    check_fix (c, lpn, FIX_UNMAP, "data checksum mismatch");
  }
  else if (o.erase_count != ec)
    check_fix (c, lpn, FIX_REWRITE, "wrong erase count in its OOB entry");
}

/* The mapped pages of a full (or open) erase block, read in runs. */
static void
check_pages (struct checker *c, const struct image *im, uint32_t b,
             const uint8_t *meta, const uint32_t *rev, uint8_t *buf,
             uint32_t run_pages)
{
  uint32_t ppb = im->g.pages_per_block;
  uint32_t wp = MIN (im->bi[b].write_pointer, ppb);
  uint32_t first = b * ppb;

  for (uint32_t p0 = 0; p0 < wp; p0 += run_pages) {
    uint32_t n = MIN (run_pages, wp - p0), any = 0;
    int r;

    for (uint32_t p = p0; p < p0 + n; p++)
      any += rev[first + p] != 0;
    if (any == 0)
      continue;
    r = ftl_inspect_read_pages (im->ftl, first + p0, n, buf);
    if (r < 0)
      check_error (c, "erase block %u: reading pages %u to %u: %s", b, p0,
                   p0 + n - 1, g_strerror (-r));
    for (uint32_t p = p0; p < p0 + n; p++) {
      uint32_t ppn = first + p;
      if (rev[ppn] == 0)
        continue;
      check_page (c, im, rev[ppn] - 1, ppn, ftl_inspect_oob_entry (meta, p),
                  r < 0 ? NULL : buf + (size_t) (p - p0) * im->g.page_size);
    }
    progress_add (&c->progress, any);
  }
}

/* Blocks from b on that are free or retired with a metadata area never
 * written: a run of UNWRITTEN_RUN of them if there is one, else 1 or 0.
 */
#define UNWRITTEN_RUN 1024

static uint32_t
unwritten_run (const struct image *im, uint32_t b)
{
  uint32_t n = 0;

  if (b % UNWRITTEN_RUN == 0 && b + UNWRITTEN_RUN <= im->g.blocks) {
    while (n < UNWRITTEN_RUN && (im->bi[b + n].state == FTL_BLK_FREE ||
                                 im->bi[b + n].state == FTL_BLK_RETIRED) &&
           im->bi[b + n].write_pointer == 0)
      n++;
    if (n == UNWRITTEN_RUN &&
        ftl_inspect_meta_unwritten (im->ftl, b, UNWRITTEN_RUN))
      return n;
  }
  if ((im->bi[b].state == FTL_BLK_FREE ||
       im->bi[b].state == FTL_BLK_RETIRED) &&
      im->bi[b].write_pointer == 0 &&
      ftl_inspect_meta_unwritten (im->ftl, b, 1))
    return 1;
  return 0;
}

void
check_image (struct checker *c, struct ftl *ftl)
{
  struct image im = { .ftl = ftl };
  uint64_t phys;
  uint32_t run_pages;
  uint32_t *rev, *count;
  uint8_t *meta, *buf;
  uint64_t mapped;

  ftl_get_geometry (ftl, &im.g);
  ftl_inspect_image (ftl, &im.ii);
  im.bi = g_new (struct ftl_block_info, im.g.blocks);
  for (uint32_t b = 0; b < im.g.blocks; b++)
    ftl_inspect_block (ftl, b, &im.bi[b]);
  phys = (uint64_t) im.g.blocks * im.g.pages_per_block;
  run_pages = MAX (1, MIN (im.g.pages_per_block,
                           READ_BYTES / im.g.page_size));
  /* As large as the physical pages, but it takes memory only where the
   * map holds data.
   */
  rev = (uint32_t *) ftl_inspect_body_alloc (phys * sizeof *rev);
  if (!rev) {
    check_error (c, "out of memory for the reverse map of %" PRIu64
                 " physical pages", phys);
    g_free (im.bi);
    return;
  }
  count = g_new0 (uint32_t, im.g.blocks);
  meta = g_malloc (ftl_inspect_meta_bytes (ftl));
  buf = g_malloc ((size_t) run_pages * im.g.page_size);

  check_block_states (c, &im);
  mapped = check_map (c, &im, rev, count);
  c->mapped_pages = mapped;
  c->logical_pages = im.g.logical_pages;

  progress_start (&c->progress, "checking", mapped + im.g.blocks);
  for (uint32_t b = 0; b < im.g.blocks; b++) {
    uint32_t state = im.bi[b].state;
    uint32_t run = unwritten_run (&im, b);
    if (run) {
      /* Free or retired, and the metadata never written: nothing to
       * read, and nothing there (check_unwritten would find it so).
       */
      progress_add (&c->progress, run);
      b += run - 1;
      continue;
    }
    int r = ftl_inspect_read_meta (ftl, b, meta);
    if (r < 0)
      check_error (c, "erase block %u: reading its metadata: %s", b,
                   g_strerror (-r));
    else {
      check_header (c, &im, b, meta);
      if (state == FTL_BLK_FREE || state == FTL_BLK_RETIRED)
        check_unwritten (c, &im, b, meta);
      else if (state <= FTL_BLK_RETIRED)
        check_pages (c, &im, b, meta, rev, buf, run_pages);
    }
    progress_add (&c->progress, 1);
  }
  progress_clear (&c->progress);

  g_free (buf);
  g_free (meta);
  g_free (count);
  ftl_inspect_body_free ((uint8_t *) rev, phys * sizeof *rev);
  g_free (im.bi);
}
