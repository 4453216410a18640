/* nbdkit-ftl: the statistics writer: the stats file, the timeline, the
 * Prometheus metrics file and the /metrics endpoint.
 *
 * When the user gives stats=PATH the plugin keeps PATH up to date with
 * the statistics JSON (ftl_render_json of a snapshot, metrics.h);
 * metrics=PATH keeps a Prometheus text file beside it (for
 * node_exporter's textfile collector), rendered from the same snapshot.  Both are replaced
 * atomically:
 *
 *   - once when the server is ready (stats_init),
 *   - after every flush: the flush wakes the thread (stats_flushed),
 *     which writes them at once, outside the flush,
 *   - every interval seconds while the disk is busy, from a background
 *     thread (stats_start .. stats_stop); "busy" means the host counters
 *     changed since the file was last written,
 *   - and a final time at shutdown (stats_stop).
 *
 * stats-log=PATH appends one timeline line (metrics.h) when the server
 * is ready, at every interval while the disk is busy and at the first
 * idle interval after (so that rates fall back to zero), and at
 * shutdown; never on flushes, so the lines keep their interval.
 *
 * metrics-port=N serves the metrics on http://127.0.0.1:N/metrics
 * (libmicrohttpd, from stats_start to stats_stop), rendered at each
 * scrape.
 *
 * One mutex in stats-thread.c serializes every write and protects the
 * thread state, so these calls may come from any thread.  None of them
 * may race with ftl_close.
 */

#ifndef NBDKIT_FTL_STATS_THREAD_H
#define NBDKIT_FTL_STATS_THREAD_H

#include <stdbool.h>

struct ftl;

/* The keys this module owns (stats-log=, metrics=, metrics-port=):
 * returns false if key is not one of them, else true with *r set to 0,
 * or to -1 after nbdkit_error.
 */
extern bool stats_config (const char *key, const char *value, int *r);
#define STATS_CONFIG_HELP \
  "stats-log=<FILENAME>           Append a timeline line every stats-interval.\n" \
  "metrics=<FILENAME>             Write Prometheus metrics to this file.\n" \
  "metrics-port=<PORT>            Serve them on http://127.0.0.1:PORT/metrics.\n"
/* Check the paths are writable.  Returns 0, or -1 after nbdkit_error. */
extern int stats_config_complete (void);
extern void stats_unload (void);

/* Remember where (path: stats=, may be NULL) and how often to write,
 * and write the outputs once.  Does nothing if no output is wanted.
 * Returns 0, or -1 after nbdkit_error.
 */
extern int stats_init (struct ftl *ftl, const char *path, unsigned interval);

/* Start the background thread and the HTTP endpoint.  Does nothing if
 * stats_init did nothing.  Returns 0, or -1 after nbdkit_error.
 */
extern int stats_start (void);

/* A flush completed: wake the thread, which rewrites the stats and
 * metrics files at once (flushes that complete while it writes make
 * one rewrite more).  The flush waits neither for the files nor for
 * the lock held while they are written.  Does nothing while the thread
 * is not running (no statistics, or before stats_start).  A failure to
 * write is reported but never fails I/O.
 */
extern void stats_flushed (void);

/* Stop the thread and the endpoint without waiting for the end of an
 * interval, write everything a final time and forget the ftl handle.
 */
extern void stats_stop (void);

#endif /* NBDKIT_FTL_STATS_THREAD_H */
