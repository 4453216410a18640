/* nbdkit-ftl: the host's filesystem and memory.  See space.h. */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "ftl.h"
#include "util/space.h"

const char *
space_human (uint64_t bytes, char *buf, size_t len)
{
  static const char *const units[] = {
    "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
  };
  double v = bytes;
  int u = -1;

  if (bytes < 1024) {
    snprintf (buf, len, "%" PRIu64 " bytes", bytes);
    return buf;
  }
  while (v >= 1024 && u < 5) {
    v /= 1024;
    u++;
  }
  snprintf (buf, len, "%.4g %s", v, units[u]);
  return buf;
}

int
space_free (int fd, uint64_t *bytes)
{
  struct statvfs sv;

  if (fstatvfs (fd, &sv) == -1)
    return -errno;
  *bytes = (uint64_t) sv.f_bavail * sv.f_frsize;
  return 0;
}

const char *
space_fs_name (int fd)
{
  static const struct {
    unsigned long magic;
    const char *name;
  } names[] = {
    { 0xEF53, "ext4" },               /* ext2, ext3 and ext4 share it */
    { 0x58465342, "xfs" },
    { 0x9123683E, "btrfs" },
    { 0x01021994, "tmpfs" },
    { 0x4d44, "vfat" },
    { 0x2011BAB0, "exfat" },
    { 0x5346544e, "ntfs" },
    { 0xF2F52010, "f2fs" },
    { 0x2fc12fc1, "zfs" },
    { 0x6969, "nfs" },
    { 0x794c7630, "overlayfs" },
  };
  struct statfs sf;

  if (fstatfs (fd, &sf) == 0)
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
      if ((unsigned long) sf.f_type == names[i].magic)
        return names[i].name;
  return NULL;
}

/* ftruncate, retried on EINTR: 0 or a negative errno. */
static int
set_size (int fd, uint64_t size)
{
  if (size > INT64_MAX)
    return -EFBIG;
  while (ftruncate (fd, size) == -1)
    if (errno != EINTR)
      return -errno;
  return 0;
}

int
space_max_file_size (int fd, uint64_t from, uint64_t size, uint64_t *max)
{
  uint64_t lo = from, hi = size;        /* lo fits, hi does not */
  int r = 0;

  while (hi - lo > 1) {
    uint64_t mid = lo + (hi - lo) / 2;
    r = set_size (fd, mid);
    if (r == 0)
      lo = mid;
    else if (r == -EFBIG || r == -EINVAL)
      hi = mid;
    else
      break;
  }
  if (r == -EFBIG || r == -EINVAL)
    r = 0;
  *max = lo;
  int r2 = set_size (fd, from);
  return r < 0 ? r : r2;
}

int
space_allocate (int fd, uint64_t size)
{
  if (size > INT64_MAX)
    return -EFBIG;
  while (fallocate (fd, 0, 0, size) == -1)
    if (errno != EINTR)
      return -errno;
  return 0;
}

/* A number in a control group's file, or UINT64_MAX ("max", or none). */
static uint64_t
read_limit (const char *path)
{
  FILE *fp = fopen (path, "re");
  uint64_t v = UINT64_MAX;

  if (fp) {
    if (fscanf (fp, "%" SCNu64, &v) != 1)
      v = UINT64_MAX;
    fclose (fp);
  }
  return v;
}

uint64_t
space_memory_limit (const char **what)
{
  long pages = sysconf (_SC_PHYS_PAGES), ps = sysconf (_SC_PAGESIZE);
  uint64_t limit = pages > 0 && ps > 0 ? (uint64_t) pages * ps : UINT64_MAX;
  uint64_t cg;
  struct rlimit rl;

  *what = "this host has";
  cg = read_limit ("/sys/fs/cgroup/memory.max");
  if (cg == UINT64_MAX)
    cg = read_limit ("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (cg < limit) {
    limit = cg;
    *what = "its control group allows";
  }
  if (getrlimit (RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < limit) {
    limit = rl.rlim_cur;
    *what = "ulimit -v allows";
  }
  return limit;
}

const char *
ftl_human_bytes (uint64_t bytes, char *buf, size_t len)
{
  return space_human (bytes, buf, len);
}
