/* ftlctl: helpers shared by the subcommands: messages, option values
 * and opening an image.  See ftlctl.h.
 */

#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <glib.h>

#include "ftlctl.h"
#include "ftl/keys.h"

void
ftlctl_error (const char *fs, ...)
{
  va_list ap;

  fflush (stdout);
  fputs ("ftlctl: ", stderr);
  va_start (ap, fs);
  vfprintf (stderr, fs, ap);
  va_end (ap);
  fputc ('\n', stderr);
}

/* The subcommand's help, on stderr. */
static void
print_help (GOptionContext *ctx)
{
  char *help = g_option_context_get_help (ctx, TRUE, NULL);
  fputs (help, stderr);
  g_free (help);
}

bool
parse_options (GOptionContext *ctx, int *argc, char ***argv)
{
  GError *err = NULL;

  if (!g_option_context_parse (ctx, argc, argv, &err)) {
    ftlctl_error ("%s: %s", g_get_prgname () + strlen ("ftlctl "),
                  err->message);
    g_error_free (err);
    print_help (ctx);
    return false;
  }
  return true;
}

void
usage_error (GOptionContext *ctx, const char *fs, ...)
{
  va_list ap;
  char *msg;

  va_start (ap, fs);
  msg = g_strdup_vprintf (fs, ap);
  va_end (ap);
  ftlctl_error ("%s: %s", g_get_prgname () + strlen ("ftlctl "), msg);
  g_free (msg);
  print_help (ctx);
}

bool
one_image_arg (GOptionContext *ctx, int argc)
{
  if (argc == 2)
    return true;
  usage_error (ctx, argc < 2 ? "no image file given" : "too many arguments");
  return false;
}

bool
parse_size (const char *option, const char *s, uint64_t *r)
{
  char err[256];

  if (ftl_parse_size (option, s, r, err, sizeof err) == -1) {
    ftlctl_error ("%s", err);
    return false;
  }
  return true;
}

bool
parse_uint64 (const char *option, const char *s, uint64_t *r)
{
  char *end;

  errno = 0;
  if (g_ascii_isdigit (s[0])) {
    *r = strtoull (s, &end, 10);
    if (errno == 0 && *end == '\0')
      return true;
  }
  ftlctl_error ("%s: not a non-negative integer: '%s'", option, s);
  return false;
}

bool
parse_double (const char *option, const char *s, double *r)
{
  char *end;

  errno = 0;
  *r = g_ascii_strtod (s, &end);
  if (errno == 0 && end != s && *end == '\0' && isfinite (*r))
    return true;
  ftlctl_error ("%s: not a number: '%s'", option, s);
  return false;
}

/* The library's messages, on stderr. */
static void
log_message (void *opaque, enum ftl_log_level level, const char *msg)
{
  const char *file = opaque;

  switch (level) {
  case FTL_LOG_ERROR:
    ftlctl_error ("%s: %s", file, msg);
    break;
  case FTL_LOG_WARN:
    ftlctl_error ("%s: warning: %s", file, msg);
    break;
  case FTL_LOG_DEBUG:
    break;
  }
}

struct ftl *
image_open (const char *file, bool readonly, bool quiet)
{
  struct ftl_options opts = { .readonly = readonly };

  return image_open_with (file, &opts, quiet);
}

struct ftl *
image_open_with (const char *file, const struct ftl_options *o, bool quiet)
{
  struct ftl_options opts = *o;
  char errbuf[512] = "";
  struct ftl *ftl;
  struct stat st;
  int r;

  /* Say plainly what a missing or empty file is, rather than the
   * library's advice to give a size.
   */
  if (stat (file, &st) == -1) {
    ftlctl_error ("%s: %s", file, strerror (errno));
    return NULL;
  }
  if (S_ISREG (st.st_mode) && st.st_size == 0) {
    ftlctl_error ("%s: the file is empty, not an nbdkit-ftl image "
                  "(ftlctl format creates one)", file);
    return NULL;
  }
  opts.path = file;
  opts.log = quiet ? NULL : log_message;
  opts.log_opaque = (void *) file;
  r = ftl_open (&opts, &ftl, errbuf, sizeof errbuf);
  if (r < 0) {
    ftlctl_error ("%s: %s", file, errbuf[0] ? errbuf : strerror (-r));
    return NULL;
  }
  return ftl;
}

const char *
block_state_name (unsigned state)
{
  switch (state) {
  case FTL_BLK_FREE: return "free";
  case FTL_BLK_OPEN: return "open";
  case FTL_BLK_FULL: return "full";
  case FTL_BLK_RETIRED: return "retired";
  }
  return "unknown";
}
