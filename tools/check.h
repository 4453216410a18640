/* ftlctl check: the checker shared by its parts.
 *
 *   cmd-check.c   options, the order of the passes, --repair, exit status
 *   check-meta.c  superblock copies and checkpoint slots, read raw from
 *                 the file (so that a damaged copy or slot is reported
 *                 even though the library would pass over it)
 *   check-map.c   the image as the library recovered it: the map, every
 *                 mapped page on the media, every erase block, and the
 *                 counts kept in the handle
 *
 * Like SQLite's integrity_check, every pass goes on after an error and
 * every inconsistency found is reported, one line each.
 */

#ifndef FTLCTL_CHECK_H
#define FTLCTL_CHECK_H

#include <stdbool.h>
#include <stdint.h>

#include <glib.h>

#include "ftl/ftl.h"
#include "ftl/inspect.h"
#include "progress.h"

/* Exit status, as fsck's: the sum (bitwise or) of these. */
#define CHECK_EXIT_OK           0
#define CHECK_EXIT_CORRECTED    1
#define CHECK_EXIT_UNCORRECTED  4
#define CHECK_EXIT_OPERATIONAL  8

/* What --repair does to a logical page that failed the check. */
enum page_fix {
  FIX_UNMAP,                    /* its data is unreadable: unmap it */
  FIX_REWRITE,                  /* its data is intact but its OOB entry
                                 * is wrong: write it to a new page */
};

struct fix {
  uint64_t lpn;
  enum page_fix how;
  const char *why;              /* a static string */
};

struct checker {
  const char *file;
  uint64_t errors;
  GArray *fixes;                /* struct fix, for --repair */
  struct progress progress;

  /* For the summary, filled in by check_image. */
  uint64_t mapped_pages, logical_pages;
  uint32_t free_blocks, blocks;
};

extern void checker_init (struct checker *c, const char *file);
extern void checker_free (struct checker *c);

/* "FILE: error: ..." on stdout, and count it. */
extern void check_error (struct checker *c, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));
/* "FILE: ..." on stdout: what was found, not an error. */
extern void check_note (struct checker *c, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));
/* Remember a page for --repair. */
extern void check_fix (struct checker *c, uint64_t lpn, enum page_fix how,
                       const char *why);

/* check-meta.c: both superblock copies and both checkpoint slots of the
 * image open on fd.
 */
extern void check_metadata (struct checker *c, int fd);

/* check-map.c: the image opened (read-only) as ftl. */
extern void check_image (struct checker *c, struct ftl *ftl);

#endif /* FTLCTL_CHECK_H */
