/* nbdkit-ftl: unit tests of format.c: the checkpoint (its header, the
 * erase block records and the body's layout, the validity rule against
 * the superblock's geometry) and the size of a checkpoint slot.
 *
 * As in test-format.c: a round trip keeps every field, the decoder
 * rejects every single flipped byte, a wrong magic, a newer version and
 * out-of-range fields, and leaves its output untouched when it rejects.
 */

#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "util/util.h"
#include "format-test.h"

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


/* ---- derived geometry ---- */

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

static Suite *
format_ckpt_suite (void)
{
  Suite *s = suite_create ("format-ckpt");
  TCase *tc;

  /* Each case takes well under a second; the timeouts leave room for
   * sanitizer and valgrind builds.
   */
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

  tc = tcase_create ("misc");
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_ckpt_bytes);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (format_ckpt_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
