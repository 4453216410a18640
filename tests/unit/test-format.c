/* nbdkit-ftl: unit tests of format.c, the on-media structures: the
 * superblock and the durable-point record, the status strings and the
 * checksum.  The checkpoint is in test-format-ckpt.c, the structures of
 * the log (block header, OOB entries, trim record pages) in
 * test-format-log.c.
 *
 * For every structure: an encode/decode round trip keeps every field;
 * the encoder writes exactly the encoded length; the decoder rejects
 * all zeros, every single flipped byte, a wrong magic, a newer version
 * (even with a valid checksum), a bad length and out-of-range fields,
 * and leaves its output untouched when it rejects.
 */

#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "util/util.h"
#include "format-test.h"

/* ---- superblock ---- */

/* good_sb (format-test.h) in the interleaved layout of images from
 * before version 4 (meta_offset 0).
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
  ck_assert_uint_eq (a->ns_check, b->ns_check);
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
    { FTL_SB_DIRTY, 0x10, 0 },
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


/* ---- strings and checksums ---- */

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

  tc = tcase_create ("misc");
  tcase_set_timeout (tc, 30);
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
