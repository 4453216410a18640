/* nbdkit-ftl: the FTL handle, shared by the ftl/ modules.
 *
 * Modules, each owning its part of the handle; calls go down this list,
 * never up (the leaves below the line are called by all):
 *
 *   request.c   the request path (ftl_read, ftl_write, ftl_trim, ...)
 *   open.c      ftl_open (a table of steps with undos), ftl_close
 *   create.c    a new image: its geometry, formatting the file
 *   destage.c   from the write cache to the log: batches, the destager
 *               thread, flushes
 *   write.c     host data into the log: write-through, cached batches,
 *               trims, barriers
 *   cache.c     the write cache (pages in RAM, per-shard locks)
 *   read.c      reading host data from the log, checked page by page
 *   bg.c        background work, one step at a time: checkpoints,
 *               drains, wear leveling, GC; the thread that runs it
 *   ckpt.c      checkpoints and superblock updates
 *   recovery.c  loading a checkpoint and rolling the log forward
 *   gc.c        victims, relocation, erases (struct gc)
 *   wl.c        static wear leveling, retirement, end of life (struct wl)
 *   trimlog.c   the trim record buffer and barriers
 *   alloc.c     erase blocks, frontiers, programming at a frontier
 *   map.c       l2p, valid counts, stripe locks, drain notes
 *   slc.c       the SLC cache: its budget, which blocks open in SLC
 *               mode, which one to fold next (struct slc)
 *   ---------
 *   errmodel.c (media that ages: bit errors, ECC, read retry, scrub),
 *   media.c (the NAND rules), format.c (on-disk codec), deadline.c,
 *   timing.c, fault.c, stats.c
 *
 * What each part owns and which lock protects it:
 *
 *   l2p[lpn]      logical -> physical map, 4 bytes per logical page.
 *                 Atomic loads and exchanges; changed only by host writes
 *                 and trims (under the stripe lock of the LPN) and by GC
 *                 (compare-and-swap from the old PPN, so a host write that
 *                 raced wins): map.c.  Readers take no lock: they
 *                 validate with the block's erase generation (media.h).
 *   check[lpn]    the data checksum of l2p[lpn]'s page, folded to 4
 *                 bytes: a hint that lets reads skip the OOB entry
 *                 (map.c); relaxed atomics.
 *   (reverse map) there is none in memory: the OOB entry of a physical
 *                 page names the LPN it was programmed with (or marks
 *                 a page of trim records), and GC reads the victim's
 *                 OOB entries.  A page is valid iff l2p[oob.lpn] == ppn.
 *   valid[blk]    valid pages per block (atomic).  Incremented before a
 *                 page is installed in l2p, decremented after it leaves.
 *   state[blk]    FREE / OPEN / FULL / RETIRED, and nfree: under
 *                 alloc_lock.
 *   frontiers     each host stream has its own mutex; the GC frontiers
 *                 are owned by whoever holds gc.lock; the metadata
 *                 frontier (pages of trim records) by whoever holds
 *                 trim_lock.
 *   trim buffer   trim records not yet written to the log: trim_lock.
 *   ckpt_rw       every operation that changes the map holds it shared
 *                 for its whole duration; a checkpoint takes it
 *                 exclusively for the instant of its snapshot.
 *
 * Lock order (take left before right, never the reverse):
 *   bg.step_lock -> ckpt_lock -> ckpt_rw -> gc.lock -> trim_lock
 *     -> alloc_lock
 *   ckpt_rw -> stripe locks (ascending) -> host frontier -> trim_lock
 *     -> alloc_lock
 * A request never holds a stripe or frontier lock while it collects
 * garbage: it releases them, runs gc_make_room, and takes them again.
 *
 * Durability invariants (what recovery relies on, see recovery.c):
 *   - A trim is appended to the trim buffer before its pages are
 *     unmapped.
 *   - A barrier (trimlog_barrier) writes the buffered trim records to
 *     the log and syncs.  A block is erased only after a barrier that
 *     began after its last valid page left it: every write, trim or
 *     relocation that superseded a page of the block is then durable
 *     (data, or trim records), so an erase never destroys the newest
 *     durable copy of a page, nor exposes a checkpoint's stale mapping.
 *     (drain_epoch records when a block's valid count reached zero.)
 *   - A checkpoint's snapshot is taken under ckpt_rw exclusively, the log
 *     is synced before the checkpoint is written, and the checkpoint is
 *     synced before it counts as durable.
 *   - GC copies keep the data's sequence number; replay applies log items
 *     newer than the checkpoint in sequence order.
 *   - The log stays replayable from the older of the two checkpoints
 *     (replay_seq), not only from the newest: trim records are kept, in
 *     the buffer and in the log, until both checkpoints include them.
 *     Recovery may then fall back to the older checkpoint when the
 *     newest is damaged without losing anything it had made durable.
 */

#ifndef FTL_INTERNAL_H
#define FTL_INTERNAL_H

/* The library's own: programs outside it use ftl.h and inspect.h. */
#ifdef FTL_OUTSIDE_LIBRARY
#error "this header is internal to the FTL library (see ftl/inspect.h)"
#endif

#include <endian.h>
#include <pthread.h>
#include <stdatomic.h>

#include "ftl.h"
#include "track/deadline.h"
#include "nand/errmodel.h"
#include "track/fault.h"
#include "format/format.h"
#include "nand/media.h"
#include "nand/timing.h"
#include "util/bell.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/util.h"

#define FTL_NO_BLOCK      UINT32_MAX
#define FTL_STRIPES       64
#define FTL_STRIPE_SHIFT  8          /* 256 logical pages per stripe unit */

/* Free blocks that host frontiers may not take, so that garbage
 * collection can always make progress.  One is enough: the copies of a
 * victim need at most one block beyond the room of the two GC
 * frontiers' open blocks (either frontier takes the other's pages when
 * no block is free, see program_batch in gc.c), the barrier before its
 * erase needs none (the trim log keeps a page of room, see trimlog.c),
 * and the erase gives a block back (a victim is never on its last
 * cycle, see wl.c).  Static wear leveling, which may move a whole
 * block, runs only with more than the low watermark free.  Trims from
 * clients open a block for their records down to FTL_META_KEEP_BLOCKS
 * (no further: they are retried after GC).  Only GC itself takes the
 * last free block.
 */
#define FTL_RESERVE_BLOCKS 1
/* Victims GC may relocate before it syncs once and erases them all:
 * one per FTL_GC_BATCH_SPARE_DIV spare blocks, from 2 to
 * FTL_GC_ERASE_BATCH (see step_policies in open.c).
 */
#define FTL_GC_ERASE_BATCH 8
#define FTL_GC_BATCH_SPARE_DIV 16
/* Data rewritten or relocated within hot_age sequence numbers of its
 * last write is hot: hot_age = logical pages * NUM / DEN, that is within
 * one drive write.  Under an 80/20 or 90/10 load the hot set is
 * rewritten every 0.1 to 0.25 drive writes and the rest every 4 to 9;
 * measured with bench/ftl-bench, 1 drive write beat 0.5, 2 and 4.
 */
#define HOT_AGE_NUM 1
#define HOT_AGE_DEN 1
#define FTL_META_KEEP_BLOCKS 1
/* Free blocks that foreground GC keeps; the background thread keeps
 * one more per FTL_GC_HIGH_SPARE_DIV spare blocks (at most 8 more, see
 * step_policies in open.c).
 */
#define FTL_GC_LOW_BLOCKS FTL_RESERVE_BLOCKS
#define FTL_GC_HIGH_SPARE_DIV 128
/* Spare blocks needed beyond the logical capacity, given the number of
 * host streams: every open frontier (host, two GC, metadata), the free
 * blocks GC keeps, and room for invalid pages so that reclaiming a
 * victim frees more than it copies; and two more, as when GC kept three
 * free blocks, so that the geometries accepted and the end of life stay
 * where they were.
 */
#define FTL_MIN_SPARE_BLOCKS(streams) ((streams) + 9)
_Static_assert (FTL_META_KEEP_BLOCKS <= FTL_RESERVE_BLOCKS,
                "a trim retried after GC down to the reserve finds a block");
_Static_assert (FTL_MIN_SPARE_BLOCKS (0) >= 2 + 1 + FTL_GC_LOW_BLOCKS + 3,
                "the minimum spare holds the frontiers and the free blocks "
                "GC keeps");
/* Hot/cold separation opens one more frontier per stream and a second
 * GC frontier: only on images with that much more spare.
 */
#define FTL_SEPARATION_SPARE_BLOCKS(streams) \
  (FTL_MIN_SPARE_BLOCKS (streams) + (streams) + 1)
/* Default host streams: one per FTL_SPARE_PER_STREAM spare blocks, 1 to
 * FTL_DEFAULT_STREAMS.  Every open frontier holds a block that is on
 * average half unwritten, and with hot/cold separation each stream has
 * two: on a small disk that is spare space that garbage collection
 * misses (a 256 MiB disk has 72 spare blocks).
 */
#define FTL_SPARE_PER_STREAM 64

enum frontier_kind { FRONTIER_HOST, FRONTIER_GC, FRONTIER_META };

struct frontier {
  pthread_mutex_t lock;         /* host frontiers only */
  enum frontier_kind kind;
  uint32_t block;               /* FTL_NO_BLOCK when none is open */
  uint32_t wp;                  /* next page to program in block */
};

/* Pages programmed by one call of alloc_program (bounds its buffers). */
#define ALLOC_PROGRAM_MAX MEDIA_IOV_MAX

/* One page for alloc_program: what its OOB entry will say, and how the
 * map changes once it is programmed.
 */
struct log_page {
  enum ftl_oob_kind kind;
  uint32_t lpn;                 /* DATA: the logical page */
  uint32_t trim_entries;        /* TRIM: trim records in the page */
  uint64_t seq;                 /* DATA: the data's; TRIM: its newest */
  uint32_t from;                /* DATA: FTL_UNMAPPED for a host write
                                 * (installed whatever lpn mapped to);
                                 * else the page GC copies it from
                                 * (moved only if lpn still maps there) */
};

/* A victim block being reclaimed (gc.c): its OOB entries, read once,
 * and how far relocation has got.  A reclaim may stop between batches
 * and go on later (background GC in slices); meanwhile the block stays
 * FULL, so no frontier takes it, and victim selection skips it.
 */
struct gc_victim {
  uint32_t block;               /* FTL_NO_BLOCK: none */
  uint32_t wp;                  /* its programmed pages */
  uint32_t next;                /* the next page to look at */
  uint64_t live_trim;           /* trim pages from this seq on are copied */
  uint8_t *oob;                 /* wp OOB entries */
};

/* Garbage collection's state (gc.c; under lock unless noted). */
struct gc {
  pthread_mutex_t lock;
  pthread_t owner;              /* atomic: the thread holding lock, if
                                 * owned */
  bool owned;                   /* atomic; for tests and assertions */
  enum ftl_gc_policy policy;    /* set at open */
  enum ftl_gc_mode mode;        /* set at open */
  uint32_t low;                 /* foreground GC starts at or below */
  uint32_t high;                /* background GC keeps more free than
                                 * this (foreground too, without it) */
  uint32_t drain_target;        /* the background thread erases drained
                                 * blocks (nothing to copy) up to this */
  bool from_slc;                /* relocating from an SLC block: a fold
                                 * (counted in slc.folded) */
  bool moving_for_wl;           /* relocating for wear leveling, not to
                                 * free space (counted apart) */
  bool wl_after;                /* background GC reclaimed a victim: its
                                 * next step may move a block for wear
                                 * leveling (gc_wear_level) */
  /* Victims relocated and drained, still FULL, waiting for a barrier
   * to cover them (gc.c): up to erase_batch of them share one, and a
   * client's flush or a background barrier may cover them first.
   * npending changes under gc.lock and is read atomically outside it.
   */
  bool defer;                   /* within gc_reclaim: victims may wait */
  uint32_t erase_batch;         /* set at open, 2..FTL_GC_ERASE_BATCH */
  uint32_t pending[FTL_GC_ERASE_BATCH];
  unsigned npending;
  struct gc_victim cur;         /* the victim background GC reclaims in
                                 * slices (block read atomically) */
  uint8_t *buf;                 /* relocation buffer */
  uint8_t *oob;                 /* a victim's OOB entries */
  uint32_t buf_pages;
  /* Counters since open (atomic). */
  uint64_t barriers;            /* barriers run for erases */
  uint64_t erases_unsynced;     /* erases an earlier barrier covered */
  uint64_t slices, yields;      /* deadline mode */
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
  uint64_t *bits;               /* per logical page: maybe cached */
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
  pthread_mutex_t lock;
  pthread_cond_t cond;
  /* Counters since open (atomic). */
  uint64_t hits, coalesced, destaged, dropped, flush_waits, write_waits;
  uint64_t bypassed;            /* pages written past the cache */
};

/* A page picked by a destage batch. */
struct cache_entry {
  uint64_t lpn;
  uint64_t ver;
  uint32_t slot;
  bool done;                    /* programmed and in the map */
};

/* Wear leveling, retirement and end of life (wl.c). */
struct wl {
  uint32_t threshold;           /* static wear leveling trigger */
  uint32_t endurance;           /* erases before a block is retired */
  uint32_t retired;             /* retired blocks, under alloc_lock */
  uint32_t last_cycle;          /* blocks whose next erase retires them
                                 * (wl_on_last_cycle), under alloc_lock */
  bool worn_out;                /* atomic: too few blocks left to write */
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

/* The SLC cache (slc.c). */
struct slc {
  bool enabled;                 /* set at open */
  unsigned bits;                /* bits per cell of native blocks */
  uint32_t cap;                 /* pages an SLC block holds */
  uint32_t static_blocks;       /* from the spare */
  uint64_t dynamic_max;         /* blocks at most from free user space
                                 * (UINT64_MAX: no limit) */
  uint64_t fold_idle_ns;        /* fold after writes paused this long */
  uint32_t used;                /* blocks in SLC mode, OPEN or FULL:
                                 * under alloc_lock, read atomic */
  bool exhausted;               /* the last host block was native for
                                 * want of budget: under alloc_lock */
  uint64_t last_write_ns;       /* atomic: a host frontier's last
                                 * program (CLOCK_MONOTONIC) */
  /* Counters since open (atomic). */
  uint64_t folded, exhaustions;
};

/* Sequence numbers reserved by programs in flight (durable.c). */
#define SEQ_SLOTS 128
struct seqreg {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool used[SEQ_SLOTS];
  uint64_t lo[SEQ_SLOTS];
};

/* One thread's copy of the counters (see ctr_add). */
struct ctr_shard {
  uint64_t v[FTL_CTR__MAX];     /* atomic */
} __attribute__ ((aligned (64)));

struct ftl {
  char *path;
  int fd;
  bool readonly;
  bool closing;                 /* ftl_close is writing its last records */
  bool powered_off;             /* atomic: ftl_power_cut (powercut.c) */
  bool was_unclean;             /* recovery found no clean shutdown */
  bool last_ckpt_clean;         /* ... and its checkpoint was a clean one */

  /* Durable points (durable.c). */
  struct seqreg seqreg;
  uint64_t synced_seq;          /* atomic: pages below are synced */
  pthread_mutex_t durable_lock;
  uint64_t durable_seq;         /* the record on the media (and what
                                 * recovery loaded) */
  uint64_t durable_gen;
  uint64_t recovered_damaged;   /* durable pages recovery found damaged */
  struct ftl_logger logger;      /* log_msg, log_debug (util/log.h) */

  struct media media;
  struct ftl_superblock sb;
  uint64_t logical_bytes;
  uint64_t logical_pages;
  uint32_t page_size;
  unsigned page_shift;
  uint32_t ppb;
  uint32_t blocks;

  /* The map (map.c). */
  uint32_t *l2p;
  uint32_t *check;              /* per logical page: its data checksum
                                 * folded (map_check_fold), 0: unknown */
  uint32_t *valid;
  uint64_t mapped;              /* atomic: LPNs with data */
  pthread_mutex_t stripe[FTL_STRIPES];
  /* Barriers: barrier_started counts those begun, and barrier_done is
   * one more than the number of the highest one that completed
   * (barriers may overlap).  drain_epoch[b] is at least 1 + the value
   * of barrier_started at the last decrement of block b's valid count
   * (0: none since its erase).  Atomics.
   */
  uint64_t barrier_started, barrier_done;
  uint64_t *drain_epoch;

  /* Erase blocks and frontiers (alloc.c). */
  pthread_mutex_t alloc_lock;
  uint8_t *state;               /* enum ftl_block_state, under alloc_lock */
  uint32_t nfree;               /* changed under alloc_lock, read atomic */
  uint64_t *close_seq;          /* per block: next_seq when it filled up
                                 * (under alloc_lock) */
  uint32_t *trim_pages;         /* atomic: trim pages per block since the
                                 * last checkpoint (GC victim cost) */
  uint64_t *trim_seq_end;       /* per block: 1 + the highest sequence
                                 * number of its trim pages (0: none,
                                 * UINT64_MAX: unknown, after a restart);
                                 * atomic */
  unsigned nstreams;
  struct frontier host[FTL_MAX_STREAMS];  /* first writes, cold rewrites */
  struct frontier hot[FTL_MAX_STREAMS];   /* rewrites of hot data */
  unsigned next_stream;         /* atomic: assigns threads to streams */
  struct frontier gcf;                    /* relocated cold data */
  struct frontier gcw;                    /* relocated young data */
  struct frontier metaf;                  /* trim records */
  /* Temperature (see alloc.c): data rewritten, or relocated, less than
   * hot_age sequence numbers after it was written is hot.
   */
  bool one_log;                 /* atomic: set for good when retired
                                 * blocks leave too little spare */
  uint64_t hot_age;
  uint64_t *seq_sum;            /* per block: sum of its data pages' write
                                 * sequence numbers (relaxed atomics) */
  uint32_t *seq_cnt;            /* per block: how many */

  struct gc gc;
  struct wl wl;
  struct slc slc;
  struct bg bg;
  struct ftl_bell bell;         /* wakes bg (util/bell.h): rung by any
                                 * layer, answered by host/bg.c */
  struct cache cache;

  /* Trim records not yet in the log (trimlog.c, under trim_lock). */
  pthread_mutex_t trim_lock;
  struct ftl_trim_entry *trim_buf;
  uint32_t trim_count, trim_cap;
  uint8_t *trim_page;           /* encode buffer */

  /* Checkpoints (ckpt.c). */
  pthread_mutex_t ckpt_lock;
  pthread_rwlock_t ckpt_rw;
  uint64_t ckpt_gen;            /* generation of the newest durable one */
  unsigned ckpt_slot;           /* slot holding it */
  uint64_t durable_ckpt_seq;    /* atomic: its seq */
  uint64_t replay_seq;          /* atomic: seq of the older checkpoint
                                 * slot, which recovery falls back to if
                                 * the newest is damaged */
  uint64_t pages_since_ckpt;    /* atomic */
  uint64_t trim_pages_since_ckpt; /* atomic: trim pages among them */
  uint64_t ckpt_interval;       /* pages between automatic checkpoints */
  uint64_t ckpt_trim_interval;  /* or trim pages, if fewer */

  uint64_t next_seq;            /* atomic */

  /* Deadlines, the timing model and fault injection (leaves that the
   * data path and the media layer call; see their headers).
   */
  struct deadline dl;
  struct timing timing;
  struct fault fault;
  struct errmodel em;           /* media that ages (errmodel.h) */

  /* Counters, persisted in checkpoints: sharded per thread (util.h),
   * changed through ctr_add, read through ctr_get.
   */
  struct ctr_shard ctr[FTL_SHARDS];
};

/* A power cut (mngt/powercut.c) turned the handle off: requests fail. */
static inline bool
powered_off (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->powered_off, __ATOMIC_ACQUIRE);
}

/* The counters. */
static inline void
ctr_add (struct ftl *ftl, enum ftl_ckpt_counter c, uint64_t n)
{
  __atomic_fetch_add (&ftl->ctr[ftl_shard ()].v[c], n, __ATOMIC_RELAXED);
}

/* The sum over the shards. */
static inline uint64_t
ctr_get (struct ftl *ftl, enum ftl_ckpt_counter c)
{
  return ftl_shard_sum (&ftl->ctr[0].v[c], sizeof ftl->ctr[0]);
}

/* Set a counter (recovery, at open: nothing else counts yet). */
static inline void
ctr_set (struct ftl *ftl, enum ftl_ckpt_counter c, uint64_t n)
{
  for (unsigned i = 0; i < FTL_SHARDS; i++)
    __atomic_store_n (&ftl->ctr[i].v[c], i == 0 ? n : 0, __ATOMIC_RELAXED);
}

static inline bool
one_log (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->one_log, __ATOMIC_RELAXED);
}

static inline uint32_t
l2p_load (struct ftl *ftl, uint64_t lpn)
{
  return __atomic_load_n (&ftl->l2p[lpn], __ATOMIC_ACQUIRE);
}

static inline uint32_t
check_load (struct ftl *ftl, uint64_t lpn)
{
  return __atomic_load_n (&ftl->check[lpn], __ATOMIC_RELAXED);
}

/* A page's data checksum (fmt_checksum) as kept in check[]: 32 bits,
 * never 0 (which means unknown).
 */
static inline uint32_t
map_check_fold (uint64_t sum)
{
  uint32_t c = (uint32_t) (sum ^ (sum >> 32));
  return c ? c : 1;
}

/* map.c: the map, valid counts, stripe locks and drain notes. */
extern int map_init (struct ftl *ftl);
extern void map_free (struct ftl *ftl);
extern void map_lock (struct ftl *ftl, uint64_t first, uint64_t last);
extern void map_unlock (struct ftl *ftl, uint64_t first, uint64_t last);
/* The stripes of [first, last] as a bit mask, and locking a set of
 * stripes (in ascending order) for writes of scattered pages.
 */
extern uint64_t map_stripe_mask (uint64_t first, uint64_t last);
extern void map_lock_mask (struct ftl *ftl, uint64_t mask);
extern void map_unlock_mask (struct ftl *ftl, uint64_t mask);
/* A host write programmed lpn at ppn, whose data has the check check
 * (map_check_fold; 0 if none may be trusted).  Caller holds lpn's
 * stripe.
 */
extern void map_install (struct ftl *ftl, uint64_t lpn, uint32_t ppn,
                         uint32_t check);
/* Unmap lpn (caller holds its stripe); true if it was mapped. */
extern bool map_unmap (struct ftl *ftl, uint64_t lpn);
/* GC copied lpn from page from to page to (whose data has the check
 * check, or 0): move the mapping if lpn still maps to from.  Returns
 * whether it moved.
 */
extern bool map_relocate (struct ftl *ftl, uint64_t lpn, uint32_t from,
                          uint32_t to, uint32_t check);
/* A read verified lpn's page by its OOB entry, whose checksum folds to
 * check: note it, unless lpn's check changed from seen meanwhile.
 */
extern void map_check_heal (struct ftl *ftl, uint64_t lpn, uint32_t seen,
                            uint32_t check);
/* After recovery: the checks of every mapped page, from the OOB entries
 * (a page whose entry does not vouch for it gets none, and is read the
 * slow way).  Returns 0 or -ENOMEM.
 */
extern int map_checks_load (struct ftl *ftl);
/* Block b loses a valid page: note the drain epoch, then decrement. */
extern void map_drop_valid (struct ftl *ftl, uint32_t b);
extern void map_note_drain (struct ftl *ftl, uint32_t b);
/* Is b empty of valid pages, and has a barrier that began after its
 * last valid page left completed?  Then b may be erased at once.
 */
extern bool map_drained_durably (struct ftl *ftl, uint32_t b);
/* The same, without noting a drain: for assertions. */
extern bool map_erase_allowed (struct ftl *ftl, uint32_t b);
extern uint64_t map_barrier_begin (struct ftl *ftl);
extern void map_barrier_done (struct ftl *ftl, uint64_t k);
/* After b was erased. */
extern void map_block_erased (struct ftl *ftl, uint32_t b);

/* alloc.c: erase blocks, frontiers and programming at a frontier. */
extern int alloc_init (struct ftl *ftl);
extern void alloc_free (struct ftl *ftl);
extern struct frontier *alloc_host_frontier (struct ftl *ftl, bool hot);
/* Is the data of these logical pages hot (rewritten soon after it was
 * last written)?  Decided by the majority of the mapped pages.
 */
extern bool alloc_range_is_hot (struct ftl *ftl, uint64_t first,
                                uint64_t last);
/* Free blocks now (an atomic read; exact under alloc_lock). */
static inline uint32_t
alloc_nfree (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->nfree, __ATOMIC_RELAXED);
}
/* Give f an open erase block if it has none, leaving at least keep
 * blocks free.  Returns 0, or -ENOSPC if that many are not free (it
 * never collects garbage: callers do, before they call it).  Caller
 * owns f.
 */
extern int alloc_frontier_open (struct ftl *ftl, struct frontier *f,
                                uint32_t keep);
/* Pages f's open block can still take (0 if none is open). */
static inline uint32_t
alloc_frontier_room (const struct ftl *ftl, const struct frontier *f)
{
  return f->block == FTL_NO_BLOCK ? 0
    : media_block_pages (&ftl->media, f->block) - f->wp;
}
/* Program n pages (n <= ALLOC_PROGRAM_MAX, n <= the room of f's open
 * block) described by pages[], data in data; then change the map as
 * pages[] says and advance f, closing its block when full.  *moved (if
 * not NULL) counts relocated pages whose mapping moved.  After a
 * failed program the pages count as programmed (garbage) and the map
 * is unchanged.  Caller owns f and holds what the map changes need
 * (stripe locks for host writes; gc.lock for relocations).
 */
extern int alloc_program (struct ftl *ftl, struct frontier *f,
                          const struct log_page *pages, uint32_t n,
                          const uint8_t *data, uint32_t *moved);
/* The same, page i's data at data[i] (the write cache's pages). */
extern int alloc_programv (struct ftl *ftl, struct frontier *f,
                           const struct log_page *pages, uint32_t n,
                           const uint8_t *const *data, uint32_t *moved);
/* Every frontier (host, hot, the two GC ones, the metadata one): fills
 * all[FTL_FRONTIERS] and returns how many.
 */
#define FTL_FRONTIERS (2 * FTL_MAX_STREAMS + 3)
extern unsigned alloc_frontiers (struct ftl *ftl, struct frontier **all);
/* Close every open block (at shutdown).  Caller has exclusive access. */
extern void alloc_close_frontiers (struct ftl *ftl);

/* trimlog.c: the trim record buffer and barriers. */
extern int trimlog_init (struct ftl *ftl);
extern void trimlog_free (struct ftl *ftl);
/* Record that [lpn, lpn+count) is unmapped (before unmapping it).  May
 * write a full buffer to the log; opens a block for the metadata
 * frontier, leaving keep blocks free, if it has no room left for the
 * record's page.  Returns 0, or -ENOSPC (nothing recorded: collect
 * garbage and try again), or the error of a program.
 */
extern int trimlog_append (struct ftl *ftl, uint64_t lpn, uint64_t count,
                           uint32_t keep);
/* Write buffered trim records to the log (not synced); never needs a
 * free block.  Caller holds ckpt_rw shared and not trim_lock.
 */
extern int trimlog_flush (struct ftl *ftl);
/* A barrier: write the buffered trim records and sync.  Every write,
 * trim and relocation completed before the call is durable when it
 * returns 0.  Never needs a free block.  Caller holds ckpt_rw shared
 * and not trim_lock.
 */
extern int trimlog_barrier (struct ftl *ftl);
extern void trimlog_drop_before (struct ftl *ftl, uint64_t seq);

/* gc.c: victims, relocation and erases. */
extern int gc_init (struct ftl *ftl);
extern void gc_free (struct ftl *ftl);
/* Reclaim blocks until more than target are free (caller holds
 * ckpt_rw shared and no stripe or frontier lock).  bg: the background
 * thread's call (counted apart, one victim at a time).  Returns 0, or
 * -ENOSPC when nothing can be reclaimed.
 */
extern int gc_reclaim (struct ftl *ftl, uint32_t target, bool bg);
/* Relocate what is valid in FULL block b and erase it (for tests). */
extern int gc_reclaim_block (struct ftl *ftl, uint32_t b);
/* Before a request takes blocks (holding no stripe lock): collect if
 * free blocks are at the low watermark.  urgent: the host could not
 * get a block above the reserve; collect up to it or fail with
 * -ENOSPC (device full) or -EROFS (worn out).
 */
extern int gc_make_room (struct ftl *ftl, bool urgent);
/* Erase drained blocks that an earlier barrier covers (pending victims
 * first), up to max of them and while at most target are free (pending
 * victims whatever the pool).  Returns how many it erased
 * (or a negative errno); *waiting tells whether drained blocks wait for
 * a barrier (gc_barrier then serves them all).
 */
extern int gc_erase_drained (struct ftl *ftl, unsigned max, uint32_t target,
                             bool *waiting);
/* After a barrier (a client's flush): erase the victims waiting for
 * one that it covered, unless somebody holds gc.lock (who then does
 * it).  Returns how many it erased, or a negative errno.
 */
extern int gc_erase_covered (struct ftl *ftl);
/* A barrier run for erases (counted: gc.syncs). */
extern int gc_barrier (struct ftl *ftl);
/* Deadline mode: one slice of background GC.  Returns 1 if it did a
 * slice, 0 if there was nothing to do, or a negative errno.
 */
extern int gc_slice (struct ftl *ftl);
/* After background GC reclaimed a victim (gc.wl_after): one static
 * wear leveling move, if a block is due for one and no deadline is
 * near.  Returns 1 if it moved a block, 0 if not, or a negative errno.
 * Caller holds ckpt_rw shared.
 */
extern int gc_wear_level (struct ftl *ftl);
/* Deadline mode: has a running request less than half its timeout
 * left?
 */
extern bool gc_deadline_near (struct ftl *ftl);
/* Does the calling thread hold gc.lock?  (Tests classify what GC
 * writes; nothing in the FTL decides anything by it.)
 */
static inline bool
gc_running_here (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->gc.owned, __ATOMIC_ACQUIRE) &&
    pthread_equal (__atomic_load_n (&ftl->gc.owner, __ATOMIC_RELAXED),
                   pthread_self ());
}
/* Victims relocated and waiting for a barrier (read outside gc.lock). */
static inline unsigned
gc_npending (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->gc.npending, __ATOMIC_RELAXED);
}
/* Is a victim being reclaimed in slices? */
static inline bool
gc_in_progress (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->gc.cur.block, __ATOMIC_RELAXED)
    != FTL_NO_BLOCK;
}

/* wl.c: static wear leveling, retirement and end of life. */
extern void wl_init (struct ftl *ftl, uint32_t threshold, uint32_t endurance);
/* The FULL block static wear leveling should move now, or FTL_NO_BLOCK.
 * skip(b) excludes blocks GC holds.  Caller holds gc.lock.
 */
extern uint32_t wl_pick (struct ftl *ftl, bool (*skip) (struct ftl *,
                                                        uint32_t));
/* After block b was erased (caller holds alloc_lock): retire it if it
 * is worn out, else return it to the free pool.
 */
extern void wl_erased (struct ftl *ftl, uint32_t b);
/* Will the next erase of block b retire it?  (Not for a block never
 * erased: with an endurance of 1 a new disk can be written once.)  A
 * block on its last cycle is no GC victim: its erase would give no
 * block back.
 */
static inline bool
wl_on_last_cycle (struct ftl *ftl, uint32_t b)
{
  uint32_t ec = media_erase_count (&ftl->media, b);
  return ftl->state[b] != FTL_BLK_RETIRED && ec > 0 &&
    ec + 1 >= ftl->wl.endurance;
}
/* After recovery: count the blocks on their last cycle, then check the
 * end of life.
 */
extern void wl_recovered (struct ftl *ftl);
/* Turn the disk read-only if the blocks left cannot sustain writes,
 * and stop hot/cold separation if they cannot hold its frontiers.
 */
extern void wl_check_end_of_life (struct ftl *ftl);
/* The health log's available spare: the percentage of the blocks
 * beyond what writes need (the logical capacity, the minimum spare and
 * the write cache's room) that are neither retired nor on their last
 * cycle; 0 once the disk is worn out.  Takes alloc_lock.
 */
extern unsigned wl_available_spare (struct ftl *ftl);
static inline bool
wl_worn_out (struct ftl *ftl)
{
  return __atomic_load_n (&ftl->wl.worn_out, __ATOMIC_ACQUIRE);
}

/* slc.c: the SLC cache. */
/* Check the options and set the cache up (at open, after the policies;
 * errbuf says which key is wrong).  spare: the image's spare blocks.
 */
extern int slc_init (struct ftl *ftl, const struct ftl_slc *o,
                     uint32_t spare, char *errbuf, size_t errlen);
/* The budget: how many blocks may be in SLC mode at once, given the
 * static blocks, the dynamic limit and the free user space (see the
 * arithmetic in slc.c).
 */
extern uint64_t slc_budget_blocks (uint32_t static_blocks,
                                   uint64_t dynamic_max,
                                   uint64_t logical_pages, uint64_t mapped,
                                   uint32_t ppb);
extern uint64_t slc_budget (struct ftl *ftl);
/* Largest static part (blocks) that the spare allows. */
extern uint32_t slc_static_limit (uint32_t spare, uint32_t min_spare,
                                  uint32_t ppb, uint32_t cap);
/* A host frontier takes free block b (caller holds alloc_lock, b is
 * unwritten): open it in SLC mode if the budget allows.  Counts the
 * cliff.
 */
extern void slc_block_opened (struct ftl *ftl, uint32_t b);
/* Block b leaves SLC mode (erased, or closed unwritten); caller holds
 * alloc_lock.
 */
extern void slc_block_released (struct ftl *ftl, uint32_t b);
/* A host frontier programmed pages (for the idle fold). */
static inline void
slc_host_wrote (struct ftl *ftl)
{
  if (ftl->slc.enabled)
    __atomic_store_n (&ftl->slc.last_write_ns, clock_now (),
                      __ATOMIC_RELAXED);
}
/* Should the background fold now: blocks in SLC mode beyond the
 * budget, or writes paused for fold_idle_ns with any left?
 */
extern bool slc_fold_due (struct ftl *ftl);
/* The FULL SLC block to fold next (the oldest) that skip(b) does not
 * exclude, or FTL_NO_BLOCK.  Caller holds gc.lock.
 */
extern uint32_t slc_fold_pick (struct ftl *ftl,
                               bool (*skip) (struct ftl *, uint32_t));
/* After recovery: count the blocks in SLC mode. */
extern void slc_recovered (struct ftl *ftl);
extern void slc_get_stats (struct ftl *ftl, struct ftl_stats *st);
/* gc.c: fold one SLC block, if one is due and the pool allows.
 * Returns 1 if it folded one, 0 if not, or a negative errno.  Caller
 * holds ckpt_rw shared.
 */
extern int gc_fold (struct ftl *ftl);

/* bg.c: background work and its thread. */
extern void bg_init (struct ftl *ftl, bool manual);
extern void bg_free (struct ftl *ftl);
/* What a background step does; bg_work_here tells what the calling
 * thread's step is doing (BG_NONE outside one).  Tests classify what
 * the background writes; nothing in the FTL decides anything by it.
 */
enum bg_work {
  BG_NONE, BG_CKPT, BG_ERASE, BG_BARRIER, BG_WL, BG_GC, BG_DESTAGE,
  BG_RECLAIM, BG_SCRUB, BG_FOLD,
  BG_WORK__MAX
};
extern enum bg_work bg_work_here (void);
/* Read reclaim: move the data of one block noted by the error model,
 * if the free pool allows.  Returns 1 if it moved a block, 0 if none,
 * or a negative errno.  Caller holds ckpt_rw shared.
 */
extern int gc_read_reclaim (struct ftl *ftl);

/* ckpt.c: superblocks and checkpoints. */
extern int ckpt_init (struct ftl *ftl);
extern void ckpt_free (struct ftl *ftl);
extern int ckpt_write_superblock (struct ftl *ftl, enum ftl_sb_state state,
                                  uint64_t clean_ckpt_gen);
extern int ckpt_write (struct ftl *ftl, bool clean);
/* Write a checkpoint if one is due and no other thread writes one.
 * Returns 1 if it wrote one, 0 if not, or a negative errno.
 */
extern int ckpt_maybe (struct ftl *ftl);
/* Due: an interval of pages or of trim pages since the last one;
 * overdue: two.
 */
extern bool ckpt_due (struct ftl *ftl);
extern bool ckpt_overdue (struct ftl *ftl);

/* durable.c: durable points (see there). */
extern int durable_init (struct ftl *ftl);
extern void durable_free (struct ftl *ftl);
extern uint64_t seq_reserve (struct ftl *ftl, uint32_t k, int *slot);
extern void seq_release (struct ftl *ftl, int slot);
extern uint64_t durable_sample (struct ftl *ftl);
extern void durable_synced (struct ftl *ftl, uint64_t sample);
extern int durable_commit (struct ftl *ftl);
extern int durable_load (struct ftl *ftl);

/* create.c: format fd, a blank file (empty, or old_size bytes of
 * zeros), as a new image with the geometry that the options o give,
 * then sync the directory that holds it; errbuf says why it cannot.
 */
extern int create_image (int fd, const struct ftl_options *o,
                         uint64_t old_size, char *errbuf, size_t errlen);
/* A file of size bytes with no valid superblock copy, copy B all zeros
 * (and copy A too if sbs_zero): blank (only zeros: sets *blank, returns
 * 0), or -EINVAL, with errbuf replaced if it is an image whose creation
 * was cut short (left as the caller wrote it otherwise).
 */
extern int create_examine (int fd, uint64_t size, bool sbs_zero,
                           bool *blank, char *errbuf, size_t errlen);
/* What is said of an image whose creation was cut short. */
#define CREATE_CUT_SHORT "an incomplete image (creation was cut short): " \
  "remove the file to create the image again"

/* recovery.c: load the newest checkpoint and roll the log forward. */
extern int recovery_run (struct ftl *ftl, char *errbuf, size_t errlen);

/* read.c: read n whole pages at lpn from the log, as the map shows
 * them (no lock; GC-safe); -EIO for a page that fails its check.
 */
extern int read_pages (struct ftl *ftl, uint64_t lpn, uint32_t n,
                       uint8_t *buf);

/* errmodel.c: what the FTL calls of the error model (errmodel.h). */
/* After n pages at ppn (one block, erase count ec) were read and
 * verified: draw their bit errors; count the corrected bits and read
 * retries (and time the retries); -EIO if a page is uncorrectable.
 * Notes the block for read reclaim when its reads near the limit.
 */
extern int errmodel_read (struct ftl *ftl, uint32_t ppn, uint32_t n,
                          uint32_t ec);
/* A FULL block noted for read reclaim that skip(b) does not exclude
 * (nor one on its last cycle), or FTL_NO_BLOCK.  Caller holds gc.lock.
 */
extern uint32_t errmodel_reclaim_pick (struct ftl *ftl,
                                       bool (*skip) (struct ftl *, uint32_t));
extern void errmodel_reclaimed (struct ftl *ftl);
/* Garbage collection read page ppn (erase count ec) to relocate it:
 * is it uncorrectable?  Its corrected bits and retries count as a host
 * read's do; a lost page counts in media.uncorrectable (the host's
 * later reads of it count as media errors).
 */
extern bool errmodel_relocation_lost (struct ftl *ftl, uint32_t ppn,
                                      uint32_t ec);
/* The idle scrub: if one is due, read the next FULL block through the
 * model (noting it for read reclaim if it needs it).  Returns 1 if it
 * scrubbed a block, else 0.  Caller holds bg.step_lock.
 */
extern int errmodel_scrub_step (struct ftl *ftl);
/* After recovery: blocks with pages but no known program time were
 * programmed now, as far as the model knows.
 */
extern void errmodel_recovered (struct ftl *ftl);

/* cache.c: the write cache.  Callers check ftl->cache.nslots first. */
extern int cache_init (struct ftl *ftl, uint64_t bytes);
/* Spare erase blocks that a cache of pages pages takes: room to destage
 * all of it, beyond FTL_MIN_SPARE_BLOCKS, so that the pages it
 * acknowledged reach the log even after the disk turns read-only.
 */
static inline uint32_t
cache_spare_blocks (uint64_t pages, uint32_t ppb)
{
  return pages ? DIV_ROUND_UP (pages, ppb) + 1 : 0;
}
extern void cache_free (struct ftl *ftl);
/* Put bytes [in, in+len) of logical page lpn (zeros if src is NULL)
 * into the cache; a page not cached is read from the log first if the
 * write is partial.  Waits while the page is in flight.  Returns 0,
 * -EAGAIN if its shard has no free slot (see cache_shard_index and
 * cache_wait_slot), -ETIMEDOUT if the request was aborted, or the
 * error of the read.
 */
extern int cache_write (struct ftl *ftl, uint64_t lpn, uint32_t in,
                        uint32_t len, const uint8_t *src);
extern unsigned cache_shard_index (struct ftl *ftl, uint64_t lpn);
/* Wait (briefly) for a free slot in a shard; false if the request was
 * aborted.
 */
extern bool cache_wait_slot (struct ftl *ftl, unsigned shard);
/* Copy lpn's cached data into dst if the cache holds it. */
extern bool cache_read (struct ftl *ftl, uint64_t lpn, uint8_t *dst);
/* Does the cache (maybe) hold lpn?  A lock-free bit test. */
extern bool cache_holds (struct ftl *ftl, uint64_t lpn);
/* How many pages from lpn on (at most n) the cache does not hold: the
 * same test, 64 pages at a time.
 */
extern uint64_t cache_absent_run (struct ftl *ftl, uint64_t lpn, uint64_t n);
/* Drop cached pages of [first, end) (a trim, or a write that went past
 * the cache; caller holds their stripe locks); returns how many.
 */
extern uint64_t cache_drop (struct ftl *ftl, uint64_t first, uint64_t end);
/* The same after a write of [first, end) past the cache, whose map
 * updates are done: no partial write that read the older version from
 * the log may stay (cache.c).
 */
extern uint64_t cache_supersede (struct ftl *ftl, uint64_t first,
                                 uint64_t end);
/* Pick up to max dirty pages: the oldest of each shard written at or
 * before max_ver, from shard prefer first (-1: any), each with the
 * dirty pages logically next to it (any version); sorted by LPN;
 * *ticket registers the batch.
 */
extern uint32_t cache_pick (struct ftl *ftl, struct cache_entry *e,
                            uint32_t max, uint64_t max_ver, int prefer,
                            int *ticket);
/* Is a picked page still the cache's (not trimmed since)?  Caller
 * holds its stripe lock.
 */
extern bool cache_current (struct ftl *ftl, const struct cache_entry *e);
/* The buffer of a slot (stable while its page is in flight). */
extern const uint8_t *cache_page (struct ftl *ftl, uint32_t slot);
/* A batch is over: pages done leave the cache, the others are dirty
 * again; r (if negative) is remembered as the cache's last error.
 */
extern void cache_complete (struct ftl *ftl, struct cache_entry *e,
                            uint32_t n, int ticket, int r);
/* Wait until no batch in flight holds a page written at or before
 * max_ver.
 */
extern void cache_wait_flights (struct ftl *ftl, uint64_t max_ver);
/* Is any page written at or before max_ver still dirty? */
extern bool cache_dirty_upto (struct ftl *ftl, uint64_t max_ver);
/* The write counter: every cached write gets the next value. */
extern uint64_t cache_version (struct ftl *ftl);
extern void cache_get_stats (struct ftl *ftl, struct ftl_stats *st);

/* write.c: host data into the log (caller holds ckpt_rw shared). */
extern int write_through (struct ftl *ftl, const uint8_t *buf, uint64_t count,
                        uint64_t offset);
/* Whole pages [offset, offset+count) straight to the log past the
 * write cache, whose older copies of them then leave it (write.c).
 */
extern int write_bypass (struct ftl *ftl, const uint8_t *buf, uint64_t count,
                         uint64_t offset);
/* Program a destage batch; sets e[i].done for pages now in the map. */
extern int write_cached (struct ftl *ftl, struct cache_entry *e, uint32_t n);
extern int write_unmap (struct ftl *ftl, uint64_t lpn, uint64_t n);
extern int write_barrier (struct ftl *ftl);

/* destage.c: batches from the write cache to the log. */
/* One batch of at most max pages written at or before max_ver; prefer
 * a shard (-1: any).  Returns the pages picked, 0 if none, or a
 * negative errno (-EIO after a power cut).
 */
extern int destage_batch (struct ftl *ftl, uint64_t max_ver, int prefer,
                          uint32_t max);
/* Every page written at or before max_ver into the log (not synced). */
extern int destage_until (struct ftl *ftl, uint64_t max_ver);
/* One batch of the oldest dirty pages, if there are any: the
 * destager's unit of work.  Returns the pages written, 0 if none were
 * dirty (or all were in flight), or a negative errno (logged).
 */
extern int destage_step (struct ftl *ftl, uint32_t max);
/* Wake the destager thread if the cache is at its start watermark. */
extern void destage_kick (struct ftl *ftl);
extern int destage_start (struct ftl *ftl);
extern void destage_stop (struct ftl *ftl);

/* selfcheck.c: cross-check the map, the valid counts, the block table,
 * the free pool and the frontiers; report every inconsistency.  Returns
 * 0, -EIO if anything is inconsistent, or -ENOMEM.  The caller makes
 * sure nothing changes meanwhile.  selfcheck_assert aborts on an
 * inconsistency in builds configured with --enable-self-check and does
 * nothing in others.
 */
extern int selfcheck_run (struct ftl *ftl, const char *when);
extern void selfcheck_assert (struct ftl *ftl, const char *when);

/* For tests: free the handle without writing anything, as if the
 * process had been killed (open.c).
 */
extern void open_abandon (struct ftl *ftl);

#endif /* FTL_INTERNAL_H */
