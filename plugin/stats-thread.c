/* nbdkit-ftl: the statistics file writer.  See stats-thread.h. */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <nbdkit-plugin.h>

#include "ftl.h"
#include "stats-thread.h"

/* lock protects everything below and serializes writes of the file;
 * cond wakes the thread early when it must stop.
 */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond;

static struct ftl *ftl;         /* NULL: no statistics file */
static const char *path;
static unsigned interval;       /* seconds */
static bool running;            /* the thread exists */
static bool stopping;           /* the thread must exit */
static pthread_t thread;
static bool failed;             /* a write failed and was reported */

/* Host counters as they were when the file was last written. */
struct host_counters {
  uint64_t write_pages, read_pages, trim_pages, flushes;
};
static struct host_counters last;

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

/* Write the file.  Call with lock held.  Counters are sampled before
 * the write, so a request that lands during the write makes the disk
 * look busy once more, never idle too early.
 */
static int
write_locked (void)
{
  struct host_counters now;
  int r;

  host_counters (&now);
  r = ftl_write_stats_json (ftl, path);
  if (r < 0) {
    /* Report the first failure loudly, then only in debug output, so a
     * full disk does not flood the log on every flush.
     */
    if (!failed)
      nbdkit_error ("stats: %s: %s", path, strerror (-r));
    else
      nbdkit_debug ("stats: %s: %s", path, strerror (-r));
    failed = true;
    return -1;
  }
  if (failed)
    nbdkit_debug ("stats: %s: written again", path);
  failed = false;
  last = now;
  return 0;
}

static bool
busy_locked (void)
{
  struct host_counters now;

  host_counters (&now);
  return memcmp (&now, &last, sizeof now) != 0;
}

int
stats_init (struct ftl *f, const char *p, unsigned secs)
{
  pthread_condattr_t attr;
  int err, r;

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
  path = p;
  interval = secs;
  r = write_locked ();
  if (r == -1)
    ftl = NULL;
  pthread_mutex_unlock (&lock);
  return r;
}

static void *
stats_thread (void *arg)
{
  struct timespec deadline;

  pthread_mutex_lock (&lock);
  while (!stopping) {
    clock_gettime (CLOCK_MONOTONIC, &deadline);
    deadline.tv_sec += interval;
    while (!stopping &&
           pthread_cond_timedwait (&cond, &lock, &deadline) != ETIMEDOUT)
      ;
    if (!stopping && busy_locked ())
      write_locked ();
  }
  pthread_mutex_unlock (&lock);
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
    stopping = false;
    err = pthread_create (&thread, NULL, stats_thread, NULL);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    running = err == 0;
  }
  pthread_mutex_unlock (&lock);

  if (err) {
    nbdkit_error ("stats: pthread_create: %s", strerror (err));
    return -1;
  }
  return 0;
}

void
stats_write (void)
{
  pthread_mutex_lock (&lock);
  if (ftl != NULL)
    write_locked ();
  pthread_mutex_unlock (&lock);
}

void
stats_stop (void)
{
  bool join;

  pthread_mutex_lock (&lock);
  join = running;
  if (running) {
    stopping = true;
    pthread_cond_signal (&cond);
  }
  pthread_mutex_unlock (&lock);

  if (join)
    pthread_join (thread, NULL);

  pthread_mutex_lock (&lock);
  running = false;
  if (ftl != NULL)
    write_locked ();
  ftl = NULL;
  pthread_mutex_unlock (&lock);
}
