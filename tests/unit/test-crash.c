/* nbdkit-ftl: crash-point enumeration.
 *
 * A scripted workload (writes, overwrites, sub-page writes, trims,
 * zeros, flushes, FUA, enough churn for garbage collection, wear
 * leveling moves, checkpoints, and a clean close and reopen in the
 * middle) runs once through the fault-injection layer (helpers.h),
 * which records every backing write and sync.  The handle is opened
 * with manual_background: no thread runs, and the background work
 * (checkpoints, erases of drained blocks, barriers, wear leveling
 * moves, garbage collection) runs in steps (ftl_background_step) that
 * the workload places between its requests, seeded; the requests
 * leave that work to the steps, as they would to the thread, and do
 * it themselves only when the steps fall behind.  So the power is also
 * cut inside each kind of background work, at every one of its writes
 * and syncs.  Then, for every event index n, the backing file is
 * rebuilt as a power cut during event n would leave it, five ways:
 *
 *   in order   the writes since the last sync reached the file, event n
 *              torn at a random byte;
 *   random     a random subset of them, in a random order, the last one
 *              applied torn at a random byte;
 *   sectors    twice: another random subset, in a random order, each
 *              write applied torn with probability 1/2: any of its
 *              512-byte sectors reached the file, the others did not;
 *   none       none of them (only at syncs: the cut with most lost).
 *
 * (The cuts other than "in order" are only made where writes are
 * pending: with none, every cut gives the same file.)  Each crash point
 * has its own seeded sequence of random choices.
 *
 * The image is reopened and checked against a reference model at
 * 512-byte sector granularity: each sector reads as its last durable
 * value (flushed, or written with FUA) or as a value written to that
 * same sector after it, or zeros where a trim or zero came after it;
 * never another sector's data, never garbage.  An op counts as in
 * progress from its first backing write or sync; a close (in the
 * middle of the workload) has made everything durable once it has
 * returned, so a crash during the open that follows must keep every
 * value written before the close.  Erase counts are never below those
 * at the last completed sync.  A clean restart then gives the same
 * content.
 *
 * For a seeded sample of those crash points the recovery itself is
 * recorded and cut at each of its events, and the image recovered
 * again: it must give exactly what the uninterrupted recovery gave.
 *
 * A second, shorter workload runs with a write cache, whose pages
 * reach the log in destage batches (background steps, writers that
 * find the cache full, flushes and FUA writes), and is checked with
 * the same model: flushes and FUA writes are its durability points,
 * and anything written since may be lost, but never what they covered.
 *
 * Each event is classified when it is issued (inside garbage
 * collection, wear leveling, a checkpoint, a superblock update, an
 * erase, an open or a close; and, inside a background step, what the
 * step was doing: bg_work_here), and the number of crash points in
 * each category is printed; every kind of background step must have
 * been cut.  FTL_CRASH_SEED=N in the environment replays a run; the
 * seed is always printed.
 *
 * A fourth runs with sync=false, where only the session's mark (at
 * open) and its close are synced: a cut in order is then the death of
 * the server (nothing completed may be lost, no page may fail), every
 * other cut a crash of the host, which may lose or tear any write since
 * the mark, in any order: each sector must read as it was when the
 * session opened or as a value written since, or its page as an error
 * (test_crash_host).
 *
 * A fifth runs the write cache's workload on an image of three
 * namespaces, every request and every read through them
 * (test_crash_namespaces): a sector reads back in its own namespace
 * only.
 *
 * make check halves the random cuts of the variants that make three or
 * two of them at each crash point (the first and the fourth): each
 * random cut is made at every other point, alternating, so that every
 * point still gets one, and every kind is made at half the points;
 * make check-long (FTL_CHECK_LONG=1) makes all of them.  The cuts in
 * order and with none applied are made at every point either way.
 *
 * The creation of an image is cut the same way in test-crash-create.c.
 * The workload, the model and the checks of an image are in crash.c.
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

/* What is enumerated: the write cache, the size of the workload, the
 * cuts at each crash point, how often a recovery is crashed again, and
 * the background work that must have been cut.
 */
struct variant {
  const char *name;
  uint64_t cache_bytes;
  uint64_t slc_bytes;
  unsigned mix;                 /* random ops on each side of the reopen */
  const enum unit_cut_mode *modes;
  size_t nmodes;
  unsigned twice;               /* 1 in twice images: a second crash */
  unsigned must_cut;            /* 1 << enum bg_work */
  bool volatile_cache;          /* writes that completed in the cache
                                 * are lost at some cuts in order; with
                                 * none, never */
  bool no_sync;                 /* sync=false: a cut in order is the
                                 * death of the server (nothing written
                                 * is lost), the others crashes of the
                                 * host (see test_crash_host) */
  bool halve;                   /* make check: each random cut at every
                                 * other crash point */
  bool namespaces;              /* the image in three namespaces, each
                                 * request through those it spans, each
                                 * read too (crash_ns) */
};

/* make check-long (FTL_CHECK_LONG set, not 0): every cut. */
static bool
check_long (void)
{
  const char *e = getenv ("FTL_CHECK_LONG");

  return e && *e && strcmp (e, "0") != 0;
}

/* Does a sector read other than the last write of data that completed
 * to it (a lost write: allowed by the model only if it was not
 * flushed)?  Trims and zeros are not counted: their records wait in
 * memory for the next barrier, cache or not.
 */
static bool
lost_write (const struct walk *w, const uint64_t *got)
{
  uint64_t v;

  for (uint32_t s = 0; s < NSECT; s++)
    if (w->m.last[s] != 0 && got[s] != w->m.last[s] &&
        !(w->inflight && op_sets (w->inflight, s, &v)))
      return true;
  return false;
}

/* The op in progress at a crash point, for messages. */
static const char *
op_name (const struct op *o, const struct unit_ev *e)
{
  static const char *names[] = {
    [OP_WRITE] = "write", [OP_TRIM] = "trim", [OP_ZERO] = "zero",
    [OP_FLUSH] = "flush", [OP_REOPEN] = "close and open",
    [OP_STEP] = "background step",
  };
  if (!o)
    return "between ops";
  if (o->kind == OP_STEP && e && ev_work (e) != BG_NONE)
    return work_names[ev_work (e)];
  return names[o->kind];
}

static void
crash_every_event (const struct variant *v)
{
  static struct walk w;
  struct unit_fault f, rec;
  struct unit_disk d;
  struct ctx c = { 0 };
  struct counts cnt = { 0 };
  unsigned fg = 0, bg = 0, by_work[BG_WORK__MAX] = { 0 };
  unsigned steps_cut[BG_WORK__MAX] = { 0 };
  long last_step = -1;
  unsigned lost_in_order = 0;
  size_t nops;
  long *op_start, *op_end;
  struct op *ops;
  uint64_t got[NSECT], again[NSECT];
  double t0 = unit_now ();
  char what[512];

  bool halve = v->halve && !check_long ();

  printf ("%s: seed %" PRIu64 " (set FTL_CRASH_SEED to replay)%s\n", v->name,
          seed, halve ? "; the random cuts at every other point (make "
          "check; FTL_CHECK_LONG=1 for all)" : "");
  cache_bytes = v->cache_bytes;
  slc_bytes = v->slc_bytes;
  no_sync = v->no_sync;
  with_ns = v->namespaces;
  unit_fault_init (&f);
  unit_fault_init (&rec);
  ops = record (&f, &c, v->mix, &nops, &op_start, &op_end);
  unit_disk_init (&d, &f, start);
  memset (&w, 0, sizeof w);
  w = (struct walk) { .ops = ops, .nops = nops, .op_start = op_start,
                      .op_end = op_end, .c = &c };

  for (size_t n = 0; n <= f.n; n++) {
    const struct unit_ev *e = n < f.n ? &f.ev[n] : NULL;
    uint64_t rng = seed ^ (n * 0x9E3779B97F4A7C15ULL);

    walk_to (&w, n);
    if (only >= 0 && (long) n != only)
      continue;

    unsigned pending = pending_writes (&f, n);
    for (size_t i = 0; i < v->nmodes; i++) {
      enum unit_cut_mode mode = v->modes[i];
      struct unit_cut_info info;
      if (mode != UNIT_CUT_ORDER && pending == 0)
        continue;               /* the same file as in order */
      if (mode == UNIT_CUT_NONE && (!e || e->kind != UNIT_EV_SYNC))
        continue;
      if (halve && (mode == UNIT_CUT_RANDOM || mode == UNIT_CUT_SECTORS) &&
          (n + i) % 2 != 0)
        continue;
      unit_disk_cut (&d, n, mode, &rng, img, &info);
      ck_assert_uint_eq (info.pending, pending);
      snprintf (what, sizeof what, "%s: seed %" PRIu64 ", crash at event "
                "%zu of %zu (op %zu: %s; tags 0x%x; %s: %u of %u pending "
                "writes applied, %u torn, the last torn: %ld at %" PRIu64
                ")", v->name, seed, n, f.n, w.k,
                op_name (w.inflight, e), e ? e->tag : 0,
                mode == UNIT_CUT_ORDER ? "in order" :
                mode == UNIT_CUT_NONE ? "all lost" :
                mode == UNIT_CUT_RANDOM ? "random" : "random, sectors",
                info.applied, info.pending, info.torn_writes, info.torn,
                info.torn_at);
      /* A sample gets its recovery recorded and crashed again. */
      bool twice = v->twice && unit_rnd (&rng) % v->twice == 0;
      if (twice)
        unit_copy_file (img, img2);
      unit_fault_reset (&rec);
      /* sync=false: a cut in order is the death of the server, which
       * loses nothing written (the host's page cache has it all); the
       * others are crashes of the host, which may lose anything the
       * session wrote: every sector reads as it was when the session
       * opened, or as a value written since, or its page reads as an
       * error, never as anything else.
       */
      bool host = v->no_sync && mode != UNIT_CUT_ORDER;
      struct check_how how = { .eio_ok = host }, how2 = how;
      check_image_how (img, twice ? &rec : NULL, host ? &w.mh : &w.m,
                       w.inflight, w.ec_min, got, what, &how);
      if (twice)
        second_crash (&rec, got, w.ec_min, &rng, what, &cnt);
      if (v->no_sync) {
        /* From the sync of the open's mark (or of a new pin) to the
         * first sync of the close, the mark is on the media whatever
         * was lost.
         */
        long ls = unit_fault_last_sync (&f, n);
        if (ls >= 0 && !(f.ev[ls].tag & TAG_CLOSE) && !how.mark)
          ck_abort_msg ("%s: the open did not find the mark of the "
                        "sync=false session", what);
        cnt.marks += how.mark;
        cnt.host += host;
        cnt.host_eio += how.eio_pages > 0;
        cnt.eio_pages += how.eio_pages;
        /* A sample of the images with lost pages: what they do next. */
        if (how.eio_pages >= 3 && cnt.host_eio % 16 == 1) {
          unit_copy_file (img, img2);
          cnt.exercised += exercise_lost (img2, got, what);
        }
      }
      /* A clean restart gives the same content (the same errors). */
      check_image_how (img, NULL, NULL, NULL, w.ec_min, again, what, &how2);
      check_same (got, again, what);
      /* Every write issued reached the file, in order (but the one
       * in flight): only data still in a write cache can be missing.
       */
      if (mode == UNIT_CUT_ORDER && lost_write (&w, got))
        lost_in_order++;
      cnt.images++;
      if (info.torn >= 0)
        cnt.torn++;
      cnt.torn_writes += info.torn_writes;
      if (info.torn_writes > 1)
        cnt.multi_torn++;
      if (info.applied < info.pending)
        cnt.dropped++;
      if (mode == UNIT_CUT_RANDOM || mode == UNIT_CUT_SECTORS)
        cnt.subsets++;
    }
    cnt.points++;
    for (int t = 0; t < NTAGS; t++)
      if (e && (e->tag & (1u << t)))
        cnt.by_tag[t]++;
    if (e && ev_work (e) != BG_NONE) {
      bg++;
      by_work[ev_work (e)]++;
      if (e->op != last_step) {
        steps_cut[ev_work (e)]++;
        last_step = e->op;
      }
    }
    else if (e)
      fg++;
  }

  printf ("%s: %u crash points (every event: %u in requests, opens and "
          "closes, %u in background steps), %u images checked (%u with a "
          "torn write, %u with several, %u writes torn in all; %u with "
          "lost writes; %u random subsets of pending writes) in %.1f s\n",
          v->name, cnt.points, fg, bg, cnt.images, cnt.torn, cnt.multi_torn,
          cnt.torn_writes, cnt.dropped, cnt.subsets, unit_now () - t0);
  for (int t = 0; t < NTAGS; t++)
    printf ("%s:   %5u crash points in %s\n", v->name, cnt.by_tag[t],
            tag_names[t]);
  for (int k = BG_NONE + 1; k < BG_WORK__MAX; k++)
    printf ("%s:   %5u crash points in %u background steps: %s\n", v->name,
            by_work[k], steps_cut[k], work_names[k]);
  printf ("%s: %u crash points during recovery (%u images checked)\n",
          v->name, cnt.second, cnt.second_images);
  printf ("%s: %u cuts with every issued write in the file lost a "
          "completed write (in a write cache)\n", v->name, lost_in_order);
  if (v->no_sync) {
    unsigned syncs = 0, repins = 0;
    for (size_t i = 0; i < f.n; i++)
      if (f.ev[i].kind == UNIT_EV_SYNC) {
        syncs++;
        repins += !(f.ev[i].tag & (TAG_OPEN | TAG_CLOSE));
      }
    printf ("%s: %u syncs, %u of them inside sessions (new pins: the trim "
            "records kept took a quarter of the spare)\n", v->name, syncs,
            repins);
    printf ("%s: %u images opened with the mark of the session; %u left by "
            "a crash of the host, %u of them with pages that read as "
            "errors (%u pages in all; %u of those images written, trimmed "
            "and collected after)\n", v->name, cnt.marks, cnt.host,
            cnt.host_eio, cnt.eio_pages, cnt.exercised);
    ck_assert (only >= 0 || cnt.exercised > 10);
    /* Both outcomes, so that a check that never fires shows. */
    ck_assert (only >= 0 || cnt.host_eio > 0);
    ck_assert (only >= 0 || cnt.host_eio < cnt.host);
    ck_assert (only >= 0 || cnt.marks > cnt.points / 2);
  }
  for (int t = 0; t < NTAGS && only < 0; t++)
    ck_assert_msg (cnt.by_tag[t] > 0, "no crash point in %s", tag_names[t]);
  for (int k = BG_NONE + 1; k < BG_WORK__MAX && only < 0; k++)
    if (v->must_cut & (1u << k))
      ck_assert_msg (steps_cut[k] > 0, "no crash point in a background "
                     "step doing %s", work_names[k]);
  ck_assert (only >= 0 || !v->twice || cnt.second > 100);
  if (v->volatile_cache)
    ck_assert (only >= 0 || lost_in_order > 100);
  else
    ck_assert_msg (lost_in_order == 0, "%u cuts lost a completed write "
                   "with no write cache", lost_in_order);
  ck_assert (only >= 0 || cnt.multi_torn > 100);

  unit_disk_free (&d);
  unit_fault_free (&f);
  unit_fault_free (&rec);
  model_free (&w.m);
  model_free (&w.mh);
  free (op_start);
  free (op_end);
  free (ops);
  free (c.snap_ev);
  free (c.snap_ec);
  no_sync = false;
  with_ns = false;
}

static const enum unit_cut_mode all_modes[] = {
  UNIT_CUT_ORDER, UNIT_CUT_RANDOM, UNIT_CUT_SECTORS, UNIT_CUT_SECTORS,
  UNIT_CUT_NONE,
};

START_TEST (test_crash_every_event)
{
  static const struct variant v = {
    .name = "crash", .mix = 220,
    .modes = all_modes, .nmodes = sizeof all_modes / sizeof all_modes[0],
    .twice = 16, .halve = true,
    .must_cut = 1u << BG_GC | 1u << BG_WL | 1u << BG_CKPT | 1u << BG_ERASE
      | 1u << BG_BARRIER,
  };
  crash_every_event (&v);
}
END_TEST

/* The same with a write cache of 8 pages (an eighth of the disk, as
 * much as its spare allows): writes complete in the cache, and reach
 * the log in destage batches, run by background steps, by writers that
 * find the cache full, and by flushes and FUA writes, which are the
 * only durability points.
 * After a cut, every write that a completed flush (or FUA) covered
 * must read back; a write not flushed may be lost, but a sector never
 * reads older than its last flushed version, nor garbage.
 */
static const enum unit_cut_mode cache_modes[] = {
  UNIT_CUT_ORDER, UNIT_CUT_SECTORS, UNIT_CUT_NONE,
};

START_TEST (test_crash_write_cache)
{
  static const struct variant v = {
    .name = "crash, write cache", .cache_bytes = 8 * PS, .mix = 120,
    .modes = cache_modes,
    .nmodes = sizeof cache_modes / sizeof cache_modes[0],
    .must_cut = 1u << BG_DESTAGE | 1u << BG_GC | 1u << BG_CKPT,
    .volatile_cache = true,
  };
  crash_every_event (&v);
}
END_TEST

/* The same with the image in three namespaces (crash_ns: 8, 24 and 32
 * pages, a boundary inside the hot region), every request through the
 * namespaces its range spans (a piece in each), and the image read
 * back through them after each cut: a sector reads back only in its own
 * namespace, at its own offset, and as the model allows.  With the
 * write cache, whose batches mix the namespaces' pages.
 */
START_TEST (test_crash_namespaces)
{
  static const struct variant v = {
    .name = "crash, namespaces", .cache_bytes = 8 * PS, .mix = 120,
    .modes = cache_modes,
    .nmodes = sizeof cache_modes / sizeof cache_modes[0],
    .must_cut = 1u << BG_DESTAGE | 1u << BG_GC | 1u << BG_CKPT,
    .volatile_cache = true, .namespaces = true,
  };
  crash_every_event (&v);
}
END_TEST

/* The same with the SLC cache: host writes fill blocks in SLC mode (a
 * static block and what free space allows), background steps fold
 * them; cut inside folds, and recovery must know each block's mode.
 */
START_TEST (test_crash_slc)
{
  static const struct variant v = {
    .name = "crash, SLC cache", .slc_bytes = 4 * PS, .mix = 140,
    .modes = cache_modes,
    .nmodes = sizeof cache_modes / sizeof cache_modes[0],
    .must_cut = 1u << BG_FOLD | 1u << BG_CKPT,
  };
  crash_every_event (&v);
  slc_bytes = 0;
}
END_TEST

/* sync=false: the image is synced only to set the session's mark at its
 * open and to clear it at its close, and everything between is cut two
 * ways.  In order (every write issued reached the file, the one in
 * flight torn): the death of the server, or a power cut emulated in it,
 * which the host's page cache survives: nothing completed may be lost,
 * and no page may read as an error.  A random subset of every write
 * since the mark, in a random order, torn at random bytes or sectors,
 * or none of them: a crash of the host.  The open must find the mark
 * (recovery.c then never loads a checkpoint older than the one the
 * session pinned, and verifies every mapped page), and each sector must
 * read as it was when the session opened or as a value written since,
 * or its page as an error; and the same after a clean restart.
 */
static const enum unit_cut_mode host_modes[] = {
  UNIT_CUT_ORDER, UNIT_CUT_RANDOM, UNIT_CUT_SECTORS, UNIT_CUT_NONE,
};

START_TEST (test_crash_host)
{
  static const struct variant v = {
    .name = "crash, sync=false", .mix = 220,
    .modes = host_modes, .nmodes = sizeof host_modes / sizeof host_modes[0],
    .must_cut = 1u << BG_GC | 1u << BG_CKPT | 1u << BG_ERASE,
    .no_sync = true, .halve = true,
  };
  unit_quiet = true;            /* a message per page lost */
  crash_every_event (&v);
}
END_TEST

/* Syncs among the events recorded in f. */
static unsigned
count_syncs (const struct unit_fault *f)
{
  unsigned n = 0;

  for (size_t i = 0; i < f->n; i++)
    n += f->ev[i].kind == UNIT_EV_SYNC;
  return n;
}

/* The format version of both superblock copies of path (0 if they
 * differ or one does not decode).
 */
static uint32_t
sb_versions (const char *path)
{
  uint8_t buf[FTL_SB_BYTES];
  struct ftl_superblock sb[2];

  for (int s = 0; s < 2; s++) {
    unit_read_file (path, buf, sizeof buf, s * FTL_SB_SLOT);
    if (fmt_sb_decode (buf, sizeof buf, &sb[s], NULL, 0) != FTL_FMT_OK)
      return 0;
  }
  return sb[0].version == sb[1].version ? sb[0].version : 0;
}

/* sync=false on an image of format version 4 (no flags in its
 * superblock): it opens, becomes version 5 in both superblock copies
 * (so that a program that reads up to version 4 refuses it from then
 * on), at the cost of one sync more at that open only; then each
 * sync=false open syncs once (the mark), each close twice, and a
 * session writes no sync between.
 */
START_TEST (test_unsynced_version_4)
{
  struct unit_fault f;
  struct ftl *ftl;
  uint8_t buf[FTL_SB_BYTES];
  char err[256];
  int r;

  unit_fault_init (&f);
  no_sync = false;
  ftl = open_image (img, unit_nosync_io (), err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_int_eq (write_whole_page (ftl, 5, 1), 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
  /* Both copies as a version 4 program writes them, its checksums
   * seeded with the PPN.
   */
  unit_seed_by_ppn (img);
  for (int s = 0; s < 2; s++) {
    struct ftl_superblock sb;
    unit_read_file (img, buf, sizeof buf, s * FTL_SB_SLOT);
    ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &sb, NULL, 0),
                      FTL_FMT_OK);
    sb.version = 4;
    fmt_sb_encode (&sb, buf);
    int fd = open (img, O_WRONLY | O_CLOEXEC);
    ck_assert_int_eq (pwrite (fd, buf, sizeof buf, s * FTL_SB_SLOT),
                      (ssize_t) sizeof buf);
    close (fd);
  }
  ck_assert_uint_eq (sb_versions (img), 4);

  no_sync = true;
  for (unsigned round = 0; round < 2; round++) {
    unit_fault_reset (&f);
    ftl = open_image (img, &f.io, err, sizeof err, &r);
    ck_assert_msg (r == 0, "%s", err);
    ck_assert_uint_eq (count_syncs (&f), round == 0 ? 2 : 1);
    ck_assert_uint_eq (sb_versions (img), FTL_FORMAT_VERSION);
    ck_assert (ftl->sb.flags & FTL_SB_UNSYNCED);
    expect_page (ftl, 5, round + 1, "version 4, sync=false");
    unit_fault_reset (&f);
    for (uint32_t p = 0; p < LP; p++)
      ck_assert_int_eq (write_whole_page (ftl, p, round + 2), 0);
    ck_assert_int_eq (ftl_flush (ftl), 0);
    ck_assert_int_eq (ftl_write (ftl, buf, SECT, 0, FTL_FUA), 0);
    ck_assert_int_eq (ftl_trim (ftl, 2 * PS, 8 * PS, 0), 0);
    ck_assert_int_eq (ftl_flush (ftl), 0);
    ck_assert_uint_eq (count_syncs (&f), 0);
    ck_assert_uint_gt (f.n, LP);
    unit_fault_reset (&f);
    ck_assert_int_eq (write_whole_page (ftl, 5, round + 2), 0);
    ck_assert_int_eq (ftl_close (ftl), 0);
    ck_assert_uint_eq (count_syncs (&f), 2);
  }
  /* Cleanly closed: no mark, nothing to verify. */
  ftl = open_image (img, unit_nosync_io (), err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert (!ftl->unsynced_found);
  expect_page (ftl, 5, 3, "version 4, after sync=false");
  ck_assert_int_eq (ftl_close (ftl), 0);
  no_sync = false;
  unit_fault_free (&f);
}
END_TEST

/* Does checkpoint slot i of img hold a whole checkpoint for this
 * geometry: a header that decodes and a body that matches its checksum?
 */
static bool
slot_valid (const char *path, const struct ftl_superblock *sb, int i,
            struct ftl_ckpt_header *h)
{
  uint8_t hb[FTL_CKPT_HDR_BYTES];
  uint8_t *body;
  bool ok;

  unit_read_file (path, hb, sizeof hb, sb->ckpt_offset[i]);
  if (fmt_ckpt_header_decode (hb, sizeof hb, h) != FTL_FMT_OK) {
    h->generation = 0;
    return false;
  }
  if (h->logical_pages != LP || h->pages_per_block != PPB ||
      h->body_bytes > unit_file_size (path))
    return false;
  body = malloc (h->body_bytes);
  ck_assert_ptr_nonnull (body);
  unit_read_file (path, body, h->body_bytes,
                  sb->ckpt_offset[i] + FTL_CKPT_HDR_BYTES);
  ok = fmt_checksum (body, h->body_bytes, 0) == h->body_checksum;
  free (body);
  return ok;
}

/* The newest checkpoint damaged (a byte of its body flipped) at every
 * event after the second checkpoint.  Where the other slot holds a
 * whole checkpoint, recovery must fall back to it and roll forward to
 * a state the model allows; only where it does not (the crash tore the
 * older slot while it was being rewritten) may the image be refused,
 * and then with "no valid checkpoint".  Never wrong data.
 */
START_TEST (test_damaged_newest_checkpoint)
{
  static struct walk w;
  struct unit_fault f;
  struct unit_disk d;
  struct ctx c = { 0 };
  size_t nops;
  long *op_start, *op_end;
  struct op *ops;
  uint64_t got[NSECT];
  unsigned recovered = 0, refused = 0;
  char what[512];

  ck_assert_uint_eq (LP * PS, SIZE);
  printf ("damaged checkpoint: seed %" PRIu64 "\n", seed);
  unit_fault_init (&f);
  cache_bytes = 0;
  ops = record (&f, &c, 220, &nops, &op_start, &op_end);
  unit_disk_init (&d, &f, start);
  memset (&w, 0, sizeof w);
  w = (struct walk) { .ops = ops, .nops = nops, .op_start = op_start,
                      .op_end = op_end, .c = &c };
  unit_quiet = true;

  for (size_t n = 0; n <= f.n; n++) {
    uint64_t rng = seed ^ (n * 0xD1B54A32D192ED03ULL);
    struct ftl_superblock sb;
    struct ftl_ckpt_header h[2];
    uint8_t buf[FTL_SB_SLOT];
    struct unit_cut_info info;
    struct ftl *ftl;
    char err[256];
    int r, newest;
    bool valid[2], fallback;

    walk_to (&w, n);
    if (only >= 0 && (long) n != only)
      continue;
    unit_disk_cut (&d, n, UNIT_CUT_ORDER, &rng, img, &info);
    unit_read_file (img, buf, FTL_SB_BYTES, 0);
    ck_assert_int_eq (fmt_sb_decode (buf, FTL_SB_BYTES, &sb, NULL, 0),
                      FTL_FMT_OK);
    for (int i = 0; i < 2; i++)
      valid[i] = slot_valid (img, &sb, i, &h[i]);
    if (h[0].generation < 2 && h[1].generation < 2)
      continue;                 /* no older checkpoint to fall back to */
    newest = h[1].generation > h[0].generation;
    fallback = valid[1 - newest];
    uint64_t off = sb.ckpt_offset[newest] + FTL_CKPT_HDR_BYTES
      + unit_rnd (&rng) % h[newest].body_bytes;
    unit_flip_byte (img, off, 1u << (unit_rnd (&rng) % 8));
    snprintf (what, sizeof what, "seed %" PRIu64 ", event %zu of %zu (op "
              "%zu), checkpoint %" PRIu64 " damaged at byte %" PRIu64 "; "
              "the other slot %s", seed, n, f.n, w.k, h[newest].generation,
              off - sb.ckpt_offset[newest], fallback
              ? "holds a whole checkpoint" : "does not");

    ftl = open_image (img, unit_nosync_io (), err, sizeof err, &r);
    if (r < 0) {
      ck_assert_msg (!fallback, "%s: open failed with '%s'", what, err);
      ck_assert_msg (strstr (err, "no valid checkpoint") != NULL, "%s: "
                     "open failed with '%s'", what, err);
      refused++;
      continue;
    }
    ck_assert_msg (fallback, "%s: the image opened", what);
    open_abandon (ftl);
    check_image (img, NULL, &w.m, w.inflight, w.ec_min, got, what);
    recovered++;
  }
  printf ("damaged checkpoint: %u images recovered from the older "
          "checkpoint, %u refused to open\n", recovered, refused);
  ck_assert (only >= 0 || recovered + refused > 500);
  ck_assert (only >= 0 || recovered > 10 * refused);

  unit_disk_free (&d);
  unit_fault_free (&f);
  model_free (&w.m);
  free (op_start);
  free (op_end);
  free (ops);
  free (c.snap_ev);
  free (c.snap_ec);
}
END_TEST

static Suite *
crash_suite (void)
{
  Suite *s = suite_create ("crash");
  TCase *tc = tcase_create ("crash");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_crash_every_event);
  tcase_add_test (tc, test_crash_write_cache);
  tcase_add_test (tc, test_crash_slc);
  tcase_add_test (tc, test_crash_namespaces);
  tcase_add_test (tc, test_damaged_newest_checkpoint);
  suite_add_tcase (s, tc);

  tc = tcase_create ("host");
  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_crash_host);
  tcase_add_test (tc, test_unsynced_version_4);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (crash_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
