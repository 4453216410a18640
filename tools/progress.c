/* ftlctl: a progress line for long walks.  See progress.h. */

#include <config.h>

#include <stdio.h>
#include <unistd.h>

#include <glib.h>

#include "progress.h"

#define REDRAW_US (100 * 1000)

void
progress_start (struct progress *p, const char *what, uint64_t total)
{
  p->enabled = isatty (STDERR_FILENO);
  p->shown = false;
  p->what = what;
  p->done = 0;
  p->total = total;
  p->last = g_get_monotonic_time ();
  p->percent = -1;
}

void
progress_add (struct progress *p, uint64_t n)
{
  int64_t now;
  int percent;

  p->done += n;
  if (!p->enabled)
    return;
  now = g_get_monotonic_time ();
  if (now - p->last < REDRAW_US)
    return;
  p->last = now;
  percent = p->total ? (int) (100 * MIN (p->done, p->total) / p->total) : 100;
  if (p->shown && percent == p->percent)
    return;
  /* Whatever went to stdout first, so that lines do not interleave. */
  fflush (stdout);
  fprintf (stderr, "\r%s: %d%%", p->what, percent);
  fflush (stderr);
  p->shown = true;
  p->percent = percent;
}

void
progress_clear (struct progress *p)
{
  if (!p->shown)
    return;
  /* Back to the start of the line and clear to its end. */
  fprintf (stderr, "\r\033[K");
  fflush (stderr);
  p->shown = false;
}
