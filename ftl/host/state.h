/* nbdkit-ftl: the host side's state, as the handle holds it: the
 * write cache (per-shard locks, see cache.c) and the background
 * thread's step state (under bg.step_lock).
 */
#ifndef FTL_HOST_STATE_H
#define FTL_HOST_STATE_H

#include <pthread.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include "log/state.h"

/* A namespace (ns.c): a range of the logical space, from the image's
 * table (format.h), fixed while the handle is open.
 */
struct ftl_ns {
  struct ftl *ftl;
  uint64_t base;                /* bytes, a multiple of the page size */
  uint64_t bytes;
  const char *name;             /* in ftl->ns_table */
};

/* The write cache (cache.c).  See its header for the states of a
 * slot and the invariants.
 */
#define CACHE_SHARDS 16
#define CACHE_BATCHES 64        /* destage batches in flight at once */
struct cache_shard {
  pthread_mutex_t lock;
  pthread_cond_t cond;          /* a slot left, or a batch completed */
  uint32_t first, n;            /* its slots: [first, first + n) */
  uint32_t *table;              /* open addressing: slot or UINT32_MAX */
  uint32_t tmask;
  uint32_t free_head;           /* free slots, linked by next[] */
  uint32_t dirty_head, dirty_tail;  /* by last write, oldest first */
  uint32_t used, dirty;         /* changed under lock, read atomic */
  uint32_t waiters;
} __attribute__ ((aligned (64)));

struct cache {
  uint32_t nslots;              /* 0: no cache (write-through) */
  unsigned shard_bits;
  struct cache_shard *shard;
  uint8_t *data;                /* nslots pages */
  uint64_t *lpn, *ver;          /* per slot */
  uint32_t *prev, *next;        /* per slot: dirty list or free list */
  uint8_t *flags;               /* per slot: SLOT_DIRTY or SLOT_FLIGHT */
  uint64_t *bits;               /* per logical page: maybe cached (a
                                 * disk of at most CACHE_BITS_MAX
                                 * pages); or NULL and: */
  uint16_t *filter;             /* per hash of 8 consecutive logical
                                 * pages: how many of them are cached
                                 * (mask + 1 counters) */
  uint64_t filter_mask;
  unsigned filling;             /* atomic: partial writes that missed,
                                 * reading the log's version of their
                                 * page before its bit is set (see
                                 * cache_drop) */
  uint64_t next_ver;            /* atomic: the global write counter */
  uint64_t dirty;               /* atomic: DIRTY slots, all shards */
  uint32_t start, low;          /* the destager's watermarks */
  uint64_t bypass_bytes;        /* write-cache-bypass; 0: never */
  unsigned pick_shard;          /* atomic */
  int error;                    /* atomic: the last destage error */
  /* Batches in flight (flushes wait for those holding their pages). */
  pthread_mutex_t flight_lock;
  pthread_cond_t flight_cond;
  bool flight_used[CACHE_BATCHES];
  uint64_t flight_min[CACHE_BATCHES];
  /* The destager thread (destage.c). */
  pthread_t thread;
  bool running, stop;           /* atomic */
  bool asleep;                  /* atomic: the thread waits on wake, or
                                 * is about to; the writer that clears
                                 * it posts wake */
  sem_t wake;                   /* posts are counted, never lost, and
                                 * cost the poster no lock */
  /* Counters since open (atomic). */
  uint64_t hits, coalesced, destaged, dropped, flush_waits, write_waits;
  uint64_t bypassed;            /* pages written past the cache */
  /* Batches whose real work the model did not cover (it ended after
   * their programs' modeled end, or syncs of the backing file came
   * before the programs), and how much in all (destage.c, timing model
   * only).  The part that others may wait for is in dl.host_ns too,
   * which a writer waiting for cache room reads (dl_wait_begin).
   */
  uint64_t destage_stalls, destage_stall_ns;
};

/* A page picked by a destage batch. */
struct cache_entry {
  uint64_t lpn;
  uint64_t ver;
  uint32_t slot;
  bool done;                    /* programmed and in the map */
};

/* Background work (bg.c). */
struct bg {
  bool manual;                  /* set at open: no threads, the caller
                                 * steps (ftl_background_step) */
  pthread_t thread;             /* answers the handle's bell: listening
                                 * once started (a thread, or manual) */
  /* One step at a time (the thread, or manual callers); what follows is
   * under step_lock.
   */
  pthread_mutex_t step_lock;
  bool drained_idle;            /* the last look for drained blocks found
                                 * none: not again until a step is idle */
  bool destage_first;           /* manual: whose turn it is, the write
                                 * cache's or the rest's */
};

#endif /* FTL_HOST_STATE_H */
