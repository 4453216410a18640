/* nbdkit-ftl: statistics, and their one JSON renderer.
 *
 * Counters are relaxed atomics bumped on the data path; this module only
 * reads them.  ftl_render_stats_json is the only code that writes the
 * statistics as JSON: the plugin's file (ftl_write_stats_json) and
 * ftlctl info --json both come from it, so a member that both show has
 * one name and one value; the sections (ftl.h) add what only one of
 * them has.  The file is written to a temporary file beside the target
 * and renamed over it, so a reader never sees half a file.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "inspect.h"
#include "metrics.h"

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

/* ---- the JSON renderer ----
 *
 * A small writer: members in the order of the calls, one a line,
 * indented two spaces a level; a key is NULL for the top level and for
 * elements of an array.
 */

#define JW_MAX_DEPTH 8

struct jw {
  FILE *fp;
  unsigned depth;
  bool first[JW_MAX_DEPTH];     /* no member yet at this level */
};

static void
jw_quoted (struct jw *w, const char *s)
{
  fputc ('"', w->fp);
  for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf (w->fp, "\\%c", *p);
    else if (*p < 0x20)
      fprintf (w->fp, "\\u%04x", *p);
    else
      fputc (*p, w->fp);
  }
  fputc ('"', w->fp);
}

/* Start a member: the separator, the indentation and the key. */
static void
jw_member (struct jw *w, const char *key)
{
  if (w->depth > 0) {
    fputs (w->first[w->depth] ? "\n" : ",\n", w->fp);
    w->first[w->depth] = false;
    fprintf (w->fp, "%*s", 2 * w->depth, "");
  }
  if (key) {
    jw_quoted (w, key);
    fputs (": ", w->fp);
  }
}

static void
jw_begin (struct jw *w, const char *key)
{
  jw_member (w, key);
  fputc ('{', w->fp);
  assert (w->depth + 1 < JW_MAX_DEPTH);
  w->first[++w->depth] = true;
}

static void
jw_end (struct jw *w)
{
  assert (w->depth > 0);
  if (!w->first[w->depth--])
    fprintf (w->fp, "\n%*s", 2 * w->depth, "");
  fputc ('}', w->fp);
}

static void
jw_uint (struct jw *w, const char *key, uint64_t v)
{
  jw_member (w, key);
  fprintf (w->fp, "%" PRIu64, v);
}

/* Ratios and means: four decimals. */
static void
jw_fixed (struct jw *w, const char *key, double v)
{
  jw_member (w, key);
  fprintf (w->fp, "%.4f", v);
}

static void
jw_int (struct jw *w, const char *key, int64_t v)
{
  jw_member (w, key);
  fprintf (w->fp, "%" PRId64, v);
}

static void
jw_bool (struct jw *w, const char *key, bool v)
{
  jw_member (w, key);
  fputs (v ? "true" : "false", w->fp);
}

static void
jw_string (struct jw *w, const char *key, const char *v)
{
  jw_member (w, key);
  jw_quoted (w, v);
}

/* An array of numbers, on one line. */
static void
jw_uint_array (struct jw *w, const char *key, const uint64_t *v, unsigned n)
{
  jw_member (w, key);
  fputc ('[', w->fp);
  for (unsigned i = 0; i < n; i++)
    fprintf (w->fp, "%s%" PRIu64, i ? ", " : "", v[i]);
  fputc (']', w->fp);
}

/* ---- the statistics: one renderer for every caller ---- */

struct stats_view {
  struct ftl *ftl;
  unsigned sections;
  struct ftl_stats st;
  struct ftl_geometry g;
  struct ftl_image_info ii;
};

static bool
has (const struct stats_view *v, unsigned section)
{
  return (v->sections & section) != 0;
}

/* FTL_STATS_IMAGE: the file and what is recorded at its start. */
static void
render_image (struct jw *w, const struct stats_view *v)
{
  const struct ftl_image_info *ii = &v->ii;
  uint64_t generation;
  unsigned slot;

  jw_string (w, "file", ii->path);
  jw_string (w, "uuid", ii->uuid);
  jw_uint (w, "created", ii->sb.created);
  jw_begin (w, "superblock");
  jw_string (w, "state", ii->sb.state == FTL_SB_CLEAN ? "clean" : "dirty");
  jw_bool (w, "clean", ii->sb.state == FTL_SB_CLEAN);
  jw_uint (w, "generation", ii->sb.generation);
  jw_end (w);
  ftl_inspect_checkpoint (v->ftl, &generation, &slot);
  jw_begin (w, "checkpoint");
  jw_uint (w, "generation", generation);
  jw_uint (w, "slot", slot);
  jw_end (w);
}

static void
render_geometry (struct jw *w, const struct stats_view *v)
{
  jw_begin (w, "geometry");
  jw_uint (w, "page_size", v->g.page_size);
  jw_uint (w, "pages_per_block", v->g.pages_per_block);
  jw_uint (w, "blocks", v->g.blocks);
  jw_uint (w, "logical_bytes", v->g.logical_bytes);
  jw_uint (w, "logical_pages", v->g.logical_pages);
  jw_fixed (w, "op_percent", v->g.op_percent);
  jw_uint (w, "physical_bytes", v->ii.physical_bytes);
  jw_uint (w, "image_bytes", v->ii.image_bytes);
  jw_uint (w, "meta_pages", v->ii.sb.meta_pages);
  jw_uint (w, "meta_offset", v->ii.sb.meta_offset);
  jw_uint (w, "data_offset", v->ii.sb.data_offset);
  jw_end (w);
  jw_begin (w, "capacity");
  jw_uint (w, "mapped_pages", v->st.mapped_pages);
  jw_uint (w, "logical_pages", v->g.logical_pages);
  jw_end (w);
}

/* The health log, as NVMe names its fields. */
static void
render_health (struct jw *w, const struct ftl_health *h)
{
  jw_begin (w, "health");
  jw_uint (w, "critical_warning", h->critical_warning);
  jw_uint (w, "available_spare", h->available_spare);
  jw_uint (w, "available_spare_threshold", h->available_spare_threshold);
  jw_uint (w, "percentage_used", h->percentage_used);
  jw_uint (w, "data_units_read", h->data_units_read);
  jw_uint (w, "data_units_written", h->data_units_written);
  jw_uint (w, "host_read_commands", h->host_read_commands);
  jw_uint (w, "host_write_commands", h->host_write_commands);
  jw_uint (w, "power_cycles", h->power_cycles);
  jw_uint (w, "unsafe_shutdowns", h->unsafe_shutdowns);
  jw_uint (w, "media_errors", h->media_errors);
  jw_uint (w, "num_err_log_entries", h->num_err_log_entries);
  jw_end (w);
}

static void
render_counters (struct jw *w, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;
  bool server = has (v, FTL_STATS_SERVER);

  jw_begin (w, "host");
  jw_uint (w, "write_pages", st->host_write_pages);
  jw_uint (w, "read_pages", st->host_read_pages);
  jw_uint (w, "trim_pages", st->host_trim_pages);
  jw_uint (w, "flushes", st->host_flushes);
  jw_end (w);
  jw_begin (w, "media");
  jw_uint (w, "program_pages", st->media_program_pages);
  jw_uint (w, "read_pages", st->media_read_pages);
  jw_uint (w, "erases", st->media_erases);
  if (server)
    jw_uint (w, "syncs", st->media_syncs);
  jw_uint (w, "corrected_bits", st->media_corrected_bits);
  jw_uint (w, "read_retries", st->media_read_retries);
  if (server)
    jw_uint (w, "uncorrectable", st->media_uncorrectable);
  jw_int (w, "clock_skew_seconds", st->media_clock_skew);
  jw_uint (w, "pe_offset", st->media_pe_offset);
  jw_end (w);
  jw_begin (w, "gc");
  if (server) {
    jw_string (w, "policy", ftl_gc_policy_name (st->gc_policy));
    jw_string (w, "mode", ftl_gc_mode_name (st->gc_mode));
  }
  jw_uint (w, "copied_pages", st->gc_copied_pages);
  jw_uint (w, "runs", st->gc_runs);
  jw_uint (w, "background_runs", st->gc_background_runs);
  if (server) {
    jw_uint (w, "slices", st->gc_slices);
    jw_uint (w, "yields", st->gc_yields);
    jw_uint (w, "syncs", st->gc_barriers);
    jw_uint (w, "erases_unsynced", st->gc_erases_unsynced);
    jw_uint (w, "reclaimed_blocks", st->gc_reclaimed_blocks);
  }
  jw_end (w);
  if (server) {
    jw_begin (w, "scrub");
    jw_uint (w, "blocks", st->scrub_blocks);
    jw_uint (w, "pages", st->scrub_pages);
    jw_end (w);
  }
  jw_begin (w, "wl");
  if (server)
    jw_uint (w, "threshold", st->wl_threshold);
  jw_uint (w, "moved_pages", st->wl_moved_pages);
  jw_end (w);
  /* The image's blocks in SLC mode; the budget (which the server's
   * keys set) and the counters since start are the server's.
   */
  jw_begin (w, "slc");
  if (server)
    jw_uint (w, "size_pages", st->slc_size_pages);
  jw_uint (w, "used_pages", st->slc_used_pages);
  if (server) {
    jw_uint (w, "folded_pages", st->slc_folded_pages);
    jw_uint (w, "exhausted", st->slc_exhausted);
  }
  jw_end (w);
  jw_uint (w, "checkpoints", st->checkpoints);
  jw_uint (w, "mapped_pages", st->mapped_pages);
  jw_fixed (w, "waf", st->waf);
  render_health (w, &st->health);
}

static void
render_wear (struct jw *w, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;
  const uint32_t *n = v->ii.blocks_in_state;
  uint64_t counts[FTL_HISTOGRAM_BUCKETS];
  uint32_t first, width;
  unsigned used;

  used = ftl_get_erase_histogram (v->ftl, counts, FTL_HISTOGRAM_BUCKETS,
                                  &first, &width);
  jw_begin (w, "wear");
  jw_uint (w, "erase_min", st->erase_min);
  jw_uint (w, "erase_max", st->erase_max);
  jw_fixed (w, "erase_mean", st->erase_mean);
  if (has (v, FTL_STATS_SERVER))
    jw_uint (w, "endurance", st->endurance);
  jw_uint (w, "retired_blocks", st->retired_blocks);
  /* Depends on the endurance, chosen at each start. */
  if (has (v, FTL_STATS_SERVER))
    jw_uint (w, "last_cycle_blocks", st->last_cycle_blocks);
  jw_bool (w, "worn_out", v->ii.worn_out);
  jw_begin (w, "histogram");
  jw_uint (w, "first", first);
  jw_uint (w, "width", width);
  jw_uint_array (w, "counts", counts, used);
  jw_end (w);
  jw_end (w);
  if (has (v, FTL_STATS_SERVER))
    jw_bool (w, "readonly", st->read_only);
  jw_begin (w, "blocks");
  jw_uint (w, "free", n[FTL_BLK_FREE]);
  jw_uint (w, "open", n[FTL_BLK_OPEN]);
  jw_uint (w, "full", n[FTL_BLK_FULL]);
  jw_uint (w, "retired", n[FTL_BLK_RETIRED]);
  jw_uint (w, "total", st->blocks_total);
  jw_end (w);
}

/* FTL_STATS_SERVER: request deadlines and latencies. */
static void
render_requests (struct jw *w, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;

  jw_begin (w, "cache");
  jw_uint (w, "size_bytes", st->cache.size_bytes);
  jw_uint (w, "dirty_bytes", st->cache.dirty_bytes);
  jw_uint (w, "hits", st->cache.hits);
  jw_uint (w, "coalesced_pages", st->cache.coalesced_pages);
  jw_uint (w, "destaged_pages", st->cache.destaged_pages);
  jw_uint (w, "dropped_pages", st->cache.dropped_pages);
  jw_uint (w, "flush_waits", st->cache.flush_waits);
  jw_uint (w, "write_waits", st->cache.write_waits);
  jw_uint (w, "bypassed_pages", st->cache.bypassed_pages);
  jw_end (w);
  jw_begin (w, "errors");
  jw_bool (w, "enabled", st->errors);
  jw_fixed (w, "time_scale", v->ftl->em.time_scale);
  jw_uint (w, "seed", v->ftl->em.seed);
  jw_uint (w, "ecc_bits", v->ftl->em.ecc_bits);
  jw_uint (w, "read_retry_steps", v->ftl->em.steps);
  jw_uint (w, "reclaim_reads", v->ftl->em.reclaim_reads);
  jw_end (w);
  jw_begin (w, "deadline");
  jw_uint (w, "timeout_us", st->deadline.timeout_ns / 1000);
  jw_uint (w, "retries", st->deadline.retries);
  jw_uint (w, "requests", st->deadline.requests);
  jw_uint (w, "expired", st->deadline.expired);
  jw_uint (w, "handled", st->deadline.handled);
  jw_uint (w, "reset", st->deadline.reset);
  jw_uint (w, "aborted", st->deadline.aborted);
  jw_uint (w, "abort_all", st->deadline.abort_all);
  jw_uint (w, "rejected", st->deadline.rejected);
  jw_bool (w, "stalled", st->deadline.stalled);
  jw_end (w);
  jw_begin (w, "latency_us");
  for (unsigned op = 0; op < FTL_OP__MAX; op++) {
    jw_begin (w, ftl_op_name (op));
    jw_uint (w, "count", st->latency[op].count);
    jw_uint (w, "p50", st->latency[op].p50);
    jw_uint (w, "p99", st->latency[op].p99);
    jw_uint (w, "p999", st->latency[op].p999);
    jw_uint (w, "max", st->latency[op].max);
    jw_end (w);
  }
  jw_end (w);
}

/* The timing model's effective parameters (the preset's values with
 * the keys given over them), and its counters.
 */
static void
render_timing (struct jw *w, const struct stats_view *v)
{
  const struct timing *t = &v->ftl->timing;

  if (!t->enabled)
    return;
  jw_begin (w, "timing");
  jw_uint (w, "read_ns", t->read_ns);
  jw_uint (w, "program_ns", t->program_ns);
  jw_uint (w, "erase_ns", t->erase_ns);
  jw_uint (w, "channels", t->channels);
  jw_uint (w, "dies", t->units);
  jw_uint (w, "planes", t->planes);
  jw_uint (w, "pages_per_program", t->group);
  jw_uint (w, "channel_page_ns", t->xfer_page_ns);
  jw_uint (w, "nand_block", t->nand_block);
  jw_uint (w, "erase_share_ppm", t->erase_share_ppm);
  jw_uint (w, "host_ps_per_byte", t->host_ps_per_byte);
  jw_uint (w, "command_ns", t->command_ns);
  jw_bool (w, "suspend", t->suspend);
  jw_uint (w, "suspend_ns", t->suspend_ns);
  jw_uint (w, "plp_buffer", t->plp_buffer);
  jw_uint (w, "suspends", __atomic_load_n (&t->suspends, __ATOMIC_RELAXED));
  jw_uint (w, "die_busy_ns", __atomic_load_n (&t->busy_ns, __ATOMIC_RELAXED));
  jw_end (w);
}

int
ftl_render_stats_json (struct ftl *ftl, unsigned sections, FILE *fp)
{
  struct stats_view v = { .ftl = ftl, .sections = sections };
  struct jw w = { .fp = fp };

  ftl_get_stats (ftl, &v.st);
  ftl_get_geometry (ftl, &v.g);
  ftl_inspect_image (ftl, &v.ii);

  jw_begin (&w, NULL);
  if (has (&v, FTL_STATS_IMAGE))
    render_image (&w, &v);
  render_geometry (&w, &v);
  render_counters (&w, &v);
  render_wear (&w, &v);
  if (has (&v, FTL_STATS_SERVER)) {
    render_requests (&w, &v);
    render_timing (&w, &v);
  }
  jw_end (&w);
  fputc ('\n', fp);
  return ferror (fp) ? -EIO : 0;
}

int
ftl_render_health_json (struct ftl *ftl, FILE *fp)
{
  struct ftl_stats st;
  struct jw w = { .fp = fp };

  ftl_get_stats (ftl, &st);
  jw_begin (&w, NULL);
  render_health (&w, &st.health);
  jw_end (&w);
  fputc ('\n', fp);
  return ferror (fp) ? -EIO : 0;
}

static int
write_stats_json (void *ftl, FILE *fp)
{
  return ftl_render_stats_json (ftl, FTL_STATS_SERVER, fp);
}

int
ftl_write_stats_json (struct ftl *ftl, const char *path)
{
  return ftl_write_file_atomic (path, write_stats_json, ftl);
}
