/* nbdkit-ftl: the FTL handle, shared by the ftl/ modules.
 *
 * What each part owns and which lock protects it:
 *
 *   l2p[lpn]      logical -> physical map, 4 bytes per logical page.
 *                 Atomic loads and exchanges; changed only by host writes
 *                 and trims (under the stripe lock of the LPN) and by GC
 *                 (compare-and-swap from the old PPN, so a host write that
 *                 raced wins).  Readers take no lock: they validate with
 *                 the block's erase generation (media.h).
 *   (reverse map) there is none in memory: the OOB entry of a physical
 *                 page names the LPN it was programmed with (or marks
 *                 a page of trim records), and GC reads the victim's
 *                 OOB entries.  A page is valid iff l2p[oob.lpn] == ppn.
 *   valid[blk]    valid pages per block (atomic).  Incremented before a
 *                 page is installed in l2p, decremented after it leaves.
 *   state[blk]    FREE / OPEN / FULL, and nfree: under alloc_lock.
 *   frontiers     each host stream has its own mutex; the GC frontier is
 *                 owned by whoever holds gc_lock; the metadata frontier
 *                 (pages of trim records) by whoever holds trim_lock.
 *   trim buffer   trim records not yet written to the log: trim_lock.
 *   ckpt_rw       every operation that changes the map holds it shared
 *                 for its whole duration; a checkpoint takes it
 *                 exclusively for the instant of its snapshot.
 *
 * Lock order (take left before right, never the reverse):
 *   ckpt_lock -> ckpt_rw -> stripe locks (ascending) -> host frontier
 *     -> gc_lock -> trim_lock -> alloc_lock
 *
 * Durability invariants (what recovery relies on, see recovery.c):
 *   - A trim is appended to the trim buffer before its pages are
 *     unmapped.
 *   - A barrier (gc_barrier) writes the buffered trim records to the log
 *     and syncs.  A block is erased only after a barrier that began
 *     after its last valid page left it: every write, trim or
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
#include "deadline.h"
#include "fault.h"
#include "format.h"
#include "media.h"
#include "timing.h"
#include "util.h"

#define FTL_NO_BLOCK      UINT32_MAX
#define FTL_STRIPES       64
#define FTL_STRIPE_SHIFT  8          /* 256 logical pages per stripe unit */

/* Free blocks that host frontiers may not take, so that garbage
 * collection can always make progress: it may need a block for the data
 * it relocates and one for the trim records it logs before an erase,
 * while trims from clients may take the metadata frontier down to
 * FTL_META_KEEP_BLOCKS.  Only GC itself takes the last free blocks, and
 * each victim it erases gives one back.
 */
#define FTL_RESERVE_BLOCKS 3
/* Victims GC may relocate before it syncs once and erases them all. */
#define FTL_GC_ERASE_BATCH 8
/* Data rewritten or relocated within hot_age sequence numbers of its
 * last write is hot: hot_age = logical pages * NUM / DEN, that is within
 * one drive write.  Under an 80/20 or 90/10 load the hot set is
 * rewritten every 0.1 to 0.25 drive writes and the rest every 4 to 9;
 * measured with bench/ftl-bench, 1 drive write beat 0.5, 2 and 4.
 */
#define HOT_AGE_NUM 1
#define HOT_AGE_DEN 1
#define FTL_META_KEEP_BLOCKS 2
/* Free blocks that foreground GC keeps (at least; more on large disks,
 * see gc_high).
 */
#define FTL_GC_LOW_BLOCKS FTL_RESERVE_BLOCKS
/* Spare blocks needed beyond the logical capacity, given the number of
 * host streams: every open frontier (host, GC, metadata), the free
 * blocks GC keeps, and room for invalid pages so that reclaiming a
 * victim frees more than it copies.
 */
#define FTL_MIN_SPARE_BLOCKS(streams) \
  ((streams) + 2 + FTL_GC_LOW_BLOCKS + 1 + 3)
/* Hot/cold separation opens one more frontier per stream and a second
 * GC frontier: only on images with that much more spare.
 */
#define FTL_SEPARATION_SPARE_BLOCKS(streams) \
  (FTL_MIN_SPARE_BLOCKS (streams) + (streams) + 1)

enum frontier_kind { FRONTIER_HOST, FRONTIER_GC, FRONTIER_META };

struct frontier {
  pthread_mutex_t lock;         /* host frontiers only */
  enum frontier_kind kind;
  uint32_t block;               /* FTL_NO_BLOCK when none is open */
  uint32_t wp;                  /* next page to program in block */
  uint8_t *oob;                 /* encode buffer: one block of OOB entries */
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

struct ftl {
  char *path;
  int fd;
  bool readonly;
  bool closing;                 /* ftl_close is writing its last records */
  unsigned debug;
  ftl_log_fn log;
  void *log_opaque;

  struct media media;
  struct ftl_superblock sb;
  uint64_t logical_bytes;
  uint64_t logical_pages;
  uint32_t page_size;
  unsigned page_shift;
  uint32_t ppb;
  uint32_t blocks;

  /* The map. */
  uint32_t *l2p;
  uint32_t *valid;
  uint32_t *trim_pages;         /* atomic: trim pages per block since the
                                 * last checkpoint (GC victim cost) */
  uint64_t mapped;              /* atomic: LPNs with data */

  /* Erase blocks and frontiers. */
  pthread_mutex_t alloc_lock;
  uint8_t *state;               /* enum ftl_block_state */
  uint32_t nfree;
  unsigned nstreams;
  struct frontier host[FTL_MAX_STREAMS];  /* first writes, cold rewrites */
  struct frontier hot[FTL_MAX_STREAMS];   /* rewrites of hot data */
  unsigned next_stream;         /* atomic: assigns threads to streams */
  struct frontier gcf;                    /* relocated cold data */
  struct frontier gcw;                    /* relocated young data */
  struct frontier metaf;
  /* Temperature (see alloc.c): data rewritten, or relocated, less than
   * hot_age sequence numbers after it was written is hot.
   */
  bool one_log;                 /* atomic: set for good when retired
                                 * blocks leave too little spare */
  uint64_t hot_age;
  uint64_t *seq_sum;            /* per block: sum of its data pages' write
                                 * sequence numbers (relaxed atomics) */
  uint32_t *seq_cnt;            /* per block: how many */
  pthread_mutex_t stripe[FTL_STRIPES];

  /* Garbage collection. */
  pthread_mutex_t gc_lock;
  uint32_t gc_low;              /* foreground GC starts at or below */
  uint32_t gc_high;             /* background GC keeps more free than
                                 * this (foreground too, without it) */
  uint32_t gc_drain_target;     /* the background thread erases drained
                                 * blocks (nothing to copy) up to this */
  /* The background GC thread (gc.c). */
  pthread_t bg_thread;
  bool bg_running;
  bool bg_stop;                 /* under bg_lock */
  pthread_mutex_t bg_lock;
  pthread_cond_t bg_cond;
  enum ftl_gc_policy gc_policy;
  uint32_t wl_threshold;        /* static wear leveling trigger */
  uint32_t endurance;           /* erases before a block is retired */
  uint32_t retired;             /* retired blocks, under alloc_lock */
  bool worn_out;                /* atomic: too few blocks left to write */
  bool gc_wl;                   /* under gc_lock: relocating for wear
                                 * leveling, not to free space */
  /* Under gc_lock, within one reclaim_until: victims relocated and
   * drained, still FULL, erased together after one sync (gc.c).
   */
  bool gc_defer;
  uint32_t gc_pending[FTL_GC_ERASE_BATCH];
  unsigned gc_npending;
  /* Barriers (gc_barrier): barrier_started counts those begun, and
   * barrier_done is one more than the number of the highest one that
   * completed (barriers may overlap).  drain_epoch[b] is at least 1 +
   * the value of barrier_started at the last decrement of block b's
   * valid count (0: none since its erase): every decrement notes it
   * first, after the write that superseded the page completed.  Once
   * b's valid count is zero, b may be erased without a barrier of its
   * own when barrier_done >= drain_epoch[b].  Atomics.
   */
  uint64_t barrier_started, barrier_done;
  uint64_t *drain_epoch;
  uint64_t gc_barriers;         /* atomic: barriers run by GC, since open */
  uint64_t gc_erases_unsynced;  /* atomic: erases after an earlier barrier */
  uint64_t *trim_seq_end;       /* per block: 1 + the highest sequence
                                 * number of its trim pages (0: none,
                                 * UINT64_MAX: unknown, after a restart);
                                 * atomic */
  uint64_t *close_seq;          /* per block: next_seq when it filled up
                                 * (under alloc_lock) */
  enum ftl_gc_mode gc_mode;
  struct gc_victim gc_cur;      /* under gc_lock: the victim that
                                 * background GC reclaims in slices */
  uint64_t gc_slices, gc_yields; /* atomic, since open */
  uint8_t *gc_buf;              /* relocation buffer, under gc_lock */
  uint8_t *gc_oob;
  uint32_t gc_buf_pages;

  /* Trim records not yet in the log. */
  pthread_mutex_t trim_lock;
  struct ftl_trim_entry *trim_buf;
  uint32_t trim_count, trim_cap;
  uint8_t *trim_page;           /* encode buffer, under trim_lock */

  /* Checkpoints. */
  pthread_mutex_t ckpt_lock;
  pthread_rwlock_t ckpt_rw;
  uint64_t ckpt_gen;            /* generation of the newest durable one */
  unsigned ckpt_slot;           /* slot holding it */
  uint64_t durable_ckpt_seq;    /* atomic: its seq */
  uint64_t replay_seq;          /* atomic: seq of the older checkpoint
                                 * slot, which recovery falls back to if
                                 * the newest is damaged */
  uint64_t pages_since_ckpt;    /* atomic */
  uint64_t ckpt_interval;       /* pages between automatic checkpoints */

  uint64_t next_seq;            /* atomic */

  /* Deadlines, the timing model and fault injection (leaves that the
   * data path and the media layer call; see their headers).
   */
  struct deadline dl;
  struct timing timing;
  struct fault fault;

  /* Counters (atomic); base[] holds the values loaded at open. */
  uint64_t ctr[FTL_CTR__MAX];
};

/* Logging. */
extern void ftl_log (struct ftl *ftl, enum ftl_log_level level,
                     const char *fs, ...)
  __attribute__ ((format (printf, 3, 4)));
extern void ftl_debug (struct ftl *ftl, unsigned category,
                       const char *fs, ...)
  __attribute__ ((format (printf, 3, 4)));

static inline void
ctr_add (struct ftl *ftl, enum ftl_ckpt_counter c, uint64_t n)
{
  __atomic_fetch_add (&ftl->ctr[c], n, __ATOMIC_RELAXED);
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

/* alloc.c: erase blocks, frontiers and stripe locks. */
extern int alloc_init (struct ftl *ftl);
extern void alloc_free (struct ftl *ftl);
extern struct frontier *alloc_host_frontier (struct ftl *ftl, bool hot);
/* Is the data of these logical pages hot (rewritten soon after it was
 * last written)?  Decided by the majority of the mapped pages.
 */
extern bool alloc_range_is_hot (struct ftl *ftl, uint64_t first,
                                uint64_t last);
/* Note n pages with write sequence numbers summing to sum programmed in
 * block b (its age is their mean).
 */
static inline void
block_note_seqs (struct ftl *ftl, uint32_t b, uint64_t sum, uint32_t n)
{
  __atomic_fetch_add (&ftl->seq_sum[b], sum, __ATOMIC_RELAXED);
  __atomic_fetch_add (&ftl->seq_cnt[b], n, __ATOMIC_RELAXED);
}
extern int frontier_ensure_block (struct ftl *ftl, struct frontier *f);
extern void frontier_advance (struct ftl *ftl, struct frontier *f,
                              uint32_t n);
extern void frontier_close_all (struct ftl *ftl);
extern void stripes_lock (struct ftl *ftl, uint64_t first, uint64_t last);
extern void stripes_unlock (struct ftl *ftl, uint64_t first, uint64_t last);
extern uint32_t alloc_nfree (struct ftl *ftl);

/* Install lpn -> ppn after the page was programmed; fixes valid counts. */
extern void map_install (struct ftl *ftl, uint64_t lpn, uint32_t ppn);
/* Unmap lpn; returns true if it was mapped. */
extern bool map_unmap (struct ftl *ftl, uint64_t lpn);

/* After a block was retired (caller holds alloc_lock): turn the disk
 * read-only if the spare blocks left cannot sustain writes (ftl.c).
 */
extern void check_worn_out (struct ftl *ftl);

/* gc.c */
extern int gc_init (struct ftl *ftl);
extern void gc_free (struct ftl *ftl);
/* Reclaim blocks until more than 'target' are free (caller holds
 * ckpt_rw shared).  Returns 0, or -ENOSPC when nothing can be reclaimed.
 */
extern int gc_reclaim (struct ftl *ftl, uint32_t target);
/* True in the thread that is running garbage collection (gc_lock). */
extern bool gc_running_here (void);
/* In GC (gc_lock held): sync once and erase the victims waiting for it.
 * Returns how many were erased, or a negative errno.
 */
extern int gc_flush_pending (struct ftl *ftl);
/* Write the buffered trim records and sync (caller holds ckpt_rw
 * shared and not trim_lock): every write, trim and relocation completed
 * before the call is durable when it returns 0.
 */
extern int gc_barrier (struct ftl *ftl);
/* Before decrementing block b's valid count, once the write, trim or
 * relocation that superseded the page has completed (see drain_epoch).
 */
static inline void
gc_note_drain (struct ftl *ftl, uint32_t b)
{
  atomic_max_u64 (&ftl->drain_epoch[b],
                  __atomic_load_n (&ftl->barrier_started, __ATOMIC_SEQ_CST)
                  + 1);
}
/* Block b receives a trim page whose highest entry is seq. */
static inline void
gc_note_trim_page (struct ftl *ftl, uint32_t b, uint64_t seq)
{
  atomic_max_u64 (&ftl->trim_seq_end[b], seq + 1);
}
/* Wake the background thread if the free pool is below its watermark. */
extern void gc_kick (struct ftl *ftl, uint32_t nfree);
/* Wake the background thread (a checkpoint is due). */
extern void gc_wake (struct ftl *ftl);

/* trim.c: the trim record buffer. */
extern int trimlog_append (struct ftl *ftl, uint64_t lpn, uint64_t count,
                           uint64_t *seqp);
/* Write buffered trim records to the log (not synced).  Caller holds
 * ckpt_rw shared and not trim_lock.
 */
extern int trimlog_flush (struct ftl *ftl);
/* Run GC first if the free pool is low (not from GC itself); callers of
 * trimlog_flush that serve clients call it before, holding no lock GC
 * takes.
 */
extern int trimlog_make_room (struct ftl *ftl);
extern void trimlog_drop_before (struct ftl *ftl, uint64_t seq);

/* ckpt.c: superblocks and checkpoints. */
extern int sb_write (struct ftl *ftl, enum ftl_sb_state state,
                     uint64_t clean_ckpt_gen);
extern int ckpt_write (struct ftl *ftl, bool clean);
/* Write a checkpoint if one is due (ckpt_interval pages programmed
 * since the last).  A request's thread leaves it to the background
 * thread while there is one, unless twice the interval has passed.
 */
extern void ckpt_maybe (struct ftl *ftl, bool background);
extern bool ckpt_due (struct ftl *ftl);

/* recovery.c: load the newest checkpoint and roll the log forward. */
extern int recovery_run (struct ftl *ftl, char *errbuf, size_t errlen);

/* For tests: free the handle without writing anything, as if the
 * process had been killed (ftl.c).
 */
extern void ftl_abandon (struct ftl *ftl);

/* read path (ftl.c), used by GC and RMW: read n whole pages at lpn. */
extern int ftl_read_pages (struct ftl *ftl, uint64_t lpn, uint32_t n,
                           uint8_t *buf);

#endif /* FTL_INTERNAL_H */
