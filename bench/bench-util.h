/* nbdkit-ftl: helpers shared by the in-process benchmarks (ftl-io,
 * ftl-ops, ftl-latency).  Header only: each program is one file.
 */

#ifndef FTL_BENCH_UTIL_H
#define FTL_BENCH_UTIL_H

#include <stdint.h>
#include <time.h>

/* The clock ID in seconds: CLOCK_MONOTONIC for elapsed time,
 * CLOCK_PROCESS_CPUTIME_ID for CPU time.
 */
static inline double
bench_clock_s (clockid_t id)
{
  struct timespec ts;

  clock_gettime (id, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* xorshift64*: the same sequence from the same seed (not 0); quality
 * does not matter here, repeatability does.
 */
static inline uint64_t
bench_random (uint64_t *s)
{
  uint64_t x = *s;

  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *s = x;
  return x * UINT64_C (0x2545f4914f6cdd1d);
}

#endif /* FTL_BENCH_UTIL_H */
