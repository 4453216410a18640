/* ftlctl check: the superblock copies and the checkpoint slots.
 *
 * The library reads both copies of each and quietly takes the best one;
 * a damaged copy or slot is the first sign of trouble, so this reads
 * them raw from the file and reports on each:
 *
 *   superblock   each copy decodes (magic, version, length, checksum,
 *                self-consistent geometry); two valid copies agree on
 *                everything but their generation, state and checkpoint
 *                (which change at each write), and never share a
 *                generation with different contents.
 *   checkpoint   each slot is never written, or passes the checkpoint
 *                validity rule that recovery applies (format.h: header,
 *                geometry, checksum, every entry possible); then, beyond
 *                that rule, the snapshot is self-consistent: every
 *                mapped logical page lies in the written part of an erase
 *                block that is neither free nor retired, and no two map
 *                to one physical page.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "check.h"
#include "ftlctl.h"

static const char copy_name[2] = { 'A', 'B' };

/* Compare the fields of two valid superblock copies that must never
 * change; report each that differs.
 */
static void
compare_superblocks (struct checker *c, const struct ftl_superblock *a,
                     const struct ftl_superblock *b)
{
#define SAME(field)                                                     \
  do {                                                                  \
    if (a->field != b->field)                                           \
      check_error (c, "superblock copies A and B disagree on " #field   \
                   " (%" PRIu64 " and %" PRIu64 ")",                    \
                   (uint64_t) a->field, (uint64_t) b->field);           \
  } while (0)

  SAME (version);
  SAME (page_size);
  SAME (pages_per_block);
  SAME (blocks);
  SAME (meta_pages);
  SAME (logical_bytes);
  SAME (data_offset);
  SAME (meta_offset);
  SAME (ckpt_offset[0]);
  SAME (ckpt_offset[1]);
  SAME (ckpt_bytes);
  SAME (op_ppm);
  SAME (uuid[0]);
  SAME (uuid[1]);
  SAME (created);
#undef SAME
  if (a->generation == b->generation &&
      (a->state != b->state || a->clean_ckpt_gen != b->clean_ckpt_gen))
    check_error (c, "superblock copies A and B have the same generation "
                 "%" PRIu64 " but differ", a->generation);
}

/* Read and decode both superblock copies; *best is the newest valid
 * one.  Returns false if neither is valid.
 */
static bool
check_superblocks (struct checker *c, int fd, struct ftl_superblock *best)
{
  struct ftl_superblock sb[2];
  enum ftl_fmt_status st[2];
  char why[128];
  int r, newest = -1;

  for (int i = 0; i < 2; i++) {
    r = ftl_inspect_read_sb (fd, i, &sb[i], &st[i], why, sizeof why);
    if (r < 0) {
      check_error (c, "superblock copy %c: cannot be read: %s",
                   copy_name[i], r == -EIO ? "the file is too short"
                   : strerror (-r));
      st[i] = FTL_FMT_BAD_LENGTH;
      continue;
    }
    if (st[i] != FTL_FMT_OK) {
      check_error (c, "superblock copy %c: %s%s%s", copy_name[i],
                   fmt_status_string (st[i]), why[0] ? ": " : "", why);
      continue;
    }
    if (newest == -1 || sb[i].generation > sb[newest].generation)
      newest = i;
  }
  if (newest == -1)
    return false;
  for (int i = 0; i < 2; i++)
    if (st[i] == FTL_FMT_OK && i != newest)
      check_note (c, "superblock copy %c: generation %" PRIu64 " (older)",
                  copy_name[i], sb[i].generation);
    else if (i == newest)
      check_note (c, "superblock copy %c: generation %" PRIu64 " (newest), "
                  "%s", copy_name[i], sb[i].generation,
                  sb[i].state == FTL_SB_CLEAN ? "clean"
                  : "dirty (not shut down cleanly)");
  if (st[0] == FTL_FMT_OK && st[1] == FTL_FMT_OK)
    compare_superblocks (c, &sb[0], &sb[1]);
  *best = sb[newest];
  return true;
}

/* A read checkpoint body: pieces that were holes of the file are zeros
 * and unread (present), and are skipped in the walk of the map: from
 * version 5 they hold only unmapped entries.
 */
struct body {
  uint8_t *p;
  uint8_t *present;
};

/* An array of n 32-bit values that reads as zeros and takes memory only
 * where it is written (as large as the physical pages).
 */
static uint32_t *
zeroed_u32 (uint64_t n)
{
  return (uint32_t *) ftl_inspect_body_alloc (n * sizeof (uint32_t));
}

/* A paged checkpoint (format version 6): its block table, and each
 * translation page its directory names lies in the written part of a
 * block that is neither free nor retired, no two groups share one, and
 * the page's OOB entry says it is that group's, at that version (the
 * page itself is read, and its entries checked, through the map when
 * the image is opened: check-map.c).
 */
static void
check_ckpt_pbody (struct checker *c, int fd, const struct ftl_superblock *sb,
                  int slot, const struct ftl_ckpt_header *h,
                  const struct body *body)
{
  uint64_t lpages = h->logical_pages, groups = fmt_map_groups (lpages);
  uint32_t ppb = h->pages_per_block;
  uint64_t phys = (uint64_t) h->blocks * ppb;
  struct ftl_ckpt_block *blk = g_new (struct ftl_ckpt_block, h->blocks);
  GHashTable *seen = g_hash_table_new (g_direct_hash, g_direct_equal);
  char why[128];

  for (uint32_t b = 0; b < h->blocks; b++) {
    fmt_ckpt_block_decode (body->p + fmt_ckpt_pblock_offset (lpages, b),
                           &blk[b]);
    if (!fmt_ckpt_block_check (&blk[b], ppb, why, sizeof why))
      check_error (c, "checkpoint slot %d: erase block %u %s", slot, b, why);
  }
  for (uint64_t g = 0; g < groups; g++) {
    uint32_t ppn, b, page;
    uint64_t version;
    fmt_ckpt_dir_decode (body->p + g * FTL_CKPT_DIR_BYTES, &ppn, &version);
    if (ppn == FTL_UNMAPPED)
      continue;
    if (ppn >= phys) {
      check_error (c, "checkpoint slot %d: the translation page of group %"
                   PRIu64 " is physical page %u, beyond the last (%" PRIu64
                   ")", slot, g, ppn, phys - 1);
      continue;
    }
    b = ppn / ppb;
    page = ppn % ppb;
    if (blk[b].state == FTL_BLK_FREE || blk[b].state == FTL_BLK_RETIRED ||
        page >= blk[b].write_pointer) {
      check_error (c, "checkpoint slot %d: the translation page of group %"
                   PRIu64 " is page %u of erase block %u, which is %s with "
                   "%u pages written", slot, g, page, b,
                   block_state_name (blk[b].state), blk[b].write_pointer);
      continue;
    }
    if (!g_hash_table_add (seen, GUINT_TO_POINTER (ppn + 1)))
      check_error (c, "checkpoint slot %d: two groups name physical page %u "
                   "as their translation page", slot, ppn);
    uint8_t oob[FTL_OOB_BYTES];
    struct ftl_oob o;
    if (ftl_inspect_read_oob (fd, sb, b, page, oob) < 0 ||
        fmt_oob_decode (oob, sizeof oob, &o) != FTL_FMT_OK) {
      /* GC may have moved it since (its copy has the version), and an
       * older checkpoint's page may be gone: a note, not an error.
       */
      check_note (c, "checkpoint slot %d: the translation page of group %"
                  PRIu64 " (physical page %u) has no OOB entry now", slot,
                  g, ppn);
      continue;
    }
    if (o.kind != FTL_OOB_MAP || o.lpn != g || o.seq != version)
      check_note (c, "checkpoint slot %d: physical page %u, the translation "
                  "page of group %" PRIu64 " at version %" PRIu64 ", holds "
                  "something else now (moved or rewritten since)", slot, ppn,
                  g, version);
  }
  g_hash_table_destroy (seen);
  g_free (blk);
}

/* The snapshot in a checkpoint body is self-consistent. */
static void
check_ckpt_body (struct checker *c, int slot, const struct ftl_ckpt_header *h,
                 const struct body *body)
{
  const uint64_t per = FTL_INSPECT_PIECE / FTL_CKPT_MAP_ENTRY_BYTES;
  uint64_t lpages = h->logical_pages;
  uint32_t ppb = h->pages_per_block;
  uint64_t phys = (uint64_t) h->blocks * ppb;
  struct ftl_ckpt_block *blk;
  uint32_t *owner;
  char why[128];

  blk = g_new (struct ftl_ckpt_block, h->blocks);
  for (uint32_t b = 0; b < h->blocks; b++) {
    fmt_ckpt_block_decode (body->p + fmt_ckpt_block_offset (lpages, b),
                           &blk[b]);
    if (!fmt_ckpt_block_check (&blk[b], ppb, why, sizeof why))
      check_error (c, "checkpoint slot %d: erase block %u %s", slot, b, why);
  }

  /* owner[ppn]: 1 + the logical page seen mapping to it, 0: none. */
  owner = zeroed_u32 (phys);
  if (!owner) {
    check_error (c, "checkpoint slot %d: out of memory for its %" PRIu64
                 " physical pages", slot, phys);
    g_free (blk);
    return;
  }
  for (uint64_t lpn = 0; lpn < lpages; lpn++) {
    uint32_t ppn, b, page;

    if (lpn % per == 0 && h->version >= 5 && !body->present[lpn / per]) {
      lpn += per - 1;
      continue;
    }
    ppn = fmt_ckpt_map_decode (body->p + lpn * FTL_CKPT_MAP_ENTRY_BYTES,
                               h->version);
    if (ppn == FTL_UNMAPPED)
      continue;
    if (ppn == FTL_LOST && fmt_ckpt_map_check (h, ppn))
      continue;                 /* lost in a crash of the host */
    if (!fmt_ckpt_map_check (h, ppn)) {
      check_error (c, "checkpoint slot %d: logical page %" PRIu64 " maps "
                   "to physical page %u, beyond the last (%" PRIu64 ")",
                   slot, lpn, ppn, phys - 1);
      continue;
    }
    b = ppn / ppb;
    page = ppn % ppb;
    if (blk[b].state == FTL_BLK_FREE || blk[b].state == FTL_BLK_RETIRED)
      check_error (c, "checkpoint slot %d: logical page %" PRIu64 " maps "
                   "to page %u of erase block %u, which is %s", slot, lpn,
                   page, b, block_state_name (blk[b].state));
    else if (page >= blk[b].write_pointer)
      check_error (c, "checkpoint slot %d: logical page %" PRIu64 " maps "
                   "to page %u of erase block %u, which has only %u pages "
                   "written", slot, lpn, page, b, blk[b].write_pointer);
    if (owner[ppn] != 0)
      check_error (c, "checkpoint slot %d: logical pages %u and %" PRIu64
                   " both map to physical page %u", slot, owner[ppn] - 1,
                   lpn, ppn);
    else
      owner[ppn] = lpn + 1;
  }
  ftl_inspect_body_free ((uint8_t *) owner, phys * sizeof (uint32_t));
  g_free (blk);
}

static void
body_free (struct body *b, const struct ftl_ckpt_header *h)
{
  ftl_inspect_body_free (b->p, h->body_bytes);
  g_free (b->present);
  b->p = NULL;
  b->present = NULL;
}

/* Read one checkpoint slot and check its header and checksum.  Returns
 * true if it is valid, with its body in *body (free it with body_free)
 * and its header in *h.
 */
static bool
check_ckpt_slot (struct checker *c, int fd, int slot,
                 const struct ftl_superblock *sb, struct ftl_ckpt_header *h,
                 struct body *body)
{
  enum ftl_fmt_status st;
  char why[128];
  int r;

  r = ftl_inspect_read_ckpt_header (fd, sb, slot, h, &st);
  if (r < 0) {
    check_error (c, "checkpoint slot %d: cannot be read: %s", slot,
                 r == -EIO ? "the file is too short" : strerror (-r));
    return false;
  }
  if (st == FTL_FMT_EMPTY) {
    check_note (c, "checkpoint slot %d: never written", slot);
    return false;
  }
  if (st != FTL_FMT_OK) {
    check_error (c, "checkpoint slot %d: %s", slot,
                 fmt_status_string (st));
    return false;
  }
  if (!fmt_ckpt_header_check (h, sb, why, sizeof why)) {
    check_error (c, "checkpoint slot %d (generation %" PRIu64 "): %s",
                 slot, h->generation, why);
    return false;
  }

  body->p = ftl_inspect_body_alloc (h->body_bytes);
  body->present = g_try_malloc0 (h->body_bytes / FTL_INSPECT_PIECE + 1);
  if (body->p == NULL || body->present == NULL) {
    check_error (c, "checkpoint slot %d: out of memory reading its %"
                 PRIu64 " bytes", slot, h->body_bytes);
    body_free (body, h);
    return false;
  }
  r = ftl_inspect_read_ckpt_body (fd, sb, slot, h, body->p, body->present);
  if (r < 0)
    check_error (c, "checkpoint slot %d: cannot be read: %s", slot,
                 r == -EIO ? "the file is too short" : strerror (-r));
  else if (!ftl_inspect_body_check (h, body->p, body->present))
    check_error (c, "checkpoint slot %d (generation %" PRIu64 "): its "
                 "body fails its checksum", slot, h->generation);
  else
    return true;
  body_free (body, h);
  return false;
}

/* The file holds every region of the geometry. */
static void
check_size (struct checker *c, int fd, const struct ftl_superblock *sb)
{
  uint64_t need = fmt_image_bytes (sb);
  struct stat st;

  if (fstat (fd, &st) == 0 && (uint64_t) st.st_size < need)
    check_error (c, "the image is truncated: %" PRIu64 " bytes, its "
                 "geometry needs %" PRIu64, (uint64_t) st.st_size, need);
}

void
check_metadata (struct checker *c, int fd)
{
  struct ftl_superblock sb;
  struct ftl_ckpt_header h[2];
  struct body body[2] = { { 0 } };
  bool ok[2];

  if (!check_superblocks (c, fd, &sb))
    return;                     /* no geometry: nothing more to read */
  check_size (c, fd, &sb);
  for (int s = 0; s < 2; s++)
    ok[s] = check_ckpt_slot (c, fd, s, &sb, &h[s], &body[s]);
  for (int s = 0; s < 2; s++) {
    if (!ok[s])
      continue;
    check_note (c, "checkpoint slot %d: generation %" PRIu64 " (%s), "
                "sequence %" PRIu64 "%s", s, h[s].generation,
                !ok[1 - s] || h[s].generation > h[1 - s].generation
                ? "newest" : "older", h[s].seq,
                h[s].clean ? ", written at a clean shutdown" : "");
    if (h[s].paged)
      check_ckpt_pbody (c, fd, &sb, s, &h[s], &body[s]);
    else
      check_ckpt_body (c, s, &h[s], &body[s]);
  }
  if (!ok[0] && !ok[1])
    check_error (c, "no valid checkpoint: the image cannot be opened");
  if (ok[0] && ok[1] && h[0].generation == h[1].generation)
    check_error (c, "checkpoint slots 0 and 1 have the same generation %"
                 PRIu64, h[0].generation);
  for (int s = 0; s < 2; s++)
    if (ok[s])
      body_free (&body[s], &h[s]);
}
