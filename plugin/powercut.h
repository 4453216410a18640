/* nbdkit-ftl: power cuts on demand (powercut=, powercut-seed=,
 * powercut-tear=).
 *
 * powercut=N cuts the power when the N-th write request (write, write
 * zeroes or trim) arrives: that request and every one after it fail
 * with EIO, the library loses what its write cache held but for the
 * destage writes in flight (ftl_power_cut), and the server shuts down,
 * as a drive that was unplugged.  The cut is reported on stderr.
 */

#ifndef NBDKIT_FTL_POWERCUT_H
#define NBDKIT_FTL_POWERCUT_H

#include <stdbool.h>

struct ftl;

/* Parse a powercut key: 1 if key is one (0 on success, -1 after
 * nbdkit_error, in *r), 0 if it is not.
 */
extern int powercut_config (const char *key, const char *value, int *r);

/* Called at the start of every write request: true if the power is off
 * (cut now, or before), and the request must fail with EIO.
 */
extern bool powercut_write_request (struct ftl *ftl);

#define POWERCUT_CONFIG_HELP \
  "powercut=<N>                   Cut the power at the N-th write request.\n" \
  "powercut-seed=<N>              Seed of what the cut keeps (default 1).\n" \
  "powercut-tear=<BOOL>           Tear the last page programmed (default true)."

#endif /* NBDKIT_FTL_POWERCUT_H */
