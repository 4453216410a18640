/* nbdkit-ftl: the clock every layer reads, and sleeping until a time.
 *
 * Owns the oversleep averages of the process's sleeps (global,
 * atomics; no lock): every module that waits for a time, the timing
 * model's modeled waits, the watchdog and the background thread, sleeps
 * through clock_sleep_until.
 */

#ifndef FTL_UTIL_CLOCK_H
#define FTL_UTIL_CLOCK_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns.  Inline: every request reads it at its start
 * and its end, and the stages of a slow one (deadline.h) a few times
 * more.
 */
static inline uint64_t
clock_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* An absolute sleep until a time of clock_now (it aims early by the
 * measured average oversleep of the system's sleeps, so that modeled
 * waits end on time on average).
 */
extern void clock_sleep_until (uint64_t t);
/* How early clock_sleep_until aims: a wait for t is over once
 * now + clock_early () >= t.
 */
extern uint64_t clock_early (void);

#endif /* FTL_UTIL_CLOCK_H */
