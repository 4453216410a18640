/* nbdkit-ftl fuzz target: a checkpoint slot, header and body
 * (fmt_ckpt_header_decode, fmt_ckpt_block_decode).
 *
 * Input: the bytes of a slot, header first.  The header is decoded as
 * it is and, resealed (its body checksum too, over as much body as the
 * input holds), once more.  A decoded header must be self-consistent
 * and encode back to the same header; a body that matches its checksum
 * has its block table decoded.  (What recovery then does with the
 * snapshot is fuzzed by fuzz-open.)
 */

#include <config.h>

#include <string.h>

#include "fuzz.h"
#include "util/util.h"

static void
decode (const uint8_t *buf, size_t len)
{
  struct ftl_ckpt_header h, h2;
  uint8_t again[FTL_CKPT_HDR_BYTES];
  enum ftl_fmt_status st;

  st = fmt_ckpt_header_decode (buf, len, &h);
  if (st != FTL_FMT_OK)
    return;
  FUZZ_CHECK (len >= FTL_CKPT_HDR_BYTES);
  FUZZ_CHECK (h.version >= 1 && h.version <= FTL_FORMAT_VERSION);
  FUZZ_CHECK (h.clean <= 1);
  /* The body length is what the counts say, computed without
   * overflow: a reader allocates and walks it.
   */
  FUZZ_CHECK (h.logical_pages < FTL_PAGES_LIMIT);
  FUZZ_CHECK (!h.paged || h.version >= 6);
  FUZZ_CHECK (h.body_bytes == (h.paged
                               ? 24 * ((h.logical_pages + 1023) / 1024)
                               + 16 * (uint64_t) h.blocks + 16
                               : 4 * h.logical_pages
                               + (uint64_t) FTL_CKPT_BLOCK_BYTES * h.blocks));

  fmt_ckpt_header_encode (&h, again);
  FUZZ_CHECK (fmt_ckpt_header_decode (again, sizeof again, &h2)
              == FTL_FMT_OK);
  FUZZ_CHECK (h.version == h2.version && h.generation == h2.generation &&
              h.seq == h2.seq && h.body_bytes == h2.body_bytes &&
              h.body_checksum == h2.body_checksum &&
              h.logical_pages == h2.logical_pages &&
              h.blocks == h2.blocks &&
              h.pages_per_block == h2.pages_per_block &&
              h.clean == h2.clean && h.paged == h2.paged);
  for (int i = 0; i < FTL_CKPT_NCOUNTERS; i++)
    FUZZ_CHECK (h.counters[i] == h2.counters[i]);

  if (len - FTL_CKPT_HDR_BYTES >= h.body_bytes &&
      fmt_checksum (buf + FTL_CKPT_HDR_BYTES, h.body_bytes, 0)
      == h.body_checksum) {
    const uint8_t *table = buf + FTL_CKPT_HDR_BYTES
      + (h.paged ? fmt_ckpt_pblock_offset (h.logical_pages, 0)
         : 4 * h.logical_pages);
    for (uint32_t b = 0; b < h.blocks; b++) {
      struct ftl_ckpt_block cb;
      uint8_t enc[FTL_CKPT_BLOCK_BYTES];
      fmt_ckpt_block_decode (table + (size_t) b * FTL_CKPT_BLOCK_BYTES, &cb);
      fmt_ckpt_block_encode (&cb, enc);
      FUZZ_CHECK (memcmp (enc, table + (size_t) b * FTL_CKPT_BLOCK_BYTES,
                          FTL_CKPT_BLOCK_BYTES) == 0);
    }
  }
}

/* The body's checksum (when the body it names fits), then the
 * header's, which covers it.
 */
static void
reseal (uint8_t *buf, size_t len)
{
  uint64_t body = get64le (buf + 40);

  if (body <= len - FTL_CKPT_HDR_BYTES)
    put64le (buf + 48, fmt_checksum (buf + FTL_CKPT_HDR_BYTES, body, 0));
  fuzz_reseal_ckpt_header (buf);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  return fuzz_decode_twice (data, size, 1 << 20, FTL_CKPT_HDR_BYTES,
                            decode, reseal);
}
