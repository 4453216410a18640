/* nbdkit-ftl: ftl-io, reads through the FTL library next to pread on a
 * plain file holding the same data, in one process.
 *
 * It measures what the library adds to a read, without nbdkit, the
 * socket and the client, whose cost and noise are larger than the
 * difference (perf.sh measures the whole path).  Both sides read the
 * same data from the page cache:
 *
 *   ftl    an image created with the plugin's defaults (KEY=VALUE
 *          arguments change them), filled with 1 MiB writes and
 *          flushed, its background and watchdog threads running as in
 *          the plugin; reads through ftl_read, which verifies every
 *          page's checksum
 *   file   a plain file with the same data; reads through pread
 *
 * Each round runs every workload against both, in alternating order
 * (ftl then file, then file then ftl), for --time seconds each, with
 * --threads threads.  Every read's pages are checked for the tag the
 * fill wrote into them, on both sides alike.  The table gives medians
 * over the rounds with their spread: operations per second, the ratio
 * ftl / file of each round, and process CPU time per operation.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ftl.h"
#include "keys.h"

#include "bench-util.h"

#define PAGE        4096
#define FILL_SIZE   (1024 * 1024)
#define MAX_ROUNDS  99
#define MAX_THREADS 64

static const char *prog = "ftl-io";
static char ftl_path[4096], file_path[4096];  /* deleted on every exit */

struct workload {
  const char *name;
  const char *what;
  uint32_t bs;                  /* bytes per read */
  bool random;
};

static const struct workload workloads[] = {
  { "rand4k", "random 4 KiB reads", 4096, true },
  { "seq1m", "sequential 1 MiB reads", 1024 * 1024, false },
};
#define NWORKLOADS (sizeof workloads / sizeof workloads[0])

/* One side's run: the threads share these. */
struct run {
  const struct workload *w;
  struct ftl *ftl;              /* NULL: read the plain file */
  int fd;
  uint64_t size;
  double stop;                  /* CLOCK_MONOTONIC seconds */
  unsigned nthreads;
};

struct worker {
  pthread_t thread;
  const struct run *run;
  unsigned index;
  uint64_t ops;
  int err;                      /* 0, or the first error (negative errno,
                                 * -EILSEQ: wrong data) */
};

static void
cleanup (void)
{
  if (ftl_path[0])
    unlink (ftl_path);
  if (file_path[0])
    unlink (file_path);
}

static void __attribute__ ((noreturn))
die (const char *fmt, ...)
{
  va_list ap;

  fprintf (stderr, "%s: ", prog);
  va_start (ap, fmt);
  vfprintf (stderr, fmt, ap);
  va_end (ap);
  fputc ('\n', stderr);
  cleanup ();
  exit (EXIT_FAILURE);
}

/* The fill's data: every 4 KiB page starts with its own offset, so that
 * a read that returns another page's data (or zeros) is caught.
 */
static void
fill_chunk (uint8_t *buf, uint64_t off)
{
  for (uint32_t i = 0; i < FILL_SIZE; i += PAGE) {
    uint64_t tag = off + i;
    memcpy (buf + i, &tag, sizeof tag);
  }
}

static bool
tags_ok (const uint8_t *buf, uint32_t len, uint64_t off)
{
  for (uint32_t i = 0; i < len; i += PAGE) {
    uint64_t tag;
    memcpy (&tag, buf + i, sizeof tag);
    if (tag != off + i)
      return false;
  }
  return true;
}

static void *
worker_main (void *arg)
{
  struct worker *wk = arg;
  const struct run *run = wk->run;
  const struct workload *w = run->w;
  uint64_t blocks = run->size / w->bs;
  uint64_t seed = 0x9e3779b97f4a7c15 * (wk->index + 1);
  /* Sequential readers each start in their own part of the disk. */
  uint64_t pos = blocks * wk->index / run->nthreads;
  uint8_t *buf = aligned_alloc (PAGE, w->bs);

  if (!buf) {
    wk->err = -ENOMEM;
    return NULL;
  }
  while (wk->err == 0) {
    /* Look at the clock every 64 reads only. */
    if (wk->ops % 64 == 0 && bench_clock_s (CLOCK_MONOTONIC) >= run->stop)
      break;
    uint64_t off;
    if (w->random)
      off = bench_random (&seed) % blocks * w->bs;
    else {
      off = pos * w->bs;
      pos = (pos + 1) % blocks;
    }
    if (run->ftl) {
      int r = ftl_read (run->ftl, buf, w->bs, off);
      if (r < 0)
        wk->err = r;
    }
    else {
      ssize_t r = pread (run->fd, buf, w->bs, off);
      if (r != (ssize_t) w->bs)
        wk->err = r < 0 ? -errno : -EIO;
    }
    if (wk->err == 0 && !tags_ok (buf, w->bs, off))
      wk->err = -EILSEQ;
    wk->ops++;
  }
  free (buf);
  return NULL;
}

/* Run one side for duration seconds: operations per second and process
 * CPU nanoseconds per operation.
 */
static void
run_side (struct run *run, double duration, double *ops_s, double *cpu_ns)
{
  struct worker wk[MAX_THREADS];
  double t0, c0, t1, c1;
  uint64_t ops = 0;

  memset (wk, 0, sizeof wk);
  t0 = bench_clock_s (CLOCK_MONOTONIC);
  c0 = bench_clock_s (CLOCK_PROCESS_CPUTIME_ID);
  run->stop = t0 + duration;
  for (unsigned i = 0; i < run->nthreads; i++) {
    wk[i].run = run;
    wk[i].index = i;
    int e = pthread_create (&wk[i].thread, NULL, worker_main, &wk[i]);
    if (e)
      die ("pthread_create: %s", strerror (e));
  }
  for (unsigned i = 0; i < run->nthreads; i++) {
    pthread_join (wk[i].thread, NULL);
    if (wk[i].err)
      die ("%s, %s: %s", run->w->name, run->ftl ? "ftl" : "file",
           wk[i].err == -EILSEQ ? "a read returned the wrong data"
           : strerror (-wk[i].err));
    ops += wk[i].ops;
  }
  t1 = bench_clock_s (CLOCK_MONOTONIC);
  c1 = bench_clock_s (CLOCK_PROCESS_CPUTIME_ID);
  *ops_s = ops / (t1 - t0);
  *cpu_ns = (c1 - c0) * 1e9 / ops;
}

static int
cmp_double (const void *a, const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return x < y ? -1 : x > y;
}

/* "median (min..max)" of n values with prec decimals, into out. */
static const char *
spread (const double *v, unsigned n, int prec, char *out, size_t len)
{
  double s[MAX_ROUNDS];

  memcpy (s, v, n * sizeof *v);
  qsort (s, n, sizeof *s, cmp_double);
  snprintf (out, len, "%.*f (%.*f..%.*f)",
            prec, n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2,
            prec, s[0], prec, s[n - 1]);
  return out;
}

static uint64_t
parse_u64 (const char *opt, const char *s, uint64_t max)
{
  char *end;
  unsigned long long v;

  errno = 0;
  v = strtoull (s, &end, 10);
  if (errno || end == s || *end || *s == '-' || v == 0 || v > max)
    die ("%s %s: expected an integer from 1 to %" PRIu64, opt, s, max);
  return v;
}

static void
usage (FILE *f)
{
  fprintf (f,
           "Usage: %s [OPTION]... [KEY=VALUE]...\n"
           "Reads through the FTL library next to pread on a plain file\n"
           "holding the same data, in one process (see bench/README.md).\n"
           "  --dir DIR        where the two files go (default: .); not\n"
           "                   tmpfs, whose page cache works differently\n"
           "  --size MIB       disk size in MiB (default 1024)\n"
           "  --threads N      reading threads (default 1)\n"
           "  --rounds N       rounds (default 5)\n"
           "  --time SECS      seconds per run (default 2)\n"
           "  --workload NAME  rand4k or seq1m (default: both)\n"
           "  KEY=VALUE        the plugin's FTL keys, e.g. timeout=0\n",
           prog);
}

int
main (int argc, char *argv[])
{
  static const struct option long_options[] = {
    { "dir", required_argument, NULL, 'd' },
    { "size", required_argument, NULL, 's' },
    { "threads", required_argument, NULL, 't' },
    { "rounds", required_argument, NULL, 'r' },
    { "time", required_argument, NULL, 'T' },
    { "workload", required_argument, NULL, 'w' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *dir = ".", *only = NULL;
  uint64_t size_mib = 1024, nthreads = 1, rounds = 5, secs = 2;
  struct ftl_keys keys;
  char err[256];
  struct ftl *ftl;
  uint8_t *buf;
  int c, r, fd;

  ftl_keys_init (&keys);
  while ((c = getopt_long (argc, argv, "h", long_options, NULL)) != -1) {
    switch (c) {
    case 'd': dir = optarg; break;
    case 's': size_mib = parse_u64 ("--size", optarg, 1 << 20); break;
    case 't': nthreads = parse_u64 ("--threads", optarg, MAX_THREADS); break;
    case 'r': rounds = parse_u64 ("--rounds", optarg, MAX_ROUNDS); break;
    case 'T': secs = parse_u64 ("--time", optarg, 3600); break;
    case 'w':
      only = optarg;
      for (size_t i = 0; strcmp (only, workloads[i].name); )
        if (++i == NWORKLOADS)
          die ("--workload %s: expected rand4k or seq1m", only);
      break;
    case 'h': usage (stdout); return EXIT_SUCCESS;
    default: usage (stderr); return EXIT_FAILURE;
    }
  }
  for (int i = optind; i < argc; i++) {
    char *eq = strchr (argv[i], '=');
    if (!eq)
      die ("%s: expected KEY=VALUE", argv[i]);
    *eq = '\0';
    r = ftl_keys_set (&keys, argv[i], eq + 1, err, sizeof err);
    if (r == 0)
      die ("%s: not a key of the FTL", argv[i]);
    if (r < 0)
      die ("%s", err);
  }
  if (ftl_keys_finish (&keys, err, sizeof err) < 0)
    die ("%s", err);

  snprintf (ftl_path, sizeof ftl_path, "%s/ftl-io.%ld.img", dir,
            (long) getpid ());
  snprintf (file_path, sizeof file_path, "%s/ftl-io.%ld.file", dir,
            (long) getpid ());
  keys.opts.path = ftl_path;
  keys.opts.logical_bytes = size_mib * 1024 * 1024;
  r = ftl_open (&keys.opts, &ftl, err, sizeof err);
  if (r < 0) {
    ftl_path[0] = '\0';         /* not ours to delete */
    die ("%s/ftl-io.%ld.img: %s", dir, (long) getpid (), err);
  }
  fd = open (file_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd == -1) {
    file_path[0] = '\0';
    die ("%s/ftl-io.%ld.file: %s", dir, (long) getpid (), strerror (errno));
  }
  buf = malloc (FILL_SIZE);
  if (!buf)
    die ("malloc: %s", strerror (errno));
  for (uint64_t off = 0; off < keys.opts.logical_bytes; off += FILL_SIZE) {
    fill_chunk (buf, off);
    if ((r = ftl_write (ftl, buf, FILL_SIZE, off, 0)) < 0)
      die ("filling the ftl disk: %s", strerror (-r));
    if (pwrite (fd, buf, FILL_SIZE, off) != FILL_SIZE)
      die ("filling %s: %s", file_path, strerror (errno));
  }
  free (buf);
  if ((r = ftl_flush (ftl)) < 0)
    die ("flush: %s", strerror (-r));
  if (fdatasync (fd) == -1)
    die ("fdatasync: %s", strerror (errno));
  /* As the plugin runs it. */
  if ((r = ftl_start_background (ftl)) < 0 ||
      (r = ftl_start_watchdog (ftl)) < 0)
    die ("starting the background threads: %s", strerror (-r));

  printf ("ftl-io: %" PRIu64 " MiB, %" PRIu64 " thread%s, %" PRIu64
          " rounds of %" PRIu64 " s, order alternating; median "
          "(min..max)\n\n", size_mib, nthreads, nthreads > 1 ? "s" : "",
          rounds, secs);
  printf ("| Workload | ftl ops/s | file ops/s | ftl / file "
          "| ftl CPU ns/op | file CPU ns/op |\n");
  printf ("|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < NWORKLOADS; i++) {
    const struct workload *w = &workloads[i];
    double ops[2][MAX_ROUNDS], cpu[2][MAX_ROUNDS], ratio[MAX_ROUNDS];
    char s[5][96];

    if (only && strcmp (only, w->name))
      continue;
    for (unsigned k = 0; k < rounds; k++) {
      for (unsigned j = 0; j < 2; j++) {
        unsigned side = (k + j) % 2;      /* 0: ftl, 1: file */
        struct run run = {
          .w = w, .ftl = side == 0 ? ftl : NULL, .fd = fd,
          .size = keys.opts.logical_bytes, .nthreads = nthreads,
        };
        run_side (&run, secs, &ops[side][k], &cpu[side][k]);
      }
      ratio[k] = ops[0][k] / ops[1][k];
    }
    printf ("| %s | %s | %s | %s | %s | %s |\n", w->what,
            spread (ops[0], rounds, 0, s[0], sizeof s[0]),
            spread (ops[1], rounds, 0, s[1], sizeof s[1]),
            spread (ratio, rounds, 3, s[2], sizeof s[2]),
            spread (cpu[0], rounds, 0, s[3], sizeof s[3]),
            spread (cpu[1], rounds, 0, s[4], sizeof s[4]));
    fflush (stdout);
  }

  close (fd);
  r = ftl_close (ftl);
  cleanup ();
  if (r < 0) {
    fprintf (stderr, "%s: close: %s\n", prog, strerror (-r));
    return EXIT_FAILURE;
  }
  return EXIT_SUCCESS;
}
