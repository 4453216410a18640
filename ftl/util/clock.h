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

/* CLOCK_MONOTONIC in ns, and an absolute sleep until such a time (it
 * aims early by the measured average oversleep of the system's sleeps,
 * so that modeled waits end on time on average).
 */
extern uint64_t clock_now (void);
extern void clock_sleep_until (uint64_t t);
/* How early clock_sleep_until aims: a wait for t is over once
 * now + clock_early () >= t.
 */
extern uint64_t clock_early (void);

#endif /* FTL_UTIL_CLOCK_H */
