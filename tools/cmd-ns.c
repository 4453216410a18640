/* ftlctl ns-list, ns-add, ns-delete: an image's namespaces, managed at
 * rest, as nvme list-ns, create-ns and delete-ns manage a drive's.
 *
 *   ns-list [--json] FILE        each namespace: name, size, base (where
 *                                it starts in the logical space), and
 *                                the free space; opened read-only
 *   ns-add FILE NAME SIZE        a new namespace in the lowest free range
 *                                that holds it, reading as zeros
 *   ns-delete FILE NAME          every page of it trimmed, then out of
 *                                the table
 *
 * ns-add and ns-delete open the image read-write, which takes the lock
 * that a server holds while it serves the image: an image in use is
 * refused, and nothing is changed.  The library (ftl_ns_create,
 * ftl_ns_delete) checks the request, says in one line why it refuses
 * one, and writes the new table crash-safely; the close then writes a
 * checkpoint and marks the image clean.
 *
 * ns_render_json is shared with ftlctl info --json.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib.h>

#include "ftlctl.h"
#include "ftl/metrics.h"

/* The free space of the logical space: every page that no namespace
 * holds (whole pages of the logical size), and the largest range of it.
 */
struct ns_free {
  uint64_t bytes, ranges, largest, largest_at;
};

static void
ns_free_space (struct ftl *ftl, struct ns_free *f)
{
  struct ftl_geometry g;
  uint64_t at = 0, end;

  ftl_get_geometry (ftl, &g);
  end = g.logical_bytes / g.page_size * g.page_size;
  memset (f, 0, sizeof *f);
  for (;;) {
    struct ftl_ns_info next = { .base = end }, n;
    struct ftl_ns *ns;
    for (unsigned i = 0; (ns = ftl_ns_at (ftl, i)) != NULL; i++) {
      ftl_ns_get_info (ns, &n);
      if (n.base >= at && n.base < next.base)
        next = n;
    }
    if (next.base > at) {
      f->bytes += next.base - at;
      f->ranges++;
      if (next.base - at > f->largest) {
        f->largest = next.base - at;
        f->largest_at = at;
      }
    }
    if (next.base >= end)
      return;
    at = next.base + next.bytes;
  }
}

/* The namespaces as a member "namespaces" of the object open in s: an
 * array of {name, bytes, base, default}, in the image's order.
 */
static void
ns_add_array (struct ftl_stat_set *s, struct ftl *ftl)
{
  struct ftl_ns *ns;

  ftl_stats_begin_array (s, "namespaces");
  for (unsigned i = 0; (ns = ftl_ns_at (ftl, i)) != NULL; i++) {
    struct ftl_ns_info n;
    ftl_ns_get_info (ns, &n);
    ftl_stats_begin_object (s, NULL, NULL);
    ftl_stats_add_string (s, "name", n.name);
    ftl_stats_add_uint (s, "bytes", n.bytes, NULL);
    ftl_stats_add_uint (s, "base", n.base, NULL);
    ftl_stats_add_bool (s, "default", i == 0, NULL);
    ftl_stats_end (s);
  }
  ftl_stats_end (s);
}

int
ns_render_json (struct ftl *ftl, const char *file, bool top, FILE *fp)
{
  struct ftl_stat_set s = { 0 };
  struct ftl_geometry g;
  struct ns_free f;
  int r;

  ftl_stats_begin_object (&s, NULL, NULL);
  if (top) {
    ftl_get_geometry (ftl, &g);
    ns_free_space (ftl, &f);
    ftl_stats_add_string (&s, "file", file);
    ftl_stats_add_uint (&s, "logical_bytes", g.logical_bytes, NULL);
    ftl_stats_add_uint (&s, "page_size", g.page_size, NULL);
    ftl_stats_add_uint (&s, "max_namespaces", FTL_MAX_NAMESPACES, NULL);
    ftl_stats_add_uint (&s, "free_bytes", f.bytes, NULL);
    ftl_stats_add_uint (&s, "largest_free_bytes", f.largest, NULL);
  }
  ns_add_array (&s, ftl);
  ftl_stats_end (&s);
  r = ftl_render_json (&s, false, fp);
  ftl_stats_free (&s);
  return r;
}

/* The text of ns-list: a line per namespace, then the free space. */
static void
ns_print_text (struct ftl *ftl)
{
  struct ftl_geometry g;
  struct ns_free f;
  struct ftl_ns *ns;
  int w = 4;
  char h[32];

  ftl_get_geometry (ftl, &g);
  for (unsigned i = 0; (ns = ftl_ns_at (ftl, i)) != NULL; i++) {
    struct ftl_ns_info n;
    ftl_ns_get_info (ns, &n);
    w = MAX (w, (int) strlen (n.name[0] ? n.name : "\"\""));
  }
  printf ("%-*s  %20s  %10s  %20s\n", w, "NAME", "BYTES", "SIZE", "BASE");
  for (unsigned i = 0; (ns = ftl_ns_at (ftl, i)) != NULL; i++) {
    struct ftl_ns_info n;
    ftl_ns_get_info (ns, &n);
    printf ("%-*s  %20" PRIu64 "  %10s  %20" PRIu64 "%s\n", w,
            n.name[0] ? n.name : "\"\"", n.bytes,
            ftl_human_bytes (n.bytes, h, sizeof h), n.base,
            i == 0 ? "  (the default export)" : "");
  }
  ns_free_space (ftl, &f);
  printf ("free: %" PRIu64 " bytes (%s) of %" PRIu64, f.bytes,
          ftl_human_bytes (f.bytes, h, sizeof h), g.logical_bytes);
  if (f.ranges)
    printf (", in %" PRIu64 " range%s, the largest %" PRIu64 " bytes from "
            "logical byte %" PRIu64, f.ranges, f.ranges > 1 ? "s" : "",
            f.largest, f.largest_at);
  printf ("\n");
}

int
cmd_ns_list (int argc, char **argv)
{
  gboolean json = FALSE;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json,
      "Print one JSON object", NULL },
    { NULL }
  };
  GOptionContext *ctx;
  struct ftl *ftl;
  int status = FTLCTL_EXIT_USAGE;

  ctx = g_option_context_new ("FILE");
  g_option_context_set_summary (ctx, "List the namespaces of an nbdkit-ftl "
                                "image: name, size, where each starts in "
                                "the logical space, and the free space.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv) || !one_image_arg (ctx, argc))
    goto out;
  status = FTLCTL_EXIT_ERROR;
  ftl = image_open (argv[1], true, false);
  if (ftl == NULL)
    goto out;
  if (json) {
    fflush (stdout);
    if (ns_render_json (ftl, argv[1], true, stdout) == 0 &&
        fflush (stdout) == 0)
      status = FTLCTL_EXIT_OK;
    else
      ftlctl_error ("writing to standard output: %s", strerror (errno));
  }
  else {
    ns_print_text (ftl);
    status = FTLCTL_EXIT_OK;
  }
  ftl_close (ftl);                /* read-only: writes nothing */
 out:
  g_option_context_free (ctx);
  return status;
}

/* The change asked of the image open on ftl: 0, or -errno after one
 * line on stderr.
 */
static int
ns_apply (struct ftl *ftl, const char *file, bool add, const char *name,
          uint64_t bytes, bool dry)
{
  char errbuf[512] = "";
  int r = add ? ftl_ns_create (ftl, name, bytes, errbuf, sizeof errbuf)
    : ftl_ns_delete (ftl, name, errbuf, sizeof errbuf);

  if (dry && r == -EROFS)
    return 0;
  if (r < 0)
    ftlctl_error ("%s: %s", file, errbuf[0] ? errbuf : strerror (-r));
  return r;
}

/* The change asked, checked first on the image open read-only (a
 * change refused writes nothing to it), then made with it open
 * read-write; one line on stderr for whatever fails.  bytes is for an
 * add only.
 */
static int
ns_change (const char *file, bool add, const char *name, uint64_t bytes)
{
  struct ftl *ftl;
  int r;

  ftl = image_open (file, true, false);
  if (ftl == NULL)
    return FTLCTL_EXIT_ERROR;
  r = ns_apply (ftl, file, add, name, bytes, true);
  ftl_close (ftl);
  if (r < 0)
    return FTLCTL_EXIT_ERROR;
  ftl = image_open (file, false, false);
  if (ftl == NULL)
    return FTLCTL_EXIT_ERROR;
  if (ns_apply (ftl, file, add, name, bytes, false) < 0) {
    ftl_close (ftl);
    return FTLCTL_EXIT_ERROR;
  }
  r = ftl_close (ftl);
  if (r < 0) {
    ftlctl_error ("%s: closing the image: %s", file, strerror (-r));
    return FTLCTL_EXIT_ERROR;
  }
  return FTLCTL_EXIT_OK;
}

int
cmd_ns_add (int argc, char **argv)
{
  const GOptionEntry entries[] = { { NULL } };
  GOptionContext *ctx;
  uint64_t bytes;
  int status = FTLCTL_EXIT_USAGE;

  ctx = g_option_context_new ("FILE NAME SIZE");
  g_option_context_set_summary (ctx, "Add a namespace to an nbdkit-ftl "
                                "image that no server uses: SIZE bytes "
                                "(a suffix K, M, G... allowed; a multiple "
                                "of the page size) in the lowest free "
                                "range of the logical space that holds "
                                "it.  It reads as zeros.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv))
    goto out;
  if (argc != 4) {
    usage_error (ctx, argc < 4 ? "give FILE NAME SIZE"
                 : "too many arguments");
    goto out;
  }
  if (!parse_size ("SIZE", argv[3], &bytes))
    goto out;
  status = ns_change (argv[1], true, argv[2], bytes);
  if (status == FTLCTL_EXIT_OK) {
    char h[32];
    printf ("%s: namespace '%s' added, %" PRIu64 " bytes (%s)\n", argv[1],
            argv[2], bytes, ftl_human_bytes (bytes, h, sizeof h));
  }
 out:
  g_option_context_free (ctx);
  return status;
}

int
cmd_ns_delete (int argc, char **argv)
{
  const GOptionEntry entries[] = { { NULL } };
  GOptionContext *ctx;
  int status = FTLCTL_EXIT_USAGE;

  ctx = g_option_context_new ("FILE NAME");
  g_option_context_set_summary (ctx, "Delete a namespace of an nbdkit-ftl "
                                "image that no server uses: every page "
                                "of it is trimmed, durably, then it "
                                "leaves the table.  Its data is lost.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv))
    goto out;
  if (argc != 3) {
    usage_error (ctx, argc < 3 ? "give FILE NAME" : "too many arguments");
    goto out;
  }
  status = ns_change (argv[1], false, argv[2], 0);
  if (status == FTLCTL_EXIT_OK)
    printf ("%s: namespace '%s' deleted\n", argv[1], argv[2]);
 out:
  g_option_context_free (ctx);
  return status;
}
