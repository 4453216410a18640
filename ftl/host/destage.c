/* nbdkit-ftl: the destager: from the write cache to the log.
 *
 * A batch picks up to ALLOC_PROGRAM_MAX dirty pages (cache_pick: oldest
 * first, a share from each shard, each with the run of dirty pages
 * logically next to it, so that data written sequentially lands in
 * runs on the media), writes them to the log with one program per
 * frontier (write_cached) and completes them (cache_complete: the
 * pages leave the cache, whose slots are then free for writers).
 * Anybody may run a batch:
 *
 *   the destager thread   when the dirty pages reach cache.start (half
 *                         the cache), until they are down to cache.low
 *                         (a quarter); and all of them once no write
 *                         came for DESTAGE_IDLE_NS, as a drive empties
 *                         its buffer when idle (one destage_step at a
 *                         time);
 *   a background step     with manual_background, in place of the
 *                         thread: one destage_step whenever pages are
 *                         dirty (bg.c);
 *   a writer              that finds its shard full (request affinity:
 *                         the request does the work it waits for);
 *   flush and FUA         every page written before them
 *                         (destage_until), then a barrier.
 *
 * A batch holds ckpt_rw shared for its whole duration, as a write does.
 * Batches may run at once: each picks different slots, and a page in
 * flight is not picked again (nor rewritten) until its batch completes,
 * so the log gets a page's versions in the order they were written.
 */

#include <config.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "ftl-internal.h"

#define DESTAGE_IDLE_NS (200 * UINT64_C (1000000))
#define DESTAGE_TICK_NS (50 * UINT64_C (1000000))

static uint64_t
now_ns (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * UINT64_C (1000000000) + ts.tv_nsec;
}

/* With the timing model: the batch's real work that the model did not
 * cover: host, the syncs of the backing file it ran before programs
 * (GC's barrier before an erase: dl_host_ns across the batch, already
 * in dl.host_ns), and the time by which its work (taking the checkpoint
 * lock, programming into the backing file, the map) went on past the
 * modeled end of its programs (dl_host_late), which requests waiting
 * for cache room wait too.  Both count in cache.destage_stall_ns (a
 * backing file slowed by the host's writeback shows here).  modeled 0:
 * nothing programmed, or no model.
 */
static void
note_stall (struct ftl *ftl, uint64_t modeled, uint64_t host)
{
  uint64_t now;

  if (modeled == 0 && host == 0)
    return;
  now = clock_now ();
  if (modeled && now > modeled) {
    dl_host_late (&ftl->dl, now - modeled);
    host += now - modeled;
  }
  if (host == 0)
    return;
  __atomic_fetch_add (&ftl->cache.destage_stall_ns, host, __ATOMIC_RELAXED);
  __atomic_fetch_add (&ftl->cache.destage_stalls, 1, __ATOMIC_RELAXED);
}

int
destage_batch (struct ftl *ftl, uint64_t max_ver, int prefer, uint32_t max)
{
  struct cache_entry e[ALLOC_PROGRAM_MAX];
  int ticket, r;
  uint32_t n;

  /* After a power cut nothing more reaches the media (powercut.c). */
  if (powered_off (ftl))
    return -EIO;
  n = cache_pick (ftl, e, MIN (max, ALLOC_PROGRAM_MAX), max_ver, prefer,
                  &ticket);
  if (n == 0)
    return 0;
  for (uint32_t i = 0; i < n; i++)
    e[i].done = false;
  /* Work done for everybody: the deadline of the request that runs it
   * does not cut it short (deadline.h).
   */
  dl_hold ();
  /* With the timing model, the batch sleeps for its programs after it
   * has released the frontier, so that other batches program other
   * dies meanwhile; its pages stay in the cache until then.
   */
  media_defer (&ftl->media);
  uint64_t host = dl_host_ns ();
  ckpt_shared (ftl);
  r = write_cached (ftl, e, n);
  ckpt_release (ftl);
  uint64_t modeled = media_deferred (&ftl->media);
  note_stall (ftl, modeled, dl_host_ns () - host);
  /* Its pages are in the log whatever the wait says. */
  (void) media_wait (&ftl->media, modeled);
  dl_release ();
  cache_complete (ftl, e, n, ticket, r);
  return r < 0 ? r : (int) n;
}

int
destage_until (struct ftl *ftl, uint64_t max_ver)
{
  int r = 0;

  for (int pass = 0; pass < 3; pass++) {
    do
      r = destage_batch (ftl, max_ver, -1, ALLOC_PROGRAM_MAX);
    while (r > 0);
    cache_wait_flights (ftl, max_ver);
    if (!cache_dirty_upto (ftl, max_ver))
      return 0;
  }
  /* Pages came back dirty: their programs failed. */
  if (r == 0)
    r = __atomic_load_n (&ftl->cache.error, __ATOMIC_RELAXED);
  return r < 0 ? r : -EIO;
}

static uint64_t
dirty_pages (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->cache.dirty, __ATOMIC_RELAXED);
}

int
destage_step (struct ftl *ftl, uint32_t max)
{
  int r;

  if (dirty_pages (ftl) == 0)
    return 0;
  r = destage_batch (ftl, UINT64_MAX, -1, max);
  if (r < 0)
    log_msg (ftl, FTL_LOG_ERROR, "write cache: destaging: %s",
             strerror (-r));
  return r;
}

/* ---- the destager thread ---- */

static bool
stopping (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->cache.stop, __ATOMIC_ACQUIRE);
}

static void *
destager (void *arg)
{
  struct ftl *ftl = arg;
  struct cache *c = &ftl->cache;
  uint64_t last_ver = cache_version (ftl), last_change = now_ns ();

  while (!stopping (ftl)) {
    /* Asleep before the check of the dirty pages, and a writer adds
     * its page before it looks (destage_kick): either this sees the
     * page, or the writer sees the flag and posts, and a post made
     * before the wait ends it at once.
     */
    __atomic_store_n (&c->asleep, true, __ATOMIC_SEQ_CST);
    __atomic_thread_fence (__ATOMIC_SEQ_CST);
    if (!stopping (ftl) && dirty_pages (ftl) < c->start) {
      struct timespec ts;
      clock_gettime (CLOCK_REALTIME, &ts);
      ts.tv_nsec += DESTAGE_TICK_NS;
      if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
      }
      while (sem_timedwait (&c->wake, &ts) == -1 && errno == EINTR)
        ;
    }
    __atomic_store_n (&c->asleep, false, __ATOMIC_SEQ_CST);
    /* Posts for a sleep that is over (a writer that saw the flag just
     * before this cleared it) are not wake-ups for the next one.
     */
    while (sem_trywait (&c->wake) == 0)
      ;
    if (stopping (ftl))
      break;

    uint64_t v = cache_version (ftl), t = now_ns ();
    if (v != last_ver) {
      last_ver = v;
      last_change = t;
    }
    bool idle = t - last_change >= DESTAGE_IDLE_NS;
    if (dirty_pages (ftl) >= c->start || (idle && dirty_pages (ftl) > 0)) {
      uint32_t target = idle ? 0 : c->low;
      uint64_t d;
      while (!stopping (ftl) && (d = dirty_pages (ftl)) > target) {
        int r = destage_step (ftl, d - target);
        if (r < 0)
          break;                /* try again at the next tick */
        if (r == 0)
          break;                /* all in flight with other threads */
      }
    }
  }
  return NULL;
}

void
destage_kick (struct ftl *ftl)
{
  struct cache *c = &ftl->cache;

  /* Only a sleeping destager needs the post: a busy one goes on until
   * the dirty pages are down to cache.low.  The fence orders the
   * caller's pages (counted in dirty) before the load of the flag; the
   * first writer to see it clears it and posts, the others need not.
   * Writers used to signal under the destager's mutex: in steady state
   * on two CPUs they slept on it about 600 times a second, 0.6 ms each.
   */
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  if (__atomic_load_n (&c->running, __ATOMIC_ACQUIRE) &&
      dirty_pages (ftl) >= c->start &&
      __atomic_load_n (&c->asleep, __ATOMIC_SEQ_CST) &&
      __atomic_exchange_n (&c->asleep, false, __ATOMIC_SEQ_CST))
    sem_post (&c->wake);
}

int
destage_start (struct ftl *ftl)
{
  struct cache *c = &ftl->cache;
  int r;

  if (c->nslots == 0 || __atomic_load_n (&c->running, __ATOMIC_ACQUIRE))
    return 0;
  if (sem_init (&c->wake, 0, 0) == -1)
    return -errno;
  __atomic_store_n (&c->stop, false, __ATOMIC_RELEASE);
  sigset_t all, old;
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  r = pthread_create (&c->thread, NULL, destager, ftl);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  if (r != 0) {
    sem_destroy (&c->wake);
    return -r;
  }
  ftl_thread_name (c->thread, "ftl-destager");
  __atomic_store_n (&c->running, true, __ATOMIC_RELEASE);
  return 0;
}

void
destage_stop (struct ftl *ftl)
{
  struct cache *c = &ftl->cache;

  if (!__atomic_load_n (&c->running, __ATOMIC_ACQUIRE))
    return;
  /* Checked before each sleep: a post made before the sleep ends it. */
  __atomic_store_n (&c->stop, true, __ATOMIC_SEQ_CST);
  sem_post (&c->wake);
  pthread_join (c->thread, NULL);
  __atomic_store_n (&c->running, false, __ATOMIC_RELEASE);
  sem_destroy (&c->wake);
}
