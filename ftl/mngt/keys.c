/* nbdkit-ftl: the FTL's KEY=VALUE settings.  See keys.h. */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "keys.h"
#include "format/format.h"
#include "util/util.h"

static int __attribute__ ((format (printf, 3, 4)))
fail (char *err, size_t errlen, const char *fmt, ...)
{
  va_list ap;

  if (errlen) {
    va_start (ap, fmt);
    vsnprintf (err, errlen, fmt, ap);
    va_end (ap);
  }
  return -1;
}

void
ftl_keys_init (struct ftl_keys *k)
{
  memset (k, 0, sizeof *k);
  k->opts.gc_policy = FTL_GC_COST_BENEFIT;
  k->opts.gc_mode = FTL_GC_WATERMARK;
  k->opts.timeout_ns = FTL_DEFAULT_TIMEOUT_NS;
  k->opts.timeout_retries = FTL_DEFAULT_TIMEOUT_RETRIES;
  k->opts.timing.read_ns = FTL_DEFAULT_READ_LATENCY_NS;
  k->opts.timing.program_ns = FTL_DEFAULT_PROGRAM_LATENCY_NS;
  k->opts.timing.erase_ns = FTL_DEFAULT_ERASE_LATENCY_NS;
  k->opts.timing.channels = FTL_DEFAULT_CHANNELS;
  k->opts.timing.dies = FTL_DEFAULT_DIES;
  k->opts.write_cache_bytes = FTL_WRITE_CACHE_AUTO;
  k->opts.write_cache_bypass = FTL_DEFAULT_WRITE_CACHE_BYPASS;
  k->timing = -1;
}

int
ftl_parse_size (const char *key, const char *s, uint64_t *r,
                char *err, size_t errlen)
{
  static const char suffixes[] = "KMGTPE";
  const char *p;
  char *end;
  uint64_t v;
  unsigned shift = 0;

  if (s[0] < '0' || s[0] > '9')
    goto bad;
  errno = 0;
  v = strtoull (s, &end, 10);
  if (errno != 0)
    goto bad;
  if (*end == 'b' || *end == 'B')
    end++;
  else if (*end != '\0') {
    p = strchr (suffixes, *end & ~0x20);
    if (p == NULL || *end == '\0' || end[1] != '\0')
      goto bad;
    shift = 10 * (p - suffixes + 1);
    if (v > (UINT64_MAX >> shift))
      goto bad;
    end++;
  }
  if (*end != '\0')
    goto bad;
  *r = v << shift;
  return 0;

 bad:
  return fail (err, errlen, "%s: not a size (a number with an optional "
               "suffix K, M, G, T, P or E): '%s'", key, s);
}

int
ftl_parse_bool (const char *key, const char *s, bool *r,
                char *err, size_t errlen)
{
  static const char *const yes[] = { "1", "true", "t", "yes", "y", "on" };
  static const char *const no[] = { "0", "false", "f", "no", "n", "off" };

  for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
    if (strcasecmp (s, yes[i]) == 0) {
      *r = true;
      return 0;
    }
    if (strcasecmp (s, no[i]) == 0) {
      *r = false;
      return 0;
    }
  }
  return fail (err, errlen, "%s: not a boolean (true or false): '%s'",
               key, s);
}

/* An integer from min to max. */
static int
parse_range (const char *key, const char *s, uint64_t min, uint64_t max,
             uint64_t *r, char *err, size_t errlen)
{
  char *end;
  uint64_t v;

  errno = 0;
  if (s[0] < '0' || s[0] > '9' ||
      (v = strtoull (s, &end, 10), errno != 0) || *end != '\0')
    return fail (err, errlen, "%s: not a non-negative integer: '%s'",
                 key, s);
  if (v < min || v > max) {
    if (max == UINT32_MAX || max == UINT64_MAX)
      return fail (err, errlen, "%s must be at least %" PRIu64 ": %s",
                   key, min, s);
    return fail (err, errlen, "%s must be from %" PRIu64 " to %" PRIu64
                 ": %s", key, min, max, s);
  }
  *r = v;
  return 0;
}

static int
parse_u32 (const char *key, const char *s, uint32_t min, uint32_t max,
           uint32_t *r, char *err, size_t errlen)
{
  uint64_t v;

  if (parse_range (key, s, min, max, &v, err, errlen) == -1)
    return -1;
  *r = v;
  return 0;
}

static int
parse_unsigned (const char *key, const char *s, unsigned min, unsigned max,
                unsigned *r, char *err, size_t errlen)
{
  uint64_t v;

  if (parse_range (key, s, min, max, &v, err, errlen) == -1)
    return -1;
  *r = v;
  return 0;
}

/* A size that must be a power of 2 in [min, max]. */
static int
parse_power_of_2 (const char *key, const char *s, uint64_t min, uint64_t max,
                  uint32_t *r, char *err, size_t errlen)
{
  uint64_t v;

  if (ftl_parse_size (key, s, &v, err, errlen) == -1)
    return -1;
  if (v < min || v > max || (v & (v - 1)) != 0)
    return fail (err, errlen, "%s must be a power of 2 from %" PRIu64
                 " to %" PRIu64 ": %s", key, min, max, s);
  *r = v;
  return 0;
}

/* A decimal number in (0, max] (or [min, max] with min > 0). */
static int
parse_number (const char *key, const char *s, double min, double max,
              bool min_open, double *r, char *err, size_t errlen)
{
  char *end;
  double d;

  errno = 0;
  d = strtod (s, &end);
  if (errno != 0 || end == s || *end != '\0' || !isfinite (d) ||
      (min_open ? d <= min : d < min) || d > max) {
    if (min_open)
      return fail (err, errlen, "%s must be a number above %g and at most "
                   "%g: %s", key, min, max, s);
    return fail (err, errlen, "%s must be a percentage from %g to %g: %s",
                 key, min, max, s);
  }
  *r = d;
  return 0;
}

static int
parse_dur (const char *key, const char *s, uint64_t *ns,
           char *err, size_t errlen)
{
  char why[160];

  if (ftl_parse_duration (s, ns, why, sizeof why) < 0)
    return fail (err, errlen, "%s: %s", key, why);
  return 0;
}

/* namespaces=NAME:SIZE[,NAME:SIZE...]: names as format.h allows them,
 * each once, sizes above 0 (whole pages and the room for them are the
 * creation's to check: the page size may be the image's).
 */
static int
parse_namespaces (struct ftl_keys *k, const char *v, char *err,
                  size_t errlen)
{
  struct ftl_options *o = &k->opts;
  const char *p = v;
  unsigned n = 0;

  if (*v == '\0')
    return fail (err, errlen, "namespaces: give NAME:SIZE[,NAME:SIZE...]");
  while (*p) {
    const char *comma = strchr (p, ',');
    size_t len = comma ? (size_t) (comma - p) : strlen (p);
    const char *colon = memchr (p, ':', len);
    char size[64];

    if (n == FTL_MAX_NAMESPACES)
      return fail (err, errlen, "namespaces: more than %d", FTL_MAX_NAMESPACES);
    if (!colon)
      return fail (err, errlen, "namespaces: '%.*s' is not NAME:SIZE",
                   (int) MIN (len, 80), p);
    if (!fmt_ns_name_ok (p, colon - p))
      return fail (err, errlen, "namespaces: bad name '%.*s' (1 to %d "
                   "characters of A-Z a-z 0-9 . _ -)",
                   (int) MIN (colon - p, 80), p, FTL_MAX_NAMESPACE_NAME);
    memcpy (k->ns_names[n], p, colon - p);
    k->ns_names[n][colon - p] = '\0';
    for (unsigned i = 0; i < n; i++)
      if (strcmp (k->ns_names[i], k->ns_names[n]) == 0)
        return fail (err, errlen, "namespaces: '%s' given twice (names are "
                     "unique)", k->ns_names[n]);
    if ((size_t) (p + len - colon - 1) >= sizeof size)
      return fail (err, errlen, "namespaces: '%s': not a size: '%.*s...'",
                   k->ns_names[n], 20, colon + 1);
    snprintf (size, sizeof size, "%.*s", (int) (p + len - colon - 1),
              colon + 1);
    if (ftl_parse_size ("namespaces", size, &k->ns[n].bytes, err,
                        errlen) == -1)
      return -1;
    if (k->ns[n].bytes == 0)
      return fail (err, errlen, "namespaces: '%s' has size 0",
                   k->ns_names[n]);
    k->ns[n].name = k->ns_names[n];
    n++;
    p += len;
    if (*p == ',' && *++p == '\0')
      return fail (err, errlen, "namespaces: a ',' with nothing after it");
  }
  o->namespaces = k->ns;
  o->nnamespaces = n;
  return 0;
}

/* The keys of the geometry, policies, deadlines and the write cache. */
static int
set_main (struct ftl_keys *k, const char *key, const char *v,
          char *err, size_t errlen)
{
  struct ftl_options *o = &k->opts;
  bool b;
  int p;

  if (strcmp (key, "size") == 0) {
    if (ftl_parse_size (key, v, &o->logical_bytes, err, errlen) == -1)
      return -1;
    if (o->logical_bytes == 0)
      return fail (err, errlen, "size must be greater than 0");
  }
  else if (strcmp (key, "namespaces") == 0)
    return parse_namespaces (k, v, err, errlen);
  else if (strcmp (key, "placement") == 0) {
    if ((p = ftl_placement_from_name (v)) == -1)
      return fail (err, errlen, "placement must be shared, isolated or "
                   "initially-isolated: %s", v);
    o->placement = p + 1;
  }
  else if (strcmp (key, "op") == 0)
    return parse_number (key, v, FTL_MIN_OP_PERCENT, FTL_MAX_OP_PERCENT,
                         false, &o->op_percent, err, errlen);
  else if (strcmp (key, "page-size") == 0)
    return parse_power_of_2 (key, v, FTL_MIN_PAGE_SIZE, FTL_MAX_PAGE_SIZE,
                             &o->page_size, err, errlen);
  else if (strcmp (key, "pages-per-block") == 0)
    return parse_power_of_2 (key, v, FTL_MIN_PAGES_PER_BLOCK,
                             FTL_MAX_PAGES_PER_BLOCK, &o->pages_per_block,
                             err, errlen);
  else if (strcmp (key, "streams") == 0)
    return parse_unsigned (key, v, 1, FTL_MAX_STREAMS, &o->streams,
                           err, errlen);
  else if (strcmp (key, "gc") == 0) {
    if ((p = ftl_gc_policy_from_name (v)) == -1)
      return fail (err, errlen, "gc must be cost-benefit or greedy: %s", v);
    o->gc_policy = p;
  }
  else if (strcmp (key, "gc-mode") == 0) {
    if ((p = ftl_gc_mode_from_name (v)) == -1)
      return fail (err, errlen, "gc-mode must be deadline or watermark: %s",
                   v);
    o->gc_mode = p;
  }
  else if (strcmp (key, "hot-cold") == 0) {
    if (strcmp (v, "auto") == 0)
      o->one_log = o->hot_cold_always = false;
    else {
      if (ftl_parse_bool (key, v, &b, err, errlen) == -1)
        return fail (err, errlen, "hot-cold must be auto, true or false: "
                     "'%s'", v);
      o->one_log = !b;
      o->hot_cold_always = b;
    }
  }
  else if (strcmp (key, "preallocate") == 0)
    return ftl_parse_bool (key, v, &o->preallocate, err, errlen);
  else if (strcmp (key, "sync") == 0) {
    if (ftl_parse_bool (key, v, &b, err, errlen) == -1)
      return -1;
    o->no_sync = !b;
  }
  else if (strcmp (key, "wl-threshold") == 0)
    return parse_u32 (key, v, 1, UINT32_MAX, &o->wl_threshold, err, errlen);
  else if (strcmp (key, "endurance") == 0)
    return parse_u32 (key, v, 1, UINT32_MAX, &o->endurance, err, errlen);
  else if (strcmp (key, "timeout") == 0) {
    if (parse_dur (key, v, &o->timeout_ns, err, errlen) == -1)
      return -1;
    if (o->timeout_ns > 0 && o->timeout_ns < 1000000)
      return fail (err, errlen, "timeout must be 0 (off) or at least 1ms: "
                   "%s", v);
  }
  else if (strcmp (key, "slow-threshold") == 0) {
    if (parse_dur (key, v, &o->slow_threshold_ns, err, errlen) == -1)
      return -1;
    if (o->slow_threshold_ns == 0)
      return fail (err, errlen, "slow-threshold must be more than 0: %s", v);
  }
  else if (strcmp (key, "timeout-retries") == 0)
    return parse_unsigned (key, v, 0, 1000000, &o->timeout_retries,
                           err, errlen);
  else if (strcmp (key, "write-cache") == 0) {
    if (ftl_parse_size (key, v, &o->write_cache_bytes, err, errlen) == -1)
      return -1;
    k->write_cache_given = true;
  }
  else if (strcmp (key, "map-cache") == 0) {
    if (ftl_parse_size (key, v, &o->map_cache_bytes, err, errlen) == -1)
      return -1;
    if (o->map_cache_bytes == 0)
      return fail (err, errlen, "map-cache must be more than 0: %s", v);
  }
  else if (strcmp (key, "write-cache-bypass") == 0) {
    if (ftl_parse_size (key, v, &o->write_cache_bypass, err, errlen) == -1)
      return -1;
    k->write_cache_bypass_given = true;
  }
  else
    return 1;                   /* not one of these */
  return 0;
}

/* The timing model's keys given (ftl_keys.timing_given). */
enum {
  KEY_READ = 1 << 0, KEY_PROGRAM = 1 << 1, KEY_ERASE = 1 << 2,
  KEY_CHANNELS = 1 << 3, KEY_DIES = 1 << 4, KEY_PLANES = 1 << 5,
  KEY_NAND_PAGE = 1 << 6, KEY_NAND_BLOCK = 1 << 7, KEY_CHANNEL_RATE = 1 << 8,
  KEY_HOST_RATE = 1 << 9, KEY_COMMAND = 1 << 10, KEY_SUSPEND = 1 << 11,
  KEY_SUSPEND_NS = 1 << 12, KEY_PLP = 1 << 13, KEY_HOST_COMMAND = 1 << 14,
};
/* The SLC cache's keys that a preset also sets (ftl_keys.slc_given). */
enum {
  KEY_SLC_STATIC = 1 << 0, KEY_SLC_DYNAMIC = 1 << 1, KEY_SLC_BITS = 1 << 2,
  KEY_SLC_PROGRAM = 1 << 3, KEY_SLC_READ = 1 << 4,
};

/* A size of at most max bytes. */
static int
parse_size_max (const char *key, const char *s, uint64_t max, uint64_t *r,
                char *err, size_t errlen)
{
  if (ftl_parse_size (key, s, r, err, errlen) == -1)
    return -1;
  if (*r > max)
    return fail (err, errlen, "%s must be at most %" PRIu64 " bytes: %s",
                 key, max, s);
  return 0;
}

static int
set_timing (struct ftl_keys *k, const char *key, const char *v,
            char *err, size_t errlen)
{
  struct ftl_timing *t = &k->timing_keys;
  unsigned bit;
  uint64_t u;
  int r;

  if (strcmp (key, "timing") == 0) {
    bool b;
    if (ftl_parse_bool (key, v, &b, err, errlen) == -1)
      return -1;
    k->timing = b;
    return 0;
  }
  if (strcmp (key, "model") == 0) {
    k->preset = ftl_timing_preset (v);
    if (k->preset == NULL)
      return fail (err, errlen, "model: unknown drive model '%s' (known: "
                   "%s)", v, ftl_timing_preset_names ());
    return 0;
  }

  if (strcmp (key, "read-latency") == 0)
    bit = KEY_READ, r = parse_dur (key, v, &t->read_ns, err, errlen);
  else if (strcmp (key, "program-latency") == 0)
    bit = KEY_PROGRAM, r = parse_dur (key, v, &t->program_ns, err, errlen);
  else if (strcmp (key, "erase-latency") == 0)
    bit = KEY_ERASE, r = parse_dur (key, v, &t->erase_ns, err, errlen);
  else if (strcmp (key, "channels") == 0)
    bit = KEY_CHANNELS, r = parse_unsigned (key, v, 1, FTL_MAX_UNITS,
                                            &t->channels, err, errlen);
  else if (strcmp (key, "dies") == 0)
    bit = KEY_DIES, r = parse_unsigned (key, v, 1, FTL_MAX_UNITS, &t->dies,
                                        err, errlen);
  else if (strcmp (key, "planes") == 0)
    bit = KEY_PLANES, r = parse_unsigned (key, v, 1, FTL_MAX_PLANES,
                                          &t->planes, err, errlen);
  else if (strcmp (key, "nand-page") == 0) {
    bit = KEY_NAND_PAGE;
    r = ftl_parse_size (key, v, &u, err, errlen);
    if (r == 0 && (u < 512 || u > FTL_MAX_NAND_PAGE))
      r = fail (err, errlen, "nand-page must be from 512 to %d bytes: %s",
                FTL_MAX_NAND_PAGE, v);
    t->nand_page = u;
  }
  else if (strcmp (key, "nand-block") == 0)
    bit = KEY_NAND_BLOCK, r = parse_size_max (key, v, FTL_MAX_NAND_BLOCK,
                                              &t->nand_block, err, errlen);
  else if (strcmp (key, "plp-buffer") == 0)
    bit = KEY_PLP, r = parse_size_max (key, v, FTL_MAX_NAND_BLOCK,
                                       &t->plp_buffer, err, errlen);
  else if (strcmp (key, "channel-rate") == 0)
    bit = KEY_CHANNEL_RATE, r = ftl_parse_size (key, v, &t->channel_rate,
                                                err, errlen);
  else if (strcmp (key, "host-rate") == 0)
    bit = KEY_HOST_RATE, r = ftl_parse_size (key, v, &t->host_rate,
                                             err, errlen);
  else if (strcmp (key, "command-overhead") == 0)
    bit = KEY_COMMAND, r = parse_dur (key, v, &t->command_ns, err, errlen);
  else if (strcmp (key, "host-command") == 0)
    bit = KEY_HOST_COMMAND, r = parse_dur (key, v, &t->host_command_ns,
                                           err, errlen);
  else if (strcmp (key, "suspend") == 0)
    bit = KEY_SUSPEND, r = ftl_parse_bool (key, v, &t->suspend, err, errlen);
  else if (strcmp (key, "suspend-latency") == 0)
    bit = KEY_SUSPEND_NS, r = parse_dur (key, v, &t->suspend_ns, err, errlen);
  else
    return 1;
  if (r == 0)
    k->timing_given |= bit;
  return r;
}

/* The error model's keys. */
static int
set_errors (struct ftl_keys *k, const char *key, const char *v,
            char *err, size_t errlen)
{
  struct ftl_errors *e = &k->opts.errors;
  uint64_t ns;
  bool b;

  if (strcmp (key, "errors") == 0) {
    if (ftl_parse_bool (key, v, &b, err, errlen) == -1)
      return -1;
    e->enabled = b;
  }
  else if (strcmp (key, "read-reclaim") == 0) {
    if (ftl_parse_bool (key, v, &b, err, errlen) == -1)
      return -1;
    e->no_reclaim = !b;
  }
  else if (strcmp (key, "seed") == 0)
    return parse_range (key, v, 0, UINT64_MAX, &e->seed, err, errlen);
  else if (strcmp (key, "time-scale") == 0)
    return parse_number (key, v, 0, FTL_MAX_TIME_SCALE, true,
                         &e->time_scale, err, errlen);
  else if (strcmp (key, "error-scale") == 0)
    return parse_number (key, v, 0, 1e6, true, &e->scale, err, errlen);
  else if (strcmp (key, "read-disturb-scale") == 0)
    return parse_number (key, v, 0, 1e9, true, &e->disturb, err, errlen);
  else if (strcmp (key, "ecc-bits") == 0)
    return parse_u32 (key, v, 1, 8192, &e->ecc_bits, err, errlen);
  else if (strcmp (key, "read-retry") == 0)
    return parse_u32 (key, v, 1, 64, &e->retry_steps, err, errlen);
  else if (strcmp (key, "reclaim-reads") == 0)
    return parse_u32 (key, v, 1, UINT32_MAX, &e->reclaim_reads, err, errlen);
  else if (strcmp (key, "scrub-interval") == 0) {
    if (parse_dur (key, v, &ns, err, errlen) == -1)
      return -1;
    e->scrub_ns = ns == 0 ? UINT64_MAX : ns;
  }
  else
    return 1;
  return 0;
}

/* A duration that must be more than 0. */
static int
parse_positive_dur (const char *key, const char *s, uint64_t *ns,
                    char *err, size_t errlen)
{
  if (parse_dur (key, s, ns, err, errlen) == -1)
    return -1;
  if (*ns == 0)
    return fail (err, errlen, "%s must be more than 0: %s", key, s);
  return 0;
}

/* The SLC cache's keys. */
static int
set_slc (struct ftl_keys *k, const char *key, const char *v,
         char *err, size_t errlen)
{
  struct ftl_slc *c = &k->opts.slc;
  bool b;

  if (strcmp (key, "slc-static") == 0) {
    if (ftl_parse_size (key, v, &c->static_bytes, err, errlen) == -1)
      return -1;
    k->slc_given |= KEY_SLC_STATIC;
  }
  else if (strcmp (key, "slc-dynamic") == 0) {
    k->slc_given |= KEY_SLC_DYNAMIC;
    if (strcmp (v, "auto") == 0)
      c->dynamic_bytes = FTL_SLC_AUTO;
    else if (ftl_parse_bool (key, v, &b, NULL, 0) == 0 &&
             !(v[0] >= '0' && v[0] <= '9'))
      c->dynamic_bytes = b ? FTL_SLC_AUTO : 0;
    else if (ftl_parse_size (key, v, &c->dynamic_bytes, NULL, 0) == -1)
      return fail (err, errlen, "slc-dynamic must be a size, auto or "
                   "false: %s", v);
  }
  else if (strcmp (key, "cell-bits") == 0) {
    uint64_t n;
    if (parse_range (key, v, 0, UINT64_MAX, &n, err, errlen) == -1)
      return -1;
    if (n < 2 || n > 4)
      return fail (err, errlen, "cell-bits must be 2 (MLC), 3 (TLC) or 4 "
                   "(QLC): %s", v);
    c->cell_bits = n;
    k->slc_given |= KEY_SLC_BITS;
  }
  else if (strcmp (key, "slc-program") == 0) {
    k->slc_given |= KEY_SLC_PROGRAM;
    return parse_positive_dur (key, v, &c->program_ns, err, errlen);
  }
  else if (strcmp (key, "slc-read") == 0) {
    k->slc_given |= KEY_SLC_READ;
    return parse_positive_dur (key, v, &c->read_ns, err, errlen);
  }
  else if (strcmp (key, "slc-fold-idle") == 0) {
    if (strcmp (v, "never") == 0)
      c->fold_idle_ns = UINT64_MAX;
    else
      return parse_positive_dur (key, v, &c->fold_idle_ns, err, errlen);
  }
  else
    return 1;
  return 0;
}

int
ftl_keys_set (struct ftl_keys *k, const char *key, const char *value,
              char *err, size_t errlen)
{
  int (*const sets[]) (struct ftl_keys *, const char *, const char *,
                       char *, size_t) = { set_main, set_timing, set_errors,
                                         set_slc };

  if (errlen)
    err[0] = '\0';
  for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
    int r = sets[i] (k, key, value, err, errlen);
    if (r <= 0)
      return r == 0 ? 1 : -1;
  }
  return 0;
}

/* The model: the preset's values, then the keys given over them. */
static void
apply_preset (struct ftl_keys *k, const struct ftl_timing_preset *p)
{
  struct ftl_timing *t = &k->opts.timing;
  const struct ftl_timing *g = &k->timing_keys;
  unsigned given = k->timing_given;
  struct ftl_slc *c = &k->opts.slc;

  *t = p->timing;
  if (given & KEY_READ) t->read_ns = g->read_ns;
  if (given & KEY_PROGRAM) t->program_ns = g->program_ns;
  if (given & KEY_ERASE) t->erase_ns = g->erase_ns;
  if (given & KEY_CHANNELS) t->channels = g->channels;
  if (given & KEY_DIES) t->dies = g->dies;
  if (given & KEY_PLANES) t->planes = g->planes;
  if (given & KEY_NAND_PAGE) t->nand_page = g->nand_page;
  if (given & KEY_NAND_BLOCK) t->nand_block = g->nand_block;
  if (given & KEY_PLP) t->plp_buffer = g->plp_buffer;
  if (given & KEY_CHANNEL_RATE) t->channel_rate = g->channel_rate;
  if (given & KEY_HOST_RATE) t->host_rate = g->host_rate;
  if (given & KEY_COMMAND) t->command_ns = g->command_ns;
  if (given & KEY_HOST_COMMAND) t->host_command_ns = g->host_command_ns;
  if (given & KEY_SUSPEND) t->suspend = g->suspend;
  if (given & KEY_SUSPEND_NS) t->suspend_ns = g->suspend_ns;
  t->enabled = true;

  if (!k->write_cache_given)
    k->opts.write_cache_bytes = p->write_cache;
  /* The map's cache: the drive's DRAM per TB, or its host memory
   * buffer, unless map-cache= is given.
   */
  k->opts.map_cache_per_tb = p->map_cache_per_tb;
  k->opts.map_cache_hmb = p->map_cache_hmb;
  /* A drive acknowledges large writes from its DRAM buffer too: with
   * the model, every write goes through the cache unless the key says
   * otherwise (bypassing writes would wait for their programs).
   */
  if (!k->write_cache_bypass_given)
    k->opts.write_cache_bypass = 0;

  /* The SLC cache: the preset's, scaled to the disk when it is opened
   * (per_million), unless slc-static= or slc-dynamic= is given: then
   * its size is theirs alone.
   */
  if (!(k->slc_given & (KEY_SLC_STATIC | KEY_SLC_DYNAMIC))) {
    c->static_per_million = p->slc_static_per_tb / 1000000;
    c->dynamic_per_million = p->slc_dynamic_per_tb / 1000000;
  }
  if (!(k->slc_given & KEY_SLC_BITS) && p->cell_bits)
    c->cell_bits = p->cell_bits;
  /* SLC times: the preset's, unless the native time is given (then
   * the library derives them from it) or their own keys are.
   */
  if (!(k->slc_given & KEY_SLC_PROGRAM))
    c->program_ns = given & KEY_PROGRAM ? 0 : p->slc_program_ns;
  if (!(k->slc_given & KEY_SLC_READ))
    c->read_ns = given & KEY_READ ? 0 : p->slc_read_ns;
}

int
ftl_keys_finish (struct ftl_keys *k, char *err, size_t errlen)
{
  struct ftl_timing *t = &k->opts.timing;

  if (k->timing == -1 ? k->preset || k->timing_given : k->timing)
    apply_preset (k, k->preset ? k->preset : ftl_timing_preset_default ());
  else
    t->enabled = false;
  if (t->enabled && (uint64_t) t->channels * t->dies > FTL_MAX_UNITS)
    return fail (err, errlen, "channels x dies must be at most %d: %u x %u",
                 FTL_MAX_UNITS, t->channels, t->dies);
  return 0;
}
