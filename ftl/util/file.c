/* nbdkit-ftl: replacing a file atomically.  Declared in ftl.h. */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ftl.h"

int
ftl_write_file_atomic (const char *path,
                       int (*write) (void *opaque, FILE *fp), void *opaque)
{
  char *tmp;
  FILE *fp;
  int fd, r;

  if (asprintf (&tmp, "%s.XXXXXX", path) == -1)
    return -ENOMEM;
  fd = mkstemp (tmp);
  if (fd == -1 || fchmod (fd, 0644) == -1 || !(fp = fdopen (fd, "w"))) {
    r = -errno;
    if (fd >= 0) {
      close (fd);
      unlink (tmp);
    }
    free (tmp);
    return r;
  }
  r = write (opaque, fp);
  if (fclose (fp) == EOF && r == 0)
    r = -errno;
  if (r == 0 && rename (tmp, path) == -1)
    r = -errno;
  if (r < 0)
    unlink (tmp);
  free (tmp);
  return r;
}
