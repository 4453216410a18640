/* nbdkit-ftl: the nbdkit plugin.
 *
 * Thin glue between nbdkit and the FTL library (ftl/ftl.h): parse the
 * parameters, open the image in .get_ready, and pass each request to the
 * matching ftl_* call.  nbdkit serves one image, so there is one global
 * library handle; each of the image's namespaces is an export by name
 * (.list_exports, .default_export: the first), and a connection's
 * handle is the namespace its export name chose in .open.  The library
 * is thread-safe, so the plugin runs fully parallel and takes no lock
 * of its own on the data path.
 *
 * The library's functions own the names ftl_read, ftl_flush and so on,
 * so the callbacks here are named ftl_plugin_<callback>.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBDKIT_API_VERSION 2
#include <nbdkit-plugin.h>

#include "ftl.h"
#include "powercut.h"
#include "keys.h"
#include "slow-log.h"
#include "stats-thread.h"

/* Debug flags: -D ftl.gc=1 and so on. */
NBDKIT_DLL_PUBLIC int ftl_debug_gc;       /* garbage collection */
NBDKIT_DLL_PUBLIC int ftl_debug_ckpt;     /* checkpoints */
NBDKIT_DLL_PUBLIC int ftl_debug_recovery; /* opening and roll-forward */
NBDKIT_DLL_PUBLIC int ftl_debug_alloc;    /* erase block allocation */

/* Parameters: the FTL's keys (ftl/keys.h), and the plugin's own. */
static struct ftl_keys keys;
static char *filename;                  /* file= */
static char *stats_path;                /* stats= */
static unsigned stats_interval = 1;     /* stats-interval= */
static bool rotational;                 /* rotational= */
static char *fault_file;                /* debug-faults= (tests only) */

/* The open image, from .get_ready to .cleanup. */
static struct ftl *ftl;
static struct ftl_geometry geometry;

static void
ftl_plugin_unload (void)
{
  free (filename);
  free (stats_path);
  free (fault_file);
  stats_unload ();
  slowlog_unload ();
}

static void
ftl_plugin_load (void)
{
  ftl_keys_init (&keys);
}

static int
ftl_plugin_config (const char *key, const char *value)
{
  char err[256];
  int b;

  b = ftl_keys_set (&keys, key, value, err, sizeof err);
  if (b == -1) {
    nbdkit_error ("%s", err);
    return -1;
  }
  if (b == 1)
    return 0;

  if (strcmp (key, "file") == 0) {
    /* nbdkit changes directory when it becomes a daemon. */
    free (filename);
    filename = nbdkit_absolute_path (value);
    if (filename == NULL)
      return -1;
  }
  else if (strcmp (key, "stats") == 0) {
    free (stats_path);
    stats_path = nbdkit_absolute_path (value);
    if (stats_path == NULL)
      return -1;
  }
  else if (strcmp (key, "stats-interval") == 0) {
    if (nbdkit_parse_unsigned ("stats-interval", value,
                               &stats_interval) == -1)
      return -1;
    if (stats_interval < 1) {
      nbdkit_error ("stats-interval must be at least 1 second: %s", value);
      return -1;
    }
  }
  else if (strcmp (key, "rotational") == 0) {
    if (ftl_parse_bool (key, value, &rotational, err, sizeof err) == -1) {
      nbdkit_error ("%s", err);
      return -1;
    }
  }
  else if (powercut_config (key, value, &b))
    return b;
  else if (stats_config (key, value, &b))
    return b;
  else if (slowlog_config (key, value, &b))
    return b;
  else if (strcmp (key, "debug-faults") == 0) {
    free (fault_file);
    fault_file = nbdkit_absolute_path (value);
    if (fault_file == NULL)
      return -1;
  }
  else {
    nbdkit_error ("unknown parameter '%s'", key);
    return -1;
  }

  return 0;
}

static int
ftl_plugin_config_complete (void)
{
  char err[256], *dir;
  int r;

  if (filename == NULL) {
    nbdkit_error ("you must supply the file=<FILENAME> parameter");
    return -1;
  }

  if (ftl_keys_finish (&keys, err, sizeof err) == -1) {
    nbdkit_error ("%s", err);
    return -1;
  }

  /* Refuse an unusable statistics path now, before the image is
   * opened, so that this mistake cannot touch the image.
   */
  if (stats_path) {
    dir = strdup (stats_path);
    if (dir == NULL) {
      nbdkit_error ("strdup: %m");
      return -1;
    }
    r = access (dirname (dir), W_OK | X_OK);
    free (dir);
    if (r == -1) {
      nbdkit_error ("stats: cannot write a file next to %s: %m", stats_path);
      return -1;
    }
  }

  if (slowlog_config_complete () == -1)
    return -1;
  return stats_config_complete ();
}

#define ftl_plugin_config_help \
  "file=<FILENAME>     (required) The image; created if absent and size= is given.\n" \
  FTL_KEYS_HELP \
  "stats=<FILENAME>               Write statistics as JSON to this file.\n" \
  "stats-interval=<SECS>          Rewrite them this often while busy (default 1).\n" \
  "rotational=<BOOL>              Advertise a rotating disk (default false).\n" \
  STATS_CONFIG_HELP \
  SLOWLOG_CONFIG_HELP \
  POWERCUT_CONFIG_HELP

/* Pass the library's messages to nbdkit. */
static void
log_message (void *opaque, enum ftl_log_level level, const char *msg)
{
  switch (level) {
  case FTL_LOG_ERROR:
    nbdkit_error ("%s", msg);
    break;
  case FTL_LOG_WARN:
    nbdkit_debug ("warning: %s", msg);
    break;
  case FTL_LOG_DEBUG:
    nbdkit_debug ("%s", msg);
    break;
  }
}

static int
ftl_plugin_get_ready (void)
{
  char errbuf[512] = "";
  struct ftl_options opts = keys.opts;
  int r;

  opts.path = filename;
  opts.debug = (ftl_debug_gc       ? FTL_DEBUG_GC : 0) |
               (ftl_debug_ckpt     ? FTL_DEBUG_CKPT : 0) |
               (ftl_debug_recovery ? FTL_DEBUG_RECOVERY : 0) |
               (ftl_debug_alloc    ? FTL_DEBUG_ALLOC : 0);
  opts.log = log_message;
  opts.log_opaque = NULL;
  opts.fault_file = fault_file;
  opts.slow_log = slowlog_wanted ();
  r = ftl_open (&opts, &ftl, errbuf, sizeof errbuf);
  if (r < 0) {
    nbdkit_error ("%s: %s", filename,
                  errbuf[0] ? errbuf : strerror (-r));
    ftl = NULL;
    return -1;
  }

  ftl_get_geometry (ftl, &geometry);

  if (stats_init (ftl, stats_path, stats_interval) == -1) {
    ftl_close (ftl);
    ftl = NULL;
    return -1;
  }

  return 0;
}

static int
ftl_plugin_after_fork (void)
{
  int r = ftl_start_background (ftl);

  if (r < 0) {
    nbdkit_error ("%s: starting background garbage collection: %s",
                  filename, strerror (-r));
    return -1;
  }
  r = ftl_start_watchdog (ftl);
  if (r < 0) {
    nbdkit_error ("%s: starting the deadline watchdog: %s",
                  filename, strerror (-r));
    return -1;
  }
  if (slowlog_start (ftl) == -1)
    return -1;
  return stats_start ();
}

static void
ftl_plugin_cleanup (void)
{
  int r;

  if (ftl == NULL)
    return;

  /* The last statistics are written once the background threads have
   * stopped and the write cache is empty, so that no GC or destage
   * follows them; ftl_close still writes the last checkpoint after
   * them (its count is one more in the image).
   */
  ftl_stop_watchdog (ftl);
  ftl_stop_background (ftl);
  r = ftl_destage (ftl);
  if (r < 0)
    nbdkit_error ("%s: writing the write cache to the log: %s", filename,
                  strerror (-r));
  stats_stop ();
  slowlog_stop ();
  r = ftl_close (ftl);
  ftl = NULL;
  if (r < 0)
    nbdkit_error ("%s: close: %s", filename, strerror (-r));
}

/* An export's description: its size, in bytes and as a person reads
 * it, and the image's placement unless shared.
 */
static const char *
describe (struct ftl_ns *ns)
{
  struct ftl_ns_info in;
  char buf[160];
  const char *unit = "bytes";
  double v;

  ftl_ns_get_info (ns, &in);
  v = in.bytes;
  if (in.bytes >= (UINT64_C (1) << 40))
    v /= (double) (UINT64_C (1) << 40), unit = "TiB";
  else if (in.bytes >= (1u << 30))
    v /= 1u << 30, unit = "GiB";
  else if (in.bytes >= (1u << 20))
    v /= 1u << 20, unit = "MiB";
  else if (in.bytes >= (1u << 10))
    v /= 1u << 10, unit = "KiB";
  snprintf (buf, sizeof buf, "namespace '%s': %.4g %s (%" PRIu64 " bytes)"
            "%s%s", in.name, v, unit, in.bytes,
            strcmp (in.placement, "shared") ? ", placement " : "",
            strcmp (in.placement, "shared") ? in.placement : "");
  return nbdkit_strdup_intern (buf);
}

/* Every namespace, in the image's order. */
static int
ftl_plugin_list_exports (int readonly, int is_tls,
                         struct nbdkit_exports *exports)
{
  struct ftl_ns *ns;

  for (unsigned i = 0; (ns = ftl_ns_at (ftl, i)) != NULL; i++) {
    struct ftl_ns_info in;
    const char *d = describe (ns);
    ftl_ns_get_info (ns, &in);
    if (d == NULL || nbdkit_add_export (exports, in.name, d) == -1)
      return -1;
  }
  return 0;
}

/* The first namespace ("" on an image made without namespaces). */
static const char *
ftl_plugin_default_export (int readonly, int is_tls)
{
  struct ftl_ns_info in;

  ftl_ns_get_info (ftl_ns_at (ftl, 0), &in);
  return in.name;
}

/* The connection's namespace: the one its export name names. */
static void *
ftl_plugin_open (int readonly)
{
  const char *name = nbdkit_export_name ();
  struct ftl_ns *ns;

  if (name == NULL)
    return NULL;
  ns = name[0] ? ftl_ns_open (ftl, name) : ftl_ns_at (ftl, 0);
  if (ns == NULL) {
    char list[1024] = "";
    size_t at = 0;
    for (unsigned i = 0; ftl_ns_at (ftl, i) && at < sizeof list; i++) {
      struct ftl_ns_info in;
      ftl_ns_get_info (ftl_ns_at (ftl, i), &in);
      int w = snprintf (list + at, sizeof list - at, "%s'%s'",
                        i ? ", " : "", in.name);
      if (w < 0)
        break;
      at += w;
    }
    nbdkit_error ("unknown export name '%.80s': this image's namespaces "
                  "are %s", name, list);
    return NULL;
  }
  return ns;
}

static const char *
ftl_plugin_export_description (void *handle)
{
  return describe (handle);
}

static int64_t
ftl_plugin_get_size (void *handle)
{
  struct ftl_ns_info in;

  ftl_ns_get_info (handle, &in);
  return in.bytes;
}

static int
ftl_plugin_block_size (void *handle,
                       uint32_t *minimum, uint32_t *preferred,
                       uint32_t *maximum)
{
  /* Any alignment works; whole pages avoid read-modify-write. */
  *minimum = 1;
  *preferred = geometry.page_size;
  *maximum = 0xffffffff;
  return 0;
}

static int
ftl_plugin_is_rotational (void *handle)
{
  return rotational;
}

/* Every capability is native except cache, which nbdkit emulates with
 * a read.  Flush covers all connections, and every namespace (one
 * device), so multi-conn is safe.
 */
/* A worn-out disk is read-only: new connections are told so. */
static int
ftl_plugin_can_write (void *handle)
{
  return !ftl_is_read_only (ftl);
}

static int
ftl_plugin_can_true (void *handle)
{
  return 1;
}

static int
ftl_plugin_can_fua (void *handle)
{
  return NBDKIT_FUA_NATIVE;
}

static int
ftl_plugin_can_cache (void *handle)
{
  return NBDKIT_CACHE_EMULATE;
}

/* Report a library error to nbdkit and the client.  A request that
 * missed its deadline fails with EIO: nbdkit would send ETIMEDOUT as
 * EINVAL, which tells a client that its request was malformed.
 */
static int
fail (int r)
{
  assert (r < 0);
  nbdkit_set_error (r == -ETIMEDOUT ? EIO : -r);
  return -1;
}

static int
ftl_plugin_pread (void *handle, void *buf, uint32_t count, uint64_t offset,
                  uint32_t flags)
{
  int r;

  assert (flags == 0);
  r = ftl_ns_read (handle, buf, count, offset);
  return r < 0 ? fail (r) : 0;
}

static int
ftl_plugin_pwrite (void *handle, const void *buf, uint32_t count,
                   uint64_t offset, uint32_t flags)
{
  int r;

  assert ((flags & ~NBDKIT_FLAG_FUA) == 0);
  if (powercut_write_request (ftl))
    return fail (-EIO);
  r = ftl_ns_write (handle, buf, count, offset,
                 flags & NBDKIT_FLAG_FUA ? FTL_FUA : 0);
  return r < 0 ? fail (r) : 0;
}

static int
ftl_plugin_flush (void *handle, uint32_t flags)
{
  int r;

  assert (flags == 0);
  r = ftl_flush (ftl);
  if (r < 0)
    return fail (r);
  stats_flushed ();
  return 0;
}

static int
ftl_plugin_trim (void *handle, uint32_t count, uint64_t offset,
                 uint32_t flags)
{
  int r;

  assert ((flags & ~NBDKIT_FLAG_FUA) == 0);
  if (powercut_write_request (ftl))
    return fail (-EIO);
  r = ftl_ns_trim (handle, count, offset,
                   flags & NBDKIT_FLAG_FUA ? FTL_FUA : 0);
  return r < 0 ? fail (r) : 0;
}

/* Zeroing unmaps whole pages and writes zeros into partial ones: it is
 * always fast, so NBDKIT_FLAG_FAST_ZERO needs nothing.
 */
static int
ftl_plugin_zero (void *handle, uint32_t count, uint64_t offset,
                 uint32_t flags)
{
  unsigned f = 0;
  int r;

  assert ((flags & ~(NBDKIT_FLAG_FUA | NBDKIT_FLAG_MAY_TRIM |
                     NBDKIT_FLAG_FAST_ZERO)) == 0);
  if (powercut_write_request (ftl))
    return fail (-EIO);
  if (flags & NBDKIT_FLAG_FUA)
    f |= FTL_FUA;
  if (flags & NBDKIT_FLAG_MAY_TRIM)
    f |= FTL_MAY_TRIM;
  r = ftl_ns_zero (handle, count, offset, f);
  return r < 0 ? fail (r) : 0;
}

struct extents_ctx {
  struct nbdkit_extents *extents;
  bool req_one;                 /* stop after the first run */
  bool stopped;                 /* we asked the library to stop */
  int err;                      /* errno from nbdkit_add_extent */
};

static int
add_extent (void *opaque, uint64_t offset, uint64_t length, bool hole)
{
  struct extents_ctx *ctx = opaque;
  uint32_t type = hole ? NBDKIT_EXTENT_HOLE | NBDKIT_EXTENT_ZERO : 0;

  if (nbdkit_add_extent (ctx->extents, offset, length, type) == -1) {
    ctx->err = errno;
    ctx->stopped = true;
    return -1;
  }
  if (ctx->req_one) {
    ctx->stopped = true;
    return -1;
  }
  return 0;
}

static int
ftl_plugin_extents (void *handle, uint32_t count, uint64_t offset,
                    uint32_t flags, struct nbdkit_extents *extents)
{
  struct extents_ctx ctx = {
    .extents = extents,
    .req_one = flags & NBDKIT_FLAG_REQ_ONE,
  };
  int r;

  assert ((flags & ~NBDKIT_FLAG_REQ_ONE) == 0);
  r = ftl_ns_extents (handle, count, offset, add_extent, &ctx);
  if (ctx.err) {
    nbdkit_set_error (ctx.err);
    return -1;
  }
  /* Stopping early on purpose is not an error, whatever the library
   * returns for it.
   */
  if (r < 0 && !ctx.stopped)
    return fail (r);
  return 0;
}

#define THREAD_MODEL NBDKIT_THREAD_MODEL_PARALLEL

/* nbdkit --dump-plugin: the presets of the timing model, with the
 * figures published for their drives (bench/model-check.sh reads
 * them), one "ftl_model_NAME_FIELD=VALUE" line each.
 */
static void
ftl_plugin_dump_plugin (void)
{
  const struct ftl_timing_preset *p;

#ifdef FTL_SELF_CHECK
  printf ("ftl_self_check=yes\n");
#else
  printf ("ftl_self_check=no\n");
#endif
  printf ("ftl_models=%s\n", ftl_timing_preset_names ());
  for (size_t i = 0; (p = ftl_timing_preset_at (i)) != NULL; i++) {
    printf ("ftl_model_%s_drive=%s\n", p->name, p->drive);
    printf ("ftl_model_%s_seq_read_mbs=%g\n", p->name, p->seq_read_mbs);
    printf ("ftl_model_%s_seq_write_mbs=%g\n", p->name, p->seq_write_mbs);
    printf ("ftl_model_%s_rand_read_qd1_iops=%g\n", p->name, p->rr_qd1);
    printf ("ftl_model_%s_rand_write_qd1_iops=%g\n", p->name, p->rw_qd1);
    printf ("ftl_model_%s_rand_read_qd32_iops=%g\n", p->name, p->rr_qd32);
    printf ("ftl_model_%s_rand_write_qd32_iops=%g\n", p->name, p->rw_qd32);
    printf ("ftl_model_%s_rand_write_steady_iops=%g\n", p->name,
            p->rw_steady);
    printf ("ftl_model_%s_post_cache_mbs=%g\n", p->name, p->post_cache_mbs);
  }
}

static struct nbdkit_plugin plugin = {
  .name              = "ftl",
  .longname          = "nbdkit flash translation layer plugin",
  .version           = PACKAGE_VERSION,
  .description       = "A log-structured flash translation layer over a file",
  .load              = ftl_plugin_load,
  .unload            = ftl_plugin_unload,
  .config            = ftl_plugin_config,
  .config_complete   = ftl_plugin_config_complete,
  .config_help       = ftl_plugin_config_help,
  .dump_plugin       = ftl_plugin_dump_plugin,
  .magic_config_key  = "file",
  .get_ready         = ftl_plugin_get_ready,
  .after_fork        = ftl_plugin_after_fork,
  .cleanup           = ftl_plugin_cleanup,
  .list_exports      = ftl_plugin_list_exports,
  .default_export    = ftl_plugin_default_export,
  .open              = ftl_plugin_open,
  .export_description = ftl_plugin_export_description,
  .get_size          = ftl_plugin_get_size,
  .block_size        = ftl_plugin_block_size,
  .is_rotational     = ftl_plugin_is_rotational,
  .can_write         = ftl_plugin_can_write,
  .can_flush         = ftl_plugin_can_true,
  .can_fua           = ftl_plugin_can_fua,
  .can_trim          = ftl_plugin_can_true,
  .can_zero          = ftl_plugin_can_true,
  .can_fast_zero     = ftl_plugin_can_true,
  .can_extents       = ftl_plugin_can_true,
  .can_cache         = ftl_plugin_can_cache,
  .can_multi_conn    = ftl_plugin_can_true,
  .pread             = ftl_plugin_pread,
  .pwrite            = ftl_plugin_pwrite,
  .flush             = ftl_plugin_flush,
  .trim              = ftl_plugin_trim,
  .zero              = ftl_plugin_zero,
  .extents           = ftl_plugin_extents,
};

NBDKIT_REGISTER_PLUGIN (plugin)
