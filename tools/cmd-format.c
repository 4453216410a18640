/* ftlctl format: create an image.
 *
 * The library creates an image when it opens an absent or empty file
 * with a size; this opens it so, and closes it at once.  An existing
 * file that is not empty is refused unless --force, which first empties
 * it (under the same lock the library takes, so that an image in use
 * is never emptied).
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "ftlctl.h"

/* Empty an existing file for --force.  Returns false after printing why
 * if it cannot be done.  A missing file is fine: the library creates it.
 */
static bool
empty_file (const char *file)
{
  struct stat st;
  bool ok = false;
  int fd;

  fd = open (file, O_RDWR | O_CLOEXEC);
  if (fd == -1) {
    if (errno == ENOENT)
      return true;
    ftlctl_error ("%s: %s", file, strerror (errno));
    return false;
  }
  if (fstat (fd, &st) == -1)
    ftlctl_error ("%s: %s", file, strerror (errno));
  else if (!S_ISREG (st.st_mode))
    ftlctl_error ("%s: not a regular file", file);
  else if (flock (fd, LOCK_EX | LOCK_NB) == -1)
    ftlctl_error ("%s: the image is in use by another process", file);
  else if (ftruncate (fd, 0) == -1)
    ftlctl_error ("%s: emptying the file: %s", file, strerror (errno));
  else
    ok = true;
  /* Closing releases the lock, which the library takes again. */
  close (fd);
  return ok;
}

int
cmd_format (int argc, char **argv)
{
  char *size_s = NULL, *page_size_s = NULL, *ppb_s = NULL, *op_s = NULL;
  gboolean force = FALSE;
  const GOptionEntry entries[] = {
    { "size", 's', 0, G_OPTION_ARG_STRING, &size_s,
      "Disk size seen by the host, e.g. 1G (required)", "SIZE" },
    { "page-size", 0, 0, G_OPTION_ARG_STRING, &page_size_s,
      "Page size: a power of 2 from 512 to 65536 (default 4096)", "SIZE" },
    { "pages-per-block", 0, 0, G_OPTION_ARG_STRING, &ppb_s,
      "Pages per erase block: a power of 2 from 8 to 65536 (default 256)",
      "N" },
    { "op", 0, 0, G_OPTION_ARG_STRING, &op_s,
      "Over-provisioning in percent of the size: 1 to 400 (default 28)",
      "PERCENT" },
    { "force", 'f', 0, G_OPTION_ARG_NONE, &force,
      "Overwrite an existing file that is not empty", NULL },
    { NULL }
  };
  GOptionContext *ctx;
  struct ftl_options opts = { 0 };
  struct ftl_geometry g;
  struct ftl *ftl;
  struct stat st;
  char errbuf[512] = "";
  uint64_t v;
  const char *file;
  int r, status = FTLCTL_EXIT_USAGE;

  ctx = g_option_context_new ("FILE");
  g_option_context_set_summary (ctx, "Create an nbdkit-ftl image.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv))
    goto out;
  if (!one_image_arg (ctx, argc)) {
    goto out;
  }
  file = argv[1];
  if (size_s == NULL) {
    usage_error (ctx, "--size is required");
    goto out;
  }
  if (!parse_size ("--size", size_s, &opts.logical_bytes))
    goto out;
  if (opts.logical_bytes == 0) {
    ftlctl_error ("--size: the size must be greater than 0");
    goto out;
  }
  if (page_size_s) {
    if (!parse_size ("--page-size", page_size_s, &v))
      goto out;
    if (v == 0 || v > UINT32_MAX) {
      ftlctl_error ("--page-size: out of range: '%s'", page_size_s);
      goto out;
    }
    opts.page_size = v;
  }
  if (ppb_s) {
    if (!parse_uint64 ("--pages-per-block", ppb_s, &v))
      goto out;
    if (v == 0 || v > UINT32_MAX) {
      ftlctl_error ("--pages-per-block: out of range: '%s'", ppb_s);
      goto out;
    }
    opts.pages_per_block = v;
  }
  if (op_s) {
    if (!parse_double ("--op", op_s, &opts.op_percent))
      goto out;
    if (opts.op_percent <= 0) {
      ftlctl_error ("--op: must be greater than 0: '%s'", op_s);
      goto out;
    }
  }

  status = FTLCTL_EXIT_ERROR;
  if (stat (file, &st) == 0 && S_ISREG (st.st_mode) && st.st_size > 0) {
    if (!force) {
      ftlctl_error ("%s: the file exists and is not empty (--force "
                    "overwrites it)", file);
      goto out;
    }
    if (!empty_file (file))
      goto out;
  }

  /* The library checks the geometry and says what is wrong with it. */
  opts.path = file;
  r = ftl_open (&opts, &ftl, errbuf, sizeof errbuf);
  if (r < 0) {
    ftlctl_error ("%s: %s", file, errbuf[0] ? errbuf : strerror (-r));
    goto out;
  }
  ftl_get_geometry (ftl, &g);
  r = ftl_close (ftl);
  if (r < 0) {
    ftlctl_error ("%s: closing the new image: %s", file, strerror (-r));
    goto out;
  }
  printf ("%s: %" PRIu64 " bytes, %u erase blocks of %u pages of %u bytes, "
          "over-provisioning %g%%\n", file, g.logical_bytes, g.blocks,
          g.pages_per_block, g.page_size, g.op_percent);
  status = FTLCTL_EXIT_OK;

 out:
  g_option_context_free (ctx);
  g_free (size_s);
  g_free (page_size_s);
  g_free (ppb_s);
  g_free (op_s);
  return status;
}
