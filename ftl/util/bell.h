/* nbdkit-ftl: a doorbell: how any layer wakes the background thread
 * without calling it.
 *
 * The handle owns one bell (struct ftl, field bell).  Writers ring it
 * when the free pool runs low, requests when a checkpoint is due, the
 * error model when a block needs reclaiming; the background thread
 * (host/bg.c), which answers it, sits above all of them.  A ring
 * counts under lock and signals, so a ring between the thread's step
 * and its wait is never missed.  listening says whether anybody
 * answers (a thread, or a caller stepping by hand); a ring with nobody
 * listening is only counted.
 */

#ifndef FTL_UTIL_BELL_H
#define FTL_UTIL_BELL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

struct ftl_bell {
  pthread_mutex_t lock;
  pthread_cond_t cond;          /* signalled by a ring (and a stop) */
  uint64_t rings;               /* rings so far (under lock) */
  bool stop;                    /* atomic; changed under lock: the
                                 * listener is asked to quit */
  bool listening;               /* atomic: somebody answers */
};

extern void ftl_bell_init (struct ftl_bell *b);
extern void ftl_bell_destroy (struct ftl_bell *b);
extern void ftl_bell_ring (struct ftl_bell *b);

static inline bool
ftl_bell_listening (struct ftl_bell *b)
{
  return __atomic_load_n (&b->listening, __ATOMIC_ACQUIRE);
}

#endif /* FTL_UTIL_BELL_H */
