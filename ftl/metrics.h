/* nbdkit-ftl: what the statistics become: a timeline and Prometheus
 * metrics.
 *
 * The statistics JSON (ftl_render_stats_json, stats.c) is the one source
 * of every figure.  This module reads it back as a flat list of members
 * ("host.write_pages", "wear.histogram.counts[3]", ...) and renders:
 *
 *   - a timeline line: one JSON object on one line holding the time, the
 *     rates over the interval since the previous snapshot (pages per
 *     second, the interval's write amplification, deadline outcomes) and
 *     the whole statistics object, compacted;
 *   - the Prometheus text exposition format (version 0.0.4): every
 *     numeric member becomes a sample named nbdkit_ftl_<path>, with the
 *     members it knows typed as counters (_total) or gauges with their
 *     unit in the name; a member it does not know is exported as a gauge
 *     named after its path, so that a new statistic shows up without a
 *     change here.
 *
 * Nothing here touches an ftl handle but ftl_stats_snapshot; the rest
 * works on text, so the tools can read a file that a server wrote.  No
 * global state; every function may be called from any thread.
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

enum ftl_stat_kind { FTL_STAT_NUMBER, FTL_STAT_BOOL, FTL_STAT_STRING,
                     FTL_STAT_NULL };

/* One member: its path from the top of the object, with "." between
 * object keys and "[i]" for array elements.
 */
struct ftl_stat {
  char *path;
  enum ftl_stat_kind kind;
  double num;                   /* NUMBER; BOOL: 0 or 1 */
  char *str;                    /* STRING */
};

struct ftl_stat_set {
  struct ftl_stat *v;           /* in document order */
  size_t n, cap;
};

/* Parse one JSON object (any JSON; the statistics are one object) into
 * set, which must be zeroed or freed.  Returns 0, or -1 with why and
 * the byte offset in err.
 */
extern int ftl_stats_parse (const char *json, size_t len,
                            struct ftl_stat_set *set, char *err,
                            size_t errlen);
extern void ftl_stats_free (struct ftl_stat_set *set);
/* The member at path, or NULL. */
extern const struct ftl_stat *ftl_stats_find (const struct ftl_stat_set *set,
                                              const char *path);
/* Its number (or a bool's 0/1), or dflt if absent or not a number. */
extern double ftl_stats_num (const struct ftl_stat_set *set,
                             const char *path, double dflt);

/* Render the handle's statistics with FTL_STATS_SERVER into a new
 * buffer (*json, NUL-terminated, *len bytes; free it).  Returns 0 or a
 * negative errno.
 */
extern int ftl_stats_snapshot (struct ftl *ftl, char **json, size_t *len);

/* The JSON text on one line: whitespace outside strings removed. */
extern void ftl_json_compact (const char *json, FILE *fp);

/* A timeline line on fp: {"time": wall clock seconds, "elapsed_s",
 * "interval_s", "rates": {...}, "stats": <json compacted>}, then a
 * newline.  prev is the previous snapshot (NULL for the first: the
 * rates are then over the whole life of the counters, since time 0 of
 * elapsed).  Returns 0 or -EIO.
 */
extern int ftl_render_timeline_line (const struct ftl_stat_set *prev,
                                     const struct ftl_stat_set *cur,
                                     const char *json, double time,
                                     double elapsed, double interval,
                                     FILE *fp);

/* The Prometheus text exposition format of a parsed statistics object.
 * Returns 0 or -EIO.
 */
extern int ftl_render_prometheus (const struct ftl_stat_set *set, FILE *fp);

#ifdef __cplusplus
}
#endif

#endif /* FTL_METRICS_H */
