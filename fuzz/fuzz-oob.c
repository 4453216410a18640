/* nbdkit-ftl fuzz target: the OOB entry decoder (fmt_oob_decode).
 *
 * Input: the bytes of an OOB entry.  Decoded as they are and, resealed,
 * once more; a decoded entry has a known kind and survives a round
 * trip.
 */

#include <config.h>

#include <string.h>

#include "fuzz.h"

static void
decode (const uint8_t *buf, size_t len)
{
  struct ftl_oob o, o2;
  uint8_t again[FTL_OOB_BYTES];

  if (fmt_oob_decode (buf, len, &o) != FTL_FMT_OK)
    return;
  FUZZ_CHECK (len >= FTL_OOB_BYTES);
  FUZZ_CHECK (o.kind == FTL_OOB_DATA || o.kind == FTL_OOB_TRIM ||
              o.kind == FTL_OOB_POISON || o.kind == FTL_OOB_MAP);
  fmt_oob_encode (&o, again);
  FUZZ_CHECK (fmt_oob_decode (again, sizeof again, &o2) == FTL_FMT_OK);
  FUZZ_CHECK (o.kind == o2.kind && o.lpn == o2.lpn &&
              o.trim_entries == o2.trim_entries && o.seq == o2.seq &&
              o.erase_count == o2.erase_count &&
              o.data_checksum == o2.data_checksum);
}

static void
reseal (uint8_t *buf, size_t len)
{
  fuzz_reseal_oob (buf);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  return fuzz_decode_twice (data, size, 4 * FTL_OOB_BYTES, FTL_OOB_BYTES,
                            decode, reseal);
}
