/* nbdkit-ftl: unit tests of format.c, the on-media structures.
 *
 * For every structure: an encode/decode round trip keeps every field;
 * the encoder writes exactly the encoded length; the decoder rejects
 * all zeros, every single flipped byte, a wrong magic, a newer version
 * (even with a valid checksum), a bad length and out-of-range fields,
 * and leaves its output untouched when it rejects.  Also the derived
 * geometry (fmt_meta_pages, fmt_ckpt_bytes) for a few geometries.
 */

#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "util/util.h"

/* Flip masks tried at every byte position. */
static const uint8_t masks[] = { 0x01, 0x10, 0x80, 0xff };
#define NMASKS (sizeof masks / sizeof masks[0])

/* ---- superblock ---- */

/* A self-consistent superblock: 4 KiB pages, 256 pages per block,
 * 64 MiB, 82 erase blocks (28% over-provisioning).
 */
static struct ftl_superblock
good_sb (void)
{
  struct ftl_superblock sb = {
    .version = FTL_FORMAT_VERSION,
    .generation = 0x0102030405060708ULL,
    .page_size = 4096,
    .pages_per_block = 256,
    .blocks = 82,
    .logical_bytes = 64 << 20,
    .state = FTL_SB_CLEAN,
    .op_ppm = 280000,
    .clean_ckpt_gen = 0x1122334455667788ULL,
    .uuid = { 0xdeadbeefcafef00dULL, 0x0123456789abcdefULL },
    .created = 1700000000,
  };
  sb.meta_pages = fmt_meta_pages (sb.page_size, sb.pages_per_block);
  sb.ckpt_bytes = fmt_ckpt_bytes (sb.page_size,
                                  sb.logical_bytes / sb.page_size, sb.blocks);
  sb.ckpt_offset[0] = 2 * FTL_SB_SLOT;
  sb.ckpt_offset[1] = sb.ckpt_offset[0] + sb.ckpt_bytes;
  fmt_place_regions (&sb);
  return sb;
}

/* The same in the interleaved layout of images from before version 4
 * (meta_offset 0).
 */
static struct ftl_superblock
good_sb_interleaved (uint32_t version)
{
  struct ftl_superblock sb = good_sb ();
  sb.version = version;
  sb.meta_offset = 0;
  sb.data_offset = sb.ckpt_offset[1] + sb.ckpt_bytes;
  return sb;
}

static void
assert_sb_eq (const struct ftl_superblock *a, const struct ftl_superblock *b)
{
  ck_assert_uint_eq (a->version, b->version);
  ck_assert_uint_eq (a->generation, b->generation);
  ck_assert_uint_eq (a->page_size, b->page_size);
  ck_assert_uint_eq (a->pages_per_block, b->pages_per_block);
  ck_assert_uint_eq (a->blocks, b->blocks);
  ck_assert_uint_eq (a->meta_pages, b->meta_pages);
  ck_assert_uint_eq (a->logical_bytes, b->logical_bytes);
  ck_assert_uint_eq (a->meta_offset, b->meta_offset);
  ck_assert_uint_eq (a->data_offset, b->data_offset);
  ck_assert_uint_eq (a->ckpt_offset[0], b->ckpt_offset[0]);
  ck_assert_uint_eq (a->ckpt_offset[1], b->ckpt_offset[1]);
  ck_assert_uint_eq (a->ckpt_bytes, b->ckpt_bytes);
  ck_assert_uint_eq (a->state, b->state);
  ck_assert_uint_eq (a->op_ppm, b->op_ppm);
  ck_assert_uint_eq (a->clean_ckpt_gen, b->clean_ckpt_gen);
  ck_assert_uint_eq (a->uuid[0], b->uuid[0]);
  ck_assert_uint_eq (a->uuid[1], b->uuid[1]);
  ck_assert_uint_eq (a->created, b->created);
  ck_assert_uint_eq (a->flags, b->flags);
  ck_assert_uint_eq (a->pinned_ckpt_gen, b->pinned_ckpt_gen);
}

/* Decode, checking that a rejected buffer leaves *out untouched. */
static enum ftl_fmt_status
sb_decode_checked (const uint8_t *buf, size_t len, struct ftl_superblock *out,
                   char *why, size_t whylen)
{
  struct ftl_superblock sentinel, tmp;
  enum ftl_fmt_status s;

  memset (&sentinel, 0x5a, sizeof sentinel);
  memcpy (&tmp, &sentinel, sizeof tmp);
  s = fmt_sb_decode (buf, len, &tmp, why, whylen);
  if (s != FTL_FMT_OK)
    ck_assert_msg (memcmp (&tmp, &sentinel, sizeof tmp) == 0,
                   "fmt_sb_decode wrote its output while returning %d", s);
  else if (out)
    *out = tmp;
  return s;
}

/* Every field survives encode and decode, whether the decoder is given
 * the encoded length or the whole superblock slot; the encoder writes
 * exactly FTL_SB_BYTES bytes.
 */
START_TEST (test_sb_round_trip)
{
  uint8_t buf[FTL_SB_SLOT];
  struct ftl_superblock sb = good_sb (), out;
  char why[128];

  memset (buf, 0xa5, sizeof buf);
  fmt_sb_encode (&sb, buf);
  for (size_t i = FTL_SB_BYTES; i < sizeof buf; i++)
    ck_assert_msg (buf[i] == 0xa5, "encoder wrote byte %zu", i);
  ck_assert_mem_eq (buf, FTL_SB_MAGIC, 8);

  memset (buf + FTL_SB_BYTES, 0, sizeof buf - FTL_SB_BYTES);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, &out, why,
                                       sizeof why), FTL_FMT_OK);
  assert_sb_eq (&sb, &out);
  ck_assert_int_eq (sb_decode_checked (buf, sizeof buf, &out, NULL, 0),
                    FTL_FMT_OK);
  assert_sb_eq (&sb, &out);

  /* A dirty superblock with other values round-trips too. */
  sb.state = FTL_SB_DIRTY;
  sb.generation = 1;
  sb.clean_ckpt_gen = 0;
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, &out, NULL, 0),
                    FTL_FMT_OK);
  assert_sb_eq (&sb, &out);
}
END_TEST

/* The regions of a new image (format.h): the metadata region right
 * after the checkpoint slots, the data region at the next multiple of
 * fmt_data_align after it, and the file's size.
 */
START_TEST (test_sb_regions)
{
  struct ftl_superblock sb = good_sb ();
  uint64_t meta_bytes = (uint64_t) sb.meta_pages * sb.page_size;

  ck_assert_uint_eq (sb.meta_offset, sb.ckpt_offset[1] + sb.ckpt_bytes);
  uint64_t align = fmt_data_align (sb.page_size, sb.pages_per_block);

  ck_assert_uint_eq (align, (uint64_t) sb.pages_per_block * sb.page_size);
  ck_assert_uint_eq (fmt_data_align (4096, 1024), FTL_DATA_ALIGN);
  ck_assert_uint_eq (fmt_data_align (512, 8), 4096);
  ck_assert_uint_eq (sb.data_offset % align, 0);
  ck_assert_uint_ge (sb.data_offset, sb.meta_offset + sb.blocks * meta_bytes);
  ck_assert_uint_lt (sb.data_offset,
                     sb.meta_offset + sb.blocks * meta_bytes + align);
  ck_assert_uint_eq (fmt_image_bytes (&sb), sb.data_offset
                     + (uint64_t) sb.blocks * sb.pages_per_block
                     * sb.page_size);

  sb = good_sb_interleaved (3);
  ck_assert_uint_eq (fmt_image_bytes (&sb), sb.data_offset
                     + (uint64_t) sb.blocks * (sb.meta_pages
                                               + sb.pages_per_block)
                     * sb.page_size);
}
END_TEST

/* Older versions: a version 3 superblock is FTL_SB_BYTES_V1 bytes and
 * decodes with meta_offset 0; a version 4 one (FTL_SB_BYTES_V4 bytes)
 * may say meta_offset 0 too (an image upgraded from version 3), and so
 * may a version 5 one (FTL_SB_BYTES).  No length is accepted for
 * another version.
 */
START_TEST (test_sb_older_versions)
{
  uint8_t buf[FTL_SB_SLOT];
  struct ftl_superblock out;

  for (uint32_t v = 1; v <= FTL_FORMAT_VERSION; v++) {
    struct ftl_superblock sb = good_sb_interleaved (v);
    uint32_t len = v < 4 ? FTL_SB_BYTES_V1 : v == 4 ? FTL_SB_BYTES_V4
      : FTL_SB_BYTES;
    uint32_t other = v < 4 ? FTL_SB_BYTES : FTL_SB_BYTES_V1;

    memset (buf, 0xa5, sizeof buf);
    fmt_sb_encode (&sb, buf);
    ck_assert_uint_eq (get32le (buf + 12), len);
    memset (buf + len, 0, sizeof buf - len);
    ck_assert_int_eq (sb_decode_checked (buf, len, &out, NULL, 0),
                      FTL_FMT_OK);
    assert_sb_eq (&sb, &out);
    ck_assert_int_eq (sb_decode_checked (buf, len - 1, NULL, NULL, 0),
                      FTL_FMT_BAD_LENGTH);

    /* The other version's length, resealed: refused. */
    ck_assert_uint_eq (fmt_sb_bytes (v), len);
    put32le (buf + 12, other);
    put64le (buf + 16, 0);
    put64le (buf + 16, fmt_checksum (buf, other, 0));
    ck_assert_int_eq (sb_decode_checked (buf, sizeof buf, NULL, NULL, 0),
                      FTL_FMT_BAD_LENGTH);
  }

  /* A version 4 image whose regions are split decodes as such. */
  struct ftl_superblock sb = good_sb ();
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, &out, NULL, 0),
                    FTL_FMT_OK);
  ck_assert_uint_ne (out.meta_offset, 0);
  assert_sb_eq (&sb, &out);
}
END_TEST

/* The mark of a sync=false session (version 5): FTL_SB_UNSYNCED with
 * the generation of the checkpoint it pinned, on a superblock in use
 * (dirty).  Refused: the flag on a clean superblock or without a pinned
 * checkpoint, a pinned checkpoint without the flag, flags this program
 * does not know (a newer program's: refused, never ignored).
 */
START_TEST (test_sb_unsynced_mark)
{
  uint8_t buf[FTL_SB_SLOT];
  struct ftl_superblock sb = good_sb (), out;
  char why[128];
  static const struct { uint32_t state, flags; uint64_t pinned; } bad[] = {
    { FTL_SB_CLEAN, FTL_SB_UNSYNCED, 7 },
    { FTL_SB_DIRTY, FTL_SB_UNSYNCED, 0 },
    { FTL_SB_DIRTY, 0, 7 },
    { FTL_SB_DIRTY, 0x8, 0 },
    { FTL_SB_DIRTY, FTL_SB_UNSYNCED | 0x80000000u, 7 },
  };

  sb.state = FTL_SB_DIRTY;
  sb.flags = FTL_SB_UNSYNCED;
  sb.pinned_ckpt_gen = 0x0a0b0c0d0e0f1011ULL;
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, &out, NULL, 0),
                    FTL_FMT_OK);
  assert_sb_eq (&sb, &out);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    sb.state = bad[i].state;
    sb.flags = bad[i].flags;
    sb.pinned_ckpt_gen = bad[i].pinned;
    fmt_sb_encode (&sb, buf);
    ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, NULL, why,
                                         sizeof why), FTL_FMT_BAD_FIELD);
    ck_assert_msg (strstr (why, "flag") != NULL, "case %zu: %s", i, why);
  }
  /* The LPN seed flag (version 7) decodes, but not in a version 6
   * superblock (nor the paged map's in a version 5 one).
   */
  sb.state = FTL_SB_CLEAN;
  sb.pinned_ckpt_gen = 0;
  sb.flags = FTL_SB_LPN_SEED;
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, &out, NULL, 0),
                    FTL_FMT_OK);
  ck_assert_uint_eq (out.flags, FTL_SB_LPN_SEED);
  sb.version = 6;
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, NULL, why,
                                       sizeof why), FTL_FMT_BAD_FIELD);
  ck_assert_msg (strstr (why, "LPN-seeded") != NULL, "%s", why);
  sb.version = FTL_FORMAT_VERSION;
  sb.flags = 0;
  /* The 4 bytes after the flags are reserved: zeros. */
  sb.state = FTL_SB_DIRTY;
  sb.flags = FTL_SB_UNSYNCED;
  sb.pinned_ckpt_gen = 7;
  fmt_sb_encode (&sb, buf);
  buf[142] = 4;
  put64le (buf + 16, 0);
  put64le (buf + 16, fmt_checksum (buf, FTL_SB_BYTES, 0));
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, NULL, why,
                                       sizeof why), FTL_FMT_BAD_FIELD);
  ck_assert_msg (strstr (why, "reserved") != NULL, "%s", why);
  /* A version 4 superblock has no flags: its bytes there are not read. */
  sb = good_sb_interleaved (4);
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES_V4, &out, NULL, 0),
                    FTL_FMT_OK);
  ck_assert_uint_eq (out.flags, 0);
  ck_assert_uint_eq (out.pinned_ckpt_gen, 0);
}
END_TEST

/* All zeros is "never written", whatever the length given; fewer than
 * the header's bytes, or fewer than the encoded length, is a bad length.
 */
START_TEST (test_sb_empty_and_short)
{
  uint8_t buf[FTL_SB_SLOT] = { 0 };
  struct ftl_superblock sb = good_sb ();

  ck_assert_int_eq (sb_decode_checked (buf, sizeof buf, NULL, NULL, 0),
                    FTL_FMT_EMPTY);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES, NULL, NULL, 0),
                    FTL_FMT_EMPTY);
  ck_assert_int_eq (sb_decode_checked (buf, 10, NULL, NULL, 0),
                    FTL_FMT_BAD_LENGTH);

  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, FTL_SB_BYTES - 1, NULL, NULL, 0),
                    FTL_FMT_BAD_LENGTH);
  ck_assert_int_eq (sb_decode_checked (buf, 23, NULL, NULL, 0),
                    FTL_FMT_BAD_LENGTH);
}
END_TEST

/* Every single flipped byte of an encoded superblock is rejected. */
START_TEST (test_sb_flipped_bytes)
{
  uint8_t good[FTL_SB_BYTES], buf[FTL_SB_BYTES];
  struct ftl_superblock sb = good_sb ();
  unsigned tried = 0;

  fmt_sb_encode (&sb, good);
  for (size_t i = 0; i < FTL_SB_BYTES; i++)
    for (size_t m = 0; m < NMASKS; m++) {
      memcpy (buf, good, sizeof buf);
      buf[i] ^= masks[m];
      ck_assert_msg (sb_decode_checked (buf, sizeof buf, NULL, NULL, 0)
                     != FTL_FMT_OK,
                     "superblock with byte %zu ^ 0x%02x accepted", i,
                     masks[m]);
      tried++;
    }
  ck_assert_uint_eq (tried, FTL_SB_BYTES * NMASKS);
}
END_TEST

/* Wrong magic, newer or zero version, wrong length field. */
START_TEST (test_sb_magic_version_length)
{
  uint8_t buf[FTL_SB_BYTES];
  struct ftl_superblock sb = good_sb ();
  char why[128];

  fmt_sb_encode (&sb, buf);
  buf[3] ^= 0x20;
  ck_assert_int_eq (sb_decode_checked (buf, sizeof buf, NULL, NULL, 0),
                    FTL_FMT_BAD_MAGIC);

  /* Newer: the checksum is valid (the encoder computes it). */
  sb.version = FTL_FORMAT_VERSION + 1;
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, sizeof buf, NULL, why,
                                       sizeof why), FTL_FMT_BAD_VERSION);
  ck_assert_msg (strstr (why, "version") != NULL, "why: '%s'", why);
  /* Version 0 is not newer: no writer writes it.  With a valid
   * checksum it is a field out of range; a write torn after the magic
   * leaves a bad length, never "an unsupported version".
   */
  sb.version = 0;
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (sb_decode_checked (buf, sizeof buf, NULL, why,
                                       sizeof why), FTL_FMT_BAD_FIELD);
  ck_assert_str_eq (why, "format version 0");
  sb = good_sb ();
  fmt_sb_encode (&sb, buf);
  for (size_t cut = 8; cut < FTL_SB_BYTES; cut++) {
    uint8_t torn[FTL_SB_SLOT] = { 0 };
    memcpy (torn, buf, cut);
    if (memcmp (torn, buf, FTL_SB_BYTES) == 0)
      continue;                 /* the rest was zeros: not torn */
    enum ftl_fmt_status st = sb_decode_checked (torn, sizeof torn, NULL,
                                                NULL, 0);
    ck_assert_msg (st == FTL_FMT_BAD_LENGTH || st == FTL_FMT_BAD_CHECKSUM,
                   "superblock torn after %zu bytes: %s", cut,
                   fmt_status_string (st));
  }

  /* The length field (bytes 12..15), with and without a recomputed
   * checksum: the length is checked before the checksum.
   */
  sb = good_sb ();
  for (uint32_t len = FTL_SB_BYTES - 8; len <= FTL_SB_BYTES + 8; len += 4) {
    if (len == FTL_SB_BYTES)
      continue;
    fmt_sb_encode (&sb, buf);
    put32le (buf + 12, len);
    ck_assert_int_eq (sb_decode_checked (buf, sizeof buf, NULL, NULL, 0),
                      FTL_FMT_BAD_LENGTH);
  }
}
END_TEST

/* One inconsistent superblock: a mutation, and what "why" must say. */
struct sb_case {
  const char *what;
  void (*mutate) (struct ftl_superblock *);
  const char *why;
};

static void m_ps_not_pow2 (struct ftl_superblock *s) { s->page_size = 4000; }
static void m_ps_small (struct ftl_superblock *s) { s->page_size = 256; }
static void m_ps_large (struct ftl_superblock *s) { s->page_size = 131072; }
static void m_ppb_not_pow2 (struct ftl_superblock *s) { s->pages_per_block = 100; }
static void m_ppb_small (struct ftl_superblock *s) { s->pages_per_block = 4; }
static void m_ppb_large (struct ftl_superblock *s) { s->pages_per_block = 131072; }
static void m_meta (struct ftl_superblock *s) { s->meta_pages++; }
static void m_lbytes_zero (struct ftl_superblock *s) { s->logical_bytes = 0; }
static void m_lbytes_odd (struct ftl_superblock *s) { s->logical_bytes += 100; }
static void m_blocks_few (struct ftl_superblock *s) { s->blocks = 3; }
static void m_no_spare (struct ftl_superblock *s)
{
  s->blocks = s->logical_bytes / s->page_size / s->pages_per_block;
}
static void m_blocks_huge (struct ftl_superblock *s)
{
  s->blocks = UINT32_MAX / s->pages_per_block + 1;
}
static void m_ckpt_bytes (struct ftl_superblock *s)
{
  s->ckpt_bytes += s->page_size;
  s->ckpt_offset[1] = s->ckpt_offset[0] + s->ckpt_bytes;
  fmt_place_regions (s);
}
static void m_ckpt0_over_sb (struct ftl_superblock *s)
{
  s->ckpt_offset[0] = FTL_SB_SLOT;
  s->ckpt_offset[1] = s->ckpt_offset[0] + s->ckpt_bytes;
  fmt_place_regions (s);
}
static void m_ckpt0_unaligned (struct ftl_superblock *s)
{
  s->ckpt_offset[0] += 512;
  s->ckpt_offset[1] = s->ckpt_offset[0] + s->ckpt_bytes;
  fmt_place_regions (s);
}
static void m_ckpt1 (struct ftl_superblock *s) { s->ckpt_offset[1] -= s->page_size; }
static void m_data (struct ftl_superblock *s) { s->data_offset += s->page_size; }
static void m_data_early (struct ftl_superblock *s)
{
  /* Over the metadata region. */
  s->data_offset -= fmt_data_align (s->page_size, s->pages_per_block);
}
static void m_meta_offset (struct ftl_superblock *s)
{
  s->meta_offset += s->page_size;
}
static void m_interleaved_data (struct ftl_superblock *s)
{
  *s = good_sb_interleaved (FTL_FORMAT_VERSION);
  s->data_offset += s->page_size;
}
static void m_state (struct ftl_superblock *s) { s->state = 2; }

static const struct sb_case sb_cases[] = {
  { "page size not a power of 2", m_ps_not_pow2, "page size" },
  { "page size too small", m_ps_small, "page size" },
  { "page size too large", m_ps_large, "page size" },
  { "pages per block not a power of 2", m_ppb_not_pow2, "pages per block" },
  { "pages per block too small", m_ppb_small, "pages per block" },
  { "pages per block too large", m_ppb_large, "pages per block" },
  { "metadata pages", m_meta, "metadata pages" },
  { "logical size 0", m_lbytes_zero, "logical size" },
  { "logical size not a multiple of 512", m_lbytes_odd, "logical size" },
  { "too few blocks", m_blocks_few, "block count" },
  { "no spare blocks", m_no_spare, "spare" },
  { "more than 2^32 physical pages", m_blocks_huge, "block count" },
  { "checkpoint size", m_ckpt_bytes, "checkpoint size" },
  { "checkpoint slot over the superblocks", m_ckpt0_over_sb, "offsets" },
  { "checkpoint slot not page aligned", m_ckpt0_unaligned, "offsets" },
  { "second checkpoint slot", m_ckpt1, "offsets" },
  { "data offset", m_data, "offsets" },
  { "data region over the metadata region", m_data_early, "offsets" },
  { "metadata offset", m_meta_offset, "offsets" },
  { "data offset, interleaved", m_interleaved_data, "offsets" },
  { "state", m_state, "state" },
};

/* Geometry inconsistencies are rejected as bad fields even though the
 * checksum is valid, and "why" names the field.
 */
START_TEST (test_sb_geometry)
{
  uint8_t buf[FTL_SB_BYTES];
  char why[128];

  for (size_t i = 0; i < sizeof sb_cases / sizeof sb_cases[0]; i++) {
    struct ftl_superblock sb = good_sb ();
    sb_cases[i].mutate (&sb);
    fmt_sb_encode (&sb, buf);
    ck_assert_msg (sb_decode_checked (buf, sizeof buf, NULL, why, sizeof why)
                   == FTL_FMT_BAD_FIELD, "%s: accepted", sb_cases[i].what);
    ck_assert_msg (strstr (why, sb_cases[i].why) != NULL,
                   "%s: why is '%s', expected it to mention '%s'",
                   sb_cases[i].what, why, sb_cases[i].why);
  }
}
END_TEST

/* The regions must not overlap: checkpoint slot offsets chosen so that
 * the 64 bit sums wrap around pass the "ckpt_offset[1] == ckpt_offset[0]
 * + ckpt_bytes" checks arithmetically, but put a checkpoint slot or the
 * data area at offset 0, over the superblocks.  (Such a superblock, with
 * a valid checksum, once made ftl_open abort in an assertion of
 * media_pread_raw.)
 */
START_TEST (test_sb_rejects_wrapped_offsets)
{
  uint8_t buf[FTL_SB_BYTES];
  struct ftl_superblock sb = good_sb ();

  /* Slot 0 at 2^64 - ckpt_bytes: slot 1 wraps to 0, the data follows. */
  sb = good_sb_interleaved (FTL_FORMAT_VERSION);
  sb.ckpt_offset[0] = 0 - sb.ckpt_bytes;
  sb.ckpt_offset[1] = 0;
  sb.data_offset = sb.ckpt_bytes;
  fmt_sb_encode (&sb, buf);
  ck_assert_msg (sb_decode_checked (buf, sizeof buf, NULL, NULL, 0)
                 != FTL_FMT_OK,
                 "a checkpoint slot at offset 2^64-%" PRIu64 " and one at 0 "
                 "are accepted", sb.ckpt_bytes);

  /* Both slots at the top of the range: the data area wraps to 0. */
  sb = good_sb_interleaved (FTL_FORMAT_VERSION);
  sb.ckpt_offset[0] = 0 - 2 * sb.ckpt_bytes;
  sb.ckpt_offset[1] = 0 - sb.ckpt_bytes;
  sb.data_offset = 0;
  fmt_sb_encode (&sb, buf);
  ck_assert_msg (sb_decode_checked (buf, sizeof buf, NULL, NULL, 0)
                 != FTL_FMT_OK,
                 "erase block 0 at file offset 0 (over the superblocks) is "
                 "accepted");

  /* Split: the metadata region at the top, the data region wraps. */
  sb = good_sb ();
  sb.ckpt_offset[0] = 0 - 2 * sb.ckpt_bytes - 4096;
  sb.ckpt_offset[1] = sb.ckpt_offset[0] + sb.ckpt_bytes;
  fmt_place_regions (&sb);
  fmt_sb_encode (&sb, buf);
  ck_assert_msg (sb_decode_checked (buf, sizeof buf, NULL, NULL, 0)
                 != FTL_FMT_OK,
                 "a data region at %" PRIu64 " (wrapped) is accepted",
                 sb.data_offset);
}
END_TEST

/* ---- checkpoint header ---- */

static struct ftl_ckpt_header
good_ckpt_header (void)
{
  struct ftl_ckpt_header h = {
    .version = FTL_FORMAT_VERSION,
    .generation = 0x1000000000000001ULL,
    .seq = 0x2000000000000002ULL,
    .logical_pages = 16384,
    .blocks = 82,
    .pages_per_block = 256,
    .clean = 1,
    .body_checksum = 0x3000000000000003ULL,
  };
  h.body_bytes = 4 * h.logical_pages
    + (uint64_t) FTL_CKPT_BLOCK_BYTES * h.blocks;
  for (int i = 0; i < FTL_CKPT_NCOUNTERS; i++)
    h.counters[i] = 0x0101010101010101ULL * (i + 1);
  h.pe_offset = 0x4000004;
  h.clock_skew = -0x500000000005LL;
  return h;
}

static enum ftl_fmt_status
ckpt_decode_checked (const uint8_t *buf, size_t len,
                     struct ftl_ckpt_header *out)
{
  struct ftl_ckpt_header sentinel, tmp;
  enum ftl_fmt_status s;

  memset (&sentinel, 0x5a, sizeof sentinel);
  memcpy (&tmp, &sentinel, sizeof tmp);
  s = fmt_ckpt_header_decode (buf, len, &tmp);
  if (s != FTL_FMT_OK)
    ck_assert_msg (memcmp (&tmp, &sentinel, sizeof tmp) == 0,
                   "fmt_ckpt_header_decode wrote its output while "
                   "returning %d", s);
  else if (out)
    *out = tmp;
  return s;
}

/* Every field survives; exactly FTL_CKPT_HDR_BYTES are written. */
START_TEST (test_ckpt_header_round_trip)
{
  uint8_t buf[FTL_CKPT_HDR_BYTES + 64];
  struct ftl_ckpt_header h = good_ckpt_header (), out;

  memset (buf, 0xa5, sizeof buf);
  fmt_ckpt_header_encode (&h, buf);
  for (size_t i = FTL_CKPT_HDR_BYTES; i < sizeof buf; i++)
    ck_assert_msg (buf[i] == 0xa5, "encoder wrote byte %zu", i);
  ck_assert_mem_eq (buf, FTL_CKPT_MAGIC, 8);
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, &out), FTL_FMT_OK);
  ck_assert_uint_eq (out.version, h.version);
  ck_assert_uint_eq (out.generation, h.generation);
  ck_assert_uint_eq (out.seq, h.seq);
  ck_assert_uint_eq (out.body_bytes, h.body_bytes);
  ck_assert_uint_eq (out.body_checksum, h.body_checksum);
  ck_assert_uint_eq (out.logical_pages, h.logical_pages);
  ck_assert_uint_eq (out.blocks, h.blocks);
  ck_assert_uint_eq (out.pages_per_block, h.pages_per_block);
  ck_assert_uint_eq (out.clean, h.clean);
  for (int i = 0; i < FTL_CKPT_NCOUNTERS; i++)
    ck_assert_uint_eq (out.counters[i], h.counters[i]);
  ck_assert_uint_eq (out.pe_offset, h.pe_offset);
  ck_assert_int_eq (out.clock_skew, h.clock_skew);

  h.clean = 0;
  fmt_ckpt_header_encode (&h, buf);
  ck_assert_int_eq (ckpt_decode_checked (buf, FTL_CKPT_HDR_BYTES, &out),
                    FTL_FMT_OK);
  ck_assert_uint_eq (out.clean, 0);
}
END_TEST

/* Zeros, flipped bytes, magic, version, length and fields. */
START_TEST (test_ckpt_header_rejects)
{
  uint8_t good[FTL_CKPT_HDR_BYTES], buf[FTL_CKPT_HDR_BYTES];
  struct ftl_ckpt_header h = good_ckpt_header ();

  memset (buf, 0, sizeof buf);
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_EMPTY);

  fmt_ckpt_header_encode (&h, good);
  for (size_t i = 0; i < sizeof good; i++)
    for (size_t m = 0; m < NMASKS; m++) {
      memcpy (buf, good, sizeof buf);
      buf[i] ^= masks[m];
      ck_assert_msg (ckpt_decode_checked (buf, sizeof buf, NULL)
                     != FTL_FMT_OK,
                     "checkpoint header with byte %zu ^ 0x%02x accepted",
                     i, masks[m]);
    }

  memcpy (buf, good, sizeof buf);
  buf[0] ^= 0x01;
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_MAGIC);

  ck_assert_int_eq (ckpt_decode_checked (good, sizeof good - 1, NULL),
                    FTL_FMT_BAD_LENGTH);
  memcpy (buf, good, sizeof buf);
  put32le (buf + 12, FTL_CKPT_HDR_BYTES + 8);
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_LENGTH);

  struct ftl_ckpt_header v = h;
  v.version = FTL_FORMAT_VERSION + 1;
  fmt_ckpt_header_encode (&v, buf);
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_VERSION);
  v.version = 0;
  fmt_ckpt_header_encode (&v, buf);
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_FIELD);

  /* Fields out of range, with valid checksums. */
  v = h;
  v.clean = 2;
  fmt_ckpt_header_encode (&v, buf);
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_FIELD);
  v = h;
  v.body_bytes++;
  fmt_ckpt_header_encode (&v, buf);
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_FIELD);
  v = h;
  v.blocks++;                   /* body_bytes no longer matches */
  fmt_ckpt_header_encode (&v, buf);
  ck_assert_int_eq (ckpt_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_FIELD);
}
END_TEST

/* A checkpoint body entry is 12 little-endian bytes: erase count,
 * write pointer, state.
 */
START_TEST (test_ckpt_block_round_trip)
{
  static const struct ftl_ckpt_block cases[] = {
    { 0, 0, FTL_BLK_FREE, 0 },
    { 1, 17, FTL_BLK_OPEN, 1 },
    { UINT32_MAX, 65536, FTL_BLK_FULL, FTL_MAX_PROGRAM_HOUR },
    { 0x12345678, 0x9abcdef0, 0x0d, 0xbadf00 },
    { 7, 16, FTL_BLK_FULL, 5, true },
  };
  uint8_t buf[FTL_CKPT_BLOCK_BYTES + 4];

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct ftl_ckpt_block out;
    memset (buf, 0xa5, sizeof buf);
    fmt_ckpt_block_encode (&cases[i], buf);
    for (size_t k = FTL_CKPT_BLOCK_BYTES; k < sizeof buf; k++)
      ck_assert_uint_eq (buf[k], 0xa5);
    ck_assert_uint_eq (get32le (buf), cases[i].erase_count);
    ck_assert_uint_eq (get32le (buf + 4), cases[i].write_pointer);
    /* The state in the low byte, the program hour above it. */
    ck_assert_uint_eq (get32le (buf + 8),
                       cases[i].state | cases[i].program_hour << 8 |
                       (cases[i].slc ? FTL_CKPT_BLK_SLC : 0));
    fmt_ckpt_block_decode (buf, &out);
    ck_assert_uint_eq (out.erase_count, cases[i].erase_count);
    ck_assert_uint_eq (out.write_pointer, cases[i].write_pointer);
    ck_assert_uint_eq (out.state, cases[i].state);
    ck_assert_uint_eq (out.program_hour, cases[i].program_hour);
    ck_assert_uint_eq (out.slc, cases[i].slc);
  }
}
END_TEST

/* A version 1 entry (the state word holds the state alone) reads as
 * having no program time; version 1 never wrote the upper bits.
 */
START_TEST (test_ckpt_block_version_1)
{
  uint8_t buf[FTL_CKPT_BLOCK_BYTES];
  struct ftl_ckpt_block out;

  put32le (buf, 7);
  put32le (buf + 4, 256);
  put32le (buf + 8, FTL_BLK_FULL);
  fmt_ckpt_block_decode (buf, &out);
  ck_assert_uint_eq (out.erase_count, 7);
  ck_assert_uint_eq (out.write_pointer, 256);
  ck_assert_uint_eq (out.state, FTL_BLK_FULL);
  ck_assert_uint_eq (out.program_hour, 0);
  ck_assert (fmt_ckpt_block_check (&out, 256, NULL, 0));
}
END_TEST

/* The body's layout: the map (4 little-endian bytes per logical page),
 * then the block table (12 bytes per erase block).
 */
START_TEST (test_ckpt_body_layout)
{
  uint8_t buf[FTL_CKPT_MAP_ENTRY_BYTES + 4];

  ck_assert_uint_eq (fmt_ckpt_body_bytes (16384, 82), 4 * 16384 + 12 * 82);
  ck_assert_uint_eq (fmt_ckpt_body_bytes (0, 0), 0);
  ck_assert_uint_eq (fmt_ckpt_block_offset (16384, 0), 4 * 16384);
  ck_assert_uint_eq (fmt_ckpt_block_offset (16384, 81),
                     4 * 16384 + 12 * 81);
  ck_assert_uint_eq (fmt_ckpt_body_bytes (UINT32_MAX - 2, UINT32_MAX),
                     4 * (uint64_t) (UINT32_MAX - 2)
                     + 12 * (uint64_t) UINT32_MAX);

  /* Version 5 on: the PPN inverted, little-endian; unmapped is 0. */
  memset (buf, 0xa5, sizeof buf);
  fmt_ckpt_map_encode (0x01020304, buf);
  ck_assert_uint_eq (buf[0], 0xfb);
  ck_assert_uint_eq (buf[3], 0xfe);
  ck_assert_uint_eq (buf[FTL_CKPT_MAP_ENTRY_BYTES], 0xa5);
  ck_assert_uint_eq (fmt_ckpt_map_decode (buf, 5), 0x01020304);
  fmt_ckpt_map_encode (FTL_UNMAPPED, buf);
  for (int i = 0; i < FTL_CKPT_MAP_ENTRY_BYTES; i++)
    ck_assert_uint_eq (buf[i], 0);
  ck_assert_uint_eq (fmt_ckpt_map_decode (buf, FTL_FORMAT_VERSION),
                     FTL_UNMAPPED);
  /* Before version 5: the PPN as it is, unmapped all ones. */
  memcpy (buf, "\x04\x03\x02\x01", 4);
  ck_assert_uint_eq (fmt_ckpt_map_decode (buf, 4), 0x01020304);
  memset (buf, 0xff, 4);
  ck_assert_uint_eq (fmt_ckpt_map_decode (buf, 1), FTL_UNMAPPED);
}
END_TEST

/* fmt_checksum_sparse is fmt_checksum of the data with the pieces that
 * present does not flag taken as zeros, whatever the pieces' offset.
 */
START_TEST (test_checksum_sparse)
{
  enum { LEN = 300000, PIECE = 4096 };
  uint8_t *data = malloc (LEN), *zeroed = malloc (LEN);
  uint8_t present[LEN / PIECE + 3];
  uint64_t rnd = 42;
#define next_rnd() (rnd = rnd * 6364136223846793005u + 1442695040888963407u, \
                    rnd >> 33)

  ck_assert_ptr_nonnull (data);
  ck_assert_ptr_nonnull (zeroed);
  for (size_t i = 0; i < LEN; i++)
    data[i] = next_rnd ();
  const uint64_t bases[] = { 0, 256, 4095 };
  for (int b = 0; b < 3; b++)
    for (int pattern = 0; pattern < 4; pattern++) {
      uint64_t base = bases[b];
      for (size_t k = 0; k < sizeof present; k++)
        present[k] = pattern == 0 ? 1 : pattern == 1 ? 0
          : pattern == 2 ? k % 2 : next_rnd () % 3 == 0;
      for (size_t i = 0; i < LEN; i++)
        zeroed[i] = present[(base + i) / PIECE] ? data[i] : 0;
      ck_assert_uint_eq (fmt_checksum_sparse (data, LEN, base, PIECE,
                                              present),
                         fmt_checksum (zeroed, LEN, 0));
    }
  free (data);
  free (zeroed);
#undef next_rnd
}
END_TEST

/* The validity rule (format.h): a header for the superblock's
 * geometry, a body that matches its checksum, possible entries.
 */
START_TEST (test_ckpt_validity_rule)
{
  struct ftl_superblock sb = good_sb ();
  struct ftl_ckpt_header h = {
    .version = FTL_FORMAT_VERSION,
    .logical_pages = sb.logical_bytes / sb.page_size,
    .blocks = sb.blocks,
    .pages_per_block = sb.pages_per_block,
  };
  uint64_t phys = (uint64_t) sb.blocks * sb.pages_per_block;
  static const struct {
    struct ftl_ckpt_block b;
    const char *why;            /* NULL: possible */
  } blocks[] = {
    { { 0, 0, FTL_BLK_FREE }, NULL },
    { { 3, 0, FTL_BLK_OPEN }, NULL },
    { { 3, 256, FTL_BLK_OPEN }, NULL },
    { { 9, 256, FTL_BLK_FULL }, NULL },
    { { 9, 0, FTL_BLK_RETIRED }, NULL },
    { { 9, 257, FTL_BLK_FULL }, "has 257 pages written, more than its 256" },
    { { 0, 1, FTL_BLK_FREE }, "is free but has 1 pages written" },
    { { 9, 5, FTL_BLK_RETIRED }, "is retired but has 5 pages written" },
    { { 0, 0, 4 }, "has an unknown state 4" },
    { { 9, 256, FTL_BLK_FULL, 12345 }, NULL },
    { { 9, 0, FTL_BLK_FREE, 3 }, "is free but has a program time" },
    { { 9, 0, FTL_BLK_RETIRED, 3 }, "is retired but has a program time" },
    { { 9, 16, FTL_BLK_FULL, 3, true }, NULL },
    { { 9, 0, FTL_BLK_FREE, 0, true }, "is free but in SLC mode" },
  };
  uint8_t body[64];
  char why[128];

  h.body_bytes = fmt_ckpt_body_bytes (h.logical_pages, h.blocks);
  ck_assert (fmt_ckpt_header_check (&h, &sb, why, sizeof why));
  h.logical_pages++;
  ck_assert (!fmt_ckpt_header_check (&h, &sb, why, sizeof why));
  ck_assert_msg (strstr (why, "another geometry") != NULL, "%s", why);
  h.logical_pages--;
  h.blocks--;
  ck_assert (!fmt_ckpt_header_check (&h, &sb, NULL, 0));
  h.blocks++;
  h.pages_per_block *= 2;
  ck_assert (!fmt_ckpt_header_check (&h, &sb, NULL, 0));
  h.pages_per_block /= 2;

  for (size_t i = 0; i < sizeof body; i++)
    body[i] = i * 7;
  h.body_bytes = sizeof body;
  h.body_checksum = fmt_checksum (body, sizeof body, 0);
  ck_assert (fmt_ckpt_body_check (&h, body));
  body[17] ^= 1;
  ck_assert (!fmt_ckpt_body_check (&h, body));

  ck_assert (fmt_ckpt_map_check (&h, FTL_UNMAPPED));
  ck_assert (fmt_ckpt_map_check (&h, 0));
  ck_assert (fmt_ckpt_map_check (&h, phys - 1));
  ck_assert (!fmt_ckpt_map_check (&h, phys));
  /* FTL_LOST (version 5): a logical page whose data a crash of the
   * host lost; not a page in a version 4 checkpoint.
   */
  ck_assert_uint_eq (FTL_LOST, FTL_PAGES_LIMIT);
  ck_assert (fmt_ckpt_map_check (&h, FTL_LOST));
  h.version = 4;
  ck_assert (!fmt_ckpt_map_check (&h, FTL_LOST));
  h.version = FTL_FORMAT_VERSION;

  for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
    bool ok = fmt_ckpt_block_check (&blocks[i].b, 256, why, sizeof why);
    ck_assert_msg (ok == (blocks[i].why == NULL), "case %zu", i);
    if (!ok)
      ck_assert_str_eq (why, blocks[i].why);
  }
}
END_TEST

/* ---- block header ---- */

static enum ftl_fmt_status
blkhdr_decode_checked (const uint8_t *buf, size_t len,
                       struct ftl_block_header *out)
{
  struct ftl_block_header sentinel, tmp;
  enum ftl_fmt_status s;

  memset (&sentinel, 0x5a, sizeof sentinel);
  memcpy (&tmp, &sentinel, sizeof tmp);
  s = fmt_blkhdr_decode (buf, len, &tmp);
  if (s != FTL_FMT_OK)
    ck_assert_msg (memcmp (&tmp, &sentinel, sizeof tmp) == 0,
                   "fmt_blkhdr_decode wrote its output while returning %d",
                   s);
  else if (out)
    *out = tmp;
  return s;
}

/* Round trip, exact length, and every kind of rejection. */
START_TEST (test_blkhdr)
{
  struct ftl_block_header h = { .erase_count = 0xfedcba98,
                                .erase_seq = 0x0123456789abcdefULL }, out;
  uint8_t good[FTL_BLKHDR_BYTES + 8], buf[FTL_BLKHDR_BYTES];

  memset (good, 0xa5, sizeof good);
  fmt_blkhdr_encode (&h, good);
  for (size_t i = FTL_BLKHDR_BYTES; i < sizeof good; i++)
    ck_assert_uint_eq (good[i], 0xa5);
  ck_assert_int_eq (blkhdr_decode_checked (good, FTL_BLKHDR_BYTES, &out),
                    FTL_FMT_OK);
  ck_assert_uint_eq (out.erase_count, h.erase_count);
  ck_assert_uint_eq (out.erase_seq, h.erase_seq);
  ck_assert_uint_eq (get32le (good), FTL_BLKHDR_MAGIC);

  memset (buf, 0, sizeof buf);
  ck_assert_int_eq (blkhdr_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_EMPTY);
  ck_assert_int_eq (blkhdr_decode_checked (good, FTL_BLKHDR_BYTES - 1, NULL),
                    FTL_FMT_BAD_LENGTH);

  for (size_t i = 0; i < FTL_BLKHDR_BYTES; i++)
    for (size_t m = 0; m < NMASKS; m++) {
      memcpy (buf, good, sizeof buf);
      buf[i] ^= masks[m];
      ck_assert_msg (blkhdr_decode_checked (buf, sizeof buf, NULL)
                     != FTL_FMT_OK,
                     "block header with byte %zu ^ 0x%02x accepted", i,
                     masks[m]);
    }

  memcpy (buf, good, sizeof buf);
  buf[1] ^= 0x40;
  ck_assert_int_eq (blkhdr_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_MAGIC);

  /* Newer and zero versions, with the checksum recomputed: version 0
   * is a field out of range, not a newer format.
   */
  uint16_t versions[] = { FTL_FORMAT_VERSION + 1, 0, 0xffff };
  for (size_t i = 0; i < sizeof versions / sizeof versions[0]; i++) {
    memcpy (buf, good, sizeof buf);
    put16le (buf + 4, versions[i]);
    put64le (buf + 24, fmt_checksum (buf, 24, 0));
    ck_assert_int_eq (blkhdr_decode_checked (buf, sizeof buf, NULL),
                      versions[i] ? FTL_FMT_BAD_VERSION : FTL_FMT_BAD_FIELD);
  }
}
END_TEST

/* ---- OOB entries ---- */

static enum ftl_fmt_status
oob_decode_checked (const uint8_t *buf, size_t len, struct ftl_oob *out)
{
  struct ftl_oob sentinel, tmp;
  enum ftl_fmt_status s;

  memset (&sentinel, 0x5a, sizeof sentinel);
  memcpy (&tmp, &sentinel, sizeof tmp);
  s = fmt_oob_decode (buf, len, &tmp);
  if (s != FTL_FMT_OK)
    ck_assert_msg (memcmp (&tmp, &sentinel, sizeof tmp) == 0,
                   "fmt_oob_decode wrote its output while returning %d", s);
  else if (out)
    *out = tmp;
  return s;
}

/* Recompute the OOB entry's 32 bit checksum after patching it. */
static void
oob_fix_checksum (uint8_t *buf)
{
  put32le (buf + 20, 0);
  put32le (buf + 20, (uint32_t) fmt_checksum (buf, FTL_OOB_BYTES, 0));
}

/* Both kinds round-trip; the encoder writes exactly 32 bytes. */
START_TEST (test_oob_round_trip)
{
  const struct ftl_oob cases[] = {
    { .kind = FTL_OOB_DATA, .lpn = 0, .seq = 1 },
    { .kind = FTL_OOB_DATA, .lpn = 0xfffffffd, .seq = UINT64_MAX,
      .erase_count = UINT32_MAX, .data_checksum = UINT64_MAX },
    { .kind = FTL_OOB_TRIM, .trim_entries = 255,
      .seq = 0x0123456789abcdefULL, .erase_count = 7,
      .data_checksum = 0xfedcba9876543210ULL },
    { .kind = FTL_OOB_DATA, .lpn = 77, .seq = 3, .slc = true },
    { .kind = FTL_OOB_TRIM, .trim_entries = 2, .seq = 4, .slc = true },
  };
  uint8_t buf[FTL_OOB_BYTES + 8];

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    struct ftl_oob out;
    memset (buf, 0xa5, sizeof buf);
    fmt_oob_encode (&cases[i], buf);
    for (size_t k = FTL_OOB_BYTES; k < sizeof buf; k++)
      ck_assert_uint_eq (buf[k], 0xa5);
    ck_assert_int_eq (oob_decode_checked (buf, FTL_OOB_BYTES, &out),
                      FTL_FMT_OK);
    ck_assert_uint_eq (out.kind, cases[i].kind);
    ck_assert_uint_eq (out.lpn, cases[i].lpn);
    ck_assert_uint_eq (out.trim_entries, cases[i].trim_entries);
    ck_assert_uint_eq (out.seq, cases[i].seq);
    ck_assert_uint_eq (out.erase_count, cases[i].erase_count);
    ck_assert_uint_eq (out.data_checksum, cases[i].data_checksum);
    ck_assert_uint_eq (out.slc, cases[i].slc);
    /* The SLC flag in the kind byte's high bit. */
    ck_assert_uint_eq (buf[2], cases[i].kind |
                       (cases[i].slc ? FTL_OOB_SLC : 0));
  }
}
END_TEST

/* Zeros, flipped bytes, magic, version, kind and length. */
START_TEST (test_oob_rejects)
{
  const struct ftl_oob o = { .kind = FTL_OOB_DATA, .lpn = 1234, .seq = 5678,
                             .erase_count = 9,
                             .data_checksum = 0x1122334455667788ULL };
  uint8_t good[FTL_OOB_BYTES], buf[FTL_OOB_BYTES];

  memset (buf, 0, sizeof buf);
  ck_assert_int_eq (oob_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_EMPTY);

  fmt_oob_encode (&o, good);
  ck_assert_int_eq (oob_decode_checked (good, FTL_OOB_BYTES - 1, NULL),
                    FTL_FMT_BAD_LENGTH);
  for (size_t i = 0; i < FTL_OOB_BYTES; i++)
    for (size_t m = 0; m < NMASKS; m++) {
      memcpy (buf, good, sizeof buf);
      buf[i] ^= masks[m];
      ck_assert_msg (oob_decode_checked (buf, sizeof buf, NULL)
                     != FTL_FMT_OK,
                     "OOB entry with byte %zu ^ 0x%02x accepted", i,
                     masks[m]);
    }

  memcpy (buf, good, sizeof buf);
  buf[0] ^= 0x01;
  ck_assert_int_eq (oob_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_MAGIC);

  uint8_t versions[] = { FTL_FORMAT_VERSION + 1, 0, 0xff };
  for (size_t i = 0; i < sizeof versions; i++) {
    memcpy (buf, good, sizeof buf);
    buf[3] = versions[i];
    oob_fix_checksum (buf);
    ck_assert_int_eq (oob_decode_checked (buf, sizeof buf, NULL),
                      versions[i] ? FTL_FMT_BAD_VERSION : FTL_FMT_BAD_FIELD);
  }

  /* The SLC flag needs version 3. */
  memcpy (buf, good, sizeof buf);
  buf[2] |= FTL_OOB_SLC;
  buf[3] = 2;
  oob_fix_checksum (buf);
  ck_assert_int_eq (oob_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_FIELD);
  buf[3] = 3;
  oob_fix_checksum (buf);
  ck_assert_int_eq (oob_decode_checked (buf, sizeof buf, NULL), FTL_FMT_OK);

  /* A translation page's kind needs version 6. */
  memcpy (buf, good, sizeof buf);
  buf[2] = FTL_OOB_MAP;
  buf[3] = 5;
  oob_fix_checksum (buf);
  ck_assert_int_eq (oob_decode_checked (buf, sizeof buf, NULL),
                    FTL_FMT_BAD_FIELD);
  buf[3] = 6;
  oob_fix_checksum (buf);
  ck_assert_int_eq (oob_decode_checked (buf, sizeof buf, NULL), FTL_FMT_OK);

  uint8_t kinds[] = { 0, 5, 0xff, FTL_OOB_SLC };
  for (size_t i = 0; i < sizeof kinds; i++) {
    memcpy (buf, good, sizeof buf);
    buf[2] = kinds[i];
    oob_fix_checksum (buf);
    ck_assert_int_eq (oob_decode_checked (buf, sizeof buf, NULL),
                      FTL_FMT_BAD_FIELD);
  }
}
END_TEST

/* ---- trim record pages ---- */

static void
make_trims (struct ftl_trim_entry *e, uint32_t n)
{
  for (uint32_t i = 0; i < n; i++)
    e[i] = (struct ftl_trim_entry) {
      .lpn = i * 1000 + 7, .count = i + 1, .seq = 0x100000000ULL + i * 3,
    };
}

/* Capacity, round trips of 1, some and a full page of entries, and the
 * encoder filling exactly one page.
 */
START_TEST (test_trim_round_trip)
{
  const uint32_t sizes[] = { 512, 4096, 65536 };

  ck_assert_uint_eq (fmt_trim_page_capacity (512), 31);
  ck_assert_uint_eq (fmt_trim_page_capacity (4096), 255);
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    uint32_t ps = sizes[s], cap = fmt_trim_page_capacity (ps);
    uint32_t counts[] = { 1, cap / 2, cap };
    uint8_t *page = malloc (ps + 16);
    struct ftl_trim_entry *in = malloc (cap * sizeof *in);
    struct ftl_trim_entry *out = malloc (cap * sizeof *out);

    ck_assert_uint_eq (cap, (ps - FTL_TRIM_HDR_BYTES) / FTL_TRIM_ENTRY_BYTES);
    make_trims (in, cap);
    for (size_t c = 0; c < 3; c++) {
      uint32_t n = 0;
      memset (page, 0xa5, ps + 16);
      fmt_trim_page_encode (in, counts[c], page, ps);
      for (uint32_t k = ps; k < ps + 16; k++)
        ck_assert_uint_eq (page[k], 0xa5);
      ck_assert_int_eq (fmt_trim_page_decode (page, ps, out, &n), FTL_FMT_OK);
      ck_assert_uint_eq (n, counts[c]);
      for (uint32_t k = 0; k < n; k++) {
        ck_assert_uint_eq (out[k].lpn, in[k].lpn);
        ck_assert_uint_eq (out[k].count, in[k].count);
        ck_assert_uint_eq (out[k].seq, in[k].seq);
      }
    }
    free (page);
    free (in);
    free (out);
  }
}
END_TEST

/* Every flipped byte of the header (count, magic, version, checksum)
 * and of the entries is rejected.  An all-zero page is empty; count 0
 * and a count beyond the capacity are bad lengths; an entry of 0 pages
 * is a bad field.
 */
START_TEST (test_trim_rejects)
{
  const uint32_t ps = 512, n = 5;
  uint8_t good[512], buf[512];
  struct ftl_trim_entry in[5], out[31];
  uint32_t cnt;

  make_trims (in, n);
  fmt_trim_page_encode (in, n, good, ps);
  for (size_t i = 0; i < FTL_TRIM_HDR_BYTES + n * FTL_TRIM_ENTRY_BYTES; i++)
    for (size_t m = 0; m < NMASKS; m++) {
      memcpy (buf, good, sizeof buf);
      buf[i] ^= masks[m];
      enum ftl_fmt_status s = fmt_trim_page_decode (buf, ps, out, &cnt);
      ck_assert_msg (s != FTL_FMT_OK,
                     "trim page with byte %zu ^ 0x%02x accepted", i,
                     masks[m]);
    }

  memset (buf, 0, sizeof buf);
  ck_assert_int_eq (fmt_trim_page_decode (buf, ps, out, &cnt),
                    FTL_FMT_EMPTY);

  /* Count 0 and count > capacity, with the checksum the encoder would
   * compute for that count.
   */
  memcpy (buf, good, sizeof buf);
  put32le (buf, 0);
  put64le (buf + 8, fmt_checksum (buf + FTL_TRIM_HDR_BYTES, 0, get64le (buf)));
  ck_assert_int_eq (fmt_trim_page_decode (buf, ps, out, &cnt),
                    FTL_FMT_BAD_LENGTH);
  /* Newer and zero versions, the checksum recomputed (it is seeded with
   * the header's first 8 bytes).
   */
  uint16_t versions[] = { FTL_FORMAT_VERSION + 1, 0 };
  for (size_t i = 0; i < 2; i++) {
    memcpy (buf, good, sizeof buf);
    put16le (buf + 6, versions[i]);
    put64le (buf + 8, fmt_checksum (buf + FTL_TRIM_HDR_BYTES,
                                    n * FTL_TRIM_ENTRY_BYTES, get64le (buf)));
    ck_assert_int_eq (fmt_trim_page_decode (buf, ps, out, &cnt),
                      versions[i] ? FTL_FMT_BAD_VERSION : FTL_FMT_BAD_FIELD);
  }
  uint32_t big[] = { fmt_trim_page_capacity (ps) + 1, UINT32_MAX };
  for (size_t i = 0; i < 2; i++) {
    memcpy (buf, good, sizeof buf);
    put32le (buf, big[i]);
    ck_assert_int_eq (fmt_trim_page_decode (buf, ps, out, &cnt),
                      FTL_FMT_BAD_LENGTH);
  }

  /* An entry of no pages. */
  in[2].count = 0;
  fmt_trim_page_encode (in, n, buf, ps);
  ck_assert_int_eq (fmt_trim_page_decode (buf, ps, out, &cnt),
                    FTL_FMT_BAD_FIELD);
}
END_TEST

/* format.h: "decoders ... fill *out only when they return FTL_FMT_OK":
 * a trim page whose checksum is valid but whose last entry covers 0
 * pages is rejected without writing the entries before it to out[].
 */
START_TEST (test_trim_reject_leaves_output)
{
  const uint32_t ps = 512, n = 4;
  uint8_t buf[512];
  struct ftl_trim_entry in[4], out[31], sentinel[31];
  uint32_t cnt = 12345;

  make_trims (in, n);
  in[n - 1].count = 0;
  fmt_trim_page_encode (in, n, buf, ps);
  memset (sentinel, 0x5a, sizeof sentinel);
  memcpy (out, sentinel, sizeof out);
  ck_assert_int_eq (fmt_trim_page_decode (buf, ps, out, &cnt),
                    FTL_FMT_BAD_FIELD);
  ck_assert_uint_eq (cnt, 12345);
  ck_assert_msg (memcmp (out, sentinel, sizeof out) == 0,
                 "a rejected trim page was decoded into the output");
}
END_TEST

/* ---- derived geometry and strings ---- */

/* Metadata pages hold a 32 byte block header and a 32 byte OOB entry per
 * page, rounded up to whole pages.
 */
START_TEST (test_meta_pages)
{
  static const struct { uint32_t ps, ppb, want; } cases[] = {
    { 512, 8, 1 },              /* 32 + 256 = 288 */
    { 512, 16, 2 },             /* 32 + 512 = 544 */
    { 4096, 64, 1 },            /* 2080 */
    { 4096, 128, 2 },           /* 32 + 4096: the header spills over */
    { 4096, 256, 3 },           /* 8224 */
    { 65536, 8, 1 },
    { 65536, 65536, 33 },       /* 32 + 2 MiB */
    { 512, 65536, 4097 },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    ck_assert_msg (fmt_meta_pages (cases[i].ps, cases[i].ppb)
                   == cases[i].want, "fmt_meta_pages (%u, %u) = %u, "
                   "expected %u", cases[i].ps, cases[i].ppb,
                   fmt_meta_pages (cases[i].ps, cases[i].ppb),
                   cases[i].want);
}
END_TEST

/* A checkpoint slot holds the 256 byte header, 4 bytes per logical page
 * and 12 per erase block, rounded up to a page.
 */
START_TEST (test_ckpt_bytes)
{
  static const struct { uint32_t ps; uint64_t lpages; uint32_t blocks;
                        uint64_t want; } cases[] = {
    { 4096, 957, 1, 4096 },     /* 256 + 3828 + 12: exactly one page */
    { 4096, 957, 2, 8192 },     /* twelve bytes over */
    { 512, 0, 0, 512 },
    { 512, 64, 20, 1024 },      /* 256 + 256 + 240 = 752 */
    { 4096, 16384, 82, 69632 }, /* 256 + 65536 + 984 = 66776 */
    { 65536, 1, 4, 65536 },
    { 4096, UINT64_C (1) << 30, 1 << 20,
      ROUND_UP (256 + (UINT64_C (4) << 30) + 12 * (UINT64_C (1) << 20),
                4096) },
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    ck_assert_msg (fmt_ckpt_bytes (cases[i].ps, cases[i].lpages,
                                   cases[i].blocks) == cases[i].want,
                   "fmt_ckpt_bytes (%u, %" PRIu64 ", %u) = %" PRIu64
                   ", expected %" PRIu64, cases[i].ps, cases[i].lpages,
                   cases[i].blocks,
                   fmt_ckpt_bytes (cases[i].ps, cases[i].lpages,
                                   cases[i].blocks), cases[i].want);
}
END_TEST

/* Every status has its own non-empty description. */
START_TEST (test_status_strings)
{
  const char *seen[FTL_FMT_BAD_FIELD + 1];
  for (int s = FTL_FMT_OK; s <= FTL_FMT_BAD_FIELD; s++) {
    seen[s] = fmt_status_string (s);
    ck_assert_ptr_nonnull (seen[s]);
    ck_assert_uint_gt (strlen (seen[s]), 0);
    for (int t = 0; t < s; t++)
      ck_assert_str_ne (seen[s], seen[t]);
  }
  ck_assert_str_eq (fmt_status_string (FTL_FMT_BAD_FIELD + 1),
                    "unknown status");
}
END_TEST

/* The checksum depends on every byte and on the seed. */
START_TEST (test_checksum)
{
  uint8_t buf[64] = { 0 };
  uint64_t base = fmt_checksum (buf, sizeof buf, 0);

  ck_assert_uint_eq (base, fmt_checksum (buf, sizeof buf, 0));
  ck_assert_uint_ne (base, fmt_checksum (buf, sizeof buf, 1));
  ck_assert_uint_ne (base, fmt_checksum (buf, sizeof buf - 1, 0));
  for (size_t i = 0; i < sizeof buf; i++) {
    buf[i] = 1;
    ck_assert_uint_ne (base, fmt_checksum (buf, sizeof buf, 0));
    buf[i] = 0;
  }
}
END_TEST

/* The checksum is XXH3 (64 bits, seeded) whichever code computes it
 * (the run-time dispatcher for pages, the inlined code for short
 * structures): images written on one machine must check on another.
 * Known answers, computed with xxhash's reference code.
 */
START_TEST (test_checksum_known_answers)
{
  uint8_t page[4096];

  for (size_t i = 0; i < sizeof page; i++)
    page[i] = (uint8_t) (i * 7 + 1);
  ck_assert_uint_eq (fmt_checksum (page, 4096, 12345),
                     UINT64_C (0x2424f99b74724906));
  ck_assert_uint_eq (fmt_checksum (page, 4096, 0),
                     UINT64_C (0x99e3c931dab3e711));
  ck_assert_uint_eq (fmt_checksum (page, 32, 7),
                     UINT64_C (0x88e09aa42fc14fbe));
}
END_TEST

/* The durable-point record: a round trip, and each kind of damage is
 * named.
 */
START_TEST (test_durable_record)
{
  struct ftl_durable d = { .generation = 9, .seq = 4242,
                           .uuid = { 1, 2 } }, out;
  uint8_t buf[FTL_DURABLE_BYTES], bad[FTL_DURABLE_BYTES];

  fmt_durable_encode (&d, buf);
  ck_assert_int_eq (fmt_durable_decode (buf, sizeof buf, &out), FTL_FMT_OK);
  ck_assert_uint_eq (out.generation, 9);
  ck_assert_uint_eq (out.seq, 4242);
  ck_assert_uint_eq (out.uuid[0], 1);
  ck_assert_uint_eq (out.uuid[1], 2);
  ck_assert_int_eq (fmt_durable_decode (buf, sizeof buf - 1, &out),
                    FTL_FMT_BAD_LENGTH);
  memset (bad, 0, sizeof bad);
  ck_assert_int_eq (fmt_durable_decode (bad, sizeof bad, &out),
                    FTL_FMT_EMPTY);
  for (size_t i = 0; i < sizeof buf; i++) {
    enum ftl_fmt_status st;
    memcpy (bad, buf, sizeof bad);
    bad[i] ^= 0x20;
    st = fmt_durable_decode (bad, sizeof bad, &out);
    ck_assert_msg (st != FTL_FMT_OK, "byte %zu flipped, still decodes", i);
  }
}
END_TEST

static Suite *
format_suite (void)
{
  Suite *s = suite_create ("format");
  TCase *tc;

  /* Each case takes well under a second; the timeouts leave room for
   * sanitizer and valgrind builds.
   */
  tc = tcase_create ("superblock");
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_sb_round_trip);
  tcase_add_test (tc, test_sb_regions);
  tcase_add_test (tc, test_sb_older_versions);
  tcase_add_test (tc, test_sb_unsynced_mark);
  tcase_add_test (tc, test_durable_record);
  tcase_add_test (tc, test_sb_empty_and_short);
  tcase_add_test (tc, test_sb_flipped_bytes);
  tcase_add_test (tc, test_sb_magic_version_length);
  tcase_add_test (tc, test_sb_geometry);
  tcase_add_test (tc, test_sb_rejects_wrapped_offsets);
  suite_add_tcase (s, tc);

  tc = tcase_create ("checkpoint");
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_ckpt_header_round_trip);
  tcase_add_test (tc, test_ckpt_header_rejects);
  tcase_add_test (tc, test_ckpt_block_round_trip);
  tcase_add_test (tc, test_ckpt_block_version_1);
  tcase_add_test (tc, test_ckpt_body_layout);
  tcase_add_test (tc, test_checksum_sparse);
  tcase_add_test (tc, test_ckpt_validity_rule);
  suite_add_tcase (s, tc);

  tc = tcase_create ("block");
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_blkhdr);
  tcase_add_test (tc, test_oob_round_trip);
  tcase_add_test (tc, test_oob_rejects);
  suite_add_tcase (s, tc);

  tc = tcase_create ("trim");
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_trim_round_trip);
  tcase_add_test (tc, test_trim_rejects);
  tcase_add_test (tc, test_trim_reject_leaves_output);
  suite_add_tcase (s, tc);

  tc = tcase_create ("misc");
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_meta_pages);
  tcase_add_test (tc, test_ckpt_bytes);
  tcase_add_test (tc, test_status_strings);
  tcase_add_test (tc, test_checksum);
  tcase_add_test (tc, test_checksum_known_answers);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (format_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
