/* nbdkit-ftl: the Prometheus endpoint, http://127.0.0.1:PORT/metrics,
 * and the statistics JSON at /stats.json.
 *
 * libmicrohttpd does the HTTP in its own thread; each GET of /metrics
 * takes a snapshot of the handle's statistics (ftl_stats_snapshot) and
 * renders it as the text exposition format (ftl_render_prometheus);
 * of /stats.json, as the stats= file's JSON (ftl_render_json), live
 * where the file is rewritten only every stats-interval while the host
 * counters move.  Only the loopback address is bound: the statistics
 * are for the host's own collector.  Any other path is 404, any other
 * method 405.
 */

#ifndef NBDKIT_FTL_METRICS_HTTP_H
#define NBDKIT_FTL_METRICS_HTTP_H

struct ftl;

/* Start serving.  Returns 0, or -1 after nbdkit_error. */
extern int metrics_http_start (struct ftl *ftl, unsigned port);
/* Stop serving (waits for a scrape in progress); nothing if not started. */
extern void metrics_http_stop (void);

#endif /* NBDKIT_FTL_METRICS_HTTP_H */
