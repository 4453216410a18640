/* nbdkit-ftl: unit tests of errmodel.c and of what it keeps in the
 * image: the draws are deterministic and grow with the rates; program
 * times, the media clock and the added cycles survive a restart; a
 * version 1 image (no program times) opens, reads, and becomes version
 * 2 when opened read-write; an uncorrectable page fails the read and
 * a rewrite heals it.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"

#define PS 4096
#define PPB 16

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "em.img");
}

static struct ftl *
open_errors (const struct ftl_errors *e, bool create)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = create ? 1024 * 1024 : 0,
    .page_size = create ? PS : 0, .pages_per_block = create ? PPB : 0,
    .op_percent = create ? 100 : 0, .log = unit_log,
    .io = unit_nosync_io (),
  };
  struct ftl *ftl;
  char err[256];

  if (e)
    o.errors = *e;
  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  return ftl;
}

static void
write_pages (struct ftl *ftl, uint64_t n, uint64_t version)
{
  uint8_t page[PS];
  for (uint64_t lpn = 0; lpn < n; lpn++) {
    unit_fill_page (page, PS, lpn, version);
    ck_assert_int_eq (ftl_write (ftl, page, PS, lpn * PS, 0), 0);
  }
  ck_assert_int_eq (ftl_flush (ftl), 0);
}

/* The same inputs draw the same outcome; higher rates never fewer
 * errors or fewer steps (a fixed uniform, a larger mean).
 */
START_TEST (test_draws)
{
  struct ftl_errors o = { .enabled = true, .seed = 42 };
  struct errmodel em;
  struct em_outcome a, b;

  ck_assert_int_eq (errmodel_init (&em, &o, 4, PS, 0), 0);
  ck_assert_uint_eq (em.codewords, 4);
  for (int i = 0; i < 200; i++) {
    struct em_rates r1 = { 2e-4 * (i % 10 + 1), 1e-4 * (i % 13) };
    struct em_rates r2 = { r1.base * 1.5, r1.shift * 1.5 };
    errmodel_draw (&em, &r1, i, 3, i * 7, &a);
    errmodel_draw (&em, &r1, i, 3, i * 7, &b);
    ck_assert (a.ok == b.ok && a.steps == b.steps && a.bits == b.bits);
    errmodel_draw (&em, &r2, i, 3, i * 7, &b);
    ck_assert_uint_ge (b.steps, a.steps);
    if (b.steps == a.steps && a.ok && b.ok)
      ck_assert_uint_ge (b.bits, a.bits);
  }
  /* Far past ECC's limit: uncorrectable after every step. */
  struct em_rates bad = { 0.05, 0.0 };
  errmodel_draw (&em, &bad, 1, 1, 1, &a);
  ck_assert (!a.ok);
  ck_assert_uint_eq (a.steps, em.steps);
  /* A shift that retries recover. */
  struct em_rates shifted = { 1e-4, 2e-2 };
  errmodel_draw (&em, &shifted, 1, 1, 1, &a);
  ck_assert (a.ok);
  ck_assert_uint_gt (a.steps, 0);
  errmodel_free (&em);
}
END_TEST

/* Program hours, the clock's skew and the added cycles are in the
 * checkpoint.
 */
START_TEST (test_persist)
{
  struct ftl *ftl = open_errors (NULL, true);
  uint32_t hour[64];
  int64_t skew;

  write_pages (ftl, 40, 1);
  ck_assert_int_eq (ftl_age (ftl, 10 * 86400, 500), 0);
  skew = errmodel_skew (&ftl->em);
  ck_assert_int_ge (skew, 10 * 86400);
  for (uint32_t b = 0; b < ftl->blocks && b < 64; b++) {
    hour[b] = errmodel_program_hour (&ftl->em, b);
    ck_assert ((hour[b] != 0) == (ftl->media.wp[b] != 0));
  }
  ck_assert_int_eq (ftl_close (ftl), 0);

  ftl = open_errors (NULL, false);
  ck_assert_uint_eq (ftl->em.pe_offset, 500);
  ck_assert_int_ge (errmodel_skew (&ftl->em), skew - 1);
  ck_assert_int_le (errmodel_skew (&ftl->em), skew + 1);
  for (uint32_t b = 0; b < ftl->blocks && b < 64; b++)
    ck_assert_uint_eq (errmodel_program_hour (&ftl->em, b), hour[b]);
  /* A handle opened read-only cannot age the image. */
  ck_assert_int_eq (ftl_close (ftl), 0);
  struct ftl_options ro = { .path = path, .readonly = true,
                            .log = unit_log };
  char err[256];
  ck_assert_int_eq (ftl_open (&ro, &ftl, err, sizeof err), 0);
  ck_assert_int_eq (ftl_age (ftl, 1, 0), -EROFS);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* Make the image a version 1 image: the layout of before version 4,
 * superblocks and checkpoints say version 1, block entries have no
 * program hours, the header no clock.
 */
static void
downgrade (void)
{
  unit_make_interleaved (path, 1);

  int fd = open (path, O_RDWR);
  uint8_t buf[FTL_SB_SLOT];
  struct ftl_superblock sb;

  ck_assert_int_ge (fd, 0);
  for (int s = 0; s < 2; s++) {
    ck_assert_int_eq (pread (fd, buf, FTL_SB_BYTES, s * FTL_SB_SLOT),
                      FTL_SB_BYTES);
    if (fmt_sb_decode (buf, FTL_SB_BYTES, &sb, NULL, 0) != FTL_FMT_OK)
      continue;
    sb.version = 1;
    fmt_sb_encode (&sb, buf);
    ck_assert_int_eq (pwrite (fd, buf, FTL_SB_BYTES, s * FTL_SB_SLOT),
                      FTL_SB_BYTES);
  }
  for (int s = 0; s < 2; s++) {
    uint8_t *ck = malloc (sb.ckpt_bytes);
    struct ftl_ckpt_header h;
    ck_assert_ptr_nonnull (ck);
    ck_assert_int_eq (pread (fd, ck, sb.ckpt_bytes, sb.ckpt_offset[s]),
                      (ssize_t) sb.ckpt_bytes);
    if (fmt_ckpt_header_decode (ck, FTL_CKPT_HDR_BYTES, &h) == FTL_FMT_OK) {
      uint8_t *body = ck + FTL_CKPT_HDR_BYTES;
      /* Map entries as before version 5: the PPN, not inverted. */
      for (uint64_t l = 0; l < h.logical_pages; l++) {
        uint8_t *e = body + l * FTL_CKPT_MAP_ENTRY_BYTES;
        uint32_t ppn = fmt_ckpt_map_decode (e, h.version);
        for (int i = 0; i < 4; i++)
          e[i] = ppn >> (8 * i);
      }
      for (uint32_t b = 0; b < h.blocks; b++) {
        uint8_t *e = body + fmt_ckpt_block_offset (h.logical_pages, b);
        struct ftl_ckpt_block cb;
        fmt_ckpt_block_decode (e, &cb);
        cb.program_hour = 0;
        fmt_ckpt_block_encode (&cb, e);
      }
      h.version = 1;
      h.clock_skew = 0;
      h.pe_offset = 0;
      h.body_checksum = fmt_checksum (body, h.body_bytes, 0);
      fmt_ckpt_header_encode (&h, ck);
      ck_assert_int_eq (pwrite (fd, ck, sb.ckpt_bytes, sb.ckpt_offset[s]),
                        (ssize_t) sb.ckpt_bytes);
    }
    free (ck);
  }
  close (fd);
}

static uint32_t
sb_version (void)
{
  struct ftl_superblock sb;
  uint8_t buf[FTL_SB_BYTES];
  uint32_t v = 0;
  int fd = open (path, O_RDONLY);

  for (int s = 0; s < 2; s++) {
    ck_assert_int_eq (pread (fd, buf, sizeof buf, s * FTL_SB_SLOT),
                      FTL_SB_BYTES);
    if (fmt_sb_decode (buf, sizeof buf, &sb, NULL, 0) == FTL_FMT_OK)
      v = v ? MIN (v, sb.version) : sb.version;
  }
  close (fd);
  return v;
}

START_TEST (test_version_1)
{
  struct ftl *ftl = open_errors (NULL, true);
  uint8_t page[PS];
  uint64_t lpn, v;

  write_pages (ftl, 40, 3);
  ck_assert_int_eq (ftl_close (ftl), 0);
  downgrade ();
  ck_assert_uint_eq (sb_version (), 1);

  /* Read-only: nothing written, every page there. */
  struct ftl_options ro = { .path = path, .readonly = true,
                            .log = unit_log };
  char err[256];
  ck_assert_int_eq (ftl_open (&ro, &ftl, err, sizeof err), 0);
  ck_assert_int_eq (ftl_read (ftl, page, PS, 7 * PS), 0);
  ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &v), 1);
  ck_assert_uint_eq (lpn, 7);
  ck_assert_uint_eq (v, 3);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ck_assert_uint_eq (sb_version (), 1);

  /* Read-write: the blocks' program times are the open's; both
   * superblock copies say the current version after the clean close.
   */
  ftl = open_errors (NULL, false);
  ck_assert_uint_eq (ftl->media.meta_offset, 0);  /* its layout stays */
  for (uint32_t b = 0; b < ftl->blocks; b++)
    ck_assert ((errmodel_program_hour (&ftl->em, b) != 0)
               == (ftl->media.wp[b] != 0));
  for (lpn = 0; lpn < 40; lpn++) {
    uint64_t l;
    ck_assert_int_eq (ftl_read (ftl, page, PS, lpn * PS), 0);
    ck_assert_int_eq (unit_page_identify (page, PS, &l, &v), 1);
    ck_assert_uint_eq (l, lpn);
    ck_assert_uint_eq (v, 3);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
  ck_assert_uint_eq (sb_version (), FTL_FORMAT_VERSION);
}
END_TEST

/* Old, worn data fails with -EIO (never other data) and counts; a
 * rewrite heals it.
 */
START_TEST (test_uncorrectable)
{
  struct ftl_errors e = { .enabled = true, .seed = 5, .no_reclaim = true,
                          .scrub_ns = UINT64_MAX };
  struct ftl *ftl = open_errors (&e, true);
  struct ftl_stats st;
  uint8_t page[PS];
  unsigned failed = 0;
  uint64_t lpn, v;

  write_pages (ftl, 64, 1);
  ck_assert_int_eq (ftl_age (ftl, 5 * 365 * 86400, 3000), 0);
  unit_quiet = true;
  for (uint64_t n = 0; n < 64; n++) {
    memset (page, 0xee, PS);
    int r = ftl_read (ftl, page, PS, n * PS);
    if (r == -EIO)
      failed++;
    else {
      ck_assert_int_eq (r, 0);
      ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &v), 1);
      ck_assert_uint_eq (lpn, n);
    }
  }
  unit_quiet = false;
  ck_assert_uint_gt (failed, 32);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.media_uncorrectable, failed);
  ck_assert_uint_eq (st.health.media_errors, failed);
  ck_assert (st.health.critical_warning & FTL_CW_DEGRADED);
  ck_assert_uint_gt (st.media_read_retries, 0);

  write_pages (ftl, 64, 2);
  for (uint64_t n = 0; n < 64; n++) {
    ck_assert_int_eq (ftl_read (ftl, page, PS, n * PS), 0);
    ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &v), 1);
    ck_assert_uint_eq (v, 2);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* Garbage collection moves a page the model finds uncorrectable as
 * lost data: its logical page reads as -EIO from then on, the others
 * as they were written.
 */
START_TEST (test_relocation_lost)
{
  struct ftl_errors e = { .enabled = true, .seed = 5, .no_reclaim = true,
                          .scrub_ns = UINT64_MAX };
  struct ftl *ftl = open_errors (&e, true);
  struct ftl_stats st;
  uint8_t page[PS];
  uint32_t blk;
  unsigned lost = 0;
  uint64_t lpn, v;

  write_pages (ftl, 64, 1);
  ck_assert_int_eq (ftl_age (ftl, 1100 * 86400, 3000), 0);
  /* The block holding logical page 0, relocated by GC. */
  blk = media_ppn_block (&ftl->media, l2p_load (ftl, 0));
  ck_assert_int_eq (ftl->state[blk], FTL_BLK_FULL);
  unit_quiet = true;
  ck_assert_int_eq (gc_reclaim_block (ftl, blk), 0);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_gt (st.media_uncorrectable, 0);
  for (uint64_t n = 0; n < 64; n++) {
    int r = ftl_read (ftl, page, PS, n * PS);
    if (r == -EIO)
      lost++;
    else {
      ck_assert_int_eq (r, 0);
      ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &v), 1);
      ck_assert_uint_eq (lpn, n);
    }
  }
  unit_quiet = false;
  ck_assert_uint_ge (lost, st.media_uncorrectable);
  /* Rewritten, it reads again. */
  write_pages (ftl, 64, 2);
  for (uint64_t n = 0; n < 64; n++)
    ck_assert_int_eq (ftl_read (ftl, page, PS, n * PS), 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* With the timing model, each read retry step costs a page read on
 * the block's unit.
 */
START_TEST (test_retry_latency)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = 1024 * 1024, .page_size = PS,
    .pages_per_block = PPB, .op_percent = 100, .log = unit_log,
    .io = unit_nosync_io (),
    .timing = { .enabled = true, .read_ns = 1000000, .channels = 1,
                .dies = 1 },
    .errors = { .enabled = true, .seed = 9, .no_reclaim = true,
                .scrub_ns = UINT64_MAX },
  };
  struct ftl_stats st;
  struct ftl *ftl;
  uint8_t page[PS];
  char err[256];
  uint64_t t0, elapsed, reads;

  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
  write_pages (ftl, 32, 1);
  ck_assert_int_eq (ftl_age (ftl, 2 * 365 * 86400, 3000), 0);
  ftl_get_stats (ftl, &st);
  reads = st.media_read_pages;
  unit_quiet = true;
  t0 = clock_now ();
  for (uint64_t n = 0; n < 32; n++)
    ftl_read (ftl, page, PS, n * PS);
  elapsed = clock_now () - t0;
  unit_quiet = false;
  ftl_get_stats (ftl, &st);
  reads = st.media_read_pages - reads;
  ck_assert_uint_gt (st.media_read_retries, 32);
  ck_assert_msg (elapsed >= (reads + st.media_read_retries) * 1000000,
                 "%" PRIu64 " ns for %" PRIu64 " reads and %" PRIu64
                 " retries", elapsed, reads, st.media_read_retries);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

static Suite *
errmodel_suite (void)
{
  Suite *s = suite_create ("errmodel");
  TCase *tc = tcase_create ("errmodel");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_draws);
  tcase_add_test (tc, test_persist);
  tcase_add_test (tc, test_version_1);
  tcase_add_test (tc, test_uncorrectable);
  tcase_add_test (tc, test_retry_latency);
  tcase_add_test (tc, test_relocation_lost);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (errmodel_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
