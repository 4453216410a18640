/* nbdkit-ftl: the SLC cache's keys.  See slc-config.h. */

#include <config.h>

#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "ftl.h"
#include "slc-config.h"

static struct ftl_slc slc;

/* A size key: bytes, or (if allow_auto) auto/true (FTL_SLC_AUTO) and
 * false (0).
 */
static int
parse_slc_size (const char *key, const char *value, bool allow_auto,
                uint64_t *out)
{
  int64_t v;

  if (allow_auto) {
    if (strcmp (value, "auto") == 0) {
      *out = FTL_SLC_AUTO;
      return 0;
    }
    static const char *const yes[] = { "true", "on", "yes" };
    static const char *const no[] = { "false", "off", "no" };
    for (size_t i = 0; i < 3; i++) {
      if (strcasecmp (value, yes[i]) == 0) {
        *out = FTL_SLC_AUTO;
        return 0;
      }
      if (strcasecmp (value, no[i]) == 0) {
        *out = 0;
        return 0;
      }
    }
  }
  v = nbdkit_parse_size (value);
  if (v == -1) {
    nbdkit_error ("%s must be a size%s: %s", key,
                  allow_auto ? ", auto or false" : "", value);
    return -1;
  }
  *out = v;
  return 0;
}

static int
parse_ns (const char *key, const char *value, uint64_t *ns)
{
  char err[256];

  if (ftl_parse_duration (value, ns, err, sizeof err) < 0) {
    nbdkit_error ("%s: %s", key, err);
    return -1;
  }
  if (*ns == 0) {
    nbdkit_error ("%s must be more than 0: %s", key, value);
    return -1;
  }
  return 0;
}

int
slc_config (const char *key, const char *value, int *r)
{
  *r = 0;
  if (strcmp (key, "slc-static") == 0)
    *r = parse_slc_size (key, value, false, &slc.static_bytes);
  else if (strcmp (key, "slc-dynamic") == 0)
    *r = parse_slc_size (key, value, true, &slc.dynamic_bytes);
  else if (strcmp (key, "cell-bits") == 0) {
    if (nbdkit_parse_unsigned (key, value, &slc.cell_bits) == -1)
      *r = -1;
    else if (slc.cell_bits < 2 || slc.cell_bits > 4) {
      nbdkit_error ("cell-bits must be 2 (MLC), 3 (TLC) or 4 (QLC): %s",
                    value);
      *r = -1;
    }
  }
  else if (strcmp (key, "slc-program") == 0)
    *r = parse_ns (key, value, &slc.program_ns);
  else if (strcmp (key, "slc-read") == 0)
    *r = parse_ns (key, value, &slc.read_ns);
  else if (strcmp (key, "slc-fold-idle") == 0) {
    if (strcmp (value, "never") == 0)
      slc.fold_idle_ns = UINT64_MAX;
    else
      *r = parse_ns (key, value, &slc.fold_idle_ns);
  }
  else
    return 0;
  return 1;
}

const struct ftl_slc *
slc_options (void)
{
  return &slc;
}
