/* nbdkit-ftl: unit tests of namespaces: the table's encoding
 * (format.c, version 8) and the library's namespaces (host/ns.c).
 *
 * The table: a round trip keeps every entry and encodes back to its
 * bytes; the decoder rejects all zeros, every flipped byte, a wrong
 * magic, a newer version, a table its superblock does not name, and
 * (resealed, so that the checksum holds) every field out of range, and
 * leaves its output untouched when it rejects.  The superblock carries
 * the table's check only with the flag, from version 8.
 *
 * The library: an image made with namespaces opens with its table;
 * each namespace's requests stay inside it (a write at the end of one
 * never reads back in the next, a request past its end fails); an
 * image of version 7 opens as one namespace "" of the whole size, and
 * a table damaged in the newest superblock's slot leaves the other.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "format-test.h"
#include "helpers.h"

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

/* ---- the library ---- */

#define PS   4096
#define PPB  16

static const struct ftl_ns_spec three[] = {
  { "a", 1 << 20 }, { "bb", 2 << 20 }, { "c", 1 << 20 },
};

static struct ftl *
open_ns (const char *path, const struct ftl_ns_spec *ns, unsigned n,
         uint64_t size, char *err, size_t errlen, int *r)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = size, .page_size = PS,
    .pages_per_block = PPB, .op_percent = 50, .streams = 1,
    .namespaces = ns, .nnamespaces = n,
    .log = unit_log, .io = unit_nosync_io (),
  };
  struct ftl *ftl = NULL;

  *r = ftl_open (&o, &ftl, err, errlen);
  return ftl;
}

START_TEST (test_ns_requests)
{
  char path[256], err[512];
  struct ftl *ftl;
  struct ftl_ns *ns[3];
  struct ftl_ns_info in;
  uint8_t page[PS], got[PS], zero[PS];
  int r;

  unit_dir_create ();
  unit_path (path, sizeof path, "ns.img");
  ftl = open_ns (path, three, 3, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl_ns_count (ftl), 3);
  ck_assert_uint_eq (ftl->logical_bytes, 4 << 20);
  ck_assert (ftl->sb.flags & FTL_SB_NAMESPACES);
  for (int i = 0; i < 3; i++) {
    ns[i] = ftl_ns_open (ftl, three[i].name);
    ck_assert_ptr_eq (ns[i], ftl_ns_at (ftl, i));
    ftl_ns_get_info (ns[i], &in);
    ck_assert_str_eq (in.name, three[i].name);
    ck_assert_uint_eq (in.bytes, three[i].bytes);
  }
  ck_assert_ptr_null (ftl_ns_open (ftl, ""));
  ck_assert_ptr_null (ftl_ns_open (ftl, "b"));
  ck_assert_ptr_null (ftl_ns_at (ftl, 3));

  /* The last page of each and the first of the next: each its own. */
  memset (zero, 0, sizeof zero);
  for (int i = 0; i < 3; i++) {
    unit_fill_page (page, PS, 2 * i, 1);
    ck_assert_int_eq (ftl_ns_write (ns[i], page, PS, 0, 0), 0);
    unit_fill_page (page, PS, 2 * i + 1, 1);
    ck_assert_int_eq (ftl_ns_write (ns[i], page, PS, three[i].bytes - PS,
                                    0), 0);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);

  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl_ns_count (ftl), 3);
  uint64_t base = 0;
  for (int i = 0; i < 3; i++) {
    uint64_t lpn, v;
    ns[i] = ftl_ns_at (ftl, i);
    ftl_ns_get_info (ns[i], &in);
    ck_assert_str_eq (in.name, three[i].name);
    ck_assert_uint_eq (in.base, base);
    ck_assert_int_eq (ftl_ns_read (ns[i], got, PS, 0), 0);
    ck_assert_int_eq (unit_page_identify (got, PS, &lpn, &v), 1);
    ck_assert_uint_eq (lpn, 2 * i);
    ck_assert_int_eq (ftl_ns_read (ns[i], got, PS, three[i].bytes - PS), 0);
    ck_assert_int_eq (unit_page_identify (got, PS, &lpn, &v), 1);
    ck_assert_uint_eq (lpn, 2 * i + 1);
    /* The second page and the last but one were never written. */
    ck_assert_int_eq (ftl_ns_read (ns[i], got, PS, PS), 0);
    ck_assert_mem_eq (got, zero, PS);
    ck_assert_int_eq (ftl_ns_read (ns[i], got, PS, three[i].bytes - 2 * PS),
                      0);
    ck_assert_mem_eq (got, zero, PS);
    /* The device sees it at its base. */
    ck_assert_int_eq (ftl_read (ftl, got, PS, base), 0);
    ck_assert_int_eq (unit_page_identify (got, PS, &lpn, &v), 1);
    ck_assert_uint_eq (lpn, 2 * i);
    /* Nothing past its end, not a byte. */
    unit_quiet = true;
    ck_assert_int_eq (ftl_ns_read (ns[i], got, 1, three[i].bytes), -EINVAL);
    ck_assert_int_eq (ftl_ns_read (ns[i], got, PS, three[i].bytes - PS + 1),
                      -EINVAL);
    ck_assert_int_eq (ftl_ns_write (ns[i], got, 2, three[i].bytes - 1, 0),
                      -EINVAL);
    ck_assert_int_eq (ftl_ns_trim (ns[i], PS, three[i].bytes, 0), -EINVAL);
    ck_assert_int_eq (ftl_ns_zero (ns[i], 2 * PS, three[i].bytes - PS, 0),
                      -EINVAL);
    ck_assert_int_eq (ftl_ns_read (ns[i], got, UINT64_MAX, PS), -EINVAL);
    unit_quiet = false;
    base += three[i].bytes;
  }
  /* A trim and a zero of a whole namespace leave the others. */
  ck_assert_int_eq (ftl_ns_trim (ns[1], three[1].bytes, 0, 0), 0);
  ck_assert_int_eq (ftl_ns_read (ns[1], got, PS, 0), 0);
  ck_assert_mem_eq (got, zero, PS);
  ck_assert_int_eq (ftl_ns_zero (ns[0], three[0].bytes, 0, 0), 0);
  ck_assert_int_eq (ftl_ns_read (ns[0], got, PS, three[0].bytes - PS), 0);
  ck_assert_mem_eq (got, zero, PS);
  {
    uint64_t lpn, v;
    ck_assert_int_eq (ftl_ns_read (ns[2], got, PS, 0), 0);
    ck_assert_int_eq (unit_page_identify (got, PS, &lpn, &v), 1);
    ck_assert_uint_eq (lpn, 4);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_dir_remove ();
}
END_TEST

/* Extents are reported in the namespace's offsets. */
struct runs { unsigned n; uint64_t off[8], len[8]; bool hole[8]; };

static int
note_run (void *opaque, uint64_t offset, uint64_t length, bool hole)
{
  struct runs *r = opaque;
  if (r->n < 8) {
    r->off[r->n] = offset;
    r->len[r->n] = length;
    r->hole[r->n] = hole;
  }
  r->n++;
  return 0;
}

START_TEST (test_ns_extents)
{
  char path[256], err[512];
  struct ftl *ftl;
  struct runs runs = { 0 };
  uint8_t page[PS];
  int r;

  unit_dir_create ();
  unit_path (path, sizeof path, "ns.img");
  ftl = open_ns (path, three, 3, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  unit_fill_page (page, PS, 9, 1);
  ck_assert_int_eq (ftl_ns_write (ftl_ns_at (ftl, 1), page, PS, 2 * PS, 0),
                    0);
  ck_assert_int_eq (ftl_ns_extents (ftl_ns_at (ftl, 1), three[1].bytes, 0,
                                    note_run, &runs), 0);
  ck_assert_uint_eq (runs.n, 3);
  ck_assert (runs.hole[0] && !runs.hole[1] && runs.hole[2]);
  ck_assert_uint_eq (runs.off[0], 0);
  ck_assert_uint_eq (runs.off[1], 2 * PS);
  ck_assert_uint_eq (runs.len[1], PS);
  ck_assert_uint_eq (runs.off[2] + runs.len[2], three[1].bytes);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_dir_remove ();
}
END_TEST

/* What creation refuses, and an open that names other namespaces. */
START_TEST (test_ns_refused)
{
  char path[256], err[512];
  struct ftl *ftl;
  int r;

  unit_dir_create ();
  unit_path (path, sizeof path, "ns.img");
  unit_quiet = true;
  const struct ftl_ns_spec odd[] = { { "a", 4096 + 512 } };
  ftl = open_ns (path, odd, 1, 0, err, sizeof err, &r);
  ck_assert_int_eq (r, -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "not a positive multiple of the page "
                                 "size (4096)"));
  ftl = open_ns (path, three, 3, 3 << 20, err, sizeof err, &r);
  ck_assert_int_eq (r, -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "3145728 bytes (3 MiB) available"));
  const struct ftl_ns_spec dup[] = { { "a", 1 << 20 }, { "a", 1 << 20 } };
  ftl = open_ns (path, dup, 2, 0, err, sizeof err, &r);
  ck_assert_int_eq (r, -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "two namespaces named 'a'"));
  const struct ftl_ns_spec bad[] = { { "a:b", 1 << 20 } };
  ftl = open_ns (path, bad, 1, 0, err, sizeof err, &r);
  ck_assert_int_eq (r, -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "bad name 'a:b'"));
  ck_assert_int_eq (access (path, F_OK), -1);

  /* size= larger than the namespaces: the rest is free. */
  ftl = open_ns (path, three, 3, 8 << 20, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl->logical_bytes, 8 << 20);
  ck_assert_int_eq (ftl_close (ftl), 0);
  /* The same table is welcome, another is not (a size changed, one
   * missing, another order), and the image is as it was.
   */
  ftl = open_ns (path, three, 3, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_int_eq (ftl_close (ftl), 0);
  const struct ftl_ns_spec grown[] = {
    { "a", 1 << 20 }, { "bb", 3 << 20 }, { "c", 1 << 20 },
  };
  const struct ftl_ns_spec order[] = {
    { "bb", 2 << 20 }, { "a", 1 << 20 }, { "c", 1 << 20 },
  };
  ftl = open_ns (path, grown, 3, 0, err, sizeof err, &r);
  ck_assert_int_eq (r, -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "namespaces=a:1M,bb:3M,c:1M differs "
                                 "from the image's namespaces "
                                 "a:1M,bb:2M,c:1M"));
  ftl = open_ns (path, three, 2, 0, err, sizeof err, &r);
  ck_assert_int_eq (r, -EINVAL);
  ftl = open_ns (path, order, 3, 0, err, sizeof err, &r);
  ck_assert_int_eq (r, -EINVAL);
  unit_quiet = false;
  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl_ns_count (ftl), 3);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_dir_remove ();
}
END_TEST

/* Rewrite both superblocks of a closed image as version 7 (an image
 * made before namespaces).
 */
static void
make_version_7 (const char *path)
{
  uint8_t buf[FTL_SB_BYTES];
  struct ftl_superblock sb;
  int fd = open (path, O_RDWR);

  ck_assert_int_ge (fd, 0);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq (pread (fd, buf, sizeof buf, i * FTL_SB_SLOT),
                      (ssize_t) sizeof buf);
    ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &sb, NULL, 0),
                      FTL_FMT_OK);
    ck_assert (!(sb.flags & FTL_SB_NAMESPACES));
    sb.version = 7;
    fmt_sb_encode (&sb, buf);
    ck_assert_int_eq (pwrite (fd, buf, sizeof buf, i * FTL_SB_SLOT),
                      (ssize_t) sizeof buf);
  }
  close (fd);
}

START_TEST (test_ns_old_image)
{
  char path[256], err[512];
  struct ftl *ftl;
  struct ftl_ns_info in;
  uint8_t page[PS], got[PS];
  int r;

  unit_dir_create ();
  unit_path (path, sizeof path, "old.img");
  ftl = open_ns (path, NULL, 0, 3 << 20, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert (!(ftl->sb.flags & FTL_SB_NAMESPACES));
  unit_fill_page (page, PS, 7, 1);
  ck_assert_int_eq (ftl_write (ftl, page, PS, (3 << 20) - PS, 0), 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
  make_version_7 (path);

  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl->sb.version, FTL_FORMAT_VERSION);
  ck_assert_uint_eq (ftl_ns_count (ftl), 1);
  ck_assert_ptr_eq (ftl_ns_open (ftl, ""), ftl_ns_at (ftl, 0));
  ftl_ns_get_info (ftl_ns_at (ftl, 0), &in);
  ck_assert_str_eq (in.name, "");
  ck_assert_uint_eq (in.bytes, 3 << 20);
  ck_assert_uint_eq (in.base, 0);
  ck_assert_int_eq (ftl_ns_read (ftl_ns_at (ftl, 0), got, PS,
                                 (3 << 20) - PS), 0);
  ck_assert_mem_eq (got, page, PS);
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* namespaces= for it must be its one: "" cannot be given. */
  unit_quiet = true;
  const struct ftl_ns_spec one[] = { { "a", 3 << 20 } };
  ftl = open_ns (path, one, 1, 0, err, sizeof err, &r);
  ck_assert_int_eq (r, -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "differs from the image's namespaces "
                                 "'':3M"));
  unit_quiet = false;
  unit_dir_remove ();
}
END_TEST

/* A table damaged in the newest superblock's slot: that copy is not
 * valid, the other one opens.
 */
START_TEST (test_ns_damaged_table)
{
  char path[256], err[512];
  struct ftl *ftl;
  uint8_t buf[FTL_SB_SLOT];
  struct ftl_superblock sb[2];
  int r;

  unit_dir_create ();
  unit_path (path, sizeof path, "ns.img");
  ftl = open_ns (path, three, 3, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_int_eq (ftl_close (ftl), 0);
  for (int i = 0; i < 2; i++) {
    unit_read_file (path, buf, sizeof buf, i * FTL_SB_SLOT);
    ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &sb[i], NULL, 0),
                      FTL_FMT_OK);
  }
  int newest = sb[1].generation > sb[0].generation;
  unit_flip_byte (path, newest * FTL_SB_SLOT + FTL_NS_OFFSET
                  + FTL_NS_HDR_BYTES + 24, 0x01);
  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl_ns_count (ftl), 3);
  ck_assert_str_eq (ftl->ns_table.ns[0].name, "a");
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* The open and the close rewrote both slots, tables too: healed. */
  for (int i = 0; i < 2; i++) {
    struct ftl_ns_table t;
    unit_read_file (path, buf, sizeof buf, i * FTL_SB_SLOT);
    ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &sb[i], NULL, 0),
                      FTL_FMT_OK);
    ck_assert_int_eq (fmt_ns_decode (buf + FTL_NS_OFFSET,
                                     sizeof buf - FTL_NS_OFFSET, &sb[i], &t,
                                     NULL, 0), FTL_FMT_OK);
    ck_assert_uint_eq (t.count, 3);
  }

  /* Both damaged: refused, saying why. */
  for (int i = 0; i < 2; i++)
    unit_flip_byte (path, i * FTL_SB_SLOT + FTL_NS_OFFSET + 40, 0x01);
  unit_quiet = true;
  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  unit_quiet = false;
  ck_assert_int_eq (r, -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "both superblock copies are damaged"));
  unit_dir_remove ();
}
END_TEST

/* ---- management at rest (mngt/nsadmin.c) ---- */

/* Every page of namespace name written with version v (its device
 * logical page in the pattern), or checked: each page as written with
 * v, or zeros where zero_ok (a namespace whose delete was cut short),
 * or all zeros for v == 0.  Returns the pages that read as data.
 */
static unsigned
ns_pages (struct ftl *ftl, const char *name, uint64_t v, bool write,
          bool zero_ok, const char *what)
{
  struct ftl_ns *ns = ftl_ns_open (ftl, name);
  struct ftl_ns_info in;
  uint8_t page[PS], got[PS];
  unsigned data = 0;

  ck_assert_msg (ns != NULL, "%s: no namespace '%s'", what, name);
  ftl_ns_get_info (ns, &in);
  for (uint64_t off = 0; off < in.bytes; off += PS) {
    uint64_t lpn, ver;
    unit_fill_page (page, PS, (in.base + off) / PS, v ? v : 1);
    if (write) {
      ck_assert_int_eq (ftl_ns_write (ns, page, PS, off, 0), 0);
      continue;
    }
    ck_assert_int_eq (ftl_ns_read (ns, got, PS, off), 0);
    int k = unit_page_identify (got, PS, &lpn, &ver);
    if (k == 0 && (v == 0 || zero_ok))
      continue;
    ck_assert_msg (v != 0 && k == 1 && lpn == (in.base + off) / PS &&
                   ver == v, "%s: namespace '%s', byte %" PRIu64 ": not "
                   "its data (identify %d, page %" PRIu64 ", version %"
                   PRIu64 ")", what, name, off, k, lpn, ver);
    data++;
  }
  return data;
}

/* The table's names, in order, comma-separated. */
static const char *
ns_names (struct ftl *ftl, char *buf, size_t len)
{
  struct ftl_ns_info in;

  buf[0] = '\0';
  for (unsigned i = 0; i < ftl_ns_count (ftl); i++) {
    ftl_ns_get_info (ftl_ns_at (ftl, i), &in);
    snprintf (buf + strlen (buf), len - strlen (buf), "%s%s", i ? "," : "",
              in.name);
  }
  return buf;
}

static uint64_t
ns_base (struct ftl *ftl, const char *name)
{
  struct ftl_ns_info in;

  ftl_ns_get_info (ftl_ns_open (ftl, name), &in);
  return in.base;
}

/* Add and delete: where each goes, what it reads, the others kept, and
 * everything refused with its reason, on a read-only handle too, the
 * image unchanged.
 */
START_TEST (test_ns_admin)
{
  char path[256], err[512], names[256];
  struct ftl *ftl;
  int r;

  unit_dir_create ();
  unit_path (path, sizeof path, "ns.img");
  /* a [0, 1M), bb [1M, 3M), c [3M, 4M), free [4M, 8M). */
  ftl = open_ns (path, three, 3, 8 << 20, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  for (int i = 0; i < 3; i++)
    ns_pages (ftl, three[i].name, 1, true, false, "fill");

  /* Added in the free range after the last one, reading zeros. */
  ck_assert_int_eq (ftl_ns_create (ftl, "d", 2 << 20, err, sizeof err), 0);
  ck_assert_str_eq (ns_names (ftl, names, sizeof names), "a,bb,c,d");
  ck_assert_uint_eq (ns_base (ftl, "d"), 4 << 20);
  ns_pages (ftl, "d", 0, false, false, "new d");
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* Deleted: its pages trimmed, the others as they were; the range it
   * leaves takes the next one that fits, which reads zeros.
   */
  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_str_eq (ns_names (ftl, names, sizeof names), "a,bb,c,d");
  ck_assert_int_eq (ftl_ns_delete (ftl, "bb", err, sizeof err), 0);
  ck_assert_str_eq (ns_names (ftl, names, sizeof names), "a,c,d");
  ck_assert_ptr_null (ftl_ns_open (ftl, "bb"));
  uint8_t got[PS], zero[PS] = { 0 };
  for (uint64_t off = 1 << 20; off < 3 << 20; off += PS) {
    ck_assert_int_eq (ftl_read (ftl, got, PS, off), 0);
    ck_assert_mem_eq (got, zero, PS);
  }
  ck_assert_int_eq (ftl_ns_create (ftl, "e", 1 << 20, err, sizeof err), 0);
  ck_assert_uint_eq (ns_base (ftl, "e"), 1 << 20);
  ns_pages (ftl, "e", 0, false, false, "new e");
  ns_pages (ftl, "e", 2, true, false, "fill e");
  ck_assert_int_eq (ftl_close (ftl), 0);

  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_str_eq (ns_names (ftl, names, sizeof names), "a,c,d,e");
  ns_pages (ftl, "a", 1, false, false, "a");
  ns_pages (ftl, "c", 1, false, false, "c");
  ns_pages (ftl, "d", 0, false, false, "d");
  ns_pages (ftl, "e", 2, false, false, "e");
  /* The first is the default: deleting it makes c the default. */
  ck_assert_int_eq (ftl_ns_delete (ftl, "a", err, sizeof err), 0);
  ck_assert_str_eq (ns_names (ftl, names, sizeof names), "c,d,e");
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* Refused, each with its reason: on the writable handle, and on a
   * read-only one, where a change that would be made is -EROFS.
   */
  static const struct {
    bool add;
    const char *name;
    uint64_t bytes;
    int r;
    const char *why;
  } bad[] = {
    { true, "c", 1 << 20, -EEXIST, "a namespace named 'c' exists, of that "
      "size (1 MiB)" },
    { true, "c", 2 << 20, -EEXIST, "a namespace named 'c' exists, of 1 MiB: "
      "the size of a namespace does not change (2 MiB asked" },
    { true, "x/y", 1 << 20, -EINVAL, "bad namespace name 'x/y' (1 to 63 "
      "characters of A-Z a-z 0-9 . _ -)" },
    { true, "", 1 << 20, -EINVAL, "bad namespace name ''" },
    { true, "f", 1000, -EINVAL, "namespace 'f': size 1000 is not a positive "
      "multiple of the page size (4096)" },
    { true, "f", 0, -EINVAL, "size 0 is not a positive" },
    { true, "f", 3 << 20, -ENOSPC, "namespace 'f' of 3 MiB does not fit: the "
      "image's logical capacity is 8 MiB, its namespaces take 4 MiB, the "
      "largest free range is 2 MiB" },
    { true, "f", UINT64_MAX / PS * PS, -ENOSPC, "does not fit" },
    { false, "zz", 0, -ENOENT, "no namespace named 'zz' (the image's "
      "namespaces: c, d, e)" },
    { true, "f", 2 << 20, 0, NULL },
    { false, "d", 0, 0, NULL },
  };
  for (int ro = 0; ro < 2; ro++) {
    struct ftl_options o = {
      .path = path, .readonly = ro, .log = unit_log, .io = unit_nosync_io (),
    };
    ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
      if (bad[i].r == 0 && !ro)
        continue;
      err[0] = '\0';
      r = bad[i].add ? ftl_ns_create (ftl, bad[i].name, bad[i].bytes, err,
                                      sizeof err)
        : ftl_ns_delete (ftl, bad[i].name, err, sizeof err);
      ck_assert_msg (r == (bad[i].r ? bad[i].r : -EROFS), "case %zu%s: %d "
                     "(%s)", i, ro ? " read-only" : "", r, err);
      const char *why = bad[i].why ? bad[i].why : "open read-only";
      ck_assert_msg (strstr (err, why) != NULL, "case %zu: '%s' does not "
                     "say '%s'", i, err, why);
      ck_assert_str_eq (ns_names (ftl, names, sizeof names), "c,d,e");
    }
    ck_assert_int_eq (ftl_close (ftl), 0);
  }
  /* The last one stays. */
  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_int_eq (ftl_ns_delete (ftl, "d", err, sizeof err), 0);
  ck_assert_int_eq (ftl_ns_delete (ftl, "e", err, sizeof err), 0);
  ck_assert_int_eq (ftl_ns_delete (ftl, "c", err, sizeof err), -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "namespace 'c' is the image's only "
                                 "one: an image keeps at least one"));
  /* Up to 16. */
  for (int i = 1; i < FTL_NS_MAX; i++) {
    char n[8];
    snprintf (n, sizeof n, "n%d", i);
    ck_assert_int_eq (ftl_ns_create (ftl, n, PS, err, sizeof err), 0);
  }
  ck_assert_int_eq (ftl_ns_create (ftl, "n16", PS, err, sizeof err),
                    -ENOSPC);
  ck_assert_ptr_nonnull (strstr (err, "the image has 16 namespaces, the "
                                 "most it can hold"));
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_uint_eq (ftl_ns_count (ftl), FTL_NS_MAX);
  ns_pages (ftl, "c", 1, false, false, "c at the end");
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* An image made without namespaces: its one takes it all. */
  unit_path (path, sizeof path, "one.img");
  ftl = open_ns (path, NULL, 0, 4 << 20, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_int_eq (ftl_ns_create (ftl, "a", PS, err, sizeof err), -ENOSPC);
  ck_assert_ptr_nonnull (strstr (err, "the largest free range is 0 bytes "
                                 "(made without namespaces=, the image has "
                                 "one, '', of its whole size)"));
  ck_assert_int_eq (ftl_ns_delete (ftl, "", err, sizeof err), -EINVAL);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_dir_remove ();
}
END_TEST

/* ---- a power cut while the table changes ---- */

/* The crash test's image: a [0, 64K), bb [64K, 192K), c [192K, 256K)
 * of 2 MiB; the run deletes bb and adds d of 128K, which takes bb's
 * range.
 */
static const struct ftl_ns_spec small[] = {
  { "a", 64 << 10 }, { "bb", 128 << 10 }, { "c", 64 << 10 },
};

/* The image left by a cut: it opens, its table is one of the three the
 * run went through (old, after the delete, after the add), and no later
 * than the calls that had returned allow (done: 0 none, 1 the delete,
 * 2 both); a and c hold their data, bb (if listed) its data or zeros,
 * d (if listed) zeros.  Returns the table's index.
 */
static int
check_cut (const char *path, int done, const char *what)
{
  static const char *const tables[] = { "a,bb,c", "a,c", "a,c,d" };
  char err[512], names[256];
  struct ftl *ftl;
  int r, k;

  ftl = open_ns (path, NULL, 0, 0, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s: the image does not open: %s", what, err);
  ns_names (ftl, names, sizeof names);
  for (k = 0; k < 3 && strcmp (names, tables[k]) != 0; k++)
    ;
  ck_assert_msg (k < 3, "%s: namespaces %s", what, names);
  ck_assert_msg (k >= done, "%s: namespaces %s, after %d of the changes "
                 "returned", what, names, done);
  ns_pages (ftl, "a", 1, false, false, what);
  ns_pages (ftl, "c", 1, false, false, what);
  if (k == 0)
    ns_pages (ftl, "bb", 1, false, true, what);
  if (k == 2) {
    ck_assert_uint_eq (ns_base (ftl, "d"), 64 << 10);
    ns_pages (ftl, "d", 0, false, false, what);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
  return k;
}

/* Delete bb and add d on the image at path through io; done says
 * which returned 0.
 */
static void
ns_change_run (const char *path, const struct ftl_io *io, int *done)
{
  struct ftl_options o = {
    .path = path, .log = unit_log, .io = io,
  };
  char err[512];
  struct ftl *ftl;

  *done = 0;
  if (ftl_open (&o, &ftl, err, sizeof err) < 0)
    return;
  if (ftl_ns_delete (ftl, "bb", err, sizeof err) == 0) {
    *done = 1;
    if (ftl_ns_create (ftl, "d", 128 << 10, err, sizeof err) == 0)
      *done = 2;
  }
  /* A process whose storage failed under a request is killed: what
   * the failed request left in memory (trim records that found no
   * page) is not written, as the self-check would refuse at a close.
   */
  if (*done == 2)
    ftl_close (ftl);            /* fails once the storage does */
  else
    open_abandon (ftl);
}

/* The table changes (a delete, then an add) are recorded, and the
 * power is cut at every event of theirs, four ways (helpers.h: in
 * order, none, a random subset, random sectors), and the storage made
 * to fail from every event on: each image left opens with the old
 * table or the new one, and every namespace's data as it should be.
 */
START_TEST (test_ns_admin_crash)
{
  static const enum unit_cut_mode modes[] = {
    UNIT_CUT_ORDER, UNIT_CUT_NONE, UNIT_CUT_RANDOM, UNIT_CUT_SECTORS,
  };
  char base[256], path[256], cut[256], err[512], what[256];
  struct unit_fault rec, f;
  struct unit_disk d;
  struct ftl *ftl;
  size_t done_at[3] = { 0 };
  unsigned seen[3] = { 0 }, cuts = 0;
  uint64_t rng = 20261208;
  int r, done;

  unit_dir_create ();
  unit_path (base, sizeof base, "base.img");
  unit_path (path, sizeof path, "run.img");
  unit_path (cut, sizeof cut, "cut.img");
  ftl = open_ns (base, small, 3, 2 << 20, err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  for (int i = 0; i < 3; i++)
    ns_pages (ftl, small[i].name, 1, true, false, "fill");
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* The run, recorded; when each change returned. */
  unit_copy_file (base, path);
  unit_fault_init (&rec);
  {
    struct ftl_options o = { .path = path, .log = unit_log, .io = &rec.io };
    ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
    done_at[0] = rec.n;
    ck_assert_int_eq (ftl_ns_delete (ftl, "bb", err, sizeof err), 0);
    done_at[1] = rec.n;
    ck_assert_int_eq (ftl_ns_create (ftl, "d", 128 << 10, err, sizeof err),
                      0);
    done_at[2] = rec.n;
    ck_assert_int_eq (ftl_close (ftl), 0);
  }
  unit_disk_init (&d, &rec, base);
  for (size_t n = done_at[0]; n <= rec.n; n++)
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
      struct unit_cut_info info;
      int k;
      unit_disk_cut (&d, n, modes[i], &rng, cut, &info);
      snprintf (what, sizeof what, "cut at event %zu of %zu, mode %zu", n,
                rec.n, i);
      k = check_cut (cut, n >= done_at[2] ? 2 : n >= done_at[1] ? 1 : 0,
                     what);
      seen[k]++;
      cuts++;
    }
  unit_disk_free (&d);

  /* The storage fails from event k on (EIO): the calls fail from there,
   * and what they leave is as a cut's.
   */
  unit_quiet = true;
  unit_fault_init (&f);
  for (size_t k = done_at[0]; k <= rec.n; k++) {
    unit_copy_file (base, path);
    unit_fault_reset (&f);
    f.limit = k;
    ns_change_run (path, &f.io, &done);
    snprintf (what, sizeof what, "the storage failed from event %zu of %zu "
              "on", k, rec.n);
    unit_quiet = false;
    check_cut (path, done, what);
    unit_quiet = true;
  }
  unit_quiet = false;
  printf ("namespace table changes: %zu events (open %zu, delete %zu, add "
          "%zu, close %zu), %u cuts: old table %u, after the delete %u, "
          "after the add %u\n", rec.n, done_at[0], done_at[1] - done_at[0],
          done_at[2] - done_at[1], rec.n - done_at[2], cuts, seen[0],
          seen[1], seen[2]);
  unit_fault_free (&f);
  unit_fault_free (&rec);
  ck_assert_uint_gt (seen[0], 0);
  ck_assert_uint_gt (seen[1], 0);
  ck_assert_uint_gt (seen[2], 0);
  unit_dir_remove ();
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

  tc = tcase_create ("library");
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_ns_requests);
  tcase_add_test (tc, test_ns_extents);
  tcase_add_test (tc, test_ns_refused);
  tcase_add_test (tc, test_ns_old_image);
  tcase_add_test (tc, test_ns_damaged_table);
  suite_add_tcase (s, tc);

  tc = tcase_create ("management");
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_ns_admin);
  tcase_add_test (tc, test_ns_admin_crash);
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
