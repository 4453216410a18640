/* nbdkit-ftl: helpers shared by the Check unit tests.
 *
 * Temporary files: every TCase gets its own directory under /tmp,
 * created and removed by an unchecked fixture (unit_dir_create,
 * unit_dir_remove).  Unchecked fixtures run in the test runner itself,
 * not in the forked child, so the directory is removed even when a test
 * fails, aborts or times out.  The checked fixture unit_dir_clean
 * empties it before each test, so every test starts with no files.
 *
 * Page patterns: unit_fill_page writes a page that names its logical
 * page and a version; unit_page_identify recognises such a page (or an
 * all-zero one) and rejects anything else, e.g. a page mixed from two
 * writes or one that belongs to another logical page.
 */

#ifndef FTL_UNIT_HELPERS_H
#define FTL_UNIT_HELPERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ftl.h"
#include "nand/media.h"

/* The directory of the current TCase, and a path inside it. */
extern char unit_dir[64];
extern void unit_dir_create (void);
extern void unit_dir_remove (void);
extern void unit_dir_clean (void);
extern void unit_path (char *buf, size_t len, const char *name);

/* The real file I/O with fdatasync, and the sync of a new image's
 * directory, replaced by no-ops: for tests whose subject is not
 * durability ordering (a killed process loses nothing that reached the
 * page cache, so syncs only cost time there).
 */
extern const struct ftl_io *unit_nosync_io (void);

/* Read and decode the OOB entry of physical page ppn: 0, or a negative
 * errno (-EINVAL if it does not decode).
 */
struct ftl_oob;
extern int unit_oob_at (struct ftl *ftl, uint32_t ppn, struct ftl_oob *o);

/* Log callback: keeps the last error in unit_last_error.  Errors are
 * also printed to stderr unless unit_quiet is set (tests that provoke
 * errors on purpose set it).
 */
extern char unit_last_error[512];
extern bool unit_quiet;
extern void unit_log (void *opaque, enum ftl_log_level level,
                      const char *msg);

/* Open (or create, if size is non-zero and the file is absent) an image;
 * the test fails with ftl_open's message if that fails.  io may be NULL.
 */
extern struct ftl *unit_open (const char *path, uint64_t size, uint32_t ps,
                              uint32_t ppb, double op, unsigned streams,
                              const struct ftl_io *io);
/* The same with a write cache of cache_bytes (ftl_options
 * write_cache_bytes).
 */
extern struct ftl *unit_open_cached (const char *path, uint64_t size,
                                     uint32_t ps, uint32_t ppb, double op,
                                     unsigned streams, uint64_t cache_bytes,
                                     const struct ftl_io *io);
/* The same, returning ftl_open's result and message instead. */
extern int unit_try_open (const char *path, const struct ftl_io *io,
                          struct ftl **ftlp, char *err, size_t errlen);

/* Page patterns.  version 0 is reserved for "all zeros". */
extern void unit_fill_page (uint8_t *page, uint32_t ps, uint64_t lpn,
                            uint64_t version);
/* Returns 1 and sets *lpn and *version for a valid pattern, 0 for an
 * all-zero page (version 0), -1 for anything else.
 */
extern int unit_page_identify (const uint8_t *page, uint32_t ps,
                               uint64_t *lpn, uint64_t *version);

/* A small seeded generator (xorshift64*). */
extern uint64_t unit_rnd (uint64_t *state);

/* Files. */
extern void unit_copy_file (const char *from, const char *to);
extern void unit_flip_byte (const char *path, uint64_t off, uint8_t mask);
extern void unit_read_file (const char *path, void *buf, size_t len,
                            uint64_t off);
extern uint64_t unit_file_size (const char *path);

/* Make the closed image at path (of this version) seed its data
 * checksums with the PPN, as images made before version 7 do: every
 * intact page's OOB entry is rewritten, and the superblocks lose
 * FTL_SB_LPN_SEED.
 */
extern void unit_seed_by_ppn (const char *path);
/* Rewrite a closed image of this version in the layout of versions 1
 * to 3 (format.h): every erase block's metadata area moved to just
 * before its data pages, both superblock copies saying version and
 * meta_offset 0, its checksums seeded with the PPN (unit_seed_by_ppn).
 * Nothing else changes: checkpoints and OOB entries name pages, not
 * file offsets.
 */
extern void unit_make_interleaved (const char *path, uint32_t version);

/* Seconds from a monotonic clock. */
extern double unit_now (void);

/* Is this backing write, of len bytes at file offset off, the start of
 * an erase: zeros over one erase block's OOB entries (media.h)?  If so,
 * sets *blk to the block.  geo is the image's media (a copy of it is
 * enough: only its geometry is used).
 */
extern bool unit_is_erase_write (const struct media *geo, uint64_t off,
                                 uint64_t len, const uint8_t *data,
                                 uint32_t *blk);

/* ---- Fault injection under the media layer ----
 *
 * unit_fault is an I/O layer (struct ftl_io) that does the real file
 * I/O and records every backing write, sync, change of the file's size
 * and sync of its directory as an event, with a copy of the data
 * written.  Given the file as it was before the first event (or none:
 * the run creates it), unit_disk then rebuilds the file as the storage
 * would leave it after a power cut during any event n:
 *
 *   durable   the base file plus every write and size change before
 *             the last sync that completed before event n;
 *   pending   the writes and size changes since that sync, event n
 *             included: a power cut applies any subset of the writes,
 *             in any order, and any of those applied may be torn: only
 *             some of its 512-byte sectors reached the file (sectors of
 *             the file: a write is cut at the file's 512-byte
 *             boundaries), or only a prefix of it, cut at any byte.
 *             Each size change is kept or lost, before the writes (a
 *             size change after a pending write is not modeled, and
 *             fails the test).  A file that grows reads zeros; bytes of
 *             a write that reach the file extend it to their end, even
 *             where the size change before them was lost;
 *   name      a file that the run created exists after the cut for
 *             certain only once a sync of its directory has completed;
 *             until then a cut may leave no file at all.
 *
 * Because a process that loses power at event n has issued exactly the
 * events before it, one recorded run gives every crash point.  limit
 * cuts the power during a live run instead: from event 'limit' on,
 * every write, sync and size change fails with -EIO and nothing more
 * is recorded.
 */
enum unit_ev_kind {
  UNIT_EV_PWRITE, UNIT_EV_SYNC,
  UNIT_EV_RESIZE,               /* len: the new size */
  UNIT_EV_SYNC_DIR,             /* the file's name made durable */
};

struct unit_ev {
  enum unit_ev_kind kind;
  uint64_t off, len;            /* pwrite; resize: len */
  uint8_t *data;                /* pwrite: a copy of the bytes */
  unsigned tag;                 /* from the classify callback */
  long op;                      /* unit_fault.op when it was issued */
};

struct unit_fault {
  struct ftl_io io;             /* give &io to ftl_open */
  struct unit_ev *ev;
  size_t n, cap;
  long limit;                   /* -1: no power cut */
  bool cut;                     /* the limit was reached */
  long op;                      /* the caller's current operation */
  /* Called for each event before it is performed: returns its tag. */
  unsigned (*classify) (void *arg, const struct unit_ev *e);
  void *classify_arg;
  /* Called after each sync has completed (index of its event). */
  void (*synced) (void *arg, size_t ev);
};
extern void unit_fault_init (struct unit_fault *f);
extern void unit_fault_reset (struct unit_fault *f);  /* drop the events */
extern void unit_fault_free (struct unit_fault *f);

/* What reaches the file of the pending writes and size changes, and
 * whether a new file keeps its name.
 */
enum unit_cut_mode {
  UNIT_CUT_ORDER,               /* pending writes in order, event n torn;
                                 * size changes and the name kept */
  UNIT_CUT_NONE,                /* every pending write and size change
                                 * lost, and the name of a new file */
  UNIT_CUT_RANDOM,              /* a random subset in a random order, the
                                 * last one torn at a random byte */
  UNIT_CUT_SECTORS,             /* a random subset in a random order, each
                                 * one torn with probability 1/2: a
                                 * random subset of its sectors */
  /* (random, sectors: each size change, and the name of a new file,
   * kept with probability 1/2) */
};

struct unit_disk {
  const struct unit_fault *f;
  uint8_t *img;                 /* the durable image (cap bytes) */
  uint8_t *scratch;
  size_t len;                   /* the durable size of the file */
  size_t cap;                   /* the most it spans in the trace */
  bool named;                   /* the file existed before the trace */
  size_t durable;               /* events [0, durable) are in img */
};

struct unit_cut_info {
  unsigned pending;             /* writes since the last sync */
  unsigned applied;             /* ... of them that reached the file */
  long torn;                    /* the (last) torn event, or -1 */
  uint64_t torn_at;             /* bytes of it that reached the file */
  unsigned torn_writes;         /* writes torn */
  unsigned resizes;             /* size changes since the last sync */
  unsigned resizes_applied;     /* ... of them that reached the file */
  bool absent;                  /* a new file lost its name: no file */
  uint64_t len;                 /* the size of the file left */
};

/* base: the file before the first event, or NULL if the run created it
 * (empty) before its first event.  Call it once the run is recorded.
 * Cuts must come in non-decreasing order of n (0 <= n <= f->n).
 */
extern void unit_disk_init (struct unit_disk *d, const struct unit_fault *f,
                            const char *base);
extern void unit_disk_free (struct unit_disk *d);
/* Write to path the file after a power cut during event n (n == f->n:
 * after the last event), or remove path if the cut leaves no file.  rng
 * seeds the choices.
 */
extern void unit_disk_cut (struct unit_disk *d, size_t n,
                           enum unit_cut_mode mode, uint64_t *rng,
                           const char *path, struct unit_cut_info *info);
/* The same, in order, with no random choice: event n, a write, torn
 * after exactly 'bytes' of its bytes (its length: whole), and the
 * pending size changes kept or lost as keep_sizes says.
 */
extern void unit_disk_cut_at (struct unit_disk *d, size_t n, uint64_t bytes,
                              bool keep_sizes, const char *path,
                              struct unit_cut_info *info);
/* The same, with only the sectors of event n whose bits are set in mask
 * reaching the file (bit i: the write's i-th piece between the file's
 * 512-byte boundaries; unit_ev_sectors counts them).
 */
extern void unit_disk_cut_sectors (struct unit_disk *d, size_t n,
                                   uint64_t mask, bool keep_sizes,
                                   const char *path,
                                   struct unit_cut_info *info);
extern unsigned unit_ev_sectors (const struct unit_ev *e);
/* The index of the last sync before event n, or -1. */
extern long unit_fault_last_sync (const struct unit_fault *f, size_t n);

#endif /* FTL_UNIT_HELPERS_H */
