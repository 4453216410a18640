/* nbdkit-ftl: the statistics snapshot, and the JSON, the timeline and
 * the Prometheus metrics rendered from it.  See metrics.h.
 *
 * A set is an array of entries in document order; objects and arrays
 * open with an entry and close with an FTL_STAT_END entry, so that
 * rendering is one pass over the array.  Each entry's path is built
 * when it is appended, from the innermost open object or array.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "metrics.h"
#include "report/prom.h"

#define MAX_PATH  512

/* ---- building a set ---- */

/* Append an entry that owns path (freed on failure). */
static struct ftl_stat *
new_entry (struct ftl_stat_set *set, char *path, enum ftl_stat_kind kind)
{
  struct ftl_stat *v;

  if (path == NULL) {
    set->error = -ENOMEM;
    return NULL;
  }
  if (set->n == set->cap) {
    size_t cap = set->cap ? 2 * set->cap : 256;
    struct ftl_stat *nv = realloc (set->v, cap * sizeof *nv);

    if (nv == NULL) {
      free (path);
      set->error = -ENOMEM;
      return NULL;
    }
    set->v = nv;
    set->cap = cap;
  }
  v = &set->v[set->n++];
  memset (v, 0, sizeof *v);
  v->path = path;
  v->kind = kind;
  return v;
}

/* a, then sep (may be ""), then b, in a new string (NULL if out of
 * memory).  Every entry's path is made so: without printf, as a set of
 * a thousand members is built for every statistics file.
 */
static char *
join3 (const char *a, const char *sep, const char *b)
{
  size_t la = strlen (a), ls = strlen (sep), lb = strlen (b);
  char *p = malloc (la + ls + lb + 1);

  if (p) {
    memcpy (p, a, la);
    memcpy (p + la, sep, ls);
    memcpy (p + la + ls, b, lb + 1);
  }
  return p;
}

/* Append a member to the innermost open object or array, or the top
 * value.
 */
static struct ftl_stat *
append (struct ftl_stat_set *set, const char *key, enum ftl_stat_kind kind)
{
  const struct ftl_stat *parent;
  struct ftl_stat *v;
  char *path = NULL;

  if (set->error)
    return NULL;
  if (set->depth == 0) {
    if (set->n > 0) {           /* after the top value */
      set->error = -EINVAL;
      return NULL;
    }
    return new_entry (set, strdup (""), kind);
  }
  parent = &set->v[set->open[set->depth - 1]];
  if (parent->kind == FTL_STAT_ARRAY) {
    char idx[32], *q = idx + sizeof idx;
    size_t e = set->elements[set->depth - 1];
    *--q = '\0';
    *--q = ']';
    do
      *--q = '0' + e % 10;
    while ((e /= 10) > 0);
    *--q = '[';
    path = join3 (parent->path, "", q);
    key = NULL;
  }
  else if (key == NULL) {
    set->error = -EINVAL;
    return NULL;
  }
  else
    path = join3 (parent->path, parent->path[0] ? "." : "", key);
  v = new_entry (set, path, kind);
  if (v == NULL)
    return NULL;
  if (key)
    v->key = v->path + strlen (v->path) - strlen (key);
  set->elements[set->depth - 1]++;
  return v;
}

static void
begin (struct ftl_stat_set *set, const char *key, enum ftl_stat_kind kind,
       const struct ftl_metric *metric)
{
  struct ftl_stat *v;

  if (set->error == 0 && set->depth == FTL_STATS_MAX_DEPTH)
    set->error = -E2BIG;
  v = append (set, key, kind);
  if (v == NULL)
    return;
  if (metric)
    v->metric = *metric;
  set->open[set->depth] = set->n - 1;
  set->elements[set->depth] = 0;
  set->depth++;
}

void
ftl_stats_begin_object (struct ftl_stat_set *set, const char *key,
                        const struct ftl_metric *metric)
{
  begin (set, key, FTL_STAT_OBJECT, metric);
}

void
ftl_stats_begin_array (struct ftl_stat_set *set, const char *key)
{
  begin (set, key, FTL_STAT_ARRAY, NULL);
}

void
ftl_stats_begin_described_array (struct ftl_stat_set *set, const char *key,
                                 const struct ftl_metric *m)
{
  begin (set, key, FTL_STAT_ARRAY, m);
}

void
ftl_stats_end (struct ftl_stat_set *set)
{
  if (set->error)
    return;
  if (set->depth == 0) {
    set->error = -EINVAL;
    return;
  }
  set->depth--;
  new_entry (set, strdup (set->v[set->open[set->depth]].path),
             FTL_STAT_END);
}

static struct ftl_stat *
number (struct ftl_stat_set *set, const char *key,
        enum ftl_stat_format format, const struct ftl_metric *metric)
{
  struct ftl_stat *v = append (set, key, FTL_STAT_NUMBER);

  if (v) {
    v->format = format;
    if (metric)
      v->metric = *metric;
  }
  return v;
}

void
ftl_stats_add_uint (struct ftl_stat_set *set, const char *key, uint64_t u,
                    const struct ftl_metric *metric)
{
  struct ftl_stat *v = number (set, key, FTL_STAT_UINT, metric);

  if (v) {
    v->u = u;
    v->num = u;
  }
}

void
ftl_stats_add_int (struct ftl_stat_set *set, const char *key, int64_t i,
                   const struct ftl_metric *metric)
{
  struct ftl_stat *v = number (set, key, FTL_STAT_INT, metric);

  if (v) {
    v->i = i;
    v->num = i;
  }
}

/* The value as written, so that every rendering shows the same. */
void
ftl_stats_add_fixed (struct ftl_stat_set *set, const char *key, double d,
                     const struct ftl_metric *metric)
{
  struct ftl_stat *v = number (set, key, FTL_STAT_FIXED, metric);
  char buf[400];

  if (v) {
    snprintf (buf, sizeof buf, "%.4f", d);
    v->num = isfinite (d) ? strtod (buf, NULL) : d;
  }
}

void
ftl_stats_add_real (struct ftl_stat_set *set, const char *key, double d)
{
  struct ftl_stat *v;

  if (!isfinite (d)) {
    if (set->error == 0)
      set->error = -EINVAL;
    return;
  }
  v = number (set, key, FTL_STAT_REAL, NULL);
  if (v)
    v->num = d;
}

void
ftl_stats_add_bool (struct ftl_stat_set *set, const char *key, bool b,
                    const struct ftl_metric *metric)
{
  struct ftl_stat *v = append (set, key, FTL_STAT_BOOL);

  if (v) {
    v->num = b;
    if (metric)
      v->metric = *metric;
  }
}

void
ftl_stats_add_string (struct ftl_stat_set *set, const char *key,
                      const char *s)
{
  struct ftl_stat *v = append (set, key, FTL_STAT_STRING);

  if (v && (v->str = strdup (s)) == NULL)
    set->error = -ENOMEM;
}

void
ftl_stats_add_null (struct ftl_stat_set *set, const char *key)
{
  append (set, key, FTL_STAT_NULL);
}

int
ftl_stats_error (const struct ftl_stat_set *set)
{
  if (set->error)
    return set->error;
  return set->n == 0 || set->depth > 0 ? -EINVAL : 0;
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
    if (set->v[i].kind != FTL_STAT_END && strcmp (set->v[i].path, path) == 0)
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

static double
member_num (const struct ftl_stat_set *set, size_t obj, const char *key,
            double dflt)
{
  const struct ftl_stat *v = prom_member (set, obj, key);

  if (v == NULL || (v->kind != FTL_STAT_NUMBER && v->kind != FTL_STAT_BOOL))
    return dflt;
  return v->num;
}

/* ---- JSON ---- */

static void
json_quoted (const char *s, FILE *fp)
{
  fputc ('"', fp);
  for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
    if (*p == '"' || *p == '\\')
      fprintf (fp, "\\%c", *p);
    else if (*p < 0x20)
      fprintf (fp, "\\u%04x", *p);
    else
      fputc (*p, fp);
  }
  fputc ('"', fp);
}

/* An unsigned integer in decimal (without printf: most members are
 * counters, and a statistics file has a thousand of them).
 */
static void
json_uint (uint64_t u, FILE *fp)
{
  char b[24], *q = b + sizeof b;

  *--q = '\0';
  do
    *--q = '0' + u % 10;
  while ((u /= 10) > 0);
  fputs (q, fp);
}

static void
json_scalar (const struct ftl_stat *v, FILE *fp)
{
  switch (v->kind) {
  case FTL_STAT_BOOL:
    fputs (v->num ? "true" : "false", fp);
    break;
  case FTL_STAT_STRING:
    json_quoted (v->str, fp);
    break;
  case FTL_STAT_NULL:
    fputs ("null", fp);
    break;
  case FTL_STAT_NUMBER:
    switch (v->format) {
    case FTL_STAT_UINT:  json_uint (v->u, fp); break;
    case FTL_STAT_INT:   fprintf (fp, "%" PRId64, v->i); break;
    case FTL_STAT_FIXED: fprintf (fp, "%.4f", v->num); break;
    case FTL_STAT_REAL:  fprintf (fp, "%.17g", v->num); break;
    }
    break;
  default:
    abort ();
  }
}

int
ftl_render_json (const struct ftl_stat_set *set, bool compact, FILE *fp)
{
  /* For each open object or array: whether it is an array, and whether
   * it has no member yet.
   */
  bool array[FTL_STATS_MAX_DEPTH + 1], first[FTL_STATS_MAX_DEPTH + 1];
  unsigned depth = 0;

  if (ftl_stats_error (set) < 0)
    return -EINVAL;
  for (size_t i = 0; i < set->n; i++) {
    const struct ftl_stat *v = &set->v[i];

    if (v->kind == FTL_STAT_END) {
      if (array[depth])
        fputc (']', fp);
      else {
        if (!compact && !first[depth])
          fprintf (fp, "\n%*s", 2 * (depth - 1), "");
        fputc ('}', fp);
      }
      depth--;
      continue;
    }
    /* The separator, the indentation and the key. */
    if (depth > 0 && array[depth]) {
      if (!first[depth])
        fputs (compact ? "," : ", ", fp);
    }
    else if (depth > 0) {
      static const char spaces[2 * FTL_STATS_MAX_DEPTH + 1] =
        "                                                                ";
      if (compact)
        fputs (first[depth] ? "" : ",", fp);
      else {
        fputs (first[depth] ? "\n" : ",\n", fp);
        fwrite (spaces, 1, 2 * depth, fp);
      }
      json_quoted (v->key, fp);
      fputs (compact ? ":" : ": ", fp);
    }
    first[depth] = false;
    if (v->kind == FTL_STAT_OBJECT || v->kind == FTL_STAT_ARRAY) {
      assert (depth < FTL_STATS_MAX_DEPTH);
      depth++;
      array[depth] = v->kind == FTL_STAT_ARRAY;
      first[depth] = true;
      fputc (array[depth] ? '[' : '{', fp);
    }
    else
      json_scalar (v, fp);
  }
  if (!compact)
    fputc ('\n', fp);
  return ferror (fp) ? -EIO : 0;
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
                          const struct ftl_stat_set *cur, double time,
                          double elapsed, double interval, FILE *fp)
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
    { "map_misses_per_s",      "map.misses" },
    { "map_program_pages_per_s", "map.program_pages" },
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

  if (ftl_stats_error (cur) < 0)
    return -EINVAL;
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
  ftl_render_json (cur, true, fp);
  fputs ("}\n", fp);
  return ferror (fp) ? -EIO : 0;
}

/* ---- Prometheus ---- */

/* Described as a sample of its own. */
static bool
described (const struct ftl_stat *v)
{
  return v->metric.type == FTL_METRIC_GAUGE ||
    v->metric.type == FTL_METRIC_COUNTER;
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

/* The metric name of a member. */
static void
metric_name (const struct ftl_stat *v, char *out, size_t n)
{
  if (described (v))
    snprintf (out, n, "%s", v->metric.name);
  else
    path_name (v->path, out, n);
}

/* Which entries belong to a family of their own (a summary or a
 * histogram object, with everything in it).  Returns a new array of
 * set->n flags, or NULL.
 */
static bool *
family_members (const struct ftl_stat_set *set)
{
  bool *special = calloc (set->n ? set->n : 1, sizeof *special);

  if (special == NULL)
    return NULL;
  for (size_t i = 0; i < set->n; i++) {
    const struct ftl_stat *v = &set->v[i];

    if ((v->kind == FTL_STAT_OBJECT || v->kind == FTL_STAT_ARRAY) &&
        (v->metric.type == FTL_METRIC_SUMMARY ||
         v->metric.type == FTL_METRIC_HISTOGRAM ||
         v->metric.type == FTL_METRIC_DURATION ||
         v->metric.type == FTL_METRIC_NAMESPACES)) {
      size_t end = prom_end_of (set, i);

      for (size_t j = i; j <= end; j++)
        special[j] = true;
      i = end;
    }
  }
  return special;
}

/* Request latencies (FTL_METRIC_SUMMARY at obj): a summary per request
 * kind (quantiles and count; the sum is not kept) and the maximum as
 * the gauge that the max members describe.
 */
static void
render_summary (const struct ftl_stat_set *set, size_t obj, FILE *fp)
{
  static const struct { const char *key, *q; } qs[] = {
    { "p50", "0.5" }, { "p99", "0.99" }, { "p999", "0.999" },
  };
  const struct ftl_metric *m = &set->v[obj].metric;
  const struct ftl_metric *max = NULL;
  size_t end = prom_end_of (set, obj);

  fprintf (fp, "# HELP nbdkit_ftl_%s %s\n"
           "# TYPE nbdkit_ftl_%s summary\n", m->name, m->help, m->name);
  for (size_t j = obj + 1; j < end; j = prom_end_of (set, j) + 1) {
    const struct ftl_stat *op = &set->v[j], *mx;

    if (op->kind != FTL_STAT_OBJECT || !prom_member (set, j, "count"))
      continue;
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
      fprintf (fp, "nbdkit_ftl_%s{op=", m->name);
      prom_label_value (fp, op->key);
      fprintf (fp, ",quantile=\"%s\"} ", qs[i].q);
      prom_value (fp, member_num (set, j, qs[i].key, 0) * m->scale);
    }
    fprintf (fp, "nbdkit_ftl_%s_count{op=", m->name);
    prom_label_value (fp, op->key);
    fputs ("} ", fp);
    prom_value (fp, member_num (set, j, "count", 0));
    mx = prom_member (set, j, "max");
    if (max == NULL && mx && described (mx))
      max = &mx->metric;
  }
  if (max == NULL)
    return;
  fprintf (fp, "# HELP nbdkit_ftl_%s %s\n"
           "# TYPE nbdkit_ftl_%s gauge\n", max->name, max->help, max->name);
  for (size_t j = obj + 1; j < end; j = prom_end_of (set, j) + 1) {
    const struct ftl_stat *op = &set->v[j], *mx;

    if (op->kind != FTL_STAT_OBJECT || !(mx = prom_member (set, j, "max")))
      continue;
    fprintf (fp, "nbdkit_ftl_%s{op=", max->name);
    prom_label_value (fp, op->key);
    fputs ("} ", fp);
    prom_value (fp, mx->num * max->scale);
  }
}

/* The erase-count histogram (FTL_METRIC_HISTOGRAM at obj): blocks
 * observed by their erase count, cumulative buckets.
 */
static void
render_histogram (const struct ftl_stat_set *set, size_t obj, FILE *fp)
{
  const struct ftl_stat *h = &set->v[obj], *counts;
  const struct ftl_metric *m = &h->metric;
  double first = member_num (set, obj, "first", 0);
  double width = member_num (set, obj, "width", 1);
  double total = 0;
  char mean[MAX_PATH];

  fprintf (fp, "# HELP nbdkit_ftl_%s %s\n"
           "# TYPE nbdkit_ftl_%s histogram\n", m->name, m->help, m->name);
  counts = prom_member (set, obj, "counts");
  if (counts && counts->kind == FTL_STAT_ARRAY) {
    size_t c = counts - set->v, end = prom_end_of (set, c), i = 0;

    for (size_t j = c + 1; j < end; j++) {
      if (set->v[j].kind != FTL_STAT_NUMBER)
        continue;
      total += set->v[j].num;
      fprintf (fp, "nbdkit_ftl_%s_bucket{le=\"%.0f\"} ", m->name,
               first + (i + 1) * width - 1);
      prom_value (fp, total);
      i++;
    }
  }
  fprintf (fp, "nbdkit_ftl_%s_bucket{le=\"+Inf\"} ", m->name);
  prom_value (fp, total);
  /* The sum: the mean erase count beside the histogram. */
  snprintf (mean, sizeof mean, "%.*serase_mean",
            h->key ? (int) (h->key - h->path) : 0, h->path);
  fprintf (fp, "nbdkit_ftl_%s_sum ", m->name);
  prom_value (fp, round (ftl_stats_num (set, mean, 0) * total));
  fprintf (fp, "nbdkit_ftl_%s_count ", m->name);
  prom_value (fp, total);
}

/* The labels of a duration series: none, op, or op and stage; then
 * le if given.
 */
static void
duration_labels (FILE *fp, const char *op, const char *stage,
                 const char *le)
{
  bool any = false;

  if (op) {
    fputs ("{op=", fp);
    prom_label_value (fp, op);
    any = true;
  }
  if (stage) {
    fputs (",stage=", fp);
    prom_label_value (fp, stage);
  }
  if (le)
    fprintf (fp, "%sle=\"%s\"", any ? "," : "{", le);
  if (any || le)
    fputc ('}', fp);
  fputc (' ', fp);
}

/* One series of a latency histogram: the buckets array at b (counts
 * per power of 2 of microseconds, ftl.h: FTL_LAT_BUCKETS), plus zeros
 * in the first bucket (the requests without time in a stage), made
 * cumulative with le in seconds; +Inf and _count are count.  le=2^i us
 * holds the values below it (they are whole microseconds, truncated):
 * within 1 us of the Prometheus rule, "at most le".
 */
static void
duration_series (const struct ftl_stat_set *set, const char *name,
                 const char *op, const char *stage, double count,
                 double zeros, size_t b, double sum_us, FILE *fp)
{
  size_t end = prom_end_of (set, b), j = b + 1;
  double cum = zeros;

  for (unsigned i = 0; i < FTL_LAT_BUCKETS; i++) {
    char le[32];
    if (j < end && set->v[j].kind == FTL_STAT_NUMBER)
      cum += set->v[j++].num;
    snprintf (le, sizeof le, "%.9g", ldexp (1e-6, i));
    fprintf (fp, "nbdkit_ftl_%s_bucket", name);
    duration_labels (fp, op, stage, le);
    prom_value (fp, cum < count ? cum : count);
  }
  fprintf (fp, "nbdkit_ftl_%s_bucket", name);
  duration_labels (fp, op, stage, "+Inf");
  prom_value (fp, count);
  fprintf (fp, "nbdkit_ftl_%s_sum", name);
  duration_labels (fp, op, stage, NULL);
  prom_value (fp, sum_us * 1e-6);
  fprintf (fp, "nbdkit_ftl_%s_count", name);
  duration_labels (fp, op, stage, NULL);
  prom_value (fp, count);
}

/* A histogram of durations (FTL_METRIC_DURATION at obj). */
static void
render_duration (const struct ftl_stat_set *set, size_t obj, FILE *fp)
{
  const struct ftl_metric *m = &set->v[obj].metric;
  const struct ftl_stat *b = prom_member (set, obj, "buckets");

  if (b == NULL || b->kind != FTL_STAT_ARRAY)
    return;
  fprintf (fp, "# HELP nbdkit_ftl_%s %s\n"
           "# TYPE nbdkit_ftl_%s histogram\n", m->name, m->help, m->name);
  duration_series (set, m->name, NULL, NULL, member_num (set, obj, "count", 0),
                   0, b - set->v, member_num (set, obj, "sum", 0), fp);
}

/* The request latencies of the summary at obj as histograms in
 * seconds: each request kind's total, then its stages (the objects
 * with buckets inside it) in a family of their own with a stage label,
 * so that summing a stage family over its stages gives the totals.
 * Every series of a kind has its request count as _count.
 */
static void
render_durations (const struct ftl_stat_set *set, size_t obj, FILE *fp)
{
  static const char total[] = "request_duration_seconds";
  static const char stages[] = "request_stage_duration_seconds";
  size_t end = prom_end_of (set, obj);
  const struct ftl_stat *b;

  fprintf (fp, "# HELP nbdkit_ftl_%s Request latency.\n"
           "# TYPE nbdkit_ftl_%s histogram\n", total, total);
  for (size_t j = obj + 1; j < end; j = prom_end_of (set, j) + 1)
    if (set->v[j].kind == FTL_STAT_OBJECT &&
        (b = prom_member (set, j, "buckets")) && b->kind == FTL_STAT_ARRAY)
      duration_series (set, total, set->v[j].key, NULL,
                       member_num (set, j, "count", 0), 0, b - set->v,
                       member_num (set, j, "sum", 0), fp);
  fprintf (fp, "# HELP nbdkit_ftl_%s Request latency by stage (queue, "
           "cache, gc, media, sync, other; they add up to the total).\n"
           "# TYPE nbdkit_ftl_%s histogram\n", stages, stages);
  for (size_t j = obj + 1; j < end; j = prom_end_of (set, j) + 1) {
    double count = member_num (set, j, "count", 0);
    size_t oend = prom_end_of (set, j);

    if (set->v[j].kind != FTL_STAT_OBJECT)
      continue;
    for (size_t k = j + 1; k < oend; k = prom_end_of (set, k) + 1) {
      double n;
      if (set->v[k].kind != FTL_STAT_OBJECT ||
          !(b = prom_member (set, k, "buckets")) || b->kind != FTL_STAT_ARRAY)
        continue;
      n = member_num (set, k, "count", 0);
      duration_series (set, stages, set->v[j].key, set->v[k].key, count,
                       count > n ? count - n : 0, b - set->v,
                       member_num (set, k, "sum", 0), fp);
    }
  }
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
render_info (const struct ftl_stat_set *set, const bool *special, FILE *fp)
{
  struct keyed *k = calloc (set->n ? set->n : 1, sizeof *k);
  size_t n = 0;

  if (k == NULL)
    return -ENOMEM;
  for (size_t i = 0; i < set->n; i++) {
    const struct ftl_stat *v = &set->v[i];
    const char *dot = strrchr (v->path, '.');

    if (v->kind != FTL_STAT_STRING || special[i])
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
      prom_label_value (fp, u->str);
    }
    fputs ("} 1\n", fp);
    g = end;
  }
  free_keyed (k, n);
  return 0;
}

/* The families of their own, after the rest: histograms, then
 * summaries.
 */
static void
render_families (const struct ftl_stat_set *set, FILE *fp)
{
  for (size_t i = 0; i < set->n; i++)
    if (set->v[i].kind == FTL_STAT_OBJECT &&
        set->v[i].metric.type == FTL_METRIC_HISTOGRAM)
      render_histogram (set, i, fp);
  for (size_t i = 0; i < set->n; i++)
    if (set->v[i].kind == FTL_STAT_OBJECT &&
        set->v[i].metric.type == FTL_METRIC_DURATION)
      render_duration (set, i, fp);
    else if (set->v[i].metric.type == FTL_METRIC_NAMESPACES)
      prom_namespaces (set, i, fp);
  for (size_t i = 0; i < set->n; i++)
    if (set->v[i].kind == FTL_STAT_OBJECT &&
        set->v[i].metric.type == FTL_METRIC_SUMMARY) {
      render_summary (set, i, fp);
      render_durations (set, i, fp);
    }
}

int
ftl_render_prometheus (const struct ftl_stat_set *set, FILE *fp)
{
  struct keyed *k = calloc (set->n ? set->n : 1, sizeof *k);
  bool *skip = calloc (set->n ? set->n : 1, sizeof *skip);
  bool *special = family_members (set);
  size_t n = 0;
  int r = -ENOMEM;

  if (k == NULL || skip == NULL || special == NULL)
    goto out;

  /* The metric name of each numeric member; a name met twice (two
   * paths that differ only in characters a name cannot hold) is
   * written once, for its first member.
   */
  for (size_t i = 0; i < set->n; i++) {
    const struct ftl_stat *v = &set->v[i];
    char name[MAX_PATH];

    skip[i] = true;
    if ((v->kind != FTL_STAT_NUMBER && v->kind != FTL_STAT_BOOL) ||
        special[i])
      continue;
    metric_name (v, name, sizeof name);
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
    bool d = described (v);
    char name[MAX_PATH];

    if (skip[i])
      continue;
    metric_name (v, name, sizeof name);
    fprintf (fp, "# HELP nbdkit_ftl_%s ", name);
    if (d)
      fprintf (fp, "%s\n", v->metric.help);
    else
      fprintf (fp, "Statistic %s (nbdkit-ftl-plugin(1)).\n", v->path);
    fprintf (fp, "# TYPE nbdkit_ftl_%s %s\n", name,
             d && v->metric.type == FTL_METRIC_COUNTER ? "counter" : "gauge");
    fprintf (fp, "nbdkit_ftl_%s ", name);
    prom_value (fp, v->num * (d ? v->metric.scale : 1));
  }
  if ((r = render_info (set, special, fp)) < 0)
    goto out;
  render_families (set, fp);
  r = ferror (fp) ? -EIO : 0;

 out:
  if (k)
    free_keyed (k, n);
  free (skip);
  free (special);
  return r;
}
