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
#include "format/format.h"
#include "nand/media.h"

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

/* Sequence numbers reserved by programs in flight (durable.c). */
#define SEQ_SLOTS 128
struct seqreg {
  pthread_mutex_t lock;
  pthread_cond_t cond;
  bool used[SEQ_SLOTS];
  uint64_t lo[SEQ_SLOTS];
};

/* One thread's copy of the counters (see ctr_add). */

#endif /* FTL_LOG_STATE_H */
