/* nbdkit-ftl: a log-structured flash translation layer over a file.
 *
 * ftl.h is the public API of the FTL library.  It has no nbdkit
 * dependency: the nbdkit plugin, the ftlctl tool, the benchmarks and the
 * unit tests all drive the FTL through these calls alone; ftlctl also
 * reads what is behind a disk (the on-media structures, each erase
 * block, the map) through the inspection API, inspect.h.
 *
 * Glossary (one name for one thing, everywhere in the code):
 *   page            the unit of mapping and of NAND programming (page_size
 *                   bytes, 4 KiB by default).
 *   erase block     pages_per_block consecutive pages, the unit of erase.
 *   LPN             logical page number: offset / page_size as the host
 *                   sees the disk.
 *   PPN             physical page number: block * pages_per_block + page.
 *   sequence number a 64 bit counter that orders every host write, trim
 *                   and zero; data keeps its sequence number when garbage
 *                   collection moves it.
 *   frontier        an open erase block that the log appends to.
 *   checkpoint      a durable snapshot of the map and per-block state;
 *                   recovery loads the newest one and rolls the log
 *                   forward from there.
 *
 * Ownership and threads: an ftl handle may be used from any number of
 * threads at once.  Reads take no lock shared by all requests; writes to
 * different regions of the disk take different locks (see ftl-internal.h
 * for the lock order).  ftl_close must not race with any other call.
 *
 * Errors: calls return 0 on success or a negative errno value.  The detail
 * of an error is passed to the log callback given at open time.
 */

#ifndef FTL_H
#define FTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

struct ftl;
struct ftl_io;

/* Defaults used when an image is created and a value is not given. */
#define FTL_DEFAULT_PAGE_SIZE        4096
#define FTL_DEFAULT_PAGES_PER_BLOCK  256
#define FTL_DEFAULT_OP_PERCENT       28.0
#define FTL_DEFAULT_STREAMS          4
#define FTL_DEFAULT_WL_THRESHOLD     16
/* Program/erase cycles of a TLC NAND block: vendors rate 3D TLC at
 * about 3000 cycles.
 */
#define FTL_DEFAULT_ENDURANCE        3000

/* Request deadlines: the plugin's defaults (the library tracks nothing
 * unless ftl_options.timeout_ns is set).  30 s is the Linux block
 * layer's default request timeout.
 */
#define FTL_DEFAULT_TIMEOUT_NS       (30 * UINT64_C (1000000000))
#define FTL_DEFAULT_TIMEOUT_RETRIES  3
#define FTL_MAX_DURATION_NS          (86400 * UINT64_C (1000000000))

/* The library's fallbacks for a timing model given without values (the
 * plugin starts from a preset instead, see ftl_timing_preset): a TLC
 * drive.  Published planar TLC figures are about 75 us to read a page,
 * 900-1350 us to program one and 4.5 ms to erase a block (AnandTech,
 * "Samsung SSD 840 review: a TLC refresher", 2012); 8 channels of 4
 * dies is a common consumer layout.
 */
#define FTL_DEFAULT_READ_LATENCY_NS     75000
#define FTL_DEFAULT_PROGRAM_LATENCY_NS  1000000
#define FTL_DEFAULT_ERASE_LATENCY_NS    4500000
#define FTL_DEFAULT_CHANNELS            8
#define FTL_DEFAULT_DIES                4
#define FTL_MAX_UNITS                   4096
#define FTL_MAX_PLANES                  16
#define FTL_MAX_NAND_PAGE               (256 * 1024)
#define FTL_MAX_NAND_BLOCK              (UINT64_C (1) << 32)

/* Bounds of the default write cache (ftl_default_write_cache). */
#define FTL_MIN_WRITE_CACHE          (1024 * 1024)
#define FTL_MAX_DEFAULT_WRITE_CACHE  (64 * 1024 * 1024)
#define FTL_WRITE_CACHE_AUTO         UINT64_MAX
/* The plugin's default write-cache-bypass (ftl_options). */
#define FTL_DEFAULT_WRITE_CACHE_BYPASS (128 * 1024)

/* Limits on the geometry. */
#define FTL_MIN_PAGE_SIZE            512
#define FTL_MAX_PAGE_SIZE            (64 * 1024)
#define FTL_MIN_PAGES_PER_BLOCK      8
#define FTL_MAX_PAGES_PER_BLOCK      65536
#define FTL_MIN_OP_PERCENT           1.0
#define FTL_MAX_OP_PERCENT           400.0
#define FTL_MAX_STREAMS              16

enum ftl_log_level { FTL_LOG_ERROR, FTL_LOG_WARN, FTL_LOG_DEBUG };

/* Debug categories for FTL_LOG_DEBUG messages (a bitmask in
 * ftl_options.debug).
 */
#define FTL_DEBUG_GC        (1u << 0)
#define FTL_DEBUG_CKPT      (1u << 1)
#define FTL_DEBUG_RECOVERY  (1u << 2)
#define FTL_DEBUG_ALLOC     (1u << 3)

/* Garbage collection victim selection. */
enum ftl_gc_policy {
  FTL_GC_COST_BENEFIT = 0,      /* (1-u) * age / (1+u), as in LFS: the
                                 * default */
  FTL_GC_GREEDY = 1,            /* fewest valid pages */
};
/* "greedy" or "cost-benefit"; and back (-1 for an unknown name). */
extern const char *ftl_gc_policy_name (enum ftl_gc_policy p);
extern int ftl_gc_policy_from_name (const char *name);

/* How garbage collection shares the device with requests (gc.c). */
enum ftl_gc_mode {
  FTL_GC_WATERMARK = 0,         /* the background thread reclaims a whole
                                 * victim at a time below the high
                                 * watermark; a writer at the low one
                                 * reclaims by the victim policy */
  FTL_GC_DEADLINE = 1,          /* the background thread works in slices
                                 * and yields to requests whose deadline
                                 * is near; a writer at the low watermark
                                 * reclaims just one block, the cheapest */
};
/* "watermark" or "deadline"; and back (-1 for an unknown name). */
extern const char *ftl_gc_mode_name (enum ftl_gc_mode m);
extern int ftl_gc_mode_from_name (const char *name);

/* Data placement of an image's namespaces (placement=): which of them
 * an erase block may hold (the modes, in the order of the image's
 * namespace table: shared, isolated, initially-isolated).  The option
 * is FTL_PLACE_*: 0 is the default (shared for a new image, whatever
 * an existing image holds); else the mode + 1.
 */
#define FTL_PLACE_DEFAULT 0
#define FTL_PLACE_SHARED 1
#define FTL_PLACE_ISOLATED 2
#define FTL_PLACE_INITIALLY_ISOLATED 3
/* The name of mode m (0: shared, 1: isolated, 2: initially-isolated). */
extern const char *ftl_placement_name (unsigned m);
/* bytes as the library's messages give them: "16 TiB", "1.016 GiB",
 * "512 bytes" (binary units).  Returns buf.
 */
extern const char *ftl_human_bytes (uint64_t bytes, char *buf, size_t len);
/* The mode of a name, or -1. */
extern int ftl_placement_from_name (const char *name);

/* The NAND timing model (see timing.h).  When enabled, every data page
 * read and programmed and every erase takes its latency on the dies of
 * channels x dies parallel units, pages striped over them; the
 * latencies are taken as given (0 is allowed), channels and dies of 0
 * mean the defaults, planes of 0 means 1, nand_page of 0 the FTL page,
 * a rate of 0 a free transfer.
 */
struct ftl_timing {
  bool enabled;
  uint64_t read_ns, program_ns, erase_ns;
  unsigned channels, dies;
  unsigned planes;              /* planes programmed or read at once */
  uint32_t nand_page;           /* NAND page size, bytes */
  uint64_t nand_block;          /* NAND erase block per die (all planes),
                                 * bytes; 0: an erase costs tBERS whole */
  uint64_t channel_rate;        /* channel transfer, bytes/s */
  uint64_t host_rate;           /* host link (SATA, PCIe), bytes/s */
  uint64_t command_ns;          /* controller overhead per host command */
  uint64_t host_command_ns;     /* host link time per command besides its
                                 * data (SATA's frames, NVMe's entries) */
  bool suspend;                 /* reads suspend programs and erases */
  uint64_t suspend_ns;          /* the cost of a suspension */
  uint64_t plp_buffer;          /* power-loss protected buffer, bytes:
                                 * programs complete once in it; 0: none */
};

/* The SLC cache (see slc.c and the plugin's man page, SLC CACHE): free
 * erase blocks written in SLC mode, one bit per cell, faster but
 * holding pages_per_block / cell_bits pages, folded into native blocks
 * in the background.  Off unless static_bytes or dynamic_bytes is
 * given.
 */
#define FTL_SLC_AUTO UINT64_MAX   /* dynamic_bytes: as much as free
                                   * space allows */
#define FTL_DEFAULT_CELL_BITS 3
#define FTL_DEFAULT_SLC_FOLD_IDLE_NS (200 * UINT64_C (1000000))
struct ftl_slc {
  uint64_t static_bytes;        /* SLC capacity taken from the spare */
  uint64_t dynamic_bytes;       /* at most this much more SLC capacity
                                 * from free user space (FTL_SLC_AUTO:
                                 * no limit but the free space) */
  unsigned cell_bits;           /* bits per cell of the native mode,
                                 * 2 to 4 (0: FTL_DEFAULT_CELL_BITS) */
  uint64_t program_ns;          /* SLC page program (0: program_ns /
                                 * cell_bits) */
  uint64_t read_ns;             /* SLC page read (0: read_ns) */
  uint64_t fold_idle_ns;        /* fold after host writes paused this
                                 * long (0: FTL_DEFAULT_SLC_FOLD_IDLE_NS,
                                 * UINT64_MAX: never when idle) */
  uint32_t static_per_million;  /* when static_bytes is 0: this share of
                                 * the logical size (a preset's), at most
                                 * what the spare allows */
  uint32_t dynamic_per_million; /* when dynamic_bytes is 0: likewise */
};

/* Presets of the timing model: a class of drive each, with the values
 * and their sources in the plugin's man page (Timing).  The write cache
 * and the SLC cache figures are data for the caller: keys.c sets the
 * write cache and the SLC cache from them unless their keys are given.
 * The published figures are the drive's data sheet or review numbers
 * (0: not published), for bench/model-check.sh.
 */
struct ftl_timing_preset {
  const char *name;
  const char *drive;            /* the drive the figures come from */
  struct ftl_timing timing;     /* enabled = true */
  uint64_t write_cache;         /* FTL_WRITE_CACHE_AUTO, or bytes */
  bool plp;                     /* power-loss protection */
  unsigned cell_bits;           /* bits per cell of the native NAND */
  /* The SLC cache (keys slc-program=, slc-read=, slc-static=,
   * slc-dynamic=; the native speed once it is full).
   */
  uint64_t slc_program_ns, slc_read_ns;
  uint64_t slc_static_per_tb;   /* static SLC bytes per TB of capacity */
  uint64_t slc_dynamic_per_tb;  /* dynamic SLC bytes per TB (0: none) */
  double post_cache_mbs;        /* MB/s after the SLC cache is full */
  /* The map's cache (map-cache=): the drive's DRAM, bytes per TB of
   * capacity; or, for a DRAM-less drive, the host memory buffer it
   * uses (bytes, whatever the capacity); 0 and 0: the default.
   */
  uint64_t map_cache_per_tb, map_cache_hmb;
  /* Published figures: MB/s (10^6), IOPS. */
  double seq_read_mbs, seq_write_mbs;
  double rr_qd1, rw_qd1, rr_qd32, rw_qd32, rw_steady;
};
/* The preset of that name, or NULL; the default one (timing=true). */
extern const struct ftl_timing_preset *ftl_timing_preset (const char *name);
extern const struct ftl_timing_preset *ftl_timing_preset_default (void);
/* The i-th preset of the table, or NULL past its end. */
extern const struct ftl_timing_preset *ftl_timing_preset_at (size_t i);
/* The names, comma separated (for messages). */
extern const char *ftl_timing_preset_names (void);

/* Media that ages (see the plugin's man page, MEDIA ERRORS): the raw
 * bit error model, ECC and read retry, read reclaim and scrub.  The
 * media clock (retention time) runs whether the model is on or not;
 * time_scale makes it run faster while the disk is open.  Zero means
 * the default everywhere.
 */
struct ftl_errors {
  bool enabled;                 /* the error model (off by default) */
  uint64_t seed;                /* draws are a hash of it and the read */
  double time_scale;            /* media seconds per wall second */
  double scale;                 /* multiplies every raw bit error rate */
  double disturb;               /* multiplies the read disturb rate */
  uint32_t ecc_bits;            /* correctable bits per 1 KiB codeword */
  uint32_t retry_steps;         /* read retry steps */
  uint32_t reclaim_reads;       /* page reads of a block before read
                                 * reclaim moves its data */
  bool no_reclaim;              /* no read reclaim */
  uint64_t scrub_ns;            /* between blocks the scrub reads when
                                 * idle; UINT64_MAX: no scrub */
};
#define FTL_MAX_TIME_SCALE 1e9

/* Request kinds, for deadlines and latency histograms.  Zero counts as
 * a write.
 */
enum ftl_op {
  FTL_OP_READ, FTL_OP_WRITE, FTL_OP_TRIM, FTL_OP_FLUSH, FTL_OP_EXTENTS,
  FTL_OP__MAX
};
extern const char *ftl_op_name (enum ftl_op op);

/* Where a request's time goes, measured once on the path it takes
 * (track/deadline.h).  A span of work counts for the outermost stage
 * that times it: the programs of a garbage collection that a write runs
 * are gc, not media.  The stages of a request add up to its total.
 *   QUEUE  waits for a lock another request or the checkpoint holds
 *          (the map's stripes, a log frontier, ckpt_rw).  A request's
 *          time starts in the call; the plugin does nothing before it
 *          that waits, and nbdkit's own queue is outside its view
 *   CACHE  waits for room in the write cache (a writer whose shard is
 *          full destages a batch itself, or waits for one), or for a
 *          page being programmed from it
 *   GC     foreground garbage collection: a write that found too few
 *          free erase blocks collects before it goes on
 *   MEDIA  the backing file's own reads and writes (timed with the
 *          tick counter, util/clock.h), the modeled time of reads and
 *          programs (timing model), and waits for a slowed or stalled
 *          backing file (fault file)
 *   SYNC   flushes and FUA: the cache destaged, barriers, syncs,
 *          durable-point records; a checkpoint run by a request
 *   OTHER  the remainder: the copies, checksums, map lookups and
 *          updates
 */
enum ftl_stage {
  FTL_STAGE_QUEUE, FTL_STAGE_CACHE, FTL_STAGE_GC, FTL_STAGE_MEDIA,
  FTL_STAGE_SYNC, FTL_STAGE_OTHER,
  FTL_STAGE__MAX
};
extern const char *ftl_stage_name (enum ftl_stage s);

/* Latency histograms in the statistics: bucket i counts values in
 * [2^(i-1), 2^i) microseconds (bucket 0: below 1 us), i < FTL_LAT_BUCKETS;
 * longer ones count only in the total.
 */
#define FTL_LAT_BUCKETS 27

/* A request that took longer than ftl_options.slow_threshold_ns, or that
 * the deadline handler reset or aborted (ftl_slow_requests).
 */
struct ftl_slow_request {
  uint64_t time_ns;             /* CLOCK_REALTIME at its end */
  enum ftl_op op;
  uint64_t offset, count;
  unsigned flags;               /* FTL_FUA */
  int result;                   /* 0 or a negative errno */
  uint64_t total_ns;
  uint64_t stage_ns[FTL_STAGE__MAX];
  unsigned resets;              /* deadline resets */
  bool aborted;                 /* the deadline handler aborted it */
  int waiting_on;               /* the stage it was in when the handler
                                 * last reset or aborted it (enum
                                 * ftl_stage; -1: none timed, or not
                                 * reset or aborted) */
};

/* Parse a duration: a decimal number followed by us, ms or s ("500ms",
 * "1.5s", "200us"); a plain "0" is also accepted.  Returns 0 and sets
 * *ns, or a negative errno and writes why into err (if errlen > 0).
 */
extern int ftl_parse_duration (const char *s, uint64_t *ns, char *err,
                               size_t errlen);

/* Replace path atomically with what write(opaque, fp) writes: a
 * temporary file beside it, mode 0644, then rename.  Returns 0 or a
 * negative errno.
 */
extern int ftl_write_file_atomic (const char *path,
                                  int (*write) (void *opaque, FILE *fp),
                                  void *opaque);

typedef void (*ftl_log_fn) (void *opaque, enum ftl_log_level level,
                            const char *msg);

/* Namespaces: an image holds 1 to FTL_MAX_NAMESPACES of them, each a
 * disk of its own size with a name, all on one pool of erase blocks
 * (one map, one log, one GC, one write cache, one timing model).  A
 * name is 1 to FTL_MAX_NAMESPACE_NAME bytes of A-Z a-z 0-9 . _ -; an
 * image made without namespaces has one, named "", of the whole size.
 */
#define FTL_MAX_NAMESPACES      16
#define FTL_MAX_NAMESPACE_NAME  63
struct ftl_ns_spec {
  const char *name;
  uint64_t bytes;               /* a multiple of the page size */
};

/* How to open (and, when the file is new or empty, create) an image.
 * Zero means "default" for a new image and "whatever the image says" for
 * an existing one; a non-zero value given for an existing image must
 * match it.
 */
struct ftl_options {
  const char *path;             /* backing file (required) */
  uint64_t logical_bytes;       /* disk size seen by the host (with
                                 * namespaces: the logical capacity
                                 * they share; 0: their sum) */
  const struct ftl_ns_spec *namespaces;  /* a new image's namespaces, in
                                 * order (the first is the default);
                                 * an existing image's must be these
                                 * (NULL: one, "", of logical_bytes;
                                 * for an existing image: whatever it
                                 * holds) */
  unsigned nnamespaces;
  unsigned placement;           /* FTL_PLACE_* (a new image's; an
                                 * existing image's must be it) */
  uint32_t page_size;           /* bytes, power of 2 */
  uint32_t pages_per_block;     /* power of 2 */
  double op_percent;            /* (physical - logical) / logical * 100 */
  unsigned streams;             /* host write frontiers (0 = default) */
  enum ftl_gc_policy gc_policy; /* chosen at each open */
  enum ftl_gc_mode gc_mode;     /* chosen at each open */
  uint32_t wl_threshold;        /* static wear leveling: erase count spread
                                 * that triggers it (0 = default) */
  uint32_t endurance;           /* erases after which a block is retired
                                 * (0 = default) */
  bool one_log;                 /* hot-cold=false: no hot/cold
                                 * separation: host writes share one log
                                 * per stream and GC one log */
  bool hot_cold_always;         /* hot-cold=true: separate whatever the
                                 * workload (default, hot-cold=auto:
                                 * while it shows a hot set) */
  bool readonly;                /* open without writing anything */
  bool no_sync;                 /* sync=false: never sync the image but
                                 * to set and clear its mark at open and
                                 * close (see ftl_open) */
  bool preallocate;             /* a new image: reserve all of its file's
                                 * space (fallocate), not a sparse file */
  uint64_t map_cache_bytes;     /* the map's cache: 0 = the default
                                 * (ftl_default_map_cache); an image
                                 * made with less than its whole map
                                 * (4 bytes per page) has a paged map */
  uint64_t map_cache_per_tb;    /* with map_cache_bytes 0: this many
                                 * bytes per TB of capacity, at most
                                 * FTL_MAX_DEFAULT_MAP_CACHE (0: the
                                 * default) */
  uint64_t map_cache_hmb;       /* ... or this many bytes, whatever the
                                 * capacity (a DRAM-less drive's host
                                 * memory buffer; 0: none) */
  uint64_t memory_limit;        /* the memory the map may take, as if the
                                 * host had no more; 0: the host's
                                 * (memory, control group, ulimit -v) */
  unsigned debug;               /* FTL_DEBUG_* bits */
  ftl_log_fn log;               /* may be NULL */
  void *log_opaque;
  const struct ftl_io *io;      /* NULL: the real file; tests inject faults */
  uint64_t timeout_ns;          /* request deadline; 0: no tracking */
  unsigned timeout_retries;     /* deadline resets of a progressing request */
  struct ftl_timing timing;     /* the NAND timing model (off by default) */
  const char *fault_file;       /* fault injection control file, for tests
                                 * (see fault.h); NULL: none */
  uint64_t write_cache_bytes;   /* the volatile write cache; 0: none
                                 * (every write goes to the log before
                                 * it completes); FTL_WRITE_CACHE_AUTO:
                                 * ftl_default_write_cache */
  uint64_t write_cache_bypass;  /* with a write cache: a write of at
                                 * least this many bytes, in whole pages,
                                 * goes straight to the log on the
                                 * request's thread, as write-cache=0
                                 * would; 0: never */
  struct ftl_errors errors;     /* media that ages (off by default) */
  struct ftl_slc slc;           /* the SLC cache (off by default) */
  uint64_t slow_threshold_ns;   /* with slow_log: requests at least this
                                 * long are kept for ftl_slow_requests
                                 * (0: timeout_ns / 4, or
                                 * FTL_SLOW_DEFAULT_NS without a
                                 * deadline) */
  bool slow_log;                /* keep slow requests (ring of
                                 * FTL_SLOW_RING records) */
  bool manual_background;       /* ftl_start_background starts no thread:
                                 * the caller runs the background work
                                 * with ftl_background_step (tests) */
};

/* The default write cache for a disk of logical_bytes: 1 MiB per GiB
 * (a DRAM-equipped consumer drive's ratio), at least
 * FTL_MIN_WRITE_CACHE and at most FTL_MAX_DEFAULT_WRITE_CACHE.
 */
extern uint64_t ftl_default_write_cache (uint64_t logical_bytes);

/* The default map cache for a disk of logical_bytes in pages of
 * page_size: its whole map (4 bytes per page, as a drive counts it; the
 * process holds as much again in page checks), at most
 * FTL_MAX_DEFAULT_MAP_CACHE.  A disk whose map is larger gets a paged
 * map.
 */
#define FTL_MAX_DEFAULT_MAP_CACHE  (UINT64_C (256) << 20)
extern uint64_t ftl_default_map_cache (uint64_t logical_bytes,
                                       uint32_t page_size);

/* Open an image, creating it if the file is absent or empty and
 * logical_bytes is given.  On failure returns a negative errno and
 * writes a one-line explanation into errbuf (without the file name,
 * which the caller knows).  A failed open never modifies an existing
 * image.  The geometry is a property of the image; streams is chosen at
 * each open.  An image that cannot be marked in use because the
 * filesystem holding it is full (ENOSPC, EDQUOT) opens read-only
 * (ftl_is_read_only), with an error logged.
 */
extern int ftl_open (const struct ftl_options *opts, struct ftl **ftlp,
                     char *errbuf, size_t errbuf_len);

/* Clean shutdown: write pending metadata and a checkpoint, mark the image
 * clean and free the handle.  Returns the first error met; the handle is
 * freed in every case.
 */
extern int ftl_close (struct ftl *ftl);

/* Geometry of an open image. */
struct ftl_geometry {
  uint32_t page_size;
  uint32_t pages_per_block;
  uint32_t blocks;              /* erase blocks of user data */
  uint64_t logical_bytes;
  uint64_t logical_pages;
  double op_percent;
};
extern void ftl_get_geometry (const struct ftl *ftl, struct ftl_geometry *g);

/* Flags for write, trim and zero. */
#define FTL_FUA       (1u << 0)   /* durable before returning */
#define FTL_MAY_TRIM  (1u << 1)   /* zero: whole pages may be unmapped */

/* Data path.  Offsets and counts are in bytes and may have any alignment;
 * count may be 0.  The range must lie inside the disk (-EINVAL if not).
 * These address the image's whole logical space, where each namespace
 * lies at its base (ftl_ns_get_info); a front end that serves
 * namespaces uses ftl_ns_read and its kin, which keep to one.
 */
extern int ftl_read (struct ftl *ftl, void *buf, uint64_t count,
                     uint64_t offset);
extern int ftl_write (struct ftl *ftl, const void *buf, uint64_t count,
                      uint64_t offset, unsigned flags);
/* Unmap the whole pages inside the range; partial pages are ignored. */
extern int ftl_trim (struct ftl *ftl, uint64_t count, uint64_t offset,
                     unsigned flags);
/* Make the range read as zeros: whole pages are unmapped, partial pages
 * are rewritten with zeros.
 */
extern int ftl_zero (struct ftl *ftl, uint64_t count, uint64_t offset,
                     unsigned flags);
/* Make every write, trim and zero completed before the call durable. */
extern int ftl_flush (struct ftl *ftl);
/* Write every page of the write cache to the log, without a sync (not a
 * host request: nothing is counted but the pages destaged).  ftl_close
 * does it too; a caller that reports statistics at shutdown calls it
 * first, so that they show the cache empty.
 */
extern int ftl_destage (struct ftl *ftl);

/* A power cut, as when a drive is unplugged: the write cache's dirty
 * pages are lost, except the destage writes that were in flight when
 * the power went.  Those are a batch of the oldest dirty pages, up to
 * 256 (how many is drawn from seed); a drive programs such a batch over
 * its dies in any order, so a seeded subset of it reaches the media,
 * and with tear the last page of that subset is torn: only some of its
 * 512-byte sectors were programmed (it then fails its checksum, and
 * the next open treats it as a write that never completed).  Then the
 * handle is off: background work stops, every request fails with -EIO,
 * and ftl_close writes nothing (the next open is a recovery, counted
 * in health.unsafe_shutdowns).  Whatever a flush or a FUA write made
 * durable survives.  Without a write cache nothing is in flight.
 * Returns 0, or -EALREADY if the power is already off.
 */
struct ftl_power_cut {
  uint64_t lost_pages;          /* dirty cached pages that did not
                                 * reach the media whole (the torn one
                                 * included) */
  uint32_t in_flight;           /* pages being destaged at the cut */
  uint32_t programmed;          /* ... of them that reached the media */
  bool torn;                    /* the last of those was torn */
  uint64_t torn_lpn;            /* its logical page */
  uint32_t torn_bytes;          /* bytes of it that were programmed */
};
extern int ftl_power_cut (struct ftl *ftl, uint64_t seed, bool tear,
                          struct ftl_power_cut *out);
/* Has ftl_power_cut cut the power? */
extern bool ftl_is_powered_off (struct ftl *ftl);

/* Namespaces.  ftl_ns_open gives the namespace of that name (NULL if
 * the image has none), ftl_ns_at the i-th (the first is the default
 * one; NULL past the last).  The handle lives as long as ftl: there is
 * nothing to close.
 */
struct ftl_ns;
extern unsigned ftl_ns_count (const struct ftl *ftl);
extern struct ftl_ns *ftl_ns_at (struct ftl *ftl, unsigned i);
extern struct ftl_ns *ftl_ns_open (struct ftl *ftl, const char *name);
struct ftl_ns_info {
  const char *name;             /* valid as long as the handle */
  uint64_t bytes;               /* its size */
  uint64_t base;                /* where it starts in the image's logical
                                 * space, bytes */
  const char *placement;        /* the image's placement (static) */
};
extern void ftl_ns_get_info (const struct ftl_ns *ns,
                             struct ftl_ns_info *out);
/* A namespace's counters, since the image was opened (not kept in
 * it): what its requests carried, and the pages programmed on its
 * behalf, its host writes and the copies garbage collection and wear
 * leveling made of its pages.  waf is media_write_bytes /
 * host_write_bytes (0 before a write).  mapped_pages is counted from
 * the map (UINT64_MAX with a paged map and several namespaces: not
 * counted, it would load the whole map).
 */
struct ftl_ns_stats {
  uint64_t host_write_bytes, host_read_bytes, host_trim_bytes;
  uint64_t host_write_commands, host_read_commands, host_trim_commands;
  uint64_t mapped_pages;
  uint64_t media_write_bytes;   /* its data programmed, copies included */
  uint64_t gc_write_bytes;      /* ... of which copies */
  double waf;
};
extern void ftl_ns_get_stats (struct ftl_ns *ns, struct ftl_ns_stats *out);
/* The data path of a namespace: as ftl_read and the rest, with offsets
 * inside the namespace, which the range must lie in (-EINVAL if not:
 * no request of one namespace reaches another's pages).  A flush is
 * the device's: ftl_flush makes every namespace's writes durable.
 */
extern int ftl_ns_read (struct ftl_ns *ns, void *buf, uint64_t count,
                        uint64_t offset);
extern int ftl_ns_write (struct ftl_ns *ns, const void *buf, uint64_t count,
                         uint64_t offset, unsigned flags);
extern int ftl_ns_trim (struct ftl_ns *ns, uint64_t count, uint64_t offset,
                        unsigned flags);
extern int ftl_ns_zero (struct ftl_ns *ns, uint64_t count, uint64_t offset,
                        unsigned flags);
typedef int (*ftl_extent_fn) (void *opaque, uint64_t offset, uint64_t length,
                              bool hole);
extern int ftl_ns_extents (struct ftl_ns *ns, uint64_t count,
                           uint64_t offset, ftl_extent_fn fn, void *opaque);

/* Namespace management at rest (ftlctl ns-add, ns-delete), on a handle
 * that nothing else uses: open read-write, no request in flight, no
 * background thread started.  Every namespace handle taken before a
 * call that succeeds is invalid after it.  The new table is written
 * with the next superblock and synced: a power cut leaves the old
 * table or the new one, never a mix.
 *
 * ftl_ns_create adds a namespace of bytes (a multiple of the page
 * size), last in the table, in the lowest free range of the logical
 * space that holds it (a namespace is one range), trimmed first: it
 * reads as zeros.  ftl_ns_delete trims every page of the namespace
 * and flushes, then removes it from the table (the first one left is
 * the default); cut short, it leaves the namespace listed and some of
 * its pages trimmed.  Each returns 0 or a negative errno with a line
 * in errbuf saying why: -EINVAL (a bad name or size; the only
 * namespace), -EEXIST (the name is taken: a size does not change),
 * -ENOSPC (no free range holds it, or FTL_MAX_NAMESPACES already),
 * -ENOENT (no such namespace), or an I/O error.  Both check the
 * request before they write anything: on a read-only handle, one that
 * would be done returns -EROFS ("the image is open read-only").
 */
extern int ftl_ns_create (struct ftl *ftl, const char *name, uint64_t bytes,
                          char *errbuf, size_t errlen);
extern int ftl_ns_delete (struct ftl *ftl, const char *name, char *errbuf,
                          size_t errlen);

/* Report the range [offset, offset+count) as runs of mapped data and
 * holes (unmapped pages, which read as zeros).  The callback is called
 * with runs in ascending order that cover the range exactly; it returns 0
 * to continue or -1 to stop early, which is not an error: ftl_extents
 * then returns 0.
 */
extern int ftl_extents (struct ftl *ftl, uint64_t count, uint64_t offset,
                        ftl_extent_fn fn, void *opaque);

/* Accelerated aging: move the media clock forward by seconds (all data
 * on the disk is that much older, as if the disk had been on a shelf)
 * and add pe program/erase cycles to the wear the error model sees
 * (the erase counts of the blocks, their retirement and the health
 * log's percentage used are those of the erases done).  Written to a
 * checkpoint before it returns.  Returns 0, -EROFS on a handle opened
 * read-only, -EOVERFLOW if the cycles added would pass 2^32 - 1, or
 * the error of the checkpoint.
 */
extern int ftl_age (struct ftl *ftl, uint64_t seconds, uint32_t pe);

/* True if the disk refuses writes: opened read-only, opened while the
 * filesystem holding the image was full (ftl_open could not mark it in
 * use), or worn out (so many erase blocks retired, or on their last
 * cycle, that the rest cannot sustain writes).  Reads keep working;
 * writes, trims and zeros fail with -EROFS.
 */
extern bool ftl_is_read_only (struct ftl *ftl);

/* Background garbage collection: a thread that keeps a few erase blocks
 * free so that writes rarely wait for GC.  Without it, writes run GC
 * themselves when free blocks run low.  Call ftl_stop_background before
 * ftl_close.  (nbdkit: start it in .after_fork, stop it in .cleanup.)
 */
extern int ftl_start_background (struct ftl *ftl);
extern void ftl_stop_background (struct ftl *ftl);

/* The background work one unit at a time, for a handle opened with
 * manual_background (tests that must decide when it runs, such as a
 * crash-point enumeration).  ftl_start_background then starts no
 * thread, neither the background thread nor the write cache's
 * destager, but requests leave to the caller what they would leave to
 * them; without it, requests do all the work themselves, as with no
 * background thread.
 *
 * Each call does what the threads would do next, one unit of it: a
 * checkpoint that is due, a batch of erases of blocks with nothing
 * left to copy, the barrier (a sync) such blocks wait for, a wear
 * leveling move after a victim was reclaimed, one victim (or, with
 * FTL_GC_DEADLINE, one slice) of garbage collection while free blocks
 * are at or below the high watermark, or one batch of the write
 * cache's dirty pages to the log (whenever there are any: steps and
 * the rest of the work take turns).  Calls may overlap requests from
 * other threads; calls from several threads run one at a time.
 *
 * Returns 1 if it did something, 0 if there was nothing to do (a
 * caller that loops until 0 has done all the background work there
 * is for now), or a negative errno: -EINVAL if the handle was not
 * opened with manual_background, -ENOSPC if garbage collection found
 * nothing to reclaim, or the error of the work (a failed checkpoint:
 * the next call tries it again).
 */
extern int ftl_background_step (struct ftl *ftl);

/* The deadline watchdog: a thread that runs the timeout handler for
 * requests past their deadline (see deadline.h).  Does nothing when
 * timeout_ns is 0.  A request that the handler aborts fails with
 * -ETIMEDOUT; while the backing file is stalled every request does, at
 * once.  ftl_close stops it.  (nbdkit: start it in .after_fork.)
 */
extern int ftl_start_watchdog (struct ftl *ftl);
extern void ftl_stop_watchdog (struct ftl *ftl);

/* The health log, with the names, units and meaning of NVMe's SMART /
 * Health Information log page (02h), as `nvme smart-log` prints them.
 * The counters are kept in the image.
 */
#define FTL_CW_SPARE      (1u << 0) /* available spare below threshold */
#define FTL_CW_DEGRADED   (1u << 2) /* reliability degraded: media errors,
                                     * or worn out */
#define FTL_CW_READ_ONLY  (1u << 3) /* the media is read-only (worn out,
                                     * or opened when the filesystem
                                     * holding the image was full; not
                                     * set by a read-only open) */
/* NVMe drives commonly report a threshold of 10%. */
#define FTL_AVAILABLE_SPARE_THRESHOLD 10
struct ftl_health {
  uint8_t critical_warning;     /* FTL_CW_* bits */
  uint8_t available_spare;      /* percent of the spare blocks that may
                                 * still wear out before the disk turns
                                 * read-only */
  uint8_t available_spare_threshold;  /* percent */
  uint8_t percentage_used;      /* mean erase count against the
                                 * endurance; 100 once worn out; at
                                 * most 255 */
  uint64_t data_units_read;     /* thousands of 512-byte units read by
                                 * the host, rounded up */
  uint64_t data_units_written;  /* ... written (zeroes carry none) */
  uint64_t host_read_commands;  /* completed reads */
  uint64_t host_write_commands; /* completed writes and zeroes */
  uint64_t power_cycles;        /* read-write opens, this one included */
  uint64_t unsafe_shutdowns;    /* opens that found no clean shutdown */
  uint64_t media_errors;        /* reads that failed: uncorrectable,
                                 * or a page that failed its checksum */
  uint64_t num_err_log_entries; /* errors logged: one per media error */
};

/* Counters.  All page counts are in pages. */
struct ftl_stats {
  uint64_t host_write_pages;    /* pages written by the host */
  uint64_t host_read_pages;
  uint64_t host_trim_pages;     /* pages unmapped by trim and zero */
  uint64_t host_flushes;
  uint64_t media_program_pages; /* every page programmed, GC included */
  uint64_t media_read_pages;
  uint64_t media_erases;
  uint64_t media_syncs;         /* syncs of the file since open */
  uint64_t media_sync_ns;       /* time spent in them */
  uint64_t media_syncs_skipped; /* sync=false: syncs not done */
  uint64_t media_lost_pages;    /* logical pages the open found lost
                                 * to a crash of the host (sync=false) */
  uint64_t media_corrected_bits;  /* bit errors ECC corrected */
  uint64_t media_read_retries;  /* read retry steps taken */
  uint64_t media_uncorrectable; /* pages no retry recovered, since open */
  int64_t media_clock_skew;     /* media clock - wall clock, seconds */
  uint32_t media_pe_offset;     /* P/E cycles added by ftlctl age */
  bool errors;                  /* the error model is on */
  uint64_t gc_reclaimed_blocks; /* read reclaims, since open */
  uint64_t scrub_blocks;        /* blocks scrubbed, since open */
  uint64_t scrub_pages;         /* ... their pages */
  uint64_t gc_copied_pages;
  uint64_t gc_runs;             /* victim blocks reclaimed */
  uint64_t gc_background_runs;  /* ... of them, by the background thread */
  uint64_t gc_slices;           /* background slices (deadline mode) */
  uint64_t gc_yields;           /* waits of background GC for a request
                                 * whose deadline was near */
  uint64_t gc_barriers;         /* syncs GC ran before erases */
  uint64_t gc_erases_unsynced;  /* erases that needed no sync of their
                                 * own (an earlier one covered them) */
  uint64_t wl_moved_pages;      /* pages moved by static wear leveling */
  struct {                      /* hot/cold separation, since open */
    bool separating;            /* now */
    bool automatic;             /* hot-cold=auto decides */
    double young_overwrites;    /* the last decision: the share of
                                 * overwrites that replaced young data */
    double young_live;          /* ... and of live data that is young */
    double lift;                /* ... their ratio */
    uint64_t decisions, switches;
  } hot_cold;
  bool slc;                     /* the SLC cache is on */
  uint64_t slc_size_pages;      /* SLC capacity the budget allows now */
  uint64_t slc_used_pages;      /* pages programmed in SLC blocks not
                                 * yet folded */
  uint64_t slc_folded_pages;    /* pages folded, since open */
  uint64_t slc_exhausted;       /* host writes fell to native blocks
                                 * (the cliff), since open */
  uint32_t wl_threshold;
  uint32_t endurance;
  uint32_t retired_blocks;      /* worn out, out of service */
  uint32_t last_cycle_blocks;   /* retired at their next erase, and so
                                 * no longer reclaimed by GC */
  bool read_only;               /* opened read-only, or worn out */
  uint64_t checkpoints;
  uint64_t mapped_pages;        /* logical pages holding data */
  uint32_t blocks_free;
  uint32_t blocks_total;
  uint32_t erase_min, erase_max;
  double erase_mean;
  double waf;                   /* media_program_pages / host_write_pages */
  double waf_data;              /* the same without the map's translation
                                 * pages (map.program_pages) */
  enum ftl_gc_policy gc_policy;
  enum ftl_gc_mode gc_mode;
  struct {
    uint64_t timeout_ns;
    unsigned retries;
    uint64_t requests;          /* tracked */
    uint64_t expired;           /* deadlines that passed */
    uint64_t handled;           /* ... of a request that had completed */
    uint64_t reset;             /* ... of a progressing request: restarted */
    uint64_t aborted;           /* requests that failed with -ETIMEDOUT */
    uint64_t abort_all;         /* times the media stalled */
    uint64_t rejected;          /* requests refused while it was stalled */
    bool stalled;
  } deadline;
  struct ftl_latency {
    uint64_t count;
    uint64_t p50, p99, p999, max;   /* microseconds */
    uint64_t sum_ns;
    uint64_t buckets[FTL_LAT_BUCKETS];
    struct {
      uint64_t count;               /* requests with time in the stage */
      uint64_t p50, p99, p999, max; /* microseconds, over those */
      uint64_t sum_ns;
      uint64_t buckets[FTL_LAT_BUCKETS];  /* of those */
    } stage[FTL_STAGE__MAX];
    /* The stages' shares of the time of the requests whose total lies
     * in the same power of 2 of microseconds as the p50, p99 and p999:
     * what the median and the tail requests wait for.
     */
    double split[3][FTL_STAGE__MAX];
  } latency[FTL_OP__MAX];
  /* With the timing model: requests that waited for it, and by how
   * much those that ended after their last modeled end did (the host
   * stall: real work the model's time did not cover).
   */
  struct ftl_host_stall {
    uint64_t requests;
    uint64_t count;             /* stalled (by 1 ns or more) */
    uint64_t p50, p99, p999, max;   /* microseconds, over those */
    uint64_t sum_ns;
    uint64_t buckets[FTL_LAT_BUCKETS];
  } host_stall;
  struct {
    uint64_t slow;              /* requests kept for the slow log */
    uint64_t dropped;           /* ... lost: the ring was full */
    uint64_t threshold_ns;
  } slow;
  struct {                      /* the write cache, since open */
    uint64_t size_bytes;        /* 0: none */
    uint64_t dirty_bytes;       /* not yet in the log */
    uint64_t hits;              /* pages read from the cache */
    uint64_t coalesced_pages;   /* writes that replaced a cached page */
    uint64_t destaged_pages;    /* pages written to the log */
    uint64_t dropped_pages;     /* cached pages a trim or zero dropped */
    uint64_t flush_waits;       /* flushes and FUA writes that waited
                                 * for cached pages to reach the log */
    uint64_t write_waits;       /* writes that found the cache full */
    uint64_t bypassed_pages;    /* pages of large writes that went
                                 * straight to the log */
    uint64_t destage_stalls;    /* timing model: destage batches whose
                                 * real work ended after their modeled
                                 * programs */
    uint64_t destage_stall_ns;  /* ... by how much, summed */
  } cache;
  struct {                      /* the paged map (map-cache=), since open */
    bool paged;                 /* false: the whole map is in memory */
    uint64_t cache_bytes;       /* its cache (the whole map if not paged) */
    uint64_t resident_bytes;    /* groups in memory now */
    uint64_t dirty_bytes;       /* ... changed since their translation
                                 * page was written */
    uint64_t hits;              /* map accesses that found their group */
    uint64_t misses;            /* ... that loaded it (a page read) */
    uint64_t evictions;         /* groups given back */
    uint64_t writebacks;        /* translation pages that checkpoints
                                 * wrote */
    uint64_t read_pages;        /* translation pages read */
    uint64_t program_pages;     /* translation pages programmed since
                                 * the image was made (in media program
                                 * counts too) */
  } map;
  struct ftl_health health;
};
extern void ftl_get_stats (struct ftl *ftl, struct ftl_stats *st);

/* Up to max slow requests (oldest first) into out, waiting up to
 * wait_ns for the first.  Returns how many; 0 without slow_log.  One
 * reader at a time (the plugin's slow-log writer).
 */
#define FTL_SLOW_RING 1024
#define FTL_SLOW_DEFAULT_NS (100 * UINT64_C (1000000))
extern unsigned ftl_slow_requests (struct ftl *ftl,
                                   struct ftl_slow_request *out,
                                   unsigned max, uint64_t wait_ns);

/* Erase-count histogram: counts[i] (i < n) is the number of erase blocks
 * (retired ones included) whose erase count is in [first + i * width,
 * first + (i + 1) * width).  first is the lowest erase count; width is
 * the smallest that fits every block into n buckets.  Returns how many
 * buckets are used (at most n, n >= 1).
 */
#define FTL_HISTOGRAM_BUCKETS 16  /* buckets in the stats JSON */
extern unsigned ftl_get_erase_histogram (struct ftl *ftl, uint64_t *counts,
                                         unsigned n, uint32_t *first,
                                         uint32_t *width);

/* The statistics as one JSON object on fp, followed by a newline,
 * rendered from one snapshot (ftl_stats_snapshot, metrics.h, which
 * takes the same sections).  Its core is the same for every caller:
 * geometry and capacity, the host, media, GC and wear-leveling counters
 * kept in the image, wear and erase blocks.  sections adds:
 */
#define FTL_STATS_IMAGE   (1u << 0) /* the file: path, uuid, creation
                                     * time, superblock and checkpoint
                                     * (ftlctl info) */
#define FTL_STATS_SERVER  (1u << 1) /* this open's settings (GC policy
                                     * and mode, wear-leveling threshold,
                                     * endurance), what is counted only
                                     * since it (GC slices, yields,
                                     * syncs), read-only, deadlines and
                                     * latencies (the plugin's file) */
/* Safe to call from several threads while the handle serves.  Returns
 * 0, -ENOMEM, or -EIO if writing to fp failed.
 */
extern int ftl_render_stats_json (struct ftl *ftl, unsigned sections,
                                  FILE *fp);

/* The health log alone, as {"health": {...}} (the same member as in
 * the statistics), followed by a newline.  Returns 0, -ENOMEM, or -EIO
 * if writing to fp failed.
 */
extern int ftl_render_health_json (struct ftl *ftl, FILE *fp);

/* Write the statistics with FTL_STATS_SERVER to path, replacing the
 * file atomically (write to a unique temporary file, then rename).
 * Safe to call from several threads.  Returns 0 or a negative errno; it
 * logs nothing, so that the caller decides how often to report a
 * failure.
 */
extern int ftl_write_stats_json (struct ftl *ftl, const char *path);

#ifdef __cplusplus
}
#endif

#endif /* FTL_H */
