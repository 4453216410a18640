/* ftlctl health: the image's health log, as NVMe's SMART / Health
 * Information log page names it (`nvme smart-log` prints the same
 * names).
 *
 * Opens the image read-only (recovery runs in memory, nothing is
 * written) and prints the log as text, or with --json as the health
 * member of the library's statistics, the one the plugin's statistics
 * file has.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "ftlctl.h"

/* Column of the values, as nvme smart-log aligns them. */
#define NAME_WIDTH 40

static void
line (const char *name, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));

static void
line (const char *name, const char *fs, ...)
{
  va_list ap;

  printf ("%-*s: ", NAME_WIDTH, name);
  va_start (ap, fs);
  vprintf (fs, ap);
  va_end (ap);
  putchar ('\n');
}

/* A count with thousands separators, as nvme smart-log prints them. */
static const char *
grouped (uint64_t v, char *buf, size_t len)
{
  char digits[32];
  size_t n, o = 0;

  n = snprintf (digits, sizeof digits, "%" PRIu64, v);
  for (size_t i = 0; i < n && o + 2 < len; i++) {
    if (i > 0 && (n - i) % 3 == 0)
      buf[o++] = ',';
    buf[o++] = digits[i];
  }
  buf[o] = '\0';
  return buf;
}

static void
print_text (const char *file, const struct ftl_health *h)
{
  char b[40];

  printf ("Health log for %s\n", file);
  line ("critical_warning", "%#x%s%s%s", h->critical_warning,
        h->critical_warning & FTL_CW_SPARE ? " (available spare)" : "",
        h->critical_warning & FTL_CW_DEGRADED ?
        " (reliability degraded)" : "",
        h->critical_warning & FTL_CW_READ_ONLY ? " (read-only)" : "");
  line ("available_spare", "%u%%", h->available_spare);
  line ("available_spare_threshold", "%u%%", h->available_spare_threshold);
  line ("percentage_used", "%u%%", h->percentage_used);
  line ("data_units_read", "%s (%.2f MB)",
        grouped (h->data_units_read, b, sizeof b),
        h->data_units_read * 512000 / 1e6);
  line ("data_units_written", "%s (%.2f MB)",
        grouped (h->data_units_written, b, sizeof b),
        h->data_units_written * 512000 / 1e6);
  line ("host_read_commands", "%s",
        grouped (h->host_read_commands, b, sizeof b));
  line ("host_write_commands", "%s",
        grouped (h->host_write_commands, b, sizeof b));
  line ("power_cycles", "%s", grouped (h->power_cycles, b, sizeof b));
  line ("unsafe_shutdowns", "%s", grouped (h->unsafe_shutdowns, b, sizeof b));
  line ("media_errors", "%s", grouped (h->media_errors, b, sizeof b));
  line ("num_err_log_entries", "%s",
        grouped (h->num_err_log_entries, b, sizeof b));
}

int
cmd_health (int argc, char **argv)
{
  gboolean json = FALSE;
  gchar *endurance = NULL;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json,
      "Print one JSON object", NULL },
    { "endurance", 0, 0, G_OPTION_ARG_STRING, &endurance,
      "Erases a block takes before it is retired, as the plugin's "
      "endurance= (default 3000)", "N" },
    { NULL }
  };
  GOptionContext *ctx;
  struct ftl_options opts = { .readonly = true };
  struct ftl *ftl;
  uint64_t v;
  int status = FTLCTL_EXIT_USAGE;

  ctx = g_option_context_new ("FILE");
  g_option_context_set_summary (ctx, "The health log of an nbdkit-ftl "
                                "image, with the names and units of "
                                "NVMe's (nvme smart-log).");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv))
    goto out;
  if (!one_image_arg (ctx, argc)) {
    goto out;
  }
  if (endurance) {
    if (!parse_uint64 ("--endurance", endurance, &v))
      goto out;
    if (v < 1 || v > UINT32_MAX) {
      usage_error (ctx, "--endurance: %s is out of range (1 to %u)",
                   endurance, UINT32_MAX);
      goto out;
    }
    opts.endurance = v;
  }

  status = FTLCTL_EXIT_ERROR;
  ftl = image_open_with (argv[1], &opts, false);
  if (ftl == NULL)
    goto out;
  if (json) {
    fflush (stdout);
    if (ftl_render_health_json (ftl, stdout) == 0 && fflush (stdout) == 0)
      status = FTLCTL_EXIT_OK;
    else
      ftlctl_error ("writing to standard output: %s", strerror (errno));
  }
  else {
    struct ftl_stats st;
    ftl_get_stats (ftl, &st);
    print_text (argv[1], &st.health);
    status = FTLCTL_EXIT_OK;
  }
  ftl_close (ftl);                /* read-only: writes nothing */

 out:
  g_free (endurance);
  g_option_context_free (ctx);
  return status;
}
