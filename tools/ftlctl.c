/* ftlctl: the command line: pick the subcommand and run it.
 *
 *   ftlctl SUBCOMMAND [OPTION...] FILE
 *
 * Each subcommand parses its own options (cmd-*.c).
 */

#include <config.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "ftlctl.h"

struct subcommand {
  const char *name;
  int (*run) (int argc, char **argv);
  const char *synopsis;
};

static const struct subcommand subcommands[] = {
  { "format", cmd_format,
    "--size SIZE [--page-size SIZE] [--pages-per-block N]\n"
    "                   [--op PERCENT] [--force] FILE" },
  { "info",   cmd_info,   "[--json] FILE" },
  { "health", cmd_health, "[--json] [--endurance N] FILE" },
  { "age",    cmd_age,    "[--days N] [--pe N] FILE" },
  { "check",  cmd_check,  "[--repair] FILE" },
  { "ns-list",   cmd_ns_list,   "[--json] FILE" },
  { "ns-add",    cmd_ns_add,    "FILE NAME SIZE" },
  { "ns-delete", cmd_ns_delete, "FILE NAME" },
  { "dump",   cmd_dump,
    "(--page PPN | --lpn LPN | --block N) [--hex] FILE" },
  { "plot",   cmd_plot,   "[--output PNG] TIMELINE" },
  { "replay", cmd_replay,
    "[--format FMT] [--pace] [--background MODE]\n"
    "                   TRACE [KEY=VALUE...]" },
  { "top",    cmd_top,    "[--once] [--interval SECS] STATS|TIMELINE" },
};

/* The list of subcommands. */
static void
usage (FILE *fp)
{
  fprintf (fp, "Usage: ftlctl SUBCOMMAND [OPTION...] FILE\n\n");
  for (size_t i = 0; i < G_N_ELEMENTS (subcommands); i++)
    fprintf (fp, "  ftlctl %-9s %s\n", subcommands[i].name,
             subcommands[i].synopsis);
  fprintf (fp, "\n"
           "Create, inspect and check nbdkit-ftl images.  "
           "\"ftlctl SUBCOMMAND --help\"\n"
           "describes a subcommand's options; ftlctl(1) has the details.\n");
}

int
main (int argc, char **argv)
{
  const char *name = argc > 1 ? argv[1] : NULL;

  if (name == NULL) {
    usage (stderr);
    return FTLCTL_EXIT_USAGE;
  }
  if (strcmp (name, "--help") == 0 || strcmp (name, "-h") == 0 ||
      strcmp (name, "help") == 0) {
    usage (stdout);
    return FTLCTL_EXIT_OK;
  }
  if (strcmp (name, "--version") == 0) {
    printf ("ftlctl %s\n", PACKAGE_VERSION);
    return FTLCTL_EXIT_OK;
  }

  for (size_t i = 0; i < G_N_ELEMENTS (subcommands); i++) {
    if (strcmp (name, subcommands[i].name) == 0) {
      char *prgname = g_strdup_printf ("ftlctl %s", name);

      /* GOptionContext's help begins "Usage: <prgname> ...". */
      g_set_prgname (prgname);
      g_free (prgname);
      return subcommands[i].run (argc - 1, argv + 1);
    }
  }

  ftlctl_error ("unknown subcommand '%s'", name);
  usage (stderr);
  return FTLCTL_EXIT_USAGE;
}
