/* nbdkit-ftl: power cuts on demand.  See powercut.h. */

#include <config.h>

#include <inttypes.h>
#include <string.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "ftl.h"
#include "powercut.h"

static uint64_t cut_at;                 /* powercut= (0: never) */
static uint64_t seed = 1;               /* powercut-seed= */
static bool tear = true;                /* powercut-tear= */
static uint64_t requests;               /* write requests so far (atomic) */

int
powercut_config (const char *key, const char *value, int *r)
{
  int b;

  *r = 0;
  if (strcmp (key, "powercut") == 0) {
    if (nbdkit_parse_uint64_t (key, value, &cut_at) == -1)
      *r = -1;
    else if (cut_at == 0) {
      nbdkit_error ("powercut must be at least 1 (the first write "
                    "request): %s", value);
      *r = -1;
    }
  }
  else if (strcmp (key, "powercut-seed") == 0) {
    if (nbdkit_parse_uint64_t (key, value, &seed) == -1)
      *r = -1;
  }
  else if (strcmp (key, "powercut-tear") == 0) {
    b = nbdkit_parse_bool (value);
    if (b == -1) {
      nbdkit_error ("powercut-tear must be a boolean: %s", value);
      *r = -1;
    }
    else
      tear = b;
  }
  else
    return 0;
  return 1;
}

bool
powercut_write_request (struct ftl *ftl)
{
  struct ftl_power_cut pc;
  uint64_t n;

  if (cut_at == 0)
    return false;
  n = __atomic_add_fetch (&requests, 1, __ATOMIC_RELAXED);
  if (n != cut_at)
    return ftl_is_powered_off (ftl);
  if (ftl_power_cut (ftl, seed, tear, &pc) == 0) {
    nbdkit_error ("power cut at write request %" PRIu64 " (powercut-seed=%"
                  PRIu64 "): %" PRIu64 " cached pages lost; %" PRIu32
                  " pages were being destaged, %" PRIu32 " of them reached "
                  "the media%s", n, seed, pc.lost_pages, pc.in_flight,
                  pc.programmed, pc.torn ? ", the last one torn" : "");
    nbdkit_shutdown ();
  }
  return true;
}
