/* nbdkit-ftl fuzz target: the superblock decoder (fmt_sb_decode) and
 * the namespace table's (fmt_ns_decode), which shares its slot.
 *
 * Input: the bytes of a superblock slot.  They are decoded as they are
 * and, resealed, once more.  A decoded superblock must describe a
 * geometry that the rest of the FTL can use without overflow, and must
 * encode back to the same bytes.  Where the superblock has a table
 * (FTL_SB_NAMESPACES), a decoded table must hold namespaces of whole
 * pages inside the logical size, apart and named as format.h says, and
 * encode back to the same bytes and the superblock's check.
 */

#include <config.h>

#include <string.h>

#include "fuzz.h"
#include "util/util.h"

static void
check_decoded (const uint8_t *buf, const struct ftl_superblock *sb)
{
  uint8_t again[FTL_SB_BYTES];
  uint64_t lpages, end;

  FUZZ_CHECK (sb->page_size >= 512 && sb->page_size <= 65536 &&
              (sb->page_size & (sb->page_size - 1)) == 0);
  FUZZ_CHECK (sb->pages_per_block >= 8 && sb->pages_per_block <= 65536 &&
              (sb->pages_per_block & (sb->pages_per_block - 1)) == 0);
  FUZZ_CHECK (sb->meta_pages == fmt_meta_pages (sb->page_size,
                                                sb->pages_per_block));
  lpages = DIV_ROUND_UP (sb->logical_bytes, sb->page_size);
  FUZZ_CHECK (lpages > 0 && lpages < FTL_PAGES_LIMIT);
  FUZZ_CHECK ((uint64_t) sb->blocks * sb->pages_per_block < FTL_PAGES_LIMIT);
  FUZZ_CHECK ((uint64_t) sb->blocks * sb->pages_per_block > lpages);
  FUZZ_CHECK (sb->ckpt_bytes == fmt_ckpt_bytes (sb->page_size, lpages,
                                                sb->blocks));
  FUZZ_CHECK (sb->ckpt_bytes >= FTL_CKPT_HDR_BYTES + 4 * lpages
              + (uint64_t) FTL_CKPT_BLOCK_BYTES * sb->blocks);
  /* The regions follow each other, after both superblock slots, and the
   * whole image fits a 63 bit file offset.
   */
  FUZZ_CHECK (sb->ckpt_offset[0] >= 2 * FTL_SB_SLOT);
  FUZZ_CHECK (sb->ckpt_offset[1] == sb->ckpt_offset[0] + sb->ckpt_bytes);
  if (sb->meta_offset == 0)
    FUZZ_CHECK (sb->data_offset == sb->ckpt_offset[1] + sb->ckpt_bytes);
  else {
    FUZZ_CHECK (sb->version >= 4);
    FUZZ_CHECK (sb->meta_offset == sb->ckpt_offset[1] + sb->ckpt_bytes);
    FUZZ_CHECK (sb->data_offset
                % fmt_data_align (sb->page_size, sb->pages_per_block) == 0);
    FUZZ_CHECK (sb->data_offset >= sb->meta_offset + (uint64_t) sb->blocks
                * sb->meta_pages * sb->page_size);
  }
  end = fmt_image_bytes (sb);
  FUZZ_CHECK (end > sb->data_offset && end <= INT64_MAX);
  FUZZ_CHECK (sb->state == FTL_SB_CLEAN || sb->state == FTL_SB_DIRTY);

  fmt_sb_encode (sb, again);
  FUZZ_CHECK (memcmp (again, buf, fmt_sb_bytes (sb->version)) == 0);
}

static void
check_table (const uint8_t *buf, const struct ftl_superblock *sb,
             const struct ftl_ns_table *t)
{
  uint8_t again[FTL_NS_MAX_BYTES];
  uint64_t lpages = sb->logical_bytes / sb->page_size;

  FUZZ_CHECK (t->count >= 1 && t->count <= FTL_NS_MAX);
  for (uint32_t i = 0; i < t->count; i++) {
    const struct ftl_ns_entry *e = &t->ns[i];
    FUZZ_CHECK (fmt_ns_name_ok (e->name, strlen (e->name)));
    FUZZ_CHECK (e->bytes > 0 && e->bytes % sb->page_size == 0);
    FUZZ_CHECK (e->base <= lpages &&
                e->bytes / sb->page_size <= lpages - e->base);
    for (uint32_t j = 0; j < i; j++) {
      FUZZ_CHECK (strcmp (e->name, t->ns[j].name) != 0);
      FUZZ_CHECK (e->base >= t->ns[j].base + t->ns[j].bytes / sb->page_size
                  || t->ns[j].base >= e->base + e->bytes / sb->page_size);
    }
  }
  FUZZ_CHECK (fmt_ns_encode (t, again) == sb->ns_check);
  FUZZ_CHECK (memcmp (again, buf, fmt_ns_bytes (t)) == 0);
}

static void
decode (const uint8_t *buf, size_t len)
{
  struct ftl_superblock sb;
  struct ftl_ns_table t;
  char why[128];
  enum ftl_fmt_status st;

  st = fmt_sb_decode (buf, len, &sb, why, sizeof why);
  FUZZ_CHECK (strlen (why) < sizeof why);
  if (st == FTL_FMT_OK)
    check_decoded (buf, &sb);
  else
    FUZZ_CHECK (fmt_status_string (st)[0] != '\0');
  /* Without room for the reason. */
  fmt_sb_decode (buf, len, &sb, NULL, 0);
  if (st != FTL_FMT_OK || !(sb.flags & FTL_SB_NAMESPACES) ||
      len < FTL_NS_OFFSET)
    return;
  st = fmt_ns_decode (buf + FTL_NS_OFFSET, len - FTL_NS_OFFSET, &sb, &t,
                      why, sizeof why);
  FUZZ_CHECK (strlen (why) < sizeof why);
  if (st == FTL_FMT_OK)
    check_table (buf + FTL_NS_OFFSET, &sb, &t);
  else
    FUZZ_CHECK (fmt_status_string (st)[0] != '\0');
}

/* The table's checksum (bounded by what the slot holds), which the
 * superblock names, then the superblock's.
 */
static void
reseal (uint8_t *buf, size_t len)
{
  if (len >= FTL_NS_OFFSET + FTL_NS_HDR_BYTES) {
    uint8_t *t = buf + FTL_NS_OFFSET;
    uint32_t tlen = get32le (t + 12);
    if (tlen >= FTL_NS_HDR_BYTES && tlen <= FTL_NS_MAX_BYTES &&
        FTL_NS_OFFSET + tlen <= len) {
      fuzz_reseal_struct (t, tlen, 16);
      if (get32le (buf + 136) & FTL_SB_NAMESPACES)
        put32le (buf + 140, (uint32_t) get64le (t + 16));
    }
  }
  fuzz_reseal_sb (buf);
}

/* Over FTL_SB_SLOT bytes it is not a slot: not worth keeping. */
int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  return fuzz_decode_twice (data, size, FTL_SB_SLOT, FTL_SB_BYTES,
                            decode, reseal);
}
