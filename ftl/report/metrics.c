/* nbdkit-ftl: the statistics read back, as a timeline and as Prometheus
 * metrics.  See metrics.h.
 *
 * The parser is a plain recursive descent over RFC 8259 JSON, nested at
 * most MAX_DEPTH deep, that appends every scalar to a flat set with its
 * path.  It never trusts its input: every read is bounded by len.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftl.h"
#include "metrics.h"

#define MAX_DEPTH 32
#define MAX_PATH  512

/* ---- the parser ---- */

struct parser {
  const char *s;
  size_t len, pos;
  struct ftl_stat_set *set;
  char path[MAX_PATH];
  size_t plen;
  char *err;
  size_t errlen;
  bool failed;
};

static void fail (struct parser *p, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));

static void
fail (struct parser *p, const char *fs, ...)
{
  va_list ap;
  char msg[200];

  if (p->failed)
    return;
  p->failed = true;
  va_start (ap, fs);
  vsnprintf (msg, sizeof msg, fs, ap);
  va_end (ap);
  if (p->errlen > 0)
    snprintf (p->err, p->errlen, "%s at byte %zu", msg, p->pos);
}

static void
skip_ws (struct parser *p)
{
  while (p->pos < p->len &&
         (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
          p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
    p->pos++;
}

static int
peek (struct parser *p)
{
  skip_ws (p);
  return p->pos < p->len ? (unsigned char) p->s[p->pos] : -1;
}

static bool
literal (struct parser *p, const char *word)
{
  size_t n = strlen (word);

  if (p->len - p->pos >= n && memcmp (p->s + p->pos, word, n) == 0) {
    p->pos += n;
    return true;
  }
  return false;
}

static void
add (struct parser *p, enum ftl_stat_kind kind, double num, char *str)
{
  struct ftl_stat_set *set = p->set;
  struct ftl_stat *v;

  if (set->n == set->cap) {
    size_t cap = set->cap ? 2 * set->cap : 64;
    struct ftl_stat *nv = realloc (set->v, cap * sizeof *nv);
    if (nv == NULL) {
      free (str);
      fail (p, "out of memory");
      return;
    }
    set->v = nv;
    set->cap = cap;
  }
  v = &set->v[set->n];
  v->path = strndup (p->path, p->plen);
  if (v->path == NULL) {
    free (str);
    fail (p, "out of memory");
    return;
  }
  v->kind = kind;
  v->num = num;
  v->str = str;
  set->n++;
}

/* A string; the result is malloc'd (\u escapes outside ASCII become
 * '?': the statistics never hold any).
 */
static char *
parse_string (struct parser *p)
{
  size_t cap = 16, n = 0;
  char *out;

  if (peek (p) != '"') {
    fail (p, "expected a string");
    return NULL;
  }
  p->pos++;
  out = malloc (cap);
  if (out == NULL) {
    fail (p, "out of memory");
    return NULL;
  }
  for (;;) {
    int c;

    if (p->pos >= p->len) {
      fail (p, "unterminated string");
      goto err;
    }
    c = (unsigned char) p->s[p->pos++];
    if (c == '"')
      break;
    if (c < 0x20) {
      fail (p, "control character in a string");
      goto err;
    }
    if (c == '\\') {
      if (p->pos >= p->len) {
        fail (p, "unterminated string");
        goto err;
      }
      c = p->s[p->pos++];
      switch (c) {
      case '"': case '\\': case '/': break;
      case 'b': c = '\b'; break;
      case 'f': c = '\f'; break;
      case 'n': c = '\n'; break;
      case 'r': c = '\r'; break;
      case 't': c = '\t'; break;
      case 'u': {
        unsigned v = 0;
        for (int i = 0; i < 4; i++) {
          int h = p->pos < p->len ? p->s[p->pos++] : 0;
          if (h >= '0' && h <= '9') v = v * 16 + h - '0';
          else if (h >= 'a' && h <= 'f') v = v * 16 + h - 'a' + 10;
          else if (h >= 'A' && h <= 'F') v = v * 16 + h - 'A' + 10;
          else {
            fail (p, "bad \\u escape");
            goto err;
          }
        }
        c = v < 0x80 && v > 0 ? (int) v : '?';
        break;
      }
      default:
        fail (p, "bad escape \\%c", c);
        goto err;
      }
    }
    if (n + 2 > cap) {
      char *o = realloc (out, cap *= 2);
      if (o == NULL) {
        fail (p, "out of memory");
        goto err;
      }
      out = o;
    }
    out[n++] = c;
  }
  out[n] = '\0';
  return out;

 err:
  free (out);
  return NULL;
}

static void parse_value (struct parser *p, unsigned depth);

/* Append ".key" (or "key" at the top) or "[i]" to the path; returns
 * the old length to restore.
 */
static size_t push (struct parser *p, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));

static size_t
push (struct parser *p, const char *fs, ...)
{
  size_t old = p->plen;
  va_list ap;
  int n;

  va_start (ap, fs);
  n = vsnprintf (p->path + p->plen, sizeof p->path - p->plen, fs, ap);
  va_end (ap);
  if (n < 0 || (size_t) n >= sizeof p->path - p->plen)
    fail (p, "member path too long");
  else
    p->plen += n;
  return old;
}

static void
parse_object (struct parser *p, unsigned depth)
{
  p->pos++;                     /* '{' */
  if (peek (p) == '}') {
    p->pos++;
    return;
  }
  while (!p->failed) {
    char *key = parse_string (p);
    size_t old;

    if (key == NULL)
      return;
    if (peek (p) != ':') {
      free (key);
      fail (p, "expected ':'");
      return;
    }
    p->pos++;
    old = push (p, p->plen ? ".%s" : "%s", key);
    free (key);
    parse_value (p, depth + 1);
    p->plen = old;
    if (peek (p) == ',') {
      p->pos++;
      continue;
    }
    if (peek (p) == '}') {
      p->pos++;
      return;
    }
    fail (p, "expected ',' or '}'");
  }
}

static void
parse_array (struct parser *p, unsigned depth)
{
  p->pos++;                     /* '[' */
  if (peek (p) == ']') {
    p->pos++;
    return;
  }
  for (size_t i = 0; !p->failed; i++) {
    size_t old = push (p, "[%zu]", i);

    parse_value (p, depth + 1);
    p->plen = old;
    if (peek (p) == ',') {
      p->pos++;
      continue;
    }
    if (peek (p) == ']') {
      p->pos++;
      return;
    }
    fail (p, "expected ',' or ']'");
  }
}

static void
parse_number (struct parser *p)
{
  char buf[64];
  size_t start = p->pos, n;
  char *end;
  double d;

  while (p->pos < p->len && p->s[p->pos] != '\0' &&
         strchr ("+-0123456789.eE", p->s[p->pos]))
    p->pos++;
  n = p->pos - start;
  if (n == 0 || n >= sizeof buf) {
    fail (p, "bad number");
    return;
  }
  memcpy (buf, p->s + start, n);
  buf[n] = '\0';
  errno = 0;
  d = strtod (buf, &end);
  if (*end != '\0' || !isfinite (d)) {
    p->pos = start;
    fail (p, "bad number");
    return;
  }
  add (p, FTL_STAT_NUMBER, d, NULL);
}

static void
parse_value (struct parser *p, unsigned depth)
{
  int c = peek (p);

  if (p->failed)
    return;
  if (depth > MAX_DEPTH) {
    fail (p, "nested too deeply");
    return;
  }
  if (c == '{')
    parse_object (p, depth);
  else if (c == '[')
    parse_array (p, depth);
  else if (c == '"') {
    char *s = parse_string (p);
    if (s)
      add (p, FTL_STAT_STRING, 0, s);
  }
  else if (literal (p, "true"))
    add (p, FTL_STAT_BOOL, 1, NULL);
  else if (literal (p, "false"))
    add (p, FTL_STAT_BOOL, 0, NULL);
  else if (literal (p, "null"))
    add (p, FTL_STAT_NULL, 0, NULL);
  else if (c == '-' || (c >= '0' && c <= '9'))
    parse_number (p);
  else if (c == -1)
    fail (p, "unexpected end");
  else
    fail (p, "unexpected character '%c'", c);
}

int
ftl_stats_parse (const char *json, size_t len, struct ftl_stat_set *set,
                 char *err, size_t errlen)
{
  struct parser p = {
    .s = json, .len = len, .set = set, .err = err, .errlen = errlen,
  };

  if (errlen > 0)
    err[0] = '\0';
  parse_value (&p, 0);
  if (!p.failed && peek (&p) != -1)
    fail (&p, "trailing characters");
  return p.failed ? -1 : 0;
}

void
ftl_stats_free (struct ftl_stat_set *set)
{
  for (size_t i = 0; i < set->n; i++) {
    free (set->v[i].path);
    free (set->v[i].str);
  }
  free (set->v);
  memset (set, 0, sizeof *set);
}

const struct ftl_stat *
ftl_stats_find (const struct ftl_stat_set *set, const char *path)
{
  for (size_t i = 0; i < set->n; i++)
    if (strcmp (set->v[i].path, path) == 0)
      return &set->v[i];
  return NULL;
}

double
ftl_stats_num (const struct ftl_stat_set *set, const char *path, double dflt)
{
  const struct ftl_stat *v = ftl_stats_find (set, path);

  if (v == NULL || (v->kind != FTL_STAT_NUMBER && v->kind != FTL_STAT_BOOL))
    return dflt;
  return v->num;
}

int
ftl_stats_snapshot (struct ftl *ftl, char **json, size_t *len)
{
  FILE *fp = open_memstream (json, len);
  int r;

  if (fp == NULL)
    return -errno;
  r = ftl_render_stats_json (ftl, FTL_STATS_SERVER, fp);
  if (fclose (fp) == EOF && r == 0)
    r = -errno;
  if (r < 0) {
    free (*json);
    *json = NULL;
  }
  return r;
}

void
ftl_json_compact (const char *json, FILE *fp)
{
  bool in_string = false;

  for (const char *s = json; *s; s++) {
    if (in_string) {
      fputc (*s, fp);
      if (*s == '\\' && s[1])
        fputc (*++s, fp);
      else if (*s == '"')
        in_string = false;
    }
    else if (*s == '"') {
      in_string = true;
      fputc (*s, fp);
    }
    else if (*s != ' ' && *s != '\n' && *s != '\t' && *s != '\r')
      fputc (*s, fp);
  }
}

/* ---- the timeline ---- */

/* cur - prev of a counter (prev absent: since 0). */
static double
delta (const struct ftl_stat_set *prev, const struct ftl_stat_set *cur,
       const char *path)
{
  double c = ftl_stats_num (cur, path, 0);
  double b = prev ? ftl_stats_num (prev, path, 0) : 0;

  return c >= b ? c - b : c;    /* a restart resets counters */
}

int
ftl_render_timeline_line (const struct ftl_stat_set *prev,
                          const struct ftl_stat_set *cur,
                          const char *json, double time, double elapsed,
                          double interval, FILE *fp)
{
  static const struct { const char *name, *path; } rates[] = {
    { "write_pages_per_s",     "host.write_pages" },
    { "read_pages_per_s",      "host.read_pages" },
    { "trim_pages_per_s",      "host.trim_pages" },
    { "flushes_per_s",         "host.flushes" },
    { "program_pages_per_s",   "media.program_pages" },
    { "media_read_pages_per_s", "media.read_pages" },
    { "erases_per_s",          "media.erases" },
    { "gc_copied_pages_per_s", "gc.copied_pages" },
    { "gc_runs_per_s",         "gc.runs" },
  };
  static const struct { const char *name, *path; } deltas[] = {
    { "gc_copied_pages",   "gc.copied_pages" },
    { "gc_runs",           "gc.runs" },
    { "deadline_requests", "deadline.requests" },
    { "deadline_expired",  "deadline.expired" },
    { "deadline_handled",  "deadline.handled" },
    { "deadline_reset",    "deadline.reset" },
    { "deadline_aborted",  "deadline.aborted" },
    { "deadline_rejected", "deadline.rejected" },
  };
  double dw = delta (prev, cur, "host.write_pages");
  double dp = delta (prev, cur, "media.program_pages");
  double span = interval > 0 ? interval : 1;

  fprintf (fp, "{\"time\":%.3f,\"elapsed_s\":%.3f,\"interval_s\":%.3f,"
           "\"rates\":{", time, elapsed, interval);
  for (size_t i = 0; i < sizeof rates / sizeof rates[0]; i++)
    fprintf (fp, "%s\"%s\":%.1f", i ? "," : "", rates[i].name,
             delta (prev, cur, rates[i].path) / span);
  /* The interval's write amplification: null when the host wrote
   * nothing (GC alone then programs pages).
   */
  if (dw > 0)
    fprintf (fp, ",\"waf_interval\":%.4f", dp / dw);
  else
    fputs (",\"waf_interval\":null", fp);
  fprintf (fp, ",\"waf\":%.4f,\"free_blocks\":%.0f",
           ftl_stats_num (cur, "waf", 0),
           ftl_stats_num (cur, "blocks.free", 0));
  for (size_t i = 0; i < sizeof deltas / sizeof deltas[0]; i++)
    fprintf (fp, ",\"%s\":%.0f", deltas[i].name,
             delta (prev, cur, deltas[i].path));
  fputs ("},\"stats\":", fp);
  ftl_json_compact (json, fp);
  fputs ("}\n", fp);
  return ferror (fp) ? -EIO : 0;
}

/* ---- Prometheus ---- */

enum mtype { GAUGE, COUNTER };

/* The members whose type or name differs from the default: a gauge
 * named nbdkit_ftl_<path with "." as "_">.  scale converts the JSON's
 * unit to the metric's (microseconds to seconds, percent to a ratio).
 */
static const struct metric_def {
  const char *path, *name;
  enum mtype type;
  double scale;
  const char *help;
} defs[] = {
  { "geometry.page_size", "geometry_page_size_bytes", GAUGE, 1,
    "Page size." },
  { "geometry.pages_per_block", "geometry_pages_per_block", GAUGE, 1,
    "Pages per erase block." },
  { "geometry.blocks", "geometry_blocks", GAUGE, 1,
    "Erase blocks holding data." },
  { "geometry.logical_bytes", "geometry_logical_bytes", GAUGE, 1,
    "Disk size seen by the host." },
  { "geometry.logical_pages", "geometry_logical_pages", GAUGE, 1,
    "Disk size seen by the host, in pages." },
  { "geometry.op_percent", "geometry_overprovisioning_ratio", GAUGE, 0.01,
    "Over-provisioning: (physical - logical) / logical." },
  { "geometry.physical_bytes", "geometry_physical_bytes", GAUGE, 1,
    "Data pages of all erase blocks." },
  { "geometry.image_bytes", "geometry_image_bytes", GAUGE, 1,
    "Size of the image file with its metadata." },
  { "geometry.meta_pages", "geometry_meta_pages", GAUGE, 1,
    "Metadata pages of each erase block." },
  { "geometry.meta_offset", "geometry_meta_offset_bytes", GAUGE, 1,
    "File offset of the metadata region (0: interleaved with the data)." },
  { "geometry.data_offset", "geometry_data_offset_bytes", GAUGE, 1,
    "File offset of the data region (of erase block 0 if interleaved)." },
  { "capacity.mapped_pages", "capacity_mapped_pages", GAUGE, 1,
    "Logical pages holding data." },
  { "host.write_pages", "host_write_pages_total", COUNTER, 1,
    "Pages written by the host." },
  { "host.read_pages", "host_read_pages_total", COUNTER, 1,
    "Pages read by the host." },
  { "host.trim_pages", "host_trim_pages_total", COUNTER, 1,
    "Pages unmapped by trim and write zeroes." },
  { "host.flushes", "host_flushes_total", COUNTER, 1,
    "Flush requests." },
  { "media.program_pages", "media_program_pages_total", COUNTER, 1,
    "Pages programmed on the media, garbage collection included." },
  { "media.read_pages", "media_read_pages_total", COUNTER, 1,
    "Pages read from the media." },
  { "media.erases", "media_erases_total", COUNTER, 1,
    "Erase blocks erased." },
  { "media.syncs", "media_syncs_total", COUNTER, 1,
    "Syncs of the backing file since the server started." },
  { "gc.copied_pages", "gc_copied_pages_total", COUNTER, 1,
    "Valid pages moved by garbage collection." },
  { "gc.runs", "gc_runs_total", COUNTER, 1,
    "Erase blocks reclaimed by garbage collection." },
  { "gc.background_runs", "gc_background_runs_total", COUNTER, 1,
    "Erase blocks reclaimed by the background thread." },
  { "gc.slices", "gc_slices_total", COUNTER, 1,
    "Background garbage collection slices (deadline mode)." },
  { "gc.yields", "gc_yields_total", COUNTER, 1,
    "Waits of background garbage collection for a request near its deadline." },
  { "gc.syncs", "gc_syncs_total", COUNTER, 1,
    "Syncs garbage collection ran before erases." },
  { "gc.erases_unsynced", "gc_erases_unsynced_total", COUNTER, 1,
    "Erases that an earlier sync covered." },
  { "wl.threshold", "wl_threshold_erases", GAUGE, 1,
    "Erase count spread that triggers static wear leveling." },
  { "wl.moved_pages", "wl_moved_pages_total", COUNTER, 1,
    "Pages moved by static wear leveling." },
  { "slc.size_pages", "slc_size_pages", GAUGE, 1,
    "Pages the SLC cache may hold now (it shrinks as the disk fills)." },
  { "slc.used_pages", "slc_used_pages", GAUGE, 1,
    "Pages in SLC blocks not yet folded." },
  { "slc.folded_pages", "slc_folded_pages_total", COUNTER, 1,
    "Pages folded from SLC blocks into native blocks." },
  { "slc.exhausted", "slc_exhausted_total", COUNTER, 1,
    "Times host writes fell to native blocks for want of SLC cache." },
  { "checkpoints", "checkpoints_total", COUNTER, 1,
    "Checkpoints written." },
  { "mapped_pages", "mapped_pages", GAUGE, 1,
    "Logical pages holding data." },
  { "waf", "write_amplification_ratio", GAUGE, 1,
    "Write amplification: media program pages / host write pages." },
  { "health.power_cycles", "health_power_cycles_total", COUNTER, 1,
    "Read-write opens of the image." },
  { "health.unsafe_shutdowns", "health_unsafe_shutdowns_total", COUNTER, 1,
    "Opens that found the image not shut down cleanly." },
  { "media.corrected_bits", "media_corrected_bits_total", COUNTER, 1,
    "Bit errors ECC corrected on host reads." },
  { "media.read_retries", "media_read_retries_total", COUNTER, 1,
    "Read retry steps." },
  { "media.uncorrectable", "media_uncorrectable_pages_total", COUNTER, 1,
    "Pages that ECC and read retry could not correct." },
  { "media.clock_skew_seconds", "media_clock_skew_seconds", GAUGE, 1,
    "Media clock ahead of the wall clock (aging)." },
  { "gc.reclaimed_blocks", "gc_reclaimed_blocks_total", COUNTER, 1,
    "Erase blocks moved by read reclaim." },
  { "scrub.blocks", "scrub_blocks_total", COUNTER, 1,
    "Erase blocks read by the idle scrub." },
  { "scrub.pages", "scrub_pages_total", COUNTER, 1,
    "Pages read by the idle scrub." },
  /* NVMe SMART / health log names (percentages as ratios). */
  { "health.available_spare", "health_available_spare_ratio", GAUGE, 0.01,
    "Spare capacity left (NVMe available spare)." },
  { "health.available_spare_threshold",
    "health_available_spare_threshold_ratio", GAUGE, 0.01,
    "Available spare below which a critical warning is raised." },
  { "health.percentage_used", "health_percentage_used_ratio", GAUGE, 0.01,
    "Estimate of the life used (NVMe percentage used; may pass 1)." },
  { "health.data_units_read", "health_data_units_read_total", COUNTER, 1,
    "Data units (1000 x 512 bytes) read by the host." },
  { "health.data_units_written", "health_data_units_written_total",
    COUNTER, 1, "Data units (1000 x 512 bytes) written by the host." },
  { "health.host_read_commands", "health_host_read_commands_total",
    COUNTER, 1, "Read commands." },
  { "health.host_write_commands", "health_host_write_commands_total",
    COUNTER, 1, "Write commands." },
  { "health.media_errors", "health_media_errors_total", COUNTER, 1,
    "Unrecovered data integrity errors." },
  { "health.num_err_log_entries", "health_error_log_entries_total",
    COUNTER, 1, "Error information log entries." },
  { "wear.erase_min", "wear_erase_min", GAUGE, 1,
    "Lowest erase count of an erase block." },
  { "wear.erase_max", "wear_erase_max", GAUGE, 1,
    "Highest erase count of an erase block." },
  { "wear.erase_mean", "wear_erase_mean", GAUGE, 1,
    "Mean erase count." },
  { "wear.endurance", "wear_endurance_erases", GAUGE, 1,
    "Erases after which an erase block is retired." },
  { "wear.retired_blocks", "wear_retired_blocks", GAUGE, 1,
    "Erase blocks retired." },
  { "wear.last_cycle_blocks", "wear_last_cycle_blocks", GAUGE, 1,
    "Erase blocks on their last cycle." },
  { "wear.worn_out", "wear_worn_out", GAUGE, 1,
    "1 if too few erase blocks are left to write." },
  { "readonly", "readonly", GAUGE, 1, "1 if the disk refuses writes." },
  { "blocks.free", "blocks_free", GAUGE, 1, "Erased erase blocks." },
  { "blocks.open", "blocks_open", GAUGE, 1, "Erase blocks being written." },
  { "blocks.full", "blocks_full", GAUGE, 1,
    "Erase blocks written to the end." },
  { "blocks.retired", "blocks_retired", GAUGE, 1, "Retired erase blocks." },
  { "blocks.total", "blocks_total", GAUGE, 1, "All erase blocks." },
  { "cache.size_bytes", "cache_size_bytes", GAUGE, 1,
    "Write cache size." },
  { "cache.dirty_bytes", "cache_dirty_bytes", GAUGE, 1,
    "Bytes in the write cache not yet in the log." },
  { "cache.hits", "cache_hit_pages_total", COUNTER, 1,
    "Pages read from the write cache." },
  { "cache.coalesced_pages", "cache_coalesced_pages_total", COUNTER, 1,
    "Page writes that replaced a cached version." },
  { "cache.destaged_pages", "cache_destaged_pages_total", COUNTER, 1,
    "Pages written from the cache to the log." },
  { "cache.dropped_pages", "cache_dropped_pages_total", COUNTER, 1,
    "Cached pages dropped by trim or write zeroes." },
  { "cache.flush_waits", "cache_flush_waits_total", COUNTER, 1,
    "Flushes and FUA writes that had pages to destage." },
  { "cache.write_waits", "cache_write_waits_total", COUNTER, 1,
    "Writes that found the cache full." },
  { "cache.bypassed_pages", "cache_bypassed_pages_total", COUNTER, 1,
    "Pages of large writes that went straight to the log." },
  { "deadline.timeout_us", "deadline_timeout_seconds", GAUGE, 1e-6,
    "Request deadline." },
  { "deadline.retries", "deadline_retries", GAUGE, 1,
    "Deadline restarts allowed to a progressing request." },
  { "deadline.requests", "deadline_requests_total", COUNTER, 1,
    "Requests tracked." },
  { "deadline.expired", "deadline_expired_total", COUNTER, 1,
    "Deadlines passed." },
  { "deadline.handled", "deadline_handled_total", COUNTER, 1,
    "Expired deadlines of requests that had completed." },
  { "deadline.reset", "deadline_reset_total", COUNTER, 1,
    "Expired deadlines restarted for a progressing request." },
  { "deadline.aborted", "deadline_aborted_total", COUNTER, 1,
    "Requests aborted." },
  { "deadline.abort_all", "deadline_abort_all_total", COUNTER, 1,
    "Times the backing file stalled and every request was aborted." },
  { "deadline.rejected", "deadline_rejected_total", COUNTER, 1,
    "Requests refused during a stall." },
  { "deadline.stalled", "deadline_stalled", GAUGE, 1,
    "1 while the backing file is stalled." },
};

static const struct metric_def *
find_def (const char *path)
{
  for (size_t i = 0; i < sizeof defs / sizeof defs[0]; i++)
    if (strcmp (defs[i].path, path) == 0)
      return &defs[i];
  return NULL;
}

/* A metric name from a path: [a-zA-Z0-9_] only. */
static void
path_name (const char *path, char *out, size_t n)
{
  size_t j = 0;

  for (const char *s = path; *s && j + 1 < n; s++)
    out[j++] = ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
                (*s >= '0' && *s <= '9')) ? *s : '_';
  out[j] = '\0';
}

/* A label value, escaped as the text format wants. */
static void
label_value (FILE *fp, const char *s)
{
  fputc ('"', fp);
  for (; *s; s++) {
    if (*s == '\\' || *s == '"')
      fprintf (fp, "\\%c", *s);
    else if (*s == '\n')
      fputs ("\\n", fp);
    else
      fputc (*s, fp);
  }
  fputc ('"', fp);
}

/* A sample value: integers exactly, the rest with enough digits. */
static void
value (FILE *fp, double v)
{
  if (v == floor (v) && fabs (v) < 1e15)
    fprintf (fp, "%.0f\n", v);
  else
    fprintf (fp, "%.9g\n", v);
}

static bool
has_prefix (const char *s, const char *prefix)
{
  return strncmp (s, prefix, strlen (prefix)) == 0;
}

/* Members rendered as families of their own below. */
static bool
special (const char *path)
{
  return has_prefix (path, "latency_us.") ||
    has_prefix (path, "wear.histogram.");
}

/* Request latencies: a summary per request kind (quantiles and count,
 * in seconds; the sum is not kept) and the maximum as a gauge.
 */
static void
render_latency (const struct ftl_stat_set *set, FILE *fp)
{
  static const struct { const char *key, *q; } qs[] = {
    { "p50", "0.5" }, { "p99", "0.99" }, { "p999", "0.999" },
  };
  char path[128];

  fputs ("# HELP nbdkit_ftl_request_latency_seconds Request latency "
         "(log-scale histogram, within 12.5%).\n"
         "# TYPE nbdkit_ftl_request_latency_seconds summary\n", fp);
  for (int op = 0; op < FTL_OP__MAX; op++) {
    const char *name = ftl_op_name (op);

    snprintf (path, sizeof path, "latency_us.%s.count", name);
    if (!ftl_stats_find (set, path))
      continue;
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
      snprintf (path, sizeof path, "latency_us.%s.%s", name, qs[i].key);
      fprintf (fp, "nbdkit_ftl_request_latency_seconds{op=\"%s\","
               "quantile=\"%s\"} ", name, qs[i].q);
      value (fp, ftl_stats_num (set, path, 0) * 1e-6);
    }
    snprintf (path, sizeof path, "latency_us.%s.count", name);
    fprintf (fp, "nbdkit_ftl_request_latency_seconds_count{op=\"%s\"} ",
             name);
    value (fp, ftl_stats_num (set, path, 0));
  }
  fputs ("# HELP nbdkit_ftl_request_latency_max_seconds Longest request.\n"
         "# TYPE nbdkit_ftl_request_latency_max_seconds gauge\n", fp);
  for (int op = 0; op < FTL_OP__MAX; op++) {
    snprintf (path, sizeof path, "latency_us.%s.max", ftl_op_name (op));
    if (!ftl_stats_find (set, path))
      continue;
    fprintf (fp, "nbdkit_ftl_request_latency_max_seconds{op=\"%s\"} ",
             ftl_op_name (op));
    value (fp, ftl_stats_num (set, path, 0) * 1e-6);
  }
}

/* The erase-count histogram as a Prometheus histogram: blocks observed
 * by their erase count, cumulative buckets.
 */
static void
render_histogram (const struct ftl_stat_set *set, FILE *fp)
{
  double first = ftl_stats_num (set, "wear.histogram.first", 0);
  double width = ftl_stats_num (set, "wear.histogram.width", 1);
  double total = 0;

  fputs ("# HELP nbdkit_ftl_block_erases Erase blocks by erase count.\n"
         "# TYPE nbdkit_ftl_block_erases histogram\n", fp);
  /* The counts, in document order (which is their order). */
  for (size_t j = 0, i = 0; j < set->n; j++) {
    const struct ftl_stat *v = &set->v[j];

    if (strncmp (v->path, "wear.histogram.counts[", 22) != 0 ||
        v->kind != FTL_STAT_NUMBER)
      continue;
    total += v->num;
    fprintf (fp, "nbdkit_ftl_block_erases_bucket{le=\"%.0f\"} ",
             first + (i + 1) * width - 1);
    value (fp, total);
    i++;
  }
  fputs ("nbdkit_ftl_block_erases_bucket{le=\"+Inf\"} ", fp);
  value (fp, total);
  fputs ("nbdkit_ftl_block_erases_sum ", fp);
  value (fp, round (ftl_stats_num (set, "wear.erase_mean", 0) * total));
  fputs ("nbdkit_ftl_block_erases_count ", fp);
  value (fp, total);
}

/* Members sorted by a key (a metric name, or the object holding a
 * string), ties in document order: the families below are found by
 * sorting, never by comparing every pair, so a large input renders in
 * O(n log n).
 */
struct keyed {
  char *key;
  size_t i;                     /* index in the set */
};

static int
cmp_keyed (const void *a, const void *b)
{
  const struct keyed *x = a, *y = b;
  int c = strcmp (x->key, y->key);

  if (c)
    return c;
  return x->i < y->i ? -1 : x->i > y->i;
}

static void
free_keyed (struct keyed *k, size_t n)
{
  for (size_t i = 0; i < n; i++)
    free (k[i].key);
  free (k);
}

/* String members: one info gauge per object, the strings as labels
 * (gc.policy and gc.mode: nbdkit_ftl_gc_info{policy=...,mode=...} 1).
 */
static int
render_info (const struct ftl_stat_set *set, FILE *fp)
{
  struct keyed *k = calloc (set->n ? set->n : 1, sizeof *k);
  size_t n = 0;

  if (k == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < set->n; i++) {
    const struct ftl_stat *v = &set->v[i];
    const char *dot = strrchr (v->path, '.');

    if (v->kind != FTL_STAT_STRING || special (v->path))
      continue;
    k[n].key = strndup (v->path, dot ? (size_t) (dot - v->path) : 0);
    if (k[n].key == NULL) {
      free_keyed (k, n);
      return -ENOMEM;
    }
    k[n++].i = i;
  }
  qsort (k, n, sizeof *k, cmp_keyed);
  for (size_t g = 0; g < n; ) {
    const char *obj = k[g].key;
    char name[MAX_PATH];
    bool top = obj[0] == '\0';
    size_t end;

    path_name (obj, name, sizeof name);
    fprintf (fp, "# HELP nbdkit_ftl_%s%sinfo Settings%s%s.\n"
             "# TYPE nbdkit_ftl_%s%sinfo gauge\n"
             "nbdkit_ftl_%s%sinfo{",
             name, top ? "" : "_", top ? "" : " of ", obj,
             name, top ? "" : "_", name, top ? "" : "_");
    for (end = g; end < n && strcmp (k[end].key, obj) == 0; end++) {
      const struct ftl_stat *u = &set->v[k[end].i];
      const char *d = strrchr (u->path, '.');
      char key[MAX_PATH];

      path_name (d ? d + 1 : u->path, key, sizeof key);
      fprintf (fp, "%s%s=", end == g ? "" : ",", key);
      label_value (fp, u->str);
    }
    fputs ("} 1\n", fp);
    g = end;
  }
  free_keyed (k, n);
  return 0;
}

int
ftl_render_prometheus (const struct ftl_stat_set *set, FILE *fp)
{
  struct keyed *k = calloc (set->n ? set->n : 1, sizeof *k);
  bool *skip = calloc (set->n ? set->n : 1, sizeof *skip);
  size_t n = 0;
  int r = -ENOMEM;

  if (k == NULL || skip == NULL)
    goto out;

  /* The metric name of each numeric member; a name met twice (two
   * paths that differ only in characters a name cannot hold) is
   * written once, for its first member.
   */
  for (size_t i = 0; i < set->n; i++) {
    const struct ftl_stat *v = &set->v[i];
    const struct metric_def *d;
    char name[MAX_PATH];

    skip[i] = true;
    if ((v->kind != FTL_STAT_NUMBER && v->kind != FTL_STAT_BOOL) ||
        special (v->path))
      continue;
    d = find_def (v->path);
    if (d)
      snprintf (name, sizeof name, "%s", d->name);
    else
      path_name (v->path, name, sizeof name);
    k[n].key = strdup (name);
    if (k[n].key == NULL)
      goto out;
    k[n++].i = i;
  }
  qsort (k, n, sizeof *k, cmp_keyed);
  for (size_t j = 0; j < n; j++)
    skip[k[j].i] = j > 0 && strcmp (k[j].key, k[j - 1].key) == 0;

  for (size_t i = 0; i < set->n; i++) {
    const struct ftl_stat *v = &set->v[i];
    const struct metric_def *d;
    char name[MAX_PATH];

    if (skip[i])
      continue;
    d = find_def (v->path);
    if (d)
      snprintf (name, sizeof name, "%s", d->name);
    else
      path_name (v->path, name, sizeof name);
    fprintf (fp, "# HELP nbdkit_ftl_%s ", name);
    if (d)
      fprintf (fp, "%s\n", d->help);
    else
      fprintf (fp, "Statistic %s (nbdkit-ftl-plugin(1)).\n", v->path);
    fprintf (fp, "# TYPE nbdkit_ftl_%s %s\n", name,
             d && d->type == COUNTER ? "counter" : "gauge");
    fprintf (fp, "nbdkit_ftl_%s ", name);
    value (fp, v->num * (d ? d->scale : 1));
  }
  if ((r = render_info (set, fp)) < 0)
    goto out;
  if (ftl_stats_find (set, "wear.histogram.first"))
    render_histogram (set, fp);
  if (ftl_stats_find (set, "latency_us.read.count"))
    render_latency (set, fp);
  r = ferror (fp) ? -EIO : 0;

 out:
  if (k)
    free_keyed (k, n);
  free (skip);
  return r;
}
