/* nbdkit-ftl: unit tests of gc.c, garbage collection.
 *
 * Victims are observed two ways.  The GC debug message ("gc: victim
 * block N, ...") is logged right after a victim is picked, in the
 * picking thread, before anything is relocated: the log callback
 * compares the victim's cost (valid pages plus trim pages) with every
 * FULL block's at that instant.  And an erase starts with a write of
 * zeros over the block's OOB entries, so a write hook records which
 * blocks were erased and in what order, and whether for wear leveling
 * (ftl->gc.moving_for_wl set), and by which kind of background step
 * (bg_work_here), if any.
 * The tests are single-threaded, so the handle's fields are stable
 * while the callback reads them.
 *
 * Pages are written with unit_fill_page patterns and a reference array
 * of versions, so that every read is checked for its logical page and
 * version.
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

#define PS 4096

static char path[256];

/* FTL_GC_SEED=N in the environment adds N to the seed of every random
 * workload below (default 0).  The write amplification bounds were set
 * from the spread measured over N = 0..19 with
 *
 *   for n in $(seq 0 19); do
 *     FTL_GC_SEED=$n tests/unit/test-gc | grep -E '^(90/10|waf:)'
 *   done
 *
 * which gave:
 *
 *   90/10 skew, 512 pages:   greedy 2.144 .. 2.269, cost-benefit
 *                            1.652 .. 1.729, greedy higher by 0.415 ..
 *                            0.589 in every run
 *   90/10, 4096 pages:       one log 1.701 .. 1.730, hot/cold separation
 *                            1.463 .. 1.487, the ratio 0.856 .. 0.868
 *   uniform, 4096 pages:     2.664 .. 2.710
 */
static uint64_t seed_offset;

/* ---- tracing erases ---- */

#define MAX_TRACE 4096

static struct {
  struct ftl *ftl;
  struct media geo;             /* the image's geometry */
  uint32_t erased[MAX_TRACE];
  bool wl[MAX_TRACE];           /* erased for wear leveling */
  enum bg_work work[MAX_TRACE]; /* ... by a background step doing this */
  unsigned syncs;               /* syncs so far */
  unsigned syncs_before[MAX_TRACE]; /* ... when each erase began */
  unsigned n;
  bool overflow;
} trace;

/* An erase writes zeros over the block's OOB entries (between the two
 * header copies), then the header: count it at the zeros.
 */
static int
trace_pwrite (void *opaque, int fd, const void *buf, size_t len, off_t off)
{
  uint32_t blk;

  if (unit_is_erase_write (&trace.geo, off, len, buf, &blk)) {
    if (trace.n < MAX_TRACE) {
      trace.wl[trace.n] = trace.ftl && trace.ftl->gc.moving_for_wl;
      trace.work[trace.n] = bg_work_here ();
      trace.syncs_before[trace.n] = trace.syncs;
      trace.erased[trace.n++] = blk;
    }
    else
      trace.overflow = true;
  }
  return media_default_io.pwrite (opaque, fd, buf, len, off);
}

/* ---- the greedy check ---- */

static struct {
  unsigned picks;               /* victims picked */
  unsigned bad;                 /* ... that were not a cheapest block */
  char first_bad[256];
} gcw;

static uint32_t
block_cost (struct ftl *ftl, uint32_t b)
{
  return ftl->valid[b] + ftl->trim_pages[b];
}

/* At the instant a victim is picked: it is a FULL block with something
 * to reclaim, and, for greedy, no FULL block costs less.
 */
static void
check_pick (struct ftl *ftl, uint32_t v)
{
  uint32_t min = UINT32_MAX;
  const char *why = NULL;

  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (ftl->state[b] == FTL_BLK_FULL && block_cost (ftl, b) < ftl->ppb)
      min = MIN (min, block_cost (ftl, b));
  gcw.picks++;
  if (v >= ftl->blocks || ftl->state[v] != FTL_BLK_FULL)
    why = "not a FULL block";
  else if (block_cost (ftl, v) >= ftl->ppb)
    why = "a block with nothing to reclaim";
  else if (ftl->gc.policy == FTL_GC_GREEDY && block_cost (ftl, v) != min)
    why = "not a cheapest block";
  if (why && gcw.bad++ == 0)
    snprintf (gcw.first_bad, sizeof gcw.first_bad, "victim %u (pick %u) "
              "costs %u pages, the cheapest FULL block %u: %s", v,
              gcw.picks, v < ftl->blocks ? block_cost (ftl, v) : 0, min,
              why);
}

static void
gc_log (void *opaque, enum ftl_log_level level, const char *msg)
{
  unsigned v, valid, nfree;

  if (level == FTL_LOG_DEBUG) {
    if (trace.ftl &&
        sscanf (msg, "gc: victim block %u, %u valid pages, %u free blocks",
                &v, &valid, &nfree) == 3)
      check_pick (trace.ftl, v);
    return;
  }
  unit_log (opaque, level, msg);
}

/* Every pick so far was right, and there were at least min_picks. */
static void
assert_picks (unsigned min_picks)
{
  ck_assert_msg (gcw.bad == 0, "%u of %u victims were wrong; first: %s",
                 gcw.bad, gcw.picks, gcw.first_bad);
  ck_assert_msg (gcw.picks >= min_picks, "only %u victims seen (is the "
                 "'gc: victim block' debug message still logged?)",
                 gcw.picks);
}

static int
nosync (void *opaque, int fd)
{
  trace.syncs++;
  return 0;
}

static struct ftl_io trace_io;

static void
setup (void)
{
  const char *e = getenv ("FTL_GC_SEED");

  seed_offset = e && *e ? strtoull (e, NULL, 0) : 0;
  unit_dir_clean ();
  unit_path (path, sizeof path, "gc.img");
  memset (&trace, 0, sizeof trace);
  memset (&gcw, 0, sizeof gcw);
  trace_io = media_default_io;
  trace_io.pwrite = trace_pwrite;
  trace_io.sync = nosync;
}

static struct ftl *
open_policy (uint64_t lpages, uint32_t ppb, double op, unsigned streams,
             enum ftl_gc_policy policy)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = lpages * PS, .page_size = PS,
    .pages_per_block = ppb, .op_percent = op, .streams = streams,
    .gc_policy = policy, .log = gc_log, .io = &trace_io,
    .debug = FTL_DEBUG_GC,
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);

  ck_assert_msg (r == 0, "ftl_open: %s", err);
  ck_assert_int_eq (ftl->gc.policy, policy);
  trace.ftl = ftl;
  trace.geo = ftl->media;
  return ftl;
}

static struct ftl *
open_traced (uint64_t lpages, uint32_t ppb, double op, unsigned streams)
{
  return open_policy (lpages, ppb, op, streams, FTL_GC_GREEDY);
}

/* Reopen the image (trace.ftl follows the handle). */
static struct ftl *
reopen (void)
{
  struct ftl_options o = {
    .path = path, .log = gc_log, .io = &trace_io, .debug = FTL_DEBUG_GC,
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);

  ck_assert_msg (r == 0, "ftl_open: %s", err);
  trace.ftl = ftl;
  return ftl;
}

/* ---- the reference ---- */

struct ref {
  uint64_t lpages;
  uint64_t *version;            /* 0: never written */
  uint64_t next_version;
};

static void
ref_init (struct ref *r, uint64_t lpages)
{
  r->lpages = lpages;
  r->version = calloc (lpages, sizeof *r->version);
  r->next_version = 1;
}

static void
ref_free (struct ref *r)
{
  free (r->version);
}

/* Write n pages from lpn, each with a new version. */
static void
write_pages (struct ftl *ftl, struct ref *r, uint64_t lpn, uint64_t n)
{
  uint8_t *buf = malloc (n * PS);

  for (uint64_t k = 0; k < n; k++) {
    r->version[lpn + k] = r->next_version++;
    unit_fill_page (buf + k * PS, PS, lpn + k, r->version[lpn + k]);
  }
  int e = ftl_write (ftl, buf, n * PS, lpn * PS, 0);
  ck_assert_msg (e == 0, "writing %" PRIu64 " pages at %" PRIu64 ": %s",
                 n, lpn, strerror (-e));
  free (buf);
}

/* Read one page and check it is the current version of that page. */
static void
verify_page (struct ftl *ftl, const struct ref *r, uint64_t lpn)
{
  uint8_t page[PS];
  uint64_t l = 0, v = 0;
  int e = ftl_read (ftl, page, PS, lpn * PS);
  int k;

  ck_assert_msg (e == 0, "reading page %" PRIu64 ": %s", lpn, strerror (-e));
  k = unit_page_identify (page, PS, &l, &v);
  ck_assert_msg (k >= 0, "page %" PRIu64 " holds garbage", lpn);
  if (k == 1)
    ck_assert_msg (l == lpn, "page %" PRIu64 " holds page %" PRIu64 "'s "
                   "data", lpn, l);
  ck_assert_msg (v == r->version[lpn], "page %" PRIu64 " has version %"
                 PRIu64 ", expected %" PRIu64, lpn, v, r->version[lpn]);
}

static void
verify_all (struct ftl *ftl, const struct ref *r)
{
  for (uint64_t l = 0; l < r->lpages; l++)
    verify_page (ftl, r, l);
}

/* Close the handle cleanly, reopen the image and check every page,
 * then close it again.
 */
static void
restart_verify (struct ftl *ftl, const struct ref *r)
{
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = reopen ();
  verify_all (ftl, r);
  ck_assert_int_eq (ftl_close (ftl), 0);
}

/* Erases recorded for wear leveling. */
static unsigned
count_wl (void)
{
  unsigned n = 0;
  ck_assert (!trace.overflow);
  for (unsigned i = 0; i < trace.n; i++)
    n += trace.wl[i];
  return n;
}

/* The first victim is the block with the fewest valid pages, the second
 * the next fewest.  Blocks 0..3 are written with logical pages 0..31;
 * overwriting 6 pages of block 0, 3 of block 1 and 1 of block 2 leaves
 * them with 2, 5 and 7 valid pages; the rest of the disk is then filled
 * with fresh pages and overwrites spread one page per block (so that no
 * other block drops below 6 valid pages) until GC runs.  The pages GC
 * copies keep their data and their sequence numbers.
 */
START_TEST (test_greedy_constructed)
{
  /* 256 pages, 8 per block, 42 blocks (10 spare): one stream. */
  struct ftl *ftl = open_traced (256, 8, 31.25, 1);
  struct ref r;
  const uint64_t copied[] = { 6, 7, 11, 12, 13, 14, 15 };
  uint64_t seq[7];
  unsigned steps = 0;

  ck_assert_uint_eq (ftl->blocks, 42);
  ck_assert_uint_eq (ftl->nstreams, 1);
  ref_init (&r, 256);
  for (uint64_t l = 0; l < 32; l++)
    write_pages (ftl, &r, l, 1);
  for (uint32_t b = 0; b < 4; b++)
    for (uint64_t l = b * 8; l < b * 8 + 8; l++)
      ck_assert_uint_eq (media_ppn_block (&ftl->media, l2p_load (ftl, l)), b);
  for (uint64_t l = 0; l < 6; l++)
    write_pages (ftl, &r, l, 1);
  for (uint64_t l = 8; l < 11; l++)
    write_pages (ftl, &r, l, 1);
  write_pages (ftl, &r, 16, 1);
  ck_assert_uint_eq (ftl->valid[0], 2);
  ck_assert_uint_eq (ftl->valid[1], 5);
  ck_assert_uint_eq (ftl->valid[2], 7);

  /* The sequence numbers of the pages that will be copied. */
  for (int i = 0; i < 7; i++) {
    uint8_t oob[FTL_OOB_BYTES];
    struct ftl_oob o;
    uint32_t ppn = l2p_load (ftl, copied[i]);
    ck_assert_int_eq (media_read_oob (&ftl->media,
                                      media_ppn_block (&ftl->media, ppn),
                                      media_ppn_page (&ftl->media, ppn), 1,
                                      oob), 0);
    ck_assert_int_eq (fmt_oob_decode (oob, sizeof oob, &o), FTL_FMT_OK);
    seq[i] = o.seq;
  }

  /* Fill: fresh pages 32..255, then page 32+8k+j for j = 0, 1, ... */
  ck_assert_uint_eq (ctr_get (ftl, FTL_CTR_GC_RUNS), 0);
  ck_assert_uint_eq (trace.n, 0);
  for (uint64_t i = 0; ctr_get (ftl, FTL_CTR_GC_RUNS) == 0; i++) {
    uint64_t l = i < 224 ? 32 + i : 32 + ((i - 224) % 28) * 8 + (i - 224) / 28;
    ck_assert_uint_lt (i, 224 + 5 * 28);
    write_pages (ftl, &r, l, 1);
    steps++;
  }
  assert_picks (1);
  ck_assert_uint_ge (trace.n, 1);
  ck_assert_uint_eq (count_wl (), 0);
  ck_assert_msg (trace.erased[0] == 0, "first victim is block %u, expected "
                 "block 0 (2 valid pages)", trace.erased[0]);
  if (trace.n > 1)
    ck_assert_msg (trace.erased[1] == 1, "second victim is block %u, "
                   "expected block 1 (5 valid pages)", trace.erased[1]);
  printf ("greedy (constructed): GC after %u writes reclaimed %u blocks\n",
          steps, trace.n);

  /* The copies: elsewhere, readable, with their sequence numbers. */
  for (int i = 0; i < (trace.n > 1 ? 7 : 2); i++) {
    uint32_t ppn = l2p_load (ftl, copied[i]);
    uint32_t b = media_ppn_block (&ftl->media, ppn);
    uint8_t oob[FTL_OOB_BYTES];
    struct ftl_oob o;
    ck_assert_uint_gt (b, 1);
    verify_page (ftl, &r, copied[i]);
    ck_assert_int_eq (media_read_oob (&ftl->media, b,
                                      media_ppn_page (&ftl->media, ppn), 1,
                                      oob), 0);
    ck_assert_int_eq (fmt_oob_decode (oob, sizeof oob, &o), FTL_FMT_OK);
    ck_assert_uint_eq (o.kind, FTL_OOB_DATA);
    ck_assert_uint_eq (o.lpn, copied[i]);
    ck_assert_msg (o.seq == seq[i], "page %" PRIu64 " was copied with "
                   "sequence %" PRIu64 ", written with %" PRIu64,
                   copied[i], o.seq, seq[i]);
  }
  ck_assert_uint_ge (ctr_get (ftl, FTL_CTR_GC_COPIED), 2);
  verify_all (ftl, &r);

  /* And after a clean restart. */
  restart_verify (ftl, &r);
  ref_free (&r);
}
END_TEST

/* A skewed workload: 80% (or 90%) of the overwrites go to 20% (or 10%)
 * of the pages, so that blocks hold very different numbers of valid
 * pages and static wear leveling has cold blocks to move.  Every victim
 * is checked at the instant it is picked, the data is checked at the
 * end and after a restart.  Returns the write amplification.
 */
static double
skewed (enum ftl_gc_policy policy, unsigned hot_percent, uint64_t seed)
{
  struct ftl *ftl = open_policy (512, 16, 30, 1, policy);
  const uint64_t hot = 512 * (100 - hot_percent) / 100;
  struct ref r;
  uint64_t rng = seed + seed_offset;
  struct ftl_stats a, b;

  ref_init (&r, 512);
  write_pages (ftl, &r, 0, 512);
  ftl_get_stats (ftl, &a);
  for (unsigned i = 0; i < 8 * 512; i++) {
    uint64_t l = unit_rnd (&rng) % 100 < hot_percent
      ? unit_rnd (&rng) % hot : hot + unit_rnd (&rng) % (512 - hot);
    write_pages (ftl, &r, l, 1);
    if (i % 256 == 0)
      verify_page (ftl, &r, unit_rnd (&rng) % 512);
  }
  ftl_get_stats (ftl, &b);
  ck_assert_int_eq (b.gc_policy, policy);
  printf ("%s, %u/%u skew: %u victims checked, %" PRIu64 " pages copied; "
          "%u wear-leveling erases (%" PRIu64 " pages moved)\n",
          ftl_gc_policy_name (policy), hot_percent, 100 - hot_percent,
          gcw.picks, b.gc_copied_pages, count_wl (), b.wl_moved_pages);
  assert_picks (100);
  ck_assert_uint_gt (b.gc_runs, a.gc_runs + 100);
  verify_all (ftl, &r);
  restart_verify (ftl, &r);
  ref_free (&r);
  unlink (path);
  memset (&gcw, 0, sizeof gcw);
  trace.n = 0;
  return (double) (b.media_program_pages - a.media_program_pages)
    / (b.host_write_pages - a.host_write_pages);
}

/* Greedy: every victim is a cheapest FULL block when it is picked. */
START_TEST (test_greedy_every_victim)
{
  skewed (FTL_GC_GREEDY, 80, 7);
}
END_TEST

/* Cost-benefit: every victim is a FULL block with something to reclaim,
 * and the data survives.  Its write amplification must be clearly below
 * greedy's on the same skewed workload, as the man page says (greedy
 * is "worse under skewed ones"): by at least 0.25, about half the
 * smallest difference measured (see seed_offset).
 */
START_TEST (test_cost_benefit)
{
  double g = skewed (FTL_GC_GREEDY, 90, 8);
  double cb = skewed (FTL_GC_COST_BENEFIT, 90, 8);
  printf ("90/10 skewed overwrites: WAF greedy %.3f, cost-benefit %.3f\n",
          g, cb);
  ck_assert_msg (cb < g - 0.25, "cost-benefit's WAF %.3f is not clearly "
                 "below greedy's %.3f", cb, g);
}
END_TEST

/* Hot/cold separation: a 90/10 workload on a disk with room for the
 * extra frontiers, once with separation and once with one log (both
 * cost-benefit).  Separation must cut the write amplification clearly:
 * below 0.9 times one log's (measured 0.845 .. 0.858, see seed_offset;
 * bench/README.md has 1.53 against 2.22 on 1 GiB), hot rewrites must
 * have gone to the hot frontier and young relocations to their own,
 * and the data must survive, before and after a restart.
 */
static double
hot_cold_run (bool one_log, uint64_t seed, uint64_t *hot_blocks)
{
  const uint64_t lp = 4096, hot = lp / 10;
  struct ftl_options o = {
    .path = path, .logical_bytes = lp * PS, .page_size = PS,
    .pages_per_block = 32, .op_percent = 28, .streams = 1,
    .gc_policy = FTL_GC_COST_BENEFIT, .one_log = one_log, .log = gc_log,
    .io = &trace_io, .wl_threshold = UINT32_MAX,
  };
  struct ftl *ftl;
  char err[256];
  struct ref r;
  uint64_t rng = seed + seed_offset;
  struct ftl_stats a, b;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  trace.ftl = ftl;
  trace.geo = ftl->media;
  ck_assert_int_eq (ftl->one_log, one_log);
  *hot_blocks = 0;
  ref_init (&r, lp);
  write_pages (ftl, &r, 0, lp);
  ftl_get_stats (ftl, &a);
  for (unsigned i = 0; i < 10 * lp; i++) {
    uint64_t l = unit_rnd (&rng) % 100 < 90
      ? unit_rnd (&rng) % hot : hot + unit_rnd (&rng) % (lp - hot);
    write_pages (ftl, &r, l, 1);
    if (i % 64 == 0 && ftl->hot[0].block != FTL_NO_BLOCK &&
        ftl->hot[0].wp == 1)
      (*hot_blocks)++;
    if (i % 512 == 0)
      verify_page (ftl, &r, unit_rnd (&rng) % lp);
  }
  ftl_get_stats (ftl, &b);
  if (one_log)
    ck_assert (ftl->hot[0].block == FTL_NO_BLOCK &&
               ftl->gcw.block == FTL_NO_BLOCK);
  verify_all (ftl, &r);
  restart_verify (ftl, &r);
  ref_free (&r);
  unlink (path);
  trace.n = 0;
  return (double) (b.media_program_pages - a.media_program_pages)
    / (b.host_write_pages - a.host_write_pages);
}

START_TEST (test_hot_cold_separation)
{
  uint64_t hot_sep, hot_one;
  double one = hot_cold_run (true, 11, &hot_one);
  double sep = hot_cold_run (false, 11, &hot_sep);

  printf ("90/10, cost-benefit, 4096 pages: WAF one log %.3f, hot/cold "
          "separation %.3f\n", one, sep);
  ck_assert_uint_eq (hot_one, 0);
  ck_assert_uint_gt (hot_sep, 0);
  ck_assert_msg (sep < 0.9 * one, "separation %.3f is not clearly below "
                 "one log %.3f", sep, one);
}
END_TEST

/* hot-cold=auto: uniform random overwrites show no hot set, so
 * separation stops, and the hot host frontier and the young GC one fill
 * their open blocks and open no more; 90/10 overwrites then show one
 * (a lift well above HOT_COLD_ON_LIFT), and it resumes.  hot-cold=true
 * separates whatever the writes.  Every page reads back as its last
 * version throughout and after a restart.
 */
static struct ftl *
open_hot_cold_cache (uint64_t lp, bool always, uint64_t cache_pages)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = lp * PS, .page_size = PS,
    .pages_per_block = 32, .op_percent = 28, .streams = 1,
    .gc_policy = FTL_GC_COST_BENEFIT, .hot_cold_always = always,
    .log = gc_log, .io = &trace_io, .wl_threshold = UINT32_MAX,
    .write_cache_bytes = cache_pages * PS,
  };
  struct ftl *ftl;
  char err[256];

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  trace.ftl = ftl;
  trace.geo = ftl->media;
  ck_assert (!ftl->one_log);
  ck_assert_uint_eq (ftl->cache.nslots, cache_pages);
  return ftl;
}

static struct ftl *
open_hot_cold (uint64_t lp, bool always)
{
  return open_hot_cold_cache (lp, always, 0);
}

/* n overwrites, hot_pct of them to the first tenth of the disk (0:
 * uniform).  Returns how many found the hot frontier with an open block
 * (sampled every 64 writes).
 */
static unsigned
overwrite (struct ftl *ftl, struct ref *r, uint64_t *rng, uint64_t n,
           unsigned hot_pct)
{
  uint64_t lp = r->lpages, hot = lp / 10;
  unsigned hot_open = 0;

  for (uint64_t i = 0; i < n; i++) {
    uint64_t l = hot_pct == 0 ? unit_rnd (rng) % lp
      : unit_rnd (rng) % 100 < hot_pct ? unit_rnd (rng) % hot
      : hot + unit_rnd (rng) % (lp - hot);
    write_pages (ftl, r, l, 1);
    if (i % 64 == 0)
      hot_open += ftl->hot[0].block != FTL_NO_BLOCK;
    if (i % 512 == 0)
      verify_page (ftl, r, unit_rnd (rng) % lp);
  }
  return hot_open;
}

START_TEST (test_hot_cold_auto)
{
  const uint64_t lp = 4096;
  struct ftl *ftl = open_hot_cold (lp, false);
  struct ref r;
  uint64_t rng = 5 + seed_offset;
  struct ftl_stats st;
  unsigned hot_open;

  ref_init (&r, lp);
  write_pages (ftl, &r, 0, lp);
  ftl_get_stats (ftl, &st);
  ck_assert (st.hot_cold.separating && st.hot_cold.automatic);
  /* Uniform: off after the first decisions, and drained. */
  overwrite (ftl, &r, &rng, 3 * lp, 0);
  ftl_get_stats (ftl, &st);
  printf ("hot-cold=auto, uniform: lift %.2f (%.3f of overwrites, %.3f of "
          "live data young), %" PRIu64 " decisions, %" PRIu64 " switches\n",
          st.hot_cold.lift, st.hot_cold.young_overwrites,
          st.hot_cold.young_live, st.hot_cold.decisions,
          st.hot_cold.switches);
  ck_assert (!st.hot_cold.separating);
  ck_assert_uint_eq (st.hot_cold.switches, 1);
  ck_assert_uint_ge (st.hot_cold.decisions, 4);
  ck_assert_msg (st.hot_cold.lift > 0.85 && st.hot_cold.lift < 1.15,
                 "lift %.2f", st.hot_cold.lift);
  hot_open = overwrite (ftl, &r, &rng, lp, 0);
  ck_assert_uint_eq (hot_open, 0);
  ck_assert (ftl->hot[0].block == FTL_NO_BLOCK &&
             ftl->gcw.block == FTL_NO_BLOCK);
  /* 90/10: on again, and the hot frontier in use. */
  hot_open = overwrite (ftl, &r, &rng, 3 * lp, 90);
  ftl_get_stats (ftl, &st);
  printf ("hot-cold=auto, then 90/10: lift %.2f (%.3f of overwrites, %.3f "
          "of live data young), %" PRIu64 " switches\n", st.hot_cold.lift,
          st.hot_cold.young_overwrites, st.hot_cold.young_live,
          st.hot_cold.switches);
  ck_assert (st.hot_cold.separating);
  ck_assert_uint_eq (st.hot_cold.switches, 2);
  ck_assert_msg (st.hot_cold.lift > 2.0, "lift %.2f", st.hot_cold.lift);
  ck_assert_uint_gt (hot_open, 0);
  verify_all (ftl, &r);
  restart_verify (ftl, &r);
  unlink (path);

  /* hot-cold=true: no decisions, the hot frontier stays in use. */
  ftl = open_hot_cold (lp, true);
  write_pages (ftl, &r, 0, lp);
  hot_open = overwrite (ftl, &r, &rng, 3 * lp, 0);
  ftl_get_stats (ftl, &st);
  ck_assert (st.hot_cold.separating && !st.hot_cold.automatic);
  ck_assert_uint_eq (st.hot_cold.decisions, 0);
  ck_assert_uint_gt (hot_open, 0);
  verify_all (ftl, &r);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ref_free (&r);
}
END_TEST

/* When separation stops, the hot host frontier and the young GC
 * frontier fill the erase blocks they have open, which close full, and
 * open no more: no block stays open, spare space that GC misses, and
 * no page is left unwritten.  Separation is stopped by hand here, at an
 * instant when both have a block partly written (a decision of
 * hot-cold=auto is made in GC, often just as the hot frontier has
 * filled its block).  Once with writes straight to the log, once
 * through a write cache, whose batches the writer destages when its
 * shard is full (write_cached, which changes frontier mid-batch).
 */
static void
hot_cold_drain (uint64_t cache_pages)
{
  const uint64_t lp = 4096;
  struct ftl *ftl = open_hot_cold_cache (lp, true, cache_pages);
  struct ref r;
  uint64_t rng = 7 + seed_offset;
  uint32_t hb, gb, open_blocks = 0;
  unsigned i;

  ref_init (&r, lp);
  write_pages (ftl, &r, 0, lp);
  overwrite (ftl, &r, &rng, lp, 0);
  for (i = 0; i < 100000; i++) {
    if (ftl->hot[0].block != FTL_NO_BLOCK && ftl->hot[0].wp > 0 &&
        ftl->gcw.block != FTL_NO_BLOCK && ftl->gcw.wp > 0)
      break;
    overwrite (ftl, &r, &rng, 1, 0);
  }
  ck_assert_msg (i < 100000, "the two frontiers never had a block open "
                 "at once");
  hb = ftl->hot[0].block;
  gb = ftl->gcw.block;
  __atomic_store_n (&ftl->sep_off, true, __ATOMIC_RELAXED);
  /* After every write: neither frontier has opened another block. */
  for (uint64_t k = 0; k < 2 * lp; k++) {
    overwrite (ftl, &r, &rng, 1, 0);
    ck_assert_msg (ftl->hot[0].block == hb ||
                   ftl->hot[0].block == FTL_NO_BLOCK, "write %" PRIu64
                   ": the hot frontier opened block %u", k,
                   ftl->hot[0].block);
    ck_assert_msg (ftl->gcw.block == gb || ftl->gcw.block == FTL_NO_BLOCK,
                   "write %" PRIu64 ": the young GC frontier opened block "
                   "%u", k, ftl->gcw.block);
  }
  ck_assert_int_eq (ftl_flush (ftl), 0);
  if (cache_pages)
    ck_assert_uint_gt (ftl->cache.destaged, 2 * lp);
  ck_assert_int_eq (ftl->state[hb], FTL_BLK_FULL);
  ck_assert_int_eq (ftl->state[gb], FTL_BLK_FULL);
  ck_assert_uint_eq (ftl->media.wp[hb], ftl->ppb);
  ck_assert_uint_eq (ftl->media.wp[gb], ftl->ppb);
  ck_assert (ftl->hot[0].block == FTL_NO_BLOCK &&
             ftl->gcw.block == FTL_NO_BLOCK);
  for (uint32_t b = 0; b < ftl->blocks; b++)
    open_blocks += ftl->state[b] == FTL_BLK_OPEN;
  ck_assert_uint_le (open_blocks, 2);   /* host[0] and gcf */
  verify_all (ftl, &r);
  restart_verify (ftl, &r);
  ref_free (&r);
  unlink (path);
}

START_TEST (test_hot_cold_drain)
{
  hot_cold_drain (0);
  hot_cold_drain (64);
}
END_TEST

/* Fill the whole disk, then overwrite it at random (uniform, 4 KiB
 * pages) for ten times its size: no write fails with -ENOSPC even with
 * the fewest spare blocks the geometry allows, and every page reads back
 * as its last version, before and after a clean restart.
 */
static void
full_device (uint64_t lpages, uint32_t ppb, double op, unsigned streams)
{
  struct ftl *ftl = open_traced (lpages, ppb, op, streams);
  struct ref r;
  uint64_t rng = 0x1234 + lpages;
  struct ftl_stats st;
  double t0 = unit_now ();

  ref_init (&r, lpages);
  for (uint64_t l = 0; l < lpages; l += ppb)
    write_pages (ftl, &r, l, MIN (ppb, lpages - l));
  for (uint64_t i = 0; i < 10 * lpages; i++) {
    write_pages (ftl, &r, unit_rnd (&rng) % lpages, 1);
    if (i % 1000 == 0)
      verify_page (ftl, &r, unit_rnd (&rng) % lpages);
  }
  verify_all (ftl, &r);
  ftl_get_stats (ftl, &st);
  printf ("full device: %" PRIu64 " pages, %u blocks of %u, op %g%%: %"
          PRIu64 " host pages, %" PRIu64 " GC runs, waf %.2f, erase counts "
          "%u..%u, %.2f s\n", lpages, ftl->blocks, ppb, op,
          st.host_write_pages, st.gc_runs, st.waf, st.erase_min,
          st.erase_max, unit_now () - t0);
  ck_assert_uint_eq (st.host_write_pages, 11 * lpages);
  ck_assert_uint_gt (st.gc_runs, 10 * lpages / ppb);
  ck_assert_uint_eq (st.mapped_pages, lpages);
  restart_verify (ftl, &r);
  ref_free (&r);
}

START_TEST (test_full_device_min_spare)
{
  /* 1024 pages in 64 blocks of 16, and exactly the 10 spare blocks one
   * stream needs.
   */
  full_device (1024, 16, 15.625, 1);
}
END_TEST

START_TEST (test_full_device_waf_geometry)
{
  /* The WAF geometry: 4096 pages, 64 per block, op 28% (82 blocks). */
  full_device (4096, 64, 28, 0);
}
END_TEST

/* The write cache's batches go to the log through the same host
 * frontiers and reserve as writes without it: with the fewest spare
 * blocks a cache of 64 pages allows, random overwrites, trims and flushes
 * through a cache of 64 pages (destaged by the writers themselves, then
 * by the destager thread, GC in the background) never fail, and every
 * page reads as its last version, before and after a restart.  (No
 * tracing I/O: the background threads sync too.)
 */
static void
full_device_cached (bool background)
{
  const uint64_t lpages = 1024;
  struct ftl_options o = {
    .path = path, .logical_bytes = lpages * PS, .page_size = PS,
    .pages_per_block = 16, .op_percent = 23.4375, .streams = 1,
    .log = unit_log, .io = unit_nosync_io (), .write_cache_bytes = 64 * PS,
  };
  struct ftl *ftl;
  char err[256];
  struct ref r;
  uint64_t rng = 77 + background;
  struct ftl_stats st;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  /* The minimum, and the blocks that keep the cache's pages able to
   * reach the log (cache_spare_blocks).
   */
  ck_assert_uint_eq (ftl->blocks - lpages / 16,
                     FTL_MIN_SPARE_BLOCKS (1) + cache_spare_blocks (64, 16));
  if (background)
    ck_assert_int_eq (ftl_start_background (ftl), 0);
  ref_init (&r, lpages);
  write_pages (ftl, &r, 0, lpages);
  for (uint64_t i = 0; i < 10 * lpages; i++) {
    uint64_t l = unit_rnd (&rng) % lpages, what = unit_rnd (&rng) % 64;
    if (what == 0) {
      uint64_t n = 1 + unit_rnd (&rng) % 8;
      n = MIN (n, lpages - l);
      ck_assert_int_eq (ftl_trim (ftl, n * PS, l * PS, 0), 0);
      for (uint64_t k = 0; k < n; k++)
        r.version[l + k] = 0;
    }
    else if (what == 1)
      ck_assert_int_eq (ftl_flush (ftl), 0);
    else
      write_pages (ftl, &r, l, 1);
  }
  verify_all (ftl, &r);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_gt (st.gc_runs, 5 * lpages / 16);
  ck_assert_uint_gt (st.cache.destaged_pages, 5 * lpages);
  if (background)
    ftl_stop_background (ftl);
  restart_verify (ftl, &r);
  ref_free (&r);
}

START_TEST (test_full_device_cached)
{
  full_device_cached (false);
  unlink (path);
  full_device_cached (true);
}
END_TEST

/* Steady-state write amplification of uniform random 4 KiB overwrites
 * on 4096 logical pages, 64 pages per block, 28% over-provisioning:
 * measured after the disk is full and has been overwritten twice, over
 * four more disk-fulls.  The model of greedy GC with large erase blocks
 * gives 2.48 at this over-provisioning (bench/ftl-bench.c); with 64-page
 * blocks and the blocks the library keeps free and open (of 18 spare
 * blocks), 2.676 .. 2.687 was measured over eight seeds (see
 * seed_offset), hot-cold=auto having stopped separation, whose two more
 * open blocks gave 2.806 .. 2.820.  Outside 2.62 .. 2.78, victims are
 * picked badly, pages are copied that need not be, or blocks are kept
 * out of use.
 */
START_TEST (test_waf_uniform)
{
  const uint64_t lpages = 4096;
  struct ftl *ftl = open_traced (lpages, 64, 28, 0);
  struct ref r;
  uint64_t rng = 99 + seed_offset;
  struct ftl_stats a, b;
  double waf;

  ck_assert_uint_eq (ftl->blocks, 82);
  ref_init (&r, lpages);
  write_pages (ftl, &r, 0, lpages);
  for (uint64_t i = 0; i < 2 * lpages; i++)
    write_pages (ftl, &r, unit_rnd (&rng) % lpages, 1);
  ftl_get_stats (ftl, &a);
  for (uint64_t i = 0; i < 4 * lpages; i++)
    write_pages (ftl, &r, unit_rnd (&rng) % lpages, 1);
  ftl_get_stats (ftl, &b);
  ck_assert_uint_eq (b.host_write_pages - a.host_write_pages, 4 * lpages);
  waf = (double) (b.media_program_pages - a.media_program_pages)
    / (b.host_write_pages - a.host_write_pages);
  printf ("waf: uniform random 4 KiB overwrites, %" PRIu64 " pages, 64 per "
          "block, op 28%%: steady-state WAF %.3f (%" PRIu64 " GC copies)\n",
          lpages, waf, b.gc_copied_pages - a.gc_copied_pages);
  ck_assert_msg (waf > 2.62 && waf < 2.78, "WAF %.3f outside 2.62..2.78",
                 waf);
  ck_assert (!b.hot_cold.separating);
  /* Every programmed page is a host page or a GC copy. */
  ck_assert_uint_eq (b.media_program_pages - a.media_program_pages,
                     (b.host_write_pages - a.host_write_pages)
                     + (b.gc_copied_pages - a.gc_copied_pages));
  verify_all (ftl, &r);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ref_free (&r);
}
END_TEST

/* Trims and zeros mixed with overwrites: GC must not resurrect trimmed
 * pages, and trim record pages it copies or drops must not disturb the
 * data, across clean restarts too.
 */
START_TEST (test_gc_with_trims)
{
  struct ftl *ftl = open_traced (512, 16, 30, 1);
  struct ref r;
  uint64_t rng = 3;

  ref_init (&r, 512);
  write_pages (ftl, &r, 0, 512);
  for (unsigned i = 0; i < 20000; i++) {
    uint64_t l = unit_rnd (&rng) % 512, n = 1 + unit_rnd (&rng) % 8;
    if (l + n > 512)
      n = 512 - l;
    switch (unit_rnd (&rng) % 16) {
    case 0:
      ck_assert_int_eq (ftl_trim (ftl, n * PS, l * PS, 0), 0);
      for (uint64_t k = 0; k < n; k++) r.version[l + k] = 0;
      break;
    case 1:
      ck_assert_int_eq (ftl_zero (ftl, n * PS, l * PS, FTL_MAY_TRIM), 0);
      for (uint64_t k = 0; k < n; k++) r.version[l + k] = 0;
      break;
    case 2:
      ck_assert_int_eq (ftl_flush (ftl), 0);
      break;
    default:
      write_pages (ftl, &r, l, 1);
    }
    if (i % 5000 == 4999) {
      verify_all (ftl, &r);
      ck_assert_int_eq (ftl_close (ftl), 0);
      ftl = reopen ();
    }
  }
  ck_assert_uint_gt (ctr_get (ftl, FTL_CTR_GC_RUNS), 100);
  verify_all (ftl, &r);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ref_free (&r);
}
END_TEST

/* Barriers (gc.c): a block whose pages were all replaced is erased
 * only after a sync that came after the last replacement; one sync
 * serves every block drained before it, and a client's flush is one.
 */
static void
reclaim_more (struct ftl *ftl, uint32_t blocks)
{
  ckpt_shared (ftl);
  ck_assert_int_eq (gc_reclaim (ftl, alloc_nfree (ftl) + blocks - 1, false), 0);
  ckpt_release (ftl);
}

START_TEST (test_erase_after_barrier)
{
  /* 16 erase blocks of data in 32: no collection while writing. */
  struct ftl *ftl = open_traced (1024, 64, 100, 1);
  struct ref r;
  unsigned n0, s0;

  ref_init (&r, 1024);
  write_pages (ftl, &r, 0, 1024);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  ck_assert_uint_eq (trace.n, 0);

  /* Replace the pages of the first four erase blocks, no flush: the
   * erases that follow wait for a sync.
   */
  write_pages (ftl, &r, 0, 256);
  n0 = trace.n;
  s0 = trace.syncs;
  reclaim_more (ftl, 4);
  ck_assert_uint_ge (trace.n - n0, 4);
  for (unsigned i = n0; i < trace.n; i++)
    ck_assert_msg (trace.syncs_before[i] > s0, "erase %u of block %u "
                   "before any sync since its pages were replaced", i,
                   trace.erased[i]);
  ck_assert_uint_le (trace.syncs - s0, 1);   /* one for all four */

  /* The next four, then a client's flush: it serves as their barrier,
   * and GC erases them without a sync of its own.
   */
  write_pages (ftl, &r, 256, 256);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  n0 = trace.n;
  s0 = trace.syncs;
  uint64_t unsynced = ftl->gc.erases_unsynced;
  reclaim_more (ftl, 4);
  ck_assert_uint_ge (trace.n - n0, 4);
  ck_assert_uint_eq (trace.syncs, s0);
  ck_assert_uint_ge (ftl->gc.erases_unsynced - unsynced, 4);

  verify_all (ftl, &r);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ref_free (&r);
}
END_TEST

/* ---- background steps (ftl_background_step) ---- */

/* 1024 pages in blocks of 16 with 50% over-provisioning: 96 blocks, 32
 * spare, so that the high watermark is above the low one.
 */
#define BG_LPAGES 1024

static struct ftl *
open_manual_op (enum ftl_gc_mode mode, uint32_t wl_threshold, uint32_t op)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = BG_LPAGES * PS, .page_size = PS,
    .pages_per_block = 16, .op_percent = op, .streams = 1,
    .gc_mode = mode, .wl_threshold = wl_threshold, .log = gc_log,
    .io = &trace_io, .manual_background = true,
  };
  struct ftl *ftl;
  char err[256];

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  trace.ftl = ftl;
  trace.geo = ftl->media;
  ck_assert_uint_ge (ftl->gc.high, ftl->gc.low);
  /* No thread: requests leave to the steps what they leave to it. */
  ck_assert_int_eq (ftl_start_background (ftl), 0);
  ck_assert (!ftl->cache.running);
  return ftl;
}

static struct ftl *
open_manual (enum ftl_gc_mode mode, uint32_t wl_threshold)
{
  return open_manual_op (mode, wl_threshold, 50);
}

/* Overwrite n pages, hot_pct% of the writes on the first tenth of
 * the disk, the rest anywhere.
 */
static void
bg_overwrite (struct ftl *ftl, struct ref *r, uint64_t *rng, unsigned n,
              unsigned hot_pct)
{
  for (unsigned i = 0; i < n; i++)
    write_pages (ftl, r, unit_rnd (rng) % 100 < hot_pct
                 ? unit_rnd (rng) % (BG_LPAGES / 10)
                 : unit_rnd (rng) % BG_LPAGES, 1);
}

/* Fill the disk, then overwrite it until foreground GC has run and
 * free blocks are at or below the high watermark: with a background,
 * writes collect only at the low one.
 */
static void
bg_fill (struct ftl *ftl, struct ref *r, uint64_t *rng)
{
  ref_init (r, BG_LPAGES);
  write_pages (ftl, r, 0, BG_LPAGES);
  bg_overwrite (ftl, r, rng, 2 * BG_LPAGES, 90);
  ck_assert_uint_gt (ctr_get (ftl, FTL_CTR_GC_RUNS), 0);
  /* A writer collects at gc.low and may end a block above it (gc.high
   * may be gc.low itself on a small spare).
   */
  ck_assert_uint_le (alloc_nfree (ftl), ftl->gc.high + 1);
}

/* Step until a step finds nothing to do; at most max steps.  Each
 * step does one unit of work: GC copies at most one victim's pages
 * (or, in slices, GC_SLICE's), and every erase in it is of the kind
 * the step does.  Returns the steps that did something.
 */
static unsigned
step_until_idle (struct ftl *ftl, unsigned max, uint64_t max_copies)
{
  unsigned steps = 0;

  for (;;) {
    struct ftl_stats a, b;
    unsigned n0 = trace.n;
    ftl_get_stats (ftl, &a);
    int r = ftl_background_step (ftl);
    ftl_get_stats (ftl, &b);
    ck_assert_msg (r == 0 || r == 1, "step %u: %s", steps, strerror (-r));
    ck_assert (bg_work_here () == BG_NONE);
    ck_assert_uint_le ((b.gc_copied_pages + b.wl_moved_pages)
                       - (a.gc_copied_pages + a.wl_moved_pages), max_copies);
    for (unsigned i = n0 + 1; i < trace.n; i++)
      ck_assert_msg (trace.work[i] == trace.work[n0], "step %u erased "
                     "block %u doing %d, then block %u doing %d", steps,
                     trace.erased[n0], trace.work[n0], trace.erased[i],
                     trace.work[i]);
    if (r == 0) {
      ck_assert_uint_eq (trace.n, n0);
      ck_assert_uint_eq (b.media_program_pages, a.media_program_pages);
      break;
    }
    ck_assert_uint_lt (++steps, max);
  }
  return steps;
}

/* GC run by steps: they free blocks above the high watermark, one
 * victim per step, relocating what is still valid, and the next step
 * after a victim may make a wear leveling move; a due checkpoint is
 * a step of its own; then steps find nothing to do.  The data
 * survives, and a restart.
 */
START_TEST (test_background_steps)
{
  struct ftl *ftl = open_manual (FTL_GC_WATERMARK, 4);
  struct ref r;
  uint64_t rng = 21 + seed_offset;
  struct ftl_stats a, b;

  uint64_t victims = 0, copied = 0, moved = 0;
  unsigned steps = 0, erases = 0, wl = 0;

  bg_fill (ftl, &r, &rng);
  /* Rounds of writes, each followed by steps until they are idle:
   * after each round, more than gc.high blocks are free, and the
   * writes of the next round leave it to the steps (they collect at
   * gc.low only).
   */
  for (unsigned round = 0; round < 20; round++) {
    unsigned n0 = trace.n;
    ftl_get_stats (ftl, &a);
    steps += step_until_idle (ftl, 1000, 16);
    ftl_get_stats (ftl, &b);
    ck_assert_uint_gt (alloc_nfree (ftl), ftl->gc.high);
    victims += b.gc_background_runs - a.gc_background_runs;
    copied += b.gc_copied_pages - a.gc_copied_pages;
    moved += b.wl_moved_pages - a.wl_moved_pages;
    /* What the steps erased, they erased in steps of their kind (a
     * barrier step may collect first, as a writer would, when free
     * blocks are at the low watermark).
     */
    for (unsigned i = n0; i < trace.n; i++) {
      enum bg_work w = trace.work[i];
      ck_assert_msg (w == BG_BARRIER ||
                     (trace.wl[i] ? w == BG_WL : w == BG_GC || w == BG_ERASE),
                     "erase %u (block %u, wear leveling %d) in a step "
                     "doing %d", i, trace.erased[i], trace.wl[i], w);
      wl += trace.wl[i] && w == BG_WL;
      erases++;
    }
    bg_overwrite (ftl, &r, &rng, 4 * 16, 50);
  }
  printf ("background steps: %u steps: %" PRIu64 " victims, %" PRIu64
          " pages relocated, %" PRIu64 " moved for wear leveling, %u "
          "erases (%u for wear leveling)\n", steps, victims, copied, moved,
          erases, wl);
  ck_assert_uint_ge (steps, victims);
  ck_assert_uint_gt (victims, 20);
  ck_assert_uint_gt (copied, 0);
  ck_assert_uint_gt (wl, 0);
  ck_assert_uint_gt (moved, 0);
  verify_all (ftl, &r);

  /* Requests leave a due checkpoint to the steps (up to twice the
   * interval); one step writes it, and nothing else.
   */
  while (!ckpt_due (ftl))
    write_pages (ftl, &r, unit_rnd (&rng) % (BG_LPAGES / 10), 1);
  write_pages (ftl, &r, 0, 1);
  ftl_get_stats (ftl, &a);
  ck_assert_int_eq (ftl_background_step (ftl), 1);
  ftl_get_stats (ftl, &b);
  ck_assert_uint_eq (b.checkpoints, a.checkpoints + 1);
  ck_assert_uint_eq (b.media_erases, a.media_erases);
  ck_assert (!ckpt_due (ftl));
  /* Then the steps go idle, with no other checkpoint.  An idle step
   * lets the next one look again for emptied blocks to erase (bg.c:
   * drained_idle), which it may find: idle twice, then nothing.
   */
  step_until_idle (ftl, 1000, 16);
  step_until_idle (ftl, 1000, 16);
  ck_assert_int_eq (ftl_background_step (ftl), 0);
  ftl_get_stats (ftl, &a);
  ck_assert_uint_eq (a.checkpoints, b.checkpoints);

  verify_all (ftl, &r);
  ftl_stop_background (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = reopen ();
  verify_all (ftl, &r);
  /* Steps only with manual_background. */
  ck_assert_int_eq (ftl_background_step (ftl), -EINVAL);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ref_free (&r);
}
END_TEST

/* During a sequential overwrite every block a writer opens lowers the
 * free pool, and the background erases drained blocks back up to
 * gc.drain_target.  Writers wake it (ring the bell) for that only once
 * the pool is a batch of erases below (gc.drain_ring), not at every
 * block they open: with the background answering every ring at once, a
 * ring per FTL_GC_DRAIN_RING_SLACK + 1 blocks opened at most, and the
 * pool never lower.  (The bell also rings when a checkpoint is due.)
 */
START_TEST (test_background_drain_ring)
{
  struct ftl *ftl = open_manual_op (FTL_GC_WATERMARK, UINT32_MAX, 100);
  struct ref r;
  uint64_t opened = 0, drain_rings = 0, ckpt_rings = 0;
  uint32_t lowest = UINT32_MAX;

  ck_assert_uint_eq (ftl->gc.drain_target - ftl->gc.drain_ring,
                     FTL_GC_DRAIN_RING_SLACK);
  ck_assert_uint_gt (ftl->gc.drain_ring, ftl->gc.high);
  ref_init (&r, BG_LPAGES);
  /* The fill, and overwrites until the free pool is down to the
   * target (a fresh disk has all its spare blocks free).
   */
  write_pages (ftl, &r, 0, BG_LPAGES);
  for (uint64_t lpn = 0; alloc_nfree (ftl) > ftl->gc.drain_ring;
       lpn = (lpn + 16) % BG_LPAGES)
    write_pages (ftl, &r, lpn, 16);
  step_until_idle (ftl, 1000, 0);
  /* (it erases while the pool is at or below the target) */
  ck_assert_uint_eq (alloc_nfree (ftl), ftl->gc.drain_target + 1);
  for (unsigned pass = 0; pass < 4; pass++)
    for (uint64_t lpn = 0; lpn < BG_LPAGES; lpn += 16) {
      uint32_t before = alloc_nfree (ftl);
      uint64_t rings = ftl->bell.rings;
      write_pages (ftl, &r, lpn, 16);
      opened += alloc_nfree (ftl) < before;
      lowest = MIN (lowest, alloc_nfree (ftl));
      if (ftl->bell.rings == rings)
        continue;
      if (alloc_nfree (ftl) <= ftl->gc.drain_ring)
        drain_rings++;
      else {
        ck_assert_msg (ckpt_due (ftl), "a ring with %u blocks free "
                       "(ring at %u) and no checkpoint due",
                       alloc_nfree (ftl), ftl->gc.drain_ring);
        ckpt_rings++;
      }
      step_until_idle (ftl, 1000, 0);
      ck_assert_uint_eq (alloc_nfree (ftl), ftl->gc.drain_target + 1);
    }
  printf ("drain ring: %" PRIu64 " blocks opened, %" PRIu64 " rings for "
          "erases, %" PRIu64 " for checkpoints, free blocks down to %u "
          "(target %u, ring at %u)\n", opened, drain_rings, ckpt_rings,
          lowest, ftl->gc.drain_target, ftl->gc.drain_ring);
  ck_assert_uint_ge (opened, 4 * BG_LPAGES / 16 - 4);
  ck_assert_uint_gt (drain_rings, 0);
  ck_assert_uint_le (drain_rings, opened / (FTL_GC_DRAIN_RING_SLACK + 1));
  ck_assert_uint_eq (lowest, ftl->gc.drain_ring);
  verify_all (ftl, &r);
  ftl_stop_background (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ref_free (&r);
}
END_TEST

/* Victims of background GC wait for their erase (gc.pending): without
 * flushes, several share one sync; with a client's flush after each
 * burst of writes, the flush covers them and GC syncs far less often
 * than it erases.
 */
START_TEST (test_background_erase_batch)
{
  /* 128 spare blocks: a batch of 4; 64: a batch of 1 (their spare
   * space is worth more than the syncs it would save).  The batch of 4
   * is tested on the smaller disk, where GC runs more often.
   */
  struct ftl *ftl = open_manual_op (FTL_GC_WATERMARK, UINT32_MAX, 200);
  ck_assert_uint_eq (ftl->gc.erase_batch, 4);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unlink (path);
  ftl = open_manual_op (FTL_GC_WATERMARK, UINT32_MAX, 100);
  ck_assert_uint_eq (ftl->gc.erase_batch, 1);
  ftl->gc.erase_batch = 4;
  struct ref r;
  uint64_t rng = 23 + seed_offset;
  struct ftl_stats a, b;
  uint64_t erases, syncs;
  unsigned waited = 0;

  bg_fill (ftl, &r, &rng);
  step_until_idle (ftl, 1000, 16);

  ftl_get_stats (ftl, &a);
  for (unsigned round = 0; round < 160; round++) {
    bg_overwrite (ftl, &r, &rng, 16, 0);
    step_until_idle (ftl, 1000, 16);
    waited += gc_npending (ftl) > 0;
  }
  ftl_get_stats (ftl, &b);
  erases = b.media_erases - a.media_erases;
  syncs = b.gc_barriers - a.gc_barriers;
  printf ("erase batch %u, no flushes: %" PRIu64 " erases, %" PRIu64
          " syncs of GC; victims waiting after %u rounds of 160\n",
          ftl->gc.erase_batch, erases, syncs, waited);
  ck_assert_uint_gt (erases, 40);
  ck_assert_uint_gt (waited, 0);
  /* At least 1.5 victims per sync on average. */
  ck_assert_uint_le (syncs * 3, erases * 2);

  ftl_get_stats (ftl, &a);
  for (unsigned round = 0; round < 160; round++) {
    bg_overwrite (ftl, &r, &rng, 16, 0);
    step_until_idle (ftl, 1000, 16);
    ck_assert_int_eq (ftl_flush (ftl), 0);
  }
  ftl_get_stats (ftl, &b);
  erases = b.media_erases - a.media_erases;
  syncs = b.gc_barriers - a.gc_barriers;
  printf ("with a flush after each burst: %" PRIu64 " erases, %" PRIu64
          " syncs of GC, %" PRIu64 " erases covered by a flush\n", erases,
          syncs, b.gc_erases_unsynced - a.gc_erases_unsynced);
  ck_assert_uint_gt (erases, 40);
  ck_assert_uint_le (syncs * 4, erases);
  ck_assert_uint_ge ((b.gc_erases_unsynced - a.gc_erases_unsynced) * 2,
                     erases);

  verify_all (ftl, &r);
  ftl_stop_background (ftl);
  restart_verify (ftl, &r);
  ref_free (&r);
}
END_TEST

/* While erase counts are uneven, background steps keep one block more
 * free than gc.high, so that a frontier that needs a block has a choice
 * of erase counts (wl_free_choice, wl.c); while they are even, they do
 * not.  The spread is made by hand: the free blocks get 100 erases more
 * than they had (nothing is programmed in them, so no OOB entry names
 * the old count), against a static threshold of 200, whose moves stay
 * out of the way (the choice starts at 3/8 of it, 75).
 */
START_TEST (test_background_wear_choice)
{
  struct ftl *ftl = open_manual (FTL_GC_WATERMARK, 200);
  struct ref r;
  uint64_t rng = 29 + seed_offset;
  unsigned at_high = 0;

  ck_assert_uint_eq (ftl->gc.erase_batch, 1);
  bg_fill (ftl, &r, &rng);
  step_until_idle (ftl, 1000, 16);
  /* Even wear: the steps stop with gc.high + 1 free (more only when
   * they erased blocks with nothing to copy).
   */
  for (unsigned round = 0; round < 40; round++) {
    bg_overwrite (ftl, &r, &rng, 16, 0);
    step_until_idle (ftl, 1000, 16);
    ck_assert_uint_eq (wl_free_choice (ftl), 0);
    ck_assert_uint_gt (alloc_nfree (ftl), ftl->gc.high);
    at_high += alloc_nfree (ftl) == ftl->gc.high + 1;
  }
  ck_assert_uint_gt (at_high, 20);

  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (ftl->state[b] == FTL_BLK_FREE)
      media_set_block (&ftl->media, b,
                       media_erase_count (&ftl->media, b) + 100, 0);
  alloc_free_ec_recount (ftl);   /* erase counts and states set by hand */
  pthread_mutex_unlock (&ftl->alloc_lock);
  /* Uneven: once a victim has shown the spread (the first rounds may
   * need none), every round ends with a block more free.
   */
  for (unsigned round = 0; wl_free_choice (ftl) == 0; round++) {
    ck_assert_uint_lt (round, 10);
    bg_overwrite (ftl, &r, &rng, 16, 0);
    step_until_idle (ftl, 1000, 16);
  }
  for (unsigned round = 0; round < 40; round++) {
    bg_overwrite (ftl, &r, &rng, 16, 0);
    step_until_idle (ftl, 1000, 16);
    ck_assert_uint_eq (wl_free_choice (ftl), 1);
    ck_assert_uint_gt (alloc_nfree (ftl), ftl->gc.high + 1);
  }
  ck_assert_uint_eq (ctr_get (ftl, FTL_CTR_WL_MOVED), 0);

  verify_all (ftl, &r);
  ftl_stop_background (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ref_free (&r);
}
END_TEST

/* Deadline mode: a GC step is one slice, at most GC_SLICE (8) pages
 * relocated; steps go on until the high watermark.
 */
START_TEST (test_background_slices)
{
  struct ftl *ftl = open_manual (FTL_GC_DEADLINE, UINT32_MAX);
  struct ref r;
  uint64_t rng = 23 + seed_offset;
  struct ftl_stats a, b;

  bg_fill (ftl, &r, &rng);
  ftl_get_stats (ftl, &a);
  unsigned steps = step_until_idle (ftl, 2000, 8);
  ftl_get_stats (ftl, &b);
  uint64_t slices = b.gc_slices - a.gc_slices;
  uint64_t copied = b.gc_copied_pages - a.gc_copied_pages;
  printf ("background slices: %u steps, %" PRIu64 " slices, %" PRIu64
          " pages relocated, %" PRIu64 " blocks reclaimed, from %u to %u "
          "free blocks\n", steps, slices, copied,
          b.gc_background_runs - a.gc_background_runs, a.blocks_free,
          b.blocks_free);
  fflush (stdout);
  ck_assert_uint_gt (alloc_nfree (ftl), ftl->gc.high);
  /* Each slice copies at most GC_SLICE (8, gc.c) pages, as
   * step_until_idle checks of each step, so there were at least this
   * many; the blocks reclaimed are no measure, as drained ones need no
   * slice.
   */
  ck_assert_uint_gt (copied, 0);
  ck_assert_uint_ge (slices, DIV_ROUND_UP (copied, 8));
  ck_assert_uint_le (slices, steps);
  ck_assert (!gc_in_progress (ftl));
  verify_all (ftl, &r);
  ftl_stop_background (ftl);
  restart_verify (ftl, &r);
  ref_free (&r);
}
END_TEST

static Suite *
gc_suite (void)
{
  Suite *s = suite_create ("gc");
  TCase *tc = tcase_create ("gc");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_greedy_constructed);
  tcase_add_test (tc, test_greedy_every_victim);
  tcase_add_test (tc, test_cost_benefit);
  tcase_add_test (tc, test_hot_cold_separation);
  tcase_add_test (tc, test_hot_cold_auto);
  tcase_add_test (tc, test_hot_cold_drain);
  tcase_add_test (tc, test_full_device_min_spare);
  tcase_add_test (tc, test_full_device_waf_geometry);
  tcase_add_test (tc, test_full_device_cached);
  tcase_add_test (tc, test_waf_uniform);
  tcase_add_test (tc, test_gc_with_trims);
  tcase_add_test (tc, test_erase_after_barrier);
  tcase_add_test (tc, test_background_steps);
  tcase_add_test (tc, test_background_erase_batch);
  tcase_add_test (tc, test_background_drain_ring);
  tcase_add_test (tc, test_background_wear_choice);
  tcase_add_test (tc, test_background_slices);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (gc_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
