/* nbdkit-ftl: the FTL's KEY=VALUE settings, for every front end.
 *
 * The plugin (nbdkit parameters) and ftlctl replay take the same keys,
 * with the same defaults, limits and messages: this module parses them
 * into a struct ftl_options.  A front end passes every key it does not
 * handle itself (file=, stats=, ...) to ftl_keys_set, then calls
 * ftl_keys_finish once, and fills in the rest of the options (path,
 * log callback, ...) before ftl_open.
 *
 * The timing model: model= picks a preset (ftl_timing_preset), whose
 * values are the model's, then each of the model's keys given overrides
 * its own; the preset also sets the write cache and the SLC cache
 * unless their keys are given.  Any key of the model (or model=) turns
 * it on, unless timing=false; timing=true alone uses the default
 * preset.
 *
 * Keys: size, namespaces, placement, op, page-size, pages-per-block, preallocate, sync, streams, gc,
 * gc-mode, hot-cold, wl-threshold, endurance, timeout, timeout-retries,
 * slow-threshold, write-cache, write-cache-bypass, map-cache; the timing model's timing, model,
 * read-latency, program-latency, erase-latency, channels, dies,
 * planes, nand-page, nand-block, channel-rate, host-rate,
 * command-overhead, host-command, suspend, suspend-latency, plp-buffer; the error
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
  const struct ftl_timing_preset *preset;  /* model= (NULL: not given) */
  struct ftl_timing timing_keys;  /* the model's keys given ... */
  unsigned timing_given;        /* ... KEY_* bits of those given */
  unsigned slc_given;           /* KEY_SLC_* bits of the SLC keys given */
  bool write_cache_given, write_cache_bypass_given;
  /* namespaces= (opts.namespaces points here). */
  char ns_names[FTL_MAX_NAMESPACES][FTL_MAX_NAMESPACE_NAME + 1];
  struct ftl_ns_spec ns[FTL_MAX_NAMESPACES];
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
  "namespaces=<NAME:SIZE>[,...]   A new image's namespaces, each an export by name\n" \
  "                               (default: one, \"\", of size=).\n" \
  "placement=shared|isolated|initially-isolated\n" \
  "                               Which namespaces an erase block holds (a new\n" \
  "                               image's; default shared).\n" \
  "op=<PERCENT>                   Over-provisioning of a new image (default 28).\n" \
  "page-size=<SIZE>               Page size of a new image (default 4096).\n" \
  "pages-per-block=<N>            Pages per erase block of a new image (default 256).\n" \
  "preallocate=<BOOL>             Reserve a new image's space (fallocate; default false).\n" \
  "sync=<BOOL>                    Sync the image at flushes (default true; false: like\n" \
  "                               qemu's cache=unsafe, lost if the host crashes).\n" \
  "streams=<N>                    Host write frontiers (default: 1 per 64 spare erase blocks, 1 to 4).\n" \
  "gc=cost-benefit|greedy         Garbage collection victim policy (default cost-benefit).\n" \
  "gc-mode=deadline|watermark     How GC shares the device with requests (default watermark).\n" \
  "hot-cold=auto|true|false       Separate hot from cold data: while the writes show a hot set\n" \
  "                               (default auto), always, or never.\n" \
  "wl-threshold=<N>               Erase count spread that triggers static wear leveling (default 16).\n" \
  "endurance=<N>                  Erases after which an erase block is retired (default 3000).\n" \
  "timeout=<DURATION>             Request deadline, e.g. 500ms (default 30s, 0 = off).\n" \
  "timeout-retries=<N>            Deadline resets of a progressing request (default 3).\n" \
  "slow-threshold=<DURATION>      Slow log: requests at least this long (default timeout/4).\n" \
  "write-cache=<SIZE>             Volatile write cache (default 1/1024 of the disk,\n" \
  "                               1M to 64M; 0 = every write reaches the image).\n" \
  "map-cache=<SIZE>               Memory for the map (default: all of it, at most\n" \
  "                               256M); less makes a new image's map paged.\n" \
  "write-cache-bypass=<SIZE>      Writes of whole pages this large or larger go\n" \
  "                               straight to the image (default 128K, 0 = never).\n" \
  "timing=<BOOL>                  NAND timing model (default false).\n" \
  "model=<NAME>                   Drive preset of the model: sata-tlc (the default),\n" \
  "                               nvme-tlc, sata-qlc, enterprise-tlc.\n" \
  "read-latency=<DURATION>        NAND page read time tR (preset's).\n" \
  "program-latency=<DURATION>     NAND page program time tPROG (preset's).\n" \
  "erase-latency=<DURATION>       NAND block erase time tBERS (preset's).\n" \
  "channels=<N>                   Channels of the model (preset's).\n" \
  "dies=<N>                       Dies per channel of the model (preset's).\n" \
  "planes=<N>                     Planes programmed or read at once (preset's).\n" \
  "nand-page=<SIZE>               NAND page size (preset's).\n" \
  "nand-block=<SIZE>              NAND erase block per die, all planes (preset's).\n" \
  "channel-rate=<SIZE>            Channel transfer rate, bytes/s (preset's).\n" \
  "host-rate=<SIZE>               Host link rate, bytes/s (preset's).\n" \
  "command-overhead=<DURATION>    Controller time per host command (preset's).\n" \
  "host-command=<DURATION>        Host link time per command beside its data (preset's).\n" \
  "suspend=<BOOL>                 Reads suspend programs and erases (preset's).\n" \
  "suspend-latency=<DURATION>     Cost of a suspension (preset's).\n" \
  "plp-buffer=<SIZE>              Power-loss protected buffer of programs (preset's).\n" \
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
  "slc-static=<SIZE>              SLC cache taken from the spare (default 0, or the preset's).\n" \
  "slc-dynamic=<SIZE>|auto|false  SLC cache from free user space (default false, or the preset's).\n" \
  "cell-bits=2|3|4                Bits per cell of native blocks (default 3, or the preset's).\n" \
  "slc-program=<DURATION>         SLC page program time (default program-latency/cell-bits).\n" \
  "slc-read=<DURATION>            SLC page read time (default read-latency).\n" \
  "slc-fold-idle=<DURATION>|never Fold the SLC cache after this idle time (default 200ms).\n"

#endif /* FTL_KEYS_H */
