/* ftlctl top: watch a disk's statistics in the terminal.
 *
 *   ftlctl top [--once] [--interval SECS] FILE
 *
 * FILE is the plugin's stats= file or its stats-log= timeline (or a
 * replay's).  Every interval the screen is redrawn with write
 * amplification, throughput, erase blocks, GC, the write cache,
 * deadlines, latency percentiles, where the time of each kind of
 * request goes (its stages' shares of all its time, and of its p50 and
 * p99.9 requests), wear and health.  Rates come from the
 * timeline's last line, or, for a stats file, from the change since the
 * previous reading.  --once prints one screen without terminal control
 * codes and exits (for scripts and tests).  Every health.* member is
 * shown, whatever it is named, so new health statistics need no change
 * here.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "ftlctl.h"
#include "timeline.h"

struct view {
  struct ftl_stat_set set, prev;
  bool timeline;
  /* A stats file: the previous reading and when it was taken. */
  struct ftl_stat_set last;
  bool has_last;
  double last_time, now;
};

/* A statistic: timelines hold them under "stats.". */
static double
st (const struct view *v, const char *path)
{
  char full[256];

  if (!v->timeline)
    return ftl_stats_num (&v->set, path, NAN);
  snprintf (full, sizeof full, "stats.%s", path);
  return ftl_stats_num (&v->set, full, NAN);
}

/* A rate in units per second: the timeline's, or the change of a
 * stats file's counter since the last reading (NAN if unknown).
 */
static double
rate (const struct view *v, const char *rate_name, const char *counter)
{
  char full[256];

  if (v->timeline) {
    snprintf (full, sizeof full, "rates.%s", rate_name);
    return ftl_stats_num (&v->set, full, NAN);
  }
  if (!v->has_last || v->now <= v->last_time)
    return NAN;
  return (ftl_stats_num (&v->set, counter, 0) -
          ftl_stats_num (&v->last, counter, 0)) / (v->now - v->last_time);
}

static void
num (double d, const char *unit)
{
  if (isnan (d))
    printf ("%10s%s", "-", unit);
  else if ((d == floor (d) || fabs (d) >= 100) && fabs (d) < 1e12)
    printf ("%10.0f%s", d, unit);
  else
    printf ("%10.2f%s", d, unit);
}

static const char *
human_bytes (double b, char *buf, size_t n)
{
  static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
  unsigned u = 0;

  if (isnan (b))
    return "-";
  while (b >= 1024 && u + 1 < G_N_ELEMENTS (units)) {
    b /= 1024;
    u++;
  }
  snprintf (buf, n, u ? "%.1f %s" : "%.0f %s", b, units[u]);
  return buf;
}

/* Where each kind's time goes: the stages' shares of all its time
 * (from the sums), and of the requests at its p50 and p99.9.
 */
static void
draw_stages (const struct view *v)
{
  static const char *const rows[][2] = {
    { "all", NULL }, { "p50", "p50" }, { "p99.9", "p999" },
  };
  bool header = false;

  for (int op = 0; op < FTL_OP__MAX; op++) {
    const char *name = ftl_op_name (op);
    char path[96];
    double count, sum;

    snprintf (path, sizeof path, "latency_us.%s.count", name);
    count = st (v, path);
    snprintf (path, sizeof path, "latency_us.%s.sum", name);
    sum = st (v, path);
    if (isnan (count) || count == 0 || isnan (sum))
      continue;                 /* none, or a file without stages */
    if (!header) {
      printf ("stages %%  ");
      for (int g = 0; g < FTL_STAGE__MAX; g++)
        printf (" %7s", ftl_stage_name (g));
      printf ("\n");
      header = true;
    }
    for (size_t r = 0; r < G_N_ELEMENTS (rows); r++) {
      printf ("  %-8s%-6s", r == 0 ? name : "", rows[r][0]);
      for (int g = 0; g < FTL_STAGE__MAX; g++) {
        double share;
        if (rows[r][1] == NULL) {
          snprintf (path, sizeof path, "latency_us.%s.%s.sum", name,
                    ftl_stage_name (g));
          share = sum > 0 ? st (v, path) / sum : NAN;
        }
        else {
          snprintf (path, sizeof path, "latency_us.%s.split.%s.%s", name,
                    rows[r][1], ftl_stage_name (g));
          share = st (v, path);
        }
        if (isnan (share))
          printf (" %7s", "-");
        else
          printf (" %7.1f", 100 * share);
      }
      printf ("\n");
    }
  }
}

static void
draw (const struct view *v, const char *file)
{
  char b1[32], b2[32];
  double waf_i = v->timeline
    ? ftl_stats_num (&v->set, "rates.waf_interval", NAN) : NAN;
  time_t t = time (NULL);
  struct tm tm;
  char when[32];
  const char *prefix = v->timeline ? "stats.health." : "health.";
  bool any;

  localtime_r (&t, &tm);
  strftime (when, sizeof when, "%H:%M:%S", &tm);
  printf ("nbdkit-ftl %s (%s) at %s\n", file,
          v->timeline ? "timeline, last line" : "stats file", when);
  printf ("disk       %s logical, %.0f erase blocks of %s, OP %.1f%%%s\n",
          human_bytes (st (v, "geometry.logical_bytes"), b1, sizeof b1),
          st (v, "geometry.blocks"),
          human_bytes (st (v, "geometry.page_size") *
                       st (v, "geometry.pages_per_block"), b2, sizeof b2),
          st (v, "geometry.op_percent"),
          st (v, "readonly") == 1 ? ", READ-ONLY" : "");
  printf ("\nWAF        ");
  num (st (v, "waf"), " cumulative");
  num (waf_i, " this interval\n");
  printf ("host       ");
  num (rate (v, "write_pages_per_s", "host.write_pages"), " write pages/s");
  num (rate (v, "read_pages_per_s", "host.read_pages"), " read pages/s");
  num (rate (v, "trim_pages_per_s", "host.trim_pages"), " trim pages/s\n");
  printf ("media      ");
  num (rate (v, "program_pages_per_s", "media.program_pages"),
       " program pages/s");
  num (rate (v, "erases_per_s", "media.erases"), " erases/s\n");
  printf ("GC         ");
  num (rate (v, "gc_copied_pages_per_s", "gc.copied_pages"),
       " copied pages/s");
  num (st (v, "gc.copied_pages"), " copied");
  num (st (v, "gc.runs"), " victims\n");
  /* Hot/cold separation: the server's stats file has it, ftlctl info's
   * JSON not.
   */
  if (!isnan (st (v, "hot_cold.separating"))) {
    printf ("hot/cold   %10s", st (v, "hot_cold.separating") == 1
            ? "apart" : "one log");
    num (st (v, "hot_cold.lift"), " lift");
    num (st (v, "hot_cold.switches"), " switches\n");
  }
  printf ("blocks     ");
  num (st (v, "blocks.free"), " free");
  num (st (v, "blocks.open"), " open");
  num (st (v, "blocks.full"), " full");
  num (st (v, "blocks.retired"), " retired\n");
  printf ("cache      %10s size %10s dirty",
          human_bytes (st (v, "cache.size_bytes"), b1, sizeof b1),
          human_bytes (st (v, "cache.dirty_bytes"), b2, sizeof b2));
  num (st (v, "cache.coalesced_pages"), " coalesced pages\n");
  printf ("deadlines  ");
  num (st (v, "deadline.requests"), " requests");
  num (st (v, "deadline.expired"), " expired");
  num (st (v, "deadline.reset"), " reset");
  num (st (v, "deadline.aborted"), " aborted\n");
  if (st (v, "deadline.stalled") == 1)
    printf ("           THE BACKING FILE IS STALLED\n");
  printf ("latency us %10s %10s %10s %10s %10s\n",
          "count", "p50", "p99", "p99.9", "max");
  for (int op = 0; op < FTL_OP__MAX; op++) {
    char path[64];
    const char *name = ftl_op_name (op);
    double count;

    snprintf (path, sizeof path, "latency_us.%s.count", name);
    count = st (v, path);
    if (isnan (count) || count == 0)
      continue;
    printf ("  %-8s", name);
    num (count, " ");
    snprintf (path, sizeof path, "latency_us.%s.p50", name);
    num (st (v, path), " ");
    snprintf (path, sizeof path, "latency_us.%s.p99", name);
    num (st (v, path), " ");
    snprintf (path, sizeof path, "latency_us.%s.p999", name);
    num (st (v, path), " ");
    snprintf (path, sizeof path, "latency_us.%s.max", name);
    num (st (v, path), "\n");
  }
  draw_stages (v);
  printf ("wear       ");
  num (st (v, "wear.erase_min"), " min");
  num (st (v, "wear.erase_mean"), " mean");
  num (st (v, "wear.erase_max"), " max erases");
  num (st (v, "wear.endurance"), " endurance\n");
  printf ("health    ");
  any = false;
  for (size_t i = 0; i < v->set.n; i++) {
    const struct ftl_stat *s = &v->set.v[i];
    if (strncmp (s->path, prefix, strlen (prefix)) != 0 ||
        s->kind == FTL_STAT_OBJECT || s->kind == FTL_STAT_ARRAY ||
        s->kind == FTL_STAT_END)
      continue;
    printf (" %s ", s->path + strlen (prefix));
    if (s->kind == FTL_STAT_STRING)
      printf ("%s", s->str);
    else if (s->kind == FTL_STAT_BOOL)
      printf ("%s", s->num ? "yes" : "no");
    else if (s->num == floor (s->num))
      printf ("%.0f", s->num);
    else
      printf ("%.2f", s->num);
    any = true;
  }
  printf ("%s\n", any ? "" : " -");
  fflush (stdout);
}

static volatile sig_atomic_t interrupted;

static void
on_signal (int sig)
{
  interrupted = 1;
}

int
cmd_top (int argc, char **argv)
{
  gboolean once = FALSE;
  gdouble interval = 1;
  GOptionEntry entries[] = {
    { "once", '1', 0, G_OPTION_ARG_NONE, &once,
      "Print one screen, without terminal codes, and exit", NULL },
    { "interval", 'n', 0, G_OPTION_ARG_DOUBLE, &interval,
      "Seconds between refreshes (default 1)", "SECS" },
    { NULL }
  };
  GOptionContext *ctx = g_option_context_new ("FILE");
  struct view v = { 0 };
  int status = FTLCTL_EXIT_ERROR;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_summary (ctx,
    "Watch the statistics of a disk: the plugin's stats= file or its\n"
    "stats-log= timeline.  Ctrl-C stops.");
  if (!parse_options (ctx, &argc, &argv)) {
    status = FTLCTL_EXIT_USAGE;
    goto out;
  }
  if (argc != 2) {
    usage_error (ctx, "give one statistics file or timeline");
    status = FTLCTL_EXIT_USAGE;
    goto out;
  }
  if (!(interval >= 0.1) || !isfinite (interval)) {
    usage_error (ctx, "--interval must be at least 0.1 second");
    status = FTLCTL_EXIT_USAGE;
    goto out;
  }

  signal (SIGINT, on_signal);
  signal (SIGTERM, on_signal);
  while (!interrupted) {
    v.now = g_get_monotonic_time () / 1e6;
    if (stats_file_read (argv[1], &v.set, &v.prev, &v.timeline) == -1) {
      if (once || !v.has_last)
        goto out;
      /* A writer replacing the file: try again at the next refresh. */
    }
    else {
      if (!once)
        printf ("\033[H\033[2J");
      draw (&v, argv[1]);
      if (once)
        break;
      ftl_stats_free (&v.last);
      v.last = v.set;
      memset (&v.set, 0, sizeof v.set);
      v.has_last = true;
      v.last_time = v.now;
    }
    ftl_stats_free (&v.set);
    ftl_stats_free (&v.prev);
    g_usleep ((gulong) (interval * 1e6));
  }
  status = FTLCTL_EXIT_OK;

 out:
  ftl_stats_free (&v.set);
  ftl_stats_free (&v.prev);
  ftl_stats_free (&v.last);
  g_option_context_free (ctx);
  return status;
}
