/* nbdkit-ftl: concurrency tests: many threads on one handle, with
 * garbage collection (foreground, and in a second run the background
 * thread too) relocating data under them.
 *
 * The disk (1024 pages of 4 KiB, 16 per block, 30% over-provisioning)
 * is cut into regions of 128 pages:
 *
 *   W0..W3   one writer thread each: overwrites, trims, flushes, and
 *            reads of its own pages, which must be its latest version
 *   R0, R1   written and flushed before the threads start, then only
 *            read, by one reader thread each, while GC moves them
 *   S        written by two threads at once, same pages, each with its
 *            own thread-id pattern; the readers also read it, and every
 *            page they see must be one whole pattern, never a mix
 *   (rest)   cold data, never touched again
 *
 * The initial fill interleaves the regions page by page, so that every
 * erase block holds some of each and the readers' pages are relocated
 * as soon as GC reclaims blocks emptied by the writers.  Threads run
 * for a fixed time.  Then the handle is closed, reopened, and every
 * page is checked: W pages hold their writer's latest version, R pages
 * their initial one, and each S page the last version written there by
 * one of the two threads.
 *
 * Threads record their first error in the shared state and stop; the
 * main thread asserts after joining them.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"

#define PS       4096
#define LP       1024
#define REG      128
#define NWRITERS 4
#define NREADERS 2
#define NSAME    2
#define RUN_SECONDS 2.0

#define W_BASE(i)  ((uint64_t) (i) * REG)
#define R_BASE(j)  ((uint64_t) (NWRITERS + (j)) * REG)
#define S_BASE     ((uint64_t) (NWRITERS + NREADERS) * REG)
#define COLD_BASE  (S_BASE + REG)

/* Versions: thread id in the top bits.  Initial data has thread id 0. */
#define TID_SHIFT  40
#define VER(tid, n) (((uint64_t) (tid) << TID_SHIFT) | (n))
#define TID_OF(v)  ((v) >> TID_SHIFT)
#define SAME_TID(k) (100 + (k))

static char path[256];

static struct {
  struct ftl *ftl;
  double deadline;
  bool stop;                    /* atomic */
  pthread_mutex_t lock;
  char err[512];                /* first error */
  uint64_t s_last[NSAME][REG];  /* last version each S thread wrote */
  uint64_t w_version[NWRITERS][REG];
  uint64_t ops[NWRITERS + NREADERS + NSAME];
  uint64_t checks;              /* atomic: pages verified by threads */
} sh;

static void
thread_fail (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

static void
thread_fail (const char *fmt, ...)
{
  va_list ap;

  pthread_mutex_lock (&sh.lock);
  if (!sh.err[0]) {
    va_start (ap, fmt);
    vsnprintf (sh.err, sizeof sh.err, fmt, ap);
    va_end (ap);
  }
  pthread_mutex_unlock (&sh.lock);
  __atomic_store_n (&sh.stop, true, __ATOMIC_RELEASE);
}

static bool
running (void)
{
  if (__atomic_load_n (&sh.stop, __ATOMIC_ACQUIRE))
    return false;
  if (unit_now () > sh.deadline) {
    __atomic_store_n (&sh.stop, true, __ATOMIC_RELEASE);
    return false;
  }
  return true;
}

/* Identify a page read at lpn; returns false (and records why) unless
 * it is a whole pattern of that page.
 */
static bool
page_ok (const uint8_t *page, uint64_t lpn, uint64_t *version,
         const char *who)
{
  uint64_t l = lpn;
  int k = unit_page_identify (page, PS, &l, version);

  if (k < 0) {
    thread_fail ("%s: page %" PRIu64 " is not a whole page pattern (torn or "
          "mixed)", who, lpn);
    return false;
  }
  if (k == 1 && l != lpn) {
    thread_fail ("%s: page %" PRIu64 " holds the data of page %" PRIu64, who, lpn,
          l);
    return false;
  }
  __atomic_fetch_add (&sh.checks, 1, __ATOMIC_RELAXED);
  return true;
}

/* A version seen in the shared region: initial data or either S
 * thread's.
 */
static bool
s_version_ok (uint64_t v)
{
  return v == VER (0, 1) || TID_OF (v) == SAME_TID (0) ||
    TID_OF (v) == SAME_TID (1);
}

/* ---- the threads ---- */

struct targ {
  int idx;                      /* in sh.ops */
  int k;                        /* writer, reader or S thread number */
  uint64_t rng;
};

static void *
writer (void *arg)
{
  struct targ *t = arg;
  uint64_t *ver = sh.w_version[t->k];
  uint8_t *buf = malloc (8 * PS);
  uint64_t n = 0;
  char who[32];

  snprintf (who, sizeof who, "writer %d", t->k);
  while (running ()) {
    uint64_t off = unit_rnd (&t->rng) % REG;
    uint64_t cnt = 1 + unit_rnd (&t->rng) % 8;
    uint64_t lpn = W_BASE (t->k) + off;
    uint64_t what = unit_rnd (&t->rng) % 100;
    int r;

    if (off + cnt > REG)
      cnt = REG - off;
    if (what < 70) {
      uint64_t v = VER (1 + t->k, ++n);
      for (uint64_t i = 0; i < cnt; i++)
        unit_fill_page (buf + i * PS, PS, lpn + i, v);
      r = ftl_write (sh.ftl, buf, cnt * PS, lpn * PS, 0);
      if (r < 0) {
        thread_fail ("%s: write: %s", who, strerror (-r));
        break;
      }
      for (uint64_t i = 0; i < cnt; i++)
        ver[off + i] = v;
    }
    else if (what < 75) {
      r = ftl_trim (sh.ftl, cnt * PS, lpn * PS, 0);
      if (r < 0) {
        thread_fail ("%s: trim: %s", who, strerror (-r));
        break;
      }
      for (uint64_t i = 0; i < cnt; i++)
        ver[off + i] = 0;
    }
    else if (what < 77) {
      r = ftl_flush (sh.ftl);
      if (r < 0) {
        thread_fail ("%s: flush: %s", who, strerror (-r));
        break;
      }
    }
    else {
      /* Read back: exactly what this thread wrote last. */
      r = ftl_read (sh.ftl, buf, cnt * PS, lpn * PS);
      if (r < 0) {
        thread_fail ("%s: read: %s", who, strerror (-r));
        break;
      }
      for (uint64_t i = 0; i < cnt; i++) {
        uint64_t v;
        if (!page_ok (buf + i * PS, lpn + i, &v, who))
          goto out;
        if (v != ver[off + i]) {
          thread_fail ("%s: page %" PRIu64 " has version 0x%" PRIx64 ", wrote "
                "0x%" PRIx64 " last", who, lpn + i, v, ver[off + i]);
          goto out;
        }
      }
    }
    sh.ops[t->idx]++;
  }
 out:
  free (buf);
  return NULL;
}

static void *
reader (void *arg)
{
  struct targ *t = arg;
  uint8_t *buf = malloc (8 * PS);
  char who[32];

  snprintf (who, sizeof who, "reader %d", t->k);
  while (running ()) {
    bool shared = unit_rnd (&t->rng) % 4 == 0;
    uint64_t off = unit_rnd (&t->rng) % REG;
    uint64_t cnt = 1 + unit_rnd (&t->rng) % 8;
    uint64_t lpn = (shared ? S_BASE : R_BASE (t->k)) + off;
    int r;

    if (off + cnt > REG)
      cnt = REG - off;
    r = ftl_read (sh.ftl, buf, cnt * PS, lpn * PS);
    if (r < 0) {
      thread_fail ("%s: read: %s", who, strerror (-r));
      break;
    }
    for (uint64_t i = 0; i < cnt; i++) {
      uint64_t v;
      if (!page_ok (buf + i * PS, lpn + i, &v, who))
        goto out;
      if (shared ? !s_version_ok (v) : v != VER (0, 1)) {
        thread_fail ("%s: page %" PRIu64 " has version 0x%" PRIx64 ", which "
              "nobody wrote there", who, lpn + i, v);
        goto out;
      }
    }
    sh.ops[t->idx]++;
  }
 out:
  free (buf);
  return NULL;
}

/* Both S threads write runs of 1..4 pages at random places of S. */
static void *
same_pages (void *arg)
{
  struct targ *t = arg;
  uint8_t *buf = malloc (4 * PS);
  uint64_t n = 0;
  char who[32];

  snprintf (who, sizeof who, "same-page writer %d", t->k);
  while (running ()) {
    uint64_t off = unit_rnd (&t->rng) % REG;
    uint64_t cnt = 1 + unit_rnd (&t->rng) % 4;
    uint64_t v = VER (SAME_TID (t->k), ++n);
    int r;

    if (off + cnt > REG)
      cnt = REG - off;
    for (uint64_t i = 0; i < cnt; i++)
      unit_fill_page (buf + i * PS, PS, S_BASE + off + i, v);
    r = ftl_write (sh.ftl, buf, cnt * PS, (S_BASE + off) * PS,
                   n % 64 == 0 ? FTL_FUA : 0);
    if (r < 0) {
      thread_fail ("%s: write: %s", who, strerror (-r));
      break;
    }
    for (uint64_t i = 0; i < cnt; i++)
      sh.s_last[t->k][off + i] = v;
    sh.ops[t->idx]++;
  }
  free (buf);
  return NULL;
}

/* ---- checks from the main thread ---- */

/* Every page as it must be after the threads are done. */
static void
verify_final (struct ftl *ftl, const char *what)
{
  uint8_t page[PS];

  for (uint64_t lpn = 0; lpn < LP; lpn++) {
    uint64_t l = lpn, v = 0;
    ck_assert_int_eq (ftl_read (ftl, page, PS, lpn * PS), 0);
    int k = unit_page_identify (page, PS, &l, &v);
    ck_assert_msg (k >= 0, "%s: page %" PRIu64 " is torn or mixed", what,
                   lpn);
    ck_assert_msg (l == lpn, "%s: page %" PRIu64 " holds page %" PRIu64
                   "'s data", what, lpn, l);
    if (lpn < R_BASE (0)) {
      uint64_t want = sh.w_version[lpn / REG][lpn % REG];
      ck_assert_msg (v == want, "%s: page %" PRIu64 " (writer %" PRIu64
                     ") has version 0x%" PRIx64 ", expected 0x%" PRIx64,
                     what, lpn, lpn / REG, v, want);
    }
    else if (lpn >= S_BASE && lpn < COLD_BASE) {
      uint64_t a = sh.s_last[0][lpn - S_BASE];
      uint64_t b = sh.s_last[1][lpn - S_BASE];
      if (a == 0 && b == 0)
        ck_assert_uint_eq (v, VER (0, 1));
      else
        ck_assert_msg (v == a || v == b, "%s: shared page %" PRIu64 " has "
                       "version 0x%" PRIx64 ", but the last writes there "
                       "were 0x%" PRIx64 " and 0x%" PRIx64, what, lpn, v,
                       a, b);
    }
    else
      ck_assert_msg (v == VER (0, 1), "%s: page %" PRIu64 " has "
                     "version 0x%" PRIx64 ", expected its initial data",
                     what, lpn, v);
  }
}

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "threads.img");
}

static void
run (bool background, uint64_t cache_bytes)
{
  struct ftl *ftl = unit_open_cached (path, LP * PS, PS, 16, 30, 4,
                                      cache_bytes, unit_nosync_io ());
  struct targ args[NWRITERS + NREADERS + NSAME];
  pthread_t th[NWRITERS + NREADERS + NSAME];
  uint8_t page[PS];
  struct ftl_stats a, b;
  uint32_t r_ppn[NREADERS * REG];
  unsigned moved = 0;
  int nt = 0;

  ck_assert_uint_eq (ftl->nstreams, 4);
  memset (&sh, 0, sizeof sh);
  pthread_mutex_init (&sh.lock, NULL);
  sh.ftl = ftl;

  /* Interleaved initial fill: page i of every region, for each i. */
  for (uint64_t i = 0; i < REG; i++)
    for (uint64_t base = 0; base < LP; base += REG) {
      unit_fill_page (page, PS, base + i, VER (0, 1));
      ck_assert_int_eq (ftl_write (ftl, page, PS, (base + i) * PS, 0), 0);
    }
  for (int w = 0; w < NWRITERS; w++)
    for (int i = 0; i < REG; i++)
      sh.w_version[w][i] = VER (0, 1);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  ftl_get_stats (ftl, &a);
  for (unsigned i = 0; i < NREADERS * REG; i++)
    r_ppn[i] = l2p_load (ftl, R_BASE (0) + i);

  if (background)
    ck_assert_int_eq (ftl_start_background (ftl), 0);
  sh.deadline = unit_now () + RUN_SECONDS;
  for (int k = 0; k < NWRITERS; k++, nt++) {
    args[nt] = (struct targ) { .idx = nt, .k = k, .rng = 1000 + nt };
    ck_assert_int_eq (pthread_create (&th[nt], NULL, writer, &args[nt]), 0);
  }
  for (int k = 0; k < NREADERS; k++, nt++) {
    args[nt] = (struct targ) { .idx = nt, .k = k, .rng = 1000 + nt };
    ck_assert_int_eq (pthread_create (&th[nt], NULL, reader, &args[nt]), 0);
  }
  for (int k = 0; k < NSAME; k++, nt++) {
    args[nt] = (struct targ) { .idx = nt, .k = k, .rng = 1000 + nt };
    ck_assert_int_eq (pthread_create (&th[nt], NULL, same_pages, &args[nt]),
                      0);
  }
  for (int i = 0; i < nt; i++)
    pthread_join (th[i], NULL);
  if (background)
    ftl_stop_background (ftl);
  ck_assert_msg (sh.err[0] == '\0', "%s", sh.err);

  ftl_get_stats (ftl, &b);
  for (unsigned i = 0; i < NREADERS * REG; i++)
    moved += l2p_load (ftl, R_BASE (0) + i) != r_ppn[i];
  printf ("threads (%s GC, write cache %" PRIu64 " KiB): %u of the "
          "readers' %u pages were relocated while they read them\n",
          background ? "background" : "foreground", cache_bytes / 1024,
          moved, NREADERS * REG);
  if (cache_bytes) {
    printf ("threads: write cache: %" PRIu64 " hits, %" PRIu64 " coalesced, "
            "%" PRIu64 " destaged, %" PRIu64 " dropped, %" PRIu64
            " flush waits, %" PRIu64 " write waits\n", b.cache.hits,
            b.cache.coalesced_pages, b.cache.destaged_pages,
            b.cache.dropped_pages, b.cache.flush_waits, b.cache.write_waits);
    /* Every page the threads wrote reached the log or was replaced or
     * dropped in the cache (the last flush emptied it).
     */
    ck_assert_uint_gt (b.cache.destaged_pages, 1000);
    ck_assert_uint_gt (b.cache.write_waits, 0);
    ck_assert_uint_gt (b.cache.hits, 0);
  }
  printf ("threads (%s GC): ops per thread: writers %" PRIu64 " %" PRIu64
          " %" PRIu64 " %" PRIu64 ", readers %" PRIu64 " %" PRIu64
          ", same-page %" PRIu64 " %" PRIu64 "; %" PRIu64 " pages verified "
          "by the threads; %" PRIu64 " GC runs (%" PRIu64 " background), %"
          PRIu64 " pages copied, %" PRIu64 " checkpoints\n",
          background ? "background" : "foreground",
          sh.ops[0], sh.ops[1], sh.ops[2], sh.ops[3], sh.ops[4], sh.ops[5],
          sh.ops[6], sh.ops[7], sh.checks, b.gc_runs - a.gc_runs,
          b.gc_background_runs - a.gc_background_runs,
          b.gc_copied_pages - a.gc_copied_pages,
          b.checkpoints - a.checkpoints);
  for (int i = 0; i < nt; i++)
    ck_assert_msg (sh.ops[i] > 50, "thread %d did only %" PRIu64 " "
                   "operations", i, sh.ops[i]);
  ck_assert_uint_gt (b.gc_runs - a.gc_runs, 100);
  ck_assert_uint_gt (b.gc_copied_pages - a.gc_copied_pages, 100);
  ck_assert_uint_gt (moved, NREADERS * REG / 2);
  if (background)
    ck_assert_uint_gt (b.gc_background_runs, 0);

  verify_final (ftl, "before closing");
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  verify_final (ftl, "after reopening");
  ck_assert_int_eq (ftl_close (ftl), 0);
  pthread_mutex_destroy (&sh.lock);
}

/* Writers, readers and same-page writers with foreground GC only. */
START_TEST (test_threads_foreground_gc)
{
  run (false, 0);
}
END_TEST

/* The same with the background GC thread running too. */
START_TEST (test_threads_background_gc)
{
  run (true, 0);
}
END_TEST

/* With a write cache of 32 pages: writers fill it and destage batches
 * themselves, the destager and the background GC thread run, trims
 * drop cached pages and flushes destage them, under the readers.
 */
START_TEST (test_threads_write_cache)
{
  run (true, 32 * PS);
}
END_TEST

/* The same without the background threads: only the requests destage. */
START_TEST (test_threads_write_cache_foreground)
{
  run (false, 32 * PS);
}
END_TEST

/* Checkpoints.  A request that finds one due leaves it to the
 * background thread when there is one (its own latency would carry the
 * checkpoint's syncs); without one, the writer writes it.  The thread
 * that writes it is the one that logs "checkpoint N in slot S".
 */
static pthread_mutex_t ckpt_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_t ckpt_by;
static unsigned ckpt_logged;

static void
ckpt_log (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level == FTL_LOG_DEBUG && strncmp (msg, "checkpoint ", 11) == 0) {
    pthread_mutex_lock (&ckpt_mu);
    ckpt_by = pthread_self ();
    ckpt_logged++;
    pthread_mutex_unlock (&ckpt_mu);
  }
  else
    unit_log (opaque, level, msg);
}

/* A small disk that logs its checkpoints (ckpt_log). */
static struct ftl_options
ckpt_options (void)
{
  return (struct ftl_options) {
    .path = path, .logical_bytes = LP * PS, .page_size = PS,
    .pages_per_block = 16, .op_percent = 30, .log = ckpt_log,
    .debug = FTL_DEBUG_CKPT, .io = unit_nosync_io (),
  };
}

static void
checkpoint_writer (bool background)
{
  struct ftl_options o = ckpt_options ();
  struct ftl *ftl;
  char err[256];
  uint8_t page[PS];
  unsigned before, after = 0;
  pthread_t by;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  if (background)
    ck_assert_int_eq (ftl_start_background (ftl), 0);
  ck_assert_uint_lt (ftl->ckpt_interval + 1, LP);
  pthread_mutex_lock (&ckpt_mu);
  before = ckpt_logged;
  pthread_mutex_unlock (&ckpt_mu);
  /* One page more than the interval: the last write finds it due. */
  for (uint64_t lpn = 0; lpn <= ftl->ckpt_interval; lpn++) {
    unit_fill_page (page, PS, lpn, 1);
    ck_assert_int_eq (ftl_write (ftl, page, PS, lpn * PS, 0), 0);
  }
  for (int i = 0; i < 200 && after == before; i++) {
    pthread_mutex_lock (&ckpt_mu);
    after = ckpt_logged;
    by = ckpt_by;
    pthread_mutex_unlock (&ckpt_mu);
    if (after == before)
      nanosleep (&(struct timespec) { .tv_nsec = 10000000 }, NULL);
  }
  ck_assert_msg (after > before, "no checkpoint after %" PRIu64 " pages",
                 ftl->ckpt_interval + 1);
  if (background)
    ck_assert_msg (!pthread_equal (by, pthread_self ()),
                   "the writer wrote the checkpoint, not the background "
                   "thread");
  else
    ck_assert_msg (pthread_equal (by, pthread_self ()),
                   "the checkpoint was not written by the writer");
  ftl_stop_background (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}

START_TEST (test_checkpoint_by_background_thread)
{
  checkpoint_writer (true);
}
END_TEST

START_TEST (test_checkpoint_by_writer)
{
  checkpoint_writer (false);
}
END_TEST

/* Trim pages, which GC keeps until two checkpoints cover them, make a
 * checkpoint due on their own once they reach a quarter of the spare
 * space, long before the interval of all pages: a page written,
 * then trimmed, then a flush, which writes the trim record's page.
 */
START_TEST (test_checkpoint_by_trims)
{
  struct ftl_options o = ckpt_options ();
  struct ftl *ftl;
  char err[256];
  uint8_t page[PS];
  unsigned before;
  uint64_t i, trims;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  /* Two pages an iteration, data and trim. */
  ck_assert_uint_lt (2 * ftl->ckpt_trim_interval + 2, ftl->ckpt_interval);
  pthread_mutex_lock (&ckpt_mu);
  before = ckpt_logged;
  pthread_mutex_unlock (&ckpt_mu);
  for (i = 0; i < ftl->ckpt_interval; i++) {
    unit_fill_page (page, PS, i % LP, 1);
    ck_assert_int_eq (ftl_write (ftl, page, PS, (i % LP) * PS, 0), 0);
    trims = ftl->trim_pages_since_ckpt;
    ck_assert_int_eq (ftl_trim (ftl, PS, (i % LP) * PS, 0), 0);
    ck_assert_int_eq (ftl_flush (ftl), 0);
    pthread_mutex_lock (&ckpt_mu);
    bool done = ckpt_logged > before;
    pthread_mutex_unlock (&ckpt_mu);
    if (done)
      break;
    ck_assert_uint_eq (ftl->trim_pages_since_ckpt, trims + 1);
  }
  /* Iteration i wrote trim page i + 1: due with the interval's last
   * trim page, written by that request or the next (no background
   * thread).  Counting data pages too, it came after half as many.
   */
  ck_assert_msg (i + 1 >= ftl->ckpt_trim_interval &&
                 i + 1 <= ftl->ckpt_trim_interval + 1,
                 "checkpoint after %" PRIu64 " trim pages, expected %"
                 PRIu64, i + 1, ftl->ckpt_trim_interval);
  ck_assert_uint_lt (ftl->pages_since_ckpt, ftl->ckpt_trim_interval);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* ---- stripe locks ---- */

struct stripe_arg {
  struct ftl *ftl;
  uint64_t mask;
  bool shared;
  bool taken;                   /* atomic */
  bool release;                 /* atomic: let go now */
};

static void *
stripe_holder (void *arg)
{
  struct stripe_arg *a = arg;

  if (a->shared)
    map_lock_mask_shared (a->ftl, a->mask);
  else
    map_lock_mask (a->ftl, a->mask);
  __atomic_store_n (&a->taken, true, __ATOMIC_RELEASE);
  while (!__atomic_load_n (&a->release, __ATOMIC_ACQUIRE))
    usleep (1000);
  map_unlock_mask (a->ftl, a->mask);
  return NULL;
}

/* Up to seconds for a->taken; its value. */
static bool
taken_within (struct stripe_arg *a, double seconds)
{
  double end = unit_now () + seconds;

  while (!__atomic_load_n (&a->taken, __ATOMIC_ACQUIRE) && unit_now () < end)
    usleep (1000);
  return __atomic_load_n (&a->taken, __ATOMIC_ACQUIRE);
}

/* Destage batches take the stripes of their pages shared (a batch of
 * scattered pages spans all of them): two of them hold every stripe at
 * once.  A trim or a write past the cache takes its stripe exclusively:
 * it waits for the batches, and a batch that comes after it waits for
 * it (writers first, so that batches never starve a trim).
 */
START_TEST (test_stripes_shared_and_exclusive)
{
  struct ftl *ftl;
  pthread_t th[3];
  struct stripe_arg b1, b2, ex, b3;

  ftl = unit_open (path, 4 << 20, PS, 16, 30, 1, unit_nosync_io ());
  b1 = (struct stripe_arg) { .ftl = ftl, .mask = UINT64_MAX, .shared = true };
  b2 = b1;
  ex = (struct stripe_arg) { .ftl = ftl, .mask = map_stripe_mask (5, 5) };
  b3 = (struct stripe_arg) { .ftl = ftl, .mask = map_stripe_mask (5, 5),
    .shared = true };

  ck_assert_int_eq (pthread_create (&th[0], NULL, stripe_holder, &b1), 0);
  ck_assert (taken_within (&b1, 5));
  ck_assert_int_eq (pthread_create (&th[1], NULL, stripe_holder, &b2), 0);
  ck_assert_msg (taken_within (&b2, 5),
                 "a second batch waited for the first one's stripes");
  ck_assert_int_eq (pthread_create (&th[2], NULL, stripe_holder, &ex), 0);
  ck_assert_msg (!taken_within (&ex, 0.1),
                 "an exclusive holder got a stripe that batches hold");
  /* A batch arriving while the exclusive holder waits: after it. */
  pthread_t t3;
  ck_assert_int_eq (pthread_create (&t3, NULL, stripe_holder, &b3), 0);
  ck_assert_msg (!taken_within (&b3, 0.1),
                 "a batch went before a waiting exclusive holder");
  __atomic_store_n (&b1.release, true, __ATOMIC_RELEASE);
  __atomic_store_n (&b2.release, true, __ATOMIC_RELEASE);
  ck_assert (taken_within (&ex, 5));
  ck_assert (!__atomic_load_n (&b3.taken, __ATOMIC_ACQUIRE));
  __atomic_store_n (&ex.release, true, __ATOMIC_RELEASE);
  ck_assert (taken_within (&b3, 5));
  __atomic_store_n (&b3.release, true, __ATOMIC_RELEASE);
  for (int i = 0; i < 3; i++)
    pthread_join (th[i], NULL);
  pthread_join (t3, NULL);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

static Suite *
threads_suite (void)
{
  Suite *s = suite_create ("threads");
  TCase *tc = tcase_create ("threads");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_threads_foreground_gc);
  tcase_add_test (tc, test_threads_background_gc);
  tcase_add_test (tc, test_threads_write_cache);
  tcase_add_test (tc, test_threads_write_cache_foreground);
  tcase_add_test (tc, test_checkpoint_by_background_thread);
  tcase_add_test (tc, test_checkpoint_by_writer);
  tcase_add_test (tc, test_checkpoint_by_trims);
  tcase_add_test (tc, test_stripes_shared_and_exclusive);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (threads_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
