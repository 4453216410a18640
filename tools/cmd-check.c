/* ftlctl check: walk every structure of an image and report every
 * inconsistency; with --repair, fix what can be fixed.
 *
 * A check, which writes nothing:
 *   1. the superblock copies and checkpoint slots, raw (check-meta.c);
 *   2. the image opened read-only, which recovers it in memory as the
 *      plugin would, then its map, pages and blocks (check-map.c).
 *
 * --repair, when the check found errors: open the image read-write,
 * which rolls the log forward for good and writes a fresh checkpoint,
 * then unmap each logical page whose data cannot be read (it is lost
 * already) and rewrite each page whose data is intact but whose OOB
 * entry is wrong; closing writes a checkpoint and both superblock
 * copies, which replaces a damaged copy or slot.  Then check again.
 *
 * The file is opened by this code as well as by the library, holding a
 * shared lock: a server (which holds an exclusive one) cannot be writing
 * the image while it is checked.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <glib.h>

#include "check.h"
#include "ftlctl.h"

void
checker_init (struct checker *c, const char *file)
{
  memset (c, 0, sizeof *c);
  c->file = file;
  c->fixes = g_array_new (FALSE, FALSE, sizeof (struct fix));
}

void
checker_free (struct checker *c)
{
  g_array_free (c->fixes, TRUE);
}

/* One line of the report on stdout, with the progress line out of the
 * way.
 */
static void
report (struct checker *c, const char *prefix, const char *fs, va_list ap)
  __attribute__ ((format (printf, 3, 0)));

static void
report (struct checker *c, const char *prefix, const char *fs, va_list ap)
{
  progress_clear (&c->progress);
  printf ("%s: %s", c->file, prefix);
  vprintf (fs, ap);
  putchar ('\n');
}

void
check_error (struct checker *c, const char *fs, ...)
{
  va_list ap;

  va_start (ap, fs);
  report (c, "error: ", fs, ap);
  va_end (ap);
  c->errors++;
}

void
check_note (struct checker *c, const char *fs, ...)
{
  va_list ap;

  va_start (ap, fs);
  report (c, "", fs, ap);
  va_end (ap);
}

void
check_fix (struct checker *c, uint64_t lpn, enum page_fix how,
           const char *why)
{
  struct fix f = { .lpn = lpn, .how = how, .why = why };
  g_array_append_val (c->fixes, f);
}

/* Check the image once.  Returns false on an operational error (the
 * image could not be read or opened), after printing why.
 */
static bool
run_check (struct checker *c)
{
  struct ftl_image_info ii;
  uint64_t ckpt_gen;
  unsigned ckpt_slot;
  struct ftl *ftl;
  struct stat st;
  bool ok = false;
  int fd;

  fd = open (c->file, O_RDONLY | O_CLOEXEC);
  if (fd == -1) {
    ftlctl_error ("%s: %s", c->file, strerror (errno));
    return false;
  }
  if (fstat (fd, &st) == -1) {
    ftlctl_error ("%s: %s", c->file, strerror (errno));
    goto out;
  }
  if (!S_ISREG (st.st_mode)) {
    ftlctl_error ("%s: not a regular file", c->file);
    goto out;
  }
  if (st.st_size == 0) {
    ftlctl_error ("%s: the file is empty, not an nbdkit-ftl image",
                  c->file);
    goto out;
  }
  if (flock (fd, LOCK_SH | LOCK_NB) == -1) {
    ftlctl_error ("%s: the image is in use by another process", c->file);
    goto out;
  }

  check_metadata (c, fd);

  /* The library's recovery reports through the errors above and below;
   * its log would only repeat them.
   */
  ftl = image_open (c->file, true, true);
  if (ftl == NULL)
    goto out;
  ftl_inspect_image (ftl, &ii);
  ftl_inspect_checkpoint (ftl, &ckpt_gen, &ckpt_slot);
  if (ii.sb.state != FTL_SB_CLEAN)
    check_note (c, "not shut down cleanly: the log written after "
                "checkpoint %" PRIu64 " was rolled forward (in memory)",
                ckpt_gen);
  check_image (c, ftl);
  ftl_close (ftl);              /* read-only: writes nothing */
  ok = true;

 out:
  close (fd);                   /* and releases the lock */
  return ok;
}

/* The last line of a check. */
static void
summary (const struct checker *c)
{
  if (c->errors == 0)
    printf ("%s: clean, %" PRIu64 "/%" PRIu64 " logical pages mapped, "
            "%u/%u erase blocks free\n", c->file, c->mapped_pages,
            c->logical_pages, c->free_blocks, c->blocks);
  else
    printf ("%s: %" PRIu64 " error%s found\n", c->file, c->errors,
            c->errors == 1 ? "" : "s");
}

/* The range of bytes of logical page lpn (the last one may be short). */
static void
page_range (struct ftl *ftl, uint64_t lpn, uint64_t *off, uint64_t *len)
{
  struct ftl_geometry g;

  ftl_get_geometry (ftl, &g);
  *off = lpn * g.page_size;
  *len = MIN (g.page_size, g.logical_bytes - *off);
}

/* Fix one page in the image open read-write.  Returns true if it was
 * fixed.
 */
static bool
fix_page (const char *file, struct ftl *ftl, const struct fix *f,
          uint8_t *buf)
{
  uint64_t off, len;
  int r;

  page_range (ftl, f->lpn, &off, &len);
  if (f->how == FIX_REWRITE) {
    r = ftl_read (ftl, buf, len, off);
    if (r == 0)
      r = ftl_write (ftl, buf, len, off, 0);
    if (r == 0) {
      printf ("%s: repair: logical page %" PRIu64 " written to a new page "
              "(%s)\n", file, f->lpn, f->why);
      return true;
    }
    /* Unreadable after all: unmap it. */
  }
  r = ftl_trim (ftl, len, off, 0);
  if (r < 0) {
    ftlctl_error ("%s: repair: unmapping logical page %" PRIu64 ": %s",
                  file, f->lpn, r == -EROFS ? "the disk is read-only "
                  "(worn out)" : strerror (-r));
    return false;
  }
  printf ("%s: repair: logical page %" PRIu64 " unmapped (%s): its data "
          "is lost, it reads as zeros\n", file, f->lpn, f->why);
  return true;
}

/* Repair what c found.  Returns false on an operational error. */
static bool
repair (const struct checker *c, uint64_t *fixed)
{
  struct ftl *ftl;
  uint8_t *buf;
  bool ok = true;
  int r;

  *fixed = 0;
  ftl = image_open (c->file, false, false);
  if (ftl == NULL)
    return false;
  buf = g_malloc (FTL_MAX_PAGE_SIZE);
  for (guint i = 0; i < c->fixes->len; i++) {
    const struct fix *f = &g_array_index (c->fixes, struct fix, i);
    if (fix_page (c->file, ftl, f, buf))
      (*fixed)++;
  }
  g_free (buf);
  r = ftl_close (ftl);
  if (r < 0) {
    ftlctl_error ("%s: repair: closing the image: %s", c->file,
                  strerror (-r));
    ok = false;
  }
  return ok;
}

int
cmd_check (int argc, char **argv)
{
  gboolean do_repair = FALSE;
  const GOptionEntry entries[] = {
    { "repair", 'r', 0, G_OPTION_ARG_NONE, &do_repair,
      "Fix what can be fixed (unmapping unreadable pages), then check "
      "again", NULL },
    { NULL }
  };
  GOptionContext *ctx;
  struct checker c, again;
  uint64_t fixed;
  int status = CHECK_EXIT_OPERATIONAL;

  ctx = g_option_context_new ("FILE");
  g_option_context_set_summary (ctx, "Check an nbdkit-ftl image and report "
                                "every inconsistency.\n\nExit status: 0 "
                                "clean, 1 errors corrected, 4 errors left, "
                                "8 operational error.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv)) {
    g_option_context_free (ctx);
    return CHECK_EXIT_OPERATIONAL;
  }
  if (!one_image_arg (ctx, argc)) {
    g_option_context_free (ctx);
    return CHECK_EXIT_OPERATIONAL;
  }
  g_option_context_free (ctx);

  checker_init (&c, argv[1]);
  if (!run_check (&c)) {
    if (c.errors)
      summary (&c);
    status = CHECK_EXIT_OPERATIONAL |
      (c.errors ? CHECK_EXIT_UNCORRECTED : 0);
    goto out;
  }
  summary (&c);
  if (c.errors == 0) {
    status = CHECK_EXIT_OK;
    goto out;
  }
  if (!do_repair) {
    status = CHECK_EXIT_UNCORRECTED;
    goto out;
  }

  if (!repair (&c, &fixed)) {
    status = CHECK_EXIT_OPERATIONAL | CHECK_EXIT_UNCORRECTED;
    goto out;
  }
  printf ("%s: checking again after the repair\n", c.file);
  checker_init (&again, c.file);
  if (!run_check (&again))
    status = CHECK_EXIT_OPERATIONAL;
  else {
    uint64_t left = again.errors;
    uint64_t corrected = c.errors > left ? c.errors - left : 0;
    summary (&again);
    printf ("%s: %" PRIu64 " error%s corrected, %" PRIu64 " left\n",
            c.file, corrected, corrected == 1 ? "" : "s", left);
    status = (corrected || fixed ? CHECK_EXIT_CORRECTED : 0) |
      (left ? CHECK_EXIT_UNCORRECTED : 0);
  }
  checker_free (&again);

 out:
  checker_free (&c);
  return status;
}
