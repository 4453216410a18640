/* nbdkit-ftl: parsing the values of settings.  Declared in ftl.h (the
 * tools and the plugin parse durations the same way as the library).
 */

#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl.h"

int
ftl_parse_duration (const char *s, uint64_t *ns, char *err, size_t errlen)
{
  const char *p = s;
  char *end;
  double v, mult;

  if (errlen) err[0] = '\0';
  while (*p == ' ' || *p == '\t')
    p++;
  if (*p == '-' || *p == '+' || !((*p >= '0' && *p <= '9') || *p == '.')) {
    if (errlen)
      snprintf (err, errlen, "'%s' is not a duration (a number with a unit: "
                "us, ms or s)", s);
    return -EINVAL;
  }
  errno = 0;
  v = strtod (p, &end);
  if (errno != 0 || end == p || !isfinite (v)) {
    if (errlen)
      snprintf (err, errlen, "'%s' is not a duration (a number with a unit: "
                "us, ms or s)", s);
    return -EINVAL;
  }
  if (strcmp (end, "us") == 0)
    mult = 1e3;
  else if (strcmp (end, "ms") == 0)
    mult = 1e6;
  else if (strcmp (end, "s") == 0)
    mult = 1e9;
  else if (*end == '\0' && v == 0)
    mult = 0;                   /* a plain 0 needs no unit */
  else {
    if (errlen) {
      if (*end == '\0')
        snprintf (err, errlen, "duration '%s' has no unit (us, ms or s)", s);
      else
        snprintf (err, errlen, "duration '%s' has an unknown unit '%s' (us, "
                  "ms or s)", s, end);
    }
    return -EINVAL;
  }
  v *= mult;
  if (v > (double) FTL_MAX_DURATION_NS) {
    if (errlen)
      snprintf (err, errlen, "duration '%s' is too long (at most %d s)", s,
                (int) (FTL_MAX_DURATION_NS / 1000000000));
    return -ERANGE;
  }
  *ns = (uint64_t) (v + 0.5);
  return 0;
}
