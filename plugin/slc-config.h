/* nbdkit-ftl: the SLC cache's keys (slc-static=, slc-dynamic=,
 * cell-bits=, slc-program=, slc-read=, slc-fold-idle=); see ftl/slc.c
 * and the man page, SLC CACHE.
 */

#ifndef NBDKIT_FTL_SLC_CONFIG_H
#define NBDKIT_FTL_SLC_CONFIG_H

struct ftl_slc;

/* Parse an SLC cache key: 1 if key is one (0 on success, -1 after
 * nbdkit_error, in *r), 0 if it is not.
 */
extern int slc_config (const char *key, const char *value, int *r);

/* The options parsed (zeros: the cache is off). */
extern const struct ftl_slc *slc_options (void);

#define SLC_CONFIG_HELP \
  "slc-static=<SIZE>              SLC cache taken from the spare (default 0).\n" \
  "slc-dynamic=<SIZE>|auto|false  SLC cache from free user space (default false).\n" \
  "cell-bits=2|3|4                Bits per cell of native blocks (default 3).\n" \
  "slc-program=<DURATION>         SLC page program time (default program-latency/cell-bits).\n" \
  "slc-read=<DURATION>            SLC page read time (default read-latency).\n" \
  "slc-fold-idle=<DURATION>|never Fold the SLC cache after this idle time (default 200ms).\n"

#endif /* NBDKIT_FTL_SLC_CONFIG_H */
