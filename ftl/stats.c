/* nbdkit-ftl: statistics.
 *
 * Counters are relaxed atomics bumped on the data path; this module only
 * reads them.  The JSON file is written to a temporary file beside the
 * target and renamed over it, so a reader never sees half a file.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftl-internal.h"

static uint64_t
ctr (struct ftl *ftl, enum ftl_ckpt_counter c)
{
  return __atomic_load_n (&ftl->ctr[c], __ATOMIC_RELAXED);
}

void
ftl_get_stats (struct ftl *ftl, struct ftl_stats *st)
{
  uint64_t sum = 0;

  memset (st, 0, sizeof *st);
  st->host_write_pages = ctr (ftl, FTL_CTR_HOST_WRITE);
  st->host_read_pages = ctr (ftl, FTL_CTR_HOST_READ);
  st->host_trim_pages = ctr (ftl, FTL_CTR_HOST_TRIM);
  st->host_flushes = ctr (ftl, FTL_CTR_FLUSH);
  st->media_program_pages = ctr (ftl, FTL_CTR_PROGRAM)
    + __atomic_load_n (&ftl->media.programs, __ATOMIC_RELAXED);
  st->media_read_pages = ctr (ftl, FTL_CTR_MEDIA_READ)
    + __atomic_load_n (&ftl->media.reads, __ATOMIC_RELAXED);
  st->media_erases = ctr (ftl, FTL_CTR_ERASE)
    + __atomic_load_n (&ftl->media.erases, __ATOMIC_RELAXED);
  st->gc_copied_pages = ctr (ftl, FTL_CTR_GC_COPIED);
  st->gc_runs = ctr (ftl, FTL_CTR_GC_RUNS);
  st->gc_background_runs = ctr (ftl, FTL_CTR_GC_BG_RUNS);
  st->gc_slices = __atomic_load_n (&ftl->gc.slices, __ATOMIC_RELAXED);
  st->gc_yields = __atomic_load_n (&ftl->gc.yields, __ATOMIC_RELAXED);
  st->gc_barriers = __atomic_load_n (&ftl->gc.barriers, __ATOMIC_RELAXED);
  st->gc_erases_unsynced = __atomic_load_n (&ftl->gc.erases_unsynced,
                                            __ATOMIC_RELAXED);
  st->wl_moved_pages = ctr (ftl, FTL_CTR_WL_MOVED);
  st->wl_threshold = ftl->wl.threshold;
  st->endurance = ftl->wl.endurance;
  pthread_mutex_lock (&ftl->alloc_lock);
  st->retired_blocks = ftl->wl.retired;
  pthread_mutex_unlock (&ftl->alloc_lock);
  st->read_only = ftl_is_read_only (ftl);
  st->checkpoints = ctr (ftl, FTL_CTR_CKPTS);
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

/* The histogram as a JSON object (no newline after it). */
static void
histogram_json (struct ftl *ftl, FILE *fp, const char *indent)
{
  uint64_t counts[FTL_HISTOGRAM_BUCKETS];
  uint32_t first, width;
  unsigned used = ftl_get_erase_histogram (ftl, counts,
                                           FTL_HISTOGRAM_BUCKETS,
                                           &first, &width);

  fprintf (fp, "{\n%s  \"first\": %u,\n%s  \"width\": %u,\n"
           "%s  \"counts\": [", indent, first, indent, width, indent);
  for (unsigned i = 0; i < used; i++)
    fprintf (fp, "%s%" PRIu64, i ? ", " : "", counts[i]);
  fprintf (fp, "]\n%s}", indent);
}

int
ftl_write_stats_json (struct ftl *ftl, const char *path)
{
  struct ftl_stats st;
  char *tmp;
  FILE *fp;
  int fd, r = 0;

  ftl_get_stats (ftl, &st);
  if (asprintf (&tmp, "%s.XXXXXX", path) == -1)
    return -ENOMEM;
  fd = mkstemp (tmp);
  if (fd == -1 || fchmod (fd, 0644) == -1 || !(fp = fdopen (fd, "w"))) {
    r = -errno;
    if (fd >= 0) {
      close (fd);
      unlink (tmp);
    }
    free (tmp);
    return r;
  }
  fprintf (fp,
           "{\n"
           "  \"geometry\": {\n"
           "    \"page_size\": %u,\n"
           "    \"pages_per_block\": %u,\n"
           "    \"blocks\": %u,\n"
           "    \"logical_bytes\": %" PRIu64 ",\n"
           "    \"logical_pages\": %" PRIu64 ",\n"
           "    \"op_percent\": %.4f\n"
           "  },\n"
           "  \"host\": {\n"
           "    \"write_pages\": %" PRIu64 ",\n"
           "    \"read_pages\": %" PRIu64 ",\n"
           "    \"trim_pages\": %" PRIu64 ",\n"
           "    \"flushes\": %" PRIu64 "\n"
           "  },\n"
           "  \"media\": {\n"
           "    \"program_pages\": %" PRIu64 ",\n"
           "    \"read_pages\": %" PRIu64 ",\n"
           "    \"erases\": %" PRIu64 "\n"
           "  },\n"
           "  \"gc\": {\n"
           "    \"policy\": \"%s\",\n"
           "    \"mode\": \"%s\",\n"
           "    \"copied_pages\": %" PRIu64 ",\n"
           "    \"runs\": %" PRIu64 ",\n"
           "    \"background_runs\": %" PRIu64 ",\n"
           "    \"slices\": %" PRIu64 ",\n"
           "    \"yields\": %" PRIu64 ",\n"
           "    \"syncs\": %" PRIu64 ",\n"
           "    \"erases_unsynced\": %" PRIu64 "\n"
           "  },\n"
           "  \"wl\": {\n"
           "    \"threshold\": %u,\n"
           "    \"moved_pages\": %" PRIu64 "\n"
           "  },\n"
           "  \"checkpoints\": %" PRIu64 ",\n"
           "  \"mapped_pages\": %" PRIu64 ",\n"
           "  \"waf\": %.4f,\n"
           "  \"wear\": {\n"
           "    \"erase_min\": %u,\n"
           "    \"erase_max\": %u,\n"
           "    \"erase_mean\": %.4f,\n"
           "    \"endurance\": %u,\n"
           "    \"retired_blocks\": %u,\n"
           "    \"histogram\": ",
           ftl->page_size, ftl->ppb, ftl->blocks, ftl->logical_bytes,
           ftl->logical_pages, ftl->sb.op_ppm / 10000.0,
           st.host_write_pages, st.host_read_pages, st.host_trim_pages,
           st.host_flushes,
           st.media_program_pages, st.media_read_pages, st.media_erases,
           ftl_gc_policy_name (st.gc_policy), ftl_gc_mode_name (st.gc_mode),
           st.gc_copied_pages, st.gc_runs, st.gc_background_runs,
           st.gc_slices, st.gc_yields, st.gc_barriers, st.gc_erases_unsynced,
           st.wl_threshold, st.wl_moved_pages,
           st.checkpoints, st.mapped_pages, st.waf,
           st.erase_min, st.erase_max, st.erase_mean,
           st.endurance, st.retired_blocks);
  histogram_json (ftl, fp, "    ");
  fprintf (fp,
           "\n"
           "  },\n"
           "  \"readonly\": %s,\n"
           "  \"blocks\": {\n"
           "    \"free\": %u,\n"
           "    \"total\": %u\n"
           "  },\n",
           st.read_only ? "true" : "false", st.blocks_free, st.blocks_total);
  fprintf (fp,
           "  \"deadline\": {\n"
           "    \"timeout_us\": %" PRIu64 ",\n"
           "    \"retries\": %u,\n"
           "    \"requests\": %" PRIu64 ",\n"
           "    \"expired\": %" PRIu64 ",\n"
           "    \"handled\": %" PRIu64 ",\n"
           "    \"reset\": %" PRIu64 ",\n"
           "    \"aborted\": %" PRIu64 ",\n"
           "    \"abort_all\": %" PRIu64 ",\n"
           "    \"rejected\": %" PRIu64 ",\n"
           "    \"stalled\": %s\n"
           "  },\n"
           "  \"latency_us\": {\n",
           st.deadline.timeout_ns / 1000, st.deadline.retries,
           st.deadline.requests, st.deadline.expired, st.deadline.handled,
           st.deadline.reset, st.deadline.aborted, st.deadline.abort_all,
           st.deadline.rejected, st.deadline.stalled ? "true" : "false");
  for (unsigned op = 0; op < FTL_OP__MAX; op++)
    fprintf (fp,
             "    \"%s\": { \"count\": %" PRIu64 ", \"p50\": %" PRIu64
             ", \"p99\": %" PRIu64 ", \"p999\": %" PRIu64 ", \"max\": %"
             PRIu64 " }%s\n",
             ftl_op_name (op), st.latency[op].count, st.latency[op].p50,
             st.latency[op].p99, st.latency[op].p999, st.latency[op].max,
             op + 1 < FTL_OP__MAX ? "," : "");
  fprintf (fp, "  }\n}\n");
  if (ferror (fp))
    r = -EIO;
  if (fclose (fp) == EOF && r == 0)
    r = -errno;
  if (r == 0 && rename (tmp, path) == -1)
    r = -errno;
  if (r < 0)
    unlink (tmp);
  free (tmp);
  return r;
}
