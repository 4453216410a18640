/* nbdkit-ftl: the statistics as one snapshot, and what it becomes: the
 * statistics JSON, a timeline line and Prometheus metrics.
 *
 * ftl_stats_snapshot (stats.c) reads the handle once into a struct
 * ftl_stat_set: the members of the statistics object in document
 * order, each with its path from the top ("host.write_pages",
 * "wear.histogram.counts[3]"), its kind and value, and its description
 * as a Prometheus metric (name, counter or gauge, unit, help), which
 * stats.c gives where it produces the member.  Objects and arrays are
 * entries too, so the set is the whole document.  From that one set:
 *
 *   - ftl_render_json writes the statistics JSON (ftl_render_stats_json:
 *     the plugin's stats= file, ftlctl info --json and replay);
 *   - ftl_render_timeline_line writes a timeline line: one JSON object
 *     on one line holding the time, the rates over the interval since
 *     the previous snapshot (pages per second, the interval's write
 *     amplification, deadline outcomes) and the whole statistics
 *     object, on one line;
 *   - ftl_render_prometheus writes the Prometheus text exposition
 *     format (version 0.0.4): every numeric member becomes a sample
 *     nbdkit_ftl_<name>, named and typed by its description (counters
 *     end in _total, gauges carry their unit); a member without one is
 *     exported as a gauge named after its path, so that a new statistic
 *     shows up without a change here.  Strings become info gauges; the
 *     erase-count histogram, the request latencies (a summary, and
 *     histograms per kind and per stage) and the timing model's host
 *     stalls are families of their own.
 *
 * Nothing here parses JSON: ftlctl reads the files the plugin writes
 * with json-glib and builds the same kind of set (without descriptions)
 * with the ftl_stats_begin_* and ftl_stats_add_* calls.  No global
 * state; every function may be called from any thread, one set from
 * one thread at a time.
 */

#ifndef FTL_METRICS_H
#define FTL_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ftl;

enum ftl_stat_kind {
  FTL_STAT_NUMBER, FTL_STAT_BOOL, FTL_STAT_STRING, FTL_STAT_NULL,
  FTL_STAT_OBJECT,              /* begins an object, or */
  FTL_STAT_ARRAY,               /* an array: its members follow, */
  FTL_STAT_END,                 /* up to this */
};

/* How a number is written as JSON. */
enum ftl_stat_format {
  FTL_STAT_REAL,                /* num, with 17 significant digits */
  FTL_STAT_UINT,                /* u, exactly */
  FTL_STAT_INT,                 /* i, exactly */
  FTL_STAT_FIXED,               /* num, with four decimals */
};

/* What a member is as a Prometheus metric. */
enum ftl_metric_type {
  FTL_METRIC_NONE,              /* not described: a gauge named after
                                 * its path */
  FTL_METRIC_GAUGE,
  FTL_METRIC_COUNTER,
  /* An object of request latencies: one object per kind of request
   * (the label op), each with count, p50, p99, p999 (the quantiles)
   * and max (which carries its own description, a gauge).
   */
  FTL_METRIC_SUMMARY,
  /* The erase-count histogram: an object with first, width and the
   * array counts (blocks in [first + i * width, first + (i + 1) *
   * width)); the sum is the sibling member erase_mean times the count.
   */
  FTL_METRIC_HISTOGRAM,
  /* A histogram of durations: an object with count, sum (microseconds)
   * and buckets (ftl.h: FTL_LAT_BUCKETS), rendered in seconds.
   */
  FTL_METRIC_DURATION,
  /* An array of objects, one per namespace, each with its name (the
   * string member "name") and described numbers: each number a
   * family of its own with a sample per namespace, labelled
   * namespace="NAME" ("" for the namespace of an image made without
   * namespaces).
   */
  FTL_METRIC_NAMESPACES,
};

struct ftl_metric {
  const char *name;             /* after "nbdkit_ftl_" (static storage) */
  enum ftl_metric_type type;
  double scale;                 /* from the member's unit to the metric's */
  const char *help;             /* static storage */
};

/* One entry of a set. */
struct ftl_stat {
  char *path;                   /* "" for the top */
  const char *key;              /* the member's name (in path), NULL for
                                 * the top and for array elements */
  enum ftl_stat_kind kind;
  enum ftl_stat_format format;  /* NUMBER */
  double num;                   /* NUMBER: the value (FIXED: rounded as
                                 * written); BOOL: 0 or 1 */
  uint64_t u;                   /* NUMBER, FTL_STAT_UINT */
  int64_t i;                    /* NUMBER, FTL_STAT_INT */
  char *str;                    /* STRING */
  struct ftl_metric metric;     /* type FTL_METRIC_NONE if none */
};

#define FTL_STATS_MAX_DEPTH 32  /* objects and arrays open at once */

/* A document: zeroed, or freed, it is empty. */
struct ftl_stat_set {
  struct ftl_stat *v;           /* in document order */
  size_t n, cap;
  /* While it is built: the open objects and arrays (their entries),
   * the elements of each so far, and the first error.
   */
  size_t open[FTL_STATS_MAX_DEPTH];
  size_t elements[FTL_STATS_MAX_DEPTH];
  unsigned depth;
  int error;
};

/* The handle's statistics into set, which must be empty: what
 * ftl_render_stats_json writes with these sections (ftl.h).  Returns 0,
 * or -ENOMEM with set empty.
 */
extern int ftl_stats_snapshot (struct ftl *ftl, unsigned sections,
                               struct ftl_stat_set *set);

/* Building a set.  Each call appends a member to the innermost open
 * object (named key) or array (key is ignored: elements are numbered);
 * the first call makes the top value (key ignored).  metric may be
 * NULL; it is copied.  A failure (out of memory, nested deeper than
 * FTL_STATS_MAX_DEPTH, ftl_stats_end with nothing open, a member after
 * the top value, a REAL that is not finite) is kept in set->error and
 * makes the later calls do nothing.
 */
extern void ftl_stats_begin_object (struct ftl_stat_set *set,
                                    const char *key,
                                    const struct ftl_metric *metric);
extern void ftl_stats_begin_array (struct ftl_stat_set *set,
                                   const char *key);
/* An array with a description as a metric (FTL_METRIC_NAMESPACES). */
extern void ftl_stats_begin_described_array (struct ftl_stat_set *set,
                                             const char *key,
                                             const struct ftl_metric *m);
extern void ftl_stats_end (struct ftl_stat_set *set);
extern void ftl_stats_add_uint (struct ftl_stat_set *set, const char *key,
                                uint64_t v, const struct ftl_metric *metric);
extern void ftl_stats_add_int (struct ftl_stat_set *set, const char *key,
                               int64_t v, const struct ftl_metric *metric);
extern void ftl_stats_add_fixed (struct ftl_stat_set *set, const char *key,
                                 double v, const struct ftl_metric *metric);
extern void ftl_stats_add_bool (struct ftl_stat_set *set, const char *key,
                                bool v, const struct ftl_metric *metric);
extern void ftl_stats_add_real (struct ftl_stat_set *set, const char *key,
                                double v);
extern void ftl_stats_add_string (struct ftl_stat_set *set, const char *key,
                                  const char *v);
extern void ftl_stats_add_null (struct ftl_stat_set *set, const char *key);
/* 0 if the set is whole (every object and array ended), else a
 * negative errno: the first failure, or -EINVAL.
 */
extern int ftl_stats_error (const struct ftl_stat_set *set);

extern void ftl_stats_free (struct ftl_stat_set *set);
/* The entry at path, or NULL. */
extern const struct ftl_stat *ftl_stats_find (const struct ftl_stat_set *set,
                                              const char *path);
/* Its number (or a bool's 0/1), or dflt if absent or not a number. */
extern double ftl_stats_num (const struct ftl_stat_set *set,
                             const char *path, double dflt);

/* A whole set as JSON: indented two spaces a level, one member a line
 * (an array's elements on one line), then a newline; or, if compact, on
 * one line without whitespace and without the newline.  Returns 0,
 * -EINVAL if the set is not whole, or -EIO.
 */
extern int ftl_render_json (const struct ftl_stat_set *set, bool compact,
                            FILE *fp);

/* A timeline line on fp: {"time": wall clock seconds, "elapsed_s",
 * "interval_s", "rates": {...}, "stats": cur compacted}, then a
 * newline.  prev is the previous snapshot (NULL for the first: the
 * rates are then over the whole life of the counters, since time 0 of
 * elapsed).  Returns 0, -EINVAL or -EIO.
 */
extern int ftl_render_timeline_line (const struct ftl_stat_set *prev,
                                     const struct ftl_stat_set *cur,
                                     double time, double elapsed,
                                     double interval, FILE *fp);

/* The Prometheus text exposition format of a set.  Returns 0, -ENOMEM
 * or -EIO.
 */
extern int ftl_render_prometheus (const struct ftl_stat_set *set, FILE *fp);

#ifdef __cplusplus
}
#endif

#endif /* FTL_METRICS_H */
