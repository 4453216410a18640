/* nbdkit-ftl: ftl-bench, a write-amplification benchmark of the FTL
 * library.
 *
 * It drives the library in this process through ftl.h alone, so the only
 * I/O is to the image file (on tmpfs by default) and millions of page
 * writes take seconds.  For each workload:
 *
 *   fresh image -> sequential fill -> baseline -> N drive writes of
 *                  (1 MiB writes)    snapshot     page-sized writes
 *
 *                 |<------------- overall WAF ------------->|
 *   drive writes  0              N/2                        N
 *                                 |<------ steady WAF ----->|
 *
 * A drive write is as many page writes as the disk has logical pages;
 * the workload only chooses which logical page each write goes to.
 * WAF is (media pages programmed) / (host pages written) between two
 * snapshots of ftl_get_stats.
 *
 * Every page written carries its logical page number and a version;
 * after the run the whole disk is read back and checked against the
 * versions the benchmark remembers, so a run also tests that garbage
 * collection moved the right data.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "ftl.h"

#define FILL_BYTES          (1024 * 1024)   /* write size of the fill */
#define TIMELINE_STEPS      20              /* samples per drive write */
#define ZIPF_THETA          0.99

/* ---- random numbers ---- */

/* splitmix64: turns any seed, 0 included, into well-mixed state words. */
static uint64_t
splitmix64 (uint64_t *x)
{
  uint64_t z = (*x += UINT64_C (0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C (0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C (0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* xoshiro256** (Blackman and Vigna): fast, 256 bits of state. */
struct rng {
  uint64_t s[4];
};

/* Seed the generator: the same seed gives the same numbers. */
static void
rng_seed (struct rng *r, uint64_t seed)
{
  for (unsigned i = 0; i < 4; i++)
    r->s[i] = splitmix64 (&seed);
}

static inline uint64_t
rotl64 (uint64_t x, unsigned k)
{
  return (x << k) | (x >> (64 - k));
}

/* The next 64 random bits. */
static inline uint64_t
rng_next (struct rng *r)
{
  uint64_t *s = r->s;
  uint64_t result = rotl64 (s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;

  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64 (s[3], 45);
  return result;
}

/* A number in [0, n), n > 0, by multiply-shift (Lemire): no division,
 * and a bias below n / 2^64, far below anything measured here.
 */
static inline uint64_t
rng_below (struct rng *r, uint64_t n)
{
  return (uint64_t) (((unsigned __int128) rng_next (r) * n) >> 64);
}

/* A double in [0, 1) with 53 random bits. */
static inline double
rng_double (struct rng *r)
{
  return (double) (rng_next (r) >> 11) * 0x1.0p-53;
}

/* ---- Zipf ranks by rejection-inversion ----
 *
 * Hoermann and Derflinger, "Rejection-inversion to generate variates
 * from monotone discrete distributions" (1996): draws a rank k in
 * [1, n] with probability proportional to k^-theta in constant time
 * and memory, with about one uniform variate per rank.  H is an
 * integral of h(x) = x^-theta; a variate is inverted through H and
 * accepted unless it fell in the sliver between the curve and the
 * histogram of h.
 */
struct zipf {
  double theta;
  uint64_t n;
  double h_x1;                  /* H(1.5) - 1 */
  double h_n;                   /* H(n + 0.5) */
  double s;                     /* acceptance shortcut */
};

/* log1p(x) / x and expm1(x) / x, exact near 0 as well. */
static double
log1p_over_x (double x)
{
  return fabs (x) > 1e-8 ? log1p (x) / x
    : 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
}

static double
expm1_over_x (double x)
{
  return fabs (x) > 1e-8 ? expm1 (x) / x
    : 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
}

/* h(x) = x^-theta, H(x) = (x^(1-theta) - 1) / (1-theta) (log x when
 * theta is 1), and the inverse of H.
 */
static double
zipf_h (const struct zipf *z, double x)
{
  return exp (-z->theta * log (x));
}

static double
zipf_H (const struct zipf *z, double x)
{
  double lx = log (x);
  return expm1_over_x ((1.0 - z->theta) * lx) * lx;
}

static double
zipf_H_inverse (const struct zipf *z, double x)
{
  double t = MAX (x * (1.0 - z->theta), -1.0);
  return exp (log1p_over_x (t) * x);
}

/* Prepare to draw ranks in [1, n]; theta > 0. */
static void
zipf_init (struct zipf *z, uint64_t n, double theta)
{
  z->theta = theta;
  z->n = n;
  z->h_x1 = zipf_H (z, 1.5) - 1.0;
  z->h_n = zipf_H (z, (double) n + 0.5);
  z->s = 2.0 - zipf_H_inverse (z, zipf_H (z, 2.5) - zipf_h (z, 2.0));
}

/* A rank in [1, n]: 1 is the most frequent. */
static uint64_t
zipf_next (const struct zipf *z, struct rng *r)
{
  for (;;) {
    double u = z->h_n + rng_double (r) * (z->h_x1 - z->h_n);
    double x = zipf_H_inverse (z, u);
    double kd = floor (x + 0.5);
    uint64_t k = kd < 1.0 ? 1 : kd > (double) z->n ? z->n : (uint64_t) kd;

    if ((double) k - x <= z->s ||
        u >= zipf_H (z, (double) k + 0.5) - zipf_h (z, (double) k))
      return k;
  }
}

/* ---- workloads ---- */

enum generator_kind {
  GEN_SEQ,                      /* 0, 1, 2, ... wrapping around */
  GEN_UNIFORM,
  GEN_HOTCOLD,                  /* a share of writes to a share of space */
  GEN_ZIPF,                     /* Zipf ranks, shuffled over the space */
};

struct workload {
  const char *name;
  enum generator_kind kind;
  unsigned hot_writes_pct;      /* GEN_HOTCOLD: writes to the hot region */
  unsigned hot_space_pct;       /* ... and its share of the disk */
  bool moving;                  /* the hot region moves every drive write */
};

static const struct workload workloads[] = {
  { "seq",     GEN_SEQ,     0,  0,  false },
  { "uniform", GEN_UNIFORM, 0,  0,  false },
  { "80/20",   GEN_HOTCOLD, 80, 20, false },
  { "90/10",   GEN_HOTCOLD, 90, 10, false },
  { "zipf",    GEN_ZIPF,    0,  0,  false },
  { "phase",   GEN_HOTCOLD, 90, 10, true  },
};
#define NR_WORKLOADS (sizeof workloads / sizeof workloads[0])

/* ---- the reference: an analytical model ---- */

/* Steady-state WAF of greedy garbage collection under uniformly random
 * page writes, in the limit of many pages per erase block (the
 * mean-field model of Desnoyers, "Analytic Models of SSD Write
 * Performance", ACM Transactions on Storage 10(2), 2014; greedy and
 * FIFO cleaning coincide there).  With a = physical / logical pages =
 * 1 + op/100, a page written now is overwritten before its erase block
 * is collected unless none of the a (1 - u) drive writes of host data
 * in between hits it, so the fraction u of pages still valid in a
 * victim solves
 *
 *   u = exp (-a (1 - u)),    and WAF = 1 / (1 - u).
 *
 * u = 1 is always a root; the one that counts is the other, in (0, 1)
 * for a > 1: g(u) = u - exp (-a (1 - u)) is negative at 0 and positive
 * just below 1, so bisection finds it.
 */
static double
model_waf_uniform (double a)
{
  double lo = 0, hi = 1 - 1e-12;

  if (a <= 1)
    return NAN;
  for (int i = 0; i < 200; i++) {
    double u = (lo + hi) / 2;
    if (u - exp (-a * (1 - u)) < 0)
      lo = u;
    else
      hi = u;
  }
  return 1 / (1 - lo);
}

/* The ideal hot/cold split: the hot pages (a share f of the disk that
 * takes a share r of the writes) and the cold ones each have their own
 * log with uniform writes inside it, and the spare space is divided
 * between the two logs so as to minimise
 *
 *   WAF = r WAF_u (p / f) + (1 - r) WAF_u ((a - p) / (1 - f))
 *
 * where p is the physical space of the hot log (in drive sizes) and
 * WAF_u the uniform model above.  The sum is convex in p (WAF_u is
 * convex and decreasing), so a ternary search finds the minimum.
 */
static double
model_waf_ideal_split (double a, double f, double r)
{
  double lo = f * (1 + 1e-9), hi = a - (1 - f) * (1 + 1e-9);

  if (lo >= hi)
    return NAN;
  for (int i = 0; i < 200; i++) {
    double p1 = lo + (hi - lo) / 3, p2 = hi - (hi - lo) / 3;
    double w1 = r * model_waf_uniform (p1 / f)
      + (1 - r) * model_waf_uniform ((a - p1) / (1 - f));
    double w2 = r * model_waf_uniform (p2 / f)
      + (1 - r) * model_waf_uniform ((a - p2) / (1 - f));
    if (w1 < w2)
      hi = p2;
    else
      lo = p1;
  }
  lo = (lo + hi) / 2;
  return r * model_waf_uniform (lo / f)
    + (1 - r) * model_waf_uniform ((a - lo) / (1 - f));
}

/* The reference WAF of w at this OP, or NAN where the model has none:
 * with one log, greedy under uniform writes (skewed writes have no
 * closed form there); with hot/cold separation, the ideal split (for
 * uniform writes, with nothing to separate, the uniform model).
 */
static double
reference_waf (const struct workload *w, double op, bool ideal)
{
  double a = 1 + op / 100;

  if (w->kind == GEN_UNIFORM)
    return model_waf_uniform (a);
  if (ideal && w->kind == GEN_HOTCOLD && !w->moving)
    return model_waf_ideal_split (a, w->hot_space_pct / 100.0,
                                  w->hot_writes_pct / 100.0);
  return NAN;
}

/* The state of one workload's stream of logical page numbers. */
struct generator {
  const struct workload *w;
  struct rng rng;
  uint64_t pages;               /* logical pages of the disk */
  uint64_t hot_pages;           /* GEN_HOTCOLD */
  uint64_t hot_threshold;       /* rng_next () below this: a hot write */
  uint64_t cursor;              /* GEN_SEQ */
  struct zipf zipf;             /* GEN_ZIPF */
  uint32_t *rank_lpn;           /* GEN_ZIPF: rank - 1 -> LPN */
};

/* Set up g to draw logical pages in [0, pages) for workload w.
 * Returns 0 or -ENOMEM; generator_free is safe either way.
 */
static int
generator_init (struct generator *g, const struct workload *w,
                uint64_t pages, uint64_t seed)
{
  memset (g, 0, sizeof *g);
  g->w = w;
  g->pages = pages;
  rng_seed (&g->rng, seed);
  switch (w->kind) {
  case GEN_SEQ:
  case GEN_UNIFORM:
    break;
  case GEN_HOTCOLD:
    g->hot_pages = MAX (pages * w->hot_space_pct / 100, 1);
    g->hot_threshold = (uint64_t) (w->hot_writes_pct / 100.0
                                   * 18446744073709551616.0);
    break;
  case GEN_ZIPF:
    /* Scatter the ranks over the disk (Fisher-Yates), so that the hot
     * pages are not the first few.
     */
    zipf_init (&g->zipf, pages, ZIPF_THETA);
    g->rank_lpn = malloc (pages * sizeof *g->rank_lpn);
    if (!g->rank_lpn)
      return -ENOMEM;
    for (uint64_t i = 0; i < pages; i++)
      g->rank_lpn[i] = i;
    for (uint64_t i = pages - 1; i > 0; i--) {
      uint64_t j = rng_below (&g->rng, i + 1);
      uint32_t t = g->rank_lpn[i];
      g->rank_lpn[i] = g->rank_lpn[j];
      g->rank_lpn[j] = t;
    }
    break;
  }
  return 0;
}

/* Free what generator_init allocated. */
static void
generator_free (struct generator *g)
{
  free (g->rank_lpn);
  g->rank_lpn = NULL;
}

/* The logical page of write number i (counted from the end of the
 * fill).
 */
static inline uint64_t
generator_next (struct generator *g, uint64_t i)
{
  switch (g->w->kind) {
  case GEN_SEQ:
    if (g->cursor == g->pages)
      g->cursor = 0;
    return g->cursor++;
  case GEN_UNIFORM:
    return rng_below (&g->rng, g->pages);
  case GEN_HOTCOLD: {
    /* The hot region starts at 0, or for a moving workload at the next
     * hot-region-sized slice of the disk every drive write.
     */
    uint64_t start = g->w->moving ? (i / g->pages) * g->hot_pages % g->pages
      : 0;
    uint64_t off;
    if (rng_next (&g->rng) < g->hot_threshold)
      off = rng_below (&g->rng, g->hot_pages);
    else
      off = g->hot_pages + rng_below (&g->rng, g->pages - g->hot_pages);
    return (start + off) % g->pages;
  }
  case GEN_ZIPF:
    return g->rank_lpn[zipf_next (&g->zipf, &g->rng) - 1];
  }
  abort ();
}

/* ---- configuration ---- */

struct config {
  const char *dir;
  uint64_t size;
  double op;
  uint32_t page_size;
  uint32_t pages_per_block;
  unsigned streams;
  double drive_writes;
  uint64_t seed;
  enum ftl_gc_policy gc_policy;
  bool one_log;                 /* no hot/cold separation */
  bool hot_cold_always;         /* separation whatever the workload */
  uint32_t wl_threshold;        /* as opened (0 given: the default) */
};

/* Parse a size: a number, optionally followed by K, M, G or T (binary
 * multiples) and an optional "iB" or "B".  Returns false if s is not
 * one.
 */
static bool
parse_size (const char *s, uint64_t *r)
{
  uint64_t v, mult = 1;
  char *end;

  if (!g_ascii_isdigit (*s))
    return false;
  errno = 0;
  v = g_ascii_strtoull (s, &end, 10);
  if (errno != 0)
    return false;
  switch (g_ascii_toupper (*end)) {
  case 'K': mult = UINT64_C (1) << 10; break;
  case 'M': mult = UINT64_C (1) << 20; break;
  case 'G': mult = UINT64_C (1) << 30; break;
  case 'T': mult = UINT64_C (1) << 40; break;
  case '\0': break;
  default: return false;
  }
  if (mult > 1) {
    end++;
    if (strcmp (end, "") != 0 && strcmp (end, "B") != 0 &&
        strcmp (end, "iB") != 0)
      return false;
  }
  if (v > UINT64_MAX / mult)
    return false;
  *r = v * mult;
  return true;
}

/* "1 GiB", "256 MiB", "1536 KiB" or "1000 bytes" (static buffer). */
static const char *
human_size (uint64_t v)
{
  static char buf[64];
  static const char *const unit[] = { "bytes", "KiB", "MiB", "GiB", "TiB" };
  unsigned u = 0;

  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    u++;
  }
  snprintf (buf, sizeof buf, "%" PRIu64 " %s", v, unit[u]);
  return buf;
}

/* ---- measuring ---- */

struct result {
  const struct workload *w;
  uint64_t host_pages;          /* deltas over the whole measured run */
  uint64_t program_pages;
  uint64_t erases;
  uint64_t gc_copied;
  uint64_t gc_runs;
  uint64_t wl_moved;            /* pages moved by static wear leveling */
  uint32_t wl_threshold;
  uint32_t erase_min, erase_max; /* absolute, after the run */
  double erase_mean;
  uint32_t blocks;
  uint64_t hist[FTL_HISTOGRAM_BUCKETS]; /* erase-count histogram */
  uint32_t hist_first, hist_width;
  unsigned hist_used;
  double waf;                   /* overall: program_pages / host_pages */
  double steady_waf;            /* over the last half */
  double fill_seconds;
  double seconds;               /* the measured run, final flush included */
  bool separating;              /* hot/cold separation at the end */
  double lift;                  /* hot-cold=auto's last measurement */
  uint64_t switches;            /* ... times it turned separation off or on */
};

/* The image being written, for the signal handler to remove. */
static const char *volatile image_path;

/* SIGINT, SIGTERM, SIGHUP: do not leave an image of the disk's size
 * behind in (memory-backed) /dev/shm.  unlink is async-signal-safe.
 */
static void
remove_image_and_die (int sig)
{
  const char *p = image_path;

  if (p)
    unlink (p);
  signal (sig, SIG_DFL);
  raise (sig);
}

/* Seconds on the monotonic clock. */
static double
now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The library's log callback: errors and warnings to stderr, prefixed
 * with the workload (opaque).
 */
static void
log_message (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level == FTL_LOG_DEBUG)
    return;
  fprintf (stderr, "ftl-bench: %s: %s%s\n", (const char *) opaque,
           level == FTL_LOG_WARN ? "warning: " : "", msg);
}

/* The stamp at the start of every page written: which logical page it
 * is and how many times the benchmark has written that page.
 */
static inline void
stamp_page (uint8_t *page, uint64_t lpn, uint32_t version)
{
  memcpy (page, &lpn, sizeof lpn);
  memcpy (page + sizeof lpn, &version, sizeof version);
}

/* (program) / (host) between two snapshots, or NAN without host pages. */
static double
waf_between (const struct ftl_stats *a, const struct ftl_stats *b)
{
  uint64_t host = b->host_write_pages - a->host_write_pages;

  if (host == 0)
    return NAN;
  return (double) (b->media_program_pages - a->media_program_pages) / host;
}

/* Fail early, rather than with ENOSPC half way through a run, if the
 * directory cannot hold the image.  The estimate covers the data, the
 * over-provisioning and two map checkpoints of 4 bytes per page.
 */
static bool
check_space (const struct config *c)
{
  struct statvfs sv;
  double need = c->size * (1.0 + c->op / 100.0)
    + 8.0 * (c->size / c->page_size) + 64.0 * 1024 * 1024;
  double avail;

  if (statvfs (c->dir, &sv) == -1) {
    fprintf (stderr, "ftl-bench: %s: %s\n", c->dir, strerror (errno));
    return false;
  }
  avail = (double) sv.f_bavail * sv.f_frsize;
  if (avail < need) {
    fprintf (stderr, "ftl-bench: %s has %.0f MiB free, but the image needs "
             "about %.0f MiB: use --dir or a smaller --size\n",
             c->dir, avail / 1048576.0, need / 1048576.0);
    return false;
  }
  return true;
}

/* Read the whole disk back and check every page's stamp against the
 * version last written.  Returns 0, or -1 after reporting what is wrong.
 */
static int
verify_disk (struct ftl *ftl, const struct ftl_geometry *g,
             const uint32_t *versions, const char *name)
{
  uint64_t per = FILL_BYTES / g->page_size;
  uint8_t *buf = malloc (FILL_BYTES);
  int r = 0;

  if (!buf)
    return -1;
  for (uint64_t lpn = 0; lpn < g->logical_pages && r == 0; lpn += per) {
    uint64_t n = MIN (per, g->logical_pages - lpn);
    int e = ftl_read (ftl, buf, n * g->page_size, lpn * g->page_size);
    if (e < 0) {
      fprintf (stderr, "ftl-bench: %s: reading back logical page %" PRIu64
               ": %s\n", name, lpn, strerror (-e));
      r = -1;
      break;
    }
    for (uint64_t i = 0; i < n; i++) {
      const uint8_t *p = buf + i * g->page_size;
      uint64_t got_lpn;
      uint32_t got_version;
      memcpy (&got_lpn, p, sizeof got_lpn);
      memcpy (&got_version, p + sizeof got_lpn, sizeof got_version);
      if (got_lpn != lpn + i || got_version != versions[lpn + i]) {
        fprintf (stderr, "ftl-bench: %s: logical page %" PRIu64 " reads "
                 "back as page %" PRIu64 " version %" PRIu32 ", expected "
                 "version %" PRIu32 "\n", name, lpn + i, got_lpn,
                 got_version, versions[lpn + i]);
        r = -1;
        break;
      }
    }
  }
  free (buf);
  return r;
}

/* Run one workload on a fresh image at path (see the top of the file).
 * Writes timeline rows to timeline if it is not NULL.  Returns 0 and
 * fills *res, or -1 after reporting the error.
 */
static int
run_workload (const struct config *c, const struct workload *w,
              uint64_t seed, const char *path, FILE *timeline,
              struct result *res)
{
  struct ftl_options o = {
    .path = path,
    .logical_bytes = c->size,
    .page_size = c->page_size,
    .pages_per_block = c->pages_per_block,
    .op_percent = c->op,
    .streams = c->streams,
    .gc_policy = c->gc_policy,
    .one_log = c->one_log,
    .hot_cold_always = c->hot_cold_always,
    .wl_threshold = c->wl_threshold,
    .log = log_message,
    .log_opaque = (void *) w->name,
  };
  struct ftl *ftl = NULL;
  struct ftl_geometry g;
  struct ftl_stats base, half, prev, st;
  struct generator gen = { .rank_lpn = NULL };
  uint32_t *versions = NULL;
  uint8_t *buf = NULL;
  char errbuf[256];
  uint64_t total, half_at, next_sample;
  unsigned step = 0;
  double t0;
  int e, r = -1;

  memset (res, 0, sizeof *res);
  res->w = w;

  if (unlink (path) == -1 && errno != ENOENT) {
    fprintf (stderr, "ftl-bench: %s: %s\n", path, strerror (errno));
    return -1;
  }
  image_path = path;
  e = ftl_open (&o, &ftl, errbuf, sizeof errbuf);
  if (e < 0) {
    fprintf (stderr, "ftl-bench: %s: %s\n", path, errbuf);
    goto out;
  }
  ftl_get_geometry (ftl, &g);
  versions = calloc (g.logical_pages, sizeof *versions);
  buf = calloc (1, FILL_BYTES);
  if (!versions || !buf || generator_init (&gen, w, g.logical_pages, seed)) {
    fprintf (stderr, "ftl-bench: %s\n", strerror (ENOMEM));
    goto out;
  }

  /* The fill: every page once, sequentially, in large writes. */
  t0 = now ();
  for (uint64_t off = 0; off < c->size; off += FILL_BYTES) {
    uint64_t n = MIN (FILL_BYTES, c->size - off);
    for (uint64_t i = 0; i < n / g.page_size; i++) {
      uint64_t lpn = off / g.page_size + i;
      stamp_page (buf + i * g.page_size, lpn, ++versions[lpn]);
    }
    e = ftl_write (ftl, buf, n, off, 0);
    if (e < 0) {
      fprintf (stderr, "ftl-bench: %s: fill at offset %" PRIu64 ": %s\n",
               w->name, off, strerror (-e));
      goto out;
    }
  }
  e = ftl_flush (ftl);
  if (e < 0) {
    fprintf (stderr, "ftl-bench: %s: flush: %s\n", w->name, strerror (-e));
    goto out;
  }
  res->fill_seconds = now () - t0;

  /* The measured run. */
  total = (uint64_t) (c->drive_writes * g.logical_pages + 0.5);
  half_at = total / 2;
  next_sample = g.logical_pages / TIMELINE_STEPS;
  memset (buf, 0, g.page_size);
  ftl_get_stats (ftl, &base);
  half = prev = base;
  t0 = now ();
  for (uint64_t i = 0; i < total; ) {
    uint64_t lpn = generator_next (&gen, i);
    stamp_page (buf, lpn, ++versions[lpn]);
    e = ftl_write (ftl, buf, g.page_size, lpn * g.page_size, 0);
    if (e < 0) {
      fprintf (stderr, "ftl-bench: %s: write %" PRIu64 " (logical page %"
               PRIu64 "): %s\n", w->name, i, lpn, strerror (-e));
      goto out;
    }
    i++;
    if (i == half_at)
      ftl_get_stats (ftl, &half);
    if (i == next_sample || i == total) {
      ftl_get_stats (ftl, &st);
      if (timeline) {
        fprintf (timeline, "%s,%.4f,%.4f,", w->name,
                 (double) i / g.logical_pages, waf_between (&prev, &st));
        if (i > half_at)
          fprintf (timeline, "%.4f", waf_between (&half, &st));
        fputc ('\n', timeline);
      }
      prev = st;
      step++;
      next_sample = (uint64_t) (step + 1) * g.logical_pages / TIMELINE_STEPS;
    }
  }
  e = ftl_flush (ftl);
  if (e < 0) {
    fprintf (stderr, "ftl-bench: %s: flush: %s\n", w->name, strerror (-e));
    goto out;
  }
  res->seconds = now () - t0;
  ftl_get_stats (ftl, &st);

  res->host_pages = st.host_write_pages - base.host_write_pages;
  res->program_pages = st.media_program_pages - base.media_program_pages;
  res->erases = st.media_erases - base.media_erases;
  res->gc_copied = st.gc_copied_pages - base.gc_copied_pages;
  res->gc_runs = st.gc_runs - base.gc_runs;
  res->wl_moved = st.wl_moved_pages - base.wl_moved_pages;
  res->wl_threshold = st.wl_threshold;
  res->erase_min = st.erase_min;
  res->erase_mean = st.erase_mean;
  res->erase_max = st.erase_max;
  res->blocks = st.blocks_total;
  res->hist_used = ftl_get_erase_histogram (ftl, res->hist,
                                            FTL_HISTOGRAM_BUCKETS,
                                            &res->hist_first,
                                            &res->hist_width);
  res->waf = waf_between (&base, &st);
  res->steady_waf = waf_between (&half, &st);
  res->separating = st.hot_cold.separating;
  res->lift = st.hot_cold.lift;
  res->switches = st.hot_cold.switches;

  if (verify_disk (ftl, &g, versions, w->name) < 0)
    goto out;
  r = 0;

 out:
  if (ftl) {
    e = ftl_close (ftl);
    if (e < 0 && r == 0) {
      fprintf (stderr, "ftl-bench: %s: close: %s\n", w->name, strerror (-e));
      r = -1;
    }
  }
  unlink (path);
  image_path = NULL;
  generator_free (&gen);
  free (versions);
  free (buf);
  return r;
}

/* ---- output ---- */

/* The parameters of the run and the column titles of the table. */
static void
print_table_header (const struct config *c)
{
  printf ("ftl-bench: %s logical, op %g%%, %" PRIu32 "-byte pages, %" PRIu32
          " pages per block, ", human_size (c->size), c->op, c->page_size,
          c->pages_per_block);
  if (c->streams)
    printf ("%u stream%s, ", c->streams, c->streams == 1 ? "" : "s");
  else
    printf ("default streams, ");
  printf ("%s GC, %s, wear leveling at a spread of %" PRIu32 ", ",
          ftl_gc_policy_name (c->gc_policy),
          c->one_log ? "one log" : c->hot_cold_always ?
          "hot/cold separation" : "hot/cold separation while the writes "
          "show a hot set",
          c->wl_threshold ? c->wl_threshold : FTL_DEFAULT_WL_THRESHOLD);
  printf ("%g drive writes, seed %" PRIu64 ", image in %s\n",
          c->drive_writes, c->seed, c->dir);
  printf ("steady WAF: last half of the run; ref: %s\n\n",
          c->one_log ? "the model of greedy GC under uniform writes"
          : "the model's ideal hot/cold split, that knows the hot pages");
  printf ("%-8s %7s %5s %8s %9s %10s %9s %17s %6s %7s %13s\n", "workload",
          "steady", "ref", "overall", "erases", "GC copied", "WL moved",
          "wear min/mean/max", "MB/s", "seconds", "hot/cold lift");
}

/* One workload's row of the table, printed as soon as it has run. */
static void
print_table_row (const struct config *c, const struct result *res)
{
  double ref = reference_waf (res->w, c->op, !c->one_log);
  char refs[16], wear[48], sep[32];

  if (isnan (ref))
    snprintf (refs, sizeof refs, "-");
  else
    snprintf (refs, sizeof refs, "%.2f", ref);
  snprintf (wear, sizeof wear, "%" PRIu32 "/%.1f/%" PRIu32,
            res->erase_min, res->erase_mean, res->erase_max);
  /* The state at the end, the last lift hot-cold=auto measured, and
   * how often it switched.
   */
  snprintf (sep, sizeof sep, "%s %.2f %" PRIu64, res->separating ? "on" : "off",
            res->lift, res->switches);
  printf ("%-8s %7.2f %5s %8.2f %9" PRIu64 " %10" PRIu64 " %9" PRIu64
          " %17s %6.0f %7.1f %13s\n", res->w->name, res->steady_waf, refs,
          res->waf, res->erases, res->gc_copied, res->wl_moved, wear,
          res->host_pages * (double) c->page_size / 1e6 / res->seconds,
          res->seconds, sep);
  fflush (stdout);
}

#define CSV_HEADER \
  "workload,op,size,page_size,pages_per_block,streams,host_pages," \
  "program_pages,waf,erases,gc_copied,gc_runs,erase_min,erase_mean," \
  "erase_max,seconds,steady_waf,wl_moved,gc_policy,wl_threshold," \
  "hot_cold\n"

/* One row of --csv: see CSV_HEADER for the columns. */
static void
write_csv_row (FILE *fp, const struct config *c, const struct result *res)
{
  fprintf (fp, "%s,%g,%" PRIu64 ",%" PRIu32 ",%" PRIu32 ",%u,%" PRIu64
           ",%" PRIu64 ",%.4f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu32
           ",%.2f,%" PRIu32 ",%.3f,%.4f,%" PRIu64 ",%s,%" PRIu32 ",%d\n",
           res->w->name, c->op, c->size, c->page_size, c->pages_per_block,
           c->streams, res->host_pages, res->program_pages, res->waf,
           res->erases, res->gc_copied, res->gc_runs, res->erase_min,
           res->erase_mean, res->erase_max, res->seconds, res->steady_waf,
           res->wl_moved, ftl_gc_policy_name (c->gc_policy),
           res->wl_threshold, !c->one_log);
  fflush (fp);
}

#define HISTOGRAM_HEADER \
  "# Erase-count histogram after each workload: blocks erase blocks\n" \
  "# have an erase count from erase_from to erase_to (at most 16\n" \
  "# buckets per workload, from ftl_get_erase_histogram).\n" \
  "workload,erase_from,erase_to,blocks\n"

/* The rows of --histogram for one workload: see HISTOGRAM_HEADER. */
static void
write_histogram_row (FILE *fp, const struct result *res)
{
  for (unsigned i = 0; i < res->hist_used; i++) {
    uint32_t from = res->hist_first + i * res->hist_width;
    fprintf (fp, "%s,%" PRIu32 ",%" PRIu32 ",%" PRIu64 "\n",
             res->w->name, from, from + res->hist_width - 1, res->hist[i]);
  }
  fflush (fp);
}

/* Open an output file: for appending (the header only if it is new or
 * empty) or replacing it.  NULL if name is NULL; exits on error.
 */
static FILE *
open_output (const char *name, bool append, const char *header)
{
  struct stat sb;
  FILE *fp;

  if (!name)
    return NULL;
  fp = fopen (name, append ? "a" : "w");
  if (!fp) {
    fprintf (stderr, "ftl-bench: %s: %s\n", name, strerror (errno));
    exit (EXIT_FAILURE);
  }
  if (fstat (fileno (fp), &sb) == 0 && sb.st_size == 0)
    fputs (header, fp);
  return fp;
}

/* Close an output file; false (after saying so) if any write failed. */
static bool
close_output (FILE *fp, const char *name)
{
  if (!fp)
    return true;
  bool failed = ferror (fp) != 0;

  if (fclose (fp) == EOF)
    failed = true;
  if (failed)
    fprintf (stderr, "ftl-bench: writing %s failed\n", name);
  return !failed;
}

/* ---- main ---- */

#define MAX_RUNS 64

/* Turn "all" or a comma list into indexes into workloads[] (a name may
 * be repeated: each is a run).  Returns the count, or 0 after reporting
 * what is wrong.
 */
static size_t
parse_workloads (const char *list, size_t which[MAX_RUNS])
{
  gchar **names;
  size_t n = 0;

  if (strcmp (list, "all") == 0) {
    for (size_t i = 0; i < NR_WORKLOADS; i++)
      which[n++] = i;
    return n;
  }
  names = g_strsplit (list, ",", -1);
  for (gchar **p = names; *p; p++) {
    size_t i;
    if (**p == '\0')
      continue;
    for (i = 0; i < NR_WORKLOADS; i++)
      if (strcmp (*p, workloads[i].name) == 0)
        break;
    if (i == NR_WORKLOADS) {
      fprintf (stderr, "ftl-bench: unknown workload '%s' (choose from seq, "
               "uniform, 80/20, 90/10, zipf, phase, or all)\n", *p);
      g_strfreev (names);
      return 0;
    }
    if (n == MAX_RUNS) {
      fprintf (stderr, "ftl-bench: --workload: more than %d runs\n",
               MAX_RUNS);
      g_strfreev (names);
      return 0;
    }
    which[n++] = i;
  }
  g_strfreev (names);
  if (n == 0)
    fprintf (stderr, "ftl-bench: --workload: no workload given\n");
  return n;
}

int
main (int argc, char *argv[])
{
  gchar *dir = NULL, *size_s = NULL, *page_size_s = NULL;
  gchar *workload_s = NULL, *csv_name = NULL, *timeline_name = NULL;
  gchar *histogram_name = NULL, *gc_s = NULL, *hot_cold_s = NULL;
  gint ppb = FTL_DEFAULT_PAGES_PER_BLOCK, streams = 1;
  gdouble op = FTL_DEFAULT_OP_PERCENT, drive_writes = 10;
  gint64 seed = 1, wl_threshold = 0;
  gboolean one_log = FALSE;
  GOptionEntry entries[] = {
    { "dir", 0, 0, G_OPTION_ARG_FILENAME, &dir,
      "Directory for the image (default: /dev/shm, else /tmp)", "DIR" },
    { "size", 0, 0, G_OPTION_ARG_STRING, &size_s,
      "Logical size of the disk (default: 1G)", "SIZE" },
    { "op", 0, 0, G_OPTION_ARG_DOUBLE, &op,
      "Over-provisioning in percent (default: 28)", "PERCENT" },
    { "page-size", 0, 0, G_OPTION_ARG_STRING, &page_size_s,
      "Page size, and the size of every measured write (default: 4096)",
      "BYTES" },
    { "pages-per-block", 0, 0, G_OPTION_ARG_INT, &ppb,
      "Pages per erase block (default: 256)", "N" },
    { "streams", 0, 0, G_OPTION_ARG_INT, &streams,
      "Host write streams, 0 for the library's default (default: 1)", "N" },
    { "workload", 0, 0, G_OPTION_ARG_STRING, &workload_s,
      "Comma list of seq, uniform, 80/20, 90/10, zipf, phase; or all "
      "(default: all)", "LIST" },
    { "drive-writes", 0, 0, G_OPTION_ARG_DOUBLE, &drive_writes,
      "Measured writes, in multiples of the logical size (default: 10)",
      "N" },
    { "gc", 0, 0, G_OPTION_ARG_STRING, &gc_s,
      "Victim policy: cost-benefit or greedy (default: cost-benefit)",
      "POLICY" },
    { "hot-cold", 0, 0, G_OPTION_ARG_STRING, &hot_cold_s,
      "Hot/cold separation: auto (while the writes show a hot set), true "
      "(always) or false (default: auto)", "MODE" },
    { "one-log", 0, 0, G_OPTION_ARG_NONE, &one_log,
      "No hot/cold separation (--hot-cold=false): one host log per stream, "
      "one GC log", NULL },
    { "wl-threshold", 0, 0, G_OPTION_ARG_INT64, &wl_threshold,
      "Erase count spread that starts static wear leveling, 0 for the "
      "library's default (16); 4294967295 turns it off", "N" },
    { "seed", 0, 0, G_OPTION_ARG_INT64, &seed,
      "Seed of the random numbers (default: 1)", "N" },
    { "csv", 0, 0, G_OPTION_ARG_FILENAME, &csv_name,
      "Append one row per workload to this CSV file", "FILE" },
    { "timeline", 0, 0, G_OPTION_ARG_FILENAME, &timeline_name,
      "Write WAF every 1/20 drive write to this CSV file", "FILE" },
    { "histogram", 0, 0, G_OPTION_ARG_FILENAME, &histogram_name,
      "Write the final erase counts to this CSV file", "FILE" },
    { NULL },
  };
  GOptionContext *ctx;
  GError *err = NULL;
  struct config c;
  size_t which[MAX_RUNS], nwhich;
  FILE *csv, *timeline, *histogram;
  char *path;
  struct stat sb;
  bool ok = true;

  ctx = g_option_context_new ("- write amplification benchmark of the "
                              "nbdkit-ftl library");
  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_description (ctx,
    "Each workload runs on a fresh image: a sequential fill, then\n"
    "--drive-writes times the logical size in page-sized writes.  The\n"
    "table shows WAF over the last half of those writes (steady) and\n"
    "over all of them (overall).\n");
  if (!g_option_context_parse (ctx, &argc, &argv, &err)) {
    fprintf (stderr, "ftl-bench: %s (try --help)\n", err->message);
    exit (EXIT_FAILURE);
  }
  g_option_context_free (ctx);
  if (argc > 1) {
    fprintf (stderr, "ftl-bench: unexpected argument '%s' (try --help)\n",
             argv[1]);
    exit (EXIT_FAILURE);
  }

  memset (&c, 0, sizeof c);
  c.size = UINT64_C (1) << 30;
  c.page_size = FTL_DEFAULT_PAGE_SIZE;
  if (size_s && (!parse_size (size_s, &c.size) || c.size == 0)) {
    fprintf (stderr, "ftl-bench: --size: not a size: %s\n", size_s);
    exit (EXIT_FAILURE);
  }
  if (page_size_s) {
    uint64_t v;
    if (!parse_size (page_size_s, &v) || v < FTL_MIN_PAGE_SIZE ||
        v > FTL_MAX_PAGE_SIZE || (v & (v - 1)) != 0) {
      fprintf (stderr, "ftl-bench: --page-size must be a power of 2 from %d "
               "to %d: %s\n", FTL_MIN_PAGE_SIZE, FTL_MAX_PAGE_SIZE,
               page_size_s);
      exit (EXIT_FAILURE);
    }
    c.page_size = v;
  }
  if (c.size % c.page_size != 0) {
    fprintf (stderr, "ftl-bench: --size must be a multiple of the page size "
             "(%" PRIu32 ")\n", c.page_size);
    exit (EXIT_FAILURE);
  }
  if (ppb <= 0 || streams < 0) {
    fprintf (stderr, "ftl-bench: --pages-per-block and --streams cannot be "
             "negative\n");
    exit (EXIT_FAILURE);
  }
  if (!(drive_writes > 0 && drive_writes <= 1e6)) {
    fprintf (stderr, "ftl-bench: --drive-writes must be above 0\n");
    exit (EXIT_FAILURE);
  }
  if (gc_s) {
    int p = ftl_gc_policy_from_name (gc_s);
    if (p < 0) {
      fprintf (stderr, "ftl-bench: --gc: greedy or cost-benefit, not %s\n",
               gc_s);
      exit (EXIT_FAILURE);
    }
    c.gc_policy = p;
  }
  if (wl_threshold < 0 || wl_threshold > UINT32_MAX) {
    fprintf (stderr, "ftl-bench: --wl-threshold: out of range\n");
    exit (EXIT_FAILURE);
  }
  c.wl_threshold = wl_threshold;
  c.one_log = one_log;
  if (hot_cold_s) {
    if (strcmp (hot_cold_s, "true") == 0)
      c.hot_cold_always = true;
    else if (strcmp (hot_cold_s, "false") == 0)
      c.one_log = true;
    else if (strcmp (hot_cold_s, "auto") != 0) {
      fprintf (stderr, "ftl-bench: --hot-cold must be auto, true or false: "
               "'%s'\n", hot_cold_s);
      exit (EXIT_FAILURE);
    }
  }
  c.op = op;
  c.pages_per_block = ppb;
  c.streams = streams;
  c.drive_writes = drive_writes;
  c.seed = seed;
  if (dir)
    c.dir = dir;
  else if (stat ("/dev/shm", &sb) == 0 && S_ISDIR (sb.st_mode))
    c.dir = "/dev/shm";
  else
    c.dir = "/tmp";
  nwhich = parse_workloads (workload_s ? workload_s : "all", which);
  if (nwhich == 0)
    exit (EXIT_FAILURE);
  if (!check_space (&c))
    exit (EXIT_FAILURE);

  path = g_strdup_printf ("%s/ftl-bench-%ld.img", c.dir, (long) getpid ());
  signal (SIGINT, remove_image_and_die);
  signal (SIGTERM, remove_image_and_die);
  signal (SIGHUP, remove_image_and_die);

  csv = open_output (csv_name, true, CSV_HEADER);
  timeline = open_output (timeline_name, false,
                          "workload,drive_writes,interval_waf,steady_waf\n");
  histogram = open_output (histogram_name, false, HISTOGRAM_HEADER);

  print_table_header (&c);
  for (size_t k = 0; k < nwhich && ok; k++) {
    const struct workload *w = &workloads[which[k]];
    uint64_t s = c.seed + which[k];
    struct result res;

    /* Each workload has its own stream of random numbers, the same
     * whichever others run with it.
     */
    if (run_workload (&c, w, splitmix64 (&s), path, timeline, &res) < 0) {
      ok = false;
      break;
    }
    print_table_row (&c, &res);
    if (csv)
      write_csv_row (csv, &c, &res);
    if (histogram)
      write_histogram_row (histogram, &res);
  }

  ok &= close_output (csv, csv_name);
  ok &= close_output (timeline, timeline_name);
  ok &= close_output (histogram, histogram_name);
  g_free (path);
  g_free (dir);
  g_free (size_s);
  g_free (page_size_s);
  g_free (workload_s);
  g_free (csv_name);
  g_free (timeline_name);
  g_free (histogram_name);
  g_free (gc_s);
  g_free (hot_cold_s);
  exit (ok ? EXIT_SUCCESS : EXIT_FAILURE);
}
