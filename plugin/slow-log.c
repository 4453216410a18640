/* nbdkit-ftl: the slow-request log.  See slow-log.h. */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "ftl.h"
#include "slow-log.h"

#define BATCH 64
#define POLL_NS (200 * UINT64_C (1000000))

static char *path;                      /* slow-log= */
static FILE *fp;                        /* the writer's */
static struct ftl *handle;
static pthread_t thread;
static bool running;
static volatile bool stop;              /* under no lock: a hint, read
                                         * every POLL_NS */
static volatile sig_atomic_t hup;

bool
slowlog_config (const char *key, const char *value, int *r)
{
  if (strcmp (key, "slow-log") != 0)
    return false;
  free (path);
  path = nbdkit_absolute_path (value);
  *r = path ? 0 : -1;
  return true;
}

static FILE *
open_log (void)
{
  int fd = open (path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  FILE *f;

  if (fd == -1)
    return NULL;
  f = fdopen (fd, "a");
  if (f == NULL)
    close (fd);
  return f;
}

int
slowlog_config_complete (void)
{
  FILE *f;

  if (path == NULL)
    return 0;
  f = open_log ();
  if (f == NULL) {
    nbdkit_error ("slow-log: %s: %m", path);
    return -1;
  }
  fclose (f);
  return 0;
}

bool
slowlog_wanted (void)
{
  return path != NULL;
}

void
slowlog_unload (void)
{
  free (path);
  path = NULL;
}

static void
on_hup (int sig)
{
  (void) sig;
  hup = 1;
}

/* After SIGHUP, or when path is no longer the open file: open it
 * again.  If that fails, keep the old one and try at the next round.
 */
static void
maybe_reopen (void)
{
  struct stat a, b;
  FILE *f;

  if (!hup && fstat (fileno (fp), &a) == 0 && stat (path, &b) == 0 &&
      a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    return;
  f = open_log ();
  if (f == NULL) {
    nbdkit_debug ("slow-log: reopening %s: %m", path);
    return;
  }
  hup = 0;
  fclose (fp);
  fp = f;
}

static const char *
stage_or_null (int s, char *buf, size_t n)
{
  if (s < 0)
    return "null";
  snprintf (buf, n, "\"%s\"", ftl_stage_name (s));
  return buf;
}

static void
write_one (const struct ftl_slow_request *q)
{
  char stage[32];

  fprintf (fp, "{\"time\":%" PRIu64 ".%06" PRIu64 ",\"op\":\"%s\","
           "\"offset\":%" PRIu64 ",\"length\":%" PRIu64 ",\"fua\":%s,"
           "\"result\":%d,\"total_us\":%.3f,\"stages_us\":{",
           q->time_ns / 1000000000, q->time_ns % 1000000000 / 1000,
           ftl_op_name (q->op), q->offset, q->count,
           q->flags & FTL_FUA ? "true" : "false", q->result,
           q->total_ns / 1e3);
  for (unsigned s = 0; s < FTL_STAGE__MAX; s++)
    fprintf (fp, "%s\"%s\":%.3f", s ? "," : "", ftl_stage_name (s),
             q->stage_ns[s] / 1e3);
  fprintf (fp, "},\"resets\":%u,\"aborted\":%s,\"waiting_on\":%s}\n",
           q->resets, q->aborted ? "true" : "false",
           stage_or_null (q->waiting_on, stage, sizeof stage));
}

/* Write what the ring holds; wait up to wait_ns for the first. */
static unsigned
drain (uint64_t wait_ns)
{
  struct ftl_slow_request q[BATCH];
  unsigned n = ftl_slow_requests (handle, q, BATCH, wait_ns);

  maybe_reopen ();
  for (unsigned i = 0; i < n; i++)
    write_one (&q[i]);
  if (n > 0 && fflush (fp) == EOF)
    nbdkit_debug ("slow-log: writing %s: %m", path);
  return n;
}

static void *
writer (void *arg)
{
  (void) arg;
  while (!stop)
    drain (POLL_NS);
  return NULL;
}

int
slowlog_start (struct ftl *ftl)
{
  struct sigaction sa = { .sa_handler = on_hup };
  sigset_t all, old;
  int r;

  if (path == NULL || running)
    return 0;
  fp = open_log ();
  if (fp == NULL) {
    nbdkit_error ("slow-log: %s: %m", path);
    return -1;
  }
  handle = ftl;
  sigemptyset (&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction (SIGHUP, &sa, NULL);
  stop = false;
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  r = pthread_create (&thread, NULL, writer, NULL);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  if (r != 0) {
    errno = r;
    nbdkit_error ("slow-log: pthread_create: %m");
    fclose (fp);
    fp = NULL;
    return -1;
  }
#ifdef HAVE_PTHREAD_SETNAME_NP
  pthread_setname_np (thread, "ftl-slow-log");
#endif
  running = true;
  return 0;
}

void
slowlog_stop (void)
{
  if (!running)
    return;
  stop = true;
  pthread_join (thread, NULL);
  running = false;
  while (drain (0) > 0)
    ;
  fclose (fp);
  fp = NULL;
}
