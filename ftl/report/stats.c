/* nbdkit-ftl: statistics, and their one snapshot.
 *
 * collect.c gathers the counters into struct ftl_stats (ftl_get_stats);
 * ftl_stats_snapshot is the only code that turns them into
 * the statistics object (metrics.h): the JSON (ftl_render_stats_json,
 * for the plugin's file (ftl_write_stats_json), ftlctl info --json and
 * replay), the timeline and the Prometheus metrics are all rendered
 * from it, so a member that several show has one name and one value,
 * and each member's description as a metric is given here, where it is
 * produced.  The sections (ftl.h) add what only some callers have.
 * The file is written to a temporary file beside the target and
 * renamed over it, so a reader never sees half a file.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "inspect.h"
#include "metrics.h"

/* ---- the snapshot: one producer for every output ----
 *
 * Each member is added with its description as a Prometheus metric
 * (metrics.h), or none: a member without one is exported as a gauge
 * named after its path.  The descriptions below are those members'
 * only source.
 */

#define COUNTER(name, help) \
  (&(const struct ftl_metric) { name, FTL_METRIC_COUNTER, 1, help })
#define COUNTER_SCALED(name, scale, help) \
  (&(const struct ftl_metric) { name, FTL_METRIC_COUNTER, scale, help })
#define GAUGE(name, help) GAUGE_SCALED (name, 1, help)
/* scale converts the member's unit to the metric's (percent to a
 * ratio, microseconds to seconds).
 */
#define GAUGE_SCALED(name, scale, help) \
  (&(const struct ftl_metric) { name, FTL_METRIC_GAUGE, scale, help })

static void
begin (struct ftl_stat_set *s, const char *key)
{
  ftl_stats_begin_object (s, key, NULL);
}

static void
end (struct ftl_stat_set *s)
{
  ftl_stats_end (s);
}

static void
u64 (struct ftl_stat_set *s, const char *key, uint64_t v,
     const struct ftl_metric *m)
{
  ftl_stats_add_uint (s, key, v, m);
}

/* Ratios and means: four decimals. */
static void
fixed (struct ftl_stat_set *s, const char *key, double v,
       const struct ftl_metric *m)
{
  ftl_stats_add_fixed (s, key, v, m);
}

static void
boolean (struct ftl_stat_set *s, const char *key, bool v,
         const struct ftl_metric *m)
{
  ftl_stats_add_bool (s, key, v, m);
}

static void
string (struct ftl_stat_set *s, const char *key, const char *v)
{
  ftl_stats_add_string (s, key, v);
}

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
render_image (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_image_info *ii = &v->ii;
  uint64_t generation;
  unsigned slot;

  string (s, "file", ii->path);
  string (s, "uuid", ii->uuid);
  u64 (s, "created", ii->sb.created, NULL);
  begin (s, "superblock");
  string (s, "state", ii->sb.state == FTL_SB_CLEAN ? "clean" : "dirty");
  boolean (s, "clean", ii->sb.state == FTL_SB_CLEAN, NULL);
  u64 (s, "generation", ii->sb.generation, NULL);
  /* The mark of a sync=false session (format.h). */
  boolean (s, "unsynced", ii->sb.flags & FTL_SB_UNSYNCED, NULL);
  u64 (s, "pinned_checkpoint", ii->sb.pinned_ckpt_gen, NULL);
  end (s);
  ftl_inspect_checkpoint (v->ftl, &generation, &slot);
  begin (s, "checkpoint");
  u64 (s, "generation", generation, NULL);
  u64 (s, "slot", slot, NULL);
  end (s);
}

static void
render_geometry (struct ftl_stat_set *s, const struct stats_view *v)
{
  begin (s, "geometry");
  u64 (s, "page_size", v->g.page_size,
       GAUGE ("geometry_page_size_bytes", "Page size."));
  u64 (s, "pages_per_block", v->g.pages_per_block,
       GAUGE ("geometry_pages_per_block", "Pages per erase block."));
  u64 (s, "blocks", v->g.blocks,
       GAUGE ("geometry_blocks", "Erase blocks holding data."));
  u64 (s, "logical_bytes", v->g.logical_bytes,
       GAUGE ("geometry_logical_bytes", "Disk size seen by the host."));
  u64 (s, "logical_pages", v->g.logical_pages,
       GAUGE ("geometry_logical_pages",
              "Disk size seen by the host, in pages."));
  fixed (s, "op_percent", v->g.op_percent,
         GAUGE_SCALED ("geometry_overprovisioning_ratio", 0.01,
                       "Over-provisioning: (physical - logical) / logical."));
  u64 (s, "physical_bytes", v->ii.physical_bytes,
       GAUGE ("geometry_physical_bytes", "Data pages of all erase blocks."));
  u64 (s, "image_bytes", v->ii.image_bytes,
       GAUGE ("geometry_image_bytes",
              "Size of the image file with its metadata."));
  u64 (s, "meta_pages", v->ii.sb.meta_pages,
       GAUGE ("geometry_meta_pages", "Metadata pages of each erase block."));
  u64 (s, "meta_offset", v->ii.sb.meta_offset,
       GAUGE ("geometry_meta_offset_bytes", "File offset of the metadata "
              "region (0: interleaved with the data)."));
  u64 (s, "data_offset", v->ii.sb.data_offset,
       GAUGE ("geometry_data_offset_bytes", "File offset of the data "
              "region (of erase block 0 if interleaved)."));
  end (s);
  begin (s, "capacity");
  u64 (s, "mapped_pages", v->st.mapped_pages,
       GAUGE ("capacity_mapped_pages", "Logical pages holding data."));
  u64 (s, "logical_pages", v->g.logical_pages, NULL);
  end (s);
}

/* The health log, as NVMe names its fields (percentages exported as
 * ratios).
 */
static void
render_health (struct ftl_stat_set *s, const struct ftl_health *h)
{
  begin (s, "health");
  u64 (s, "critical_warning", h->critical_warning, NULL);
  u64 (s, "available_spare", h->available_spare,
       GAUGE_SCALED ("health_available_spare_ratio", 0.01,
                     "Spare capacity left (NVMe available spare)."));
  u64 (s, "available_spare_threshold", h->available_spare_threshold,
       GAUGE_SCALED ("health_available_spare_threshold_ratio", 0.01,
                     "Available spare below which a critical warning is "
                     "raised."));
  u64 (s, "percentage_used", h->percentage_used,
       GAUGE_SCALED ("health_percentage_used_ratio", 0.01,
                     "Estimate of the life used (NVMe percentage used; may "
                     "pass 1)."));
  u64 (s, "data_units_read", h->data_units_read,
       COUNTER ("health_data_units_read_total",
                "Data units (1000 x 512 bytes) read by the host."));
  u64 (s, "data_units_written", h->data_units_written,
       COUNTER ("health_data_units_written_total",
                "Data units (1000 x 512 bytes) written by the host."));
  u64 (s, "host_read_commands", h->host_read_commands,
       COUNTER ("health_host_read_commands_total", "Read commands."));
  u64 (s, "host_write_commands", h->host_write_commands,
       COUNTER ("health_host_write_commands_total", "Write commands."));
  u64 (s, "power_cycles", h->power_cycles,
       COUNTER ("health_power_cycles_total",
                "Read-write opens of the image."));
  u64 (s, "unsafe_shutdowns", h->unsafe_shutdowns,
       COUNTER ("health_unsafe_shutdowns_total",
                "Opens that found the image not shut down cleanly."));
  u64 (s, "media_errors", h->media_errors,
       COUNTER ("health_media_errors_total",
                "Unrecovered data integrity errors."));
  u64 (s, "num_err_log_entries", h->num_err_log_entries,
       COUNTER ("health_error_log_entries_total",
                "Error information log entries."));
  end (s);
}

static void
render_host_media (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;
  bool server = has (v, FTL_STATS_SERVER);

  begin (s, "host");
  u64 (s, "write_pages", st->host_write_pages,
       COUNTER ("host_write_pages_total", "Pages written by the host."));
  u64 (s, "read_pages", st->host_read_pages,
       COUNTER ("host_read_pages_total", "Pages read by the host."));
  u64 (s, "trim_pages", st->host_trim_pages,
       COUNTER ("host_trim_pages_total",
                "Pages unmapped by trim and write zeroes."));
  u64 (s, "flushes", st->host_flushes,
       COUNTER ("host_flushes_total", "Flush requests."));
  end (s);
  begin (s, "media");
  u64 (s, "program_pages", st->media_program_pages,
       COUNTER ("media_program_pages_total",
                "Pages programmed on the media, garbage collection "
                "included."));
  u64 (s, "read_pages", st->media_read_pages,
       COUNTER ("media_read_pages_total", "Pages read from the media."));
  u64 (s, "erases", st->media_erases,
       COUNTER ("media_erases_total", "Erase blocks erased."));
  if (server)
    u64 (s, "syncs", st->media_syncs,
         COUNTER ("media_syncs_total",
                  "Syncs of the backing file since the server started."));
  if (server)
    u64 (s, "sync_ns", st->media_sync_ns,
         COUNTER_SCALED ("media_sync_seconds_total", 1e-9,
                         "Time the syncs of the backing file took."));
  if (server)
    u64 (s, "syncs_skipped", st->media_syncs_skipped,
         COUNTER ("media_syncs_skipped_total",
                  "Syncs not done (sync=false) since the server started."));
  if (server)
    u64 (s, "lost_pages", st->media_lost_pages,
         GAUGE ("media_lost_pages",
                "Logical pages found lost at open, after a crash of the "
                "host during a sync=false session."));
  u64 (s, "corrected_bits", st->media_corrected_bits,
       COUNTER ("media_corrected_bits_total",
                "Bit errors ECC corrected on host reads."));
  u64 (s, "read_retries", st->media_read_retries,
       COUNTER ("media_read_retries_total", "Read retry steps."));
  if (server)
    u64 (s, "uncorrectable", st->media_uncorrectable,
         COUNTER ("media_uncorrectable_pages_total",
                  "Pages that ECC and read retry could not correct."));
  ftl_stats_add_int (s, "clock_skew_seconds", st->media_clock_skew,
                     GAUGE ("media_clock_skew_seconds",
                            "Media clock ahead of the wall clock (aging)."));
  u64 (s, "pe_offset", st->media_pe_offset, NULL);
  end (s);
}

static void
render_gc (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;
  bool server = has (v, FTL_STATS_SERVER);

  begin (s, "gc");
  if (server) {
    string (s, "policy", ftl_gc_policy_name (st->gc_policy));
    string (s, "mode", ftl_gc_mode_name (st->gc_mode));
  }
  u64 (s, "copied_pages", st->gc_copied_pages,
       COUNTER ("gc_copied_pages_total",
                "Valid pages moved by garbage collection."));
  u64 (s, "runs", st->gc_runs,
       COUNTER ("gc_runs_total",
                "Erase blocks reclaimed by garbage collection."));
  u64 (s, "background_runs", st->gc_background_runs,
       COUNTER ("gc_background_runs_total",
                "Erase blocks reclaimed by the background thread."));
  if (server) {
    u64 (s, "slices", st->gc_slices,
         COUNTER ("gc_slices_total",
                  "Background garbage collection slices (deadline mode)."));
    u64 (s, "yields", st->gc_yields,
         COUNTER ("gc_yields_total", "Waits of background garbage "
                  "collection for a request near its deadline."));
    u64 (s, "syncs", st->gc_barriers,
         COUNTER ("gc_syncs_total",
                  "Syncs garbage collection ran before erases."));
    u64 (s, "erases_unsynced", st->gc_erases_unsynced,
         COUNTER ("gc_erases_unsynced_total",
                  "Erases that an earlier sync covered."));
    u64 (s, "reclaimed_blocks", st->gc_reclaimed_blocks,
         COUNTER ("gc_reclaimed_blocks_total",
                  "Erase blocks moved by read reclaim."));
  }
  end (s);
  if (server) {
    begin (s, "scrub");
    u64 (s, "blocks", st->scrub_blocks,
         COUNTER ("scrub_blocks_total",
                  "Erase blocks read by the idle scrub."));
    u64 (s, "pages", st->scrub_pages,
         COUNTER ("scrub_pages_total", "Pages read by the idle scrub."));
    end (s);
  }
}

/* Hot/cold separation (hot-cold=), the server's since it started. */
static void
render_hot_cold (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;

  if (!has (v, FTL_STATS_SERVER))
    return;
  begin (s, "hot_cold");
  boolean (s, "separating", st->hot_cold.separating, GAUGE
           ("hot_cold_separating", "1 while hot and cold data are apart."));
  boolean (s, "automatic", st->hot_cold.automatic, NULL);
  fixed (s, "young_overwrites", st->hot_cold.young_overwrites, GAUGE
         ("hot_cold_young_overwrites_ratio", "Overwrites of young data."));
  fixed (s, "young_live", st->hot_cold.young_live, GAUGE
         ("hot_cold_young_live_ratio", "Live data that is young."));
  fixed (s, "lift", st->hot_cold.lift, GAUGE ("hot_cold_lift_ratio",
         "young_overwrites / young_live (1: no hot set)."));
  u64 (s, "decisions", st->hot_cold.decisions, COUNTER
       ("hot_cold_decisions_total", "Decisions of hot-cold=auto."));
  u64 (s, "switches", st->hot_cold.switches, COUNTER
       ("hot_cold_switches_total", "Decisions that changed separation."));
  end (s);
}

static void
render_wl_slc (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;
  bool server = has (v, FTL_STATS_SERVER);

  begin (s, "wl");
  if (server)
    u64 (s, "threshold", st->wl_threshold,
         GAUGE ("wl_threshold_erases",
                "Erase count spread that triggers static wear leveling."));
  u64 (s, "moved_pages", st->wl_moved_pages,
       COUNTER ("wl_moved_pages_total",
                "Pages moved by static wear leveling."));
  end (s);
  /* The image's blocks in SLC mode; the budget (which the server's
   * keys set) and the counters since start are the server's.
   */
  begin (s, "slc");
  if (server)
    u64 (s, "size_pages", st->slc_size_pages,
         GAUGE ("slc_size_pages", "Pages the SLC cache may hold now (it "
                "shrinks as the disk fills)."));
  u64 (s, "used_pages", st->slc_used_pages,
       GAUGE ("slc_used_pages", "Pages in SLC blocks not yet folded."));
  if (server) {
    u64 (s, "folded_pages", st->slc_folded_pages,
         COUNTER ("slc_folded_pages_total",
                  "Pages folded from SLC blocks into native blocks."));
    u64 (s, "exhausted", st->slc_exhausted,
         COUNTER ("slc_exhausted_total", "Times host writes fell to "
                  "native blocks for want of SLC cache."));
  }
  end (s);
}

/* NVMe FDP's statistics log page (its names): the device's totals. */
static void
render_fdp (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;
  uint64_t hbmw = ctr_get (v->ftl, FTL_CTR_HOST_WRITE_BYTES);
  uint64_t mbmw = st->media_program_pages * v->g.page_size;

  begin (s, "fdp");
  u64 (s, "host_bytes_with_metadata_written", hbmw,
       COUNTER ("fdp_host_bytes_with_metadata_written_total",
                "Bytes written by the host (NVMe FDP HBMW)."));
  u64 (s, "media_bytes_written", mbmw,
       COUNTER ("fdp_media_bytes_written_total",
                "Bytes programmed on the media, garbage collection and "
                "metadata included (NVMe FDP MBMW)."));
  u64 (s, "media_bytes_erased", st->media_erases
       * (uint64_t) v->g.pages_per_block * v->g.page_size,
       COUNTER ("fdp_media_bytes_erased_total",
                "Bytes of the erase blocks erased (NVMe FDP MBE)."));
  fixed (s, "waf", hbmw ? (double) mbmw / hbmw : 0.0,
         GAUGE ("fdp_write_amplification_ratio",
                "Media bytes written / host bytes written (MBMW / HBMW)."));
  end (s);
}

/* Each namespace's counters (ftl_ns_get_stats), since the open. */
static void
render_namespaces (struct ftl_stat_set *s, const struct stats_view *v)
{
  struct ftl_ns *ns;

  string (s, "placement", ftl_placement_name (v->ftl->place.mode));
  ftl_stats_begin_described_array (s, "namespaces",
                                   &(const struct ftl_metric) {
      "namespace", FTL_METRIC_NAMESPACES, 1, "Namespaces." });
  for (unsigned i = 0; (ns = ftl_ns_at (v->ftl, i)) != NULL; i++) {
    struct ftl_ns_stats n;
    struct ftl_ns_info in;

    ftl_ns_get_info (ns, &in);
    ftl_ns_get_stats (ns, &n);
    begin (s, NULL);
    string (s, "name", in.name);
    u64 (s, "bytes", in.bytes,
         GAUGE ("namespace_size_bytes", "Size of the namespace."));
    u64 (s, "host_write_bytes", n.host_write_bytes,
         COUNTER ("namespace_host_write_bytes_total",
                  "Bytes written by the host to the namespace."));
    u64 (s, "host_read_bytes", n.host_read_bytes,
         COUNTER ("namespace_host_read_bytes_total",
                  "Bytes read by the host from the namespace."));
    u64 (s, "host_trim_bytes", n.host_trim_bytes,
         COUNTER ("namespace_host_trim_bytes_total",
                  "Bytes trimmed or zeroed by the host in the namespace."));
    u64 (s, "host_write_commands", n.host_write_commands,
         COUNTER ("namespace_host_write_commands_total", "Writes."));
    u64 (s, "host_read_commands", n.host_read_commands,
         COUNTER ("namespace_host_read_commands_total", "Reads."));
    u64 (s, "host_trim_commands", n.host_trim_commands,
         COUNTER ("namespace_host_trim_commands_total",
                  "Trims and write zeroes."));
    if (n.mapped_pages == UINT64_MAX)
      ftl_stats_add_null (s, "mapped_pages");
    else
      u64 (s, "mapped_pages", n.mapped_pages,
           GAUGE ("namespace_mapped_pages",
                  "Logical pages of the namespace holding data."));
    u64 (s, "media_write_bytes", n.media_write_bytes,
         COUNTER ("namespace_media_write_bytes_total",
                  "Bytes programmed for the namespace's data, garbage "
                  "collection's copies included."));
    u64 (s, "gc_write_bytes", n.gc_write_bytes,
         COUNTER ("namespace_gc_write_bytes_total",
                  "Bytes of the namespace's data copied by garbage "
                  "collection and wear leveling."));
    fixed (s, "waf", n.waf,
           GAUGE ("namespace_write_amplification_ratio",
                  "Media bytes written for the namespace / its host "
                  "bytes written."));
    end (s);
  }
  end (s);
}

static void
render_counters (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;

  render_host_media (s, v);
  render_gc (s, v);
  render_hot_cold (s, v);
  render_wl_slc (s, v);
  u64 (s, "checkpoints", st->checkpoints,
       COUNTER ("checkpoints_total", "Checkpoints written."));
  u64 (s, "mapped_pages", st->mapped_pages,
       GAUGE ("mapped_pages", "Logical pages holding data."));
  fixed (s, "waf", st->waf,
         GAUGE ("write_amplification_ratio",
                "Write amplification: media program pages / host write "
                "pages."));
  fixed (s, "waf_data", st->waf_data,
         GAUGE ("write_amplification_data_ratio",
                "Write amplification without the map's translation pages."));
  render_health (s, &st->health);
  render_fdp (s, v);
  render_namespaces (s, v);
}

static void
render_histogram (struct ftl_stat_set *s, const struct stats_view *v)
{
  uint64_t counts[FTL_HISTOGRAM_BUCKETS];
  uint32_t first, width;
  unsigned used;

  used = ftl_get_erase_histogram (v->ftl, counts, FTL_HISTOGRAM_BUCKETS,
                                  &first, &width);
  ftl_stats_begin_object (s, "histogram", &(const struct ftl_metric) {
      "block_erases", FTL_METRIC_HISTOGRAM, 1,
      "Erase blocks by erase count." });
  u64 (s, "first", first, NULL);
  u64 (s, "width", width, NULL);
  ftl_stats_begin_array (s, "counts");
  for (unsigned i = 0; i < used; i++)
    u64 (s, NULL, counts[i], NULL);
  end (s);
  end (s);
}

static void
render_wear (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;
  const uint32_t *n = v->ii.blocks_in_state;
  bool server = has (v, FTL_STATS_SERVER);

  begin (s, "wear");
  u64 (s, "erase_min", st->erase_min,
       GAUGE ("wear_erase_min", "Lowest erase count of an erase block."));
  u64 (s, "erase_max", st->erase_max,
       GAUGE ("wear_erase_max", "Highest erase count of an erase block."));
  fixed (s, "erase_mean", st->erase_mean,
         GAUGE ("wear_erase_mean", "Mean erase count."));
  if (server)
    u64 (s, "endurance", st->endurance,
         GAUGE ("wear_endurance_erases",
                "Erases after which an erase block is retired."));
  u64 (s, "retired_blocks", st->retired_blocks,
       GAUGE ("wear_retired_blocks", "Erase blocks retired."));
  /* Depends on the endurance, chosen at each start. */
  if (server)
    u64 (s, "last_cycle_blocks", st->last_cycle_blocks,
         GAUGE ("wear_last_cycle_blocks",
                "Erase blocks on their last cycle."));
  boolean (s, "worn_out", v->ii.worn_out,
           GAUGE ("wear_worn_out",
                  "1 if too few erase blocks are left to write."));
  render_histogram (s, v);
  end (s);
  if (server)
    boolean (s, "readonly", st->read_only,
             GAUGE ("readonly", "1 if the disk refuses writes."));
  begin (s, "blocks");
  u64 (s, "free", n[FTL_BLK_FREE],
       GAUGE ("blocks_free", "Erased erase blocks."));
  u64 (s, "open", n[FTL_BLK_OPEN],
       GAUGE ("blocks_open", "Erase blocks being written."));
  u64 (s, "full", n[FTL_BLK_FULL],
       GAUGE ("blocks_full", "Erase blocks written to the end."));
  u64 (s, "retired", n[FTL_BLK_RETIRED],
       GAUGE ("blocks_retired", "Retired erase blocks."));
  u64 (s, "total", st->blocks_total,
       GAUGE ("blocks_total", "All erase blocks."));
  end (s);
}

/* The paged map (map-cache=): the image's, in every view. */
static void
render_map (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;

  begin (s, "map");
  boolean (s, "paged", st->map.paged, NULL);
  u64 (s, "cache_bytes", st->map.cache_bytes,
       GAUGE ("map_cache_bytes", "The map's cache (map-cache=)."));
  u64 (s, "resident_bytes", st->map.resident_bytes,
       GAUGE ("map_resident_bytes", "Groups of the map in memory."));
  u64 (s, "dirty_bytes", st->map.dirty_bytes,
       GAUGE ("map_dirty_bytes",
              "Groups of the map changed since their translation page."));
  u64 (s, "hits", st->map.hits,
       COUNTER ("map_hits_total", "Map accesses that found their group."));
  u64 (s, "misses", st->map.misses,
       COUNTER ("map_misses_total",
                "Map accesses that read a translation page."));
  u64 (s, "evictions", st->map.evictions,
       COUNTER ("map_evictions_total", "Groups of the map evicted."));
  u64 (s, "writebacks", st->map.writebacks,
       COUNTER ("map_writebacks_total",
                "Translation pages written back by checkpoints."));
  u64 (s, "read_pages", st->map.read_pages,
       COUNTER ("map_read_pages_total", "Translation pages read."));
  u64 (s, "program_pages", st->map.program_pages,
       COUNTER ("map_program_pages_total",
                "Translation pages programmed (also in media programs)."));
  end (s);
}

/* FTL_STATS_SERVER: the write cache and the error model. */
static void
render_cache_errors (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;
  const struct errmodel *em = &v->ftl->em;

  begin (s, "cache");
  u64 (s, "size_bytes", st->cache.size_bytes,
       GAUGE ("cache_size_bytes", "Write cache size."));
  u64 (s, "dirty_bytes", st->cache.dirty_bytes,
       GAUGE ("cache_dirty_bytes",
              "Bytes in the write cache not yet in the log."));
  u64 (s, "hits", st->cache.hits,
       COUNTER ("cache_hit_pages_total", "Pages read from the write cache."));
  u64 (s, "coalesced_pages", st->cache.coalesced_pages,
       COUNTER ("cache_coalesced_pages_total",
                "Page writes that replaced a cached version."));
  u64 (s, "destaged_pages", st->cache.destaged_pages,
       COUNTER ("cache_destaged_pages_total",
                "Pages written from the cache to the log."));
  u64 (s, "dropped_pages", st->cache.dropped_pages,
       COUNTER ("cache_dropped_pages_total",
                "Cached pages dropped by trim or write zeroes."));
  u64 (s, "flush_waits", st->cache.flush_waits,
       COUNTER ("cache_flush_waits_total",
                "Flushes and FUA writes that had pages to destage."));
  u64 (s, "write_waits", st->cache.write_waits,
       COUNTER ("cache_write_waits_total",
                "Writes that found the cache full."));
  u64 (s, "bypassed_pages", st->cache.bypassed_pages,
       COUNTER ("cache_bypassed_pages_total",
                "Pages of large writes that went straight to the log."));
  u64 (s, "destage_stalls", st->cache.destage_stalls,
       COUNTER ("cache_destage_stalls_total",
                "Destage batches whose real work ended after their "
                "modeled programs (timing model)."));
  u64 (s, "destage_stall_ns", st->cache.destage_stall_ns,
       COUNTER_SCALED ("cache_destage_stall_seconds_total", 1e-9,
                       "Time destage batches' real work went on past "
                       "their modeled programs (timing model)."));
  end (s);
  begin (s, "errors");
  boolean (s, "enabled", st->errors, NULL);
  fixed (s, "time_scale", em->time_scale, NULL);
  u64 (s, "seed", em->seed, NULL);
  u64 (s, "ecc_bits", em->ecc_bits, NULL);
  u64 (s, "read_retry_steps", em->steps, NULL);
  u64 (s, "reclaim_reads", em->reclaim_reads, NULL);
  end (s);
}

/* A latency histogram's sum (us, to the ns) and its buckets (ftl.h:
 * FTL_LAT_BUCKETS, not cumulative), all of them: the document has the
 * same members whatever the requests.
 */
static void
render_latency_hist (struct ftl_stat_set *s, uint64_t sum_ns,
                     const uint64_t *buckets)
{
  fixed (s, "sum", sum_ns / 1e3, NULL);
  ftl_stats_begin_array (s, "buckets");
  for (unsigned i = 0; i < FTL_LAT_BUCKETS; i++)
    u64 (s, NULL, buckets[i], NULL);
  end (s);
}

/* The stages' shares at the p50, p99 and p999 of the total. */
static void
render_split (struct ftl_stat_set *s, const struct ftl_latency *l)
{
  static const char *const qs[3] = { "p50", "p99", "p999" };

  begin (s, "split");
  for (unsigned q = 0; q < 3; q++) {
    begin (s, qs[q]);
    for (unsigned g = 0; g < FTL_STAGE__MAX; g++)
      fixed (s, ftl_stage_name (g), l->split[q][g], NULL);
    end (s);
  }
  end (s);
}

/* FTL_STATS_SERVER: request deadlines and latencies. */
static void
render_requests (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct ftl_stats *st = &v->st;

  begin (s, "deadline");
  u64 (s, "timeout_us", st->deadline.timeout_ns / 1000,
       GAUGE_SCALED ("deadline_timeout_seconds", 1e-6, "Request deadline."));
  u64 (s, "retries", st->deadline.retries,
       GAUGE ("deadline_retries",
              "Deadline restarts allowed to a progressing request."));
  u64 (s, "requests", st->deadline.requests,
       COUNTER ("deadline_requests_total", "Requests tracked."));
  u64 (s, "expired", st->deadline.expired,
       COUNTER ("deadline_expired_total", "Deadlines passed."));
  u64 (s, "handled", st->deadline.handled,
       COUNTER ("deadline_handled_total",
                "Expired deadlines of requests that had completed."));
  u64 (s, "reset", st->deadline.reset,
       COUNTER ("deadline_reset_total",
                "Expired deadlines restarted for a progressing request."));
  u64 (s, "aborted", st->deadline.aborted,
       COUNTER ("deadline_aborted_total", "Requests aborted."));
  u64 (s, "abort_all", st->deadline.abort_all,
       COUNTER ("deadline_abort_all_total", "Times the backing file "
                "stalled and every request was aborted."));
  u64 (s, "rejected", st->deadline.rejected,
       COUNTER ("deadline_rejected_total",
                "Requests refused during a stall."));
  boolean (s, "stalled", st->deadline.stalled,
           GAUGE ("deadline_stalled", "1 while the backing file is stalled."));
  end (s);
  /* A summary per request kind; the maximum is a gauge of its own. */
  ftl_stats_begin_object (s, "latency_us", &(const struct ftl_metric) {
      "request_latency_seconds", FTL_METRIC_SUMMARY, 1e-6,
      "Request latency (log-scale histogram, within 12.5%)." });
  for (unsigned op = 0; op < FTL_OP__MAX; op++) {
    const struct ftl_latency *l = &st->latency[op];
    begin (s, ftl_op_name (op));
    u64 (s, "count", l->count, NULL);
    u64 (s, "p50", l->p50, NULL);
    u64 (s, "p99", l->p99, NULL);
    u64 (s, "p999", l->p999, NULL);
    u64 (s, "max", l->max,
         GAUGE_SCALED ("request_latency_max_seconds", 1e-6,
                       "Longest request."));
    render_latency_hist (s, l->sum_ns, l->buckets);
    for (unsigned g = 0; g < FTL_STAGE__MAX; g++) {
      begin (s, ftl_stage_name (g));
      u64 (s, "count", l->stage[g].count, NULL);
      u64 (s, "p50", l->stage[g].p50, NULL);
      u64 (s, "p99", l->stage[g].p99, NULL);
      u64 (s, "p999", l->stage[g].p999, NULL);
      u64 (s, "max", l->stage[g].max, NULL);
      render_latency_hist (s, l->stage[g].sum_ns, l->stage[g].buckets);
      end (s);
    }
    render_split (s, l);
    end (s);
  }
  end (s);
  begin (s, "slow");
  u64 (s, "threshold_us", st->slow.threshold_ns / 1000, NULL);
  u64 (s, "requests", st->slow.slow,
       COUNTER ("slow_requests_total", "Requests kept for the slow log."));
  u64 (s, "dropped", st->slow.dropped,
       COUNTER ("slow_dropped_total",
                "Slow requests lost: the slow log's ring was full."));
  end (s);
}

/* Where the modeled device's time went: busy time and utilization of
 * the dies, the channels and the host link, and the queue at the dies.
 */
static void
render_timing_util (struct ftl_stat_set *s, const struct timing *t)
{
  struct timing_util u;

  timing_get_util (t, &u);
  u64 (s, "elapsed_ns", u.elapsed_ns, NULL);
  u64 (s, "die_busy_ns", u.die_busy_ns,
       COUNTER_SCALED ("timing_die_busy_seconds_total", 1e-9,
                       "NAND time charged to the dies, summed over dies."));
  u64 (s, "die_wait_ns", u.die_wait_ns,
       COUNTER_SCALED ("timing_die_wait_seconds_total", 1e-9,
                       "Time NAND operations waited for a busy die, "
                       "summed."));
  u64 (s, "channel_busy_ns", u.chan_busy_ns,
       COUNTER_SCALED ("timing_channel_busy_seconds_total", 1e-9,
                       "Channel transfer time, summed over channels."));
  u64 (s, "host_busy_ns", u.host_busy_ns,
       COUNTER_SCALED ("timing_host_link_busy_seconds_total", 1e-9,
                       "Host link transfer time."));
  fixed (s, "die_utilization", u.die_util,
         GAUGE ("timing_die_utilization",
                "Mean share of the time a die was busy, since open."));
  fixed (s, "die_utilization_max", u.die_util_max,
         GAUGE ("timing_die_utilization_max",
                "The busiest die's share of the time, since open."));
  fixed (s, "channel_utilization", u.chan_util,
         GAUGE ("timing_channel_utilization",
                "Mean share of the time a channel was busy, since open."));
  fixed (s, "channel_utilization_max", u.chan_util_max,
         GAUGE ("timing_channel_utilization_max",
                "The busiest channel's share of the time, since open."));
  fixed (s, "host_utilization", u.host_util,
         GAUGE ("timing_host_link_utilization",
                "Share of the time the host link was busy, since open."));
  fixed (s, "die_queue_depth", u.die_queue_depth,
         GAUGE ("timing_die_queue_depth",
                "Mean NAND operations at a die, queued or in service "
                "(busy plus waiting time over the time elapsed)."));
}

/* How much the requests under the model ended after their modeled
 * time: a histogram of its own in Prometheus.
 */
static void
render_host_stall (struct ftl_stat_set *s, const struct ftl_host_stall *h)
{
  ftl_stats_begin_object (s, "host_stall_us", &(const struct ftl_metric) {
      "timing_host_stall_seconds", FTL_METRIC_DURATION, 1e-6,
      "Time requests ended after their modeled end (real work the "
      "model's time did not cover)." });
  u64 (s, "requests", h->requests, NULL);
  u64 (s, "count", h->count, NULL);
  u64 (s, "p50", h->p50, NULL);
  u64 (s, "p99", h->p99, NULL);
  u64 (s, "p999", h->p999, NULL);
  u64 (s, "max", h->max, NULL);
  render_latency_hist (s, h->sum_ns, h->buckets);
  end (s);
}

/* The timing model's effective parameters (the preset's values with
 * the keys given over them), and its counters.
 */
static void
render_timing (struct ftl_stat_set *s, const struct stats_view *v)
{
  const struct timing *t = &v->ftl->timing;

  if (!t->enabled)
    return;
  begin (s, "timing");
  u64 (s, "read_ns", t->read_ns, NULL);
  u64 (s, "program_ns", t->program_ns, NULL);
  u64 (s, "erase_ns", t->erase_ns, NULL);
  u64 (s, "channels", t->channels, NULL);
  u64 (s, "dies", t->units, NULL);
  u64 (s, "planes", t->planes, NULL);
  u64 (s, "pages_per_program", t->group, NULL);
  u64 (s, "channel_page_ns", t->xfer_page_ns, NULL);
  u64 (s, "nand_block", t->nand_block, NULL);
  u64 (s, "erase_share_ppm", t->erase_share_ppm, NULL);
  u64 (s, "host_ps_per_byte", t->host_ps_per_byte, NULL);
  u64 (s, "command_ns", t->command_ns, NULL);
  u64 (s, "host_command_ns", t->host_command_ns, NULL);
  boolean (s, "suspend", t->suspend, NULL);
  u64 (s, "suspend_ns", t->suspend_ns, NULL);
  u64 (s, "plp_buffer", t->plp_buffer, NULL);
  u64 (s, "suspends", __atomic_load_n (&t->suspends, __ATOMIC_RELAXED),
       COUNTER ("timing_suspends_total",
                "Programs and erases suspended by a read."));
  render_timing_util (s, t);
  render_host_stall (s, &v->st.host_stall);
  end (s);
}

int
ftl_stats_snapshot (struct ftl *ftl, unsigned sections,
                    struct ftl_stat_set *s)
{
  struct stats_view v = { .ftl = ftl, .sections = sections };
  int r;

  ftl_get_stats (ftl, &v.st);
  ftl_get_geometry (ftl, &v.g);
  ftl_inspect_image (ftl, &v.ii);

  ftl_stats_begin_object (s, NULL, NULL);
  if (has (&v, FTL_STATS_IMAGE))
    render_image (s, &v);
  render_geometry (s, &v);
  render_counters (s, &v);
  render_wear (s, &v);
  render_map (s, &v);
  if (has (&v, FTL_STATS_SERVER)) {
    render_cache_errors (s, &v);
    render_requests (s, &v);
    render_timing (s, &v);
  }
  end (s);
  if ((r = ftl_stats_error (s)) < 0)
    ftl_stats_free (s);
  return r;
}

/* The set rendered as the statistics JSON, then freed. */
static int
render_set (struct ftl_stat_set *s, FILE *fp)
{
  int r = ftl_stats_error (s);

  if (r == 0)
    r = ftl_render_json (s, false, fp);
  ftl_stats_free (s);
  return r;
}

int
ftl_render_stats_json (struct ftl *ftl, unsigned sections, FILE *fp)
{
  struct ftl_stat_set s = { 0 };
  int r = ftl_stats_snapshot (ftl, sections, &s);

  return r < 0 ? r : render_set (&s, fp);
}

int
ftl_render_health_json (struct ftl *ftl, FILE *fp)
{
  struct ftl_stat_set s = { 0 };
  struct ftl_stats st;

  ftl_get_stats (ftl, &st);
  ftl_stats_begin_object (&s, NULL, NULL);
  render_health (&s, &st.health);
  end (&s);
  return render_set (&s, fp);
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
