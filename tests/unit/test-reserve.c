/* nbdkit-ftl: unit tests of the free pool's reserves: garbage
 * collection always finds an erase block for its copies.
 *
 * The crash reserve (FTL_SPOR_RESERVE_BLOCKS, log/state.h) is the block
 * GC leaves free so that the open after a crash, which closes every
 * block that was open, has one for the copies of its first victim.  An
 * open that finds the pool down to it lets GC take it (spor_short), and
 * a server killed in that window left an image with no free block.
 *
 * A kill is a copy of the image file taken from a write hook just
 * before the write (kill -9 keeps whatever reached the page cache): the
 * tests copy the file before every write of an interesting stretch,
 * and then open each copy and write to it.  Everything runs in one
 * thread, without the background thread: GC runs in the writers.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"

/* 64 logical pages of 4 KiB, 8 pages per block, 150% over-provisioning:
 * 20 erase blocks, 12 of them spare.
 */
#define PS      4096
#define PPB     8
#define LPAGES  64
#define SIZE    ((uint64_t) LPAGES * PS)
#define OP      150
#define MAX_KILLS 64
#define SEEDS   16

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "reserve.img");
}

/* ---- kills from a write hook ---- */

static struct {
  struct ftl *ftl;              /* the handle being watched, or NULL */
  uint32_t at_nfree;            /* copy the file before each write while
                                 * the pool is down to this */
  unsigned max;                 /* at most this many copies */
  unsigned n;                   /* copies taken */
  bool on;                      /* go on after an erase */
  char name[16];                /* copies are NAME.N.img */
} kill;

static int
kill_pwrite (void *opaque, int fd, const void *buf, size_t len, off_t off)
{
  uint32_t blk;
  bool erase = kill.ftl &&
    unit_is_erase_write (&kill.ftl->media, off, len, buf, &blk);

  if (kill.ftl && kill.n < kill.max &&
      alloc_nfree (kill.ftl) == kill.at_nfree) {
    char to[256], name[64];
    snprintf (name, sizeof name, "%s.%u.img", kill.name, kill.n++);
    unit_path (to, sizeof to, name);
    unit_copy_file (path, to);
  }
  /* Else the first erase after a copy ends the stretch: the copies of
   * its victim are made.
   */
  if (erase && !kill.on && kill.n > 0)
    kill.ftl = NULL;
  return media_default_io.pwrite (opaque, fd, buf, len, off);
}

static int
kill_sync (void *opaque, int fd)
{
  return 0;
}

static int
kill_sync_dir (void *opaque, const char *p)
{
  return 0;
}

static struct ftl_io kill_io;

static const struct ftl_io *
kill_io_get (void)
{
  kill_io = media_default_io;
  kill_io.pwrite = kill_pwrite;
  kill_io.pwritev = NULL;       /* every piece through kill_pwrite */
  kill_io.sync = kill_sync;
  kill_io.sync_dir = kill_sync_dir;
  return &kill_io;
}

/* Copy the file before each write while the watched handle's pool is
 * down to nfree, at most max times, as NAME.N.img, up to the first
 * erase, the last write copied (with on, through every erase).
 */
static void
kill_watch (struct ftl *ftl, uint32_t nfree, unsigned max, bool on,
            const char *name)
{
  kill.ftl = ftl;
  kill.at_nfree = nfree;
  kill.on = on;
  kill.max = max;
  kill.n = 0;
  snprintf (kill.name, sizeof kill.name, "%s", name);
}

static void
kill_path (char *buf, size_t len, const char *name, unsigned i)
{
  char n[64];
  snprintf (n, sizeof n, "%s.%u.img", name, i);
  unit_path (buf, len, n);
}

/* ---- opening and writing ---- */

/* unit_log, and whether GC said it found no block for its copies. */
static bool exhausted;

static void
reserve_log (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level == FTL_LOG_ERROR && strstr (msg, "free pool exhausted"))
    exhausted = true;
  unit_log (opaque, level, msg);
}

/* Open (or create) the image at p; sync=false if no_sync. */
static struct ftl *
open_img (const char *p, const struct ftl_io *io, bool no_sync)
{
  struct ftl_options o = {
    .path = p, .logical_bytes = SIZE, .page_size = PS,
    .pages_per_block = PPB, .op_percent = OP, .streams = 1,
    .hot_cold_always = true, .no_sync = no_sync,
    .log = reserve_log, .io = io ? io : unit_nosync_io (),
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);
  ck_assert_msg (r == 0, "ftl_open %s: %s", p, err);
  return ftl;
}

/* A write of logical page lpn: 0 or a negative errno. */
static int
write_page (struct ftl *ftl, uint64_t lpn, uint64_t version)
{
  uint8_t page[PS];
  unit_fill_page (page, PS, lpn, version);
  return ftl_write (ftl, page, PS, lpn * PS, 0);
}

/* One step of a load: a write, of one of the first HOT pages three
 * times in four, else of any page.  GC's victims then hold young data
 * and old, which hot/cold separation copies to two frontiers (gc.c:
 * partition_young), in two programs.
 */
#define HOT 8
static int
load_step (struct ftl *ftl, uint64_t *rng, uint64_t version)
{
  uint64_t x = unit_rnd (rng);
  return write_page (ftl, x % 4 ? (x >> 8) % HOT : (x >> 8) % LPAGES,
                     version);
}

/* A FULL block whose valid data pages are both younger and older than
 * hot_age: GC copies them in two programs, to gcw and to gcf (gc.c,
 * partition_young).  FTL_NO_BLOCK if there is none.
 */
static uint32_t
mixed_block (struct ftl *ftl)
{
  uint64_t now = ftl->next_seq;

  for (uint32_t b = 0; b < ftl->blocks; b++) {
    unsigned young = 0, old = 0;
    if (ftl->state[b] != FTL_BLK_FULL)
      continue;
    for (uint32_t p = 0; p < ftl->media.wp[b]; p++) {
      uint32_t ppn = media_ppn (&ftl->media, b, p);
      struct ftl_oob o;
      if (unit_oob_at (ftl, ppn, &o) < 0 || o.kind != FTL_OOB_DATA ||
          l2p_load (ftl, o.lpn) != ppn)
        continue;
      if (now - MIN (now, o.seq) < ftl->hot_age)
        young++;
      else
        old++;
    }
    if (young > 0 && old > 0)
      return b;
  }
  return FTL_NO_BLOCK;
}

/* Is there a FULL block that GC reclaims without copying anything (no
 * valid page, no trim page a replay may need)?
 */
static bool
cheap_block (struct ftl *ftl)
{
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    bool live = false;
    if (ftl->state[b] != FTL_BLK_FULL || ftl->valid[b] != 0)
      continue;
    for (uint32_t p = 0; p < ftl->media.wp[b] && !live; p++) {
      struct ftl_oob o;
      live = unit_oob_at (ftl, media_ppn (&ftl->media, b, p), &o) == 0 &&
        o.kind == FTL_OOB_TRIM && o.seq >= ftl->replay_seq;
    }
    if (!live)
      return true;
  }
  return false;
}

/* ---- the crash reserve ---- */

/* Reclaim victim with the file copied before each write while the pool
 * is down to nfree (kill_watch), then abandon the handle.  Returns the
 * number of copies.
 */
static unsigned
reclaim_killed (struct ftl *ftl, uint32_t victim, uint32_t nfree,
                const char *name)
{
  unsigned n;

  kill_watch (ftl, nfree, MAX_KILLS, true, name);
  ck_assert_int_eq (gc_reclaim_block (ftl, victim), 0);
  n = kill.n;
  kill.ftl = NULL;
  open_abandon (ftl);
  return n;
}

/* Images killed in GC's crash window must open and take writes.
 *
 * Session A runs a load until the pool is at the host's reserve with
 * no block that GC reclaims for free, and GC reclaims a victim whose
 * young and old pages go to two GC frontiers (two programs): its first
 * program takes the block above the crash reserve.  A is killed before
 * each write GC makes then.  Session B opens such an image: the pool
 * at the crash reserve, GC may take it (spor_short), and nothing is
 * reclaimable without copies; GC reclaims such a victim too and B is
 * killed before each write it makes with no free block.  Each of those
 * images C is opened and written.
 *
 * Before the fix, a C killed between B's two programs opened with no
 * free block, its victim half copied and no block reclaimable without
 * copies: the first write failed with ENOSPC and GC said "no free
 * erase block for relocated data (free pool exhausted)".
 */
START_TEST (test_killed_in_crash_window)
{
  char img[256];
  unsigned akills = 0, windows = 0, tried = 0, failed = 0;

  unit_quiet = true;
  for (uint64_t seed = 1; seed <= SEEDS; seed++) {
    uint64_t rng = seed, v = 1;
    uint32_t victim = FTL_NO_BLOCK;
    struct ftl *ftl;

    /* Session A. */
    unlink (path);
    ftl = open_img (path, kill_io_get (), false);
    for (uint64_t l = 0; l < LPAGES; l++)
      ck_assert_int_eq (write_page (ftl, l, v), 0);
    for (int i = 0; i < 16 * LPAGES; i++) {
      ck_assert_int_eq (load_step (ftl, &rng, ++v), 0);
      if (alloc_nfree (ftl) == FTL_RESERVE_BLOCKS && !cheap_block (ftl) &&
          (victim = mixed_block (ftl)) != FTL_NO_BLOCK)
        break;
    }
    if (victim == FTL_NO_BLOCK) {
      open_abandon (ftl);
      continue;
    }
    unsigned n = reclaim_killed (ftl, victim, FTL_SPOR_RESERVE_BLOCKS, "a");
    akills += n;

    for (unsigned a = 0; a < n; a++) {
      /* Session B. */
      kill_path (img, sizeof img, "a", a);
      unit_copy_file (img, path);
      ftl = open_img (path, kill_io_get (), false);
      if (alloc_nfree (ftl) != FTL_SPOR_RESERVE_BLOCKS || cheap_block (ftl) ||
          (victim = mixed_block (ftl)) == FTL_NO_BLOCK) {
        open_abandon (ftl);
        continue;
      }
      ck_assert (ftl->spor_short);
      unsigned bkills = reclaim_killed (ftl, victim, 0, "b");
      windows++;

      /* Each C. */
      for (unsigned k = 0; k < bkills; k++) {
        uint64_t crng = rng, cv = v + 1000;
        kill_path (img, sizeof img, "b", k);
        unit_last_error[0] = '\0';
        exhausted = false;
        ftl = open_img (img, NULL, false);
        uint32_t nfree = alloc_nfree (ftl);
        int r = 0;
        for (int i = 0; i < 2 * LPAGES && r == 0; i++)
          r = load_step (ftl, &crng, ++cv);
        tried++;
        if (r < 0 || exhausted) {
          printf ("seed %" PRIu64 ": kill %u of B after kill %u of A (%u "
                  "free at open): %s%s; %s\n", seed, k, a, nfree,
                  r < 0 ? strerror (-r) : "ok",
                  exhausted ? ", free pool exhausted" : "", unit_last_error);
          fflush (stdout);
          failed++;
          open_abandon (ftl);
        }
        else
          ck_assert_int_eq (ftl_close (ftl), 0);
      }
    }
  }
  unit_quiet = false;
  printf ("crash window: %u kills of A, %u opens at the reserve with "
          "nothing to reclaim for free, %u kills of B with no free block\n",
          akills, windows, tried);
  ck_assert_uint_gt (windows, 0);
  ck_assert_msg (failed == 0, "%u of %u images killed in the crash "
                 "reserve's window failed", failed, tried);
}
END_TEST

static Suite *
reserve_suite (void)
{
  Suite *s = suite_create ("reserve");
  TCase *tc = tcase_create ("core");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_killed_in_crash_window);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  int failed;
  SRunner *sr = srunner_create (reserve_suite ());

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
