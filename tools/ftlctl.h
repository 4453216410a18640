/* ftlctl: create, inspect and check nbdkit-ftl images.
 *
 * One file per subcommand (cmd-*.c); ftlctl.c dispatches to them.  The
 * helpers declared here are shared by all of them: messages, option
 * values, and opening an image with the library.
 *
 * The subcommands that inspect an image open it read-only, which
 * recovers it in memory without writing anything, and then read it
 * through the library's inspection API (ftl/inspect.h): the map, the
 * state of each erase block, erase counts, the pages on the media.
 * They never see the handle's internals (ftl-internal.h), which the
 * build keeps out of reach of tools/.
 */

#ifndef FTLCTL_H
#define FTLCTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <glib.h>

#include "ftl/ftl.h"
#include "ftl/inspect.h"

/* Exit status of every subcommand but check (see check.h). */
#define FTLCTL_EXIT_OK     0
#define FTLCTL_EXIT_ERROR  1   /* the operation failed */
#define FTLCTL_EXIT_USAGE  2   /* bad command line */

/* The subcommands: argv[0] is the subcommand's name.  Each returns the
 * process's exit status.
 */
extern int cmd_format (int argc, char **argv);
extern int cmd_info (int argc, char **argv);
extern int cmd_health (int argc, char **argv);
extern int cmd_age (int argc, char **argv);
extern int cmd_check (int argc, char **argv);
extern int cmd_ns_list (int argc, char **argv);
extern int cmd_ns_add (int argc, char **argv);
extern int cmd_ns_delete (int argc, char **argv);
extern int cmd_dump (int argc, char **argv);
extern int cmd_plot (int argc, char **argv);
extern int cmd_replay (int argc, char **argv);
extern int cmd_top (int argc, char **argv);

/* "ftlctl: " then the message on stderr, with a newline. */
extern void ftlctl_error (const char *fs, ...)
  __attribute__ ((format (printf, 1, 2)));

/* Parse the command line of a subcommand with ctx.  On a bad option,
 * print the message and the subcommand's help on stderr and return
 * false.
 */
extern bool parse_options (GOptionContext *ctx, int *argc, char ***argv);

/* After parse_options: is exactly one argument, the image file, left?
 * If not, print the usage error and return false.
 */
extern bool one_image_arg (GOptionContext *ctx, int argc);

/* Print a usage error (message, then the help of ctx) on stderr. */
extern void usage_error (GOptionContext *ctx, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));

/* Option values.  Each returns false, after printing why on stderr, if
 * the string is not a valid value for the option named.
 */
/* A size in bytes: a number with an optional suffix K, M, G, T, P or E
 * (powers of 1024), as nbdkit's size= takes.
 */
extern bool parse_size (const char *option, const char *s, uint64_t *r);
/* A decimal unsigned integer. */
extern bool parse_uint64 (const char *option, const char *s, uint64_t *r);
/* A decimal number (a percentage). */
extern bool parse_double (const char *option, const char *s, double *r);

/* Open an existing image with the library.  On failure, print
 * "ftlctl: FILE: <the library's explanation>" and return NULL.  The
 * library's warnings and errors go to stderr unless quiet.
 */
extern struct ftl *image_open (const char *file, bool readonly, bool quiet);
/* The same with more options (path and log are set here). */
extern struct ftl *image_open_with (const char *file,
                                    const struct ftl_options *opts,
                                    bool quiet);

/* The image's namespaces as JSON on fp (cmd-ns.c): with top, the
 * object that ns-list --json prints (file, logical size, free space and
 * the namespaces); without, an object of the one member "namespaces"
 * (for info --json).  0 or a negative errno.
 */
extern int ns_render_json (struct ftl *ftl, const char *file, bool top,
                           FILE *fp);

/* The name of an erase block state (enum ftl_block_state): "free"... */
extern const char *block_state_name (unsigned state);

#endif /* FTLCTL_H */
