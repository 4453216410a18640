/* nbdkit-ftl: fault injection, for tests.
 *
 * Owns the faults that tests inject into the media layer: a stall
 * (every media operation waits before it touches the file, as if the
 * device stopped answering), a delay added to every media operation,
 * and a delay added after a request's work is done, before its reply
 * (to make the deadline timer race with a completion).
 *
 * The faults are read from a control file whose path is given at open
 * (ftl_options.fault_file, the plugin's debug-faults= key).  Each line
 * of the file is one of:
 *
 *   stall                  media operations wait while this line is there
 *   delay DURATION         every media operation takes DURATION longer
 *   reply-delay DURATION   every request waits DURATION before replying
 *
 * A missing or empty file means no fault.  The file is looked at (one
 * stat) when a media operation starts and re-read only when it changed,
 * so faults can be switched on and off while the disk is in use.
 * Without a control file the cost is one test of a pointer.
 *
 * Concurrency: the parsed faults are atomics; re-reading the file takes
 * a mutex with trylock, so at most one thread parses it at a time and
 * nobody waits for that.
 */

#ifndef FTL_FAULT_H
#define FTL_FAULT_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include <sys/types.h>

struct fault {
  char *path;                   /* NULL: no fault injection */
  pthread_mutex_t lock;         /* who re-reads the file */
  /* What the file looked like when last read (under lock). */
  bool seen;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  /* The faults (atomic). */
  bool stall;
  uint64_t delay_ns;
  uint64_t reply_delay_ns;
};

/* path may be NULL.  Returns 0 or -ENOMEM. */
extern int fault_init (struct fault *f, const char *path);
extern void fault_free (struct fault *f);

/* Re-read the control file if it changed. */
extern void fault_refresh (struct fault *f);

static inline bool
fault_enabled (const struct fault *f)
{
  return f->path != NULL;
}

static inline bool
fault_stalled (const struct fault *f)
{
  return __atomic_load_n (&f->stall, __ATOMIC_ACQUIRE);
}

static inline uint64_t
fault_delay (const struct fault *f)
{
  return __atomic_load_n (&f->delay_ns, __ATOMIC_RELAXED);
}

static inline uint64_t
fault_reply_delay (const struct fault *f)
{
  return __atomic_load_n (&f->reply_delay_ns, __ATOMIC_RELAXED);
}

#endif /* FTL_FAULT_H */
