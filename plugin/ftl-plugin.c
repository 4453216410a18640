/* nbdkit-ftl: the nbdkit plugin.
 *
 * Thin glue between nbdkit and the FTL library (ftl/ftl.h): parse the
 * parameters, open the image in .get_ready, and pass each request to the
 * matching ftl_* call.  nbdkit serves one disk, so there is one global
 * handle; the library is thread-safe, so the plugin runs fully parallel
 * and takes no lock of its own on the data path.
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
#include "errors.h"
#include "stats-thread.h"

/* Debug flags: -D ftl.gc=1 and so on. */
NBDKIT_DLL_PUBLIC int ftl_debug_gc;       /* garbage collection */
NBDKIT_DLL_PUBLIC int ftl_debug_ckpt;     /* checkpoints */
NBDKIT_DLL_PUBLIC int ftl_debug_recovery; /* opening and roll-forward */
NBDKIT_DLL_PUBLIC int ftl_debug_alloc;    /* erase block allocation */

/* Parameters.  Zero means "not given". */
static char *filename;                  /* file= */
static uint64_t size;                   /* size= */
static double op_percent;               /* op= */
static uint32_t page_size;              /* page-size= */
static uint32_t pages_per_block;        /* pages-per-block= */
static unsigned streams;                /* streams= */
static enum ftl_gc_policy gc_policy = FTL_GC_COST_BENEFIT; /* gc= */
static enum ftl_gc_mode gc_mode = FTL_GC_WATERMARK; /* gc-mode= */
static bool hot_cold = true;            /* hot-cold= */
static unsigned wl_threshold;           /* wl-threshold= */
static unsigned endurance;              /* endurance= */
static char *stats_path;                /* stats= */
static unsigned stats_interval = 1;     /* stats-interval= */
static bool rotational;                 /* rotational= */
static uint64_t timeout_ns = FTL_DEFAULT_TIMEOUT_NS; /* timeout= */
static unsigned timeout_retries = FTL_DEFAULT_TIMEOUT_RETRIES;
                                        /* timeout-retries= */
static struct ftl_timing timing = {     /* timing= and the latencies */
  .read_ns    = FTL_DEFAULT_READ_LATENCY_NS,
  .program_ns = FTL_DEFAULT_PROGRAM_LATENCY_NS,
  .erase_ns   = FTL_DEFAULT_ERASE_LATENCY_NS,
  .channels   = FTL_DEFAULT_CHANNELS,
  .dies       = FTL_DEFAULT_DIES,
};
static int timing_key = -1;             /* timing= (-1: not given) */
static bool latency_given;              /* a latency, channels or dies */
static char *fault_file;                /* debug-faults= (tests only) */
static uint64_t write_cache = FTL_WRITE_CACHE_AUTO; /* write-cache= */
static uint64_t write_cache_bypass = FTL_DEFAULT_WRITE_CACHE_BYPASS;

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
}

/* Parse a duration key (a number with us, ms or s). */
static int
parse_duration (const char *key, const char *value, uint64_t *ns)
{
  char err[256];

  if (ftl_parse_duration (value, ns, err, sizeof err) < 0) {
    nbdkit_error ("%s: %s", key, err);
    return -1;
  }
  return 0;
}

/* Parse channels= or dies=: 1 to FTL_MAX_UNITS. */
static int
parse_units (const char *key, const char *value, unsigned *r)
{
  if (nbdkit_parse_unsigned (key, value, r) == -1)
    return -1;
  if (*r < 1 || *r > FTL_MAX_UNITS) {
    nbdkit_error ("%s must be from 1 to %d: %s", key, FTL_MAX_UNITS, value);
    return -1;
  }
  return 0;
}

/* Parse a size that must be a power of 2 in [min, max]. */
static int
parse_power_of_2 (const char *key, const char *value,
                  uint64_t min, uint64_t max, uint32_t *r)
{
  int64_t v = nbdkit_parse_size (value);

  if (v == -1)
    return -1;
  if (v < (int64_t) min || v > (int64_t) max || (v & (v - 1)) != 0) {
    nbdkit_error ("%s must be a power of 2 from %" PRIu64 " to %" PRIu64
                  ": %s", key, min, max, value);
    return -1;
  }
  *r = v;
  return 0;
}

/* Parse op=: a decimal percentage such as 28 or 12.5. */
static int
parse_op (const char *value, double *r)
{
  char *end;
  double d;

  errno = 0;
  d = strtod (value, &end);
  if (errno != 0 || end == value || *end != '\0' || !isfinite (d) ||
      d < FTL_MIN_OP_PERCENT || d > FTL_MAX_OP_PERCENT) {
    nbdkit_error ("op must be a percentage from %g to %g: %s",
                  FTL_MIN_OP_PERCENT, FTL_MAX_OP_PERCENT, value);
    return -1;
  }
  *r = d;
  return 0;
}

static int
ftl_plugin_config (const char *key, const char *value)
{
  int64_t v;
  int b;

  if (strcmp (key, "file") == 0) {
    /* nbdkit changes directory when it becomes a daemon. */
    free (filename);
    filename = nbdkit_absolute_path (value);
    if (filename == NULL)
      return -1;
  }
  else if (strcmp (key, "size") == 0) {
    v = nbdkit_parse_size (value);
    if (v == -1)
      return -1;
    if (v == 0) {
      nbdkit_error ("size must be greater than 0");
      return -1;
    }
    size = v;
  }
  else if (strcmp (key, "op") == 0) {
    if (parse_op (value, &op_percent) == -1)
      return -1;
  }
  else if (strcmp (key, "page-size") == 0) {
    if (parse_power_of_2 (key, value, FTL_MIN_PAGE_SIZE, FTL_MAX_PAGE_SIZE,
                          &page_size) == -1)
      return -1;
  }
  else if (strcmp (key, "pages-per-block") == 0) {
    if (parse_power_of_2 (key, value, FTL_MIN_PAGES_PER_BLOCK,
                          FTL_MAX_PAGES_PER_BLOCK, &pages_per_block) == -1)
      return -1;
  }
  else if (strcmp (key, "streams") == 0) {
    if (nbdkit_parse_unsigned ("streams", value, &streams) == -1)
      return -1;
    if (streams < 1 || streams > FTL_MAX_STREAMS) {
      nbdkit_error ("streams must be from 1 to %d: %s",
                    FTL_MAX_STREAMS, value);
      return -1;
    }
  }
  else if (strcmp (key, "gc") == 0) {
    int p = ftl_gc_policy_from_name (value);
    if (p == -1) {
      nbdkit_error ("gc must be cost-benefit or greedy: %s", value);
      return -1;
    }
    gc_policy = p;
  }
  else if (strcmp (key, "gc-mode") == 0) {
    int m = ftl_gc_mode_from_name (value);
    if (m == -1) {
      nbdkit_error ("gc-mode must be deadline or watermark: %s", value);
      return -1;
    }
    gc_mode = m;
  }
  else if (strcmp (key, "hot-cold") == 0) {
    int hc = nbdkit_parse_bool (value);
    if (hc == -1)
      return -1;
    hot_cold = hc;
  }
  else if (strcmp (key, "wl-threshold") == 0) {
    if (nbdkit_parse_unsigned ("wl-threshold", value, &wl_threshold) == -1)
      return -1;
    if (wl_threshold < 1) {
      nbdkit_error ("wl-threshold must be at least 1: %s", value);
      return -1;
    }
  }
  else if (strcmp (key, "endurance") == 0) {
    if (nbdkit_parse_unsigned ("endurance", value, &endurance) == -1)
      return -1;
    if (endurance < 1) {
      nbdkit_error ("endurance must be at least 1: %s", value);
      return -1;
    }
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
    b = nbdkit_parse_bool (value);
    if (b == -1)
      return -1;
    rotational = b;
  }
  else if (strcmp (key, "timeout") == 0) {
    if (parse_duration (key, value, &timeout_ns) == -1)
      return -1;
    if (timeout_ns > 0 && timeout_ns < 1000000) {
      nbdkit_error ("timeout must be 0 (off) or at least 1ms: %s", value);
      return -1;
    }
  }
  else if (strcmp (key, "timeout-retries") == 0) {
    if (nbdkit_parse_unsigned (key, value, &timeout_retries) == -1)
      return -1;
    if (timeout_retries > 1000000) {
      nbdkit_error ("timeout-retries must be at most 1000000: %s", value);
      return -1;
    }
  }
  else if (strcmp (key, "timing") == 0) {
    b = nbdkit_parse_bool (value);
    if (b == -1)
      return -1;
    timing_key = b;
  }
  else if (strcmp (key, "read-latency") == 0) {
    if (parse_duration (key, value, &timing.read_ns) == -1)
      return -1;
    latency_given = true;
  }
  else if (strcmp (key, "program-latency") == 0) {
    if (parse_duration (key, value, &timing.program_ns) == -1)
      return -1;
    latency_given = true;
  }
  else if (strcmp (key, "erase-latency") == 0) {
    if (parse_duration (key, value, &timing.erase_ns) == -1)
      return -1;
    latency_given = true;
  }
  else if (strcmp (key, "channels") == 0) {
    if (parse_units (key, value, &timing.channels) == -1)
      return -1;
    latency_given = true;
  }
  else if (strcmp (key, "dies") == 0) {
    if (parse_units (key, value, &timing.dies) == -1)
      return -1;
    latency_given = true;
  }
  else if (strcmp (key, "write-cache") == 0) {
    v = nbdkit_parse_size (value);
    if (v == -1)
      return -1;
    write_cache = v;
  }
  else if (strcmp (key, "write-cache-bypass") == 0) {
    v = nbdkit_parse_size (value);
    if (v == -1)
      return -1;
    write_cache_bypass = v;
  }
  else if (powercut_config (key, value, &b))
    return b;
  else if (stats_config (key, value, &b))
    return b;
  else if (errors_config (key, value, &b))
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
  char *dir;
  int r;

  if (filename == NULL) {
    nbdkit_error ("you must supply the file=<FILENAME> parameter");
    return -1;
  }

  /* Giving a latency, channels or dies turns the timing model on,
   * unless timing=false says otherwise.
   */
  timing.enabled = timing_key == -1 ? latency_given : timing_key;
  if (timing.enabled &&
      (uint64_t) timing.channels * timing.dies > FTL_MAX_UNITS) {
    nbdkit_error ("channels x dies must be at most %d: %u x %u",
                  FTL_MAX_UNITS, timing.channels, timing.dies);
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

  return stats_config_complete ();
}

#define ftl_plugin_config_help \
  "file=<FILENAME>     (required) The image; created if absent and size= is given.\n" \
  "size=<SIZE>                    Disk size (required to create an image).\n" \
  "op=<PERCENT>                   Over-provisioning of a new image (default 28).\n" \
  "page-size=<SIZE>               Page size of a new image (default 4096).\n" \
  "pages-per-block=<N>            Pages per erase block of a new image (default 256).\n" \
  "streams=<N>                    Host write frontiers (default: 1 per 64 spare erase blocks, 1 to 4).\n" \
  "gc=cost-benefit|greedy         Garbage collection victim policy (default cost-benefit).\n" \
  "gc-mode=deadline|watermark     How GC shares the device with requests (default watermark).\n" \
  "hot-cold=<BOOL>                Separate hot from cold data (default true).\n" \
  "wl-threshold=<N>               Erase count spread that triggers static wear leveling (default 16).\n" \
  "endurance=<N>                  Erases after which an erase block is retired (default 3000).\n" \
  "stats=<FILENAME>               Write statistics as JSON to this file.\n" \
  "stats-interval=<SECS>          Rewrite them this often while busy (default 1).\n" \
  "rotational=<BOOL>              Advertise a rotating disk (default false).\n" \
  "timeout=<DURATION>             Request deadline, e.g. 500ms (default 30s, 0 = off).\n" \
  "timeout-retries=<N>            Deadline resets of a progressing request (default 3).\n" \
  "timing=<BOOL>                  NAND timing model (default false).\n" \
  "read-latency=<DURATION>        Page read time of the model (default 75us).\n" \
  "program-latency=<DURATION>     Page program time of the model (default 1ms).\n" \
  "erase-latency=<DURATION>       Block erase time of the model (default 4500us).\n" \
  "channels=<N>                   Channels of the model (default 8).\n" \
  "dies=<N>                       Dies per channel of the model (default 4).\n" \
  "write-cache=<SIZE>             Volatile write cache (default 1/1024 of the disk,\n" \
  "                               1M to 64M; 0 = every write reaches the image).\n" \
  "write-cache-bypass=<SIZE>      Writes of whole pages this large or larger go\n" \
  "                               straight to the image (default 128K, 0 = never).\n" \
  STATS_CONFIG_HELP \
  ERRORS_CONFIG_HELP \
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
  struct ftl_options opts = {
    .path            = filename,
    .logical_bytes   = size,
    .page_size       = page_size,
    .pages_per_block = pages_per_block,
    .op_percent      = op_percent,
    .streams         = streams,
    .gc_policy       = gc_policy,
    .gc_mode         = gc_mode,
    .one_log         = !hot_cold,
    .wl_threshold    = wl_threshold,
    .endurance       = endurance,
    .readonly        = false,
    .debug           = (ftl_debug_gc       ? FTL_DEBUG_GC : 0) |
                       (ftl_debug_ckpt     ? FTL_DEBUG_CKPT : 0) |
                       (ftl_debug_recovery ? FTL_DEBUG_RECOVERY : 0) |
                       (ftl_debug_alloc    ? FTL_DEBUG_ALLOC : 0),
    .log             = log_message,
    .log_opaque      = NULL,
    .timeout_ns      = timeout_ns,
    .timeout_retries = timeout_retries,
    .timing          = timing,
    .fault_file      = fault_file,
    .write_cache_bytes = write_cache,
    .write_cache_bypass = write_cache_bypass,
    .errors          = *errors_options (),
  };
  int r;

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
  r = ftl_close (ftl);
  ftl = NULL;
  if (r < 0)
    nbdkit_error ("%s: close: %s", filename, strerror (-r));
}

static void *
ftl_plugin_open (int readonly)
{
  return NBDKIT_HANDLE_NOT_NEEDED;
}

static int64_t
ftl_plugin_get_size (void *handle)
{
  return geometry.logical_bytes;
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
 * a read.  Flush covers all connections, so multi-conn is safe.
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
  r = ftl_read (ftl, buf, count, offset);
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
  r = ftl_write (ftl, buf, count, offset,
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
  stats_write ();
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
  r = ftl_trim (ftl, count, offset, flags & NBDKIT_FLAG_FUA ? FTL_FUA : 0);
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
  r = ftl_zero (ftl, count, offset, f);
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
  r = ftl_extents (ftl, count, offset, add_extent, &ctx);
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

static struct nbdkit_plugin plugin = {
  .name              = "ftl",
  .longname          = "nbdkit flash translation layer plugin",
  .version           = PACKAGE_VERSION,
  .description       = "A log-structured flash translation layer over a file",
  .unload            = ftl_plugin_unload,
  .config            = ftl_plugin_config,
  .config_complete   = ftl_plugin_config_complete,
  .config_help       = ftl_plugin_config_help,
  .magic_config_key  = "file",
  .get_ready         = ftl_plugin_get_ready,
  .after_fork        = ftl_plugin_after_fork,
  .cleanup           = ftl_plugin_cleanup,
  .open              = ftl_plugin_open,
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
