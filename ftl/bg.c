/* nbdkit-ftl: the background thread: checkpoints, erases of drained
 * blocks, and garbage collection ahead of need.
 *
 * It sleeps until a writer finds the free pool at or below
 * gc.drain_target or a checkpoint due (bg_kick, bg_wake), or 100 ms
 * pass; then, in this order:
 *
 *   1. writes the checkpoint if one is due (ckpt_maybe);
 *   2. erases drained blocks (nothing to copy) up to gc.drain_target
 *      free blocks (drain); when those left wait for a barrier, runs it
 *      here, outside gc.lock, while writers go on with the free blocks:
 *      a large sequential overwrite then seldom waits for a sync;
 *   3. while the pool is at or below gc.high, reclaims one victim at a
 *      time (watermark mode), or one slice at a time, yielding between
 *      slices while a request's deadline is near (deadline mode),
 *      holding ckpt_rw shared only for that victim (or slice).
 *
 * Invariants: the thread holds no lock while it sleeps; bg.stop changes
 * under bg.lock, so a stop is never missed between the test and the
 * wait; the thread blocks every signal (they belong to the caller's
 * threads).
 */

#include <config.h>

#include <errno.h>
#include <signal.h>
#include <time.h>

#include "ftl-internal.h"

#define BG_YIELD_NS (500 * UINT64_C (1000))  /* one wait for a request */

void
bg_init (struct ftl *ftl)
{
  pthread_mutex_init (&ftl->bg.lock, NULL);
  pthread_cond_init (&ftl->bg.cond, NULL);
}

void
bg_free (struct ftl *ftl)
{
  pthread_mutex_destroy (&ftl->bg.lock);
  pthread_cond_destroy (&ftl->bg.cond);
}

static bool
stopping (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->bg.stop, __ATOMIC_ACQUIRE);
}

void
bg_wake (struct ftl *ftl)
{
  pthread_mutex_lock (&ftl->bg.lock);
  pthread_cond_signal (&ftl->bg.cond);
  pthread_mutex_unlock (&ftl->bg.lock);
}

void
bg_kick (struct ftl *ftl)
{
  if (bg_running (ftl) && alloc_nfree (ftl) <= ftl->gc.drain_target)
    bg_wake (ftl);
}

/* Erase drained blocks until more than gc.drain_target are free, a few
 * at a time under gc.lock; run the barrier they wait for outside it.
 * Returns 1 if it erased or synced anything, 0 if not, or a negative
 * errno.  Caller holds ckpt_rw shared.
 */
static int
drain (struct ftl *ftl)
{
  int did = 0;

  while (alloc_nfree (ftl) <= ftl->gc.drain_target && !stopping (ftl)) {
    bool waiting;
    int r = gc_erase_drained (ftl, 8, ftl->gc.drain_target, &waiting);
    if (r < 0)
      return r;
    if (r > 0)
      did = 1;
    if (!waiting) {
      if (r == 0)
        break;                  /* nothing drained */
      continue;
    }
    /* Drained blocks wait for a barrier: one serves them all. */
    r = gc_barrier (ftl);
    if (r < 0)
      return r;
    did = 1;
  }
  return did;
}

/* Deadline mode: before the next slice, wait while a request's deadline
 * is near and the free pool is above the low watermark; at most one
 * timeout in a row, so that a request that is stuck elsewhere does not
 * stop GC for good.
 */
static void
yield (struct ftl *ftl)
{
  uint64_t start = timing_now ();

  while (!stopping (ftl) && gc_deadline_near (ftl) &&
         alloc_nfree (ftl) > ftl->gc.low &&
         timing_now () - start < ftl->dl.timeout_ns) {
    __atomic_fetch_add (&ftl->gc.yields, 1, __ATOMIC_RELAXED);
    timing_sleep_until (timing_now () + BG_YIELD_NS);
  }
}

/* Wait on bg.cond (bg.lock held) for at most ms milliseconds. */
static void
sleep_ms (struct ftl *ftl, unsigned ms)
{
  struct timespec ts;

  clock_gettime (CLOCK_REALTIME, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (long) (ms % 1000) * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  pthread_cond_timedwait (&ftl->bg.cond, &ftl->bg.lock, &ts);
}

/* One round of work (steps 2 and 3 above), without bg.lock.  Returns
 * 0, or a negative errno (-ENOSPC: nothing to reclaim).
 */
static int
collect (struct ftl *ftl, bool drain_first, bool *drained_idle)
{
  int r;

  if (drain_first) {
    pthread_rwlock_rdlock (&ftl->ckpt_rw);
    r = drain (ftl);
    pthread_rwlock_unlock (&ftl->ckpt_rw);
    *drained_idle = r == 0;
    if (r < 0)
      return r;
    if (alloc_nfree (ftl) > ftl->gc.high)
      return 0;
  }
  if (ftl->gc.mode == FTL_GC_DEADLINE) {
    yield (ftl);
    pthread_rwlock_rdlock (&ftl->ckpt_rw);
    r = gc_slice (ftl);
    pthread_rwlock_unlock (&ftl->ckpt_rw);
    return r < 0 ? r : 0;
  }
  pthread_rwlock_rdlock (&ftl->ckpt_rw);
  r = gc_reclaim (ftl, ftl->gc.high, true);
  pthread_rwlock_unlock (&ftl->ckpt_rw);
  return r;
}

static void *
background (void *arg)
{
  struct ftl *ftl = arg;
  bool drained_idle = false;    /* the last drain found nothing to do */

  pthread_mutex_lock (&ftl->bg.lock);
  while (!ftl->bg.stop) {
    bool drain_first = alloc_nfree (ftl) <= ftl->gc.drain_target &&
      !drained_idle;
    bool idle =
      (alloc_nfree (ftl) > ftl->gc.high && !drain_first &&
       !(ftl->gc.mode == FTL_GC_DEADLINE && gc_in_progress (ftl))) ||
      wl_worn_out (ftl);
    if (idle && !ckpt_due (ftl)) {
      drained_idle = false;     /* kicked, or 100 ms: look again */
      sleep_ms (ftl, 100);
      continue;
    }
    pthread_mutex_unlock (&ftl->bg.lock);

    ckpt_maybe (ftl);
    int r = idle ? 0 : collect (ftl, drain_first, &drained_idle);

    pthread_mutex_lock (&ftl->bg.lock);
    if (r < 0 && !ftl->bg.stop)
      /* Nothing to reclaim now (or an error, already logged): wait for
       * the next kick rather than spin.
       */
      sleep_ms (ftl, 1000);
  }
  pthread_mutex_unlock (&ftl->bg.lock);
  return NULL;
}

int
ftl_start_background (struct ftl *ftl)
{
  int r;

  if (ftl->readonly || bg_running (ftl))
    return 0;
  r = destage_start (ftl);
  if (r < 0)
    return r;
  __atomic_store_n (&ftl->bg.stop, false, __ATOMIC_RELEASE);
  /* Signals belong to the caller's threads, not to this one. */
  sigset_t all, old;
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  r = pthread_create (&ftl->bg.thread, NULL, background, ftl);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  if (r != 0) {
    destage_stop (ftl);
    return -r;
  }
  __atomic_store_n (&ftl->bg.running, true, __ATOMIC_RELEASE);
  return 0;
}

void
ftl_stop_background (struct ftl *ftl)
{
  destage_stop (ftl);
  if (!bg_running (ftl))
    return;
  pthread_mutex_lock (&ftl->bg.lock);
  __atomic_store_n (&ftl->bg.stop, true, __ATOMIC_RELEASE);
  pthread_cond_signal (&ftl->bg.cond);
  pthread_mutex_unlock (&ftl->bg.lock);
  pthread_join (ftl->bg.thread, NULL);
  __atomic_store_n (&ftl->bg.running, false, __ATOMIC_RELEASE);
}
