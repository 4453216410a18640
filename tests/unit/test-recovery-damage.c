/* nbdkit-ftl: unit tests of recovery.c and ckpt.c: what a damaged
 * image does.
 *
 * A clean image with history is damaged in one place at a time (a byte
 * of a checkpoint, of a superblock copy or of a data page or its OOB
 * entry; the file truncated): it opens with the copy that is whole, or
 * refuses with a message, and a damaged page reads as an error, never
 * as another page's data or as a version it replaced (also when the
 * damage follows a crash).  Reads check a page against the check kept
 * in memory and read its OOB entry only when that does not match.
 * What survives a crash is in test-recovery.c.
 */

#include <config.h>

#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"
#include "inspect.h"

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "recovery.img");
}

/* 64 pages of 4 KiB, 8 per block, 20 blocks. */
#define PS4     4096
#define LP4     64
#define SIZE4   ((uint64_t) LP4 * PS4)

/* ---- damaged images ---- */

/* A clean image with history: 64 pages written, overwritten and partly
 * trimmed, several checkpoints, closed cleanly.  versions[] gets each
 * page's version (0 = zeros).
 */
static void
make_clean_image (const char *img, uint64_t *versions)
{
  struct ftl *ftl = unit_open (img, SIZE4, PS4, 8, 150, 0,
                               unit_nosync_io ());
  uint64_t rng = 1234, version = 1;
  uint8_t page[PS4];

  memset (versions, 0, LP4 * sizeof *versions);
  for (int i = 0; i < 600; i++) {
    uint64_t l = unit_rnd (&rng) % LP4;
    if (i % 37 == 36) {
      ck_assert_int_eq (ftl_trim (ftl, 3 * PS4, MIN (l, LP4 - 3) * PS4, 0),
                        0);
      for (uint64_t k = 0; k < 3; k++)
        versions[MIN (l, LP4 - 3) + k] = 0;
      continue;
    }
    unit_fill_page (page, PS4, l, version);
    ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
    versions[l] = version++;
  }
  ck_assert_uint_gt (ftl->ckpt_gen, 3);
  ck_assert_int_eq (ftl_close (ftl), 0);
}

/* Check every page of an open image against versions[]. */
static void
verify_versions (struct ftl *ftl, const uint64_t *versions, const char *what)
{
  uint8_t page[PS4];

  for (uint64_t l = 0; l < LP4; l++) {
    uint64_t lpn = l, v = 0;
    int e = ftl_read (ftl, page, PS4, l * PS4);
    ck_assert_msg (e == 0, "%s: reading page %" PRIu64 ": %s", what, l,
                   strerror (-e));
    ck_assert_msg (unit_page_identify (page, PS4, &lpn, &v) >= 0 &&
                   lpn == l && v == versions[l], "%s: page %" PRIu64
                   " is wrong (page %" PRIu64 " version %" PRIu64 ", "
                   "expected version %" PRIu64 ")", what, l, lpn, v,
                   versions[l]);
  }
}

/* The newest valid superblock and checkpoint header of an image file. */
static void
read_meta (const char *img, struct ftl_superblock *sb, int *sb_copy,
           struct ftl_ckpt_header *h, int *slot)
{
  uint8_t buf[FTL_CKPT_HDR_BYTES];
  struct ftl_superblock s[2];
  struct ftl_ckpt_header c[2];
  bool ok[2];

  for (int i = 0; i < 2; i++) {
    uint8_t sbuf[FTL_SB_BYTES];
    unit_read_file (img, sbuf, sizeof sbuf, i * FTL_SB_SLOT);
    ok[i] = fmt_sb_decode (sbuf, sizeof sbuf, &s[i], NULL, 0) == FTL_FMT_OK;
  }
  ck_assert (ok[0] && ok[1]);
  *sb_copy = s[1].generation > s[0].generation;
  *sb = s[*sb_copy];
  for (int i = 0; i < 2; i++) {
    unit_read_file (img, buf, sizeof buf, sb->ckpt_offset[i]);
    ok[i] = fmt_ckpt_header_decode (buf, sizeof buf, &c[i]) == FTL_FMT_OK;
  }
  ck_assert (ok[0] && ok[1]);
  *slot = c[1].generation > c[0].generation;
  *h = c[*slot];
  ck_assert_uint_eq (sb->state, FTL_SB_CLEAN);
  ck_assert_uint_eq (sb->clean_ckpt_gen, h->generation);
}

/* A byte flipped in the newest checkpoint (body or header) of a cleanly
 * closed image: the older checkpoint in the other slot is whole, so
 * recovery must fall back to it and roll the log forward, serving the
 * right data, every time.  Both slots damaged: open fails and says so.
 */
START_TEST (test_damaged_checkpoint)
{
  char pristine[256];
  uint64_t versions[LP4];
  struct ftl_superblock sb;
  struct ftl_ckpt_header h;
  int sbc, slot;
  unsigned recovered = 0;

  unit_path (pristine, sizeof pristine, "pristine.img");
  make_clean_image (pristine, versions);
  read_meta (pristine, &sb, &sbc, &h, &slot);

  uint64_t body = sb.ckpt_offset[slot] + FTL_CKPT_HDR_BYTES;
  uint64_t map_bytes = 4 * h.logical_pages;
  const struct { const char *what; uint64_t off; } flips[] = {
    { "map entry of page 0", body },
    { "map entry of page 33", body + 4 * 33 + 1 },
    { "last map entry", body + map_bytes - 1 },
    { "block table, erase count of block 0", body + map_bytes },
    { "block table, state of block 7", body + map_bytes + 7 * 12 + 8 },
    { "last body byte", body + h.body_bytes - 1 },
    { "header generation", sb.ckpt_offset[slot] + 24 },
    { "header seq", sb.ckpt_offset[slot] + 32 },
  };
  unit_quiet = true;
  for (size_t i = 0; i < sizeof flips / sizeof flips[0]; i++) {
    struct ftl *ftl;
    char err[256], what[128];
    unit_copy_file (pristine, path);
    unit_flip_byte (path, flips[i].off, 0x04);
    snprintf (what, sizeof what, "flipped %s of checkpoint slot %d",
              flips[i].what, slot);
    int r = unit_try_open (path, unit_nosync_io (), &ftl, err, sizeof err);
    if (r == 0) {
      verify_versions (ftl, versions, what);
      ck_assert_int_eq (ftl_close (ftl), 0);
      ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
      verify_versions (ftl, versions, what);
      ck_assert_int_eq (ftl_close (ftl), 0);
      recovered++;
    }
    else
      ck_abort_msg ("%s: open failed with '%s', though the other slot "
                    "holds a whole checkpoint", what, err);
  }
  printf ("damaged checkpoint: %u recovered from the older one\n",
          recovered);
  ck_assert_uint_eq (recovered, sizeof flips / sizeof flips[0]);

  /* Both slots. */
  unit_copy_file (pristine, path);
  unit_flip_byte (path, sb.ckpt_offset[0] + FTL_CKPT_HDR_BYTES + 8, 0x01);
  unit_flip_byte (path, sb.ckpt_offset[1] + FTL_CKPT_HDR_BYTES + 8, 0x01);
  {
    struct ftl *ftl;
    char err[256];
    ck_assert_int_lt (unit_try_open (path, unit_nosync_io (), &ftl, err,
                                     sizeof err), 0);
    ck_assert_msg (strstr (err, "checkpoint") != NULL, "error: '%s'", err);
  }
}
END_TEST

/* A byte flipped in one superblock copy: the image opens with the other
 * and serves the right data (whichever copy was damaged).  Both copies:
 * open fails with a message about the superblock.
 */
START_TEST (test_damaged_superblock)
{
  char pristine[256], err[256];
  uint64_t versions[LP4];
  struct ftl *ftl;

  unit_path (pristine, sizeof pristine, "pristine.img");
  make_clean_image (pristine, versions);

  for (int copy = 0; copy < 2; copy++) {
    const uint64_t offs[] = { 3, 8, 40, 88, FTL_SB_BYTES - 1 };
    for (size_t i = 0; i < sizeof offs / sizeof offs[0]; i++) {
      unit_copy_file (pristine, path);
      unit_flip_byte (path, copy * FTL_SB_SLOT + offs[i], 0x10);
      int r = unit_try_open (path, unit_nosync_io (), &ftl, err, sizeof err);
      ck_assert_msg (r == 0, "superblock copy %d, byte %" PRIu64 " flipped: "
                     "%s", copy, offs[i], err);
      verify_versions (ftl, versions, "one superblock copy damaged");
      ck_assert_int_eq (ftl_close (ftl), 0);
    }
  }

  unit_copy_file (pristine, path);
  unit_flip_byte (path, 40, 0x10);
  unit_flip_byte (path, FTL_SB_SLOT + 40, 0x10);
  ck_assert_int_lt (unit_try_open (path, unit_nosync_io (), &ftl, err,
                                   sizeof err), 0);
  ck_assert_msg (strstr (err, "superblock") != NULL, "error: '%s'", err);

  /* Both magics: not an image at all. */
  unit_copy_file (pristine, path);
  unit_flip_byte (path, 0, 0x10);
  unit_flip_byte (path, FTL_SB_SLOT, 0x10);
  ck_assert_int_lt (unit_try_open (path, unit_nosync_io (), &ftl, err,
                                   sizeof err), 0);
  ck_assert_msg (strstr (err, "superblock") != NULL, "error: '%s'", err);

  /* The pristine image is untouched by the failed opens' siblings. */
  ftl = unit_open (pristine, 0, 0, 0, 0, 0, unit_nosync_io ());
  verify_versions (ftl, versions, "pristine");
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* A truncated image does not open, says "truncated", and is left as it
 * was.
 */
START_TEST (test_truncated)
{
  char pristine[256], err[256];
  uint64_t versions[LP4];
  struct ftl *ftl;
  uint64_t size;

  unit_path (pristine, sizeof pristine, "pristine.img");
  make_clean_image (pristine, versions);
  size = unit_file_size (pristine);
  const uint64_t cuts[] = { 1, PS4, size / 2, 3 * FTL_SB_SLOT };
  for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
    unit_copy_file (pristine, path);
    ck_assert_int_eq (truncate (path, size - cuts[i]), 0);
    ck_assert_int_lt (unit_try_open (path, unit_nosync_io (), &ftl, err,
                                     sizeof err), 0);
    ck_assert_msg (strstr (err, "truncated") != NULL, "cut %" PRIu64
                   " bytes: error '%s'", cuts[i], err);
    ck_assert_uint_eq (unit_file_size (path), size - cuts[i]);
  }
}
END_TEST

/* A flipped byte in a data page, or in its OOB entry, makes reads of
 * that page fail with -EIO (never return wrong data), whether the image
 * was reopened or the damage happened under an open handle; the other
 * pages are unaffected.
 */
START_TEST (test_damaged_data_page)
{
  char pristine[256];
  uint64_t versions[LP4];
  struct ftl *ftl;
  uint8_t page[PS4];
  uint64_t data_off[3], oob_off;

  unit_path (pristine, sizeof pristine, "pristine.img");
  make_clean_image (pristine, versions);
  unit_copy_file (pristine, path);

  /* Pages 5, 6 and 7 must be mapped: write them. */
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  for (uint64_t l = 5; l < 8; l++) {
    unit_fill_page (page, PS4, l, 10000 + l);
    ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
    versions[l] = 10000 + l;
  }
  for (int i = 0; i < 3; i++)
    data_off[i] = media_page_offset (&ftl->media, l2p_load (ftl, 5 + i));
  uint32_t ppn = l2p_load (ftl, 6);
  oob_off = media_meta_offset (&ftl->media, media_ppn_block (&ftl->media, ppn))
    + FTL_BLKHDR_BYTES
    + (uint64_t) media_ppn_page (&ftl->media, ppn) * FTL_OOB_BYTES;
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* Page 5: a data byte; page 6: its OOB entry's LPN field. */
  unit_flip_byte (path, data_off[0] + 1000, 0x01);
  unit_flip_byte (path, oob_off + 4, 0x01);
  unit_quiet = true;
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 5 * PS4), -EIO);
  ck_assert_msg (strstr (unit_last_error, "damaged") != NULL,
                 "error: '%s'", unit_last_error);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 6 * PS4), -EIO);
  /* A read spanning the damaged page fails as a whole. */
  uint8_t big[4 * PS4];
  ck_assert_int_eq (ftl_read (ftl, big, sizeof big, 4 * PS4), -EIO);
  /* A partial read of the damaged page fails too. */
  ck_assert_int_eq (ftl_read (ftl, page, 100, 5 * PS4 + 7), -EIO);
  for (uint64_t l = 0; l < LP4; l++) {
    uint64_t lpn = l, v = 0;
    if (l == 5 || l == 6)
      continue;
    ck_assert_int_eq (ftl_read (ftl, page, PS4, l * PS4), 0);
    ck_assert_int_ge (unit_page_identify (page, PS4, &lpn, &v), 0);
    ck_assert_uint_eq (v, versions[l]);
  }

  /* Page 7, damaged while the image is open. */
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 7 * PS4), 0);
  unit_flip_byte (path, data_off[2] + PS4 - 1, 0x80);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 7 * PS4), -EIO);
  open_abandon (ftl);
}
END_TEST

/* Reads verify a page against the check of its logical page kept in
 * memory (map.c) and read its OOB entry only when that does not match.
 * After a reopen, clean or after a crash, every mapped page has its
 * check: reading the whole disk reads no OOB entry.  A check that
 * does not match sends the read to the OOB entry: damaged data is
 * still an error, while intact data whose OOB entry was damaged under
 * an open handle reads as written (it matches the checksum it was
 * written with), and as an error once the image is reopened.
 */
static uint64_t oob_preads;
static struct media geo_seen;   /* the image's geometry, once known */

static int
counting_pread (void *opaque, int fd, void *buf, size_t len, off_t off)
{
  uint32_t blk;
  uint64_t in;

  if (geo_seen.blocks && media_meta_at (&geo_seen, off, &blk, &in) &&
      in >= FTL_BLKHDR_BYTES)
    __atomic_fetch_add (&oob_preads, 1, __ATOMIC_RELAXED);
  return media_default_io.pread (opaque, fd, buf, len, off);
}

START_TEST (test_checks_in_memory)
{
  uint64_t versions[LP4];
  struct ftl_io io = *unit_nosync_io ();
  struct ftl *ftl;
  uint8_t page[PS4];

  io.pread = counting_pread;
  make_clean_image (path, versions);

  /* A clean reopen: the checks come from the OOB entries. */
  ftl = unit_open (path, 0, 0, 0, 0, 0, &io);
  geo_seen = ftl->media;
  oob_preads = 0;
  verify_versions (ftl, versions, "clean reopen");
  ck_assert_uint_eq (oob_preads, 0);
  for (uint64_t l = 0; l < LP4; l++)
    if (l2p_load (ftl, l) != FTL_UNMAPPED)
      ck_assert_uint_ne (ftl->check[l], 0);

  /* New writes get their checks when they are mapped. */
  for (uint64_t l = 10; l < 20; l++) {
    unit_fill_page (page, PS4, l, 50000 + l);
    ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
    versions[l] = 50000 + l;
  }
  oob_preads = 0;
  verify_versions (ftl, versions, "after writes");
  ck_assert_uint_eq (oob_preads, 0);

  /* A check that went wrong costs one read of the OOB entry, which
   * puts it right.
   */
  __atomic_store_n (&ftl->check[12], ftl->check[12] ^ 1, __ATOMIC_RELAXED);
  verify_versions (ftl, versions, "a wrong check");
  ck_assert_uint_eq (oob_preads, 1);
  verify_versions (ftl, versions, "the check put right");
  ck_assert_uint_eq (oob_preads, 1);

  /* Damage under the open handle: page 13's data, page 14's OOB
   * entry (its LPN).
   */
  uint64_t data13 = media_page_offset (&ftl->media, l2p_load (ftl, 13));
  uint32_t ppn14 = l2p_load (ftl, 14);
  uint64_t oob14 = media_meta_offset (&ftl->media,
                                      media_ppn_block (&ftl->media, ppn14))
    + FTL_BLKHDR_BYTES
    + (uint64_t) media_ppn_page (&ftl->media, ppn14) * FTL_OOB_BYTES;
  unit_flip_byte (path, data13 + 7, 0x10);
  unit_flip_byte (path, oob14 + 4, 0x01);
  unit_quiet = true;
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 13 * PS4), -EIO);
  ck_assert_msg (strstr (unit_last_error, "data checksum mismatch") != NULL,
                 "error: '%s'", unit_last_error);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 14 * PS4), 0);
  uint64_t lpn = 14, v = 0;
  ck_assert_int_ge (unit_page_identify (page, PS4, &lpn, &v), 0);
  ck_assert_uint_eq (v, versions[14]);
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* Reopened, both are errors. */
  ftl = unit_open (path, 0, 0, 0, 0, 0, &io);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 13 * PS4), -EIO);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 14 * PS4), -EIO);
  unit_quiet = false;
  oob_preads = 0;
  for (uint64_t l = 0; l < LP4; l++) {
    if (l == 13 || l == 14)
      continue;
    ck_assert_int_eq (ftl_read (ftl, page, PS4, l * PS4), 0);
    lpn = l;
    v = 0;
    ck_assert_int_ge (unit_page_identify (page, PS4, &lpn, &v), 0);
    ck_assert_uint_eq (v, versions[l]);
  }
  ck_assert_uint_eq (oob_preads, 0);

  /* Pages that only the roll-forward finds after a crash. */
  for (uint64_t l = 20; l < 30; l++) {
    unit_fill_page (page, PS4, l, 60000 + l);
    ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
  }
  ck_assert_int_eq (ftl_flush (ftl), 0);
  open_abandon (ftl);
  ftl = unit_open (path, 0, 0, 0, 0, 0, &io);
  ck_assert (ftl->was_unclean);
  oob_preads = 0;
  for (uint64_t l = 20; l < 30; l++) {
    ck_assert_int_eq (ftl_read (ftl, page, PS4, l * PS4), 0);
    lpn = l;
    v = 0;
    ck_assert_int_ge (unit_page_identify (page, PS4, &lpn, &v), 0);
    ck_assert_uint_eq (v, 60000 + l);
  }
  ck_assert_uint_eq (oob_preads, 0);
  geo_seen.blocks = 0;
  open_abandon (ftl);
}
END_TEST

/* Never stale: a page that was durable (flushed) and is damaged after
 * a crash reads as an error, never as the version it replaced; a page
 * never flushed that fails its checksum is a torn write and reads as
 * its previous version.  A rewrite heals; garbage collection moves a
 * damaged page as lost data, which still reads as an error after a
 * restart.
 */
static uint64_t
damage_after_kill (bool flush)
{
  struct ftl *ftl;
  uint8_t page[PS4];
  uint64_t off;

  unlink (path);
  ftl = unit_open (path, SIZE4, PS4, 8, 150, 0, unit_nosync_io ());
  for (uint64_t l = 0; l < 20; l++) {
    unit_fill_page (page, PS4, l, 1);
    ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  unit_fill_page (page, PS4, 5, 2);
  ck_assert_int_eq (ftl_write (ftl, page, PS4, 5 * PS4, 0), 0);
  if (flush)
    ck_assert_int_eq (ftl_flush (ftl), 0);
  off = media_page_offset (&ftl->media, l2p_load (ftl, 5));
  open_abandon (ftl);
  unit_flip_byte (path, off + 100, 0x04);
  return off;
}

START_TEST (test_never_stale)
{
  struct ftl *ftl;
  uint8_t page[PS4];
  uint64_t lpn, v;

  /* Not flushed: a torn write; the flushed version 1 is what remains. */
  damage_after_kill (false);
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  ck_assert_uint_eq (ftl->recovered_damaged, 0);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 5 * PS4), 0);
  ck_assert_int_eq (unit_page_identify (page, PS4, &lpn, &v), 1);
  ck_assert_uint_eq (v, 1);
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* Flushed: the damage is reported, never version 1. */
  damage_after_kill (true);
  unit_quiet = true;
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  ck_assert_uint_eq (ftl->recovered_damaged, 1);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 5 * PS4), -EIO);
  /* The other pages read as before. */
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 6 * PS4), 0);
  /* Garbage collection moves it as lost data: still an error, here and
   * after a restart.
   */
  uint32_t from = l2p_load (ftl, 5);
  ck_assert_int_eq (gc_reclaim_block (ftl, media_ppn_block (&ftl->media,
                                                            from)), 0);
  ck_assert_uint_ne (l2p_load (ftl, 5), from);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 5 * PS4), -EIO);
  ck_assert_msg (strstr (unit_last_error, "its data was lost"),
                 "error: '%s'", unit_last_error);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 5 * PS4), -EIO);
  /* A rewrite heals it. */
  unit_fill_page (page, PS4, 5, 3);
  ck_assert_int_eq (ftl_write (ftl, page, PS4, 5 * PS4, 0), 0);
  ck_assert_int_eq (ftl_read (ftl, page, PS4, 5 * PS4), 0);
  ck_assert_int_eq (unit_page_identify (page, PS4, &lpn, &v), 1);
  ck_assert_uint_eq (v, 3);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_quiet = false;
}
END_TEST

static Suite *
recovery_damage_suite (void)
{
  Suite *s = suite_create ("recovery-damage");
  TCase *tc;

  tc = tcase_create ("damage");
  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_damaged_checkpoint);
  tcase_add_test (tc, test_damaged_superblock);
  tcase_add_test (tc, test_truncated);
  tcase_add_test (tc, test_damaged_data_page);
  tcase_add_test (tc, test_checks_in_memory);
  tcase_add_test (tc, test_never_stale);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (recovery_damage_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
