/* nbdkit-ftl: the functions of the NAND layer (nand/) that take the
 * handle: the SLC cache and the error model's hooks.  The media's and
 * the timing model's own calls are in media.h and timing.h.
 */
#ifndef FTL_NAND_H
#define FTL_NAND_H

#ifndef FTL_INTERNAL_H
#error "included by ftl-internal.h, after the handle"
#endif

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

#endif /* FTL_NAND_H */
