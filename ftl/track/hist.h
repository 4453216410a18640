/* nbdkit-ftl: the log-scale histograms of the deadline tracker.
 *
 * Owns struct dl_hist: counts of microsecond values in buckets, 8 per
 * power of 2 (DL_HIST_SUB_BITS), so that a percentile is reported
 * within 12.5%, and the largest value seen.  Adding is one relaxed
 * atomic add (the count is the buckets' sum) and, for a new maximum, a
 * compare-and-swap: any thread may add at any time.  Reading (count,
 * quantiles, merge, the statistics' power-of-2 buckets) reads each
 * bucket once, relaxed: a snapshot taken while values are added is
 * within the values added meanwhile.  No lock.
 */

#ifndef FTL_HIST_H
#define FTL_HIST_H

#include <stdbool.h>
#include <stdint.h>

#include "util/util.h"

#define DL_HIST_SUB_BITS 3
#define DL_HIST_BUCKETS (64 << DL_HIST_SUB_BITS)

struct dl_hist {
  uint64_t b[DL_HIST_BUCKETS];  /* the count is their sum: one atomic
                                 * add per value, not two */
  uint64_t max;
};

/* The bucket of value v. */
static inline unsigned
dl_hist_index (uint64_t v)
{
  unsigned e;

  if (v < (1u << DL_HIST_SUB_BITS))
    return v;
  e = log2_u64 (v);
  return (e << DL_HIST_SUB_BITS)
    | ((v >> (e - DL_HIST_SUB_BITS)) & ((1u << DL_HIST_SUB_BITS) - 1));
}

static inline void
dl_hist_add (struct dl_hist *h, uint64_t v)
{
  uint64_t m = __atomic_load_n (&h->max, __ATOMIC_RELAXED);

  __atomic_fetch_add (&h->b[dl_hist_index (v)], 1, __ATOMIC_RELAXED);
  while (v > m &&
         !__atomic_compare_exchange_n (&h->max, &m, v, true,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
}

/* The largest value that falls in bucket i. */
extern uint64_t dl_hist_bucket_max (unsigned i);
/* The number of values added; whether there is one. */
extern uint64_t dl_hist_count (const struct dl_hist *h);
extern bool dl_hist_any (const struct dl_hist *h);
/* Add src's values to dst (dst is not shared). */
extern void dl_hist_merge (struct dl_hist *dst, const struct dl_hist *src);
/* The q-quantile (0 < q <= 1), never above the maximum seen. */
extern uint64_t dl_hist_quantile (const struct dl_hist *h, double q);
/* Add the counts to the statistics' power-of-2 buckets out (ftl.h:
 * FTL_LAT_BUCKETS): 0 below 1 us, b for [2^(b-1), 2^b) us.
 */
extern void dl_hist_fold (const struct dl_hist *h, uint64_t *out);

#endif /* FTL_HIST_H */
