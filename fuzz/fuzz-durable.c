/* nbdkit-ftl fuzz target: the durable-point record decoder
 * (fmt_durable_decode).
 *
 * Input: the bytes of a record.  Decoded as they are and, resealed, once
 * more; a decoded record must survive a round trip.
 */

#include <config.h>

#include <string.h>

#include "fuzz.h"

static void
decode (const uint8_t *buf, size_t len)
{
  struct ftl_durable d, d2;
  uint8_t again[FTL_DURABLE_BYTES];

  if (fmt_durable_decode (buf, len, &d) != FTL_FMT_OK)
    return;
  FUZZ_CHECK (len >= FTL_DURABLE_BYTES);
  FUZZ_CHECK (d.version >= 1 && d.version <= FTL_FORMAT_VERSION);
  fmt_durable_encode (&d, again);
  FUZZ_CHECK (fmt_durable_decode (again, sizeof again, &d2) == FTL_FMT_OK);
  FUZZ_CHECK (d.generation == d2.generation && d.seq == d2.seq &&
              d.uuid[0] == d2.uuid[0] && d.uuid[1] == d2.uuid[1]);
}

static void
reseal (uint8_t *buf, size_t len)
{
  fuzz_reseal_struct (buf, FTL_DURABLE_BYTES, 16);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  return fuzz_decode_twice (data, size, 4 * FTL_DURABLE_BYTES,
                            FTL_DURABLE_BYTES, decode, reseal);
}
