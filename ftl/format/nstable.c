/* nbdkit-ftl: encoding and validation of the namespace table (format
 * version 8), which each superblock slot holds after its superblock.
 * See format.h for its layout, and host/ns.c for what namespaces are.
 * Pure functions, as the rest of format/.
 */

#include <config.h>

#include <assert.h>
#include <stdio.h>
#include <string.h>

#include "ftl.h"
#include "format/format.h"
#include "util/util.h"

_Static_assert (FTL_SB_BYTES <= FTL_NS_OFFSET &&
                FTL_NS_OFFSET + FTL_NS_MAX_BYTES <= FTL_DURABLE_OFFSET,
                "the table lies between the superblock and the durable "
                "point in the slot");

static const char *const placement_names[FTL_PLACEMENT__MAX] = {
  [FTL_PLACEMENT_SHARED] = "shared",
  [FTL_PLACEMENT_ISOLATED] = "isolated",
  [FTL_PLACEMENT_INITIALLY_ISOLATED] = "initially-isolated",
};

const char *
ftl_placement_name (unsigned m)
{
  return m < FTL_PLACEMENT__MAX ? placement_names[m] : "?";
}

int
ftl_placement_from_name (const char *name)
{
  for (unsigned m = 0; m < FTL_PLACEMENT__MAX; m++)
    if (strcmp (name, placement_names[m]) == 0)
      return m;
  return -1;
}

bool
fmt_ns_name_ok (const char *name, size_t len)
{
  if (len == 0 || len > FTL_NS_NAME_MAX)
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
          (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-'))
      return false;
  }
  return true;
}

void
fmt_ns_default (const struct ftl_superblock *sb, struct ftl_ns_table *t)
{
  memset (t, 0, sizeof *t);
  t->version = sb->version;
  t->count = 1;
  t->ns[0].bytes = sb->logical_bytes;
}

uint32_t
fmt_ns_bytes (const struct ftl_ns_table *t)
{
  return FTL_NS_HDR_BYTES + t->count * FTL_NS_ENTRY_BYTES;
}

/* The checksum of an encoded table of len bytes, its checksum field
 * taken as zero.
 */
static uint64_t
ns_checksum (const uint8_t *buf, uint32_t len)
{
  uint8_t tmp[FTL_NS_MAX_BYTES];

  assert (len <= sizeof tmp);
  memcpy (tmp, buf, len);
  memset (tmp + 16, 0, 8);
  return fmt_checksum (tmp, len, 0);
}

uint32_t
fmt_ns_encode (const struct ftl_ns_table *t, uint8_t *buf)
{
  uint32_t len = fmt_ns_bytes (t);
  uint64_t sum;

  assert (t->count >= 1 && t->count <= FTL_NS_MAX);
  memset (buf, 0, len);
  memcpy (buf, FTL_NS_MAGIC, 8);
  put32le (buf + 8, FTL_FORMAT_VERSION);
  put32le (buf + 12, len);
  put32le (buf + 24, t->count);
  put32le (buf + 28, t->placement);
  for (uint32_t i = 0; i < t->count; i++) {
    const struct ftl_ns_entry *e = &t->ns[i];
    uint8_t *p = buf + FTL_NS_HDR_BYTES + i * FTL_NS_ENTRY_BYTES;
    size_t n = strnlen (e->name, FTL_NS_NAME_MAX);
    put64le (p, e->bytes);
    put64le (p + 8, e->base);
    put32le (p + 16, e->flags);
    put32le (p + 20, n);
    memcpy (p + 24, e->name, n);
  }
  sum = ns_checksum (buf, len);
  put64le (buf + 16, sum);
  return (uint32_t) sum;
}

bool
fmt_ns_check (const struct ftl_ns_table *t, uint32_t page_size,
              uint64_t logical_bytes, char *why, size_t whylen)
{
  uint64_t lpages = logical_bytes / page_size;

#define BAD(...) do { if (why) snprintf (why, whylen, __VA_ARGS__); \
                      return false; } while (0)
  if (t->count < 1 || t->count > FTL_NS_MAX)
    BAD ("%u namespaces (1 to %u)", t->count, FTL_NS_MAX);
  if (t->placement >= FTL_PLACEMENT__MAX)
    BAD ("unknown placement %u", t->placement);
  for (uint32_t i = 0; i < t->count; i++) {
    const struct ftl_ns_entry *e = &t->ns[i];
    if (!fmt_ns_name_ok (e->name, strnlen (e->name, FTL_NS_NAME_MAX + 1)))
      BAD ("namespace %u: bad name", i);
    if (e->flags != 0)
      BAD ("namespace '%s': unknown flags 0x%x", e->name, e->flags);
    if (e->bytes == 0 || e->bytes % page_size != 0)
      BAD ("namespace '%s': size %" PRIu64 " is not a positive multiple "
           "of the page size %u", e->name, e->bytes, page_size);
    if (e->base > lpages || e->bytes / page_size > lpages - e->base)
      BAD ("namespace '%s': pages %" PRIu64 " to %" PRIu64 " are beyond "
           "the logical size (%" PRIu64 " pages)", e->name, e->base,
           e->base + e->bytes / page_size, lpages);
    for (uint32_t j = 0; j < i; j++) {
      const struct ftl_ns_entry *f = &t->ns[j];
      if (strcmp (e->name, f->name) == 0)
        BAD ("two namespaces named '%s'", e->name);
      if (e->base < f->base + f->bytes / page_size &&
          f->base < e->base + e->bytes / page_size)
        BAD ("namespaces '%s' and '%s' overlap", f->name, e->name);
    }
  }
#undef BAD
  return true;
}

enum ftl_fmt_status
fmt_ns_decode (const uint8_t *buf, size_t len,
               const struct ftl_superblock *sb, struct ftl_ns_table *out,
               char *why, size_t whylen)
{
  struct ftl_ns_table t;
  uint32_t length;
  uint64_t sum;

  if (why && whylen) why[0] = '\0';
  if (len < FTL_NS_HDR_BYTES)
    return FTL_FMT_BAD_LENGTH;
  if (all_zero (buf, FTL_NS_HDR_BYTES))
    return FTL_FMT_EMPTY;
  if (memcmp (buf, FTL_NS_MAGIC, 8) != 0)
    return FTL_FMT_BAD_MAGIC;
  memset (&t, 0, sizeof t);
  t.version = get32le (buf + 8);
  if (t.version > FTL_FORMAT_VERSION)
    return FTL_FMT_BAD_VERSION;
  length = get32le (buf + 12);
  t.count = get32le (buf + 24);
  if (t.count < 1 || t.count > FTL_NS_MAX || length != fmt_ns_bytes (&t) ||
      len < length)
    return FTL_FMT_BAD_LENGTH;
  sum = ns_checksum (buf, length);
  if (get64le (buf + 16) != sum)
    return FTL_FMT_BAD_CHECKSUM;
  if (t.version < 8) {
    if (why)
      snprintf (why, whylen, "namespace table of format version %u",
                t.version);
    return FTL_FMT_BAD_FIELD;
  }
  if ((uint32_t) sum != sb->ns_check) {
    if (why)
      snprintf (why, whylen, "the namespace table is not the superblock's "
                "(checksum %08x, the superblock names %08x)",
                (uint32_t) sum, sb->ns_check);
    return FTL_FMT_BAD_CHECKSUM;
  }
  t.placement = get32le (buf + 28);
  if (t.placement >= FTL_PLACEMENT__MAX) {
    if (why)
      snprintf (why, whylen, "namespace table: unknown placement %u",
                t.placement);
    return FTL_FMT_BAD_FIELD;
  }
  for (uint32_t i = 0; i < t.count; i++) {
    const uint8_t *p = buf + FTL_NS_HDR_BYTES + i * FTL_NS_ENTRY_BYTES;
    struct ftl_ns_entry *e = &t.ns[i];
    uint32_t n = get32le (p + 20);
    e->bytes = get64le (p);
    e->base = get64le (p + 8);
    e->flags = get32le (p + 16);
    if (n == 0 || n > FTL_NS_NAME_MAX ||
        !all_zero (p + 24 + n, FTL_NS_ENTRY_BYTES - 24 - n)) {
      if (why)
        snprintf (why, whylen, "namespace %u: name length %u (1 to %u, "
                  "then zeros)", i, n, FTL_NS_NAME_MAX);
      return FTL_FMT_BAD_FIELD;
    }
    if (!fmt_ns_name_ok ((const char *) p + 24, n)) {
      if (why)
        snprintf (why, whylen, "namespace %u: bad name", i);
      return FTL_FMT_BAD_FIELD;
    }
    memcpy (e->name, p + 24, n);
    e->name[n] = '\0';
  }
  if (!fmt_ns_check (&t, sb->page_size, sb->logical_bytes, why, whylen))
    return FTL_FMT_BAD_FIELD;
  *out = t;
  return FTL_FMT_OK;
}
