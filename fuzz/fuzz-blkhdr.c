/* nbdkit-ftl fuzz target: the erase block header decoder
 * (fmt_blkhdr_decode).
 *
 * Input: the bytes of a block header.  Decoded as they are and,
 * resealed, once more; a decoded header must survive a round trip.
 */

#include <config.h>

#include <string.h>

#include "fuzz.h"

static void
decode (const uint8_t *buf, size_t len)
{
  struct ftl_block_header h, h2;
  uint8_t again[FTL_BLKHDR_BYTES];

  if (fmt_blkhdr_decode (buf, len, &h) != FTL_FMT_OK)
    return;
  FUZZ_CHECK (len >= FTL_BLKHDR_BYTES);
  fmt_blkhdr_encode (&h, again);
  FUZZ_CHECK (fmt_blkhdr_decode (again, sizeof again, &h2) == FTL_FMT_OK);
  FUZZ_CHECK (h.erase_count == h2.erase_count &&
              h.erase_seq == h2.erase_seq);
}

static void
reseal (uint8_t *buf, size_t len)
{
  fuzz_reseal_blkhdr (buf);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  return fuzz_decode_twice (data, size, 4 * FTL_BLKHDR_BYTES,
                            FTL_BLKHDR_BYTES, decode, reseal);
}
