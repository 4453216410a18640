/* nbdkit-ftl: small helpers shared by the FTL modules. */

#include <config.h>

#include <pthread.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/util.h"

FTL_TLS unsigned ftl_tls_shard;
static unsigned next_shard;

unsigned
ftl_shard_assign (void)
{
  unsigned i = __atomic_fetch_add (&next_shard, 1, __ATOMIC_RELAXED)
    % FTL_SHARDS;

  ftl_tls_shard = i + 1;
  return i;
}

void
ftl_thread_name (pthread_t t, const char *name)
{
#ifdef HAVE_PTHREAD_SETNAME_NP
  pthread_setname_np (t, name);
#else
  (void) t;
  (void) name;
#endif
}

void *
ftl_lazy_alloc (uint64_t bytes)
{
  void *p = mmap (NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? NULL : p;
}

void
ftl_lazy_free (void *p, uint64_t bytes)
{
  if (p)
    munmap (p, bytes ? bytes : 1);
}

void
ftl_lazy_populate (void *p, uint64_t bytes)
{
  size_t page = sysconf (_SC_PAGESIZE);
  uintptr_t a = (uintptr_t) p / page * page;
  uintptr_t e = ((uintptr_t) p + bytes + page - 1) / page * page;

  if (bytes == 0)
    return;
#ifdef MADV_POPULATE_WRITE
  if (madvise ((void *) a, e - a, MADV_POPULATE_WRITE) == 0)
    return;
#endif
  /* Before Linux 5.14: a write of what each page holds. */
  for (; a < e; a += page)
    __atomic_fetch_add ((volatile char *) a, 0, __ATOMIC_RELAXED);
}

void
ftl_lazy_zero (void *p, uint64_t bytes)
{
  size_t page = sysconf (_SC_PAGESIZE);
  size_t whole = bytes / page * page;

  if (whole && madvise (p, whole, MADV_DONTNEED) == 0)
    memset ((char *) p + whole, 0, bytes - whole);
  else
    memset (p, 0, bytes);
}
