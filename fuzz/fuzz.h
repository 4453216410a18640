/* nbdkit-ftl fuzz targets: helpers shared by the targets.
 *
 * Every target is a libFuzzer entry point (LLVMFuzzerTestOneInput) that
 * must never crash, hang or leak whatever bytes it is given.  A decoder
 * stops most mutated inputs at its checksum, which a fuzzer cannot
 * forge; so each target also feeds the decoder a copy of the input
 * whose checksums are recomputed ("resealed"), which reaches the
 * validation of every field behind the checksum.
 *
 * FUZZ_CHECK (cond) aborts, which libFuzzer reports as a crash with the
 * input that caused it: it states what a decoder promises.
 */

#ifndef FTL_FUZZ_H
#define FTL_FUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/format.h"
#include "util/util.h"

#define FUZZ_CHECK(cond)                                                \
  do {                                                                  \
    if (!(cond)) {                                                      \
      fprintf (stderr, "%s:%d: %s: check failed: %s\n",                 \
               __FILE__, __LINE__, __func__, #cond);                    \
      abort ();                                                         \
    }                                                                   \
  } while (0)

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Recompute the checksum of an encoded structure of len bytes whose
 * 64 bit checksum field is at csum_off (superblock, checkpoint header):
 * the checksum of the bytes with that field taken as zero.
 */
static inline void
fuzz_reseal_struct (uint8_t *buf, size_t len, size_t csum_off)
{
  put64le (buf + csum_off, 0);
  put64le (buf + csum_off, fmt_checksum (buf, len, 0));
}

/* A superblock's encoded length depends on its version (format.h). */
static inline void
fuzz_reseal_sb (uint8_t *buf)
{
  fuzz_reseal_struct (buf, fmt_sb_bytes (get32le (buf + 8)), 16);
}

static inline void
fuzz_reseal_ckpt_header (uint8_t *buf)
{
  fuzz_reseal_struct (buf, FTL_CKPT_HDR_BYTES, 16);
}

static inline void
fuzz_reseal_blkhdr (uint8_t *buf)
{
  put64le (buf + 24, fmt_checksum (buf, 24, 0));
}

/* An OOB entry's checksum is 32 bits at offset 20, of the entry with
 * those bytes zero.
 */
static inline void
fuzz_reseal_oob (uint8_t *buf)
{
  put32le (buf + 20, 0);
  put32le (buf + 20, (uint32_t) fmt_checksum (buf, FTL_OOB_BYTES, 0));
}

/* A trim page's checksum covers its entries (as many as its count says,
 * bounded by what fits), seeded with the first 8 header bytes.
 */
static inline void
fuzz_reseal_trim_page (uint8_t *page, uint32_t page_size)
{
  uint32_t count = get32le (page);
  uint32_t cap = fmt_trim_page_capacity (page_size);

  if (count > cap)
    count = cap;
  put64le (page + 8, fmt_checksum (page + FTL_TRIM_HDR_BYTES,
                                      (size_t) count * FTL_TRIM_ENTRY_BYTES,
                                      get64le (page)));
}

/* The entry point of a target for one structure: inputs over max bytes
 * are rejected (-1: not kept in the corpus); the input is decoded from
 * an exact copy, so that a read beyond size is caught, then, if it has
 * at least min bytes, resealed and decoded again.
 */
static inline int
fuzz_decode_twice (const uint8_t *data, size_t size, size_t max, size_t min,
                   void (*decode) (const uint8_t *buf, size_t len),
                   void (*reseal) (uint8_t *buf, size_t len))
{
  uint8_t *copy;

  if (size > max)
    return -1;
  copy = malloc (size ? size : 1);
  if (!copy)
    return 0;
  memcpy (copy, data, size);
  decode (copy, size);
  if (size >= min) {
    reseal (copy, size);
    decode (copy, size);
  }
  free (copy);
  return 0;
}

#endif /* FTL_FUZZ_H */
