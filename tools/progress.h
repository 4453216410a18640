/* ftlctl: a progress line for long walks.
 *
 * On a terminal (stderr is a tty) a line "\rWHAT: 42%" is redrawn on
 * stderr at most every 100 ms; otherwise nothing is ever printed.
 * Anything else printed while a line is shown must call
 * progress_clear first.
 */

#ifndef FTLCTL_PROGRESS_H
#define FTLCTL_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct progress {
  bool enabled;                 /* stderr is a terminal */
  bool shown;                   /* a line is on the screen */
  const char *what;
  uint64_t done, total;
  int64_t last;                 /* monotonic time of the last redraw, us */
  int percent;                  /* the value shown */
};

extern void progress_start (struct progress *p, const char *what,
                            uint64_t total);
/* n more units of work are done. */
extern void progress_add (struct progress *p, uint64_t n);
/* Erase the line (it comes back at the next redraw). */
extern void progress_clear (struct progress *p);

#endif /* FTLCTL_PROGRESS_H */
