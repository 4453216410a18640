/* nbdkit-ftl: the FTL's KEY=VALUE settings, for every front end.
 *
 * The plugin (nbdkit parameters) and ftlctl replay take the same keys,
 * with the same defaults, limits and messages: this module parses them
 * into a struct ftl_options.  A front end passes every key it does not
 * handle itself (file=, stats=, ...) to ftl_keys_set, then calls
 * ftl_keys_finish once, and fills in the rest of the options (path,
 * log callback, ...) before ftl_open.
 *
 * Keys: size, op, page-size, pages-per-block, streams, gc, gc-mode,
 * hot-cold, wl-threshold, endurance, timeout, timeout-retries,
 * write-cache; the timing model's timing, read-latency,
 * program-latency, erase-latency, channels, dies; and the error
 * model's errors, seed, time-scale, error-scale, read-disturb-scale,
 * ecc-bits, read-retry, read-reclaim, reclaim-reads, scrub-interval;
 * and the SLC cache's slc-static, slc-dynamic, cell-bits, slc-program,
 * slc-read, slc-fold-idle.
 *
 * Every message names the key and the value it refused.  Nothing here
 * touches an image: a bad key is refused before anything is opened.
 */

#ifndef FTL_KEYS_H
#define FTL_KEYS_H

#include <stdbool.h>
#include <stddef.h>

#include "ftl.h"

struct ftl_keys {
  struct ftl_options opts;      /* what the keys set, with the defaults */
  int timing;                   /* timing=: -1 not given, else 0 or 1 */
  bool timing_implied;          /* a latency, channels= or dies= given:
                                 * the model is on unless timing=false */
};

/* The defaults of every key. */
extern void ftl_keys_init (struct ftl_keys *k);

/* One KEY=VALUE.  Returns 1 if key is one of the FTL's and value is
 * valid, 0 if key is not one of them (the caller's, or unknown), and
 * -1 if value is not valid for key (err says why).
 */
extern int ftl_keys_set (struct ftl_keys *k, const char *key,
                         const char *value, char *err, size_t errlen);

/* After the last key: the settings that depend on each other.  0, or
 * -1 with err set.
 */
extern int ftl_keys_finish (struct ftl_keys *k, char *err, size_t errlen);

/* Parsers of the value kinds, with the same messages (each starts
 * with the key).  0, or -1 with err set.
 */
extern int ftl_parse_size (const char *key, const char *s, uint64_t *r,
                           char *err, size_t errlen);
extern int ftl_parse_bool (const char *key, const char *s, bool *r,
                           char *err, size_t errlen);

/* One line per key, as nbdkit's --help shows a plugin's. */
#define FTL_KEYS_HELP \
  "size=<SIZE>                    Disk size (required to create an image).\n" \
  "op=<PERCENT>                   Over-provisioning of a new image (default 28).\n" \
  "page-size=<SIZE>               Page size of a new image (default 4096).\n" \
  "pages-per-block=<N>            Pages per erase block of a new image (default 256).\n" \
  "streams=<N>                    Host write frontiers (default: 1 per 64 spare erase blocks, 1 to 4).\n" \
  "gc=cost-benefit|greedy         Garbage collection victim policy (default cost-benefit).\n" \
  "gc-mode=deadline|watermark     How GC shares the device with requests (default watermark).\n" \
  "hot-cold=<BOOL>                Separate hot from cold data (default true).\n" \
  "wl-threshold=<N>               Erase count spread that triggers static wear leveling (default 16).\n" \
  "endurance=<N>                  Erases after which an erase block is retired (default 3000).\n" \
  "timeout=<DURATION>             Request deadline, e.g. 500ms (default 30s, 0 = off).\n" \
  "timeout-retries=<N>            Deadline resets of a progressing request (default 3).\n" \
  "write-cache=<SIZE>             Volatile write cache (default 1/1024 of the disk,\n" \
  "                               1M to 64M; 0 = every write reaches the image).\n" \
  "timing=<BOOL>                  NAND timing model (default false).\n" \
  "read-latency=<DURATION>        Page read time of the model (default 75us).\n" \
  "program-latency=<DURATION>     Page program time of the model (default 1ms).\n" \
  "erase-latency=<DURATION>       Block erase time of the model (default 4500us).\n" \
  "channels=<N>                   Channels of the model (default 8).\n" \
  "dies=<N>                       Dies per channel of the model (default 4).\n" \
  "errors=<BOOL>                  Raw bit errors, ECC and read retry (default false).\n" \
  "seed=<N>                       Seed of the error model's draws (default 0).\n" \
  "time-scale=<F>                 Media clock seconds per second (default 1).\n" \
  "error-scale=<F>                Multiply every raw bit error rate (default 1).\n" \
  "read-disturb-scale=<F>         Multiply the read disturb rate (default 1).\n" \
  "ecc-bits=<N>                   Bits ECC corrects per 1 KiB codeword (default 72).\n" \
  "read-retry=<N>                 Read retry steps (default 8).\n" \
  "read-reclaim=<BOOL>            Move data off blocks read too often (default true).\n" \
  "reclaim-reads=<N>              Page reads of a block before read reclaim (default 100000).\n" \
  "scrub-interval=<DURATION>      Idle scrub: one block per interval (default 1s, 0 = off).\n" \
  "slc-static=<SIZE>              SLC cache taken from the spare (default 0).\n" \
  "slc-dynamic=<SIZE>|auto|false  SLC cache from free user space (default false).\n" \
  "cell-bits=2|3|4                Bits per cell of native blocks (default 3).\n" \
  "slc-program=<DURATION>         SLC page program time (default program-latency/cell-bits).\n" \
  "slc-read=<DURATION>            SLC page read time (default read-latency).\n" \
  "slc-fold-idle=<DURATION>|never Fold the SLC cache after this idle time (default 200ms).\n"

#endif /* FTL_KEYS_H */
