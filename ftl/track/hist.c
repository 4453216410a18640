/* nbdkit-ftl: the log-scale histograms of the deadline tracker: reading
 * them (hist.h says what they own).
 */

#include <config.h>

#include <math.h>

#include "ftl.h"
#include "track/hist.h"

bool
dl_hist_any (const struct dl_hist *h)
{
  for (unsigned i = 0; i < DL_HIST_BUCKETS; i++)
    if (__atomic_load_n (&h->b[i], __ATOMIC_RELAXED))
      return true;
  return false;
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

/* Bucket i's power of 2 in the statistics. */
static unsigned
lat_bucket (unsigned i)
{
  if (i < (1u << DL_HIST_SUB_BITS))
    return i ? log2_u64 (i) + 1 : 0;
  return (i >> DL_HIST_SUB_BITS) + 1;
}

void
dl_hist_fold (const struct dl_hist *h, uint64_t *out)
{
  for (unsigned i = 0; i < DL_HIST_BUCKETS; i++) {
    unsigned b = lat_bucket (i);
    if (b < FTL_LAT_BUCKETS)
      out[b] += h->b[i];
  }
}
