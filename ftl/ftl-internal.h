/* nbdkit-ftl: the FTL handle, shared by the ftl/ modules.
 *
 * The handle holds the state of every layer (ftl/README.md has the
 * layers and what each owns).  Each layer declares its own: its state
 * in <layer>/state.h (or its module's header: media.h, timing.h,
 * errmodel.h, deadline.h, fault.h), included before struct ftl, and
 * its functions in <layer>/<layer>.h, included after it, bottom up.
 * A module includes this header and calls only its own layer and the
 * ones below (ftl/test-layers.sh checks the objects).
 *
 * What each part owns and which lock protects it:
 *
 *   l2p[lpn]      logical -> physical map, 4 bytes per logical page,
 *                 kept inverted (~ppn, so 0 is FTL_UNMAPPED) in memory
 *                 mapped lazily: the pages of the array that no mapping
 *                 touched are never allocated (map.c; read it with
 *                 l2p_load).
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
 *   frontiers     each host stream has its own mutex (of each placement
 *                 group: log/state.h); the GC frontiers, of every
 *                 group, are owned by whoever holds gc.lock; the metadata
 *                 frontier (pages of trim records) by whoever holds
 *                 trim_lock.
 *   trim buffer   trim records not yet written to the log: trim_lock.
 *   ckpt_rw       every operation that changes the map holds it shared
 *                 for its whole duration (garbage collection included,
 *                 whoever runs it); a checkpoint takes it exclusively
 *                 for the instant of its snapshot.  Taken through
 *                 ckpt_shared and its kin (log.h): a self-check build
 *                 asserts in map.c that the thread changing the map
 *                 holds it.
 *   pm            a paged map (format version 6, map-cache=): l2p and
 *                 check are then not arrays of the capacity but the
 *                 cache's slots (mapcache.c: l2p_at, check_at), every
 *                 access pins its group, and the translation pages'
 *                 references change under pm.lock (pmap.c).  The
 *                 groups' glocks and pm.lock are leaves; mapf, the
 *                 frontier of translation pages, belongs to whoever
 *                 holds ckpt_lock.
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
 *   - A checkpoint takes a sequence number of its own, the version of the
 *     translation pages it writes (pmap.c): no two checkpoints write
 *     pages of one group at one version.
 *   - The free pool's account (log/state.h): every free block is taken
 *     through alloc_frontier_open, which names its taker and refuses
 *     to go below the taker's floor.  Host frontiers, trim records and
 *     translation pages leave FTL_RESERVE_BLOCKS free: one for GC's
 *     copies, paid back by its victim's erase, and the crash reserve.
 *     GC leaves FTL_SPOR_RESERVE_BLOCKS free, so that an open after a
 *     crash, which closes every open block, finds a block for GC's
 *     copies; an open that finds no more than that lets GC take it
 *     (spor_short) and gives GC the room left in blocks closed early,
 *     which recovery scans from their write pointer
 *     (alloc_reopen_for_gc).  GC starts no victim whose copies do not
 *     fit in what it may take (gc_victim_fits in erase.c).
 *     Self-check builds assert the account after every take and
 *     every erase.
 *   - sync=false (media.nosync): a "sync" above only reaches the host's
 *     page cache, so each of these holds against the death of the
 *     process, not a crash of the host.  For that the session pins the
 *     checkpoint durable at its open (pinned_gen; its slot is never
 *     rewritten, replay_seq never passes it; ckpt.c may sync a newer
 *     one and pin it instead) and marks the superblock
 *     (FTL_SB_UNSYNCED, synced at open); recovery of a marked image
 *     never loads an older checkpoint and verifies every mapped page:
 *     what fails reads as an error (FTL_LOST), never as older data.
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
#include "util/bell.h"
#include "util/clock.h"
#include "util/log.h"
#include "util/space.h"
#include "util/util.h"
#include "format/format.h"
#include "track/deadline.h"
#include "track/fault.h"
#include "nand/errmodel.h"
#include "nand/media.h"
#include "nand/timing.h"

/* Each layer's state, bottom up. */
#include "nand/state.h"
#include "log/state.h"
#include "reclaim/state.h"
#include "host/state.h"

struct ctr_shard {
  uint64_t v[FTL_CTR__MAX];     /* atomic */
} __attribute__ ((aligned (64)));

struct ftl {
  char *path;
  int fd;
  bool readonly;
  bool host_full;               /* read-only because the filesystem that
                                 * holds the image was full at open */
  bool closing;                 /* ftl_close is writing its last records */
  bool opening;                 /* ftl_open's steps run: no other thread
                                 * touches the map */
  bool powered_off;             /* atomic: ftl_power_cut (powercut.c) */
  bool was_unclean;             /* recovery found no clean shutdown */
  bool no_sync;                 /* sync=false (media.nosync too) */
  bool unsynced_found;          /* the open found the mark of a sync=false
                                 * session: the host crashed during it */
  uint64_t recovered_lost;      /* logical pages that open set FTL_LOST */
  /* sync=false: the checkpoint durable when the session opened, which
   * the session never overwrites (pinned_gen 0: none, sync=true).
   */
  uint64_t pinned_gen;
  unsigned pinned_slot;
  uint64_t pinned_seq;
  uint64_t trim_pages_since_pin;  /* atomic: trim pages written since
                                   * (an estimate), which replay from
                                   * it keeps live (ckpt.c) */
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
  struct ftl_ns_table ns_table; /* the image's namespaces (format.h),
                                 * read at open; changed only at rest
                                 * (mngt/nsadmin.c) */
  struct ftl_ns ns[FTL_NS_MAX]; /* their handles (host/ns.c) */
  unsigned nns;
  uint32_t seed_flags;          /* sb.flags & FTL_SB_LPN_SEED, fixed at
                                 * open: how data checksums are seeded
                                 * (page_seed, format.h) */
  uint64_t logical_bytes;
  uint64_t logical_pages;
  uint32_t page_size;
  unsigned page_shift;
  uint32_t ppb;
  uint32_t blocks;

  /* The map (map.c). */
  uint32_t *l2p;                /* ~ppn: read with l2p_load */
  uint64_t *l2p_pop;            /* a bit per FTL_MAP_GROUP logical pages
                                 * that may hold a mapping (set, atomic,
                                 * before the first is stored; cleared
                                 * only by map_clear): the loops over
                                 * the map skip the others (map_next) */
  uint64_t *l2p_chk;            /* a bit per group whose page checks are
                                 * kept (set with its l2p_pop bit while
                                 * check_left lasts); unused when
                                 * checks_all */
  bool checks_all;              /* memory for every page's check */
  uint64_t check_budget;        /* groups whose checks fit in memory
                                 * (map_memory_check), set before
                                 * map_init */
  uint64_t check_left;          /* atomic: of them, not yet granted */
  uint32_t *check;              /* per logical page: its data checksum
                                 * folded (map_check_fold), 0: unknown */
  uint32_t *valid;
  uint64_t mapped;              /* atomic: LPNs with data */
  struct pmap pm;               /* the paged map (pmap.c), if pm.on */
  pthread_rwlock_t stripe[FTL_STRIPES];
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
  uint32_t *free_ec;            /* free_ec[e]: FREE blocks of erase count
                                 * e, the last bucket e or more; NULL
                                 * until counted (alloc.c; alloc_lock) */
  uint32_t free_ec_n;           /* its buckets, as many as the free
                                 * blocks' wear needs (alloc.c) */
  bool spor_short;              /* the free pool was down to the crash
                                 * reserve when the open blocks were
                                 * closed (open after a crash, close): GC
                                 * may take it (alloc.c; alloc_lock) */
  uint64_t *close_seq;          /* per block: next_seq when it filled up
                                 * (under alloc_lock) */
  uint32_t *trim_pages;         /* atomic: trim pages per block since its
                                 * erase (0 after a restart until GC reads
                                 * its OOB entries): GC victim cost */
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
  /* Placement (log/state.h): the frontiers of the groups past the
   * first, and which group a logical page's writes take.
   */
  struct place place;
  struct frontier_set pgx[FTL_NS_MAX - 1];
  struct frontier metaf;                  /* trim records */
  struct frontier mapf;                   /* translation pages (paged
                                           * map; owned by ckpt_lock) */
  /* Temperature (see alloc.c): data rewritten, or relocated, less than
   * hot_age sequence numbers after it was written is hot.
   */
  bool one_log;                 /* atomic: set for good when retired
                                 * blocks leave too little spare */
  uint64_t hot_age;
  uint64_t *seq_sum;            /* per block: sum of its data pages' write
                                 * sequence numbers (relaxed atomics) */
  uint32_t *seq_cnt;            /* per block: how many */
  /* hot-cold=auto (alloc.c: alloc_hot_cold_step): separation is off
   * while overwrites hit young data no more often than its share of
   * the live data says.
   */
  bool hot_cold_always;         /* hot-cold=true: never off */
  bool sep_off;                 /* atomic: no hot set found */
  struct sep_shard sep_ctr[FTL_SHARDS];  /* what host writes replaced */
  struct sep_state sep;         /* the decisions (under gc.lock; its
                                 * measurements and counts atomic) */

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
  uint8_t *ckpt_zero[2];        /* per FTL_CKPT_CHUNK of each slot: 1 if
                                 * it is known to read as zeros (ckpt.c) */
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
  struct ns_shard ns_ctr[FTL_SHARDS];     /* per namespace (state.h) */
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

/* The counters of this thread's shard, for several adds at once
 * (ctr_add looks the shard up each time).
 */
static inline uint64_t *
ctr_mine (struct ftl *ftl)
{
  return ftl->ctr[ftl_shard ()].v;
}

static inline void
ctr_add_to (uint64_t *v, enum ftl_ckpt_counter c, uint64_t n)
{
  __atomic_fetch_add (&v[c], n, __ATOMIC_RELAXED);
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


/* Each layer's functions, bottom up: they take the handle. */
#include "nand/nand.h"
#include "log/log.h"
#include "reclaim/reclaim.h"
#include "host/host.h"
#include "mngt/mngt.h"

#endif /* FTL_INTERNAL_H */
