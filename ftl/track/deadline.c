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

enum { S_FREE = 0, S_SETUP = 1, S_ACTIVE = 2, S_DONE = 3, S_ABORTED = 4 };
#define CTL(gen, state) (((gen) << 3) | (state))
#define CTL_GEN(c) ((c) >> 3)
#define CTL_STATE(c) ((unsigned) ((c) & 7))

/* The request this thread is serving (a thread serves one at a time). */
static FTL_TLS struct dl_slot *tls_slot;
static FTL_TLS uint64_t tls_gen;
static FTL_TLS bool tls_committed;
static FTL_TLS unsigned tls_hold;

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

/* ---- histograms ---- */

unsigned
dl_hist_index (uint64_t v)
{
  unsigned e;

  if (v < (1u << DL_HIST_SUB_BITS))
    return v;
  e = log2_u64 (v);
  return (e << DL_HIST_SUB_BITS)
    | ((v >> (e - DL_HIST_SUB_BITS)) & ((1u << DL_HIST_SUB_BITS) - 1));
}

uint64_t
dl_hist_bucket_max (unsigned i)
{
  unsigned e = i >> DL_HIST_SUB_BITS, sub = i & ((1u << DL_HIST_SUB_BITS) - 1);

  if (i < (1u << DL_HIST_SUB_BITS))
    return i;
  if (e < DL_HIST_SUB_BITS)       /* unused indices */
    return (1u << DL_HIST_SUB_BITS) - 1;
  if (e == 63 && sub == (1u << DL_HIST_SUB_BITS) - 1)
    return UINT64_MAX;
  return (((uint64_t) (1u << DL_HIST_SUB_BITS) + sub + 1)
          << (e - DL_HIST_SUB_BITS)) - 1;
}

void
dl_hist_add (struct dl_hist *h, uint64_t v)
{
  uint64_t m = __atomic_load_n (&h->max, __ATOMIC_RELAXED);

  __atomic_fetch_add (&h->b[dl_hist_index (v)], 1, __ATOMIC_RELAXED);
  while (v > m &&
         !__atomic_compare_exchange_n (&h->max, &m, v, true,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
}

uint64_t
dl_hist_count (const struct dl_hist *h)
{
  uint64_t total = 0;

  for (unsigned i = 0; i < DL_HIST_BUCKETS; i++)
    total += __atomic_load_n (&h->b[i], __ATOMIC_RELAXED);
  return total;
}

void
dl_hist_merge (struct dl_hist *dst, const struct dl_hist *src)
{
  uint64_t max = __atomic_load_n (&src->max, __ATOMIC_RELAXED);

  for (unsigned i = 0; i < DL_HIST_BUCKETS; i++)
    dst->b[i] += __atomic_load_n (&src->b[i], __ATOMIC_RELAXED);
  dst->max = MAX (dst->max, max);
}

uint64_t
dl_hist_quantile (const struct dl_hist *h, double q)
{
  uint64_t n = 0, total = dl_hist_count (h), rank;
  uint64_t max = __atomic_load_n (&h->max, __ATOMIC_RELAXED);

  if (total == 0)
    return 0;
  rank = (uint64_t) ceil (q * total);
  rank = MAX (rank, 1);
  for (unsigned i = 0; i < DL_HIST_BUCKETS; i++) {
    n += __atomic_load_n (&h->b[i], __ATOMIC_RELAXED);
    if (n >= rank)
      return MIN (dl_hist_bucket_max (i), max);
  }
  return max;
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
  dl->timeout_ns = timeout_ns;
  dl->retries = retries;
  dl->fault = fault;
  dl->logger = (struct ftl_logger) { .fn = log, .opaque = log_opaque };
  pthread_mutex_init (&dl->lock, NULL);
  pthread_condattr_init (&ca);
  pthread_condattr_setclock (&ca, CLOCK_MONOTONIC);
  pthread_cond_init (&dl->cond, &ca);
  pthread_condattr_destroy (&ca);
  dl->shards = aligned_alloc (64, FTL_SHARDS * sizeof *dl->shards);
  if (!dl->shards)
    return -ENOMEM;
  memset (dl->shards, 0, FTL_SHARDS * sizeof *dl->shards);
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
  free (dl->shards);
  dl->slots = NULL;
  dl->shards = NULL;
  pthread_mutex_destroy (&dl->lock);
  pthread_cond_destroy (&dl->cond);
}

int
dl_begin (struct deadline *dl, enum ftl_op op, struct dl_ticket *t)
{
  unsigned start;

  t->slot = NULL;
  t->op = op;
  t->start = clock_now ();
  tls_slot = NULL;
  tls_committed = false;
  if (!dl->timeout_ns)
    return 0;
  if (__atomic_load_n (&dl->stalled, __ATOMIC_ACQUIRE)) {
    __atomic_fetch_add (&dl->rejected, 1, __ATOMIC_RELAXED);
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
    __atomic_store_n (&s->progress, 0, __ATOMIC_RELAXED);
    __atomic_store_n (&s->deadline, t->start + dl->timeout_ns,
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

int
dl_end (struct deadline *dl, struct dl_ticket *t, int r)
{
  struct dl_slot *s = t->slot;
  uint64_t delay;

  tls_slot = NULL;
  tls_committed = false;
  if (s) {
    uint64_t c = CTL (t->gen, S_ACTIVE);
    if (!__atomic_compare_exchange_n (&s->ctl, &c, CTL (t->gen, S_DONE),
                                      false, __ATOMIC_ACQ_REL,
                                      __ATOMIC_ACQUIRE)) {
      /* The watchdog aborted it first: the reply is the timeout. */
      r = -ETIMEDOUT;
      __atomic_store_n (&s->ctl, CTL (t->gen, S_DONE), __ATOMIC_RELEASE);
    }
  }
  /* An injected slow reply: the work is done, the slot still held. */
  if (dl->fault && (delay = fault_reply_delay (dl->fault)) > 0)
    clock_sleep_until (clock_now () + delay);
  if (s)
    __atomic_store_n (&s->ctl, CTL (t->gen, S_FREE), __ATOMIC_RELEASE);
  dl_hist_add (&my_shard (dl)->hist[t->op],
               (clock_now () - t->start) / 1000);
  return r;
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

/* Abort a request if it is still running; true if it was. */
static bool
abort_slot (struct deadline *dl, struct dl_slot *s, uint64_t gen)
{
  uint64_t c = CTL (gen, S_ACTIVE);

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
  for (unsigned op = 0; op < FTL_OP__MAX; op++) {
    struct dl_hist h = { .max = 0 };
    for (unsigned i = 0; i < FTL_SHARDS; i++)
      dl_hist_merge (&h, &dl->shards[i].hist[op]);
    st->latency[op].count = dl_hist_count (&h);
    st->latency[op].p50 = dl_hist_quantile (&h, 0.50);
    st->latency[op].p99 = dl_hist_quantile (&h, 0.99);
    st->latency[op].p999 = dl_hist_quantile (&h, 0.999);
    st->latency[op].max = h.max;
  }
}
