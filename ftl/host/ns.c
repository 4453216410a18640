/* nbdkit-ftl: namespaces, the host's view of them.
 *
 * An image holds a table of namespaces (format.h, version 8; an image
 * without one has a single namespace "" of the whole logical size).
 * Each namespace is a range [base, base + bytes) of the one logical
 * space of the image, in whole pages:
 *
 *      logical pages 0 .............................. logical_pages
 *      | ns "a"        | ns "b"   | (free)  | ns "c"      | (free) |
 *      ^ base a        ^ base b             ^ base c
 *
 * so that everything below the host layer (the map, the write cache,
 * the log, GC, wear leveling, checkpoints, recovery, the timing model)
 * is shared and unchanged: it sees logical pages and never a
 * namespace.  A request of a namespace is checked against its size
 * and moved by its base, one comparison and one add, and then is a
 * request of the device (request.c).  Why a base and not a map of its
 * own per namespace, or extents: one map and one GC are what makes the
 * namespaces share a pool as a drive's do, and a base costs the hot
 * path nothing; the price is that a namespace is one range, so a
 * namespace added at rest (ftlctl ns-add, mngt/nsadmin.c) takes a free
 * range at least its size (a delete trims its range whole and frees
 * it), and free space split between ranges cannot hold a larger one.
 *
 * The handles (ftl->ns[]) are set at open, and again by a change of
 * the table at rest (nsadmin.c), when nothing else uses the handle:
 * no lock.
 */

#include <config.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ftl-internal.h"

_Static_assert (FTL_MAX_NAMESPACES == FTL_NS_MAX &&
                FTL_MAX_NAMESPACE_NAME == FTL_NS_NAME_MAX,
                "the API's limits are the format's");

void
ns_init (struct ftl *ftl)
{
  const struct ftl_ns_table *t = &ftl->ns_table;

  ftl->nns = t->count;
  for (uint32_t i = 0; i < t->count; i++)
    ftl->ns[i] = (struct ftl_ns) {
      .ftl = ftl,
      .base = t->ns[i].base * ftl->page_size,
      .bytes = t->ns[i].bytes,
      .name = t->ns[i].name,
    };
}

/* A namespace list, NAME:SIZE,... (sizes as the keys take them:
 * with a suffix where it is exact), into buf.
 */
static void
ns_list (char *buf, size_t len, unsigned n, const char *const *names,
         const uint64_t *bytes)
{
  static const char suffix[] = "KMGTPE";
  size_t at = 0;

  buf[0] = '\0';
  for (unsigned i = 0; i < n && at < len; i++) {
    uint64_t v = bytes[i];
    int k = -1;
    while (v && v % 1024 == 0 && k < 5) {
      v /= 1024;
      k++;
    }
    int w = snprintf (buf + at, len - at, "%s%s:%" PRIu64 "%.*s",
                      i ? "," : "", names[i], v, k >= 0 ? 1 : 0,
                      k >= 0 ? &suffix[k] : "");
    if (w < 0)
      break;
    at += w;
  }
}

/* namespaces= given for an existing image must be its table, name for
 * name and size for size, in order: nothing of an image changes by
 * what an open is given.
 */
int
ns_check_options (const struct ftl_options *o, const struct ftl_ns_table *t,
                  char *errbuf, size_t errlen)
{
  const char *gn[FTL_NS_MAX], *in[FTL_NS_MAX];
  uint64_t gb[FTL_NS_MAX], ib[FTL_NS_MAX];
  char given[512], image[512];
  bool same;

  if (o->placement && o->placement - 1 != t->placement) {
    snprintf (errbuf, errlen, "placement=%s differs from the image's "
              "placement=%s: placement is chosen when an image is made "
              "(leave placement= out)", ftl_placement_name (o->placement - 1),
              ftl_placement_name (t->placement));
    return -EINVAL;
  }
  if (!o->nnamespaces)
    return 0;
  same = o->nnamespaces == t->count;
  for (unsigned i = 0; i < t->count; i++) {
    in[i] = t->ns[i].name[0] ? t->ns[i].name : "''";
    ib[i] = t->ns[i].bytes;
    if (same && (strcmp (o->namespaces[i].name, t->ns[i].name) != 0 ||
                 o->namespaces[i].bytes != t->ns[i].bytes))
      same = false;
  }
  if (same)
    return 0;
  for (unsigned i = 0; i < o->nnamespaces && i < FTL_NS_MAX; i++) {
    gn[i] = o->namespaces[i].name;
    gb[i] = o->namespaces[i].bytes;
  }
  ns_list (given, sizeof given, MIN (o->nnamespaces, FTL_NS_MAX), gn, gb);
  ns_list (image, sizeof image, t->count, in, ib);
  snprintf (errbuf, errlen, "namespaces=%s differs from the image's "
            "namespaces %s: an existing image's namespaces are not changed "
            "by an open (leave namespaces= out)", given, image);
  return -EINVAL;
}

unsigned
ftl_ns_count (const struct ftl *ftl)
{
  return ftl->nns;
}

struct ftl_ns *
ftl_ns_at (struct ftl *ftl, unsigned i)
{
  return i < ftl->nns ? &ftl->ns[i] : NULL;
}

struct ftl_ns *
ftl_ns_open (struct ftl *ftl, const char *name)
{
  for (unsigned i = 0; i < ftl->nns; i++)
    if (strcmp (ftl->ns[i].name, name) == 0)
      return &ftl->ns[i];
  return NULL;
}

void
ftl_ns_get_info (const struct ftl_ns *ns, struct ftl_ns_info *out)
{
  out->name = ns->name;
  out->bytes = ns->bytes;
  out->base = ns->base;
  out->placement = ftl_placement_name (ns->ftl->place.mode);
}

/* The range must lie inside the namespace. */
static int
ns_range (const struct ftl_ns *ns, uint64_t count, uint64_t offset)
{
  if (offset > ns->bytes || count > ns->bytes - offset) {
    log_msg (ns->ftl, FTL_LOG_ERROR, "request beyond the end of namespace "
             "'%s' (offset %" PRIu64 ", count %" PRIu64 ", size %" PRIu64
             ")", ns->name, offset, count, ns->bytes);
    return -EINVAL;
  }
  return 0;
}

/* Count a request of ns that succeeded (state.h: per thread shard):
 * its bytes in counter c, and a command in c + 3.
 */
static int
ns_count (struct ftl_ns *ns, enum ns_counter c, uint64_t count, int r)
{
  if (r == 0) {
    uint64_t *v = ns->ftl->ns_ctr[ftl_shard ()].v[ns - ns->ftl->ns];
    __atomic_fetch_add (&v[c], count, __ATOMIC_RELAXED);
    __atomic_fetch_add (&v[c + 3], 1, __ATOMIC_RELAXED);
  }
  return r;
}
_Static_assert (NS_HOST_WRITE_CMDS == NS_HOST_WRITE_BYTES + 3 &&
                NS_HOST_READ_CMDS == NS_HOST_READ_BYTES + 3 &&
                NS_HOST_TRIM_CMDS == NS_HOST_TRIM_BYTES + 3,
                "a request's command counter is 3 after its bytes'");

int
ftl_ns_read (struct ftl_ns *ns, void *buf, uint64_t count, uint64_t offset)
{
  int r = ns_range (ns, count, offset);
  return r < 0 ? r
    : ns_count (ns, NS_HOST_READ_BYTES, count,
                ftl_read (ns->ftl, buf, count, ns->base + offset));
}

int
ftl_ns_write (struct ftl_ns *ns, const void *buf, uint64_t count,
              uint64_t offset, unsigned flags)
{
  int r = ns_range (ns, count, offset);
  return r < 0 ? r
    : ns_count (ns, NS_HOST_WRITE_BYTES, count,
                ftl_write (ns->ftl, buf, count, ns->base + offset, flags));
}

int
ftl_ns_trim (struct ftl_ns *ns, uint64_t count, uint64_t offset,
             unsigned flags)
{
  int r = ns_range (ns, count, offset);
  return r < 0 ? r
    : ns_count (ns, NS_HOST_TRIM_BYTES, count,
                ftl_trim (ns->ftl, count, ns->base + offset, flags));
}

/* Write zeroes count as trims: their whole pages are unmapped. */
int
ftl_ns_zero (struct ftl_ns *ns, uint64_t count, uint64_t offset,
             unsigned flags)
{
  int r = ns_range (ns, count, offset);
  return r < 0 ? r
    : ns_count (ns, NS_HOST_TRIM_BYTES, count,
                ftl_zero (ns->ftl, count, ns->base + offset, flags));
}

/* The device's runs, moved back by the base. */
struct ns_extents {
  uint64_t base;
  ftl_extent_fn fn;
  void *opaque;
};

static int
ns_extent (void *opaque, uint64_t offset, uint64_t length, bool hole)
{
  struct ns_extents *x = opaque;
  return x->fn (x->opaque, offset - x->base, length, hole);
}

int
ftl_ns_extents (struct ftl_ns *ns, uint64_t count, uint64_t offset,
                ftl_extent_fn fn, void *opaque)
{
  struct ns_extents x = { .base = ns->base, .fn = fn, .opaque = opaque };
  int r = ns_range (ns, count, offset);
  return r < 0 ? r
    : ftl_extents (ns->ftl, count, ns->base + offset, ns_extent, &x);
}
