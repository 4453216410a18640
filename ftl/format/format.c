/* nbdkit-ftl: encoding and validation of the on-media structures.
 * See format.h for the layout.
 */

#include <config.h>

#include <assert.h>
#include <stdio.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>
#ifdef HAVE_XXH3_DISPATCH
/* From xxh_x86dispatch.h, which cannot be included after
 * XXH_INLINE_ALL (it would make the declaration static).
 */
extern XXH64_hash_t XXH3_64bits_withSeed_dispatch (const void *input,
                                                   size_t len,
                                                   XXH64_hash_t seed);
/* The state is the same structure either way (one xxhash.h). */
extern XXH_errorcode XXH3_64bits_update_dispatch (XXH3_state_t *state,
                                                  const void *input,
                                                  size_t len);
#define checksum_update XXH3_64bits_update_dispatch
#else
#define checksum_update XXH3_64bits_update
#endif

#include "format/format.h"
#include "util/util.h"

/* Pages go through libxxhash's dispatcher where there is one (the
 * vector unit of this CPU, see configure.ac); short structures through
 * the inlined code, which is quicker for them.  Both compute XXH3.
 */
uint64_t
fmt_checksum (const void *data, size_t len, uint64_t seed)
{
#ifdef HAVE_XXH3_DISPATCH
  if (len >= 1024)
    return XXH3_64bits_withSeed_dispatch (data, len, seed);
#endif
  return XXH3_64bits_withSeed (data, len, seed);
}

uint64_t
fmt_checksum_sparse (const uint8_t *data, uint64_t len, uint64_t base,
                     uint64_t piece, const uint8_t *present)
{
  static const uint8_t zeros[65536];
  XXH3_state_t st;
  uint64_t pos = 0, k;

  /* Every piece there: the one-shot hash (the same value). */
  for (k = base / piece; k <= (base + len - 1) / piece && present[k]; k++)
    ;
  if (len == 0 || k > (base + len - 1) / piece)
    return fmt_checksum (data, len, 0);
  XXH3_64bits_reset_withSeed (&st, 0);
  while (pos < len) {
    k = (base + pos) / piece;
    uint64_t n = MIN ((k + 1) * piece - (base + pos), len - pos);
    if (present[k])
      checksum_update (&st, data + pos, n);
    else
      for (uint64_t z = 0; z < n; z += sizeof zeros)
        checksum_update (&st, zeros, MIN (sizeof zeros, n - z));
    pos += n;
  }
  return XXH3_64bits_digest (&st);
}

const char *
fmt_status_string (enum ftl_fmt_status s)
{
  switch (s) {
  case FTL_FMT_OK: return "valid";
  case FTL_FMT_EMPTY: return "never written (all zeros)";
  case FTL_FMT_BAD_MAGIC: return "bad magic";
  case FTL_FMT_BAD_VERSION: return "unsupported format version";
  case FTL_FMT_BAD_LENGTH: return "bad length";
  case FTL_FMT_BAD_CHECKSUM: return "checksum mismatch";
  case FTL_FMT_BAD_FIELD: return "field out of range";
  }
  return "unknown status";
}

/* Checksum of an encoded structure whose checksum field (csum_len bytes
 * at csum_off) is taken as zero.
 */
static uint64_t
struct_checksum (const uint8_t *buf, size_t len, size_t csum_off,
                 size_t csum_len)
{
  uint8_t tmp[FTL_CKPT_HDR_BYTES];
  assert (len <= sizeof tmp);
  memcpy (tmp, buf, len);
  memset (tmp + csum_off, 0, csum_len);
  return fmt_checksum (tmp, len, 0);
}

uint32_t
fmt_meta_pages (uint32_t page_size, uint32_t pages_per_block)
{
  uint64_t bytes = FTL_BLKHDR_BYTES + (uint64_t) pages_per_block * FTL_OOB_BYTES;
  return DIV_ROUND_UP (bytes, page_size);
}

uint64_t
fmt_ckpt_bytes (uint32_t page_size, uint64_t logical_pages, uint32_t blocks)
{
  return ROUND_UP (FTL_CKPT_HDR_BYTES
                   + fmt_ckpt_body_bytes (logical_pages, blocks), page_size);
}

uint64_t
fmt_ckpt_pbytes (uint32_t page_size, uint64_t logical_pages, uint32_t blocks)
{
  return ROUND_UP (FTL_CKPT_HDR_BYTES
                   + fmt_ckpt_pbody_bytes (logical_pages, blocks), page_size);
}

uint64_t
fmt_data_align (uint32_t page_size, uint32_t pages_per_block)
{
  return MIN ((uint64_t) page_size * pages_per_block, FTL_DATA_ALIGN);
}

void
fmt_place_regions (struct ftl_superblock *sb)
{
  sb->meta_offset = sb->ckpt_offset[1] + sb->ckpt_bytes;
  sb->data_offset = ROUND_UP (sb->meta_offset + (uint64_t) sb->blocks
                              * sb->meta_pages * sb->page_size,
                              fmt_data_align (sb->page_size,
                                              sb->pages_per_block));
}

uint64_t
fmt_image_bytes (const struct ftl_superblock *sb)
{
  uint64_t pages = sb->pages_per_block
    + (sb->meta_offset == 0 ? sb->meta_pages : 0);
  return sb->data_offset + (uint64_t) sb->blocks * pages * sb->page_size;
}

uint64_t
fmt_meta_area_offset (const struct ftl_superblock *sb, uint32_t b)
{
  uint64_t meta_bytes = (uint64_t) sb->meta_pages * sb->page_size;

  if (sb->meta_offset)
    return sb->meta_offset + b * meta_bytes;
  return sb->data_offset + b * (meta_bytes + (uint64_t) sb->pages_per_block
                                * sb->page_size);
}

uint64_t
fmt_data_page_offset (const struct ftl_superblock *sb, uint32_t b,
                      uint32_t p)
{
  if (sb->meta_offset)
    return sb->data_offset
      + ((uint64_t) b * sb->pages_per_block + p) * sb->page_size;
  return fmt_meta_area_offset (sb, b)
    + (uint64_t) (sb->meta_pages + p) * sb->page_size;
}

/* ---- superblock ---- */

/* The encoded length of a superblock of this version. */
uint32_t
fmt_sb_bytes (uint32_t version)
{
  return version >= 5 ? FTL_SB_BYTES
    : version == 4 ? FTL_SB_BYTES_V4 : FTL_SB_BYTES_V1;
}

void
fmt_sb_encode (const struct ftl_superblock *sb, uint8_t *buf)
{
  uint32_t length = fmt_sb_bytes (sb->version);

  memset (buf, 0, FTL_SB_BYTES);
  memcpy (buf, FTL_SB_MAGIC, 8);
  put32le (buf + 8, sb->version);
  put32le (buf + 12, length);
  put64le (buf + 24, sb->generation);
  put32le (buf + 32, sb->page_size);
  put32le (buf + 36, sb->pages_per_block);
  put32le (buf + 40, sb->blocks);
  put32le (buf + 44, sb->meta_pages);
  put64le (buf + 48, sb->logical_bytes);
  put64le (buf + 56, sb->data_offset);
  put64le (buf + 64, sb->ckpt_offset[0]);
  put64le (buf + 72, sb->ckpt_offset[1]);
  put64le (buf + 80, sb->ckpt_bytes);
  put32le (buf + 88, sb->state);
  put32le (buf + 92, sb->op_ppm);
  put64le (buf + 96, sb->clean_ckpt_gen);
  put64le (buf + 104, sb->uuid[0]);
  put64le (buf + 112, sb->uuid[1]);
  put64le (buf + 120, sb->created);
  if (sb->version >= 4)
    put64le (buf + 128, sb->meta_offset);
  if (sb->version >= 5) {
    put32le (buf + 136, sb->flags);
    if (sb->flags & FTL_SB_NAMESPACES)
      put32le (buf + 140, sb->ns_check);
    put64le (buf + 144, sb->pinned_ckpt_gen);
  }
  put64le (buf + 16, struct_checksum (buf, length, 16, 8));
}

/* Version 5's flags: only known ones, the mark of a sync=false session
 * only on a superblock in use and with a pinned checkpoint, LPN seeds
 * from version 7 on, and the bytes after them zeros (so that a
 * superblock encodes back to its bytes).
 */
static bool
sb_flags_ok (const uint8_t *buf, const struct ftl_superblock *sb,
             char *why, size_t whylen)
{
  const char *bad = NULL;

  if (sb->flags & ~FTL_SB_FLAGS_KNOWN)
    bad = "unknown flags";
  else if (sb->version >= 5 && !(sb->flags & FTL_SB_NAMESPACES) &&
           get32le (buf + 140) != 0)
    bad = "reserved bytes 140 to 143 are not zero, flags";
  else if ((sb->flags & FTL_SB_NAMESPACES) && sb->version < 8)
    bad = "namespace table flag before format version 8: flags";
  else if ((sb->flags & FTL_SB_UNSYNCED) ? sb->state != FTL_SB_DIRTY ||
           sb->pinned_ckpt_gen == 0 : sb->pinned_ckpt_gen != 0)
    bad = "unsynced flag inconsistent: flags";
  else if ((sb->flags & FTL_SB_LPN_SEED) && sb->version < 7)
    bad = "LPN-seeded checksums flag before format version 7: flags";
  if (bad && why)
    snprintf (why, whylen, "%s 0x%x with state %u and pinned checkpoint %"
              PRIu64, bad, sb->flags, sb->state, sb->pinned_ckpt_gen);
  return bad == NULL;
}

/* The fields of a superblock of sb->version (its checksum is good). */
static void
sb_fields (const uint8_t *buf, struct ftl_superblock *sb)
{
  sb->generation = get64le (buf + 24);
  sb->page_size = get32le (buf + 32);
  sb->pages_per_block = get32le (buf + 36);
  sb->blocks = get32le (buf + 40);
  sb->meta_pages = get32le (buf + 44);
  sb->logical_bytes = get64le (buf + 48);
  sb->data_offset = get64le (buf + 56);
  sb->ckpt_offset[0] = get64le (buf + 64);
  sb->ckpt_offset[1] = get64le (buf + 72);
  sb->ckpt_bytes = get64le (buf + 80);
  sb->state = get32le (buf + 88);
  sb->op_ppm = get32le (buf + 92);
  sb->clean_ckpt_gen = get64le (buf + 96);
  sb->uuid[0] = get64le (buf + 104);
  sb->uuid[1] = get64le (buf + 112);
  sb->created = get64le (buf + 120);
  sb->meta_offset = sb->version >= 4 ? get64le (buf + 128) : 0;
  sb->flags = sb->version >= 5 ? get32le (buf + 136) : 0;
  sb->pinned_ckpt_gen = sb->version >= 5 ? get64le (buf + 144) : 0;
  sb->ns_check = (sb->flags & FTL_SB_NAMESPACES) ? get32le (buf + 140) : 0;
}

enum ftl_fmt_status
fmt_sb_decode (const uint8_t *buf, size_t len, struct ftl_superblock *out,
               char *why, size_t whylen)
{
  struct ftl_superblock sb;
  uint32_t length;

#define BAD(...) do { if (why) snprintf (why, whylen, __VA_ARGS__); \
                      return FTL_FMT_BAD_FIELD; } while (0)

  if (why && whylen) why[0] = '\0';
  if (len < 24)
    return FTL_FMT_BAD_LENGTH;
  if (all_zero (buf, len < FTL_SB_BYTES_V1 ? len : FTL_SB_BYTES_V1))
    return FTL_FMT_EMPTY;
  if (memcmp (buf, FTL_SB_MAGIC, 8) != 0)
    return FTL_FMT_BAD_MAGIC;
  sb.version = get32le (buf + 8);
  if (sb.version > FTL_FORMAT_VERSION) {
    if (why)
      snprintf (why, whylen, "format version %u, this program reads up to %u",
                sb.version, FTL_FORMAT_VERSION);
    return FTL_FMT_BAD_VERSION;
  }
  length = get32le (buf + 12);
  /* Version 0 is not written by any version: its length is only
   * bounded, and its checksum (or the version check after it) fails.
   */
  if ((sb.version == 0 ? length != FTL_SB_BYTES && length != FTL_SB_BYTES_V4
       && length != FTL_SB_BYTES_V1
       : length != fmt_sb_bytes (sb.version)) || len < length)
    return FTL_FMT_BAD_LENGTH;
  if (get64le (buf + 16) != struct_checksum (buf, length, 16, 8))
    return FTL_FMT_BAD_CHECKSUM;
  if (sb.version == 0)
    BAD ("format version 0");

  sb_fields (buf, &sb);

  /* The geometry must be self-consistent: a checksum only proves the
   * bytes are what some writer wrote.
   */
  if (!is_power_of_2 (sb.page_size) || sb.page_size < 512 ||
      sb.page_size > 65536)
    BAD ("page size %u", sb.page_size);
  if (!is_power_of_2 (sb.pages_per_block) || sb.pages_per_block < 8 ||
      sb.pages_per_block > 65536)
    BAD ("pages per block %u", sb.pages_per_block);
  if (sb.meta_pages != fmt_meta_pages (sb.page_size, sb.pages_per_block))
    BAD ("metadata pages %u", sb.meta_pages);
  if (sb.logical_bytes == 0 || sb.logical_bytes % 512 != 0)
    BAD ("logical size %" PRIu64, sb.logical_bytes);
  uint64_t lpages = DIV_ROUND_UP (sb.logical_bytes, sb.page_size);
  if (lpages >= FTL_PAGES_LIMIT)
    BAD ("logical size %" PRIu64 " too large", sb.logical_bytes);
  if (sb.blocks < 4 ||
      (uint64_t) sb.blocks * sb.pages_per_block >= FTL_PAGES_LIMIT)
    BAD ("block count %u", sb.blocks);
  if ((uint64_t) sb.blocks * sb.pages_per_block <= lpages)
    BAD ("no spare capacity (%u blocks for %" PRIu64 " logical pages)",
         sb.blocks, lpages);
  if ((sb.flags & FTL_SB_PAGED) && (sb.version < 6 || sb.page_size < 4096))
    BAD ("paged map flag with format version %u and page size %u",
         sb.version, sb.page_size);
  if (sb.ckpt_bytes != ((sb.flags & FTL_SB_PAGED)
                        ? fmt_ckpt_pbytes (sb.page_size, lpages, sb.blocks)
                        : fmt_ckpt_bytes (sb.page_size, lpages, sb.blocks)))
    BAD ("checkpoint size %" PRIu64, sb.ckpt_bytes);
  /* Offsets: in order, without wrapping around, and the whole image
   * addressable with a 63 bit file offset.
   */
  if (sb.ckpt_offset[0] < 2 * FTL_SB_SLOT ||
      sb.ckpt_offset[0] % sb.page_size != 0 ||
      sb.ckpt_offset[0] > INT64_MAX || sb.ckpt_bytes > INT64_MAX / 4 ||
      sb.ckpt_offset[1] != sb.ckpt_offset[0] + sb.ckpt_bytes)
    BAD ("region offsets");
  uint64_t after_ckpt = sb.ckpt_offset[1] + sb.ckpt_bytes;
  uint64_t meta_bytes = (uint64_t) sb.meta_pages * sb.page_size;
  uint64_t data_bytes = (uint64_t) sb.pages_per_block * sb.page_size;
  if (sb.meta_offset == 0) {
    /* Interleaved, as before version 4. */
    if (sb.data_offset != after_ckpt ||
        sb.data_offset > INT64_MAX - (uint64_t) sb.blocks
        * (meta_bytes + data_bytes))
      BAD ("region offsets");
  }
  else {
    if (sb.meta_offset != after_ckpt ||
        sb.meta_offset > INT64_MAX - (uint64_t) sb.blocks * meta_bytes -
        FTL_DATA_ALIGN ||
        sb.data_offset != ROUND_UP (sb.meta_offset + (uint64_t) sb.blocks
                                    * meta_bytes,
                                    fmt_data_align (sb.page_size,
                                                    sb.pages_per_block)) ||
        sb.data_offset > INT64_MAX - (uint64_t) sb.blocks * data_bytes)
      BAD ("region offsets");
  }
  if (sb.state != FTL_SB_CLEAN && sb.state != FTL_SB_DIRTY)
    BAD ("state %u", sb.state);
  if (!sb_flags_ok (buf, &sb, why, whylen))
    return FTL_FMT_BAD_FIELD;
#undef BAD

  *out = sb;
  return FTL_FMT_OK;
}

/* ---- durable-point record ---- */

void
fmt_durable_encode (const struct ftl_durable *d, uint8_t *buf)
{
  memset (buf, 0, FTL_DURABLE_BYTES);
  memcpy (buf, FTL_DURABLE_MAGIC, 8);
  put32le (buf + 8, FTL_FORMAT_VERSION);
  put32le (buf + 12, FTL_DURABLE_BYTES);
  put64le (buf + 24, d->generation);
  put64le (buf + 32, d->seq);
  put64le (buf + 40, d->uuid[0]);
  put64le (buf + 48, d->uuid[1]);
  put64le (buf + 16, struct_checksum (buf, FTL_DURABLE_BYTES, 16, 8));
}

enum ftl_fmt_status
fmt_durable_decode (const uint8_t *buf, size_t len, struct ftl_durable *out)
{
  struct ftl_durable d;

  if (len < FTL_DURABLE_BYTES)
    return FTL_FMT_BAD_LENGTH;
  if (all_zero (buf, FTL_DURABLE_BYTES))
    return FTL_FMT_EMPTY;
  if (memcmp (buf, FTL_DURABLE_MAGIC, 8) != 0)
    return FTL_FMT_BAD_MAGIC;
  d.version = get32le (buf + 8);
  if (d.version == 0 || d.version > FTL_FORMAT_VERSION)
    return FTL_FMT_BAD_VERSION;
  if (get32le (buf + 12) != FTL_DURABLE_BYTES)
    return FTL_FMT_BAD_LENGTH;
  if (get64le (buf + 16) != struct_checksum (buf, FTL_DURABLE_BYTES, 16, 8))
    return FTL_FMT_BAD_CHECKSUM;
  d.generation = get64le (buf + 24);
  d.seq = get64le (buf + 32);
  d.uuid[0] = get64le (buf + 40);
  d.uuid[1] = get64le (buf + 48);
  *out = d;
  return FTL_FMT_OK;
}

/* ---- checkpoint header and body entries ---- */

_Static_assert (FTL_CKPT_NCOUNTERS == FTL_CTR__MAX,
                "every counter has its place in the checkpoint header");
_Static_assert (80 + 8 * FTL_CKPT_NCOUNTERS <= 248,
                "the counters end before the media clock");

void
fmt_ckpt_header_encode (const struct ftl_ckpt_header *h, uint8_t *buf)
{
  memset (buf, 0, FTL_CKPT_HDR_BYTES);
  memcpy (buf, FTL_CKPT_MAGIC, 8);
  put32le (buf + 8, h->version);
  put32le (buf + 12, FTL_CKPT_HDR_BYTES);
  put64le (buf + 24, h->generation);
  put64le (buf + 32, h->seq);
  put64le (buf + 40, h->body_bytes);
  put64le (buf + 48, h->body_checksum);
  put64le (buf + 56, h->logical_pages);
  put32le (buf + 64, h->blocks);
  put32le (buf + 68, h->pages_per_block);
  put32le (buf + 72, h->clean | (h->paged ? 1u << 8 : 0));
  put32le (buf + 76, h->pe_offset);
  for (int i = 0; i < FTL_CKPT_NCOUNTERS; i++)
    put64le (buf + 80 + 8 * i, h->counters[i]);
  put64le (buf + 248, (uint64_t) h->clock_skew);
  put64le (buf + 16, struct_checksum (buf, FTL_CKPT_HDR_BYTES, 16, 8));
}

enum ftl_fmt_status
fmt_ckpt_header_decode (const uint8_t *buf, size_t len,
                        struct ftl_ckpt_header *out)
{
  struct ftl_ckpt_header h;

  if (len < FTL_CKPT_HDR_BYTES)
    return FTL_FMT_BAD_LENGTH;
  if (all_zero (buf, FTL_CKPT_HDR_BYTES))
    return FTL_FMT_EMPTY;
  if (memcmp (buf, FTL_CKPT_MAGIC, 8) != 0)
    return FTL_FMT_BAD_MAGIC;
  h.version = get32le (buf + 8);
  if (h.version > FTL_FORMAT_VERSION)
    return FTL_FMT_BAD_VERSION;
  if (get32le (buf + 12) != FTL_CKPT_HDR_BYTES)
    return FTL_FMT_BAD_LENGTH;
  if (get64le (buf + 16) != struct_checksum (buf, FTL_CKPT_HDR_BYTES, 16, 8))
    return FTL_FMT_BAD_CHECKSUM;
  if (h.version == 0)
    return FTL_FMT_BAD_FIELD;
  h.generation = get64le (buf + 24);
  h.seq = get64le (buf + 32);
  h.body_bytes = get64le (buf + 40);
  h.body_checksum = get64le (buf + 48);
  h.logical_pages = get64le (buf + 56);
  h.blocks = get32le (buf + 64);
  h.pages_per_block = get32le (buf + 68);
  h.clean = get32le (buf + 72) & 0xff;
  h.paged = get32le (buf + 72) >> 8 & 1;
  if (get32le (buf + 72) >> 9 || (h.paged && h.version < 6))
    return FTL_FMT_BAD_FIELD;
  for (int i = 0; i < FTL_CKPT_NCOUNTERS; i++)
    h.counters[i] = get64le (buf + 80 + 8 * i);
  h.pe_offset = get32le (buf + 76);
  h.clock_skew = (int64_t) get64le (buf + 248);
  /* Bound the page count first: the map's length must not wrap around
   * to a body length that only looks right.
   */
  if (h.clean > 1 || h.logical_pages >= FTL_PAGES_LIMIT ||
      h.body_bytes != fmt_ckpt_hbody_bytes (&h))
    return FTL_FMT_BAD_FIELD;
  *out = h;
  return FTL_FMT_OK;
}

uint64_t
fmt_ckpt_body_bytes (uint64_t logical_pages, uint32_t blocks)
{
  return fmt_ckpt_block_offset (logical_pages, blocks);
}

uint64_t
fmt_ckpt_block_offset (uint64_t logical_pages, uint32_t b)
{
  return FTL_CKPT_MAP_ENTRY_BYTES * logical_pages
    + (uint64_t) FTL_CKPT_BLOCK_BYTES * b;
}

uint64_t
fmt_map_groups (uint64_t logical_pages)
{
  return (logical_pages + FTL_TP_ENTRIES - 1) >> FTL_TP_SHIFT;
}

uint64_t
fmt_ckpt_podir_offset (uint64_t logical_pages)
{
  return FTL_CKPT_DIR_BYTES * fmt_map_groups (logical_pages);
}

uint64_t
fmt_ckpt_pblock_offset (uint64_t logical_pages, uint32_t b)
{
  return 2 * FTL_CKPT_DIR_BYTES * fmt_map_groups (logical_pages)
    + (uint64_t) FTL_CKPT_BLOCK_BYTES * b;
}

uint64_t
fmt_ckpt_pvalid_offset (uint64_t logical_pages, uint32_t blocks, uint32_t b)
{
  return fmt_ckpt_pblock_offset (logical_pages, blocks) + 4 * (uint64_t) b;
}

uint64_t
fmt_ckpt_pmapped_offset (uint64_t logical_pages, uint32_t blocks)
{
  return fmt_ckpt_pvalid_offset (logical_pages, blocks, blocks);
}

uint64_t
fmt_ckpt_pbody_bytes (uint64_t logical_pages, uint32_t blocks)
{
  return fmt_ckpt_pmapped_offset (logical_pages, blocks) + 16;
}

uint64_t
fmt_ckpt_hbody_bytes (const struct ftl_ckpt_header *h)
{
  return h->paged ? fmt_ckpt_pbody_bytes (h->logical_pages, h->blocks)
    : fmt_ckpt_body_bytes (h->logical_pages, h->blocks);
}

void
fmt_ckpt_dir_encode (uint32_t ppn, uint64_t version, uint8_t *buf)
{
  put32le (buf, ~ppn);
  put64le (buf + 4, version);
}

void
fmt_ckpt_dir_decode (const uint8_t *buf, uint32_t *ppn, uint64_t *version)
{
  *ppn = ~get32le (buf);
  *version = get64le (buf + 4);
}

void
fmt_ckpt_map_encode (uint32_t ppn, uint8_t *buf)
{
  put32le (buf, ~ppn);
}

uint32_t
fmt_ckpt_map_decode (const uint8_t *buf, uint32_t version)
{
  return version >= 5 ? ~get32le (buf) : get32le (buf);
}

void
fmt_ckpt_block_encode (const struct ftl_ckpt_block *b, uint8_t *buf)
{
  put32le (buf, b->erase_count);
  put32le (buf + 4, b->write_pointer);
  put32le (buf + 8, (b->state & 0x7f) | (b->slc ? FTL_CKPT_BLK_SLC : 0) |
           (b->program_hour << 8));
}

void
fmt_ckpt_block_decode (const uint8_t *buf, struct ftl_ckpt_block *out)
{
  out->erase_count = get32le (buf);
  out->write_pointer = get32le (buf + 4);
  out->state = get32le (buf + 8) & 0x7f;
  out->slc = (get32le (buf + 8) & FTL_CKPT_BLK_SLC) != 0;
  out->program_hour = get32le (buf + 8) >> 8;
}

/* ---- the checkpoint validity rule (format.h) ---- */

bool
fmt_ckpt_header_check (const struct ftl_ckpt_header *h,
                       const struct ftl_superblock *sb, char *why,
                       size_t whylen)
{
  uint64_t lpages = DIV_ROUND_UP (sb->logical_bytes, sb->page_size);

  if (h->logical_pages == lpages && h->blocks == sb->blocks &&
      h->pages_per_block == sb->pages_per_block &&
      FTL_CKPT_HDR_BYTES + h->body_bytes <= sb->ckpt_bytes)
    return true;
  if (why)
    snprintf (why, whylen, "written for another geometry (%" PRIu64
              " logical pages, %u erase blocks of %u pages)",
              h->logical_pages, h->blocks, h->pages_per_block);
  return false;
}

bool
fmt_ckpt_body_check (const struct ftl_ckpt_header *h, const uint8_t *body)
{
  return fmt_checksum (body, h->body_bytes, 0) == h->body_checksum;
}

bool
fmt_ckpt_map_check (const struct ftl_ckpt_header *h, uint32_t ppn)
{
  return ppn == FTL_UNMAPPED || (ppn == FTL_LOST && h->version >= 5)
    || ppn < (uint64_t) h->blocks * h->pages_per_block;
}

bool
fmt_ckpt_block_check (const struct ftl_ckpt_block *b,
                      uint32_t pages_per_block, char *why, size_t whylen)
{
  if (b->state > FTL_BLK_RETIRED) {
    if (why)
      snprintf (why, whylen, "has an unknown state %u", b->state);
    return false;
  }
  if (b->write_pointer > pages_per_block) {
    if (why)
      snprintf (why, whylen, "has %u pages written, more than its %u",
                b->write_pointer, pages_per_block);
    return false;
  }
  if ((b->state == FTL_BLK_FREE || b->state == FTL_BLK_RETIRED) &&
      b->write_pointer != 0) {
    if (why)
      snprintf (why, whylen, "is %s but has %u pages written",
                b->state == FTL_BLK_FREE ? "free" : "retired",
                b->write_pointer);
    return false;
  }
  if ((b->state == FTL_BLK_FREE || b->state == FTL_BLK_RETIRED) &&
      b->program_hour != 0) {
    if (why)
      snprintf (why, whylen, "is %s but has a program time",
                b->state == FTL_BLK_FREE ? "free" : "retired");
    return false;
  }
  if ((b->state == FTL_BLK_FREE || b->state == FTL_BLK_RETIRED) && b->slc) {
    if (why)
      snprintf (why, whylen, "is %s but in SLC mode",
                b->state == FTL_BLK_FREE ? "free" : "retired");
    return false;
  }
  return true;
}

/* ---- block header ---- */

void
fmt_blkhdr_encode (const struct ftl_block_header *h, uint8_t *buf)
{
  memset (buf, 0, FTL_BLKHDR_BYTES);
  put32le (buf, FTL_BLKHDR_MAGIC);
  put16le (buf + 4, FTL_FORMAT_VERSION);
  put32le (buf + 8, h->erase_count);
  put64le (buf + 16, h->erase_seq);
  put64le (buf + 24, fmt_checksum (buf, 24, 0));
}

enum ftl_fmt_status
fmt_blkhdr_decode (const uint8_t *buf, size_t len,
                   struct ftl_block_header *out)
{
  uint16_t version;

  if (len < FTL_BLKHDR_BYTES)
    return FTL_FMT_BAD_LENGTH;
  if (all_zero (buf, FTL_BLKHDR_BYTES))
    return FTL_FMT_EMPTY;
  if (get32le (buf) != FTL_BLKHDR_MAGIC)
    return FTL_FMT_BAD_MAGIC;
  version = get16le (buf + 4);
  if (version > FTL_FORMAT_VERSION)
    return FTL_FMT_BAD_VERSION;
  if (get64le (buf + 24) != fmt_checksum (buf, 24, 0))
    return FTL_FMT_BAD_CHECKSUM;
  if (version == 0)
    return FTL_FMT_BAD_FIELD;
  out->erase_count = get32le (buf + 8);
  out->erase_seq = get64le (buf + 16);
  return FTL_FMT_OK;
}

/* ---- OOB entries ---- */

void
fmt_oob_encode (const struct ftl_oob *o, uint8_t *buf)
{
  put16le (buf, FTL_OOB_MAGIC);
  buf[2] = o->kind | (o->slc ? FTL_OOB_SLC : 0);
  buf[3] = FTL_FORMAT_VERSION;
  /* One field on the media: a data page's LPN, a trim page's count. */
  put32le (buf + 4, o->kind == FTL_OOB_TRIM ? o->trim_entries : o->lpn);
  put64le (buf + 8, o->seq);
  put32le (buf + 16, o->erase_count);
  put32le (buf + 20, 0);
  put64le (buf + 24, o->data_checksum);
  put32le (buf + 20, (uint32_t) fmt_checksum (buf, FTL_OOB_BYTES, 0));
}

enum ftl_fmt_status
fmt_oob_decode (const uint8_t *buf, size_t len, struct ftl_oob *out)
{
  uint8_t tmp[FTL_OOB_BYTES];

  if (len < FTL_OOB_BYTES)
    return FTL_FMT_BAD_LENGTH;
  if (all_zero (buf, FTL_OOB_BYTES))
    return FTL_FMT_EMPTY;
  if (get16le (buf) != FTL_OOB_MAGIC)
    return FTL_FMT_BAD_MAGIC;
  if (buf[3] > FTL_FORMAT_VERSION)
    return FTL_FMT_BAD_VERSION;
  memcpy (tmp, buf, FTL_OOB_BYTES);
  put32le (tmp + 20, 0);
  if (get32le (buf + 20) != (uint32_t) fmt_checksum (tmp, FTL_OOB_BYTES, 0))
    return FTL_FMT_BAD_CHECKSUM;
  /* The SLC flag exists from version 3 on. */
  uint8_t kind = buf[2] & ~FTL_OOB_SLC;
  bool slc = (buf[2] & FTL_OOB_SLC) != 0;
  if (buf[3] == 0 || (slc && buf[3] < 3) ||
      (kind != FTL_OOB_DATA && kind != FTL_OOB_TRIM &&
       kind != FTL_OOB_POISON && kind != FTL_OOB_MAP) ||
      (kind == FTL_OOB_MAP && buf[3] < 6))
    return FTL_FMT_BAD_FIELD;
  out->kind = kind;
  out->slc = slc;
  out->lpn = out->trim_entries = 0;
  if (out->kind == FTL_OOB_TRIM)
    out->trim_entries = get32le (buf + 4);
  else
    out->lpn = get32le (buf + 4);
  out->seq = get64le (buf + 8);
  out->erase_count = get32le (buf + 16);
  out->data_checksum = get64le (buf + 24);
  return FTL_FMT_OK;
}

/* ---- trim record pages ---- */

uint32_t
fmt_trim_page_capacity (uint32_t page_size)
{
  return (page_size - FTL_TRIM_HDR_BYTES) / FTL_TRIM_ENTRY_BYTES;
}

void
fmt_trim_page_encode (const struct ftl_trim_entry *e, uint32_t count,
                      uint8_t *page, uint32_t page_size)
{
  assert (count <= fmt_trim_page_capacity (page_size));
  memset (page, 0, page_size);
  put32le (page, count);
  put16le (page + 4, FTL_TRIM_MAGIC);
  put16le (page + 6, FTL_FORMAT_VERSION);
  for (uint32_t i = 0; i < count; i++) {
    uint8_t *p = page + FTL_TRIM_HDR_BYTES + i * FTL_TRIM_ENTRY_BYTES;
    put32le (p, e[i].lpn);
    put32le (p + 4, e[i].count);
    put64le (p + 8, e[i].seq);
  }
  put64le (page + 8, fmt_checksum (page + FTL_TRIM_HDR_BYTES,
                                 (size_t) count * FTL_TRIM_ENTRY_BYTES,
                                 get64le (page)));
}

enum ftl_fmt_status
fmt_trim_page_decode (const uint8_t *page, uint32_t page_size,
                      struct ftl_trim_entry *out, uint32_t *countp)
{
  uint32_t count = get32le (page);
  uint16_t version = get16le (page + 6);

  if (all_zero (page, FTL_TRIM_HDR_BYTES))
    return FTL_FMT_EMPTY;
  if (get16le (page + 4) != FTL_TRIM_MAGIC)
    return FTL_FMT_BAD_MAGIC;
  if (version > FTL_FORMAT_VERSION)
    return FTL_FMT_BAD_VERSION;
  if (count == 0 || count > fmt_trim_page_capacity (page_size))
    return FTL_FMT_BAD_LENGTH;
  if (get64le (page + 8) !=
      fmt_checksum (page + FTL_TRIM_HDR_BYTES,
                    (size_t) count * FTL_TRIM_ENTRY_BYTES, get64le (page)))
    return FTL_FMT_BAD_CHECKSUM;
  if (version == 0)
    return FTL_FMT_BAD_FIELD;
  /* Validate every entry before writing any to out. */
  for (uint32_t i = 0; i < count; i++)
    if (get32le (page + FTL_TRIM_HDR_BYTES + i * FTL_TRIM_ENTRY_BYTES + 4) == 0)
      return FTL_FMT_BAD_FIELD;
  for (uint32_t i = 0; i < count; i++) {
    const uint8_t *p = page + FTL_TRIM_HDR_BYTES + i * FTL_TRIM_ENTRY_BYTES;
    out[i].lpn = get32le (p);
    out[i].count = get32le (p + 4);
    out[i].seq = get64le (p + 8);
  }
  *countp = count;
  return FTL_FMT_OK;
}
