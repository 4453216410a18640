/* nbdkit-ftl: the clock, and sleeping until a time.  See clock.h. */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "util/clock.h"
#include "util/util.h"

/* Waking from clock_nanosleep takes time (tens of microseconds on a
 * loaded virtual machine, even with a timer slack of 1 us), which would
 * add to every modeled wait; and a precise timer costs CPU time for
 * every sleep (the kernel cannot coalesce the wake-ups).  So:
 *
 *   - with few threads asleep in the model (at most SLEEPERS_PRECISE)
 *     a thread asks for a timer slack of 1 us: latency is what a
 *     client at a low queue depth sees; with more, for the default
 *     50 us: wake-ups are coalesced, and throughput is what a deep
 *     queue sees (prctl only when a thread changes mode);
 *   - each mode keeps a moving average of its oversleep (1/8 of each
 *     new sample), and a sleep aims early by half of it, at most
 *     EARLY_MAX_NS: waits still end a little late on average, and much
 *     closer to their time; a burst of load elsewhere, which makes the
 *     average jump, cannot make them end much early;
 *   - a modeled wait that is the only one (clock_wait_model: a client
 *     at queue depth 1, whose latency is the figure) sleeps until its
 *     oversleep before its end and spins the rest, at most
 *     CLOCK_SPIN_MAX_NS: it ends on time, for CPU time that a lone
 *     request leaves idle anyway.
 */
#define SLEEPERS_PRECISE 4
#define OVERSLEEP_MAX_NS 200000
#define EARLY_MAX_NS 20000
static uint64_t oversleep_ns[2];        /* atomic; per mode */
static unsigned sleepers;               /* atomic */
static unsigned model_waiters;          /* atomic: in clock_wait_model */
static FTL_TLS int slack_mode = -1;    /* this thread's: 0 precise */

void
clock_sleep_until (uint64_t t)
{
  uint64_t now = clock_now ();
  unsigned n = __atomic_add_fetch (&sleepers, 1, __ATOMIC_RELAXED);
  int mode = n > SLEEPERS_PRECISE;
  uint64_t avg = __atomic_load_n (&oversleep_ns[mode], __ATOMIC_RELAXED);
  uint64_t early = MIN (avg / 2, EARLY_MAX_NS);
  uint64_t aim = t > early ? t - early : t;
  struct timespec ts = {
    .tv_sec = aim / 1000000000,
    .tv_nsec = aim % 1000000000,
  };

#ifdef PR_SET_TIMERSLACK
  if (slack_mode != mode) {
    prctl (PR_SET_TIMERSLACK, mode ? 50000UL : 1000UL, 0, 0, 0);
    slack_mode = mode;
  }
#endif
  if (aim > now) {
    while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)
           == EINTR)
      ;
    /* Learn from sleeps long enough to be a fair sample. */
    uint64_t woke = clock_now ();
    if (aim - now >= 20000) {
      uint64_t over = MIN (woke > aim ? woke - aim : 0, OVERSLEEP_MAX_NS);
      __atomic_store_n (&oversleep_ns[mode], (avg * 7 + over) / 8,
                        __ATOMIC_RELAXED);
    }
  }
  __atomic_sub_fetch (&sleepers, 1, __ATOMIC_RELAXED);
}

/* The lone modeled wait's spin: its sleep ends this far before t (the
 * mean oversleep, plus a margin for a late wake-up). */
#define SPIN_MARGIN_NS 10000

static inline void
cpu_relax (void)
{
#if defined __x86_64__ || defined __i386__
  __builtin_ia32_pause ();
#endif
}

void
clock_wait_model (uint64_t t)
{
  unsigned n = __atomic_add_fetch (&model_waiters, 1, __ATOMIC_RELAXED);

  if (n == 1) {
    uint64_t avg = __atomic_load_n (&oversleep_ns[0], __ATOMIC_RELAXED);
    uint64_t lead = MIN (avg + SPIN_MARGIN_NS, CLOCK_SPIN_MAX_NS);
    uint64_t now = clock_now ();

    if (t > now + lead)
      clock_sleep_until (t - lead);
    /* Spin while alone: a second waiter makes this one sleep again. */
    while ((now = clock_now ()) < t &&
           __atomic_load_n (&model_waiters, __ATOMIC_RELAXED) == 1)
      cpu_relax ();
    if (now < t)
      clock_sleep_until (t);
  }
  else
    clock_sleep_until (t);
  __atomic_sub_fetch (&model_waiters, 1, __ATOMIC_RELAXED);
}

uint64_t
clock_early (void)
{
  if (__atomic_load_n (&model_waiters, __ATOMIC_RELAXED) == 0)
    return 0;
  int mode = __atomic_load_n (&sleepers, __ATOMIC_RELAXED)
    >= SLEEPERS_PRECISE;
  return MIN (__atomic_load_n (&oversleep_ns[mode], __ATOMIC_RELAXED) / 2,
              EARLY_MAX_NS);
}

/* The tick counter (clock.h): ns per tick << 32, and whether it is the
 * TSC.  Until clock_ticks_init the ticks are clock_now's ns.
 */
uint64_t clock_tick_mult = 1ull << 32;
bool clock_tick_tsc;
static pthread_once_t ticks_once = PTHREAD_ONCE_INIT;

/* Is CLOCK_MONOTONIC kept with the TSC?  Then the kernel trusts it:
 * constant rate, synchronized across CPUs.
 */
static bool
kernel_uses_tsc (void)
{
  char name[32] = "";
  FILE *fp = fopen ("/sys/devices/system/clocksource/clocksource0/"
                    "current_clocksource", "re");

  if (fp == NULL)
    return false;
  if (fgets (name, sizeof name, fp) == NULL)
    name[0] = 0;
  fclose (fp);
  return strcmp (name, "tsc\n") == 0;
}

static void
ticks_calibrate (void)
{
#if defined __x86_64__ || defined __i386__
  if (!kernel_uses_tsc ())
    return;
  /* The rate over 2 ms, measured with clock_now on both sides: within
   * 1e-5 or so, which a span of a few microseconds cannot tell.
   */
  uint64_t n0 = clock_now (), c0 = __builtin_ia32_rdtsc ();
  struct timespec ts = { .tv_sec = 0, .tv_nsec = 2000000 };
  while (nanosleep (&ts, &ts) == -1 && errno == EINTR)
    ;
  uint64_t n1 = clock_now (), c1 = __builtin_ia32_rdtsc ();
  if (c1 <= c0 || n1 <= n0)
    return;
  clock_tick_mult = (uint64_t) (((unsigned __int128) (n1 - n0) << 32)
                                / (c1 - c0));
  __atomic_store_n (&clock_tick_tsc, true, __ATOMIC_RELEASE);
#endif
}

void
clock_ticks_init (void)
{
  pthread_once (&ticks_once, ticks_calibrate);
}
