/* nbdkit-ftl: background work, one step at a time, and the thread that
 * runs it.
 *
 * A step (bg_step) does one unit of work, the first of these that has
 * any:
 *
 *   1. the checkpoint, if one is due (ckpt_maybe);
 *   2. while free blocks are at or below gc.drain_target: a batch of
 *      erases of drained blocks (nothing to copy) that a barrier
 *      covers; or, when those left wait for one, that barrier, run
 *      outside gc.lock while writers go on with the free blocks (a
 *      large sequential overwrite then seldom waits for a sync);
 *   3. after a step that reclaimed a victim: a static wear leveling
 *      move, if a block is due for one (gc_wear_level);
 *   4. with the error model on: a read reclaim, if a block is noted
 *      for one (gc_read_reclaim);
 *   5. while free blocks are at or below gc.high (one more while erase
 *      counts are uneven, wl_free_choice): one victim (watermark mode,
 *      where victims waiting for a barrier count as free up to a
 *      batch, see gc_step), or one slice after yielding while a
 *      request's deadline is near (deadline mode), holding ckpt_rw
 *      shared only for it;
 *   6. with the SLC cache: a fold of its oldest block, once host
 *      writes paused for slc.fold_idle_ns, or when more blocks are in
 *      SLC mode than the budget allows (gc_fold, slc.c);
 *   7. with nothing else to do: the error model's idle scrub, if a
 *      block is due (errmodel_scrub_step).
 *
 * The thread (started by ftl_start_background) loops over steps; it
 * sleeps when a step finds nothing to do, until a writer finds the free
 * pool at or below gc.drain_ring (a batch of erases below
 * gc.drain_target) or a checkpoint due (the bell,
 * util/bell.h, rung by writers and requests) or 100 ms pass, and for 1 s after an error (a failed
 * checkpoint, or nothing to reclaim) rather than try again at once.
 * The write cache's destager is a thread of its own (destage.c).  With
 * manual_background there are no threads: the caller steps
 * (ftl_background_step), and a step then also destages one batch of
 * the write cache's dirty pages, taking turns with the rest.
 *
 * Invariants: steps never overlap (bg.step_lock), so the state they
 * keep between them (bg.drained_idle, bg.destage_first, gc.wl_after)
 * has one writer; the thread holds no lock while it sleeps; bell.stop
 * and bell.rings change under bell.lock, so neither a stop nor a kick is
 * missed between a step and the wait; the thread blocks every signal
 * (they belong to the caller's threads).
 */

#include <config.h>

#include <errno.h>
#include <signal.h>
#include <time.h>

#include "ftl-internal.h"

#define BG_YIELD_NS (500 * UINT64_C (1000))  /* one wait for a request */
#define BG_IDLE_MS  100                       /* sleep when idle */
#define BG_ERROR_MS 1000                      /* sleep after an error */
#define BG_ERASES   8                         /* erases per step */

/* What this thread's step is doing (bg_work_here). */
static FTL_TLS enum bg_work work;

enum bg_work
bg_work_here (void)
{
  return work;
}

void
bg_init (struct ftl *ftl, bool manual)
{
  ftl->bg.manual = manual;
  ftl_bell_init (&ftl->bell);
  pthread_mutex_init (&ftl->bg.step_lock, NULL);
}

void
bg_free (struct ftl *ftl)
{
  ftl_bell_destroy (&ftl->bell);
  pthread_mutex_destroy (&ftl->bg.step_lock);
}

/* Step 2: erase up to BG_ERASES drained blocks that an earlier barrier
 * covers; if none is covered and some wait for a barrier, run it (one
 * serves them all; a trim page it writes leaves the blocks that
 * clients' trims leave).  Returns 1 if it erased or synced, 0 if
 * nothing is drained, or a negative errno.
 */
static int
drain_step (struct ftl *ftl)
{
  bool waiting;
  int r;

  ckpt_shared (ftl);
  work = BG_ERASE;
  r = gc_erase_drained (ftl, BG_ERASES, ftl->gc.drain_target, &waiting);
  if (r == 0 && waiting) {
    work = BG_BARRIER;
    r = gc_barrier (ftl, false);
    if (r == 0)
      r = 1;
  }
  ckpt_release (ftl);
  return r < 0 ? r : r > 0;
}

/* Deadline mode: before the next slice, wait while a request's deadline
 * is near and the free pool is above the low watermark; at most one
 * timeout in a row, so that a request that is stuck elsewhere does not
 * stop GC for good.
 */
static void
yield (struct ftl *ftl)
{
  uint64_t start = clock_now ();

  while (!__atomic_load_n (&ftl->bell.stop, __ATOMIC_ACQUIRE) &&
         gc_deadline_near (ftl) && alloc_nfree (ftl) > ftl->gc.low &&
         clock_now () - start < ftl->dl.timeout_ns) {
    __atomic_fetch_add (&ftl->gc.yields, 1, __ATOMIC_RELAXED);
    clock_sleep_until (clock_now () + BG_YIELD_NS);
  }
}

/* Step 5: one victim, or one slice of one.  Watermark mode counts the
 * victims that wait for a barrier (gc.pending) with the free blocks, up
 * to gc.high + gc.erase_batch - 1, so that up to erase_batch of them
 * share one; once the free blocks alone are down to gc.high, they get
 * their barrier.  While erase counts are uneven, one block more is kept
 * free, so that frontiers have a choice (wl_free_choice, wl.c).
 * Returns 1 if it did something, 0 if there was nothing to do (and no
 * victim is in progress), or a negative errno (-ENOSPC: nothing to
 * reclaim).
 */
static int
gc_step (struct ftl *ftl)
{
  bool slices = ftl->gc.mode == FTL_GC_DEADLINE;
  uint32_t nfree = alloc_nfree (ftl), npending = gc_npending (ftl);
  uint32_t choice = wl_free_choice (ftl);
  uint32_t target = ftl->gc.high + ftl->gc.erase_batch - 1 + choice;
  int r;

  if (slices) {
    if (nfree > ftl->gc.high + choice && !gc_in_progress (ftl))
      return 0;
  }
  else if (nfree + npending > target &&
           !(npending > 0 && nfree <= ftl->gc.high))
    return 0;
  work = BG_GC;
  if (slices) {
    yield (ftl);
    ckpt_shared (ftl);
    r = gc_slice (ftl);
    ckpt_release (ftl);
    return r;
  }
  ckpt_shared (ftl);
  r = gc_reclaim (ftl, target, true);
  ckpt_release (ftl);
  return r < 0 ? r : 1;
}

/* One unit of background work (see the top of the file), the write
 * cache's aside.  Returns 1 if it did something, 0 if there was
 * nothing to do, or a negative errno.  Caller holds bg.step_lock.
 */
static int
bg_step (struct ftl *ftl)
{
  int r;

  work = BG_CKPT;
  r = host_ckpt (ftl, false, true);
  if (r != 0)
    return r;
  if (wl_worn_out (ftl))
    return 0;

  if (alloc_nfree (ftl) <= ftl->gc.drain_target && !ftl->bg.drained_idle) {
    r = drain_step (ftl);
    if (r != 0)
      return r;
    ftl->bg.drained_idle = true;
  }

  work = BG_WL;
  ckpt_shared (ftl);
  r = gc_wear_level (ftl);
  ckpt_release (ftl);
  if (r != 0)
    return r;

  if (ftl->em.enabled) {
    work = BG_RECLAIM;
    ckpt_shared (ftl);
    r = gc_read_reclaim (ftl);
    ckpt_release (ftl);
    if (r != 0)
      return r;
  }

  r = gc_step (ftl);
  if (r == 0) {
    work = BG_FOLD;
    ckpt_shared (ftl);
    r = gc_fold (ftl);
    ckpt_release (ftl);
  }
  if (r == 0) {
    ftl->bg.drained_idle = false;       /* idle: look again next time */
    work = BG_SCRUB;
    r = errmodel_scrub_step (ftl);
  }
  return r;
}

int
ftl_background_step (struct ftl *ftl)
{
  struct bg *bg = &ftl->bg;
  int r;

  if (!bg->manual)
    return -EINVAL;
  if (ftl->readonly)
    return 0;
  pthread_mutex_lock (&bg->step_lock);
  /* The write cache and the rest take turns when both have work, as
   * the destager and the background thread share the device.
   */
  bool destage_first = bg->destage_first && ftl->cache.nslots;
  bg->destage_first = !bg->destage_first;
  r = 0;
  if (destage_first) {
    work = BG_DESTAGE;
    r = destage_step (ftl, ALLOC_PROGRAM_MAX);
  }
  if (r == 0)
    r = bg_step (ftl);
  if (r == 0 && !destage_first && ftl->cache.nslots) {
    work = BG_DESTAGE;
    r = destage_step (ftl, ALLOC_PROGRAM_MAX);
  }
  work = BG_NONE;
  pthread_mutex_unlock (&bg->step_lock);
  return r < 0 ? r : r > 0;
}

/* Wait on bell.cond (bell.lock held) for at most ms milliseconds. */
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
  pthread_cond_timedwait (&ftl->bell.cond, &ftl->bell.lock, &ts);
}

static void *
background (void *arg)
{
  struct ftl *ftl = arg;
  struct bg *bg = &ftl->bg;

  pthread_mutex_lock (&ftl->bell.lock);
  while (!ftl->bell.stop) {
    uint64_t kicks = ftl->bell.rings;
    pthread_mutex_unlock (&ftl->bell.lock);

    pthread_mutex_lock (&bg->step_lock);
    int r = bg_step (ftl);
    work = BG_NONE;
    pthread_mutex_unlock (&bg->step_lock);

    pthread_mutex_lock (&ftl->bell.lock);
    if (ftl->bell.stop)
      break;
    if (r < 0)
      /* Nothing to reclaim now, or an error (already logged): wait
       * rather than spin.
       */
      sleep_ms (ftl, BG_ERROR_MS);
    else if (r == 0 && ftl->bell.rings == kicks)
      sleep_ms (ftl, BG_IDLE_MS);       /* until kicked, or 100 ms */
  }
  pthread_mutex_unlock (&ftl->bell.lock);
  return NULL;
}

int
ftl_start_background (struct ftl *ftl)
{
  int r;

  if (ftl->readonly || ftl_bell_listening (&ftl->bell))
    return 0;
  if (ftl->bg.manual) {
    /* Requests leave the work to the caller's steps. */
    __atomic_store_n (&ftl->bell.listening, true, __ATOMIC_RELEASE);
    return 0;
  }
  r = destage_start (ftl);
  if (r < 0)
    return r;
  __atomic_store_n (&ftl->bell.stop, false, __ATOMIC_RELEASE);
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
  ftl_thread_name (ftl->bg.thread, "ftl-background");
  __atomic_store_n (&ftl->bell.listening, true, __ATOMIC_RELEASE);
  return 0;
}

void
ftl_stop_background (struct ftl *ftl)
{
  destage_stop (ftl);
  if (!ftl_bell_listening (&ftl->bell))
    return;
  if (!ftl->bg.manual) {
    pthread_mutex_lock (&ftl->bell.lock);
    __atomic_store_n (&ftl->bell.stop, true, __ATOMIC_RELEASE);
    pthread_cond_signal (&ftl->bell.cond);
    pthread_mutex_unlock (&ftl->bell.lock);
    pthread_join (ftl->bg.thread, NULL);
  }
  __atomic_store_n (&ftl->bell.listening, false, __ATOMIC_RELEASE);
}
