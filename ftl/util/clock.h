/* nbdkit-ftl: the clock every layer reads, and sleeping until a time.
 *
 * Owns the oversleep averages of the process's sleeps (global,
 * atomics; no lock): every module that waits for a time, the timing
 * model's modeled waits, the watchdog and the background thread, sleeps
 * through clock_sleep_until.
 */

#ifndef FTL_UTIL_CLOCK_H
#define FTL_UTIL_CLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in ns.  Inline: the stages of a slow request
 * (deadline.h) and every modeled wait read it.
 */
static inline uint64_t
clock_now (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* A cheaper clock for short spans on the request path (the backing
 * file's own reads and writes, timed as the media stage of every
 * request: deadline.h).  Where the kernel keeps CLOCK_MONOTONIC with
 * the CPU's time stamp counter (clocksource "tsc": constant rate,
 * synchronized across CPUs), it is that counter, read with one
 * instruction instead of clock_gettime; elsewhere it is clock_now.
 * clock_ticks_ns converts a span of ticks to ns (clock_ticks_init
 * first: it measures the counter's rate once per process, in 2 ms).
 */
extern uint64_t clock_tick_mult;        /* ns per tick << 32 */
extern bool clock_tick_tsc;             /* the counter is the TSC */

static inline uint64_t
clock_ticks (void)
{
#if defined __x86_64__ || defined __i386__
  if (__builtin_expect (clock_tick_tsc, 1))
    return __builtin_ia32_rdtsc ();
#endif
  return clock_now ();
}

static inline uint64_t
clock_ticks_ns (uint64_t ticks)
{
  return (uint64_t) (((unsigned __int128) ticks * clock_tick_mult) >> 32);
}

extern void clock_ticks_init (void);

/* An absolute sleep until a time of clock_now (it aims early by the
 * measured average oversleep of the system's sleeps, so that modeled
 * waits end on time on average).
 */
extern void clock_sleep_until (uint64_t t);
/* A modeled wait (the timing model's, media.c) until t, in pieces of
 * at most 1 ms.  As clock_sleep_until, except for a thread that is the
 * only one in a modeled wait (a client at queue depth 1): it sleeps
 * until shortly before t (by its measured oversleep, at most
 * CLOCK_SPIN_MAX_NS) and spins the rest, so that it ends at t and not a
 * wake-up late.  With more waiters nobody spins: they would take the
 * CPU from each other and from the client.
 */
#define CLOCK_SPIN_MAX_NS 50000
extern void clock_wait_model (uint64_t t);
/* How early clock_wait_model may end: a modeled wait for t is over once
 * now + clock_early () >= t (0 while no other thread is in one: the
 * next wait spins to its end).
 */
extern uint64_t clock_early (void);

#endif /* FTL_UTIL_CLOCK_H */
