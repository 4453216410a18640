/* ftlctl: reading statistics files back: a timeline (stats-log=, one
 * JSON object a line, metrics.h) or a stats file (stats=, one JSON
 * object over many lines).  json-glib parses them; its tree is
 * flattened into a struct ftl_stat_set (metrics.h: every member in
 * document order with its path, "stats.host.write_pages"), which the
 * commands read with ftl_stats_find and ftl_stats_num.
 */

#ifndef FTLCTL_TIMELINE_H
#define FTLCTL_TIMELINE_H

#include <stdbool.h>

#include "ftl/metrics.h"

/* Called for each line of a timeline, read, with its line number.
 * Return false to stop.
 */
typedef bool (*timeline_fn) (void *opaque, const struct ftl_stat_set *line,
                             unsigned long lineno);

/* Read the timeline at path.  A line that is not a JSON object is an
 * error naming the file and the line number, except a last line
 * without its newline (a writer may be appending it): that one is
 * skipped.  Returns the number of lines read, or -1 after printing why.
 */
extern long timeline_read (const char *path, timeline_fn fn, void *opaque);

/* Read a whole file as one JSON object (a stats file) or, if it holds
 * several lines each an object, the last line of a timeline.  On
 * success sets *set and returns 0; *timeline says which it was, and for
 * a timeline *prev holds the line before the last (empty if none).
 * Returns -1 after printing why.
 */
extern int stats_file_read (const char *path, struct ftl_stat_set *set,
                            struct ftl_stat_set *prev, bool *timeline);

#endif /* FTLCTL_TIMELINE_H */
