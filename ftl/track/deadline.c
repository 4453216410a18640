/* nbdkit-ftl: per-request deadlines and the watchdog.  See deadline.h. */

#include <config.h>

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "track/deadline.h"
#include "track/fault.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/util.h"

/* The media counts as stalled after this long without progress at the
 * least, however short the deadline: on a busy host a thread may wait
 * for a CPU for tens of milliseconds, which is no stall of the file.
 */
#define DL_STALL_MIN_NS (100 * UINT64_C (1000000))

/* The watchdog reads every slot each tick: one cache line each. */
_Static_assert (sizeof (struct dl_slot) == 64, "a slot is one cache line");

enum { S_FREE = 0, S_SETUP = 1, S_ACTIVE = 2, S_DONE = 3, S_ABORTED = 4 };
#define CTL(gen, state) (((gen) << 3) | (state))
#define CTL_GEN(c) ((c) >> 3)
#define CTL_STATE(c) ((unsigned) ((c) & 7))

/* The request this thread is serving (a thread serves one at a time). */
static FTL_TLS struct dl_slot *tls_slot;
static FTL_TLS uint64_t tls_gen;
static FTL_TLS bool tls_committed;
static FTL_TLS unsigned tls_hold;
/* Its stages: a request is being served, the stage being timed (1 +
 * the stage; 0: none), the stages timed so far (bits) and their times.
 * Stages nest (a token of dl_stage_begin holds the outer one).
 */
static FTL_TLS bool tls_req;
static FTL_TLS unsigned tls_timing;
static FTL_TLS uint64_t tls_t0;         /* when its current span began */
static FTL_TLS unsigned tls_mask;
static FTL_TLS uint64_t tls_stage[FTL_STAGE__MAX];
/* With the timing model: the latest modeled end the request waited
 * for (dl_model_end), and its bit in tls_mask.
 */
static FTL_TLS uint64_t tls_model_end;
#define MASK_MODELED (1u << 8)
/* Host work outside the model (dl_host_work, dl_host_wait): the part
 * noted since the latest modeled end (pending: if no modeled end
 * follows, the tail after the latest covers it), and the part that a
 * later modeled end followed (committed: the model's time began after
 * it, so it adds to the host stall).  tls_host_all: this thread's own
 * host work (dl_host_work) ever noted, request or not (the destager's
 * batches and dl_wait_end read it).
 */
static FTL_TLS uint64_t tls_host_pending, tls_host_committed;
static FTL_TLS uint64_t tls_host_all;
static FTL_TLS struct deadline *tls_dl;  /* the request's tracker */
#define MASK_STAGES ((1u << FTL_STAGE_OTHER) - 1)

static inline struct dl_shard *
my_shard (struct deadline *dl)
{
  return &dl->shards[ftl_shard ()];
}

/* The sums over the shards. */
static uint64_t
sum_progress (struct deadline *dl)
{
  return ftl_shard_sum (&dl->shards[0].progress, sizeof dl->shards[0]);
}

int64_t
dl_inflight (struct deadline *dl)
{
  /* Each shard's count may be negative (an operation ended on another
   * thread than began it); the sum wraps back to the true total.
   */
  return (int64_t) ftl_shard_sum ((const uint64_t *) &dl->shards[0].inflight,
                                  sizeof dl->shards[0]);
}

static const char *const op_names[FTL_OP__MAX] = {
  [FTL_OP_READ] = "read", [FTL_OP_WRITE] = "write", [FTL_OP_TRIM] = "trim",
  [FTL_OP_FLUSH] = "flush", [FTL_OP_EXTENTS] = "extents",
};

const char *
ftl_op_name (enum ftl_op op)
{
  return op < FTL_OP__MAX ? op_names[op] : "unknown";
}

static const char *const stage_names[FTL_STAGE__MAX] = {
  [FTL_STAGE_QUEUE] = "queue", [FTL_STAGE_CACHE] = "cache",
  [FTL_STAGE_GC] = "gc", [FTL_STAGE_MEDIA] = "media",
  [FTL_STAGE_SYNC] = "sync", [FTL_STAGE_OTHER] = "other",
};

const char *
ftl_stage_name (enum ftl_stage s)
{
  return s < FTL_STAGE__MAX ? stage_names[s] : "unknown";
}

/* ---- the tracker ---- */

#define dl_log(dl, level, ...) ftl_log (&(dl)->logger, (level), __VA_ARGS__)

static inline void
ctr_inc (struct deadline *dl, unsigned c)
{
  __atomic_fetch_add (&dl->ctr[c], 1, __ATOMIC_RELAXED);
}

int
dl_init (struct deadline *dl, uint64_t timeout_ns, unsigned retries,
         struct fault *fault, ftl_log_fn log, void *log_opaque)
{
  pthread_condattr_t ca;

  memset (dl, 0, sizeof *dl);
  clock_ticks_init ();
  dl->timeout_ns = timeout_ns;
  dl->retries = retries;
  dl->fault = fault;
  dl->logger = (struct ftl_logger) { .fn = log, .opaque = log_opaque };
  pthread_mutex_init (&dl->lock, NULL);
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&dl->cond, &ca);
  pthread_cond_init (&dl->slow_cond, &ca);
  pthread_condattr_destroy (&ca);
  pthread_mutex_init (&dl->slow_lock, NULL);
  dl->slow_ns = UINT64_MAX;
  /* A few MiB, most of which stays untouched (the histograms of the
   * stages of slow requests): calloc maps zero pages; aligned by hand.
   */
  dl->shards_mem = calloc (1, FTL_SHARDS * sizeof *dl->shards + 64);
  if (!dl->shards_mem)
    return -ENOMEM;
  dl->shards = (struct dl_shard *)
    (((uintptr_t) dl->shards_mem + 63) & ~(uintptr_t) 63);
  if (timeout_ns) {
    dl->slots = aligned_alloc (64, DL_SLOTS * sizeof *dl->slots);
    if (!dl->slots)
      return -ENOMEM;
    memset (dl->slots, 0, DL_SLOTS * sizeof *dl->slots);
  }
  return 0;
}

void
dl_free (struct deadline *dl)
{
  dl_stop (dl);
  free (dl->slots);
  free (dl->shards_mem);
  free (dl->slow);
  dl->slots = NULL;
  dl->shards = NULL;
  dl->shards_mem = NULL;
  dl->slow = NULL;
  pthread_mutex_destroy (&dl->lock);
  pthread_cond_destroy (&dl->cond);
  pthread_mutex_destroy (&dl->slow_lock);
  pthread_cond_destroy (&dl->slow_cond);
}

int
dl_begin (struct deadline *dl, enum ftl_op op, struct dl_ticket *t)
{
  unsigned start;

  t->slot = NULL;
  t->op = op;
  t->ticks = clock_ticks ();
  tls_slot = NULL;
  tls_committed = false;
  tls_req = true;
  tls_dl = dl;
  if (!dl->timeout_ns)
    return 0;
  if (__atomic_load_n (&dl->stalled, __ATOMIC_ACQUIRE)) {
    __atomic_fetch_add (&dl->rejected, 1, __ATOMIC_RELAXED);
    tls_req = false;
    return -ETIMEDOUT;
  }

  /* A slot near one derived from the thread: threads seldom collide. */
  start = ((uintptr_t) pthread_self () >> 6) * 0x9E3779B1u % DL_SLOTS;
  for (unsigned i = 0; i < DL_SLOTS; i++) {
    struct dl_slot *s = &dl->slots[(start + i) % DL_SLOTS];
    uint64_t c = __atomic_load_n (&s->ctl, __ATOMIC_RELAXED);
    if (CTL_STATE (c) != S_FREE)
      continue;
    uint64_t gen = CTL_GEN (c) + 1;
    if (!__atomic_compare_exchange_n (&s->ctl, &c, CTL (gen, S_SETUP), false,
                                      __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
      continue;
    __atomic_store_n (&s->op, op, __ATOMIC_RELAXED);
    __atomic_store_n (&s->stage, 0, __ATOMIC_RELAXED);
    __atomic_store_n (&s->progress, 0, __ATOMIC_RELAXED);
    __atomic_store_n (&s->deadline, clock_now () + dl->timeout_ns,
                      __ATOMIC_RELAXED);
    __atomic_store_n (&s->ctl, CTL (gen, S_ACTIVE), __ATOMIC_RELEASE);
    t->slot = s;
    t->gen = gen;
    tls_slot = s;
    tls_gen = gen;
    __atomic_fetch_add (&my_shard (dl)->requests, 1, __ATOMIC_RELAXED);
    return 0;
  }
  /* More requests in flight than slots: this one goes untracked. */
  return 0;
}

/* The octave of a total in microseconds: its split row. */
static inline unsigned
octave (uint64_t us)
{
  return log2_u64 (us | 1);
}

/* Copy a request into the slow ring (dropped if it is full). */
static void
slow_keep (struct deadline *dl, const struct dl_ticket *t, int r,
           uint64_t total, bool aborted, uint64_t flag)
{
  struct ftl_slow_request q = {
    .op = t->op, .offset = t->offset, .count = t->count,
    .flags = t->flags, .result = r, .total_ns = total,
    .aborted = aborted, .waiting_on = -1,
  };
  struct timespec ts;
  uint64_t other = total;

  clock_gettime (CLOCK_REALTIME, &ts);
  q.time_ns = (uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
  for (unsigned i = 0; i < FTL_STAGE_OTHER; i++)
    if (tls_mask & (1u << i)) {
      q.stage_ns[i] = MIN (tls_stage[i], other);
      other -= q.stage_ns[i];
    }
  q.stage_ns[FTL_STAGE_OTHER] = other;
  if (flag) {
    q.resets = (flag >> 8) & 0xff;
    q.waiting_on = (int) (flag & 0x7f) - 1;
  }
  pthread_mutex_lock (&dl->slow_lock);
  if (dl->slow_count == FTL_SLOW_RING)
    dl->slow_dropped++;
  else {
    dl->slow[(dl->slow_head + dl->slow_count) % FTL_SLOW_RING] = q;
    dl->slow_count++;
    dl->slow_kept++;
    pthread_cond_signal (&dl->slow_cond);
  }
  pthread_mutex_unlock (&dl->slow_lock);
}

/* The end of a request that timed a stage, or is slow, or was reset or
 * aborted: its stages into the histograms, itself into the slow ring.
 */
static void
end_slow (struct deadline *dl, struct dl_shard *sh, const struct dl_ticket *t,
          int r, uint64_t total, bool aborted, uint64_t flag)
{
  struct dl_lat *l = &sh->lat[t->op];
  uint64_t us = total / 1000, other = total;
  unsigned o = octave (us);

  if (tls_mask & MASK_MODELED) {
    /* Host stall: how long after its last modeled end it ended, and
     * the host's work (syncs, waits for it) that a later modeled end
     * followed.  With no modeled end, its host work alone.
     */
    uint64_t stall = tls_host_committed;
    if (tls_model_end) {
      uint64_t done = clock_now ();
      stall += done > tls_model_end ? done - tls_model_end : 0;
    }
    else
      stall += tls_host_pending;
    tls_host_pending = tls_host_committed = 0;
    __atomic_fetch_add (&sh->modeled, 1, __ATOMIC_RELAXED);
    if (stall > 0) {
      dl_hist_add (&sh->stall, stall / 1000);
      __atomic_fetch_add (&sh->stall_ns, stall, __ATOMIC_RELAXED);
    }
    tls_model_end = 0;
  }
  if (tls_mask & MASK_STAGES) {
    /* Its total in mixed, not in hist: each request is in one. */
    dl_hist_add (&l->mixed, us);
    for (unsigned m = tls_mask & MASK_STAGES; m; m &= m - 1) {
      unsigned i = __builtin_ctz (m);
      /* Within the total (a span in converted ticks may round up). */
      uint64_t v = MIN (tls_stage[i], other);
      other -= v;
      dl_hist_add (&l->stage[i], v / 1000);
      __atomic_fetch_add (&l->split[o][i], v, __ATOMIC_RELAXED);
    }
    if (other > 0)
      dl_hist_add (&l->stage[FTL_STAGE_OTHER], other / 1000);
  }
  else
    dl_hist_add (&sh->hist[t->op], us);
  if (dl->slow && (total >= dl->slow_ns || aborted || flag))
    slow_keep (dl, t, r, total, aborted, flag);
  if (tls_mask & MASK_STAGES)
    for (unsigned i = 0; i < FTL_STAGE_OTHER; i++)
      tls_stage[i] = 0;
  tls_mask = 0;
}

int
dl_end (struct deadline *dl, struct dl_ticket *t, int r)
{
  struct dl_slot *s = t->slot;
  uint64_t delay, flag = 0, total, us;
  bool aborted = false;
  struct dl_shard *sh;

  tls_slot = NULL;
  tls_committed = false;
  tls_req = false;
  tls_timing = 0;               /* (every stage has ended: a safeguard) */
  if (s) {
    uint64_t c = CTL (t->gen, S_ACTIVE);
    if (!__atomic_compare_exchange_n (&s->ctl, &c, CTL (t->gen, S_DONE),
                                      false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
      /* The watchdog aborted it first: the reply is the timeout. */
      r = -ETIMEDOUT;
      aborted = true;
      __atomic_store_n (&s->ctl, CTL (t->gen, S_DONE), __ATOMIC_RELEASE);
    }
    flag = __atomic_load_n (&s->w_flag, __ATOMIC_ACQUIRE);
    if ((flag >> 16) != (t->gen & 0xffff))
      flag = 0;                 /* of an earlier request in the slot */
  }
  /* An injected slow reply: the work is done, the slot still held. */
  if (dl->fault && (delay = fault_reply_delay (dl->fault)) > 0)
    clock_sleep_until (clock_now () + delay);
  if (s)
    __atomic_store_n (&s->ctl, CTL (t->gen, S_FREE), __ATOMIC_RELEASE);
  total = clock_ticks_ns (clock_ticks () - t->ticks);
  us = total / 1000;
  sh = my_shard (dl);
  unsigned oct = octave (us);
  __atomic_fetch_add (&sh->lat[t->op].split[oct][FTL_STAGE__MAX],
                      total, __ATOMIC_RELAXED);
  if (__builtin_expect (total >= dl->slow_ns || flag || aborted, 0))
    end_slow (dl, sh, t, r, total, aborted, flag);
  else if (tls_mask == 0)
    dl_hist_add (&sh->hist[t->op], us);
  else if (tls_mask == 1u << FTL_STAGE_MEDIA) {
    /* Only the backing file's I/O (the common request): end_slow's
     * work for that one stage.
     */
    struct dl_lat *l = &sh->lat[t->op];
    uint64_t m = MIN (tls_stage[FTL_STAGE_MEDIA], total);
    dl_hist_add (&l->mixed, us);
    dl_hist_add (&l->stage[FTL_STAGE_MEDIA], m / 1000);
    __atomic_fetch_add (&l->split[oct][FTL_STAGE_MEDIA], m,
                        __ATOMIC_RELAXED);
    if (total > m)
      dl_hist_add (&l->stage[FTL_STAGE_OTHER], (total - m) / 1000);
    tls_stage[FTL_STAGE_MEDIA] = 0;
    tls_mask = 0;
  }
  else
    end_slow (dl, sh, t, r, total, aborted, flag);
  return r;
}

/* Which of two nested stages owns the inner span: the higher.  GC is
 * the reason for whatever waits on it; a sync or a full cache, for the
 * programs and lock waits they contain; the media, least.
 */
static const unsigned char stage_rank[FTL_STAGE__MAX] = {
  [FTL_STAGE_MEDIA] = 1, [FTL_STAGE_QUEUE] = 2, [FTL_STAGE_CACHE] = 3,
  [FTL_STAGE_SYNC] = 4, [FTL_STAGE_GC] = 5,
};

static void
charge (unsigned st, uint64_t from, uint64_t now)
{
  if (now > from) {
    tls_stage[st] += now - from;
    tls_mask |= 1u << st;
  }
}

uint64_t
dl_stage_begin_at (enum ftl_stage st, uint64_t now)
{
  unsigned cur = tls_timing;

  if (!tls_req || (cur && stage_rank[st] <= stage_rank[cur - 1]))
    return 0;
  /* The outer stage, if any, pauses: its span so far is charged. */
  if (cur)
    charge (cur - 1, tls_t0, now);
  tls_timing = 1 + st;
  tls_t0 = now;
  if (tls_slot)
    __atomic_store_n (&tls_slot->stage, 1 + st, __ATOMIC_RELAXED);
  return 1 << 16 | cur << 8 | (1 + st);
}

void
dl_model_end (uint64_t end)
{
  if (!tls_req)
    return;
  tls_mask |= MASK_MODELED;
  if (end > tls_model_end)
    tls_model_end = end;
  /* The model's time of this end began after the host work noted so
   * far (the model schedules from the time it is asked): not covered.
   */
  tls_host_committed += tls_host_pending;
  tls_host_pending = 0;
}

/* The part of [t0, t1] after cover and after the request's latest
 * modeled end.
 */
void
dl_host_work (struct deadline *dl, uint64_t t0, uint64_t t1, uint64_t cover)
{
  uint64_t from = MAX (t0, MAX (cover, tls_model_end));

  if (t1 <= from)
    return;
  tls_host_all += t1 - from;
  if (dl)
    __atomic_fetch_add (&dl->host_ns, t1 - from, __ATOMIC_RELAXED);
  dl_host_wait (t1 - from);
}

void
dl_host_late (struct deadline *dl, uint64_t ns)
{
  if (dl && ns)
    __atomic_fetch_add (&dl->host_ns, ns, __ATOMIC_RELAXED);
}

void
dl_host_wait (uint64_t ns)
{
  if (ns == 0 || !tls_req)
    return;
  tls_mask |= MASK_MODELED;
  tls_host_pending += ns;
}

void
dl_wait_begin (struct dl_wait *w)
{
  w->t0 = 0;
  if (!tls_req || !tls_dl)
    return;
  w->all = __atomic_load_n (&tls_dl->host_ns, __ATOMIC_RELAXED);
  w->own = tls_host_all;
  w->t0 = clock_now ();
}

void
dl_wait_end (const struct dl_wait *w)
{
  if (w->t0 == 0)
    return;
  uint64_t all = __atomic_load_n (&tls_dl->host_ns, __ATOMIC_RELAXED) - w->all;
  uint64_t own = tls_host_all - w->own;
  if (all <= own)
    return;                     /* nobody else's (no model: always) */
  uint64_t span = clock_now () - w->t0;
  if (span > own)
    dl_host_wait (MIN (all - own, span - own));
}

uint64_t
dl_host_ns (void)
{
  return tls_host_all;
}

uint64_t
dl_stage_begin (enum ftl_stage st)
{
  unsigned cur = tls_timing;

  if (!tls_req || (cur && stage_rank[st] <= stage_rank[cur - 1]))
    return 0;
  return dl_stage_begin_at (st, clock_now ());
}

void
dl_stage_end_at (uint64_t token, uint64_t now)
{
  unsigned outer = (token >> 8) & 0xff;

  if (!token || tls_timing != (token & 0xff))
    return;
  charge (tls_timing - 1, tls_t0, now);
  /* The outer stage resumes. */
  tls_timing = outer;
  tls_t0 = now;
  if (tls_slot)
    __atomic_store_n (&tls_slot->stage, outer, __ATOMIC_RELAXED);
}

void
dl_stage_end (uint64_t token)
{
  if (token)
    dl_stage_end_at (token, clock_now ());
}

void
dl_io_end (uint64_t t0)
{
  if (tls_req && !tls_timing) {
    tls_stage[FTL_STAGE_MEDIA] += clock_ticks_ns (clock_ticks () - t0);
    tls_mask |= 1u << FTL_STAGE_MEDIA;
  }
}

int
dl_slow_init (struct deadline *dl, uint64_t threshold_ns)
{
  dl->slow = calloc (FTL_SLOW_RING, sizeof *dl->slow);
  if (!dl->slow)
    return -ENOMEM;
  dl->slow_ns = threshold_ns;
  return 0;
}

unsigned
dl_slow_fetch (struct deadline *dl, struct ftl_slow_request *out,
               unsigned max, uint64_t wait_ns)
{
  unsigned n = 0;

  if (!dl->slow)
    return 0;
  pthread_mutex_lock (&dl->slow_lock);
  if (dl->slow_count == 0 && wait_ns > 0) {
    uint64_t wake = clock_now () + wait_ns;
    struct timespec ts = {
      .tv_sec = wake / 1000000000, .tv_nsec = wake % 1000000000,
    };
    pthread_cond_timedwait (&dl->slow_cond, &dl->slow_lock, &ts);
  }
  for (; n < max && dl->slow_count > 0; n++) {
    out[n] = dl->slow[dl->slow_head];
    dl->slow_head = (dl->slow_head + 1) % FTL_SLOW_RING;
    dl->slow_count--;
  }
  pthread_mutex_unlock (&dl->slow_lock);
  return n;
}

void
dl_commit (void)
{
  tls_committed = true;
}

void
dl_hold (void)
{
  tls_hold++;
}

void
dl_release (void)
{
  tls_hold--;
}

void
dl_media_begin (struct deadline *dl)
{
  if (dl->timeout_ns)
    __atomic_fetch_add (&my_shard (dl)->inflight, 1, __ATOMIC_RELAXED);
}

void
dl_media_end (struct deadline *dl)
{
  if (dl->timeout_ns)
    __atomic_fetch_sub (&my_shard (dl)->inflight, 1, __ATOMIC_RELAXED);
}

void
dl_progress (struct deadline *dl, uint64_t n)
{
  if (!dl->timeout_ns)
    return;
  if (tls_slot)
    __atomic_fetch_add (&tls_slot->progress, n, __ATOMIC_RELAXED);
  __atomic_fetch_add (&my_shard (dl)->progress, n, __ATOMIC_RELAXED);
}

bool
dl_should_abort (struct deadline *dl)
{
  if (!dl->timeout_ns || tls_committed)
    return false;
  if (tls_slot && !tls_hold &&
      __atomic_load_n (&tls_slot->ctl, __ATOMIC_ACQUIRE)
      == CTL (tls_gen, S_ABORTED))
    return true;
  return __atomic_load_n (&dl->stalled, __ATOMIC_ACQUIRE);
}

uint64_t
dl_earliest (struct deadline *dl)
{
  uint64_t best = UINT64_MAX;

  if (!dl->timeout_ns)
    return best;
  /* A slot's deadline is read after seeing it ACTIVE (published with a
   * release store after the deadline).  A slot that changes meanwhile
   * yields a deadline that was true a moment ago: good enough for a
   * hint.
   */
  for (unsigned i = 0; i < DL_SLOTS; i++) {
    struct dl_slot *s = &dl->slots[i];
    uint64_t c = __atomic_load_n (&s->ctl, __ATOMIC_ACQUIRE);
    if (CTL_STATE (c) != S_ACTIVE)
      continue;
    uint64_t when = __atomic_load_n (&s->deadline, __ATOMIC_RELAXED);
    best = MIN (best, when);
  }
  return best;
}

/* ---- the watchdog ---- */

/* Note for the request's end (the slow log) that it was reset or
 * aborted, and the stage it was waiting on.
 */
static void
flag_slot (struct dl_slot *s, uint64_t gen)
{
  uint64_t st = __atomic_load_n (&s->stage, __ATOMIC_RELAXED);

  __atomic_store_n (&s->w_flag, (uint32_t) (gen & 0xffff) << 16
                    | (uint32_t) MIN (s->w_resets, 255) << 8
                    | 0x80 | (st & 0x7f), __ATOMIC_RELEASE);
}

/* Abort a request if it is still running; true if it was. */
static bool
abort_slot (struct deadline *dl, struct dl_slot *s, uint64_t gen)
{
  uint64_t c = CTL (gen, S_ACTIVE);

  flag_slot (s, gen);
  if (!__atomic_compare_exchange_n (&s->ctl, &c, CTL (gen, S_ABORTED), false,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
    return false;
  ctr_inc (dl, DLC_ABORTED);
  return true;
}

/* The timeout handler for one slot past its deadline. */
static void
handle_expired (struct deadline *dl, struct dl_slot *s, uint64_t c,
                uint64_t when, uint64_t now, uint64_t gp)
{
  uint64_t gen = CTL_GEN (c);
  uint64_t p = __atomic_load_n (&s->progress, __ATOMIC_RELAXED);
  bool moved = p != s->w_progress || gp != s->w_global;

  ctr_inc (dl, DLC_EXPIRED);
  s->w_progress = p;
  s->w_global = gp;
  if (CTL_STATE (c) == S_DONE) {
    /* It completed; only its reply is still on the way. */
    ctr_inc (dl, DLC_HANDLED);
    __atomic_compare_exchange_n (&s->deadline, &when, UINT64_MAX, false,
                                 __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return;
  }
  if (moved && s->w_resets < dl->retries) {
    s->w_resets++;
    ctr_inc (dl, DLC_RESET);
    flag_slot (s, gen);
    __atomic_compare_exchange_n (&s->deadline, &when, now + dl->timeout_ns,
                                 false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);
    return;
  }
  __atomic_compare_exchange_n (&s->deadline, &when, UINT64_MAX, false,
                               __ATOMIC_RELAXED, __ATOMIC_RELAXED);
  if (abort_slot (dl, s, gen))
    dl_log (dl, FTL_LOG_WARN, "%s request aborted: no answer within its "
            "deadline (%.3f s, %u reset%s, %s)",
            ftl_op_name (__atomic_load_n (&s->op, __ATOMIC_RELAXED)),
            dl->timeout_ns / 1e9, s->w_resets, s->w_resets == 1 ? "" : "s",
            moved ? "still progressing" : "no progress");
  else if (CTL_STATE (__atomic_load_n (&s->ctl, __ATOMIC_ACQUIRE))
           == S_DONE && CTL_GEN (__atomic_load_n (&s->ctl, __ATOMIC_ACQUIRE))
           == gen)
    ctr_inc (dl, DLC_HANDLED);  /* it completed while we decided */
}

static void
scan (struct deadline *dl, uint64_t now, uint64_t gp)
{
  for (unsigned i = 0; i < DL_SLOTS; i++) {
    struct dl_slot *s = &dl->slots[i];
    uint64_t c = __atomic_load_n (&s->ctl, __ATOMIC_ACQUIRE);
    unsigned st = CTL_STATE (c);
    if (st != S_ACTIVE && st != S_DONE)
      continue;
    if (s->w_gen != CTL_GEN (c)) {
      /* A request we have not seen yet. */
      s->w_gen = CTL_GEN (c);
      s->w_progress = __atomic_load_n (&s->progress, __ATOMIC_RELAXED);
      s->w_global = gp;
      s->w_resets = 0;
    }
    uint64_t when = __atomic_load_n (&s->deadline, __ATOMIC_RELAXED);
    if (now >= when)
      handle_expired (dl, s, c, when, now, gp);
  }
}

static void
abort_all (struct deadline *dl)
{
  unsigned n = 0;

  for (unsigned i = 0; i < DL_SLOTS; i++) {
    struct dl_slot *s = &dl->slots[i];
    uint64_t c = __atomic_load_n (&s->ctl, __ATOMIC_ACQUIRE);
    if (CTL_STATE (c) == S_ACTIVE && abort_slot (dl, s, CTL_GEN (c)))
      n++;
  }
  ctr_inc (dl, DLC_ABORT_ALL);
  dl_log (dl, FTL_LOG_ERROR, "the backing file made no progress for %.3f s: "
          "%u outstanding request%s aborted; new requests fail until it "
          "answers again", MAX (dl->timeout_ns, DL_STALL_MIN_NS) / 1e9, n,
          n == 1 ? "" : "s");
}

static void *
watchdog (void *arg)
{
  struct deadline *dl = arg;
  uint64_t tick = MIN (MAX (dl->timeout_ns / 8, 1000000), 100000000);
  uint64_t last_gp = sum_progress (dl);
  uint64_t idle_since = clock_now ();

  pthread_mutex_lock (&dl->lock);
  while (!dl->stop) {
    uint64_t wake = clock_now () + tick;
    struct timespec ts = {
      .tv_sec = wake / 1000000000, .tv_nsec = wake % 1000000000,
    };
    pthread_cond_timedwait (&dl->cond, &dl->lock, &ts);
    if (dl->stop)
      break;
    pthread_mutex_unlock (&dl->lock);

    uint64_t now = clock_now ();
    uint64_t gp = sum_progress (dl);
    int64_t inflight = dl_inflight (dl);
    bool stalled = __atomic_load_n (&dl->stalled, __ATOMIC_RELAXED);
    bool moved = gp != last_gp;

    last_gp = gp;
    if (stalled) {
      /* Service resumes when an operation completes, or when nothing
       * is in flight and the media answers a probe.
       */
      if (moved || (inflight <= 0 && dl->probe &&
                    dl->probe (dl->probe_opaque) == 0)) {
        __atomic_store_n (&dl->stalled, false, __ATOMIC_RELEASE);
        idle_since = now;
        dl_log (dl, FTL_LOG_WARN, "the backing file answers again: "
                "service resumes");
      }
    }
    else if (moved || inflight <= 0)
      idle_since = now;
    else if (now - idle_since >= MAX (dl->timeout_ns, DL_STALL_MIN_NS)) {
      __atomic_store_n (&dl->stalled, true, __ATOMIC_RELEASE);
      abort_all (dl);
    }
    scan (dl, now, gp);

    pthread_mutex_lock (&dl->lock);
  }
  pthread_mutex_unlock (&dl->lock);
  return NULL;
}

int
dl_start (struct deadline *dl, int (*probe) (void *), void *probe_opaque)
{
  sigset_t all, old;
  int r;

  if (!dl->timeout_ns || dl->running)
    return 0;
  dl->probe = probe;
  dl->probe_opaque = probe_opaque;
  dl->stop = false;
  /* Signals belong to the caller's threads. */
  sigfillset (&all);
  pthread_sigmask (SIG_SETMASK, &all, &old);
  r = pthread_create (&dl->thread, NULL, watchdog, dl);
  pthread_sigmask (SIG_SETMASK, &old, NULL);
  if (r != 0)
    return -r;
  ftl_thread_name (dl->thread, "ftl-watchdog");
  dl->running = true;
  return 0;
}

void
dl_stop (struct deadline *dl)
{
  if (!dl->running)
    return;
  pthread_mutex_lock (&dl->lock);
  dl->stop = true;
  pthread_cond_signal (&dl->cond);
  pthread_mutex_unlock (&dl->lock);
  pthread_join (dl->thread, NULL);
  dl->running = false;
  /* Nobody is left to notice that the media recovers. */
  __atomic_store_n (&dl->stalled, false, __ATOMIC_RELEASE);
}

/* The quantiles, maximum and buckets of a merged histogram. */
#define FILL_HIST(dst, h) do {                          \
    if (((dst)->count = dl_hist_count (h)) == 0)        \
      break;                                            \
    (dst)->p50 = dl_hist_quantile ((h), 0.50);          \
    (dst)->p99 = dl_hist_quantile ((h), 0.99);          \
    (dst)->p999 = dl_hist_quantile ((h), 0.999);        \
    (dst)->max = (h)->max;                              \
    dl_hist_fold ((h), (dst)->buckets);                 \
  } while (0)

/* One kind of request: its histograms merged over the shards, the
 * stages' ("other": the requests that timed nothing, whose total is
 * all other, plus the rest of the others), the split.
 */
static void
op_stats (struct deadline *dl, unsigned op, struct ftl_latency *out)
{
  static const double qs[3] = { 0.50, 0.99, 0.999 };
  struct dl_hist *h = calloc (2 + FTL_STAGE__MAX, sizeof *h);
  struct dl_hist *mixed = h + 1, *stage = h + 2;
  uint64_t split[DL_OCTAVES][FTL_STAGE__MAX + 1] = { { 0 } };

  memset (out, 0, sizeof *out);
  if (h == NULL)
    return;
  for (unsigned i = 0; i < FTL_SHARDS; i++) {
    const struct dl_lat *l = &dl->shards[i].lat[op];
    dl_hist_merge (h, &dl->shards[i].hist[op]);
    /* Has a request timed a stage here (a look at the buckets, not a
     * flag for the request path to set)?  One that ends meanwhile may
     * be half in the snapshot: its total is in mixed first.
     */
    bool any = dl_hist_any (&l->mixed);
    for (unsigned o = 0; o < DL_OCTAVES; o++)
      for (unsigned s = any ? 0 : FTL_STAGE__MAX; s <= FTL_STAGE__MAX; s++)
        split[o][s] += __atomic_load_n (&l->split[o][s], __ATOMIC_RELAXED);
    if (!any)
      continue;
    dl_hist_merge (mixed, &l->mixed);
    for (unsigned s = 0; s < FTL_STAGE__MAX; s++)
      dl_hist_merge (&stage[s], &l->stage[s]);
  }
  /* The requests that timed no stage (hist): all other.  The total
   * histogram is theirs and the others' (mixed).
   */
  dl_hist_merge (&stage[FTL_STAGE_OTHER], h);
  dl_hist_merge (h, mixed);
  FILL_HIST (out, h);
  for (unsigned s = 0; s < FTL_STAGE__MAX; s++)
    FILL_HIST (&out->stage[s], &stage[s]);
  for (unsigned o = 0; o < DL_OCTAVES; o++) {
    uint64_t timed = 0;
    out->sum_ns += split[o][FTL_STAGE__MAX];
    for (unsigned s = 0; s < FTL_STAGE_OTHER; s++) {
      out->stage[s].sum_ns += split[o][s];
      timed += split[o][s];
    }
    split[o][FTL_STAGE_OTHER] = split[o][FTL_STAGE__MAX]
      - MIN (timed, split[o][FTL_STAGE__MAX]);
    out->stage[FTL_STAGE_OTHER].sum_ns += split[o][FTL_STAGE_OTHER];
  }
  for (unsigned q = 0; q < 3; q++) {
    unsigned o = octave (dl_hist_quantile (h, qs[q]));
    double t = split[o][FTL_STAGE__MAX];
    for (unsigned s = 0; s < FTL_STAGE__MAX; s++)
      out->split[q][s] = t > 0 ? split[o][s] / t : 0;
  }
  free (h);
}

/* The host stalls of the requests under the timing model. */
static void
stall_stats (struct deadline *dl, struct ftl_host_stall *out)
{
  struct dl_hist *h = calloc (1, sizeof *h);

  memset (out, 0, sizeof *out);
  for (unsigned i = 0; i < FTL_SHARDS; i++) {
    out->requests += __atomic_load_n (&dl->shards[i].modeled,
                                      __ATOMIC_RELAXED);
    out->sum_ns += __atomic_load_n (&dl->shards[i].stall_ns,
                                    __ATOMIC_RELAXED);
    if (h && __atomic_load_n (&dl->shards[i].modeled, __ATOMIC_RELAXED))
      dl_hist_merge (h, &dl->shards[i].stall);
  }
  if (h)
    FILL_HIST (out, h);
  free (h);
}

void
dl_get_stats (struct deadline *dl, struct ftl_stats *st)
{
  st->deadline.timeout_ns = dl->timeout_ns;
  st->deadline.retries = dl->retries;
  st->deadline.requests = ftl_shard_sum (&dl->shards[0].requests,
                                         sizeof dl->shards[0]);
  st->deadline.expired = __atomic_load_n (&dl->ctr[DLC_EXPIRED],
                                          __ATOMIC_RELAXED);
  st->deadline.handled = __atomic_load_n (&dl->ctr[DLC_HANDLED],
                                          __ATOMIC_RELAXED);
  st->deadline.reset = __atomic_load_n (&dl->ctr[DLC_RESET],
                                        __ATOMIC_RELAXED);
  st->deadline.aborted = __atomic_load_n (&dl->ctr[DLC_ABORTED],
                                          __ATOMIC_RELAXED);
  st->deadline.abort_all = __atomic_load_n (&dl->ctr[DLC_ABORT_ALL],
                                            __ATOMIC_RELAXED);
  st->deadline.rejected = __atomic_load_n (&dl->rejected, __ATOMIC_RELAXED);
  st->deadline.stalled = __atomic_load_n (&dl->stalled, __ATOMIC_RELAXED);
  pthread_mutex_lock (&dl->slow_lock);
  st->slow.slow = dl->slow_kept;
  st->slow.dropped = dl->slow_dropped;
  pthread_mutex_unlock (&dl->slow_lock);
  st->slow.threshold_ns = dl->slow ? dl->slow_ns : 0;
  for (unsigned op = 0; op < FTL_OP__MAX; op++)
    op_stats (dl, op, &st->latency[op]);
  stall_stats (dl, &st->host_stall);
}
