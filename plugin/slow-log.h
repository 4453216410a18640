/* nbdkit-ftl: the slow-request log (slow-log=PATH).
 *
 * The library keeps the requests that took at least slow-threshold=,
 * and those its deadline handler reset or aborted, in a ring
 * (ftl_slow_requests, ftl.h).  A thread of the plugin drains it and
 * appends one JSON object a line to PATH, so that no request ever
 * waits for the file: a request only copies its record into the ring
 * under a mutex, and when the writer falls behind by a whole ring the
 * library counts the records it drops (slow.dropped in the statistics).
 *
 * Rotation is the user's: the file is opened for appending, and opened
 * again (under its name) after SIGHUP or when the name no longer leads
 * to the open file (moved or deleted: its device and inode differ),
 * checked at least every 200 ms.
 *
 * One thread, started by slowlog_start and stopped (after a last drain)
 * by slowlog_stop; nothing here is called on the data path.
 */

#ifndef NBDKIT_FTL_SLOW_LOG_H
#define NBDKIT_FTL_SLOW_LOG_H

#include <stdbool.h>

struct ftl;

/* slow-log=: returns false if key is not it, else true with *r set to
 * 0, or to -1 after nbdkit_error.
 */
extern bool slowlog_config (const char *key, const char *value, int *r);
#define SLOWLOG_CONFIG_HELP \
  "slow-log=<FILENAME>            Append a JSON line per slow request.\n"
/* Check that the file can be opened.  0, or -1 after nbdkit_error. */
extern int slowlog_config_complete (void);
/* Was slow-log= given? */
extern bool slowlog_wanted (void);
extern void slowlog_unload (void);

/* Open the file, catch SIGHUP, start the writer.  Does nothing without
 * slow-log=.  0, or -1 after nbdkit_error.
 */
extern int slowlog_start (struct ftl *ftl);
/* Write what is left and stop (before ftl_close). */
extern void slowlog_stop (void);

#endif /* NBDKIT_FTL_SLOW_LOG_H */
