/* nbdkit-ftl: the host layer's functions (host/): the background
 * thread, reads from the log, the write cache, writes into the log and
 * the destager.  Callable from report/ and mngt/.
 */
#ifndef FTL_HOST_H
#define FTL_HOST_H

#ifndef FTL_INTERNAL_H
#error "included by ftl-internal.h, after the handle"
#endif

/* ns.c: the namespaces' handles, from ftl->ns_table (at open); and
 * whether the namespaces an open was given (if any) are table t's:
 * 0, or -EINVAL with errbuf saying how they differ.
 */
extern void ns_init (struct ftl *ftl);
extern int ns_check_options (const struct ftl_options *o,
                             const struct ftl_ns_table *t, char *errbuf,
                             size_t errlen);

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

/* read.c: read n whole pages at lpn from the log, as the map shows
 * them (no lock; GC-safe); -EIO for a page that fails its check.
 */
extern int read_pages (struct ftl *ftl, uint64_t lpn, uint32_t n,
                       uint8_t *buf);

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

/* A checkpoint (ckpt_write, or ckpt_maybe if maybe): a paged map's
 * translation pages take free blocks as host writes do, and the log
 * layer does not collect garbage, so this does, and tries again.
 * Caller holds no lock.
 */
extern int host_ckpt (struct ftl *ftl, bool clean, bool maybe);

#endif /* FTL_HOST_H */
