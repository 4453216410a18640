/* nbdkit-ftl: per-request deadlines, the watchdog and latency
 * histograms.
 *
 * Owns the request slots, the watchdog thread, the deadline counters
 * and the latency histograms.  A small leaf: ftl.c registers requests,
 * media.c reports progress and asks whether to give up; it calls
 * nobody but the callbacks it is given.
 *
 * A request's life (ftl.c: dl_begin ... dl_end):
 *
 *   dl_begin: claim a free slot (compare-and-swap, starting at a slot
 *             chosen by the thread, so threads rarely meet), deadline =
 *             now + timeout, state ACTIVE
 *       |
 *       |   media.c: dl_progress as pages move; dl_should_abort before
 *       |   and while it waits (timing model, injected faults)
 *       v
 *   dl_end:   ACTIVE -> DONE (compare-and-swap; if the watchdog made it
 *             ABORTED first, the reply is -ETIMEDOUT), then FREE
 *
 * The watchdog wakes every timeout/8 (1 ms to 100 ms) and, for each
 * slot past its deadline, runs the timeout handler:
 *
 *   DONE                          handled: it raced with the timer
 *   progress since the last look  reset: deadline = now + timeout, at
 *   (its own pages, or any media    most timeout_retries times per
 *   progress: it is queued behind   request
 *   work that moves)
 *   otherwise                     abort: ACTIVE -> ABORTED
 *
 * and watches the media as a whole: when media operations are in
 * flight and none made progress for a whole timeout (and at least
 * 100 ms), the media is stalled: every outstanding request is aborted ("abort all") and new
 * ones fail at once (-ETIMEDOUT) until the media answers again (an
 * operation completes, or the probe callback succeeds), when service
 * resumes by itself.
 *
 * An aborted request stops at its next safe point: a media operation
 * that has not yet touched the file (media.c), or the end of the
 * request.  A write that has already changed the map for part of its
 * range (dl_commit) is not interrupted: it completes, and only its
 * reply is the error, so that an aborted write is applied entirely or
 * not at all.
 *
 * Stages (enum ftl_stage, ftl.h).  The tracker also splits each
 * request's time into stages, at the least cost on the fast path: the
 * total is two reads of the tick counter (clock.h: one instruction
 * where it is the TSC), the backing file's own reads and writes are
 * timed with it too (dl_io_end), and
 * only the slow paths read the clock for themselves (a lock that
 * trylock could not take, a full write cache, foreground GC, a modeled
 * or stalled media wait, a sync):
 *
 *   t = dl_stage_begin (FTL_STAGE_GC);   0 if no request is served on
 *   ... gc_make_room ...                 this thread, or an outer stage
 *   dl_stage_end (t);                    of higher rank owns the span
 *
 * Stages nest, and a span belongs to one stage: an inner stage of
 * higher rank (gc > sync > cache > queue > media) pauses the outer one
 * until it ends (GC run by a writer whose cache shard is full is gc,
 * the rest of its wait cache); one of lower rank is part of the outer
 * (the programs of GC are gc, not media).  So the stages never overlap,
 * and "other" is the total minus the stages timed: they add up.  A
 * request that timed nothing (a read from the write cache, a write
 * into it) adds to its total histogram and to the total of its latency
 * octave's split, one add more than without stages; one that did (every
 * request that reached the backing file: its reads and writes are
 * media, dl_io_end) adds its total to the histogram of those that
 * timed a stage instead, and each of its stages and the rest.  The slot shows the stage being timed to
 * the watchdog, which records it (with the resets) when it resets or
 * aborts the request: what it was waiting on, for the slow log.
 *
 * Host stall: with the timing model, a request notes each modeled end it
 * waits for (dl_model_end), and at its end the time past the latest is
 * its host stall (a histogram of its own): the real work (the backing
 * file, copies, locks) that the modeled time did not cover.  The host
 * work that came before a modeled end adds to it too (dl_host_work,
 * dl_host_wait): a sync of the backing file run by the request (its
 * own flush, or GC's barrier before an erase), and the part of a wait
 * for another thread (a lock, cache room, a free block: dl_wait_begin)
 * that the handle's threads spent on such work; the model schedules the
 * next operation only after them.
 *
 * The slow log: requests longer than slow_ns, and those the watchdog
 * reset or aborted, are copied at their end into a ring (a mutex, taken
 * only then) that one reader drains (dl_slow_fetch): the plugin's
 * writer thread, so the request path never waits for the file.
 *
 * Concurrency: no lock on the request path.  Each slot's control word
 * (generation << 3 | state) is changed by compare-and-swap; the
 * watchdog's own bookkeeping of a slot (w_*) is touched by the watchdog
 * alone.  Counters and histogram buckets are relaxed atomics.  What
 * every request or media operation touches (the request count, the
 * latency histograms, the media's progress and operations in flight)
 * is split into FTL_SHARDS shards of their own cache lines, one per
 * thread (threads take them round robin), so that threads on different
 * CPUs do not pass those lines back and forth on every request; readers
 * (the watchdog, statistics) add the shards up.
 */

#ifndef FTL_DEADLINE_H
#define FTL_DEADLINE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "ftl.h"
#include "util/log.h"
#include "util/util.h"
#include "track/hist.h"

struct fault;

#define DL_SLOTS 1024

struct dl_slot {
  uint64_t ctl;                 /* generation << 3 | state (atomic) */
  uint64_t deadline;            /* CLOCK_MONOTONIC ns (atomic) */
  uint64_t progress;            /* pages moved by the request (atomic) */
  unsigned op;                  /* enum ftl_op (atomic: the watchdog
                                 * reads it while the slot is reused) */
  unsigned stage;               /* 1 + the stage being timed, 0: none
                                 * (atomic) */
  uint32_t w_flag;              /* written by the watchdog when it resets
                                 * or aborts the request: the low 16 bits
                                 * of its generation << 16 | resets << 8
                                 * | 0x80 | 1 + the stage it waited on
                                 * (0: none; atomic;
                                 * 32 bits keep the slot in 64 bytes) */
  /* The watchdog's own. */
  unsigned w_resets;
  uint64_t w_gen, w_progress, w_global;
} __attribute__ ((aligned (64)));

/* Per request kind, of the requests that timed a stage. */
#define DL_OCTAVES 64           /* powers of 2 of microseconds */
struct dl_lat {
  /* ns per octave of the total (log2 (us | 1)): [s] the time of stage
   * s (OTHER unused: it is the rest), [FTL_STAGE__MAX] the total of
   * every request in the octave (the fast path's one add).
   */
  uint64_t split[DL_OCTAVES][FTL_STAGE__MAX + 1];
  struct dl_hist mixed;         /* totals of the requests that timed a
                                 * stage (the others' are in hist: all
                                 * other) */
  struct dl_hist stage[FTL_STAGE__MAX];   /* non-zero stage times (us);
                                 * a snapshot skips them while mixed is
                                 * empty */
};

struct dl_shard {
  uint64_t progress;            /* pages moved by the media (atomic) */
  int64_t inflight;             /* media operations begun here minus
                                 * those ended here (atomic; the sum
                                 * over the shards is what is in
                                 * flight) */
  uint64_t requests;            /* requests tracked (atomic) */
  struct dl_hist hist[FTL_OP__MAX];     /* totals of the requests that
                                         * timed no stage (the rest:
                                         * lat[].mixed) */
  struct dl_lat lat[FTL_OP__MAX];
  /* Timing model: requests that waited for it, their host stalls. */
  uint64_t modeled, stall_ns;
  struct dl_hist stall;
} __attribute__ ((aligned (64)));

struct deadline {
  uint64_t timeout_ns;          /* 0: no tracking */
  unsigned retries;
  struct dl_slot *slots;
  struct fault *fault;          /* reply delays */
  struct ftl_logger logger;
  int (*probe) (void *opaque);  /* does the media answer? 0 if so */
  void *probe_opaque;

  struct dl_shard *shards;       /* FTL_SHARDS of them */
  void *shards_mem;              /* their allocation */
  uint64_t slow_ns;             /* slow log threshold; UINT64_MAX: off */
  bool stalled __attribute__ ((aligned (64)));

  uint64_t ctr[6];              /* (requests: in the shards), expired,
                                 * handled, reset, aborted, abort_all
                                 * (atomic) */
  uint64_t rejected;            /* failed at once while stalled */

  /* With the timing model: the host work that the model did not cover,
   * done by any thread of the handle (dl_host_work, dl_host_late; ns,
   * atomic): what a request that waited for another thread may have
   * waited for (dl_wait_begin).
   */
  uint64_t host_ns __attribute__ ((aligned (64)));

  /* The slow-request ring (slow_lock; empty without a slow log). */
  pthread_mutex_t slow_lock;
  pthread_cond_t slow_cond;
  struct ftl_slow_request *slow;  /* FTL_SLOW_RING, or NULL */
  unsigned slow_head, slow_count;
  uint64_t slow_kept, slow_dropped;

  /* The watchdog thread. */
  pthread_t thread;
  bool running, stop;
  pthread_mutex_t lock;
  pthread_cond_t cond;
};

enum { DLC_REQUESTS, DLC_EXPIRED, DLC_HANDLED, DLC_RESET, DLC_ABORTED,
       DLC_ABORT_ALL };

struct dl_ticket {
  struct dl_slot *slot;         /* NULL: not tracked */
  uint64_t gen;
  uint64_t ticks;               /* clock_ticks at dl_begin (the total's
                                 * one clock read each side) */
  unsigned op;
  unsigned flags;               /* for the slow log: */
  uint64_t offset, count;
};

extern int dl_init (struct deadline *dl, uint64_t timeout_ns,
                    unsigned retries, struct fault *fault,
                    ftl_log_fn log, void *log_opaque);
extern void dl_free (struct deadline *dl);

/* Keep the requests of at least threshold_ns, and those the watchdog
 * resets or aborts, for dl_slow_fetch.  Before any request.  Returns 0
 * or -ENOMEM.
 */
extern int dl_slow_init (struct deadline *dl, uint64_t threshold_ns);
/* Up to max of them, oldest first, waiting up to wait_ns for one. */
extern unsigned dl_slow_fetch (struct deadline *dl,
                               struct ftl_slow_request *out, unsigned max,
                               uint64_t wait_ns);

/* Time a stage of the request this thread serves (see above): returns
 * a token for dl_stage_end, 0 if the stage is not timed.  The _at
 * forms take the time the caller has just read.
 */
extern uint64_t dl_stage_begin (enum ftl_stage s);
extern uint64_t dl_stage_begin_at (enum ftl_stage s, uint64_t now);
extern void dl_stage_end (uint64_t t0);
extern void dl_stage_end_at (uint64_t t0, uint64_t now);

/* media.c: the backing file's own read or write, which began at t0
 * (clock_ticks), is timed as the media stage of the request this thread
 * serves (nothing if none is, or if a stage of it is being timed, which
 * owns the span):
 *
 *   t = clock_ticks ();  pread or pwrite;  dl_io_end (t);
 *
 * Two reads of the tick counter (util/clock.h: one instruction each
 * where it is the TSC) and no slot update: the fast path's cost.
 */
extern void dl_io_end (uint64_t t0);

/* With the timing model: the request waits for a modeled end (media.c,
 * every modeled wait).  At its end, the time by which it ended after the
 * latest such end is its host stall: real work that the modeled time
 * did not cover.
 */
extern void dl_model_end (uint64_t end);

/* With the timing model: work of the host that the model does not
 * cover, done by this thread: a sync of the backing file in [t0, t1]
 * (media.c), of which the part after cover (the modeled end of
 * programs this thread issued and will wait for: media_defer) and after
 * the request's latest modeled end is the host's.  If a modeled end
 * follows it, that end's time began after it: it adds to the
 * request's host stall.  If none does, the time after the request's
 * last modeled end already holds it.  It adds to dl->host_ns (dl may
 * be NULL) for the requests that wait for this thread.
 */
extern void dl_host_work (struct deadline *dl, uint64_t t0, uint64_t t1,
                          uint64_t cover);
/* ns of host work by this thread that went on past the modeled end of
 * what it did (a destage batch's writes to the backing file), which
 * requests waiting for it wait too: dl->host_ns only.
 */
extern void dl_host_late (struct deadline *dl, uint64_t ns);
/* The request waited ns for host work of another thread (a hold-up
 * that a modeled end then followed, as for dl_host_work).
 */
extern void dl_host_wait (uint64_t ns);
/* The host work this thread has noted (dl_host_work) since it started,
 * whether or not it served a request.
 */
extern uint64_t dl_host_ns (void);

/* A wait of the request for other threads (a lock, room in the write
 * cache, a free block that another thread's garbage collection makes):
 * the host work of the handle's threads meanwhile (dl->host_ns), less
 * this thread's own, at most the span less its own, is the request's
 * (dl_host_wait).  Outside a request, or without the timing model,
 * nothing.
 */
struct dl_wait {
  uint64_t t0, all, own;
};
extern void dl_wait_begin (struct dl_wait *w);
extern void dl_wait_end (const struct dl_wait *w);

/* A wait for a lock, counted as the queue stage and, for the host
 * work of other threads meanwhile, as host stall (dl_wait_begin).
 */
struct dl_queued {
  struct dl_wait w;
  uint64_t t;
};

static inline void
dl_queued_begin (struct dl_queued *q)
{
  q->t = dl_stage_begin (FTL_STAGE_QUEUE);
  dl_wait_begin (&q->w);
}

static inline void
dl_queued_end (const struct dl_queued *q)
{
  dl_wait_end (&q->w);
  dl_stage_end (q->t);
}

/* Take a lock, a wait for it counted as above. */
static inline void
dl_lock (pthread_mutex_t *m)
{
  if (pthread_mutex_trylock (m) != 0) {
    struct dl_queued q;
    dl_queued_begin (&q);
    pthread_mutex_lock (m);
    dl_queued_end (&q);
  }
}

static inline void
dl_rdlock (pthread_rwlock_t *rw)
{
  if (pthread_rwlock_tryrdlock (rw) != 0) {
    struct dl_queued q;
    dl_queued_begin (&q);
    pthread_rwlock_rdlock (rw);
    dl_queued_end (&q);
  }
}

static inline void
dl_wrlock (pthread_rwlock_t *rw)
{
  if (pthread_rwlock_trywrlock (rw) != 0) {
    struct dl_queued q;
    dl_queued_begin (&q);
    pthread_rwlock_wrlock (rw);
    dl_queued_end (&q);
  }
}

/* Register a request.  Returns 0, or -ETIMEDOUT while the media is
 * stalled (the request must fail at once, without doing anything).
 */
extern int dl_begin (struct deadline *dl, enum ftl_op op,
                     struct dl_ticket *t);
/* Release it, record its latency; returns r, or -ETIMEDOUT if the
 * request was aborted.
 */
extern int dl_end (struct deadline *dl, struct dl_ticket *t, int r);
/* The current request changed the map: from now on it is not
 * interrupted (see above).
 */
extern void dl_commit (void);

/* Work done on behalf of everybody (garbage collection run by a
 * writer) is not interrupted by the abort of the request that runs it,
 * only by a stall of the media: between dl_hold and dl_release (which
 * nest) the thread's request is aborted only at its end.
 */
extern void dl_hold (void);
extern void dl_release (void);

/* media.c: an operation starts, progresses by n pages, ends. */
extern void dl_media_begin (struct deadline *dl);
extern void dl_progress (struct deadline *dl, uint64_t n);
extern void dl_media_end (struct deadline *dl);
/* Media operations in flight (the sum over the shards). */
extern int64_t dl_inflight (struct deadline *dl);
/* True if the current operation must give up now: its request was
 * aborted (and has not committed), or the media is stalled.
 */
extern bool dl_should_abort (struct deadline *dl);

/* The earliest deadline (CLOCK_MONOTONIC ns) among the requests that
 * are still running, or UINT64_MAX if there is none (or no tracking).
 * For garbage collection, which asks between slices of its work: it
 * reads the slots, and adds nothing to the request path.
 */
extern uint64_t dl_earliest (struct deadline *dl);

/* The watchdog thread (nothing happens if timeout_ns is 0). */
extern int dl_start (struct deadline *dl, int (*probe) (void *),
                     void *probe_opaque);
extern void dl_stop (struct deadline *dl);

/* Fill the deadline and latency members of st. */
extern void dl_get_stats (struct deadline *dl, struct ftl_stats *st);

#endif /* FTL_DEADLINE_H */
