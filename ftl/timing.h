/* nbdkit-ftl: the NAND timing model.
 *
 * Owns the modeled time of the device's parallel units.  The NAND of a
 * drive is split into channels x dies units that work in parallel; an
 * operation on one unit waits for the unit's previous operations:
 *
 *        unit 0  |--prog--|--prog--|            |--read|
 *        unit 1     |--erase-----------|
 *        unit 2  |read|   |--prog--|
 *                ------------------------------------------> time
 *
 *   for each page (an erase: once)
 *     start = max (now, unit's next-free time)
 *     end   = start + latency
 *     the unit's next-free time becomes end
 *
 * Erase block b lives on unit b mod units, so the frontiers (which
 * write different erase blocks) overlap while requests to one erase
 * block, or to blocks that share a unit, queue.  The caller sleeps until
 * the modeled end (media.c, with clock_nanosleep: nothing spins).  Only
 * reads of data pages, programs and erases are modeled: OOB entries are
 * read with their pages, and channel transfers and syncs cost nothing.
 *
 * Concurrency: each unit's next-free time is an atomic updated with a
 * compare-and-swap; there is no lock.  The model is off (and costs one
 * test) unless timing_init was given enabled = true.
 */

#ifndef FTL_TIMING_H
#define FTL_TIMING_H

#include <stdbool.h>
#include <stdint.h>

struct timing {
  bool enabled;
  uint64_t read_ns, program_ns, erase_ns;
  uint64_t slc_program_ns, slc_read_ns;  /* blocks in SLC mode (slc.c) */
  unsigned units;
  uint64_t *unit_free;          /* per unit: CLOCK_MONOTONIC ns (atomic) */
};

struct ftl_timing;
extern int timing_init (struct timing *t, const struct ftl_timing *opts);
extern void timing_free (struct timing *t);

/* Reserve the unit of erase block blk for dur ns; returns the modeled
 * start time (the end is start + dur).
 */
extern uint64_t timing_reserve (struct timing *t, uint32_t blk, uint64_t dur);

/* CLOCK_MONOTONIC in ns, and an absolute sleep until such a time. */
extern uint64_t timing_now (void);
extern void timing_sleep_until (uint64_t t);

#endif /* FTL_TIMING_H */
