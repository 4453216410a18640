/* nbdkit-ftl: the statistics file writer.
 *
 * When the user gives stats=PATH the plugin keeps PATH up to date with
 * the JSON written by ftl_write_stats_json:
 *
 *   - once when the server is ready (stats_init),
 *   - after every flush (stats_write),
 *   - every interval seconds while the disk is busy, from a background
 *     thread (stats_start .. stats_stop); "busy" means the host counters
 *     changed since the file was last written,
 *   - and a final time at shutdown (stats_stop).
 *
 * One mutex in stats-thread.c serializes every write of the file and
 * protects the thread state, so these calls may come from any thread.
 * None of them may race with ftl_close.
 */

#ifndef NBDKIT_FTL_STATS_THREAD_H
#define NBDKIT_FTL_STATS_THREAD_H

struct ftl;

/* Remember where and how often to write, and write the file once.
 * Returns 0, or -1 after nbdkit_error.
 */
extern int stats_init (struct ftl *ftl, const char *path, unsigned interval);

/* Start the background thread.  Does nothing if stats_init was not
 * called.  Returns 0, or -1 after nbdkit_error.
 */
extern int stats_start (void);

/* Write the file now.  Does nothing if stats_init was not called.  A
 * failure is reported but not returned: statistics never fail I/O.
 */
extern void stats_write (void);

/* Stop the thread without waiting for the end of an interval, write
 * the file a final time and forget the ftl handle.
 */
extern void stats_stop (void);

#endif /* NBDKIT_FTL_STATS_THREAD_H */
