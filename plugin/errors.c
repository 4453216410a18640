/* nbdkit-ftl: the keys of media that ages.  See errors.h. */

#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "errors.h"

static struct ftl_errors errors;

/* A positive decimal number up to max. */
static int
parse_factor (const char *key, const char *value, double max, double *r)
{
  char *end;
  double d;

  errno = 0;
  d = strtod (value, &end);
  if (errno != 0 || end == value || *end != '\0' || !isfinite (d) ||
      d <= 0 || d > max) {
    nbdkit_error ("%s must be a number above 0 and at most %g: %s",
                  key, max, value);
    return -1;
  }
  *r = d;
  return 0;
}

/* An integer from min to max. */
static int
parse_range (const char *key, const char *value, uint32_t min, uint32_t max,
             uint32_t *r)
{
  uint32_t v;

  if (nbdkit_parse_uint32_t (key, value, &v) == -1)
    return -1;
  if (v < min || v > max) {
    nbdkit_error ("%s must be from %u to %u: %s", key, min, max, value);
    return -1;
  }
  *r = v;
  return 0;
}

int
errors_config (const char *key, const char *value, int *r)
{
  char err[128];
  int b;

  *r = 0;
  if (strcmp (key, "errors") == 0 || strcmp (key, "read-reclaim") == 0) {
    b = nbdkit_parse_bool (value);
    if (b == -1)
      *r = -1;
    else if (key[0] == 'e')
      errors.enabled = b;
    else
      errors.no_reclaim = !b;
  }
  else if (strcmp (key, "seed") == 0)
    *r = nbdkit_parse_uint64_t (key, value, &errors.seed);
  else if (strcmp (key, "time-scale") == 0)
    *r = parse_factor (key, value, FTL_MAX_TIME_SCALE, &errors.time_scale);
  else if (strcmp (key, "error-scale") == 0)
    *r = parse_factor (key, value, 1e6, &errors.scale);
  else if (strcmp (key, "read-disturb-scale") == 0)
    *r = parse_factor (key, value, 1e9, &errors.disturb);
  else if (strcmp (key, "ecc-bits") == 0)
    *r = parse_range (key, value, 1, 8192, &errors.ecc_bits);
  else if (strcmp (key, "read-retry") == 0)
    *r = parse_range (key, value, 1, 64, &errors.retry_steps);
  else if (strcmp (key, "reclaim-reads") == 0)
    *r = parse_range (key, value, 1, UINT32_MAX, &errors.reclaim_reads);
  else if (strcmp (key, "scrub-interval") == 0) {
    uint64_t ns;
    if (ftl_parse_duration (value, &ns, err, sizeof err) < 0) {
      nbdkit_error ("scrub-interval: %s", err);
      *r = -1;
    }
    else
      errors.scrub_ns = ns == 0 ? UINT64_MAX : ns;
  }
  else
    return 0;
  return 1;
}

const struct ftl_errors *
errors_options (void)
{
  return &errors;
}
