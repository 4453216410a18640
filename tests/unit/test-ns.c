/* nbdkit-ftl: unit tests of namespaces: the table's encoding
 * (nstable.c, format version 8).
 *
 * The table: a round trip keeps every entry and encodes back to its
 * bytes; the decoder rejects all zeros, every flipped byte, a wrong
 * magic, a newer version, a table its superblock does not name, and
 * (resealed, so that the checksum holds) every field out of range, and
 * leaves its output untouched when it rejects.  The superblock carries
 * the table's check only with the flag, from version 8.
 */

#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"
#include "format-test.h"

/* ---- the table ---- */

/* Three namespaces of the 64 MiB of good_sb, the last with a gap
 * before it.
 */
static struct ftl_ns_table
good_table (void)
{
  struct ftl_ns_table t = { .version = FTL_FORMAT_VERSION, .count = 3 };

  strcpy (t.ns[0].name, "alpha");
  t.ns[0].bytes = 16 << 20;
  t.ns[0].base = 0;
  strcpy (t.ns[1].name, "b.2_x-Y");
  t.ns[1].bytes = 8 << 20;
  t.ns[1].base = 4096;
  memset (t.ns[2].name, 'z', FTL_NS_NAME_MAX);
  t.ns[2].bytes = 4096;
  t.ns[2].base = 64 * 256 - 1;
  return t;
}

/* Encode t into buf for sb, which then names it. */
static uint32_t
encode (const struct ftl_ns_table *t, struct ftl_superblock *sb,
        uint8_t *buf)
{
  sb->flags |= FTL_SB_NAMESPACES;
  sb->ns_check = fmt_ns_encode (t, buf);
  return fmt_ns_bytes (t);
}

/* Recompute the checksum of an encoded table, and sb's check of it. */
static void
reseal (uint8_t *buf, struct ftl_superblock *sb)
{
  uint32_t len = get32le (buf + 12);
  uint8_t tmp[FTL_NS_MAX_BYTES];
  uint64_t sum;

  ck_assert_uint_le (len, sizeof tmp);
  memcpy (tmp, buf, len);
  memset (tmp + 16, 0, 8);
  sum = fmt_checksum (tmp, len, 0);
  put64le (buf + 16, sum);
  sb->ns_check = (uint32_t) sum;
}

static enum ftl_fmt_status
decode_checked (const uint8_t *buf, size_t len,
                const struct ftl_superblock *sb, struct ftl_ns_table *out,
                char *why, size_t whylen)
{
  struct ftl_ns_table sentinel, tmp;
  enum ftl_fmt_status s;

  memset (&sentinel, 0x5a, sizeof sentinel);
  memcpy (&tmp, &sentinel, sizeof tmp);
  s = fmt_ns_decode (buf, len, sb, &tmp, why, whylen);
  if (s != FTL_FMT_OK)
    ck_assert_msg (memcmp (&tmp, &sentinel, sizeof tmp) == 0,
                   "fmt_ns_decode wrote its output while returning %d", s);
  else if (out)
    *out = tmp;
  return s;
}

START_TEST (test_table_round_trip)
{
  struct ftl_superblock sb = good_sb ();
  struct ftl_ns_table t = good_table (), out;
  uint8_t buf[FTL_NS_MAX_BYTES + 64], again[FTL_NS_MAX_BYTES];
  uint32_t len;

  memset (buf, 0xee, sizeof buf);
  len = encode (&t, &sb, buf);
  ck_assert_uint_eq (len, FTL_NS_HDR_BYTES + 3 * FTL_NS_ENTRY_BYTES);
  /* Exactly its length. */
  for (size_t i = len; i < sizeof buf; i++)
    ck_assert_uint_eq (buf[i], 0xee);
  ck_assert_int_eq (decode_checked (buf, len, &sb, &out, NULL, 0),
                    FTL_FMT_OK);
  ck_assert_uint_eq (out.count, 3);
  ck_assert_uint_eq (out.version, FTL_FORMAT_VERSION);
  for (int i = 0; i < 3; i++) {
    ck_assert_str_eq (out.ns[i].name, t.ns[i].name);
    ck_assert_uint_eq (out.ns[i].bytes, t.ns[i].bytes);
    ck_assert_uint_eq (out.ns[i].base, t.ns[i].base);
    ck_assert_uint_eq (out.ns[i].flags, 0);
  }
  ck_assert_uint_eq (fmt_ns_encode (&out, again), sb.ns_check);
  ck_assert_mem_eq (again, buf, len);

  /* The most it holds. */
  t.count = FTL_NS_MAX;
  for (unsigned i = 0; i < FTL_NS_MAX; i++) {
    snprintf (t.ns[i].name, sizeof t.ns[i].name, "ns%u", i);
    t.ns[i].bytes = 1 << 20;
    t.ns[i].base = (uint64_t) i * 256;
  }
  len = encode (&t, &sb, buf);
  ck_assert_uint_eq (len, FTL_NS_MAX_BYTES);
  ck_assert_int_eq (decode_checked (buf, len, &sb, &out, NULL, 0),
                    FTL_FMT_OK);
  ck_assert_str_eq (out.ns[FTL_NS_MAX - 1].name, "ns15");
}
END_TEST

START_TEST (test_table_rejects)
{
  struct ftl_superblock sb = good_sb ();
  struct ftl_ns_table t = good_table ();
  uint8_t good[FTL_NS_MAX_BYTES], buf[FTL_NS_MAX_BYTES];
  uint32_t len = encode (&t, &sb, good);
  char why[256];

  /* All zeros: never written. */
  memset (buf, 0, sizeof buf);
  ck_assert_int_eq (decode_checked (buf, len, &sb, NULL, NULL, 0),
                    FTL_FMT_EMPTY);
  /* Every byte flipped, each way. */
  for (size_t i = 0; i < len; i++)
    for (size_t m = 0; m < NMASKS; m++) {
      memcpy (buf, good, len);
      buf[i] ^= masks[m];
      ck_assert_msg (decode_checked (buf, len, &sb, NULL, NULL, 0)
                     != FTL_FMT_OK, "byte %zu ^ 0x%02x accepted", i,
                     masks[m]);
    }
  /* Cut short. */
  ck_assert_int_eq (decode_checked (good, len - 1, &sb, NULL, NULL, 0),
                    FTL_FMT_BAD_LENGTH);
  /* A table the superblock does not name: the other slot's, or one
   * torn while both were rewritten.
   */
  struct ftl_superblock other = sb;
  other.ns_check ^= 1;
  ck_assert_int_eq (decode_checked (good, len, &other, NULL, why,
                                    sizeof why), FTL_FMT_BAD_CHECKSUM);
  ck_assert_ptr_nonnull (strstr (why, "not the superblock's"));
  /* Bad magic, newer version: whatever the checksum says. */
  memcpy (buf, good, len);
  buf[0] ^= 1;
  reseal (buf, &sb);
  ck_assert_int_eq (decode_checked (buf, len, &sb, NULL, NULL, 0),
                    FTL_FMT_BAD_MAGIC);
  memcpy (buf, good, len);
  put32le (buf + 8, FTL_FORMAT_VERSION + 1);
  reseal (buf, &sb);
  ck_assert_int_eq (decode_checked (buf, len, &sb, NULL, NULL, 0),
                    FTL_FMT_BAD_VERSION);
  /* A count that the length does not match, none, or too many. */
  uint32_t counts[] = { 0, 2, 4, FTL_NS_MAX + 1 };
  for (size_t i = 0; i < sizeof counts / sizeof counts[0]; i++) {
    memcpy (buf, good, len);
    put32le (buf + 24, counts[i]);
    reseal (buf, &sb);
    ck_assert_int_eq (decode_checked (buf, len, &sb, NULL, NULL, 0),
                      FTL_FMT_BAD_LENGTH);
  }

  /* Fields out of range, each resealed. */
  static const char *const what[] = {
    "two namespaces named", "overlap", "not a positive multiple",
    "not a positive multiple", "beyond the logical size",
    "beyond the logical size", "beyond the logical size", "bad name",
    "bad name", "unknown flags",
  };
  for (size_t i = 0; i < sizeof what / sizeof what[0]; i++) {
    struct ftl_ns_table bad = good_table ();
    struct ftl_superblock s = good_sb ();
    switch (i) {
    case 0: strcpy (bad.ns[1].name, "alpha"); break;
    case 1: bad.ns[1].base = 4095; break;
    case 2: bad.ns[1].bytes = 4096 + 512; break;
    case 3: bad.ns[1].bytes = 0; break;
    case 4: bad.ns[2].base = 64 * 256; break;
    case 5: bad.ns[2].bytes = 8192; break;
    case 6: bad.ns[2].base = UINT64_MAX; break;
    case 7: strcpy (bad.ns[0].name, "a/b"); break;
    case 8: strcpy (bad.ns[0].name, "a b"); break;
    case 9: bad.ns[0].flags = 1; break;
    }
    len = encode (&bad, &s, buf);
    ck_assert_int_eq (decode_checked (buf, len, &s, NULL, why, sizeof why),
                      FTL_FMT_BAD_FIELD);
    ck_assert_msg (strstr (why, what[i]) != NULL,
                   "case %zu: '%s' does not say '%s'", i, why, what[i]);
  }
  /* A name's length: none, too long, or bytes after it. */
  uint32_t lens[] = { 0, FTL_NS_NAME_MAX + 1, 3 };
  for (size_t i = 0; i < 3; i++) {
    struct ftl_superblock s = good_sb ();
    len = encode (&t, &s, buf);
    uint8_t *e = buf + FTL_NS_HDR_BYTES;
    put32le (e + 20, lens[i]);
    reseal (buf, &s);
    ck_assert_int_eq (decode_checked (buf, len, &s, NULL, why, sizeof why),
                      FTL_FMT_BAD_FIELD);
    ck_assert_ptr_nonnull (strstr (why, "name length"));
  }
}
END_TEST

/* The superblock carries the check with the flag, from version 8 on;
 * bytes 140 to 143 stay zero without it.
 */
START_TEST (test_sb_names_table)
{
  struct ftl_superblock sb = good_sb (), out;
  uint8_t buf[FTL_SB_BYTES];
  char why[256];

  sb.flags |= FTL_SB_NAMESPACES;
  sb.ns_check = 0x89abcdef;
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &out, why, sizeof why),
                    FTL_FMT_OK);
  ck_assert_uint_eq (out.ns_check, 0x89abcdef);
  ck_assert_uint_eq (out.flags, FTL_SB_NAMESPACES);

  sb.version = 7;
  fmt_sb_encode (&sb, buf);
  ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &out, why, sizeof why),
                    FTL_FMT_BAD_FIELD);
  ck_assert_ptr_nonnull (strstr (why, "before format version 8"));

  sb = good_sb ();
  fmt_sb_encode (&sb, buf);
  put32le (buf + 140, 1);
  put64le (buf + 16, 0);
  put64le (buf + 16, fmt_checksum (buf, FTL_SB_BYTES, 0));
  ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &out, why, sizeof why),
                    FTL_FMT_BAD_FIELD);
  ck_assert_ptr_nonnull (strstr (why, "reserved bytes 140 to 143"));

  /* An image without a table: one namespace "", its whole size. */
  struct ftl_ns_table t;
  fmt_ns_default (&sb, &t);
  ck_assert_uint_eq (t.count, 1);
  ck_assert_str_eq (t.ns[0].name, "");
  ck_assert_uint_eq (t.ns[0].bytes, sb.logical_bytes);
  ck_assert_uint_eq (t.ns[0].base, 0);
}
END_TEST

static Suite *
ns_suite (void)
{
  Suite *s = suite_create ("namespaces");
  TCase *tc;

  tc = tcase_create ("table");
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_table_round_trip);
  tcase_add_test (tc, test_table_rejects);
  tcase_add_test (tc, test_sb_names_table);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (ns_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
