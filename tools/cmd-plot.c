/* ftlctl plot: draw a timeline (stats-log=) with gnuplot.
 *
 *   ftlctl plot [--output PNG] TIMELINE
 *
 * One PNG of seven panels against the elapsed time: host throughput
 * (pages per second written and read, GC copies), write amplification
 * (over each interval and cumulative), free erase blocks, request
 * latency percentiles (p50, p99, p99.9 of reads and writes, log
 * scale), the stages' shares of the writes' and of the reads' time in
 * each interval (stacked), and the erase-count histogram of the last
 * line.  The columns
 * go to a temporary directory that gnuplot reads; gnuplot gets its
 * script on its standard input.
 */

#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>

#include "ftlctl.h"
#include "timeline.h"

/* The kinds whose stages are drawn. */
static const enum ftl_op stage_ops[] = { FTL_OP_WRITE, FTL_OP_READ };
#define NSTAGE_OPS G_N_ELEMENTS (stage_ops)

struct plot {
  FILE *data;
  /* The previous line's stage sums: [op][stage], [op][FTL_STAGE__MAX]
   * the total (us; NAN before the first line).
   */
  double sums[NSTAGE_OPS][FTL_STAGE__MAX + 1];
  double t_first, t_last;       /* elapsed_s of the first and last line */
  /* The histogram of the last line. */
  double first, width;
  GArray *counts;               /* of double */
  unsigned long lines;
};

/* A number or gnuplot's missing-value mark. */
static void
column (FILE *fp, const struct ftl_stat_set *set, const char *path,
        double scale)
{
  const struct ftl_stat *v = ftl_stats_find (set, path);

  if (v && v->kind == FTL_STAT_NUMBER)
    fprintf (fp, " %.6g", v->num * scale);
  else
    fputs (" ?", fp);
}

/* The stages' shares of each drawn kind's time over the interval since
 * the previous line, in percent, stacked (column g holds the shares of
 * stages 0..g), so that filled curves show each stage as a band.
 */
static void
stage_columns (struct plot *p, const struct ftl_stat_set *set)
{
  for (size_t k = 0; k < NSTAGE_OPS; k++) {
    const char *op = ftl_op_name (stage_ops[k]);
    double now[FTL_STAGE__MAX + 1], d, acc = 0;
    char path[96];

    for (int g = 0; g <= FTL_STAGE__MAX; g++) {
      if (g < FTL_STAGE__MAX)
        snprintf (path, sizeof path, "stats.latency_us.%s.%s.sum", op,
                  ftl_stage_name (g));
      else
        snprintf (path, sizeof path, "stats.latency_us.%s.sum", op);
      now[g] = ftl_stats_num (set, path, NAN);
    }
    d = now[FTL_STAGE__MAX] - p->sums[k][FTL_STAGE__MAX];
    for (int g = 0; g < FTL_STAGE__MAX; g++) {
      double share = (now[g] - p->sums[k][g]) / d;
      if (!(d > 0) || isnan (share))
        fputs (" ?", p->data);
      else {
        acc += 100 * share;
        fprintf (p->data, " %.4g", acc);
      }
    }
    memcpy (p->sums[k], now, sizeof now);
  }
}

static bool
add_line (void *opaque, const struct ftl_stat_set *set, unsigned long lineno)
{
  struct plot *p = opaque;
  static const char *const cols[] = {
    "rates.write_pages_per_s", "rates.read_pages_per_s",
    "rates.gc_copied_pages_per_s", "rates.waf_interval", "rates.waf",
    "rates.free_blocks",
    "stats.latency_us.read.p50", "stats.latency_us.read.p99",
    "stats.latency_us.read.p999", "stats.latency_us.write.p50",
    "stats.latency_us.write.p99", "stats.latency_us.write.p999",
  };

  p->t_last = ftl_stats_num (set, "elapsed_s", 0);
  if (p->lines == 0)
    p->t_first = p->t_last;
  column (p->data, set, "elapsed_s", 1);
  for (size_t i = 0; i < G_N_ELEMENTS (cols); i++)
    column (p->data, set, cols[i], 1);
  stage_columns (p, set);
  fputc ('\n', p->data);
  /* Keep the last line's histogram: the elements of its counts. */
  p->first = ftl_stats_num (set, "stats.wear.histogram.first", 0);
  p->width = ftl_stats_num (set, "stats.wear.histogram.width", 1);
  g_array_set_size (p->counts, 0);
  for (size_t i = 0; i < set->n; i++) {
    const struct ftl_stat *v = &set->v[i];
    double c = v->kind == FTL_STAT_NUMBER || v->kind == FTL_STAT_BOOL
      ? v->num : 0;

    if (strncmp (v->path, "stats.wear.histogram.counts[", 28) == 0 &&
        v->kind != FTL_STAT_OBJECT && v->kind != FTL_STAT_ARRAY &&
        v->kind != FTL_STAT_END)
      g_array_append_val (p->counts, c);
  }
  p->lines++;
  return true;
}

/* A kind's stage shares (its stacked columns), a band per stage, the
 * largest sum drawn first.  The x range is the timeline's (two format
 * arguments): a kind with no request has no point to scale it on.
 */
#define STAGES_PLOT(kind, queue, cache, gc, media, sync, other) \
  "set title '" kind " time by stage (share of each interval)'\n"\
  "set ylabel '%%'\n"\
  "set yrange [0:100]\n"\
  "set xrange [%g:%g]\n"\
  "set style fill solid 0.6 noborder\n"\
  "plot d u 1:" #other " w filledcurves x1 t 'other', "\
  "d u 1:" #sync " w filledcurves x1 t 'sync', "\
  "d u 1:" #media " w filledcurves x1 t 'media', "\
  "d u 1:" #gc " w filledcurves x1 t 'gc', "\
  "d u 1:" #cache " w filledcurves x1 t 'cache', "\
  "d u 1:" #queue " w filledcurves x1 t 'queue'\n"\
  "set autoscale xy\n"

#define SCRIPT \
  "set terminal pngcairo size 1200,2100 noenhanced font ',10'\n"\
  "set output '%s'\n"\
  "set datafile missing '?'\n"\
  "set multiplot layout 7,1 title '%s'\n"\
  "set grid\n"\
  "set key outside right\n"\
  "set xlabel 'elapsed (s)'\n"\
  "d = '%s/timeline.dat'\n"\
  "set title 'Throughput'\n"\
  "set ylabel 'pages/s'\n"\
  "plot d u 1:2 w l t 'host write', d u 1:3 w l t 'host read', "\
  "d u 1:4 w l t 'GC copy'\n"\
  "set title 'Write amplification'\n"\
  "set ylabel 'WAF'\n"\
  "set yrange [0:*]\n"\
  "plot d u 1:5 w lp pt 7 ps 0.4 t 'interval', d u 1:6 w l lw 2 t 'cumulative'\n"\
  "set autoscale y\n"\
  "set title 'Free erase blocks'\n"\
  "set ylabel 'blocks'\n"\
  "plot d u 1:7 w steps t 'free'\n"\
  "set title 'Request latency (since start)'\n"\
  "set ylabel 'us'\n"\
  "set logscale y\n"\
  "plot d u 1:($8>0?$8:1/0) w l t 'read p50', d u 1:($9>0?$9:1/0) w l t 'read p99', "\
  "d u 1:($10>0?$10:1/0) w l t 'read p99.9', d u 1:($11>0?$11:1/0) w l t 'write p50', "\
  "d u 1:($12>0?$12:1/0) w l t 'write p99', d u 1:($13>0?$13:1/0) w l t 'write p99.9'\n"\
  "unset logscale y\n"\
  STAGES_PLOT ("Write", 14, 15, 16, 17, 18, 19) \
  STAGES_PLOT ("Read", 20, 21, 22, 23, 24, 25) \
  "set title 'Erase counts (last line)'\n"\
  "set xlabel 'erase count'\n"\
  "set ylabel 'erase blocks'\n"\
  "set yrange [0:*]\n"\
  "set xrange [%g:%g]\n"\
  "set style fill solid 0.5\n"\
  "set boxwidth %g\n"\
  "plot '%s/histogram.dat' u 1:2 w boxes t 'blocks'\n"\
  "unset multiplot\n"

int
cmd_plot (int argc, char **argv)
{
  gchar *output = NULL;
  GOptionEntry entries[] = {
    { "output", 'o', 0, G_OPTION_ARG_FILENAME, &output,
      "Write the PNG here (default: TIMELINE with .png)", "PNG" },
    { NULL }
  };
  GOptionContext *ctx = g_option_context_new ("TIMELINE");
  struct plot p = { .counts = g_array_new (FALSE, FALSE, sizeof (double)) };
  char *dir = NULL, *datafile = NULL, *histfile = NULL, *title;
  int status = FTLCTL_EXIT_ERROR;
  FILE *hist = NULL, *gp = NULL;
  double first, width;
  unsigned nbuckets = 0;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_summary (ctx,
    "Draw a timeline written by the plugin's stats-log= (or by ftlctl\n"
    "replay --stats-log) as a PNG with gnuplot: throughput, write\n"
    "amplification, free erase blocks, latency percentiles, the shares\n"
    "of the stages of write and read time, and the erase-count histogram.");
  if (!parse_options (ctx, &argc, &argv)) {
    status = FTLCTL_EXIT_USAGE;
    goto out;
  }
  if (argc != 2) {
    usage_error (ctx, "give one timeline file");
    status = FTLCTL_EXIT_USAGE;
    goto out;
  }
  if (output == NULL) {
    const char *dot = strrchr (argv[1], '.');
    const char *slash = strrchr (argv[1], '/');
    size_t n = dot && (!slash || dot > slash) ? (size_t) (dot - argv[1])
      : strlen (argv[1]);
    output = g_strdup_printf ("%.*s.png", (int) n, argv[1]);
  }
  if (strchr (output, '\'') || strchr (argv[1], '\'')) {
    ftlctl_error ("plot: file names with a quote (') are not supported");
    goto out;
  }

  dir = g_dir_make_tmp ("ftlctl-plot-XXXXXX", NULL);
  if (dir == NULL) {
    ftlctl_error ("plot: cannot make a temporary directory");
    goto out;
  }
  datafile = g_build_filename (dir, "timeline.dat", NULL);
  histfile = g_build_filename (dir, "histogram.dat", NULL);
  for (size_t k = 0; k < NSTAGE_OPS; k++)
    for (int g = 0; g <= FTL_STAGE__MAX; g++)
      p.sums[k][g] = NAN;
  p.data = fopen (datafile, "w");
  if (p.data == NULL) {
    ftlctl_error ("%s: %s", datafile, strerror (errno));
    goto out;
  }
  if (timeline_read (argv[1], add_line, &p) == -1)
    goto out;
  if (fclose (p.data) == EOF) {
    p.data = NULL;
    ftlctl_error ("%s: %s", datafile, strerror (errno));
    goto out;
  }
  p.data = NULL;
  if (p.lines == 0) {
    ftlctl_error ("%s: no timeline lines", argv[1]);
    goto out;
  }

  hist = fopen (histfile, "w");
  if (hist == NULL) {
    ftlctl_error ("%s: %s", histfile, strerror (errno));
    goto out;
  }
  first = p.first;
  width = p.width;
  for (unsigned i = 0; i < p.counts->len; i++) {
    fprintf (hist, "%g %g\n", first + i * width,
             g_array_index (p.counts, double, i));
    nbuckets++;
  }
  fclose (hist);

  fflush (stdout);
  gp = popen ("gnuplot", "w");
  if (gp == NULL) {
    ftlctl_error ("plot: cannot run gnuplot: %s", strerror (errno));
    goto out;
  }
  title = g_path_get_basename (argv[1]);
  if (!(p.t_last > p.t_first))
    p.t_last = p.t_first + 1;   /* one line: gnuplot wants a range */
  fprintf (gp, SCRIPT, output, title, dir, p.t_first, p.t_last,
           p.t_first, p.t_last, first - width,
           first + (nbuckets + 0.5) * width, width * 0.9, dir);
  g_free (title);
  int r = pclose (gp);
  if (r == -1 || !WIFEXITED (r) || WEXITSTATUS (r) != 0) {
    ftlctl_error ("plot: gnuplot failed%s",
                  WIFEXITED (r) && WEXITSTATUS (r) == 127
                  ? " (not installed? Debian: apt-get install gnuplot-nox)"
                  : "");
    goto out;
  }
  printf ("%s: %lu lines\n", output, p.lines);
  status = FTLCTL_EXIT_OK;

 out:
  if (p.data)
    fclose (p.data);
  if (datafile)
    unlink (datafile);
  if (histfile)
    unlink (histfile);
  if (dir)
    rmdir (dir);
  g_free (datafile);
  g_free (histfile);
  g_free (dir);
  g_free (output);
  g_array_free (p.counts, TRUE);
  g_option_context_free (ctx);
  return status;
}
