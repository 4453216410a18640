/* ftlctl: reading statistics files back.  See timeline.h. */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftlctl.h"
#include "timeline.h"

long
timeline_read (const char *path, timeline_fn fn, void *opaque)
{
  FILE *fp = fopen (path, "r");
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  unsigned long lineno = 0;
  long count = 0;
  char err[200];

  if (fp == NULL) {
    ftlctl_error ("%s: %s", path, strerror (errno));
    return -1;
  }
  while ((n = getline (&line, &cap, fp)) != -1) {
    struct ftl_stat_set set = { 0 };
    bool complete = n > 0 && line[n - 1] == '\n';
    bool more;

    lineno++;
    if (strspn (line, " \t\r\n") == (size_t) n)
      continue;
    if (ftl_stats_parse (line, n, &set, err, sizeof err) == -1 ||
        set.n == 0 || strchr (line, '{') == NULL) {
      ftl_stats_free (&set);
      if (!complete)            /* being appended */
        break;
      ftlctl_error ("%s:%lu: not a timeline line (one JSON object): %s",
                    path, lineno, err[0] ? err : "empty object");
      free (line);
      fclose (fp);
      return -1;
    }
    count++;
    more = fn (opaque, &set, lineno);
    ftl_stats_free (&set);
    if (!more)
      break;
  }
  free (line);
  fclose (fp);
  return count;
}

int
stats_file_read (const char *path, struct ftl_stat_set *set,
                 struct ftl_stat_set *prev, bool *timeline)
{
  char *text = NULL, err[200];
  gsize len;
  GError *gerr = NULL;
  char *last, *before;

  memset (set, 0, sizeof *set);
  memset (prev, 0, sizeof *prev);
  if (!g_file_get_contents (path, &text, &len, &gerr)) {
    ftlctl_error ("%s", gerr->message);
    g_error_free (gerr);
    return -1;
  }
  /* A timeline's lines each begin with {"time": */
  *timeline = strncmp (text, "{\"time\":", 8) == 0;
  if (!*timeline) {
    if (ftl_stats_parse (text, len, set, err, sizeof err) == -1) {
      ftlctl_error ("%s: not a statistics file: %s", path, err);
      g_free (text);
      return -1;
    }
    g_free (text);
    return 0;
  }
  /* The last two complete lines. */
  while (len > 0 && text[len - 1] != '\n')
    len--;                      /* a line being appended */
  text[len] = '\0';
  if (len > 0)
    text[--len] = '\0';
  last = strrchr (text, '\n');
  if (last) {
    *last++ = '\0';
    before = strrchr (text, '\n');
    before = before ? before + 1 : text;
    if (ftl_stats_parse (before, strlen (before), prev, err, sizeof err)
        == -1)
      ftl_stats_free (prev);
  }
  else
    last = text;
  if (ftl_stats_parse (last, strlen (last), set, err, sizeof err) == -1) {
    ftlctl_error ("%s: the last line is not a timeline line: %s", path, err);
    ftl_stats_free (prev);
    g_free (text);
    return -1;
  }
  g_free (text);
  return 0;
}
