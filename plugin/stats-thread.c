/* nbdkit-ftl: the statistics writer.  See stats-thread.h. */

#include <config.h>

#include <errno.h>
#include <libgen.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <nbdkit-plugin.h>

#include "ftl.h"
#include "metrics.h"
#include "metrics-http.h"
#include "stats-thread.h"

/* One output file and whether its last write failed (the first failure
 * is an error, later ones debug messages, so a full disk does not
 * flood the log).
 */
struct output {
  const char *what;
  char *path;                   /* NULL: not wanted */
  bool failed;
};

/* lock protects everything below and serializes writes of the files.
 * wake_lock protects the thread's orders (stopping, flushed): a flush
 * takes it for a moment, never while the files are written; cond
 * (with wake_lock) wakes the thread early for them.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t wake_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;

static struct ftl *ftl;         /* NULL: no statistics */
static struct output stats_out = { .what = "stats" };
static struct output log_out = { .what = "stats-log" };
static struct output metrics_out = { .what = "metrics" };
static unsigned metrics_port;   /* 0: no endpoint */
static unsigned interval;       /* seconds */
static bool running;            /* the thread exists */
static bool stopping;           /* the thread must exit (wake_lock) */
static bool flushed;            /* a flush since the thread last looked:
                                 * rewrite the files (wake_lock) */
static bool listening;          /* the thread runs (wake_lock) */
static pthread_t thread;

/* Host counters as they were when the stats file was last written. */
struct host_counters {
  uint64_t write_pages, read_pages, trim_pages, flushes;
};
static struct host_counters last;
/* ... and when the last timeline line was written. */
static struct host_counters log_host;

/* The timeline: the previous line's snapshot and time. */
static struct ftl_stat_set log_prev;
static bool log_has_prev;
static bool log_prev_busy;      /* the previous line had host activity */
static struct timespec log_start, log_last;

bool
stats_config (const char *key, const char *value, int *r)
{
  struct output *o;

  *r = 0;
  if (strcmp (key, "stats-log") == 0)
    o = &log_out;
  else if (strcmp (key, "metrics") == 0)
    o = &metrics_out;
  else if (strcmp (key, "metrics-port") == 0) {
    if (nbdkit_parse_unsigned (key, value, &metrics_port) == -1)
      *r = -1;
    else if (metrics_port < 1 || metrics_port > 65535) {
      nbdkit_error ("metrics-port must be from 1 to 65535: %s", value);
      *r = -1;
    }
    return true;
  }
  else
    return false;

  free (o->path);
  o->path = nbdkit_absolute_path (value);
  if (o->path == NULL)
    *r = -1;
  return true;
}

/* Refuse an unusable path now, before the image is opened. */
static int
check_dir (const struct output *o)
{
  char *dir;
  int r;

  if (o->path == NULL)
    return 0;
  dir = strdup (o->path);
  if (dir == NULL) {
    nbdkit_error ("strdup: %m");
    return -1;
  }
  r = access (dirname (dir), W_OK | X_OK);
  free (dir);
  if (r == -1) {
    nbdkit_error ("%s: cannot write a file next to %s: %m", o->what,
                  o->path);
    return -1;
  }
  return 0;
}

int
stats_config_complete (void)
{
  if (check_dir (&log_out) == -1 || check_dir (&metrics_out) == -1)
    return -1;
  return 0;
}

void
stats_unload (void)
{
  free (stats_out.path);
  free (log_out.path);
  free (metrics_out.path);
  ftl_stats_free (&log_prev);
}

static void
report (struct output *o, int r)
{
  if (r < 0) {
    if (!o->failed)
      nbdkit_error ("%s: %s: %s", o->what, o->path, strerror (-r));
    else
      nbdkit_debug ("%s: %s: %s", o->what, o->path, strerror (-r));
    o->failed = true;
  }
  else {
    if (o->failed)
      nbdkit_debug ("%s: %s: written again", o->what, o->path);
    o->failed = false;
  }
}

static void
host_counters (struct host_counters *h)
{
  struct ftl_stats st;

  ftl_get_stats (ftl, &st);
  h->write_pages = st.host_write_pages;
  h->read_pages = st.host_read_pages;
  h->trim_pages = st.host_trim_pages;
  h->flushes = st.host_flushes;
}

static int
write_json (void *set, FILE *fp)
{
  return ftl_render_json (set, false, fp);
}

static int
write_metrics (void *set, FILE *fp)
{
  return ftl_render_prometheus (set, fp);
}

static double
seconds (const struct timespec *a, const struct timespec *b)
{
  return (a->tv_sec - b->tv_sec) + (a->tv_nsec - b->tv_nsec) / 1e9;
}

/* Append a timeline line for the snapshot set, which the timeline
 * keeps (set is left empty).  Call with lock held.
 */
static void
append_log_locked (struct ftl_stat_set *set)
{
  struct timespec now, wall;
  FILE *fp;
  int r = 0;

  clock_gettime (CLOCK_MONOTONIC, &now);
  clock_gettime (CLOCK_REALTIME, &wall);
  if (!log_has_prev)
    log_start = log_last = now;
  fp = fopen (log_out.path, "a");
  if (fp == NULL)
    r = -errno;
  else {
    r = ftl_render_timeline_line (log_has_prev ? &log_prev : NULL, set,
                                  wall.tv_sec + wall.tv_nsec / 1e9,
                                  seconds (&now, &log_start),
                                  seconds (&now, &log_last), fp);
    if (fclose (fp) == EOF && r == 0)
      r = -errno;
  }
  report (&log_out, r);
  ftl_stats_free (&log_prev);
  log_prev = *set;
  memset (set, 0, sizeof *set);
  log_has_prev = true;
  log_last = now;
}

/* Write the outputs from one snapshot: the stats and metrics files, and
 * a timeline line if with_log.  Call with lock held.  Counters are
 * sampled before the snapshot, so a request that lands during the
 * write makes the disk look busy once more, never idle too early.
 */
static void
write_locked (bool with_log)
{
  struct host_counters now;
  struct ftl_stat_set set = { 0 };
  int r;

  host_counters (&now);
  r = ftl_stats_snapshot (ftl, FTL_STATS_SERVER, &set);
  if (r < 0) {
    report (&stats_out, r);
    return;
  }
  if (stats_out.path) {
    r = ftl_write_file_atomic (stats_out.path, write_json, &set);
    report (&stats_out, r);
  }
  if (metrics_out.path)
    report (&metrics_out,
            ftl_write_file_atomic (metrics_out.path, write_metrics, &set));
  if (with_log && log_out.path) {
    append_log_locked (&set);
    log_prev_busy = memcmp (&now, &log_host, sizeof now) != 0;
    log_host = now;
  }
  last = now;
  ftl_stats_free (&set);
}

/* Have the host counters changed since the stats file (or the
 * timeline) was last written?
 */
static bool
busy_locked (const struct host_counters *since)
{
  struct host_counters now;

  host_counters (&now);
  return memcmp (&now, since, sizeof now) != 0;
}

int
stats_init (struct ftl *f, const char *p, unsigned secs)
{
  pthread_condattr_t attr;
  int err;

  if (p == NULL && log_out.path == NULL && metrics_out.path == NULL &&
      metrics_port == 0)
    return 0;

  /* The thread waits on a monotonic clock so that setting the wall
   * clock neither stalls nor hurries it.
   */
  pthread_condattr_init (&attr);
  pthread_condattr_setclock (&attr, CLOCK_MONOTONIC);
  err = pthread_cond_init (&cond, &attr);
  pthread_condattr_destroy (&attr);
  if (err) {
    nbdkit_error ("stats: pthread_cond_init: %s", strerror (err));
    return -1;
  }

  pthread_mutex_lock (&lock);
  ftl = f;
  free (stats_out.path);
  stats_out.path = p ? strdup (p) : NULL;
  interval = secs;
  write_locked (true);
  pthread_mutex_unlock (&lock);
  if ((p && stats_out.failed) || (log_out.path && log_out.failed) ||
      (metrics_out.path && metrics_out.failed)) {
    pthread_mutex_lock (&lock);
    ftl = NULL;
    pthread_mutex_unlock (&lock);
    return -1;
  }
  return 0;
}

/* Every interval: the files if the disk was busy, and a timeline line.
 * In between, woken by flushes (stats_flushed): the stats and metrics
 * files at once, once for all the flushes that came while it wrote.
 */
static void *
stats_thread (void *arg)
{
  struct timespec deadline;

  clock_gettime (CLOCK_MONOTONIC, &deadline);
  deadline.tv_sec += interval;
  pthread_mutex_lock (&wake_lock);
  while (!stopping) {
    bool tick = false, flush;
    while (!stopping && !flushed && !tick)
      tick = pthread_cond_timedwait (&cond, &wake_lock, &deadline)
        == ETIMEDOUT;
    if (stopping)
      break;
    flush = flushed;
    flushed = false;
    pthread_mutex_unlock (&wake_lock);

    pthread_mutex_lock (&lock);
    /* The timeline also gets the first idle interval after a busy
     * one, so that its rates fall back to zero.
     */
    if (tick && (busy_locked (&last) ||
                 (log_out.path && (log_prev_busy ||
                                   busy_locked (&log_host)))))
      write_locked (true);
    else if (flush)
      write_locked (false);
    pthread_mutex_unlock (&lock);
    if (tick) {
      clock_gettime (CLOCK_MONOTONIC, &deadline);
      deadline.tv_sec += interval;
    }
    pthread_mutex_lock (&wake_lock);
  }
  pthread_mutex_unlock (&wake_lock);
  return NULL;
}

int
stats_start (void)
{
  sigset_t all, old;
  int err = 0;

  pthread_mutex_lock (&lock);
  if (ftl != NULL && !running) {
    /* Signals are for nbdkit's own threads. */
    sigfillset (&all);
    pthread_sigmask (SIG_SETMASK, &all, &old);
    pthread_mutex_lock (&wake_lock);
    stopping = false;
    flushed = false;
    pthread_mutex_unlock (&wake_lock);
    err = pthread_create (&thread, NULL, stats_thread, NULL);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    running = err == 0;
#ifdef HAVE_PTHREAD_SETNAME_NP
    if (running)
      pthread_setname_np (thread, "ftl-stats");
#endif
    pthread_mutex_lock (&wake_lock);
    listening = running;
    pthread_mutex_unlock (&wake_lock);
  }
  pthread_mutex_unlock (&lock);

  if (err) {
    nbdkit_error ("stats: pthread_create: %s", strerror (err));
    return -1;
  }
  if (ftl != NULL && metrics_port != 0 &&
      metrics_http_start (ftl, metrics_port) == -1)
    return -1;
  return 0;
}

void
stats_flushed (void)
{
  pthread_mutex_lock (&wake_lock);
  if (listening) {
    flushed = true;
    pthread_cond_signal (&cond);
  }
  pthread_mutex_unlock (&wake_lock);
}

void
stats_stop (void)
{
  bool join;

  metrics_http_stop ();

  pthread_mutex_lock (&lock);
  join = running;
  pthread_mutex_unlock (&lock);
  if (join) {
    pthread_mutex_lock (&wake_lock);
    stopping = true;
    listening = false;
    pthread_cond_signal (&cond);
    pthread_mutex_unlock (&wake_lock);
  }

  if (join)
    pthread_join (thread, NULL);

  pthread_mutex_lock (&lock);
  running = false;
  if (ftl != NULL)
    write_locked (true);
  ftl = NULL;
  pthread_mutex_unlock (&lock);
}
