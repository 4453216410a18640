/* nbdkit-ftl: the clock, and sleeping until a time.  See clock.h. */

#include <config.h>

#include <errno.h>
#include <pthread.h>
#include <sched.h>
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
 * add to every modeled wait; and a timer, its interrupt and the two
 * context switches of a sleep cost CPU time, about as much as the NBD
 * path's own work for a request on a virtual machine.  So:
 *
 *   - with few threads asleep (at most SLEEPERS_PRECISE) a thread asks
 *     for a timer slack of 1 us: latency is what a client at a low
 *     queue depth sees; with more, for the default 50 us: wake-ups are
 *     coalesced (prctl only when a thread changes mode);
 *   - each mode keeps a moving average of its oversleep (1/8 of each
 *     new sample), and a sleep aims early by half of it, at most
 *     EARLY_MAX_NS;
 *   - a modeled wait (clock_wait_model) never ends before its time.
 *     One that is the only one (a client at queue depth 1, whose
 *     latency is the figure) sleeps until its oversleep before its end
 *     and spins the rest, at most CLOCK_SPIN_MAX_NS: it ends on time,
 *     for CPU time that a lone request leaves idle anyway.  A crowd of
 *     them (a deep queue, whose throughput is the figure) sleeps until
 *     CLOCK_YIELD_NS before each end and yields the CPU from there: the
 *     waiting threads stay runnable and take turns with the client and
 *     the requests being served, with no timer and no wake-up each.
 *     Short modeled operations (a read, the host link) never sleep.
 */
#define SLEEPERS_PRECISE 4
#define OVERSLEEP_MAX_NS 200000
#define EARLY_MAX_NS 20000
static uint64_t oversleep_ns[2];        /* atomic; per mode */
static unsigned sleepers;               /* atomic */
static unsigned model_waiters;          /* atomic: in clock_wait_model */
static FTL_TLS int slack_mode = -1;    /* this thread's: 0 precise */
static FTL_TLS uint64_t spun_ns;        /* this thread's, clock_spun_ns */

/* A crowd's yields (clock_wait_model).  A yield gives the CPU to
 * whatever else may run there, for as long as the scheduler lets it: a
 * CPU-bound thread of another program (a guest's CPU, a compiler) may
 * keep it for a whole time slice, milliseconds, where a sleeper's
 * wake-up would have taken the CPU back from it.  The threads of a
 * machine that serves requests (the requests' own, the client's) give
 * it back sooner: with 32 requests in flight on a 2-core virtual
 * machine, 0.5% of the yields came back after more than 2 ms; with two
 * threads that only compute beside a crowd of eight, most did.
 * long_yields is the share of the yields that came back after more
 * than LONG_YIELD_NS (a moving average over about 256 yields, in
 * 1/65536ths); while it is above 1/8, a crowd sleeps instead, and one
 * wait every PROBE_NS yields to learn when yields come back quickly
 * again.
 */
#define LONG_YIELD_NS 2000000
#define LONG_YIELDS_MAX (65536 / 8)
#define PROBE_NS 20000000
static unsigned long_yields;            /* atomic */
static uint64_t probe_at;               /* atomic: the last probe */

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
 * mean lateness of the lone waits' own sleeps, lone_late_ns, plus a
 * margin for a late wake-up), at most CLOCK_SPIN_MAX_NS.  Their own:
 * the other sleeps of the process (the background thread's, the
 * watchdog's) are long, on other threads, and wake from other idle
 * states; an average polluted by them made the lead, and so the
 * latency at queue depth 1, differ from one server start to the next.
 */
#define SPIN_MARGIN_NS 10000
static uint64_t lone_late_ns;           /* atomic */

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
  uint64_t now = clock_now ();
  bool crowd = n > 1, yield = false;

  if (!crowd) {
    uint64_t avg = __atomic_load_n (&lone_late_ns, __ATOMIC_RELAXED);
    uint64_t lead = MIN (avg + SPIN_MARGIN_NS, CLOCK_SPIN_MAX_NS);
    if (t > now + lead) {
      /* How late this sleep wakes, for the next lone wait's lead. */
      uint64_t aim = t - lead;
      clock_sleep_until (aim);
      now = clock_now ();
      uint64_t late = MIN (now > aim ? now - aim : 0, OVERSLEEP_MAX_NS);
      __atomic_store_n (&lone_late_ns, (avg * 7 + late) / 8,
                        __ATOMIC_RELAXED);
    }
  }
  else {
    yield = __atomic_load_n (&long_yields, __ATOMIC_RELAXED)
      <= LONG_YIELDS_MAX;
    if (!yield) {
      uint64_t p = __atomic_load_n (&probe_at, __ATOMIC_RELAXED);
      yield = now >= p + PROBE_NS &&
        __atomic_compare_exchange_n (&probe_at, &p, now, false,
                                     __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    }
    uint64_t lead = yield ? CLOCK_YIELD_NS : 0;
    if (t > now + lead) {
      clock_sleep_until (t - lead);
      now = clock_now ();
    }
  }
  /* The rest: spin while alone (also after a crowd's sleep, which may
   * aim a little early); a yielding crowd yields the CPU while others
   * wait too (the other requests, the client and the handle's threads
   * run meanwhile, and this thread stays runnable: no timer, no
   * wake-up).
   */
  uint64_t spin0 = now;
  now = clock_now ();
  while (now < t) {
    if (yield && __atomic_load_n (&model_waiters, __ATOMIC_RELAXED) > 1) {
      sched_yield ();
      /* One clock read per pass; the shared average is written only
       * when it changes (not while every yield comes back quickly).
       */
      uint64_t back = clock_now ();
      unsigned avg = __atomic_load_n (&long_yields, __ATOMIC_RELAXED);
      unsigned nv = avg - avg / 256
        + (back - now > LONG_YIELD_NS ? 65536 / 256 : 0);
      if (nv != avg)
        __atomic_store_n (&long_yields, nv, __ATOMIC_RELAXED);
      now = back;
    }
    else {
      cpu_relax ();
      now = clock_now ();
    }
  }
  spun_ns += MAX (spin0, t) - spin0;
  __atomic_sub_fetch (&model_waiters, 1, __ATOMIC_RELAXED);
}

uint64_t
clock_spun_ns (void)
{
  return spun_ns;
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
