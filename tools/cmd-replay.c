/* ftlctl replay: drive the FTL offline from a block I/O trace.
 *
 *   ftlctl replay [OPTION...] TRACE [KEY=VALUE...]
 *
 * The keys are the plugin's (nbdkit-ftl-plugin(1)): geometry, OP,
 * policies, write cache, timing model; file= names the image (by
 * default a temporary one, removed at the end) and size= its size (by
 * default the trace's extent, rounded up to a MiB, at least 64 MiB).  The trace is read
 * whole first (trace.h), then replayed in its order with one request
 * at a time, as fast as the FTL goes or, with --pace, at the recorded
 * pace (--speed times it).  At the end, as the plugin does at shutdown,
 * the write cache is destaged and the statistics JSON is written (to
 * stdout, or to stats=); a summary of what was replayed and skipped
 * goes to stderr.
 *
 * Background work: by default as in the plugin, the background thread
 * and the destager run beside the requests, so GC timing depends on
 * the machine.  --background=inline runs that work between requests
 * until none is left (ftl_background_step): the same trace then gives
 * the same counters on every run.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <glib.h>

#include "ftlctl.h"
#include "ftl/keys.h"
#include "ftl/metrics.h"
#include "progress.h"
#include "trace.h"

/* The size of a new image when size= is not given and the trace is
 * smaller: room for the spare erase blocks of the default geometry.
 */
#define REPLAY_MIN_SIZE (64 * 1024 * 1024)

struct replay_keys {
  struct ftl_keys ftl;          /* the FTL's keys, as the plugin's */
  char *file;
  char *stats;                  /* stats= */
  char *stats_log;              /* stats-log= */
  char *metrics;                /* metrics= */
  double stats_interval;        /* seconds of the trace */
};

/* One KEY=VALUE: the plugin's keys, with the plugin's limits. */
static bool
parse_key (struct replay_keys *k, const char *arg)
{
  const char *eq = strchr (arg, '=');
  char *key, err[256];
  const char *v;
  bool ok = true;
  int r;

  if (eq == NULL || eq == arg) {
    ftlctl_error ("replay: expected KEY=VALUE: '%s'", arg);
    return false;
  }
  key = g_strndup (arg, eq - arg);
  v = eq + 1;
  r = ftl_keys_set (&k->ftl, key, v, err, sizeof err);
  if (r == -1) {
    ftlctl_error ("%s", err);
    ok = false;
  }
  else if (r == 1)
    ;
  else if (strcmp (key, "file") == 0) {
    g_free (k->file);
    k->file = g_strdup (v);
  }
  else if (strcmp (key, "stats") == 0) {
    g_free (k->stats);
    k->stats = g_strdup (v);
  }
  else if (strcmp (key, "stats-log") == 0) {
    g_free (k->stats_log);
    k->stats_log = g_strdup (v);
  }
  else if (strcmp (key, "metrics") == 0) {
    g_free (k->metrics);
    k->metrics = g_strdup (v);
  }
  else if (strcmp (key, "stats-interval") == 0) {
    ok = parse_double (key, v, &k->stats_interval);
    if (ok && k->stats_interval <= 0) {
      ftlctl_error ("stats-interval must be positive: %s", v);
      ok = false;
    }
  }
  else {
    ftlctl_error ("replay: unknown key '%s' (the plugin's keys: "
                  "nbdkit-ftl-plugin(1))", key);
    ok = false;
  }
  g_free (key);
  return ok;
}

/* The timeline of a replay: lines at trace times. */
struct timeline {
  const char *path;
  struct ftl_stat_set prev;
  bool has_prev;
  double last_t;
};

static int
timeline_line (struct ftl *ftl, struct timeline *tl, double t0, double t)
{
  struct ftl_stat_set set = { 0 };
  FILE *fp;
  int r;

  if ((r = ftl_stats_snapshot (ftl, FTL_STATS_SERVER, &set)) < 0)
    return r;
  fp = fopen (tl->path, "a");
  if (fp == NULL)
    r = -errno;
  else {
    r = ftl_render_timeline_line (tl->has_prev ? &tl->prev : NULL, &set,
                                  t0 + t, t,
                                  tl->has_prev ? t - tl->last_t : 0, fp);
    if (fclose (fp) == EOF && r == 0)
      r = -errno;
  }
  ftl_stats_free (&tl->prev);
  tl->prev = set;
  tl->has_prev = true;
  tl->last_t = t;
  return r;
}

static int
write_json (void *opaque, FILE *fp)
{
  return ftl_render_stats_json (opaque, FTL_STATS_SERVER, fp);
}

static int
write_prom (void *opaque, FILE *fp)
{
  struct ftl *ftl = opaque;
  struct ftl_stat_set set = { 0 };
  int r;

  if ((r = ftl_stats_snapshot (ftl, FTL_STATS_SERVER, &set)) < 0)
    return r;
  r = ftl_render_prometheus (&set, fp);
  ftl_stats_free (&set);
  return r;
}

static void
log_message (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level == FTL_LOG_ERROR)
    ftlctl_error ("%s: %s", (const char *) opaque, msg);
}

/* With the background thread: wait until it has nothing left to do,
 * as a server idles after its last request before it stops, so that
 * the statistics do not depend on where GC was when the trace ended.
 * The thread sleeps up to 100 ms when idle and 1 s after an error:
 * idle is when the counters stay the same for 1.2 s.  At most 10 s.
 */
static void
settle (struct ftl *ftl)
{
  struct ftl_stats a, b;
  int same = 0;

  ftl_get_stats (ftl, &a);
  for (int i = 0; i < 66 && same < 8; i++) {
    g_usleep (150 * 1000);
    ftl_get_stats (ftl, &b);
    if (a.media_erases == b.media_erases &&
        a.media_program_pages == b.media_program_pages &&
        a.blocks_free == b.blocks_free &&
        a.cache.dirty_bytes == b.cache.dirty_bytes)
      same++;
    else
      same = 0;
    a = b;
  }
}

static void
sleep_until (int64_t when_us)
{
  int64_t now = g_get_monotonic_time ();

  if (when_us > now)
    g_usleep (when_us - now);
}

int
cmd_replay (int argc, char **argv)
{
  gchar *format_s = NULL, *background_s = NULL, *action_s = NULL;
  gboolean pace = FALSE, strict = FALSE, wrap = FALSE, quiet = FALSE;
  gdouble speed = 1.0;
  gint64 disk = -1;
  GOptionEntry entries[] = {
    { "format", 'f', 0, G_OPTION_ARG_STRING, &format_s,
      "Trace format: auto (the default), nbdkit-log, blkparse or msr",
      "FORMAT" },
    { "pace", 'p', 0, G_OPTION_ARG_NONE, &pace,
      "Replay at the recorded pace (default: as fast as possible)", NULL },
    { "speed", 0, 0, G_OPTION_ARG_DOUBLE, &speed,
      "With --pace: this many times faster than recorded", "X" },
    { "background", 0, 0, G_OPTION_ARG_STRING, &background_s,
      "thread (as the plugin, the default) or inline "
      "(between requests: deterministic)", "MODE" },
    { "wrap", 0, 0, G_OPTION_ARG_NONE, &wrap,
      "Fold requests beyond the disk into it (offset modulo the size)",
      NULL },
    { "action", 0, 0, G_OPTION_ARG_STRING, &action_s,
      "blkparse: the action whose events are the requests (default Q)",
      "A" },
    { "disk", 0, 0, G_OPTION_ARG_INT64, &disk,
      "msr: replay only this DiskNumber", "N" },
    { "strict", 0, 0, G_OPTION_ARG_NONE, &strict,
      "Stop at the first malformed line", NULL },
    { "quiet", 'q', 0, G_OPTION_ARG_NONE, &quiet,
      "No summary on stderr", NULL },
    { NULL }
  };
  GOptionContext *ctx = g_option_context_new ("TRACE [KEY=VALUE...]");
  struct replay_keys k = {
    .stats_interval = 1,
  };
  struct trace_options to = {
    .format = TRACE_AUTO, .blkparse_action = 'Q', .max_reports = 10,
  };
  struct trace tr = { 0 };
  struct timeline tl = { 0 };
  struct ftl *ftl = NULL;
  struct ftl_geometry g;
  struct progress prog;
  char *tmpdir = NULL, *image = NULL;
  char errbuf[512] = "";
  uint8_t *buf = NULL;
  size_t bufsize = 0;
  uint64_t done[TRACE_OP__MAX] = { 0 }, failed = 0, beyond = 0, wrapped = 0;
  uint64_t skipped_total = 0;
  bool inline_bg = false;
  int status = FTLCTL_EXIT_ERROR, r;
  int64_t start_us;
  double next_tick;

  g_option_context_add_main_entries (ctx, entries, NULL);
  g_option_context_set_summary (ctx,
    "Replay a block I/O trace through the FTL, offline: nbdkit's log\n"
    "filter output, blkparse text or MSR Cambridge / SNIA CSV.  The keys\n"
    "are the plugin's (file=, size=, op=, gc=, write-cache=, ...; stats=,\n"
    "stats-log=, stats-interval= in seconds of the trace, metrics=).  The\n"
    "statistics JSON goes to stdout (or stats=).");
  if (!parse_options (ctx, &argc, &argv))
    goto usage;
  if (argc < 2) {
    usage_error (ctx, "give a trace file");
    goto usage;
  }
  if (format_s) {
    int f = trace_format_from_name (format_s);
    if (f == -1) {
      usage_error (ctx, "--format must be auto, nbdkit-log, blkparse or "
                   "msr: '%s'", format_s);
      goto usage;
    }
    to.format = f;
  }
  if (background_s) {
    if (strcmp (background_s, "inline") == 0)
      inline_bg = true;
    else if (strcmp (background_s, "thread") != 0) {
      usage_error (ctx, "--background must be thread or inline: '%s'",
                   background_s);
      goto usage;
    }
  }
  if (action_s) {
    if (strlen (action_s) != 1) {
      usage_error (ctx, "--action is one letter (Q, D, C...): '%s'",
                   action_s);
      goto usage;
    }
    to.blkparse_action = action_s[0];
  }
  if (!(speed > 0) || !isfinite (speed)) {
    usage_error (ctx, "--speed must be positive");
    goto usage;
  }
  to.disk = disk;
  to.strict = strict;
  ftl_keys_init (&k.ftl);
  for (int i = 2; i < argc; i++)
    if (!parse_key (&k, argv[i]))
      goto usage;
  if (ftl_keys_finish (&k.ftl, errbuf, sizeof errbuf) == -1) {
    ftlctl_error ("%s", errbuf);
    goto usage;
  }
  k.ftl.opts.manual_background = inline_bg;

  if (trace_read (argv[1], &to, &tr) == -1)
    goto out;

  /* The image: file= or a temporary one, sized to the trace. */
  if (k.file)
    image = g_strdup (k.file);
  else {
    tmpdir = g_dir_make_tmp ("ftlctl-replay-XXXXXX", NULL);
    if (tmpdir == NULL) {
      ftlctl_error ("replay: cannot make a temporary directory");
      goto out;
    }
    image = g_build_filename (tmpdir, "disk.img", NULL);
  }
  if (k.ftl.opts.logical_bytes == 0 && (k.file == NULL ||
                                    access (k.file, F_OK) == -1)) {
    const uint64_t mib = 1024 * 1024;
    k.ftl.opts.logical_bytes = MAX (REPLAY_MIN_SIZE,
                                (tr.end + mib - 1) / mib * mib);
  }
  k.ftl.opts.path = image;
  k.ftl.opts.log = log_message;
  k.ftl.opts.log_opaque = image;
  r = ftl_open (&k.ftl.opts, &ftl, errbuf, sizeof errbuf);
  if (r < 0) {
    ftlctl_error ("%s: %s", image, errbuf[0] ? errbuf : strerror (-r));
    ftl = NULL;
    goto out;
  }
  ftl_get_geometry (ftl, &g);
  if ((r = ftl_start_background (ftl)) < 0 ||
      (r = ftl_start_watchdog (ftl)) < 0) {
    ftlctl_error ("%s: starting the background threads: %s", image,
                  strerror (-r));
    goto out;
  }
  if (k.stats_log) {
    tl.path = k.stats_log;
    if ((r = timeline_line (ftl, &tl, tr.t0, 0)) < 0) {
      ftlctl_error ("%s: %s", k.stats_log, strerror (-r));
      goto out;
    }
  }

  progress_start (&prog, "replay", tr.n);
  start_us = g_get_monotonic_time ();
  next_tick = k.stats_interval;
  for (size_t i = 0; i < tr.n; i++) {
    struct trace_req *q = &tr.reqs[i];
    uint64_t off = q->offset, count = q->count;
    unsigned flags = q->flags & TRACE_FUA ? FTL_FUA : 0;

    progress_add (&prog, 1);
    if (q->flags & TRACE_SKIP)
      continue;
    if (q->op != TRACE_FLUSH && (count > g.logical_bytes ||
                                 off > g.logical_bytes - count)) {
      if (!wrap || count > g.logical_bytes) {
        beyond++;
        continue;
      }
      off %= g.logical_bytes;
      if (off > g.logical_bytes - count)
        off = g.logical_bytes - count;
      wrapped++;
    }
    if (pace)
      sleep_until (start_us + (int64_t) (q->t / speed * 1e6));
    while (tl.path && q->t >= next_tick) {
      if ((r = timeline_line (ftl, &tl, tr.t0, next_tick)) < 0) {
        progress_clear (&prog);
        ftlctl_error ("%s: %s", tl.path, strerror (-r));
        goto out;
      }
      next_tick += k.stats_interval;
    }
    if ((q->op == TRACE_READ || q->op == TRACE_WRITE) && count > bufsize) {
      g_free (buf);
      bufsize = MAX (count, 1024 * 1024);
      buf = g_malloc (bufsize);
      /* Data that is not zeros, as a file system writes. */
      for (size_t j = 0; j < bufsize; j++)
        buf[j] = (uint8_t) (j * 131 + 7);
    }
    switch (q->op) {
    case TRACE_READ:  r = ftl_read (ftl, buf, count, off); break;
    case TRACE_WRITE: r = ftl_write (ftl, buf, count, off, flags); break;
    case TRACE_TRIM:  r = ftl_trim (ftl, count, off, flags); break;
    case TRACE_ZERO:
      r = ftl_zero (ftl, count, off,
                    flags | (q->flags & TRACE_MAY_TRIM ? FTL_MAY_TRIM : 0));
      break;
    case TRACE_FLUSH: r = ftl_flush (ftl); break;
    default: abort ();
    }
    if (r < 0) {
      if (failed++ < 10) {
        progress_clear (&prog);
        ftlctl_error ("%s:%" PRIu32 ": %s of %" PRIu64 " bytes at %" PRIu64
                      " failed: %s", tr.path, q->lineno,
                      trace_op_name (q->op), count, off, strerror (-r));
      }
    }
    else
      done[q->op]++;
    if (inline_bg) {
      while ((r = ftl_background_step (ftl)) > 0)
        ;
      if (r < 0 && r != -ENOSPC) {
        progress_clear (&prog);
        ftlctl_error ("%s: background work: %s", image, strerror (-r));
        goto out;
      }
    }
  }
  progress_clear (&prog);

  /* As the plugin at shutdown: let the background work finish, stop
   * the threads, empty the cache, then the statistics.
   */
  if (!inline_bg)
    settle (ftl);
  ftl_stop_watchdog (ftl);
  ftl_stop_background (ftl);
  if ((r = ftl_destage (ftl)) < 0)
    ftlctl_error ("%s: writing the write cache to the log: %s", image,
                  strerror (-r));
  if (tl.path) {
    double t_end = tr.n ? tr.reqs[tr.n - 1].t : 0;
    while (t_end >= next_tick) {
      if (timeline_line (ftl, &tl, tr.t0, next_tick) < 0)
        break;
      next_tick += k.stats_interval;
    }
    if ((r = timeline_line (ftl, &tl, tr.t0, t_end)) < 0)
      ftlctl_error ("%s: %s", tl.path, strerror (-r));
  }
  if (k.metrics && (r = ftl_write_file_atomic (k.metrics, write_prom, ftl)) < 0)
    ftlctl_error ("%s: %s", k.metrics, strerror (-r));
  if (k.stats) {
    if ((r = ftl_write_file_atomic (k.stats, write_json, ftl)) < 0) {
      ftlctl_error ("%s: %s", k.stats, strerror (-r));
      goto out;
    }
  }
  else if (ftl_render_stats_json (ftl, FTL_STATS_SERVER, stdout) < 0 ||
           fflush (stdout) == EOF) {
    ftlctl_error ("stdout: %s", strerror (errno));
    goto out;
  }

  for (int s = 0; s < SKIP__MAX; s++)
    skipped_total += tr.skipped[s];
  skipped_total += beyond;
  if (!quiet) {
    double secs = (g_get_monotonic_time () - start_us) / 1e6;
    uint64_t n = 0;
    for (int op = 0; op < TRACE_OP__MAX; op++)
      n += done[op];
    fprintf (stderr, "replay: %s (%s): %" PRIu64 " requests in %.2f s "
             "(%.0f/s; the trace spans %.2f s)\n", tr.path,
             trace_format_name (tr.format), n, secs, secs > 0 ? n / secs : 0,
             tr.n ? tr.reqs[tr.n - 1].t : 0.0);
    for (int op = 0; op < TRACE_OP__MAX; op++)
      if (done[op])
        fprintf (stderr, "  %-6s %" PRIu64 "\n", trace_op_name (op),
                 done[op]);
    if (wrapped)
      fprintf (stderr, "  %" PRIu64 " folded into the disk (--wrap)\n",
               wrapped);
    if (failed)
      fprintf (stderr, "  %" PRIu64 " failed in the replay\n", failed);
    fprintf (stderr, "skipped: %" PRIu64 "\n", skipped_total);
    for (int s = 0; s < SKIP__MAX; s++) {
      uint64_t c = s == SKIP_BEYOND ? beyond : tr.skipped[s];
      if (c)
        fprintf (stderr, "  %" PRIu64 " %s\n", c, trace_skip_reason (s));
    }
    if (beyond && !wrap)
      fprintf (stderr, "  (the disk is %" PRIu64 " bytes: give a larger "
               "size= or --wrap)\n", g.logical_bytes);
  }
  status = failed ? FTLCTL_EXIT_ERROR : FTLCTL_EXIT_OK;
  goto out;

 usage:
  status = FTLCTL_EXIT_USAGE;
 out:
  if (ftl) {
    ftl_stop_watchdog (ftl);
    ftl_stop_background (ftl);
    if ((r = ftl_close (ftl)) < 0) {
      ftlctl_error ("%s: close: %s", image, strerror (-r));
      status = FTLCTL_EXIT_ERROR;
    }
  }
  if (tmpdir) {
    unlink (image);
    rmdir (tmpdir);
  }
  ftl_stats_free (&tl.prev);
  trace_free (&tr);
  g_free (buf);
  g_free (tmpdir);
  g_free (image);
  g_free (k.file);
  g_free (k.stats);
  g_free (k.stats_log);
  g_free (k.metrics);
  g_free (format_s);
  g_free (background_s);
  g_free (action_s);
  g_option_context_free (ctx);
  return status;
}
