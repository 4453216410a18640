/* nbdkit-ftl: the statistics collected (struct ftl_stats).
 *
 * Counters are relaxed atomics bumped on the data path, sharded per
 * thread where every request changes them; this module only reads them
 * and adds the copies up, with what each layer reports of itself (the
 * deadline tracker, the write cache, the paged map, the SLC cache, hot
 * and cold data) and the health log derived from them.  stats.c turns
 * a collection into every output.
 */

#include <config.h>

#include <string.h>

#include "ftl-internal.h"

/* Thousands of 512-byte units, rounded up (NVMe's data units). */
static uint64_t
data_units (uint64_t bytes)
{
  return DIV_ROUND_UP (DIV_ROUND_UP (bytes, 512), 1000);
}

/* The health log from the counters and the wear in st. */
static void
get_health (struct ftl *ftl, const struct ftl_stats *st,
            struct ftl_health *h)
{
  bool worn_out = wl_worn_out (ftl);
  double used = 100.0 * st->erase_mean / ftl->wl.endurance;

  h->available_spare = wl_available_spare (ftl);
  h->available_spare_threshold = FTL_AVAILABLE_SPARE_THRESHOLD;
  used = MIN (used, 255.0);
  h->percentage_used = (uint8_t) used;
  if (worn_out)
    h->percentage_used = MAX (h->percentage_used, 100);
  h->data_units_read = data_units (ctr_get (ftl, FTL_CTR_HOST_READ_BYTES));
  h->data_units_written = data_units (ctr_get (ftl, FTL_CTR_HOST_WRITE_BYTES));
  h->host_read_commands = ctr_get (ftl, FTL_CTR_HOST_READ_CMDS);
  h->host_write_commands = ctr_get (ftl, FTL_CTR_HOST_WRITE_CMDS);
  h->power_cycles = ctr_get (ftl, FTL_CTR_POWER_CYCLES);
  h->unsafe_shutdowns = ctr_get (ftl, FTL_CTR_UNSAFE_SHUTDOWNS);
  h->media_errors = ctr_get (ftl, FTL_CTR_MEDIA_ERRORS);
  h->num_err_log_entries = h->media_errors;
  h->critical_warning = 0;
  if (h->available_spare < h->available_spare_threshold)
    h->critical_warning |= FTL_CW_SPARE;
  if (worn_out || h->media_errors > 0)
    h->critical_warning |= FTL_CW_DEGRADED;
  if (worn_out || ftl->host_full)
    h->critical_warning |= FTL_CW_READ_ONLY;
}

unsigned
ftl_slow_requests (struct ftl *ftl, struct ftl_slow_request *out,
                   unsigned max, uint64_t wait_ns)
{
  return dl_slow_fetch (&ftl->dl, out, max, wait_ns);
}


/* The paged map's counters (pmap.c). */
static void
map_get_stats (struct ftl *ftl, struct ftl_stats *st)
{
  struct pmap *pm = &ftl->pm;

  st->map.paged = pm->on;
  if (!pm->on) {
    st->map.cache_bytes = st->map.resident_bytes =
      pmap_whole_bytes (ftl->logical_pages);
    return;
  }
  st->map.cache_bytes = pm->limit * PMAP_GROUP_BYTES;
  st->map.resident_bytes = __atomic_load_n (&pm->resident, __ATOMIC_RELAXED)
    * PMAP_GROUP_BYTES;
  st->map.dirty_bytes = __atomic_load_n (&pm->dirty, __ATOMIC_RELAXED)
    * PMAP_GROUP_BYTES;
  st->map.hits = pmap_ctr (ftl, PMAP_HITS);
  st->map.misses = pmap_ctr (ftl, PMAP_MISSES);
  st->map.evictions = pmap_ctr (ftl, PMAP_EVICTIONS);
  st->map.writebacks = pmap_ctr (ftl, PMAP_WRITEBACKS);
  st->map.read_pages = __atomic_load_n (&pm->read_pages, __ATOMIC_RELAXED);
  st->map.program_pages = __atomic_load_n (&pm->program_pages,
                                           __ATOMIC_RELAXED);
}

void
ftl_get_stats (struct ftl *ftl, struct ftl_stats *st)
{
  uint64_t sum = 0;

  memset (st, 0, sizeof *st);
  st->host_write_pages = ctr_get (ftl, FTL_CTR_HOST_WRITE);
  st->host_read_pages = ctr_get (ftl, FTL_CTR_HOST_READ);
  st->host_trim_pages = ctr_get (ftl, FTL_CTR_HOST_TRIM);
  st->host_flushes = ctr_get (ftl, FTL_CTR_FLUSH);
  st->media_program_pages = ctr_get (ftl, FTL_CTR_PROGRAM)
    + media_count (&ftl->media, MEDIA_PROGRAMS);
  st->media_read_pages = ctr_get (ftl, FTL_CTR_MEDIA_READ)
    + media_count (&ftl->media, MEDIA_READS);
  st->media_erases = ctr_get (ftl, FTL_CTR_ERASE)
    + media_count (&ftl->media, MEDIA_ERASES);
  st->media_syncs = media_count (&ftl->media, MEDIA_SYNCS);
  st->media_sync_ns = media_count (&ftl->media, MEDIA_SYNC_NS);
  st->media_syncs_skipped = media_count (&ftl->media, MEDIA_SYNCS_SKIPPED);
  st->media_lost_pages = ftl->recovered_lost;
  st->media_corrected_bits = ctr_get (ftl, FTL_CTR_CORRECTED_BITS);
  st->media_read_retries = ctr_get (ftl, FTL_CTR_READ_RETRIES);
  st->media_uncorrectable = __atomic_load_n (&ftl->em.uncorrectable,
                                             __ATOMIC_RELAXED);
  st->media_clock_skew = errmodel_skew (&ftl->em);
  st->media_pe_offset = ftl->em.pe_offset;
  st->errors = ftl->em.enabled;
  st->gc_reclaimed_blocks = __atomic_load_n (&ftl->em.reclaimed,
                                             __ATOMIC_RELAXED);
  st->scrub_blocks = __atomic_load_n (&ftl->em.scrub_blocks,
                                      __ATOMIC_RELAXED);
  st->scrub_pages = __atomic_load_n (&ftl->em.scrub_pages, __ATOMIC_RELAXED);
  st->gc_copied_pages = ctr_get (ftl, FTL_CTR_GC_COPIED);
  st->gc_runs = ctr_get (ftl, FTL_CTR_GC_RUNS);
  st->gc_background_runs = ctr_get (ftl, FTL_CTR_GC_BG_RUNS);
  st->gc_slices = __atomic_load_n (&ftl->gc.slices, __ATOMIC_RELAXED);
  st->gc_yields = __atomic_load_n (&ftl->gc.yields, __ATOMIC_RELAXED);
  st->gc_barriers = __atomic_load_n (&ftl->gc.barriers, __ATOMIC_RELAXED);
  st->gc_erases_unsynced = __atomic_load_n (&ftl->gc.erases_unsynced,
                                            __ATOMIC_RELAXED);
  st->wl_moved_pages = ctr_get (ftl, FTL_CTR_WL_MOVED);
  alloc_hot_cold_stats (ftl, st);
  st->wl_threshold = ftl->wl.threshold;
  st->endurance = ftl->wl.endurance;
  pthread_mutex_lock (&ftl->alloc_lock);
  st->retired_blocks = ftl->wl.retired;
  st->last_cycle_blocks = ftl->wl.last_cycle;
  pthread_mutex_unlock (&ftl->alloc_lock);
  st->read_only = ftl_is_read_only (ftl);
  st->checkpoints = ctr_get (ftl, FTL_CTR_CKPTS);
  st->mapped_pages = __atomic_load_n (&ftl->mapped, __ATOMIC_RELAXED);
  st->blocks_free = alloc_nfree (ftl);
  st->blocks_total = ftl->blocks;
  st->erase_min = UINT32_MAX;
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    uint32_t ec = media_erase_count (&ftl->media, b);
    st->erase_min = MIN (st->erase_min, ec);
    st->erase_max = MAX (st->erase_max, ec);
    sum += ec;
  }
  st->erase_mean = (double) sum / ftl->blocks;
  st->gc_policy = ftl->gc.policy;
  st->gc_mode = ftl->gc.mode;
  st->waf = st->host_write_pages
    ? (double) st->media_program_pages / st->host_write_pages : 0.0;
  dl_get_stats (&ftl->dl, st);
  cache_get_stats (ftl, st);
  map_get_stats (ftl, st);
  st->waf_data = st->host_write_pages
    ? (double) (st->media_program_pages
                - MIN (st->map.program_pages, st->media_program_pages))
      / st->host_write_pages : 0.0;
  slc_get_stats (ftl, st);
  get_health (ftl, st, &st->health);
}

unsigned
ftl_get_erase_histogram (struct ftl *ftl, uint64_t *counts, unsigned n,
                         uint32_t *first, uint32_t *width)
{
  uint32_t lo = UINT32_MAX, hi = 0, w;
  unsigned used;

  for (uint32_t b = 0; b < ftl->blocks; b++) {
    uint32_t ec = media_erase_count (&ftl->media, b);
    lo = MIN (lo, ec);
    hi = MAX (hi, ec);
  }
  w = (uint32_t) DIV_ROUND_UP ((uint64_t) hi - lo + 1, n);
  used = (hi - lo) / w + 1;
  memset (counts, 0, n * sizeof *counts);
  for (uint32_t b = 0; b < ftl->blocks; b++)
    counts[(media_erase_count (&ftl->media, b) - lo) / w]++;
  *first = lo;
  *width = w;
  return used;
}

/* A namespace's mapped pages: counted in its range of the map (which
 * skips the groups that never held a mapping).
 */
static uint64_t
ns_mapped (struct ftl *ftl, uint64_t first, uint64_t n)
{
  uint64_t count = 0;

  if (ftl->nns <= 1)
    return __atomic_load_n (&ftl->mapped, __ATOMIC_RELAXED);
  if (ftl->pm.on)
    return UINT64_MAX;
  for (uint64_t l = map_next (ftl, first); l < first + n;
       l = map_next (ftl, l + 1)) {
    uint32_t ppn = l2p_load (ftl, l);
    count += ppn != FTL_UNMAPPED;
  }
  return count;
}

void
ftl_ns_get_stats (struct ftl_ns *ns, struct ftl_ns_stats *out)
{
  struct ftl *ftl = ns->ftl;
  unsigned i = ns - ftl->ns;
  uint64_t v[NS__MAX];

  for (unsigned c = 0; c < NS__MAX; c++)
    v[c] = ftl_shard_sum (&ftl->ns_ctr[0].v[i][c], sizeof ftl->ns_ctr[0]);
  memset (out, 0, sizeof *out);
  out->host_write_bytes = v[NS_HOST_WRITE_BYTES];
  out->host_read_bytes = v[NS_HOST_READ_BYTES];
  out->host_trim_bytes = v[NS_HOST_TRIM_BYTES];
  out->host_write_commands = v[NS_HOST_WRITE_CMDS];
  out->host_read_commands = v[NS_HOST_READ_CMDS];
  out->host_trim_commands = v[NS_HOST_TRIM_CMDS];
  out->media_write_bytes = v[NS_MEDIA_PAGES] * ftl->page_size;
  /* One namespace: every copy is of its pages (alloc.c counts none). */
  out->gc_write_bytes = ftl->nns > 1 ? v[NS_GC_PAGES] * ftl->page_size
    : (ctr_get (ftl, FTL_CTR_GC_COPIED) + ctr_get (ftl, FTL_CTR_WL_MOVED))
      * ftl->page_size;
  out->waf = out->host_write_bytes
    ? (double) out->media_write_bytes / out->host_write_bytes : 0.0;
  out->mapped_pages = ns_mapped (ftl, ns->base >> ftl->page_shift,
                                 ns->bytes >> ftl->page_shift);
}
