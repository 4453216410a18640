/* nbdkit-ftl: small helpers shared by the FTL modules. */

#ifndef FTL_UTIL_H
#define FTL_UTIL_H

#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define ROUND_UP(n, d) (DIV_ROUND_UP ((n), (d)) * (d))
#define ROUND_DOWN(n, d) (((n) / (d)) * (d))

/* A thread-local variable of the library.  initial-exec: one access
 * is one instruction relative to the thread pointer, not a call to
 * __tls_get_addr, which the read path would pay several times per
 * request.  The library's thread-locals total a few dozen bytes, well
 * inside the static TLS space glibc keeps for a plugin that nbdkit
 * loads with dlopen.
 */
#define FTL_TLS __thread __attribute__ ((tls_model ("initial-exec")))

/* Per-thread shards.  A counter that every request changes, kept as
 * one word, makes threads on different CPUs pass its cache line back
 * and forth on every request.  Such counters are kept as FTL_SHARDS
 * copies instead, each group on its own cache lines: a thread takes a
 * shard round robin at its first use and keeps it (threads beyond
 * FTL_SHARDS share, so the copies are still changed atomically), and
 * readers add the copies up.  The assignment is per thread, not per
 * handle: it says nothing about any one FTL.
 */
#define FTL_SHARDS 16

extern FTL_TLS unsigned ftl_tls_shard;  /* 1 + the shard; 0: none yet */
extern unsigned ftl_shard_assign (void);

static inline unsigned
ftl_shard (void)
{
  unsigned i = ftl_tls_shard;

  return i ? i - 1 : ftl_shard_assign ();
}

/* The sum of a counter's copies: the first at first, the next ones
 * stride bytes apart.
 */
static inline uint64_t
ftl_shard_sum (const uint64_t *first, size_t stride)
{
  const char *p = (const char *) first;
  uint64_t n = 0;

  for (unsigned i = 0; i < FTL_SHARDS; i++, p += stride)
    n += __atomic_load_n ((const uint64_t *) p, __ATOMIC_RELAXED);
  return n;
}

/* Name thread t (at most 15 bytes), so that top -H, ps -L and perf
 * show the library's threads apart from nbdkit's workers.  Called by
 * the creator right after pthread_create: the name is there once the
 * function that starts the thread returns, whether or not the thread
 * has run yet.
 */
extern void ftl_thread_name (pthread_t t, const char *name);

#ifndef MIN
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#endif
#ifndef MAX
#define MAX(a, b) ((a) > (b) ? (a) : (b))
#endif

/* Branches that "cannot" happen but are handled anyway (after SQLite):
 * in debug builds they assert, in release builds they return the value.
 */
#ifdef NDEBUG
#define ALWAYS(x) (x)
#define NEVER(x) (x)
#else
#include <assert.h>
#define ALWAYS(x) ((x) ? 1 : (assert (0), 0))
#define NEVER(x) ((x) ? (assert (0), 1) : 0)
#endif

/* Little-endian integers in byte buffers, as every structure of the
 * on-disk format (format.h) stores them, whatever the host's order.
 */
static inline void
put16le (uint8_t *p, uint16_t v)
{
  p[0] = v;
  p[1] = v >> 8;
}

static inline void
put32le (uint8_t *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = v >> (8 * i);
}

static inline void
put64le (uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = v >> (8 * i);
}

static inline uint16_t
get16le (const uint8_t *p)
{
  return p[0] | (uint16_t) p[1] << 8;
}

static inline uint32_t
get32le (const uint8_t *p)
{
  return p[0] | (uint32_t) p[1] << 8 | (uint32_t) p[2] << 16
    | (uint32_t) p[3] << 24;
}

static inline uint64_t
get64le (const uint8_t *p)
{
  return get32le (p) | (uint64_t) get32le (p + 4) << 32;
}

/* True if the n bytes at p are all zero (never written, or erased). */
static inline bool
all_zero (const void *p, size_t n)
{
  const uint8_t *b = p;

  for (size_t i = 0; i < n; i++)
    if (b[i])
      return false;
  return true;
}

static inline bool
is_power_of_2 (uint64_t v)
{
  return v && (v & (v - 1)) == 0;
}

static inline unsigned
log2_u64 (uint64_t v)
{
  return 63 - __builtin_clzll (v);
}

/* *p = max (*p, v), atomically; a store that raises it is seq_cst. */
static inline void
atomic_max_u64 (uint64_t *p, uint64_t v)
{
  uint64_t cur = __atomic_load_n (p, __ATOMIC_RELAXED);
  while (cur < v &&
         !__atomic_compare_exchange_n (p, &cur, v, true, __ATOMIC_SEQ_CST,
                                       __ATOMIC_RELAXED))
    ;
}

/* Zeroed memory whose pages are allocated only when first written: an
 * anonymous mapping (never NULL for 0 bytes).  Reading an untouched
 * page takes no memory.  ftl_lazy_zero gives the pages back (they read
 * as zeros again).  For the map and the checkpoint buffers, whose
 * memory must follow the data they hold, not their size.
 */
extern void *ftl_lazy_alloc (uint64_t bytes);
extern void ftl_lazy_free (void *p, uint64_t bytes);
extern void ftl_lazy_zero (void *p, uint64_t bytes);
/* Give the pages of [p, p + bytes) memory now (they read as they did),
 * so that writing them later takes no page fault: for a copy that
 * others wait on.  Best effort.
 */
extern void ftl_lazy_populate (void *p, uint64_t bytes);

#endif /* FTL_UTIL_H */
