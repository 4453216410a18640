/* nbdkit-ftl: what the host gives an image: the filesystem that holds
 * its file (free space, the largest file it can hold, its name),
 * reserving the file's space, and the memory a process may use.  Used
 * when an image is created or opened (log/create.c, mngt/open.c).  No
 * state; every function asks the system each time.
 */

#ifndef FTL_UTIL_SPACE_H
#define FTL_UTIL_SPACE_H

#include <stddef.h>
#include <stdint.h>

/* bytes as a short human-readable size: "16 TiB", "1.016 GiB",
 * "512 bytes".  Returns buf.
 */
extern const char *space_human (uint64_t bytes, char *buf, size_t len);

/* The bytes free for an unprivileged user on the filesystem that holds
 * fd: 0, or a negative errno.
 */
extern int space_free (int fd, uint64_t *bytes);

/* The name of the filesystem type that holds fd ("ext4", "xfs",
 * "tmpfs", ...), or NULL if it is not known.
 */
extern const char *space_fs_name (int fd);

/* The largest size that fd's file can be given with ftruncate, which
 * fails (EFBIG) at size and succeeds at from: found by halving the
 * range, the file's size back to from at the end.  Writes no data.  0,
 * or a negative errno.
 */
extern int space_max_file_size (int fd, uint64_t from, uint64_t size,
                                uint64_t *max);

/* Reserve the blocks of fd's file from 0 to size (fallocate, which
 * also sets its size): 0, or a negative errno (-EOPNOTSUPP where the
 * filesystem cannot).
 */
extern int space_allocate (int fd, uint64_t size);

/* The memory this process may use: the host's RAM, or less if a
 * control group or ulimit -v allows less.  *what names the limit
 * ("this host has", ...).
 */
extern uint64_t space_memory_limit (const char **what);

#endif /* FTL_UTIL_SPACE_H */
