/* nbdkit-ftl: the media layer (the backing file is the NAND).
 *
 * Owns the file descriptor, the physical layout of erase blocks in the
 * file (see format.h), each block's program pointer, erase count and
 * erase generation, and the media counters.  Every byte that the FTL
 * writes to or reads from an erase block goes through here, and so do
 * syncs: this is where fault injection (struct ftl_io) sits.
 *
 * NAND rules, asserted on every call:
 *   - pages of a block are programmed in order: a program starts exactly
 *     at the block's program pointer;
 *   - a page is never programmed twice without an erase of its block;
 *   - an erase makes the block's OOB entries read as zeros (the metadata
 *     area except the two copies of the block header), increments the
 *     erase count and the erase generation, then writes the block header
 *     with the new erase count over the older copy (media_header_offset).
 *     So the block always keeps a durable record of its last completed
 *     erase, whether the zeroing or the header write or both were lost
 *     or torn in a crash;
 *   - a data page is meaningful only under an OOB entry that carries the
 *     block's current erase count and the page's checksum: an erase
 *     leaves the old bytes of the data pages in the file (nothing reads
 *     a page without such an entry, and a page programmed later is
 *     checked against its own), so that erasing and programming a block
 *     again overwrites the file in place instead of freeing and
 *     allocating its space: a hole punch per erase cost more than the
 *     erase's writes (bench/README.md).
 *
 * Concurrency: a block is programmed by one thread at a time (the owner
 * of the frontier it is open in, under that frontier's lock) and erased
 * only when no frontier owns it and nothing maps to it (by GC, under the
 * GC lock).  Erase generations are atomics so that lock-free readers can
 * detect an erase that raced with their read (media_block_gen).  Erase
 * counts are read with relaxed atomics by the allocator and statistics.
 *
 * Timing, deadlines and faults (media_attach): every operation on an
 * erase block first passes the fault gate (an injected delay or stall,
 * fault.h), then, with the timing model on, sleeps until the modeled
 * end of its page reads, programs or erase (timing.h: the pages of a
 * run are striped over the dies, and the run sleeps once per stripe),
 * reporting progress while it waits (deadline.h).  While it waits it gives up with
 * -ETIMEDOUT if its request was aborted, before it has touched the
 * file; a program that gives up still counts as programmed (its pages
 * are left unwritten, as after a failed program).  Superblock and
 * checkpoint I/O passes the gate but is not timed.
 */

#ifndef FTL_MEDIA_H
#define FTL_MEDIA_H

/* The library's own: programs outside it use ftl.h and inspect.h. */
#ifdef FTL_OUTSIDE_LIBRARY
#error "this header is internal to the FTL library (see ftl/inspect.h)"
#endif

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "format/format.h"
#include "util/util.h"

/* Backing-file operations.  The defaults call pwrite, pwritev, pread,
 * fdatasync and ftruncate, and fsync on the file's directory; tests
 * replace them to inject faults and crashes.  Each returns 0 or a
 * negative errno; short transfers are errors.  pwritev may be NULL:
 * the pieces are then written one pwrite each.  set_size and sync_dir
 * serve the creation of an image (create.c) and may be NULL: the
 * defaults are used (media_io_set_size, media_io_sync_dir).
 */
struct iovec;
/* Pages one program may take (media_program), and so iovecs at most. */
#define MEDIA_IOV_MAX 256
struct ftl_io {
  int (*pwrite) (void *opaque, int fd, const void *buf, size_t len, off_t off);
  int (*pread) (void *opaque, int fd, void *buf, size_t len, off_t off);
  int (*sync) (void *opaque, int fd);
  void *opaque;
  int (*pwritev) (void *opaque, int fd, const struct iovec *iov, int iovcnt,
                  off_t off);
  /* Set the size of the file: bytes beyond the old size read as zeros.
   * Durable after the next sync.
   */
  int (*set_size) (void *opaque, int fd, uint64_t size);
  /* Make the directory entry of the file at path durable (a sync of the
   * file makes its data durable, not its name).
   */
  int (*sync_dir) (void *opaque, const char *path);
  /* Does [off, off + len) read as zeros because none of it is
   * allocated (a hole of a sparse file)?  1: yes; 0: no, or not known.
   * Lets a checkpoint skip writing zeros where the file holds none
   * (ckpt.c); NULL: never known.
   */
  int (*is_hole) (void *opaque, int fd, uint64_t off, uint64_t len);
};
extern const struct ftl_io media_default_io;

/* io's set_size and sync_dir, or the defaults where they are NULL. */
extern int media_io_set_size (const struct ftl_io *io, int fd, uint64_t size);
extern int media_io_sync_dir (const struct ftl_io *io, const char *path);
/* io's is_hole: true only if the range is known to be a hole. */
extern bool media_io_is_hole (const struct ftl_io *io, int fd, uint64_t off,
                              uint64_t len);

struct timing;
struct deadline;
struct fault;

/* The media's counters, sharded per thread (util.h): one thread's
 * copy.  Read them with media_count.
 */
enum media_counter {
  MEDIA_PROGRAMS, MEDIA_READS, MEDIA_ERASES, MEDIA_SYNCS,
  MEDIA_SYNC_NS,                /* time spent in those syncs */
  MEDIA_SYNCS_SKIPPED,          /* sync=false: syncs not done */
  MEDIA__NCTR
};

struct media_shard {
  uint64_t n[MEDIA__NCTR];      /* atomic */
} __attribute__ ((aligned (64)));

struct media {
  int fd;
  const struct ftl_io *io;
  uint32_t page_size;
  uint32_t pages_per_block;
  uint32_t blocks;
  uint32_t meta_pages;
  unsigned page_shift;          /* log2 (page_size) */
  unsigned ppb_shift;           /* log2 (pages_per_block) */
  uint64_t meta_offset;         /* file offset of the metadata region, or
                                 * 0: interleaved, as before version 4 */
  uint64_t data_offset;         /* file offset of the data region, or of
                                 * block 0 when interleaved */
  uint64_t block_bytes;         /* interleaved: the stride of a block,
                                 * (meta_pages + pages_per_block) pages;
                                 * else pages_per_block pages */

  uint32_t *wp;                 /* program pointer per block (stored
                                 * atomically: statistics read it
                                 * without the owner's lock) */
  uint32_t *erase_count;        /* per block (atomic access) */
  uint32_t *gen;                /* erase generation per block (atomic) */
  uint8_t *slc;                 /* per block: 1 if programmed in SLC mode
                                 * since its erase (atomic) */
  uint32_t slc_pages;           /* pages an SLC block holds (slc.c) */
  uint8_t *zeros;               /* meta_pages pages of zeros, read only */

  struct media_shard ctr[FTL_SHARDS];

  /* Held around each write to the file.  The kernel writes a file
   * one writer at a time anyway (ext4, xfs: the inode's lock, taken
   * exclusively for buffered writes), and its waiters spin while the
   * holder copies: with writers on every CPU, that spinning took 11%
   * of the server's CPU time during sequential 1 MiB writes.  Waiters
   * here sleep instead.
   */
  pthread_mutex_t write_lock;

  /* Set by media_power_off: every operation fails with -EIO. */
  bool off;                     /* atomic */

  /* sync=false (set at open, before any operation): media_sync does
   * not sync and counts MEDIA_SYNCS_SKIPPED; only media_sync_always
   * does.  Writes then reach the host's page cache only: they survive
   * the death of the process (and power cuts emulated in it), not a
   * crash of the host.
   */
  bool nosync;

  /* Optional (NULL: none), see media_attach. */
  struct timing *timing;
  struct deadline *dl;
  struct fault *fault;
};

extern int media_init (struct media *m, int fd, const struct ftl_io *io,
                       uint32_t page_size, uint32_t pages_per_block,
                       uint32_t blocks, uint32_t meta_pages,
                       uint64_t meta_offset, uint64_t data_offset);
extern void media_free (struct media *m);

/* Attach the timing model, the deadline tracker and fault injection
 * (each may be NULL).  Not while operations run.
 */
extern void media_attach (struct media *m, struct timing *t,
                          struct deadline *dl, struct fault *f);

/* A power cut (powercut.c).  media_tear leaves programmed page ppn as
 * a program cut short leaves it: its first keep bytes written, the rest
 * still erased (zeros); its OOB entry stays, so that the page fails its
 * checksum.  media_power_off makes every later operation fail with
 * -EIO, as a drive with no power does.
 */
extern int media_tear (struct media *m, uint32_t ppn, uint32_t keep);
extern void media_power_off (struct media *m);

/* Does the file answer?  Passes the fault gate without waiting (-EAGAIN
 * while a stall is injected) and reads the first sector of the file.
 */
extern int media_probe (struct media *m);

static inline uint32_t
media_ppn (const struct media *m, uint32_t blk, uint32_t page)
{
  return (blk << m->ppb_shift) | page;
}

static inline uint32_t
media_ppn_block (const struct media *m, uint32_t ppn)
{
  return ppn >> m->ppb_shift;
}

static inline uint32_t
media_ppn_page (const struct media *m, uint32_t ppn)
{
  return ppn & (m->pages_per_block - 1);
}

/* File offset of a data page and of a block's metadata area (format.h
 * has both layouts).
 */
static inline uint64_t
media_page_offset (const struct media *m, uint32_t ppn)
{
  uint32_t blk = media_ppn_block (m, ppn);
  uint64_t page = media_ppn_page (m, ppn)
    + (m->meta_offset ? 0 : m->meta_pages);
  return m->data_offset + blk * m->block_bytes + (page << m->page_shift);
}

static inline uint64_t
media_meta_offset (const struct media *m, uint32_t blk)
{
  if (m->meta_offset)
    return m->meta_offset
      + ((uint64_t) blk * m->meta_pages << m->page_shift);
  return m->data_offset + blk * m->block_bytes;
}

/* Which block's metadata area holds file offset off: returns true and
 * sets *blk and *in (the offset inside the area), or returns false.
 */
extern bool media_meta_at (const struct media *m, uint64_t off,
                           uint32_t *blk, uint64_t *in);

/* Where the regions after the checkpoints start, and the file's size. */
static inline uint64_t
media_regions_offset (const struct media *m)
{
  return m->meta_offset ? m->meta_offset : m->data_offset;
}

static inline uint64_t
media_image_bytes (const struct media *m)
{
  return m->data_offset + m->blocks * m->block_bytes;
}

/* File offset of the block header copy that records an erase count:
 * odd counts at the start of the metadata area, even ones at its end
 * (the metadata area always has room for both, see format.h).
 */
extern uint64_t media_header_offset (const struct media *m, uint32_t blk,
                                     uint32_t erase_count);

/* Copy i (0: first, odd counts; 1: second, even counts) of the block
 * header in a block's metadata area as read by media_read_meta.
 */
static inline const uint8_t *
media_header_copy (const struct media *m, const uint8_t *meta, int i)
{
  return i == 0 ? meta
    : meta + ((uint64_t) m->meta_pages << m->page_shift) - FTL_BLKHDR_BYTES;
}

/* The highest erase count recorded by a valid copy of the block
 * header, in a block's metadata area as read by media_read_meta:
 * returns 1 and sets *ec, or 0 if no copy is valid.
 */
extern int media_header_ec (const struct media *m, const uint8_t *meta,
                            uint32_t *ec);

/* Program n pages starting at page 'page' of block 'blk': page i's
 * data is at data[i] (page_size bytes; pages adjacent in memory are
 * written with one call), oob is n encoded OOB entries.  Asserts the
 * NAND rules.
 */
extern int media_program (struct media *m, uint32_t blk, uint32_t page,
                          uint32_t n, const uint8_t *const *data,
                          const uint8_t *oob);

/* Read n data pages starting at ppn (all in one block). */
extern int media_read (struct media *m, uint32_t ppn, uint32_t n, void *buf);
/* The same, waiting for the modeled read even between media_defer and
 * media_deferred: a read whose result the next operations depend on (a
 * translation page, before the data page it locates).
 */
extern int media_read_now (struct media *m, uint32_t ppn, uint32_t n,
                           void *buf);

/* Deferred waits, with the timing model on (no-ops without it): after
 * media_defer, this thread's operations reserve the model but do not
 * sleep (nor give up: use it only where an abort is not wanted, or is
 * checked later); media_deferred ends that and returns the latest
 * modeled end met (0: none), and media_wait sleeps until such a time,
 * giving up with -ETIMEDOUT if the request is aborted.  So a caller
 * sleeps once for the pages of several runs (a host read of several
 * blocks), or after it has released its locks (a destage batch).
 * Deferred pieces are not split per stripe (see media.c).
 */
extern void media_defer (struct media *m);
extern uint64_t media_deferred (struct media *m);
extern int media_wait (struct media *m, uint64_t end);

/* Read retry (errmodel.c): n more page reads of block blk's unit in
 * the timing model (nothing without it; no data moves).
 */
extern int media_read_retry (struct media *m, uint32_t blk, uint32_t n);

/* Read n encoded OOB entries starting at page 'page' of block 'blk'. */
extern int media_read_oob (struct media *m, uint32_t blk, uint32_t page,
                           uint32_t n, uint8_t *buf);

/* Read the whole metadata area of a block (meta_pages pages). */
extern int media_read_meta (struct media *m, uint32_t blk, uint8_t *buf);
/* Are the metadata areas of blocks first .. first + n - 1 known never
 * to have been written (a hole of the file: ftl_io's is_hole)?  Only
 * for the layout of version 4 on, where those areas are contiguous, or
 * for one block.
 */
extern bool media_meta_is_hole (const struct media *m, uint32_t first,
                                uint32_t n);

/* Erase a block: see the rules above.  seq is recorded in the header. */
extern int media_erase (struct media *m, uint32_t blk, uint64_t seq);

/* Make every completed write durable (with nosync: skipped, counted,
 * and every completed write only survives the death of the process).
 */
extern int media_sync (struct media *m);
/* Make every completed write durable, even with nosync (the superblock
 * writes of a sync=false session: its mark at open, its close).
 */
extern int media_sync_always (struct media *m);

/* Raw metadata-region I/O (superblocks, checkpoints): not NAND. */
extern int media_pwrite_raw (struct media *m, const void *buf, size_t len,
                             uint64_t off);
extern int media_pread_raw (struct media *m, void *buf, size_t len,
                            uint64_t off);

static inline uint32_t
media_block_gen (const struct media *m, uint32_t blk)
{
  return __atomic_load_n (&m->gen[blk], __ATOMIC_ACQUIRE);
}

static inline uint32_t
media_erase_count (const struct media *m, uint32_t blk)
{
  return __atomic_load_n (&m->erase_count[blk], __ATOMIC_RELAXED);
}

/* For readers validating a page against the generation: an erase
 * publishes its new count with release after bumping the generation,
 * so a reader that sees the new count also sees the new generation.
 */
static inline uint32_t
media_erase_count_acquire (const struct media *m, uint32_t blk)
{
  return __atomic_load_n (&m->erase_count[blk], __ATOMIC_ACQUIRE);
}

/* SLC mode (slc.c): a block in SLC mode holds slc_pages pages and is
 * programmed and read at the timing model's SLC latencies.  The FTL
 * sets it before the block's first program and clears it when it
 * erases the block.
 */
static inline bool
media_block_slc (const struct media *m, uint32_t blk)
{
  return __atomic_load_n (&m->slc[blk], __ATOMIC_RELAXED);
}

static inline void
media_set_slc (struct media *m, uint32_t blk, bool slc)
{
  __atomic_store_n (&m->slc[blk], slc, __ATOMIC_RELAXED);
}

/* The pages block blk can hold in its mode. */
static inline uint32_t
media_block_pages (const struct media *m, uint32_t blk)
{
  return media_block_slc (m, blk) ? m->slc_pages : m->pages_per_block;
}

/* Set a block's state as found by recovery. */
extern void media_set_block (struct media *m, uint32_t blk,
                             uint32_t erase_count, uint32_t wp);

/* Pages programmed or read, blocks erased, syncs: the sum over the
 * shards.
 */
static inline uint64_t
media_count (const struct media *m, enum media_counter c)
{
  return ftl_shard_sum (&m->ctr[0].n[c], sizeof m->ctr[0]);
}

static inline void
media_count_add (struct media *m, enum media_counter c, uint64_t n)
{
  __atomic_fetch_add (&m->ctr[ftl_shard ()].n[c], n, __ATOMIC_RELAXED);
}

#endif /* FTL_MEDIA_H */
