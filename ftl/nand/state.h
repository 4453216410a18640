/* nbdkit-ftl: the SLC cache's state, as the handle holds it (slc.c).
 * The media's, the timing model's and the error model's own state are
 * declared in media.h, timing.h and errmodel.h.
 */
#ifndef FTL_NAND_STATE_H
#define FTL_NAND_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

/* The SLC cache (slc.c). */
struct slc {
  bool enabled;                 /* set at open */
  unsigned bits;                /* bits per cell of native blocks */
  uint32_t cap;                 /* pages an SLC block holds */
  uint32_t static_blocks;       /* from the spare */
  uint64_t dynamic_max;         /* blocks at most from free user space
                                 * (UINT64_MAX: no limit) */
  uint64_t fold_idle_ns;        /* fold after writes paused this long */
  uint32_t used;                /* blocks in SLC mode, OPEN or FULL:
                                 * under alloc_lock, read atomic */
  bool exhausted;               /* the last host block was native for
                                 * want of budget: under alloc_lock */
  uint64_t last_write_ns;       /* atomic: a host frontier's last
                                 * program (CLOCK_MONOTONIC) */
  /* Counters since open (atomic). */
  uint64_t folded, exhaustions;
};

#endif /* FTL_NAND_STATE_H */
