/* nbdkit-ftl: the log layer's state and limits, as the handle holds
 * them (ftl-internal.h).
 *
 * The spare-block budget that every layer above relies on (the
 * reserve, the minimum spare, the free blocks GC keeps), the frontiers
 * that append to open erase blocks, the pages alloc_program takes, and
 * the sequence numbers of programs in flight.  The handle's fields of
 * this layer (l2p, check, valid, state, frontiers, the trim buffer,
 * ckpt_rw) and their locks are described in ftl-internal.h.
 */
#ifndef FTL_LOG_STATE_H
#define FTL_LOG_STATE_H

#include <pthread.h>
#include <stdint.h>
#include "ftl.h"
#include "format/format.h"
#include "nand/media.h"
#include "util/util.h"

#define FTL_NO_BLOCK      UINT32_MAX
#define FTL_STRIPES       64
#define FTL_STRIPE_SHIFT  8          /* 256 logical pages per stripe unit */
_Static_assert (FTL_STRIPES == 64, "a set of stripes is a uint64_t mask");

/* The free pool's account: every free erase block that anybody takes
 * is taken through alloc_frontier_open (alloc.c), which names the taker
 * (enum alloc_taker) and refuses, with -ENOSPC, a block that would
 * leave fewer free than the taker's floor.  The pool is layered; each
 * layer is a reserve that only some takers may dip into, and each has
 * what pays it back:
 *
 *   free blocks     who may take them          what gives them back
 *   ------------    -----------------------    ------------------------
 *   above 2         everybody: host frontiers  GC's victims, erased
 *                   (ALLOC_HOST), pages of      (foreground at gc.low,
 *                   trim records (ALLOC_TRIM:   the background thread
 *                   a client's trim or flush,   up to gc.high)
 *                   and after a failed
 *                   program), a paged map's
 *                   translation pages
 *                   (ALLOC_MAP), GC
 *   the 2nd: GC's   GC only (ALLOC_GC): the    the erase of the victim
 *   reserve         copies of one victim, its  whose copies took it
 *                   barrier's trim page when
 *                   the metadata frontier has
 *                   no room; the victims of
 *                   wear leveling, folds and
 *                   read reclaim too, but they
 *                   start only above gc.low
 *   the 1st: the    nobody while the drive     an erase by GC (the
 *   crash reserve   runs; GC (ALLOC_GC) after  open's first victim)
 *                   an open that found the
 *                   pool down to it
 *                   (spor_short), until the
 *                   pool is above it again
 *
 * One block of GC's reserve is all a victim needs: its copies fill the
 * room of the two GC frontiers' open blocks first (either frontier
 * takes the other's pages when no block is free, see program_batch in
 * gc.c), what does not fit there is less than a block (a victim has a
 * page to gain), the barrier before its erase writes its trim page in
 * the room the metadata frontier keeps or else at a GC frontier, and
 * the erase gives a block back (a victim is never on its last cycle,
 * see wl.c).  So GC never starts a victim whose copies do not fit in
 * what it may take (gc_victim_fits in erase.c): the GC frontiers'
 * room and the blocks between its floor and the others' (host writers
 * may take the rest meanwhile).  A victim in progress in slices (deadline mode)
 * counts with the one that would start; a victim that gave up (a failed
 * program or erase, a valid count that does not fall) has used part of
 * the reserve with no erase to give it back, and GC then starts only
 * victims that fit in what is left, and fails with -ENOSPC (device
 * full) rather than half way through one.
 *
 * The crash reserve: recovery closes every block that was open, the GC
 * frontiers' too (a page after the last intact one may be partly
 * programmed), so the copies of GC's first victim then need a free
 * block, and with a paged map so does the checkpoint after recovery
 * (its translation pages; it waits for GC).  Had GC taken the last
 * free block when the server died, the image would open with none:
 * GC could not copy, and nothing could be written again.  So GC leaves
 * it while the drive runs; only an open that finds the free pool down
 * to it lets GC take it, until it is above it again (spor_short,
 * alloc.c).  Such an open first gives the GC frontiers the room left
 * in blocks closed before they were full (alloc_reopen_for_gc): a
 * server killed while GC held the last block, its victim half copied,
 * left an image with no free block and nothing to reclaim without
 * copying.
 *
 * Self-check builds assert the account after every take and every
 * erase (alloc_pool_assert): the free blocks by erase count add up to
 * nfree, and nfree is not below the crash reserve unless GC may take
 * it (spor_short) or the disk is worn out.
 */
#define FTL_SPOR_RESERVE_BLOCKS 1
/* The floor of every taker but GC: the crash reserve and GC's. */
#define FTL_RESERVE_BLOCKS (1 + FTL_SPOR_RESERVE_BLOCKS)
enum alloc_taker {
  ALLOC_HOST,                   /* host frontiers (write.c) */
  ALLOC_TRIM,                   /* trim records (trimlog.c) */
  ALLOC_MAP,                    /* translation pages (ckpt.c) */
  ALLOC_GC,                     /* GC's copies and its barrier's page */
};
/* The map's groups: 1 << FTL_MAP_GROUP_SHIFT logical pages, one 4 KiB
 * page of l2p (map.c).
 */
#define FTL_MAP_GROUP_SHIFT 10
/* Checkpoints are written and read in pieces of this size, and a piece
 * of unmapped entries (zeros) is left as a hole of the file (ckpt.c).
 */
#define FTL_CKPT_CHUNK (UINT64_C (1) << 16)
/* Victims GC may relocate before it syncs once and erases them all:
 * one per FTL_GC_BATCH_SPARE_DIV spare blocks beyond the first
 * FTL_GC_BATCH_FREE_SPARE, from 1 to FTL_GC_ERASE_BATCH (see
 * step_policies in open.c).  Each victim of a batch but the first
 * holds a block that is neither free nor holds data: on a small disk
 * that spare space costs more write amplification than the syncs it
 * saves are worth (256 MiB: a batch of 4 gave a steady WAF of 2.60 for
 * uniform random writes, a batch of 1 gave 2.53).
 */
#define FTL_GC_ERASE_BATCH 8
#define FTL_GC_BATCH_SPARE_DIV 16
#define FTL_GC_BATCH_FREE_SPARE 64
/* Data rewritten or relocated within hot_age sequence numbers of its
 * last write is hot: hot_age = logical pages * NUM / DEN, that is within
 * one drive write.  Under an 80/20 or 90/10 load the hot set is
 * rewritten every 0.1 to 0.25 drive writes and the rest every 4 to 9;
 * measured with bench/ftl-bench, 1 drive write beat 0.5, 2 and 4.
 */
#define HOT_AGE_NUM 1
#define HOT_AGE_DEN 1
/* Free blocks that foreground GC keeps; the background thread keeps
 * one more per FTL_GC_HIGH_SPARE_DIV spare blocks (at most 8 more, see
 * step_policies in open.c).
 */
#define FTL_GC_LOW_BLOCKS FTL_RESERVE_BLOCKS
#define FTL_GC_HIGH_SPARE_DIV 128
/* The background thread erases drained blocks up to gc.drain_target,
 * and writers wake it this many blocks below (gc.drain_ring): one wake
 * per batch of erases (BG_ERASES in host/bg.c).
 */
#define FTL_GC_DRAIN_RING_SLACK 8
/* Spare blocks needed beyond the logical capacity, given the number of
 * host streams: every open frontier (host, two GC, metadata), the free
 * blocks GC keeps, and room for invalid pages so that reclaiming a
 * victim frees more than it copies; and two more, as when GC kept three
 * free blocks, so that the geometries accepted and the end of life stay
 * where they were.
 */
#define FTL_MIN_SPARE_BLOCKS(streams) ((streams) + 9)
_Static_assert (FTL_MIN_SPARE_BLOCKS (0) >= 2 + 1 + FTL_GC_LOW_BLOCKS + 3,
                "the minimum spare holds the frontiers and the free blocks "
                "GC keeps");
/* Hot/cold separation opens one more frontier per stream and a second
 * GC frontier: only on images with that much more spare.
 */
#define FTL_SEPARATION_SPARE_BLOCKS(streams) \
  (FTL_MIN_SPARE_BLOCKS (streams) + (streams) + 1)
/* hot-cold=auto (alloc_hot_cold_step in alloc.c): every
 * HOT_COLD_WINDOW_DIV-th of the logical pages overwritten (at least
 * HOT_COLD_WINDOW_MIN, for a share within about 0.01), the share of
 * overwrites that replaced data younger than an age (hit) is set
 * against the share of the live data that is that young (live), for
 * hot_age and for hot_age >> HOT_COLD_SHORT_SHIFT.  Writes spread evenly
 * over the live data hit young data as often as there is of it (a lift,
 * hit / live, of 1 at every age): then separation only holds open
 * blocks, spare space that GC misses.  With a hot set, young data is
 * hit more (steady lift at hot_age: 80/20 2.1, 90/10 4.6).  An age at
 * which more than HOT_COLD_MAX_LIVE of the live data is younger tells
 * nothing (after a fill every page is young at hot_age: the shorter age
 * sees a hot set sooner), and so does one with none of it younger; of
 * the others the higher lift counts.
 * Separation stops below HOT_COLD_OFF_LIFT and resumes above
 * HOT_COLD_ON_LIFT.
 */
#define HOT_COLD_WINDOW_DIV 8
#define HOT_COLD_WINDOW_MIN 2048
#define HOT_COLD_SHORT_SHIFT 2
#define HOT_COLD_AGES 2
#define HOT_COLD_OFF_LIFT 1.2
#define HOT_COLD_ON_LIFT 1.4
#define HOT_COLD_MAX_LIVE 0.9
struct sep_shard {
  uint64_t overwrites;          /* atomic: host writes of mapped pages */
  uint64_t young[HOT_COLD_AGES];  /* atomic: ... of data younger than
                                   * each age */
} __attribute__ ((aligned (64)));
struct sep_state {
  uint64_t overwrites;          /* the sums at the last decision */
  uint64_t young[HOT_COLD_AGES];
  double hit, live, lift;       /* what the last decision measured, at
                                 * the age that counted (atomic) */
  uint64_t decisions, switches; /* atomic: how many, how many changed */
};

/* Default host streams: one per FTL_SPARE_PER_STREAM spare blocks, 1 to
 * FTL_DEFAULT_STREAMS.  Every open frontier holds a block that is on
 * average half unwritten, and with hot/cold separation each stream has
 * two: on a small disk that is spare space that garbage collection
 * misses (a 256 MiB disk has 72 spare blocks).
 */
#define FTL_SPARE_PER_STREAM 64

enum frontier_kind { FRONTIER_HOST, FRONTIER_GC, FRONTIER_META,
                     FRONTIER_MAP };

/* What a host or GC frontier takes (frontier_long_lived and
 * alloc_frontier_drained in alloc.c): cold data (host[], gcf) or hot
 * (hot[], gcw).
 */
enum frontier_temp { FRONTIER_COLD, FRONTIER_HOT };

struct frontier {
  pthread_mutex_t lock;         /* host frontiers only */
  enum frontier_kind kind;
  uint8_t temp;                 /* enum frontier_temp (host and GC) */
  uint8_t group;                /* its placement group (struct place) */
  uint32_t block;               /* FTL_NO_BLOCK when none is open */
  uint32_t wp;                  /* next page to program in block */
};

/* Data placement (alloc.c; format.h has the modes).  Host frontiers
 * come in groups: group 0 is the handle's host[], hot[], gcf and gcw,
 * group g > 0 is pgx[g - 1].  A logical page's namespace is found
 * against the namespaces' first pages, sorted (place_ns, log.h: a
 * binary search of at most FTL_NS_MAX, none with one namespace); its
 * host group is its namespace's unless placement is shared, its GC
 * group its namespace's only if placement is isolated.  Set at open
 * from the namespace table, fixed while the handle is open.
 */
struct frontier_set {
  struct frontier host[FTL_MAX_STREAMS];
  struct frontier hot[FTL_MAX_STREAMS];
  struct frontier gcf, gcw;
};
struct place {
  enum ftl_placement mode;
  unsigned nns;                 /* namespaces */
  unsigned host_groups;         /* 1, or nns (not shared) */
  unsigned gc_groups;           /* 1, or nns (isolated) */
  uint64_t first[FTL_NS_MAX];   /* the namespaces' first logical pages,
                                 * ascending */
  uint8_t ns[FTL_NS_MAX];       /* ... which namespace each begins */
};

/* Counters per namespace (host/ns.c counts the requests, alloc.c the
 * pages programmed for each): per thread shard as the handle's
 * counters (util.h), added up by ftl_get_stats.  Since the open: they
 * are not kept in checkpoints.
 */
enum ns_counter {
  NS_HOST_WRITE_BYTES, NS_HOST_READ_BYTES, NS_HOST_TRIM_BYTES,
  NS_HOST_WRITE_CMDS, NS_HOST_READ_CMDS, NS_HOST_TRIM_CMDS,
  NS_MEDIA_PAGES,               /* its data programmed, GC copies too */
  NS_GC_PAGES,                  /* ... of which copies (GC, wear
                                 * leveling) */
  NS__MAX
};
struct ns_shard {
  uint64_t v[FTL_NS_MAX][NS__MAX];  /* atomic */
} __attribute__ ((aligned (64)));

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
  bool has_sum;                 /* sum is the data's checksum, under
                                 * LPN seeds (format.h): a copy's,
                                 * verified, or one computed before the
                                 * locks; else the program computes it */
  uint64_t sum;
};

/* Sequence numbers reserved by programs in flight (durable.c). */
#define SEQ_SLOTS 128
struct seqreg {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool used[SEQ_SLOTS];
  uint64_t lo[SEQ_SLOTS];
};

/* The paged map (pmap.c): a group's state word. */
#define PMAP_RES    (1u << 31)  /* its l2p page holds the group */
#define PMAP_DIRTY  (1u << 30)  /* changed since its translation page */
#define PMAP_WB     (1u << 29)  /* a checkpoint writes its page */
#define PMAP_EVICT  (1u << 28)  /* being evicted (under its glock) */
#define PMAP_PINS   ((1u << 28) - 1)
#define PMAP_LOCKS  64
#define PMAP_CHUNK_SHIFT 6
#define PMAP_CHUNK  (1u << PMAP_CHUNK_SHIFT)
#define PMAP_NO_SLOT UINT32_MAX

enum pmap_counter { PMAP_HITS, PMAP_MISSES, PMAP_WRITEBACKS, PMAP_EVICTIONS,
                    PMAP_MOVED, PMAP__MAX };
struct pmap_shard {
  uint64_t v[PMAP__MAX];        /* atomic */
} __attribute__ ((aligned (64)));

struct frontier;
struct pmap {
  bool on;                      /* the image's map is paged */
  uint64_t groups;
  uint64_t limit;               /* groups the cache holds */
  uint64_t dirty_limit;         /* dirty groups that make a checkpoint due */
  uint32_t *gstate;             /* per group: PMAP_* bits and pins */
  uint8_t *ref;                 /* per group: used since the hand passed */
  uint32_t *dir;                /* per group: ~ppn of its translation
                                 * page now (0: none) */
  uint64_t *dirseq;             /* ... and its version */
  uint32_t *sdir[2];            /* per group: ~ppn that checkpoint slot s
                                 * names */
  uint32_t *tvalid;             /* per block: translation pages counted
                                 * in valid[] */
  uint64_t *sver[2];            /* per group: the version of the page
                                 * sdir[s] names */
  /* Where resident groups are: slot[g] (PMAP_NO_SLOT if none) indexes
   * chunks of PMAP_CHUNK slots, each slot a group's entries (~ppn) and
   * their checks.  Chunks are allocated as the resident groups grow
   * and kept; free slots are stacked (under slot_lock).
   */
  uint32_t *slot;
  uint32_t **chunk;             /* per chunk: PMAP_CHUNK * 2 pages */
  uint32_t nchunks, maxchunks;
  uint32_t *free_slots, nfree_slots;
  pthread_mutex_t slot_lock;
  pthread_mutex_t lock;         /* dir, dirseq, sdir, tvalid */
  pthread_mutex_t glock[PMAP_LOCKS];  /* loading and evicting a group */
  pthread_mutex_t evict_lock;   /* the clock hand */
  uint64_t hand;
  uint64_t swept;               /* groups the hand passed (evict_lock) */
  uint64_t resident, dirty;     /* atomic: groups */
  uint64_t wb;                  /* atomic: groups a checkpoint writes
                                 * (PMAP_WB) */
  uint64_t read_pages;          /* atomic: translation pages read */
  uint64_t program_pages;       /* atomic: translation pages programmed */
  struct pmap_shard ctr[FTL_SHARDS];
};

#endif /* FTL_LOG_STATE_H */
