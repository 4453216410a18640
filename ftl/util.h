/* nbdkit-ftl: small helpers shared by the FTL modules. */

#ifndef FTL_UTIL_H
#define FTL_UTIL_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#define DIV_ROUND_UP(n, d) (((n) + (d) - 1) / (d))
#define ROUND_UP(n, d) (DIV_ROUND_UP ((n), (d)) * (d))
#define ROUND_DOWN(n, d) (((n) / (d)) * (d))

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

#endif /* FTL_UTIL_H */
