/* ftlctl age: move an image forward in time, offline.
 *
 * Opens the image read-write and asks the library (ftl_age) to move
 * its media clock forward by the days given, so that every page on it
 * is that much older as the error model sees it, and to add
 * program/erase cycles to the wear the model sees; the library writes
 * both to a checkpoint, and closing the image writes the last one.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "ftlctl.h"

int
cmd_age (int argc, char **argv)
{
  gchar *days_s = NULL, *pe_s = NULL;
  const GOptionEntry entries[] = {
    { "days", 0, 0, G_OPTION_ARG_STRING, &days_s,
      "Days to move the media clock forward (a decimal number)", "N" },
    { "pe", 0, 0, G_OPTION_ARG_STRING, &pe_s,
      "Program/erase cycles to add to the wear the error model sees",
      "N" },
    { NULL }
  };
  GOptionContext *ctx;
  struct ftl *ftl;
  double days = 0;
  uint64_t pe = 0;
  int status = FTLCTL_EXIT_USAGE, r;

  ctx = g_option_context_new ("FILE");
  g_option_context_set_summary (ctx, "Age an nbdkit-ftl image: its data "
                                "gets older by the days given, its "
                                "erase blocks more worn by the cycles "
                                "given, as the error model sees them "
                                "(see the plugin's errors=).");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv))
    goto out;
  if (!one_image_arg (ctx, argc)) {
    goto out;
  }
  if (!days_s && !pe_s) {
    usage_error (ctx, "give --days, --pe or both");
    goto out;
  }
  if (days_s) {
    if (!parse_double ("--days", days_s, &days))
      goto out;
    if (days < 0 || days > 1e6) {
      usage_error (ctx, "--days: %s is out of range (0 to 1000000)", days_s);
      goto out;
    }
  }
  if (pe_s) {
    if (!parse_uint64 ("--pe", pe_s, &pe))
      goto out;
    if (pe > 1000000) {
      usage_error (ctx, "--pe: %s is out of range (0 to 1000000)", pe_s);
      goto out;
    }
  }

  status = FTLCTL_EXIT_ERROR;
  ftl = image_open (argv[1], false, false);
  if (ftl == NULL)
    goto out;
  r = ftl_age (ftl, (uint64_t) (days * 86400), pe);
  if (r < 0) {
    ftlctl_error ("%s: aging the image: %s", argv[1], strerror (-r));
    ftl_close (ftl);
    goto out;
  }
  r = ftl_close (ftl);
  if (r < 0) {
    ftlctl_error ("%s: closing the image: %s", argv[1], strerror (-r));
    goto out;
  }
  printf ("%s: %g days older, %" PRIu64 " program/erase cycles added\n",
          argv[1], days, pe);
  status = FTLCTL_EXIT_OK;

 out:
  g_free (days_s);
  g_free (pe_s);
  g_option_context_free (ctx);
  return status;
}
