/* nbdkit-ftl: crash-point enumeration of the creation of an image.
 *
 * The creation of an image (ftl_open of a new file, up to its return)
 * runs once through the fault-injection layer (helpers.h), which
 * records every backing write, size change and sync, of the file and of
 * its directory.  It is cut the same way as the workload of
 * test-crash.c, at each of its events, its writes also torn at every
 * subset of their sectors and at chosen bytes, and each file left
 * opened again three ways (test_crash_during_creation).  The power-cut
 * model's size changes and a new file's name are checked on a trace
 * made by hand (test_power_cut_model), and a storage that fails during
 * the creation, from each of its events on (test_create_io_errors).
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crash.h"

/* ---- a power cut while an image is created ---- */

/* Read path whole into buf (at most cap bytes); returns its size. */
static uint64_t
read_whole (const char *path, uint8_t *buf, size_t cap)
{
  uint64_t len = unit_file_size (path);

  ck_assert_uint_le (len, cap);
  if (len > 0)
    unit_read_file (path, buf, len, 0);
  return len;
}

/* The power-cut model with size changes and a new file's name, on a
 * trace made by hand: a new file grown to 3000 bytes, 600 bytes
 * written at 1000, a sync, grown to 5000, 100 bytes written at 4500,
 * its directory synced.
 */
START_TEST (test_power_cut_model)
{
  struct unit_fault f;
  struct unit_disk d;
  struct unit_cut_info info;
  uint8_t a[600], b[100], got[8192];
  uint64_t rng = 1;
  int fd;

  memset (a, 0xaa, sizeof a);
  memset (b, 0xbb, sizeof b);
  unit_fault_init (&f);
  fd = open (img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ck_assert_int_ge (fd, 0);
  ck_assert_int_eq (f.io.set_size (f.io.opaque, fd, 3000), 0);
  ck_assert_int_eq (f.io.pwrite (f.io.opaque, fd, a, sizeof a, 1000), 0);
  ck_assert_int_eq (f.io.sync (f.io.opaque, fd), 0);
  ck_assert_int_eq (f.io.set_size (f.io.opaque, fd, 5000), 0);
  ck_assert_int_eq (f.io.pwrite (f.io.opaque, fd, b, sizeof b, 4500), 0);
  ck_assert_int_eq (f.io.sync_dir (f.io.opaque, img), 0);
  close (fd);
  ck_assert_uint_eq (f.n, 6);
  ck_assert_int_eq (f.ev[0].kind, UNIT_EV_RESIZE);
  ck_assert_int_eq (f.ev[5].kind, UNIT_EV_SYNC_DIR);
  unit_disk_init (&d, &f, NULL);

  /* During the first size change: no file, or an empty one, or one of
   * 3000 zeros.
   */
  unit_disk_cut (&d, 0, UNIT_CUT_NONE, &rng, img2, &info);
  ck_assert (info.absent);
  ck_assert_int_eq (access (img2, F_OK), -1);
  unit_disk_cut (&d, 0, UNIT_CUT_ORDER, &rng, img2, &info);
  ck_assert (!info.absent);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 3000);
  for (int i = 0; i < 3000; i++)
    ck_assert_uint_eq (got[i], 0);

  /* The first write torn after one sector, the size change lost: the
   * write alone makes the file 1512 bytes long.
   */
  unit_disk_cut_at (&d, 1, 512, false, img2, &info);
  ck_assert_uint_eq (info.resizes, 1);
  ck_assert_uint_eq (info.resizes_applied, 0);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 1512);
  for (int i = 0; i < 1512; i++)
    ck_assert_uint_eq (got[i], i < 1000 ? 0 : 0xaa);
  unit_disk_cut_at (&d, 1, 0, true, img2, &info);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 3000);
  /* Only its second piece between 512-byte boundaries ([1024, 1536)
   * of [1000, 1024), [1024, 1536), [1536, 1600)).
   */
  ck_assert_uint_eq (unit_ev_sectors (&f.ev[1]), 3);
  unit_disk_cut_sectors (&d, 1, 2, false, img2, &info);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 1536);
  for (int i = 0; i < 1536; i++)
    ck_assert_uint_eq (got[i], i < 1024 ? 0 : 0xaa);

  /* After the sync: 3000 bytes are durable; the second write reaches
   * the file without the size change before it: 4600 bytes, zeros
   * between.
   */
  unit_disk_cut_at (&d, 4, sizeof b, false, img2, &info);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 4600);
  for (int i = 0; i < 4600; i++)
    ck_assert_uint_eq (got[i], i >= 1000 && i < 1600 ? 0xaa
                       : i >= 4500 ? 0xbb : 0);

  /* After the directory sync the file keeps its name even when every
   * pending change is lost.
   */
  unit_disk_cut (&d, 6, UNIT_CUT_NONE, &rng, img2, &info);
  ck_assert (!info.absent);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 3000);
  unit_disk_free (&d);
  unit_fault_free (&f);
}
END_TEST

/* What a file left by a power cut during creation is, before it is
 * opened again.
 */
enum pre_state {
  PRE_BLANK,                    /* no file, or only zeros */
  PRE_WHOLE,                    /* a superblock copy decodes */
  PRE_PARTIAL,                  /* anything else */
};

/* The three ways of opening it again. */
enum reopen { REOPEN_CREATE, REOPEN_RW, REOPEN_RO, NREOPEN };
static const char *const reopen_names[NREOPEN] = {
  "with the options that created it", "without size=", "read-only",
};

enum { CR_REFUSED, CR_OPENED, CR_RECREATED, NCR };

struct creation {
  struct unit_fault f;
  struct unit_disk d;
  uint64_t uuid[2];             /* of the image the run created */
  uint64_t ckpt_off;            /* checkpoint slot 0 */
  long sb_synced;               /* the sync after superblock copy A */
  long dir_synced;              /* the sync of the directory */
  char cut[256], try[256];
  uint8_t *buf;                 /* the file a cut left */
  uint64_t *seen;               /* hashes of the files opened */
  size_t nseen, capseen;
  unsigned points, mode_cuts, tear_cuts, files, reopens;
  unsigned by_class[NCR], cut_short, not_image, give_size, absent;
};

/* Record the creation: ftl_open of a new file, up to its return. */
static void
creation_record (struct creation *cr, const char *path)
{
  struct ftl *ftl;
  char err[256];
  int r;

  unit_fault_init (&cr->f);
  ck_assert_int_eq (access (path, F_OK), -1);
  ftl = open_image (path, &cr->f.io, err, sizeof err, &r);
  ck_assert_msg (r == 0, "creating the image: %s", err);
  memcpy (cr->uuid, ftl->sb.uuid, sizeof cr->uuid);
  cr->ckpt_off = ftl->sb.ckpt_offset[0];
  open_abandon (ftl);

  cr->sb_synced = cr->dir_synced = -1;
  for (size_t i = 0; i < cr->f.n; i++) {
    const struct unit_ev *e = &cr->f.ev[i];
    if (cr->sb_synced == -2 && e->kind == UNIT_EV_SYNC)
      cr->sb_synced = i;
    if (cr->sb_synced == -1 && e->kind == UNIT_EV_PWRITE && e->off == 0)
      cr->sb_synced = -2;
    if (cr->dir_synced == -1 && e->kind == UNIT_EV_SYNC_DIR)
      cr->dir_synced = i;
  }
  ck_assert_int_eq (cr->f.ev[0].kind, UNIT_EV_RESIZE);
  ck_assert_msg (cr->sb_synced >= 0, "no sync after superblock copy A");
  ck_assert_msg (cr->dir_synced >= 0, "the directory is never synced");
  unit_disk_init (&cr->d, &cr->f, NULL);
  cr->buf = malloc (cr->d.cap + 1);
  ck_assert_ptr_nonnull (cr->buf);
}

/* What the file a cut left (len bytes in cr->buf, if present) is; *ours
 * says whether a partial one shows that our creation was cut short.
 */
static enum pre_state
pre_state (const struct creation *cr, bool present, uint64_t len,
           bool *ours)
{
  const uint8_t *b = cr->buf;
  struct ftl_superblock sb;
  bool zero = true;

  *ours = false;
  for (uint64_t i = 0; i < len && zero; i++)
    zero = b[i] == 0;
  if (!present || zero)
    return PRE_BLANK;
  for (int i = 0; i < 2; i++)
    if (len > (uint64_t) i * FTL_SB_SLOT &&
        fmt_sb_decode (b + i * FTL_SB_SLOT,
                       MIN (len - i * FTL_SB_SLOT, FTL_SB_SLOT), &sb, NULL,
                       0) == FTL_FMT_OK)
      return PRE_WHOLE;
  /* Superblock copy B never written, and the start of our checkpoint
   * where slot 0 goes.
   */
  *ours = len >= cr->ckpt_off + 8 &&
    memcmp (b + cr->ckpt_off, FTL_CKPT_MAGIC, 8) == 0;
  for (size_t i = FTL_SB_SLOT; i < FTL_SB_SLOT + FTL_SB_BYTES && *ours; i++)
    *ours = b[i] == 0;
  return PRE_PARTIAL;
}

/* Sectors written by check_new_image, and the version of each. */
static const struct { uint32_t sector, n; uint64_t version; } new_writes[] = {
  { 3 * SPP, SPP, 1 },          /* a page */
  { 7 * SPP + 1, 2, 2 },        /* two sectors inside a page */
  { NSECT - SPP - 1, SPP + 1, 3 },      /* across the last two pages */
};

/* Read the whole disk: each sector holds its own pattern at the version
 * that new_writes gave it (all zeros if written is false).
 */
static void
expect_new_writes (struct ftl *ftl, bool written, const char *what)
{
  static uint8_t buf[SIZE];
  int r = ftl_read (ftl, buf, SIZE, 0);

  if (r != 0)
    ck_abort_msg ("%s: read failed: %s", what, strerror (-r));
  for (uint32_t s = 0; s < NSECT; s++) {
    uint64_t id = s, v = 0, want = 0;
    if (written)
      for (size_t i = 0; i < sizeof new_writes / sizeof new_writes[0]; i++)
        if (s >= new_writes[i].sector &&
            s < new_writes[i].sector + new_writes[i].n)
          want = new_writes[i].version;
    if (unit_page_identify (buf + (size_t) s * SECT, SECT, &id, &v) < 0 ||
        (v && id != s) || v != want)
      ck_abort_msg ("%s: sector %u reads version %" PRIu64 " of sector %"
                    PRIu64 ", expected version %" PRIu64 " (0: zeros)",
                    what, s, v, id, want);
  }
}

/* An image that opened: it has the geometry it was created with and
 * holds only zeros; writes, a flush and a read give back what was
 * written, and so does a reopen.  Closes ftl.
 */
static void
check_new_image (struct ftl *ftl, const char *path, bool readonly,
                 const char *what)
{
  uint8_t buf[(SPP + 1) * SECT];
  struct ftl_geometry g;
  char err[256];
  int r;

  ftl_get_geometry (ftl, &g);
  if (g.logical_bytes != SIZE || g.page_size != PS ||
      g.pages_per_block != PPB)
    ck_abort_msg ("%s: opened with another geometry", what);
  expect_new_writes (ftl, false, what);
  if (!readonly) {
    for (size_t i = 0; i < sizeof new_writes / sizeof new_writes[0]; i++) {
      for (uint32_t j = 0; j < new_writes[i].n; j++)
        unit_fill_page (buf + (size_t) j * SECT, SECT,
                        new_writes[i].sector + j, new_writes[i].version);
      r = ftl_write (ftl, buf, (uint64_t) new_writes[i].n * SECT,
                     (uint64_t) new_writes[i].sector * SECT, 0);
      if (r != 0)
        ck_abort_msg ("%s: write failed: %s", what, strerror (-r));
    }
    if ((r = ftl_flush (ftl)) != 0)
      ck_abort_msg ("%s: flush failed: %s", what, strerror (-r));
    expect_new_writes (ftl, true, what);
  }
  if ((r = ftl_close (ftl)) != 0)
    ck_abort_msg ("%s: close failed: %s", what, strerror (-r));
  if (readonly)
    return;
  if ((r = unit_try_open (path, unit_nosync_io (), &ftl, err,
                          sizeof err)) != 0)
    ck_abort_msg ("%s: the image does not open again: %s", what, err);
  expect_new_writes (ftl, true, what);
  if ((r = ftl_close (ftl)) != 0)
    ck_abort_msg ("%s: close failed: %s", what, strerror (-r));
}

/* Open the file a cut left (a copy of it) one way, and check what
 * happens against what the file is.
 */
static void
creation_reopen (struct creation *cr, bool present, uint64_t len,
                 enum pre_state pre, bool ours, enum reopen how,
                 const char *what1)
{
  struct ftl_options o = {
    .path = cr->try, .log = unit_log, .io = unit_nosync_io (),
    .readonly = how == REOPEN_RO,
  };
  struct ftl *ftl = NULL;
  char err[256], what[1024];
  const char *want;
  int r;

  snprintf (what, sizeof what, "%s, opened %s", what1, reopen_names[how]);
  if (present)
    unit_copy_file (cr->cut, cr->try);
  else if (unlink (cr->try) == -1 && errno != ENOENT)
    ck_abort_msg ("unlink %s: %s", cr->try, strerror (errno));
  if (how == REOPEN_CREATE)
    ftl = open_image (cr->try, unit_nosync_io (), err, sizeof err, &r);
  else
    r = ftl_open (&o, &ftl, err, sizeof err);
  cr->reopens++;

  if (r == 0) {
    bool same = memcmp (ftl->sb.uuid, cr->uuid, sizeof cr->uuid) == 0;
    if (pre == PRE_PARTIAL)
      ck_abort_msg ("%s: a file whose creation was cut short opened",
                    what);
    if (pre == PRE_WHOLE && !same)
      ck_abort_msg ("%s: a whole image was created again", what);
    if (pre == PRE_BLANK && (same || how != REOPEN_CREATE))
      ck_abort_msg ("%s: a blank file opened %s", what,
                    same ? "as the old image" : "without size=");
    cr->by_class[same ? CR_OPENED : CR_RECREATED]++;
    check_new_image (ftl, cr->try, how == REOPEN_RO, what);
    return;
  }

  cr->by_class[CR_REFUSED]++;
  if (pre == PRE_WHOLE)
    ck_abort_msg ("%s: a whole image was refused: %s", what, err);
  if (pre == PRE_BLANK && how == REOPEN_CREATE)
    ck_abort_msg ("%s: a blank file was not created again: %s", what, err);
  if (pre == PRE_BLANK) {
    want = !present ? "no such file (give a size to create a new image)"
      : len == 0 ? "the file is empty: give a size to create a new image"
      : "the file holds only zeros: give a size to create a new image";
    cr->give_size++;
  }
  else if (ours) {
    want = CREATE_CUT_SHORT;
    cr->cut_short++;
  }
  else {
    want = "not an nbdkit-ftl image (no superblock found)";
    cr->not_image++;
  }
  if (strcmp (err, want) != 0)
    ck_abort_msg ("%s: refused with '%s', expected '%s'", what, err, want);
  /* Left as it was. */
  if (!present) {
    if (access (cr->try, F_OK) == 0)
      ck_abort_msg ("%s: a file was made", what);
    return;
  }
  if (unit_file_size (cr->try) != len)
    ck_abort_msg ("%s: the file changed size", what);
  uint8_t *after = malloc (len + 1);
  ck_assert_ptr_nonnull (after);
  if (len > 0)
    unit_read_file (cr->try, after, len, 0);
  if (memcmp (after, cr->buf, len) != 0)
    ck_abort_msg ("%s: the file changed", what);
  free (after);
}

/* The file that a cut during event n left: where the run had got to
 * bounds what it may be; a file not opened before is opened every way.
 */
static void
creation_check (struct creation *cr, size_t n,
                const struct unit_cut_info *info, const char *what)
{
  bool present = access (cr->cut, F_OK) == 0, ours;
  uint64_t len = present ? unit_file_size (cr->cut) : 0, h;
  enum pre_state pre;

  ck_assert (present == !info->absent);
  ck_assert_uint_le (len, cr->d.cap);
  if (len > 0)
    unit_read_file (cr->cut, cr->buf, len, 0);
  pre = pre_state (cr, present, len, &ours);
  if ((long) n > cr->dir_synced && !present)
    ck_abort_msg ("%s: the file is gone after its directory was synced",
                  what);
  if ((long) n > cr->sb_synced && present && pre != PRE_WHOLE)
    ck_abort_msg ("%s: no whole superblock after superblock copy A was "
                  "synced", what);

  /* Each distinct file once. */
  h = present ? fmt_checksum (cr->buf, len, len + 1) : 0;
  for (size_t i = 0; i < cr->nseen; i++)
    if (cr->seen[i] == h)
      return;
  cr->absent += !present;
  if (cr->nseen == cr->capseen) {
    cr->capseen = cr->capseen ? 2 * cr->capseen : 64;
    cr->seen = realloc (cr->seen, cr->capseen * sizeof *cr->seen);
    ck_assert_ptr_nonnull (cr->seen);
  }
  cr->seen[cr->nseen++] = h;
  cr->files++;
  for (int how = 0; how < NREOPEN; how++)
    creation_reopen (cr, present, len, pre, ours, how, what);
}

/* Is anything pending at a cut during event n: writes or size changes
 * since the last sync, or the name of the new file?
 */
static bool
creation_pending (const struct creation *cr, size_t n)
{
  size_t end = n < cr->f.n ? n + 1 : cr->f.n;

  if ((long) n <= cr->dir_synced)
    return true;
  for (size_t i = unit_fault_last_sync (&cr->f, n) + 1; i < end; i++)
    if (cr->f.ev[i].kind == UNIT_EV_PWRITE ||
        cr->f.ev[i].kind == UNIT_EV_RESIZE)
      return true;
  return false;
}

/* The write in flight at event n torn every way: each subset of its
 * sectors (up to 8 sectors; prefixes beyond), and after chosen bytes of
 * its first sector (inside the magic, the version, the length, the
 * checksum, and the ends of the superblock and checkpoint headers);
 * with a pending size change kept and lost.
 */
static void
creation_tears (struct creation *cr, size_t n, const char *what1)
{
  char what[1024];
  static const uint64_t bytes[] = {
    1, 7, 8, 11, 12, 15, 16, 23, 24, 100, 127, 128, 255, 256, 511,
  };
  const struct unit_ev *e = &cr->f.ev[n];
  unsigned k = unit_ev_sectors (e), resizes = 0;
  struct unit_cut_info info;

  for (size_t i = unit_fault_last_sync (&cr->f, n) + 1; i < n; i++)
    resizes += cr->f.ev[i].kind == UNIT_EV_RESIZE;
  for (int keep = 1; keep >= (resizes ? 0 : 1); keep--) {
    for (uint64_t m = 0; m < (k <= 8 ? 1u << k : k + 1u); m++) {
      uint64_t mask = k <= 8 ? m : (UINT64_C (1) << m) - 1;
      unit_disk_cut_sectors (&cr->d, n, mask, keep, cr->cut, &info);
      snprintf (what, sizeof what, "%s, sectors 0x%" PRIx64 " of %u "
                "reached the file%s", what1, mask, k,
                keep ? "" : ", the size change did not");
      creation_check (cr, n, &info, what);
      cr->tear_cuts++;
    }
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
      if (bytes[i] >= e->len)
        continue;
      unit_disk_cut_at (&cr->d, n, bytes[i], keep, cr->cut, &info);
      snprintf (what, sizeof what, "%s, torn after %" PRIu64 " bytes%s",
                what1, bytes[i], keep ? "" : ", the size change lost");
      creation_check (cr, n, &info, what);
      cr->tear_cuts++;
    }
  }
}

/* A power cut at every event of the creation of an image (ftl_open of
 * a new file, up to its return: its size, checkpoint slot 0, the two
 * superblock copies, the sync of the directory, the superblock marked
 * in use), cut in order, at random, in random sectors (twice) and with
 * everything pending lost; and the write in flight torn every way
 * (creation_tears).  Each distinct file left is opened again three
 * ways (with the options that created it, without size=, read-only)
 * and must be one of
 *
 *   blank      no file, or only zeros: with size= the image is created
 *              again; otherwise refused, "give a size";
 *   whole      a superblock copy decodes: opens as the image the run
 *              created (its uuid), every way;
 *   partial    anything else: refused every way and left as it is, as
 *              an incomplete image when superblock copy B is zeros and
 *              our checkpoint's magic is in slot 0, otherwise as not an
 *              image.
 *
 * An image that opens must work (check_new_image).  Once the sync after
 * superblock copy A has completed, a file that is there is whole; once
 * its directory has been synced, it is there.
 */
START_TEST (test_crash_during_creation)
{
  static const enum unit_cut_mode modes[] = {
    UNIT_CUT_ORDER, UNIT_CUT_RANDOM, UNIT_CUT_SECTORS, UNIT_CUT_SECTORS,
    UNIT_CUT_NONE,
  };
  static const char *const mode_names[] = {
    "in order", "random", "random sectors", "random sectors", "all lost",
  };
  struct creation cr = { 0 };
  double t0 = unit_now ();
  char path[256], what[512];

  printf ("creation: seed %" PRIu64 "\n", seed);
  unit_quiet = true;
  unit_path (path, sizeof path, "created.img");
  unit_path (cr.cut, sizeof cr.cut, "cut.img");
  unit_path (cr.try, sizeof cr.try, "reopened.img");
  creation_record (&cr, path);

  for (size_t n = 0; n <= cr.f.n; n++) {
    const struct unit_ev *e = n < cr.f.n ? &cr.f.ev[n] : NULL;
    static const char *const kinds[] = {
      [UNIT_EV_PWRITE] = "write", [UNIT_EV_SYNC] = "sync",
      [UNIT_EV_RESIZE] = "size change", [UNIT_EV_SYNC_DIR] = "directory sync",
    };
    uint64_t rng = seed ^ (n * 0x9E3779B97F4A7C15ULL);
    char where[128];

    if (e)
      snprintf (where, sizeof where, "a %s at %" PRIu64, kinds[e->kind],
                e->off);
    else
      snprintf (where, sizeof where, "after the open returned");
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
      struct unit_cut_info info;
      if (i > 0 && !creation_pending (&cr, n))
        break;                  /* the same file as in order */
      unit_disk_cut (&cr.d, n, modes[i], &rng, cr.cut, &info);
      snprintf (what, sizeof what, "seed %" PRIu64 ", creation cut at event "
                "%zu of %zu (%s), %s", seed, n, cr.f.n, where,
                mode_names[i]);
      creation_check (&cr, n, &info, what);
      cr.mode_cuts++;
    }
    if (e && e->kind == UNIT_EV_PWRITE) {
      snprintf (what, sizeof what, "creation cut at event %zu of %zu (%s)",
                n, cr.f.n, where);
      creation_tears (&cr, n, what);
    }
    cr.points++;
  }

  printf ("creation: %u crash points, %u cuts (%u tearing the write in "
          "flight), %u distinct files (%u of them no file), %u opens: %u "
          "refused (%u incomplete, %u not an image, %u asking for a size), "
          "%u opened complete, %u created again, in %.1f s\n", cr.points,
          cr.mode_cuts + cr.tear_cuts, cr.tear_cuts, cr.files, cr.absent,
          cr.reopens,
          cr.by_class[CR_REFUSED], cr.cut_short, cr.not_image, cr.give_size,
          cr.by_class[CR_OPENED], cr.by_class[CR_RECREATED],
          unit_now () - t0);
  /* Every class, so that a check that never fires shows. */
  ck_assert_uint_gt (cr.absent, 0);
  ck_assert_uint_gt (cr.cut_short, 0);
  ck_assert_uint_gt (cr.give_size, 0);
  ck_assert_uint_gt (cr.by_class[CR_OPENED], 0);
  ck_assert_uint_gt (cr.by_class[CR_RECREATED], 0);

  unit_disk_free (&cr.d);
  unit_fault_free (&cr.f);
  free (cr.buf);
  free (cr.seen);
}
END_TEST

/* The storage fails during the creation of an image, from each of its
 * events on (every write, sync, size change and directory sync fails
 * with EIO): the open fails with a message that names the step, and
 * the file it created is removed.
 */
START_TEST (test_create_io_errors)
{
  struct unit_fault f, rec;
  struct ftl *ftl;
  char path[256], err[256];
  int r;

  unit_quiet = true;
  unit_path (path, sizeof path, "failing.img");
  unit_fault_init (&rec);
  ftl = open_image (path, &rec.io, err, sizeof err, &r);
  ck_assert_msg (r == 0, "creating the image: %s", err);
  open_abandon (ftl);
  ck_assert_int_eq (unlink (path), 0);

  /* The image is written, its directory synced, then it is marked in
   * use.
   */
  size_t dir = 0;
  while (dir < rec.n && rec.ev[dir].kind != UNIT_EV_SYNC_DIR)
    dir++;
  ck_assert_uint_lt (dir, rec.n);

  unit_fault_init (&f);
  for (size_t k = 0; k < rec.n; k++) {
    const char *want =
      k > dir ? "marking the image in use: " :
      k == dir ? "syncing the directory of the new image: " :
      rec.ev[k].kind == UNIT_EV_RESIZE ? "setting the image size to " :
      "writing the new image: ";

    unit_fault_reset (&f);
    f.limit = k;
    ftl = open_image (path, &f.io, err, sizeof err, &r);
    ck_assert_msg (r < 0, "event %zu failed, and the open succeeded", k);
    ck_assert_msg (strncmp (err, want, strlen (want)) == 0 &&
                   strstr (err, strerror (EIO)) != NULL,
                   "event %zu failed: '%s', expected '%s...%s'", k, err,
                   want, strerror (EIO));
    ck_assert_msg (access (path, F_OK) == -1,
                   "event %zu failed, and the file is left", k);
  }
  printf ("creation: the storage failed from each of %zu events on: "
          "refused, no file left\n", rec.n);
  unit_fault_free (&f);
  unit_fault_free (&rec);
}
END_TEST

static Suite *
crash_create_suite (void)
{
  Suite *s = suite_create ("crash-create");
  TCase *tc = tcase_create ("creation");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_power_cut_model);
  tcase_add_test (tc, test_crash_during_creation);
  tcase_add_test (tc, test_create_io_errors);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (crash_create_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
