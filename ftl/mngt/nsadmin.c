/* nbdkit-ftl: namespace management at rest (ftl_ns_create,
 * ftl_ns_delete; ftlctl ns-add and ns-delete), as NVMe's namespace
 * management commands do on a drive.
 *
 * Owns the changes of the image's namespace table (format.h) after its
 * creation.  A change is made on a handle that nothing else uses: open
 * read-write (so under the image's exclusive lock, which a server
 * holds while it serves), no request in flight, no background thread,
 * and no namespace handle kept across it (ftl->ns[] is rebuilt).
 *
 * A new table is committed by one superblock write (ckpt.c): the
 * superblock goes to the older of the two slots with the next
 * generation and the table after it, which it names by its checksum,
 * then a sync.  A power cut while that slot is written leaves it torn
 * (the superblock or the table fails its checksum, or the superblock
 * names another table), and the open takes the other slot, which holds
 * the old table; once the sync returns, the new one is the image's.
 * Either table, never a mix:
 *
 *   add      trim the new range (it may hold what no namespace
 *            reads), flush, then commit the table with the entry last
 *   delete   trim every page of the namespace, flush (its trims are
 *            durable), then commit the table without it
 *
 * A delete cut short before its commit leaves the namespace listed,
 * with some or all of its pages trimmed: deleting it again finishes.
 * Bases are logical pages; a namespace is one range of them, so an add
 * takes the lowest free range that holds it (first fit), and free
 * space split between ranges cannot hold a larger one.
 *
 * The request is checked before anything is written, on a read-only
 * handle too (which then returns -EROFS): a caller can learn whether
 * it would be refused, and why, without writing to the image.
 *
 * Locks: ckpt_lock around the commit, as for every superblock write;
 * the trims and the flush are requests (request.c).
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

/* A trim of this much at most per request. */
#define NS_TRIM_CHUNK (UINT64_C (1) << 30)

/* Namespace i's pages: [base, end). */
static uint64_t
ns_end (const struct ftl *ftl, const struct ftl_ns_entry *e)
{
  return e->base + e->bytes / ftl->page_size;
}

/* The pages a namespace may take: whole pages of the logical size. */
static uint64_t
ns_pages (const struct ftl *ftl)
{
  return ftl->logical_bytes / ftl->page_size;
}

/* The free ranges of the logical space (pages no namespace holds):
 * the lowest one of at least need pages into *base (returns true), the
 * sum of all into *free_pages and the largest into *largest.
 */
static bool
ns_find_free (const struct ftl *ftl, uint64_t need, uint64_t *base,
              uint64_t *free_pages, uint64_t *largest)
{
  const struct ftl_ns_table *t = &ftl->ns_table;
  uint64_t at = 0;
  bool found = false;

  *free_pages = *largest = 0;
  /* From page 0 up: the next namespace at or after at, the gap before
   * it, then on from its end (the ranges do not overlap).
   */
  for (;;) {
    const struct ftl_ns_entry *next = NULL;
    for (uint32_t i = 0; i < t->count; i++)
      if (t->ns[i].base >= at && (!next || t->ns[i].base < next->base))
        next = &t->ns[i];
    uint64_t gap_end = next ? next->base : ns_pages (ftl);
    uint64_t gap = gap_end - at;
    *free_pages += gap;
    *largest = MAX (*largest, gap);
    if (!found && gap >= need && need > 0) {
      *base = at;
      found = true;
    }
    if (!next)
      return found;
    at = ns_end (ftl, next);
  }
}

/* Trim [base, base + pages) whole, in chunks, then flush: every page
 * of it is unmapped durably.
 */
static int
ns_trim_range (struct ftl *ftl, uint64_t base, uint64_t pages)
{
  uint64_t off = base * ftl->page_size;
  uint64_t end = (base + pages) * ftl->page_size;
  int r = 0;

  while (r == 0 && off < end) {
    uint64_t n = MIN (end - off, NS_TRIM_CHUNK);
    r = ftl_trim (ftl, n, off, 0);
    off += n;
  }
  return r < 0 ? r : ftl_flush (ftl);
}

/* Make t the image's table: one superblock write (see the top). */
static int
ns_commit (struct ftl *ftl, const struct ftl_ns_table *t, char *errbuf,
           size_t errlen)
{
  struct ftl_ns_table old = ftl->ns_table;
  uint32_t flags = ftl->sb.flags;
  char why[256];
  int r;

  if (!fmt_ns_check (t, ftl->page_size, ftl->logical_bytes, why,
                     sizeof why)) {
    snprintf (errbuf, errlen, "the new namespace table is not valid: %s",
              why);
    return -EINVAL;
  }
  pthread_mutex_lock (&ftl->ckpt_lock);
  ftl->ns_table = *t;
  ftl->sb.flags |= FTL_SB_NAMESPACES;
  r = ckpt_write_superblock (ftl, FTL_SB_DIRTY, 0);
  if (r < 0) {
    /* Nothing of the new table counts: the next superblock write
     * (the close's) rewrites that slot with the old one.
     */
    ftl->ns_table = old;
    ftl->sb.flags = flags;
    snprintf (errbuf, errlen, "writing the namespace table: %s",
              strerror (-r));
  }
  pthread_mutex_unlock (&ftl->ckpt_lock);
  ns_init (ftl);
  return r;
}

/* What every change needs, once it is known to be possible: a
 * writable, powered handle.
 */
static int
ns_writable (struct ftl *ftl, char *errbuf, size_t errlen)
{
  if (ftl_is_read_only (ftl)) {
    snprintf (errbuf, errlen, "the image is open read-only");
    return -EROFS;
  }
  if (powered_off (ftl)) {
    snprintf (errbuf, errlen, "the power is cut");
    return -EIO;
  }
  return 0;
}

static int
ns_index (const struct ftl *ftl, const char *name)
{
  for (uint32_t i = 0; i < ftl->ns_table.count; i++)
    if (strcmp (ftl->ns_table.ns[i].name, name) == 0)
      return i;
  return -1;
}

/* A namespace of that name exists: say so, with its size. */
static int
ns_exists (const struct ftl_ns_entry *e, uint64_t bytes, char *errbuf,
           size_t errlen)
{
  char a[32], b[32];

  if (e->bytes == bytes)
    snprintf (errbuf, errlen, "a namespace named '%s' exists, of that "
              "size (%s)", e->name, space_human (e->bytes, a, sizeof a));
  else
    snprintf (errbuf, errlen, "a namespace named '%s' exists, of %s: the "
              "size of a namespace does not change (%s asked; delete it "
              "first, which trims its data)", e->name,
              space_human (e->bytes, a, sizeof a),
              space_human (bytes, b, sizeof b));
  return -EEXIST;
}

/* No free range holds bytes: say how much is free and where. */
static int
ns_no_room (const struct ftl *ftl, const char *name, uint64_t bytes,
            uint64_t free_pages, uint64_t largest, char *errbuf,
            size_t errlen)
{
  char a[32], b[32], c[32], d[32];
  uint64_t cap = ns_pages (ftl) * ftl->page_size;
  uint64_t used = cap - free_pages * ftl->page_size;

  snprintf (errbuf, errlen, "namespace '%s' of %s does not fit: the "
            "image's logical capacity is %s, its namespaces take %s, the "
            "largest free range is %s%s", name,
            space_human (bytes, a, sizeof a),
            space_human (cap, b, sizeof b),
            space_human (used, c, sizeof c),
            space_human (largest * ftl->page_size, d, sizeof d),
            (ftl->sb.flags & FTL_SB_NAMESPACES) ? ""
            : " (made without namespaces=, the image has one, '', of its "
            "whole size)");
  return -ENOSPC;
}

int
ftl_ns_create (struct ftl *ftl, const char *name, uint64_t bytes,
               char *errbuf, size_t errlen)
{
  struct ftl_ns_table t = ftl->ns_table;
  uint64_t base, free_pages, largest;
  size_t len = strlen (name);
  int r;

  if (!fmt_ns_name_ok (name, len)) {
    snprintf (errbuf, errlen, "bad namespace name '%.64s%s' (1 to %u "
              "characters of A-Z a-z 0-9 . _ -)", name, len > 64 ? "..." : "",
              FTL_NS_NAME_MAX);
    return -EINVAL;
  }
  if (ns_index (ftl, name) >= 0)
    return ns_exists (&t.ns[ns_index (ftl, name)], bytes, errbuf, errlen);
  if (bytes == 0 || bytes % ftl->page_size != 0) {
    snprintf (errbuf, errlen, "namespace '%s': size %" PRIu64 " is not a "
              "positive multiple of the page size (%u)", name, bytes,
              ftl->page_size);
    return -EINVAL;
  }
  if (t.count >= FTL_NS_MAX) {
    snprintf (errbuf, errlen, "the image has %u namespaces, the most it "
              "can hold", t.count);
    return -ENOSPC;
  }
  if (bytes / ftl->page_size > ns_pages (ftl) ||
      !ns_find_free (ftl, bytes / ftl->page_size, &base, &free_pages,
                     &largest)) {
    ns_find_free (ftl, 0, &base, &free_pages, &largest);
    return ns_no_room (ftl, name, bytes, free_pages, largest, errbuf,
                       errlen);
  }
  r = ns_writable (ftl, errbuf, errlen);
  if (r < 0)
    return r;
  /* Whatever the range held, the new namespace reads as zeros. */
  r = ns_trim_range (ftl, base, bytes / ftl->page_size);
  if (r < 0) {
    snprintf (errbuf, errlen, "trimming the new namespace's range: %s",
              strerror (-r));
    return r;
  }
  memset (&t.ns[t.count], 0, sizeof t.ns[t.count]);
  memcpy (t.ns[t.count].name, name, len + 1);
  t.ns[t.count].bytes = bytes;
  t.ns[t.count].base = base;
  t.count++;
  t.version = FTL_FORMAT_VERSION;
  return ns_commit (ftl, &t, errbuf, errlen);
}

int
ftl_ns_delete (struct ftl *ftl, const char *name, char *errbuf,
               size_t errlen)
{
  struct ftl_ns_table t = ftl->ns_table;
  int i = ns_index (ftl, name), r;

  if (i < 0) {
    char list[FTL_NS_MAX * (FTL_NS_NAME_MAX + 2) + 1] = "";
    for (uint32_t k = 0; k < t.count; k++) {
      strcat (list, k ? ", " : "");
      strcat (list, t.ns[k].name[0] ? t.ns[k].name : "''");
    }
    snprintf (errbuf, errlen, "no namespace named '%.64s' (the image's "
              "namespaces: %s)", name, list);
    return -ENOENT;
  }
  if (t.count == 1) {
    snprintf (errbuf, errlen, "namespace '%s' is the image's only one: an "
              "image keeps at least one", name);
    return -EINVAL;
  }
  r = ns_writable (ftl, errbuf, errlen);
  if (r < 0)
    return r;
  r = ns_trim_range (ftl, t.ns[i].base, t.ns[i].bytes / ftl->page_size);
  if (r < 0) {
    snprintf (errbuf, errlen, "trimming namespace '%s': %s", name,
              strerror (-r));
    return r;
  }
  memmove (&t.ns[i], &t.ns[i + 1], (t.count - i - 1) * sizeof t.ns[0]);
  t.count--;
  memset (&t.ns[t.count], 0, sizeof t.ns[t.count]);
  t.version = FTL_FORMAT_VERSION;
  return ns_commit (ftl, &t, errbuf, errlen);
}
