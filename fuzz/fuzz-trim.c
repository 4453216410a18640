/* nbdkit-ftl fuzz target: the trim record page decoder
 * (fmt_trim_page_decode).
 *
 * Input: one byte choosing the page size (512 << (byte % 8)), then the
 * page (cut or padded with zeros to the page size).  Decoded as it is
 * and, resealed, once more.  A decoded page has a count that fits the
 * page, entries that each unmap at least one page, and survives a round
 * trip.
 */

#include <config.h>

#include <string.h>

#include "fuzz.h"

static void
decode (const uint8_t *page, uint32_t page_size,
        struct ftl_trim_entry *e, struct ftl_trim_entry *e2, uint8_t *again)
{
  uint32_t count, count2;

  if (fmt_trim_page_decode (page, page_size, e, &count) != FTL_FMT_OK)
    return;
  FUZZ_CHECK (count >= 1 && count <= fmt_trim_page_capacity (page_size));
  for (uint32_t i = 0; i < count; i++)
    FUZZ_CHECK (e[i].count > 0);
  fmt_trim_page_encode (e, count, again, page_size);
  FUZZ_CHECK (fmt_trim_page_decode (again, page_size, e2, &count2)
              == FTL_FMT_OK);
  FUZZ_CHECK (count2 == count);
  FUZZ_CHECK (memcmp (e, e2, count * sizeof *e) == 0);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  uint32_t page_size, cap;
  uint8_t *page, *again;
  struct ftl_trim_entry *e, *e2;

  if (size < 1 || size > 1 + 65536)
    return -1;
  page_size = 512u << (data[0] % 8);
  cap = fmt_trim_page_capacity (page_size);
  page = calloc (1, page_size);
  again = malloc (page_size);
  e = malloc (cap * sizeof *e);
  e2 = malloc (cap * sizeof *e2);
  if (page && again && e && e2) {
    memcpy (page, data + 1, size - 1 < page_size ? size - 1 : page_size);
    decode (page, page_size, e, e2, again);
    fuzz_reseal_trim_page (page, page_size);
    decode (page, page_size, e, e2, again);
  }
  free (page);
  free (again);
  free (e);
  free (e2);
  return 0;
}
