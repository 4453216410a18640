/* nbdkit-ftl: the clock every layer reads, and sleeping until a time.
 *
 * Owns the oversleep averages of the process's sleeps, the lone modeled
 * waits' lateness and the share of long yields (global, atomics; no
 * lock): every module that waits for a time (the timing model's
 * modeled waits, the watchdog, the background thread) sleeps through
 * clock_sleep_until or clock_wait_model.
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
/* A modeled wait (the timing model's, media.c) until t: it never ends
 * before t.  Alone (a client at queue depth 1) a thread sleeps until
 * shortly before t (the measured lateness of such sleeps, at most
 * CLOCK_SPIN_MAX_NS) and spins the rest, so that it ends at t and not a
 * wake-up late.
 * While other threads are in modeled waits too (a deep queue), it
 * sleeps until CLOCK_YIELD_NS before t and yields the CPU from then on
 * until t: a kernel timer and a wake-up per request cost more CPU time
 * than the modeled wait of a short operation, and the yields give the
 * CPU to whatever else can run (the other requests, the client).  A
 * yield to a CPU-bound thread can cost a whole time slice: while more
 * than 1 yield in 8 comes back after over 2 ms, a crowd sleeps
 * instead, and tries a yield now and then.
 */
#define CLOCK_SPIN_MAX_NS 200000
#define CLOCK_YIELD_NS 150000
extern void clock_wait_model (uint64_t t);
/* The time this thread spent in the spins and yields of its modeled
 * waits before their ends (ns, since it started).
 */
extern uint64_t clock_spun_ns (void);

#endif /* FTL_UTIL_CLOCK_H */
