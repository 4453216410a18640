/* nbdkit-ftl: unit tests of format.c: the structures of the log, the
 * block header, the OOB entries and the trim record pages, and the
 * number of metadata pages per erase block.
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


/* ---- derived geometry ---- */

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

static Suite *
format_log_suite (void)
{
  Suite *s = suite_create ("format-log");
  TCase *tc;

  /* Each case takes well under a second; the timeouts leave room for
   * sanitizer and valgrind builds.
   */
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
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (format_log_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
