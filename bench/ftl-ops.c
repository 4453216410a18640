/* nbdkit-ftl: ftl-ops, a fixed workload of 4 KiB writes and reads
 * through the FTL library, for counting instructions under callgrind.
 *
 * The same run always does the same calls at the same offsets, so the
 * instructions it executes in the library are a figure that machine
 * noise does not move.  Three measured phases, each announced to
 * callgrind (collection on, then a dump named after the phase); the
 * setup between them is not counted:
 *
 *   create    fresh image (not counted)
 *   write     N 4 KiB writes at random pages of the fresh disk, before
 *             garbage collection starts
 *   read      N 4 KiB reads at random pages written by the write phase
 *   fill      sequential 1 MiB writes over the whole disk, then two
 *             drive writes of random 4 KiB writes (not counted)
 *   steady    N 4 KiB writes at random pages of the full disk, with
 *             garbage collection running in the writing thread (no
 *             background thread)
 *   close     (not counted)
 *
 * bench/callgrind.sh runs it under valgrind and divides each phase's
 * instruction count by N.  Outside valgrind the callgrind requests do
 * nothing, and the program prints each phase's wall time and the
 * process's CPU time per operation, user and system.  With
 * --as-plugin the FTL runs as the plugin runs it, with the plugin's
 * defaults (the write cache) and its background threads, whose CPU time
 * counts too: what the library costs a request through nbdkit, less the
 * NBD path (bench/perf.sh).
 */

#include <config.h>

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#if defined __has_include
# if __has_include (<valgrind/callgrind.h>)
#  include <valgrind/callgrind.h>
#  define HAVE_CALLGRIND 1
# endif
#endif
#ifndef HAVE_CALLGRIND
# define CALLGRIND_TOGGLE_COLLECT do { } while (0)
# define CALLGRIND_DUMP_STATS_AT(name) do { (void) (name); } while (0)
#endif

#include "ftl.h"
#include "keys.h"

#include "bench-util.h"

#define IO_SIZE    4096
#define FILL_SIZE  (1024 * 1024)

static const char *prog = "ftl-ops";
static char path[4096];         /* the image, deleted on every exit */

static void
log_fn (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level != FTL_LOG_DEBUG)
    fprintf (stderr, "%s: ftl: %s\n", prog, msg);
}

static void __attribute__ ((noreturn))
fail (const char *what, int r)
{
  fprintf (stderr, "%s: %s: %s\n", prog, what, strerror (-r));
  unlink (path);
  exit (EXIT_FAILURE);
}

/* The phase to count (NULL: all of them), and the start of the
 * current one: wall clock, and this process's user and system time.
 */
static const char *only;
static double phase_start, user_start, sys_start;

static void
cpu_now (double *user, double *sys)
{
  struct rusage ru;

  getrusage (RUSAGE_SELF, &ru);
  *user = ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6;
  *sys = ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static bool
counted (const char *name)
{
  return only == NULL || strcmp (only, name) == 0;
}

static void
begin_phase (const char *name)
{
  if (counted (name))
    CALLGRIND_TOGGLE_COLLECT;
  cpu_now (&user_start, &sys_start);
  phase_start = bench_clock_s (CLOCK_MONOTONIC);
}

static void
end_phase (const char *name, uint64_t n)
{
  double t = bench_clock_s (CLOCK_MONOTONIC) - phase_start;
  double user, sys;

  cpu_now (&user, &sys);
  user -= user_start;
  sys -= sys_start;
  if (counted (name)) {
    CALLGRIND_TOGGLE_COLLECT;
    CALLGRIND_DUMP_STATS_AT (name);
  }
  /* CPU per op: the library's own code (user) and the kernel's work
   * for it (system: the copies to and from the image's page cache,
   * its syncs).  Wall time above CPU time is waiting, for the host's
   * disk mostly.
   */
  printf ("%-8s %8" PRIu64 " ops %8.3f s %10.0f ops/s"
          "   CPU %.2f µs/op (user %.2f, system %.2f)\n",
          name, n, t, t > 0 ? n / t : 0,
          n ? (user + sys) * 1e6 / n : 0, n ? user * 1e6 / n : 0,
          n ? sys * 1e6 / n : 0);
}

static void
usage (FILE *f)
{
  fprintf (f,
           "Usage: %s [--dir DIR] [--size MIB] [--ops N] [--seed N]\n"
           "          [--phase write|read|steady] [--as-plugin]\n"
           "A fixed workload of 4 KiB writes and reads through the FTL\n"
           "library, in phases that callgrind counts separately.\n"
           "  --dir DIR    where the image is created (default /dev/shm,\n"
           "               else /tmp); it is deleted at the end\n"
           "  --size MIB   disk size in MiB (default 64)\n"
           "  --ops N      writes and reads per phase (default 10000)\n"
           "  --seed N     seed of the offsets (default 1)\n"
           "  --phase P    count only phase P (the others still run)\n"
           "  --as-plugin  the plugin's defaults (its write cache among\n"
           "               them) and its background threads (destager,\n"
           "               GC), instead of no cache and GC in the writer\n",
           prog);
}

static uint64_t
parse_u64 (const char *opt, const char *s)
{
  char *end;
  unsigned long long v;

  errno = 0;
  v = strtoull (s, &end, 10);
  if (errno || end == s || *end || *s == '-' || v == 0) {
    fprintf (stderr, "%s: %s %s: not a positive integer\n", prog, opt, s);
    exit (EXIT_FAILURE);
  }
  return v;
}

int
main (int argc, char *argv[])
{
  static const struct option long_options[] = {
    { "dir", required_argument, NULL, 'd' },
    { "size", required_argument, NULL, 's' },
    { "ops", required_argument, NULL, 'n' },
    { "seed", required_argument, NULL, 'S' },
    { "phase", required_argument, NULL, 'p' },
    { "as-plugin", no_argument, NULL, 'P' },
    { "help", no_argument, NULL, 'h' },
    { NULL, 0, NULL, 0 },
  };
  const char *dir = access ("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  uint64_t size_mib = 64, n = 10000, seed = 1;
  char err[256];
  struct ftl_keys keys;
  struct ftl_options opts = { 0 };
  bool as_plugin = false;
  struct ftl *ftl;
  struct ftl_stats st0, st1;
  uint64_t pages, i, s, off;
  unsigned char *buf;
  int c, r;

  while ((c = getopt_long (argc, argv, "h", long_options, NULL)) != -1) {
    switch (c) {
    case 'd': dir = optarg; break;
    case 's': size_mib = parse_u64 ("--size", optarg); break;
    case 'n': n = parse_u64 ("--ops", optarg); break;
    case 'S': seed = parse_u64 ("--seed", optarg); break;
    case 'p':
      if (strcmp (optarg, "write") && strcmp (optarg, "read")
          && strcmp (optarg, "steady")) {
        fprintf (stderr, "%s: --phase %s: expected write, read or steady\n",
                 prog, optarg);
        return EXIT_FAILURE;
      }
      only = optarg;
      break;
    case 'P': as_plugin = true; break;
    case 'h': usage (stdout); return EXIT_SUCCESS;
    default: usage (stderr); return EXIT_FAILURE;
    }
  }
  if (optind != argc) {
    usage (stderr);
    return EXIT_FAILURE;
  }
  pages = size_mib * 1024 * 1024 / IO_SIZE;
  /* The write phase must not start garbage collection: with the default
   * 28% over-provisioning a fresh disk takes 1.28 drive writes.
   */
  if (n > pages) {
    fprintf (stderr, "%s: --ops %" PRIu64 " is more than the %" PRIu64
             " pages of the disk\n", prog, n, pages);
    return EXIT_FAILURE;
  }

  if (as_plugin) {
    ftl_keys_init (&keys);
    if (ftl_keys_finish (&keys, err, sizeof err) < 0) {
      fprintf (stderr, "%s: %s\n", prog, err);
      return EXIT_FAILURE;
    }
    opts = keys.opts;
  }
  snprintf (path, sizeof path, "%s/ftl-ops.%ld.img", dir, (long) getpid ());
  unlink (path);
  opts.path = path;
  opts.logical_bytes = size_mib * 1024 * 1024;
  opts.log = log_fn;
  r = ftl_open (&opts, &ftl, err, sizeof err);
  if (r < 0) {
    fprintf (stderr, "%s: %s: %s\n", prog, path, err);
    return EXIT_FAILURE;
  }
  if (as_plugin && (r = ftl_start_background (ftl)) < 0) {
    fprintf (stderr, "%s: starting the background threads: %s\n", prog,
             strerror (-r));
    goto fail;
  }
  buf = malloc (FILL_SIZE);
  if (buf == NULL) {
    perror ("malloc");
    goto fail;
  }
  memset (buf, 0xa5, FILL_SIZE);

  /* write: the offsets are seeded, so the read phase can replay them. */
  begin_phase ("write");
  s = seed;
  for (i = 0; i < n; i++) {
    off = bench_random (&s) % pages * IO_SIZE;
    memcpy (buf, &i, sizeof i);
    r = ftl_write (ftl, buf, IO_SIZE, off, 0);
    if (r < 0)
      fail ("write", r);
  }
  end_phase ("write", n);

  /* read: the pages the write phase wrote, in the same order. */
  begin_phase ("read");
  s = seed;
  for (i = 0; i < n; i++) {
    off = bench_random (&s) % pages * IO_SIZE;
    r = ftl_read (ftl, buf, IO_SIZE, off);
    if (r < 0)
      fail ("read", r);
  }
  end_phase ("read", n);

  /* fill: every page written, then two drive writes at random so that
   * free blocks are down to the GC watermark and victims hold valid
   * pages.
   */
  for (off = 0; off < opts.logical_bytes; off += FILL_SIZE) {
    r = ftl_write (ftl, buf, FILL_SIZE, off, 0);
    if (r < 0)
      fail ("fill", r);
  }
  s = seed ^ UINT64_C (0x5bd1e995);
  for (i = 0; i < 2 * pages; i++) {
    r = ftl_write (ftl, buf, IO_SIZE, bench_random (&s) % pages * IO_SIZE, 0);
    if (r < 0)
      fail ("fill", r);
  }

  ftl_get_stats (ftl, &st0);
  begin_phase ("steady");
  for (i = 0; i < n; i++) {
    r = ftl_write (ftl, buf, IO_SIZE, bench_random (&s) % pages * IO_SIZE, 0);
    if (r < 0)
      fail ("steady write", r);
  }
  end_phase ("steady", n);
  ftl_get_stats (ftl, &st1);
  printf ("steady: %" PRIu64 " GC victims, %" PRIu64 " pages copied, "
          "WAF %.3f\n",
          st1.gc_runs - st0.gc_runs, st1.gc_copied_pages - st0.gc_copied_pages,
          (double) (st1.media_program_pages - st0.media_program_pages)
          / (st1.host_write_pages - st0.host_write_pages));

  free (buf);
  r = ftl_close (ftl);
  unlink (path);
  if (r < 0)
    fail ("close", r);
  return EXIT_SUCCESS;

 fail:
  ftl_close (ftl);
  unlink (path);
  return EXIT_FAILURE;
}
