/* nbdkit-ftl: ftl-latency, write latency under sustained random
 * overwrite with the NAND timing model on.
 *
 *   fresh image, timing off -> sequential fill -> reopen, timing on,
 *   deadline on -> N threads of random page overwrites for S seconds
 *   (the first W seconds are warm-up and not counted) -> verify
 *
 * For each garbage collection mode it prints the write latency
 * percentiles (p50, p99, p99.9, max: exact, from every write of the
 * measured interval, as the caller of ftl_write sees it), the writes
 * per second, the write
 * amplification over the measured interval, and how many writes the
 * deadline aborted.  Modes:
 *
 *   background  watermark GC: a background thread keeps the free pool
 *               above the high watermark; writers that find it at the
 *               low watermark collect themselves (foreground GC);
 *   foreground  no background thread: writers collect themselves;
 *   deadline    deadline-aware GC (gc_mode FTL_GC_DEADLINE): the
 *               background thread works in slices and yields to requests
 *               whose deadline is near, unless the free pool is at the
 *               low watermark; writers that must collect take the
 *               cheapest victim and reclaim one block only.
 *
 * Every page carries its logical page number and a version; the whole
 * disk is read back and checked at the end (an aborted write may have
 * left either version).
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ftl.h"

#include "bench-util.h"

struct config {
  const char *dir;
  uint64_t size;
  double op;
  uint32_t ppb;
  unsigned threads;
  double seconds, warmup;
  uint64_t timeout_ns;
  struct ftl_timing timing;
};

static struct config cfg = {
  .dir = "/dev/shm",
  .size = 32 << 20,
  .op = 7,
  .ppb = 32,
  .threads = 8,
  .seconds = 30,
  .warmup = 10,
  .timeout_ns = 50000000,
  .timing = {
    .enabled = true,
    .read_ns = 40000, .program_ns = 200000, .erase_ns = 2000000,
    .channels = 8, .dies = 4,
  },
};

#define PS 4096

static void
log_message (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level == FTL_LOG_ERROR)
    fprintf (stderr, "ftl: %s\n", msg);
}

/* Versions per page: base is the last one whose write succeeded, ver
 * the last one written; writes after base were aborted, so the disk may
 * hold any version from base to ver.
 */
static uint32_t *ver, *base;
static pthread_mutex_t *page_locks;
#define PAGE_LOCKS 1024

static void
stamp (uint8_t *p, uint64_t lpn, uint32_t v)
{
  memset (p, 0, PS);
  memcpy (p, &lpn, 8);
  memcpy (p + 8, &v, 4);
  memset (p + 12, (int) (lpn ^ v), 64);
}

struct worker {
  struct ftl *ftl;
  uint64_t lpages;
  uint64_t seed;
  volatile bool *stop;
  volatile bool *measuring;
  uint64_t writes, aborted, errors;
  uint32_t *lat;                /* us, of writes while measuring */
  size_t nlat, caplat;
};

static void *
worker (void *arg)
{
  struct worker *w = arg;
  uint8_t *buf = malloc (PS);

  while (!*w->stop) {
    uint64_t lpn = bench_random (&w->seed) % w->lpages;
    pthread_mutex_t *l = &page_locks[lpn % PAGE_LOCKS];
    pthread_mutex_lock (l);
    uint32_t v = ver[lpn] + 1;
    stamp (buf, lpn, v);
    bool m = *w->measuring;
    double t0 = bench_clock_s (CLOCK_MONOTONIC);
    int r = ftl_write (w->ftl, buf, PS, lpn * PS, 0);
    if (m) {
      if (w->nlat == w->caplat) {
        w->caplat = w->caplat ? 2 * w->caplat : 4096;
        w->lat = realloc (w->lat, w->caplat * sizeof *w->lat);
      }
      w->lat[w->nlat++] = (bench_clock_s (CLOCK_MONOTONIC) - t0) * 1e6;
    }
    if (r == 0)
      base[lpn] = v;
    if (r == 0 || r == -ETIMEDOUT)
      ver[lpn] = v;
    pthread_mutex_unlock (l);
    if (r == 0)
      w->writes++;
    else if (r == -ETIMEDOUT)
      w->aborted++;
    else
      w->errors++;
  }
  free (buf);
  return NULL;
}

static int
verify (struct ftl *ftl, uint64_t lpages)
{
  uint8_t *buf = malloc (PS), *want = malloc (PS);
  int bad = 0;

  for (uint64_t l = 0; l < lpages; l++) {
    if (ftl_read (ftl, buf, PS, l * PS) != 0) {
      bad++;
      continue;
    }
    uint32_t v;
    memcpy (&v, buf + 8, 4);
    stamp (want, l, v);
    if (v >= base[l] && v <= ver[l] && memcmp (buf, want, PS) == 0)
      continue;
    if (bad++ < 5)
      fprintf (stderr, "page %" PRIu64 " holds version %u, not one of "
               "%u..%u\n", l, v, base[l], ver[l]);
  }
  free (buf);
  free (want);
  return bad;
}

static int
cmp_u32 (const void *a, const void *b)
{
  uint32_t x = *(const uint32_t *) a, y = *(const uint32_t *) b;
  return x < y ? -1 : x > y;
}

/* The q-quantile of n sorted values (nearest rank). */
static uint32_t
quantile (const uint32_t *v, size_t n, double q)
{
  size_t k = (size_t) (q * n + 0.999999);
  if (n == 0)
    return 0;
  if (k < 1) k = 1;
  if (k > n) k = n;
  return v[k - 1];
}

static void
print_header (void)
{
  printf ("| GC | writes/s | p50 us | p99 us | p99.9 us | max us | WAF | "
          "aborted | deadline | GC yields |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n");
}

static int
run (const char *mode)
{
  char path[512], err[256];
  bool dlgc = strcmp (mode, "deadline") == 0;
  bool bg = strcmp (mode, "background") == 0 || dlgc;
  struct ftl_options o = {
    .logical_bytes = cfg.size, .page_size = PS, .pages_per_block = cfg.ppb,
    .op_percent = cfg.op, .streams = 1, .log = log_message,
  };
  struct ftl *ftl;
  struct ftl_stats s0, s1;
  struct ftl_geometry g;
  volatile bool stop = false, measuring = false;
  pthread_t th[64];
  struct worker w[64];
  int r;

  snprintf (path, sizeof path, "%s/ftl-latency.%d.img", cfg.dir, getpid ());
  unlink (path);
  o.path = path;

  /* Fill, without the timing model. */
  r = ftl_open (&o, &ftl, err, sizeof err);
  if (r < 0) {
    fprintf (stderr, "ftl-latency: %s: %s\n", path, err);
    return -1;
  }
  ftl_get_geometry (ftl, &g);
  ver = calloc (g.logical_pages, sizeof *ver);
  base = calloc (g.logical_pages, sizeof *base);
  {
    uint8_t *buf = malloc (64 * PS);
    for (uint64_t l = 0; l < g.logical_pages; l += 64) {
      uint32_t n = g.logical_pages - l < 64 ? g.logical_pages - l : 64;
      for (uint32_t i = 0; i < n; i++) {
        ver[l + i] = base[l + i] = 1;
        stamp (buf + (size_t) i * PS, l + i, 1);
      }
      if (ftl_write (ftl, buf, (uint64_t) n * PS, l * PS, 0) < 0)
        return -1;
    }
    free (buf);
  }
  if (ftl_close (ftl) < 0)
    return -1;

  /* Overwrite, with the model and the deadline. */
  o.logical_bytes = 0;
  o.timing = cfg.timing;
  o.timeout_ns = cfg.timeout_ns;
  o.timeout_retries = 0;
  o.gc_mode = dlgc ? FTL_GC_DEADLINE : FTL_GC_WATERMARK;
  r = ftl_open (&o, &ftl, err, sizeof err);
  if (r < 0) {
    fprintf (stderr, "ftl-latency: %s: %s\n", path, err);
    return -1;
  }
  if (bg && ftl_start_background (ftl) < 0)
    return -1;
  if (ftl_start_watchdog (ftl) < 0)
    return -1;
  for (unsigned i = 0; i < cfg.threads; i++) {
    w[i] = (struct worker) { .ftl = ftl, .lpages = g.logical_pages,
                             .seed = 0x9E3779B97F4A7C15ULL * (i + 1),
                             .stop = &stop, .measuring = &measuring };
    pthread_create (&th[i], NULL, worker, &w[i]);
  }
  usleep (cfg.warmup * 1e6);
  measuring = true;
  ftl_get_stats (ftl, &s0);
  uint64_t w0 = 0, a0 = 0;
  for (unsigned i = 0; i < cfg.threads; i++)
    w0 += w[i].writes, a0 += w[i].aborted;
  double t0 = bench_clock_s (CLOCK_MONOTONIC);
  usleep (cfg.seconds * 1e6);
  ftl_get_stats (ftl, &s1);
  uint64_t w1 = 0, a1 = 0, e1 = 0;
  for (unsigned i = 0; i < cfg.threads; i++)
    w1 += w[i].writes, a1 += w[i].aborted;
  double dt = bench_clock_s (CLOCK_MONOTONIC) - t0;
  measuring = false;
  stop = true;
  for (unsigned i = 0; i < cfg.threads; i++) {
    pthread_join (th[i], NULL);
    e1 += w[i].errors;
  }
  ftl_stop_watchdog (ftl);
  ftl_stop_background (ftl);

  double waf = (double) (s1.media_program_pages - s0.media_program_pages)
    / (double) (s1.host_write_pages - s0.host_write_pages);
  size_t n = 0;
  for (unsigned i = 0; i < cfg.threads; i++)
    n += w[i].nlat;
  uint32_t *all = malloc ((n + 1) * sizeof *all);
  n = 0;
  for (unsigned i = 0; i < cfg.threads; i++) {
    memcpy (all + n, w[i].lat, w[i].nlat * sizeof *all);
    n += w[i].nlat;
    free (w[i].lat);
  }
  qsort (all, n, sizeof *all, cmp_u32);
  printf ("| %s | %.0f | %u | %u | %u | %u | %.2f | %" PRIu64 " of %zu | "
          "%.0f ms | %" PRIu64 " |\n",
          mode, (w1 - w0) / dt, quantile (all, n, 0.5),
          quantile (all, n, 0.99), quantile (all, n, 0.999),
          n ? all[n - 1] : 0, waf, a1 - a0, n, cfg.timeout_ns / 1e6,
          s1.gc_yields - s0.gc_yields);
  free (all);
  fflush (stdout);

  int bad = verify (ftl, g.logical_pages);
  if (e1)
    fprintf (stderr, "ftl-latency: %" PRIu64 " writes failed otherwise\n",
             e1);
  ftl_close (ftl);
  unlink (path);
  free (ver);
  free (base);
  if (bad) {
    fprintf (stderr, "ftl-latency: %d pages are wrong\n", bad);
    return -1;
  }
  return 0;
}

static void
usage (void)
{
  printf ("usage: ftl-latency [--dir DIR] [--size BYTES] [--op PERCENT]\n"
          "         [--pages-per-block N] [--threads N] [--seconds S]\n"
          "         [--warmup S] [--timeout DURATION] [--gc MODE,...]\n"
          "         [--read-latency D] [--program-latency D]\n"
          "         [--erase-latency D] [--channels N] [--dies N]\n"
          "MODE: background (watermark GC), foreground or deadline\n"
          "(deadline-aware GC).\n");
}

static uint64_t
duration (const char *s)
{
  uint64_t ns;
  char err[128];
  if (ftl_parse_duration (s, &ns, err, sizeof err) < 0) {
    fprintf (stderr, "ftl-latency: %s\n", err);
    exit (2);
  }
  return ns;
}

int
main (int argc, char *argv[])
{
  static const struct option opts[] = {
    { "dir", 1, NULL, 'd' }, { "size", 1, NULL, 's' },
    { "op", 1, NULL, 'o' }, { "pages-per-block", 1, NULL, 'p' },
    { "threads", 1, NULL, 't' }, { "seconds", 1, NULL, 'S' },
    { "warmup", 1, NULL, 'w' }, { "timeout", 1, NULL, 'T' },
    { "gc", 1, NULL, 'g' }, { "read-latency", 1, NULL, 'R' },
    { "program-latency", 1, NULL, 'P' }, { "erase-latency", 1, NULL, 'E' },
    { "channels", 1, NULL, 'c' }, { "dies", 1, NULL, 'D' },
    { "help", 0, NULL, 'h' }, { 0 },
  };
  char *modes = strdup ("background,foreground,deadline");
  int c, fails = 0;

  while ((c = getopt_long (argc, argv, "", opts, NULL)) != -1) {
    switch (c) {
    case 'd': cfg.dir = optarg; break;
    case 's': cfg.size = strtoull (optarg, NULL, 0) << 20; break;
    case 'o': cfg.op = atof (optarg); break;
    case 'p': cfg.ppb = atoi (optarg); break;
    case 't': cfg.threads = atoi (optarg); break;
    case 'S': cfg.seconds = atof (optarg); break;
    case 'w': cfg.warmup = atof (optarg); break;
    case 'T': cfg.timeout_ns = duration (optarg); break;
    case 'g': free (modes); modes = strdup (optarg); break;
    case 'R': cfg.timing.read_ns = duration (optarg); break;
    case 'P': cfg.timing.program_ns = duration (optarg); break;
    case 'E': cfg.timing.erase_ns = duration (optarg); break;
    case 'c': cfg.timing.channels = atoi (optarg); break;
    case 'D': cfg.timing.dies = atoi (optarg); break;
    case 'h': usage (); return 0;
    default: usage (); return 2;
    }
  }
  if (cfg.threads < 1 || cfg.threads > 64) {
    fprintf (stderr, "ftl-latency: --threads must be from 1 to 64\n");
    return 2;
  }
  page_locks = malloc (PAGE_LOCKS * sizeof *page_locks);
  for (unsigned i = 0; i < PAGE_LOCKS; i++)
    pthread_mutex_init (&page_locks[i], NULL);

  printf ("size %" PRIu64 " MiB, op %.1f%%, %u pages per block, %u threads, "
          "%.0f s (after %.0f s warm-up); NAND: read %.0f us, program %.0f "
          "us, erase %.0f us, %u x %u units\n\n",
          cfg.size >> 20, cfg.op, cfg.ppb, cfg.threads, cfg.seconds,
          cfg.warmup, cfg.timing.read_ns / 1e3, cfg.timing.program_ns / 1e3,
          cfg.timing.erase_ns / 1e3, cfg.timing.channels, cfg.timing.dies);
  print_header ();
  for (char *m = strtok (modes, ","); m; m = strtok (NULL, ",")) {
    if (strcmp (m, "background") != 0 && strcmp (m, "foreground") != 0 &&
        strcmp (m, "deadline") != 0) {
      fprintf (stderr, "ftl-latency: unknown GC mode '%s'\n", m);
      return 2;
    }
    if (run (m) < 0)
      fails++;
  }
  free (modes);
  return fails ? 1 : 0;
}
