/* nbdkit-ftl: helpers shared by the Check unit tests.
 *
 * Temporary files: every TCase gets its own directory under /tmp,
 * created and removed by an unchecked fixture (unit_dir_create,
 * unit_dir_remove).  Unchecked fixtures run in the test runner itself,
 * not in the forked child, so the directory is removed even when a test
 * fails, aborts or times out.  The checked fixture unit_dir_clean
 * empties it before each test, so every test starts with no files.
 *
 * Page patterns: unit_fill_page writes a page that names its logical
 * page and a version; unit_page_identify recognises such a page (or an
 * all-zero one) and rejects anything else, e.g. a page mixed from two
 * writes or one that belongs to another logical page.
 */

#ifndef FTL_UNIT_HELPERS_H
#define FTL_UNIT_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl.h"

/* The directory of the current TCase, and a path inside it. */
extern char unit_dir[64];
extern void unit_dir_create (void);
extern void unit_dir_remove (void);
extern void unit_dir_clean (void);
extern void unit_path (char *buf, size_t len, const char *name);

/* The real file I/O with fdatasync replaced by a no-op: for tests whose
 * subject is not durability ordering (a killed process loses nothing
 * that reached the page cache, so syncs only cost time there).
 */
extern const struct ftl_io *unit_nosync_io (void);

/* Read and decode the OOB entry of physical page ppn: 0, or a negative
 * errno (-EINVAL if it does not decode).
 */
struct ftl_oob;
extern int unit_oob_at (struct ftl *ftl, uint32_t ppn, struct ftl_oob *o);

/* Log callback: keeps the last error in unit_last_error.  Errors are
 * also printed to stderr unless unit_quiet is set (tests that provoke
 * errors on purpose set it).
 */
extern char unit_last_error[512];
extern bool unit_quiet;
extern void unit_log (void *opaque, enum ftl_log_level level,
                      const char *msg);

/* Open (or create, if size is non-zero and the file is absent) an image;
 * the test fails with ftl_open's message if that fails.  io may be NULL.
 */
extern struct ftl *unit_open (const char *path, uint64_t size, uint32_t ps,
                              uint32_t ppb, double op, unsigned streams,
                              const struct ftl_io *io);
/* The same, returning ftl_open's result and message instead. */
extern int unit_try_open (const char *path, const struct ftl_io *io,
                          struct ftl **ftlp, char *err, size_t errlen);

/* Page patterns.  version 0 is reserved for "all zeros". */
extern void unit_fill_page (uint8_t *page, uint32_t ps, uint64_t lpn,
                            uint64_t version);
/* Returns 1 and sets *lpn and *version for a valid pattern, 0 for an
 * all-zero page (version 0), -1 for anything else.
 */
extern int unit_page_identify (const uint8_t *page, uint32_t ps,
                               uint64_t *lpn, uint64_t *version);

/* A small seeded generator (xorshift64*). */
extern uint64_t unit_rnd (uint64_t *state);

/* Files. */
extern void unit_copy_file (const char *from, const char *to);
extern void unit_flip_byte (const char *path, uint64_t off, uint8_t mask);
extern void unit_read_file (const char *path, void *buf, size_t len,
                            uint64_t off);
extern uint64_t unit_file_size (const char *path);

/* Seconds from a monotonic clock. */
extern double unit_now (void);

#endif /* FTL_UNIT_HELPERS_H */
