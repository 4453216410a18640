/* nbdkit-ftl: the keys of media that ages: errors=, seed=, time-scale=,
 * error-scale=, read-disturb-scale=, ecc-bits=, read-retry=,
 * read-reclaim=, reclaim-reads=, scrub-interval=.
 *
 * They fill a struct ftl_errors for ftl_open (see ftl.h and the man
 * page's MEDIA ERRORS).
 */

#ifndef NBDKIT_FTL_ERRORS_H
#define NBDKIT_FTL_ERRORS_H

#include "ftl.h"

/* Parse an error model key: 1 if key is one (0 on success, -1 after
 * nbdkit_error, in *r), 0 if it is not.
 */
extern int errors_config (const char *key, const char *value, int *r);

/* The settings given. */
extern const struct ftl_errors *errors_options (void);

#define ERRORS_CONFIG_HELP \
  "errors=<BOOL>                  Raw bit errors, ECC and read retry (default false).\n" \
  "seed=<N>                       Seed of the error model's draws (default 0).\n" \
  "time-scale=<F>                 Media clock seconds per second (default 1).\n" \
  "error-scale=<F>                Multiply every raw bit error rate (default 1).\n" \
  "read-disturb-scale=<F>         Multiply the read disturb rate (default 1).\n" \
  "ecc-bits=<N>                   Bits ECC corrects per 1 KiB codeword (default 72).\n" \
  "read-retry=<N>                 Read retry steps (default 8).\n" \
  "read-reclaim=<BOOL>            Move data off blocks read too often (default true).\n" \
  "reclaim-reads=<N>              Page reads of a block before read reclaim (default 100000).\n" \
  "scrub-interval=<DURATION>      Idle scrub: one block per interval (default 1s, 0 = off).\n"

#endif /* NBDKIT_FTL_ERRORS_H */
