/* nbdkit-ftl: the NAND timing model.  See timing.h. */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl.h"
#include "nand/timing.h"
#include "util/clock.h"
#include "util/util.h"

#define MB 1000000ULL
#define US 1000ULL
#define MS 1000000ULL
#define GB_ (1000ULL * 1000 * 1000)
#define MiB (1024ULL * 1024)

/* The presets.  Sources and derivations: man/nbdkit-ftl-plugin.pod,
 * section Timing.  Published figures are the data sheet's (or, where
 * the data sheet has none, a review's); component values (tR, tPROG,
 * tBERS, planes) are those of the drive's NAND generation, with tPROG
 * chosen so that dies x planes x NAND page / tPROG gives the drive's
 * published sequential write figure (sata-qlc: its figure once the SLC
 * cache is full).  The host link's time per command (host_command_ns)
 * is what, with a 4 KiB transfer, gives the published random IOPS at
 * queue depth 32 (SATA: 1 / (3.5 + 7.25 us) = 93,000 against 98,000
 * reads and 88,000 writes; nvme-tlc: 1 / (0.7 + 0.59 us) = 778,000
 * against 740,000 and 800,000); the controller's overhead (command_ns)
 * is the rest of what the QD1 latencies need, as before the link's
 * share was modeled.
 */
static const struct ftl_timing_preset presets[] = {
  {
    .name = "sata-tlc",
    .drive = "Samsung 870 EVO 1TB",
    .timing = {
      .enabled = true,
      .read_ns = 45 * US, .program_ns = 950 * US, .erase_ns = 3500 * US,
      .channels = 8, .dies = 2, .planes = 2, .nand_page = 16384,
      .nand_block = 24 * MiB,
      .channel_rate = 800 * MB, .host_rate = 565 * MB,
      .command_ns = 16500, .host_command_ns = 3500,
    },
    .write_cache = FTL_WRITE_CACHE_AUTO,
    .cell_bits = 3,
    .slc_program_ns = 200 * US, .slc_read_ns = 30 * US,
    .slc_static_per_tb = 6 * GB_, .slc_dynamic_per_tb = 36 * GB_,
    .seq_read_mbs = 560, .seq_write_mbs = 530,
    .rr_qd1 = 13000, .rw_qd1 = 36000, .rr_qd32 = 98000, .rw_qd32 = 88000,
    .rw_steady = 10000,
    .map_cache_per_tb = GB_,            /* 1 GB LPDDR4 */
  },
  {
    .name = "nvme-tlc",
    .drive = "WD Black SN770 1TB",
    .timing = {
      .enabled = true,
      .read_ns = 50 * US, .program_ns = 700 * US, .erase_ns = 3500 * US,
      .channels = 4, .dies = 4, .planes = 2, .nand_page = 16384,
      .nand_block = 24 * MiB,
      .channel_rate = 1300 * MB, .host_rate = 7000 * MB,
      .command_ns = 9300, .host_command_ns = 700,
    },
    .write_cache = FTL_WRITE_CACHE_AUTO,
    .cell_bits = 3,
    .slc_program_ns = 200 * US, .slc_read_ns = 30 * US,
    .slc_static_per_tb = 0, .slc_dynamic_per_tb = 0,
    .seq_read_mbs = 5150, .seq_write_mbs = 4900,
    .rr_qd32 = 740000, .rw_qd32 = 800000,
    /* DRAM-less: the map is cached in a 64 MB host memory buffer (what
     * the drive asks of Windows; up to 200 MB elsewhere), TechPowerUp's
     * review of the 1 TB drive.
     */
    .map_cache_hmb = 64 * MiB,
  },
  {
    .name = "sata-qlc",
    .drive = "Samsung 870 QVO 1TB",
    .timing = {
      .enabled = true,
      .read_ns = 90 * US, .program_ns = 3300 * US, .erase_ns = 5000 * US,
      .channels = 8, .dies = 1, .planes = 2, .nand_page = 16384,
      .nand_block = 32 * MiB,
      .channel_rate = 800 * MB, .host_rate = 565 * MB,
      .command_ns = 16500, .host_command_ns = 3500,
    },
    .write_cache = FTL_WRITE_CACHE_AUTO,
    .cell_bits = 4,
    .slc_program_ns = 200 * US, .slc_read_ns = 35 * US,
    .slc_static_per_tb = 6 * GB_, .slc_dynamic_per_tb = 36 * GB_,
    .post_cache_mbs = 80,
    .seq_read_mbs = 560, .seq_write_mbs = 530,
    .rr_qd32 = 98000, .rw_qd32 = 88000,
    .map_cache_per_tb = GB_,            /* 1 GB LPDDR4 */
  },
  {
    .name = "enterprise-tlc",
    .drive = "Kingston DC600M 960GB",
    .timing = {
      .enabled = true,
      .read_ns = 50 * US, .program_ns = 950 * US, .erase_ns = 3500 * US,
      .channels = 8, .dies = 2, .planes = 2, .nand_page = 16384,
      .nand_block = 24 * MiB,
      .channel_rate = 800 * MB, .host_rate = 565 * MB,
      .command_ns = 16500, .host_command_ns = 3500,
      .suspend = true, .suspend_ns = 20 * US,
      .plp_buffer = 64 * MiB,
    },
    .write_cache = 0,
    .cell_bits = 3,
    .plp = true,
    .seq_read_mbs = 560, .seq_write_mbs = 530,
    .rr_qd32 = 94000, .rw_qd32 = 65000, .rw_steady = 65000,
    .map_cache_per_tb = GB_,            /* about 1 GB of DRAM per TB */
  },
};

const struct ftl_timing_preset *
ftl_timing_preset (const char *name)
{
  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    if (strcmp (presets[i].name, name) == 0)
      return &presets[i];
  return NULL;
}

const struct ftl_timing_preset *
ftl_timing_preset_default (void)
{
  return &presets[0];
}

const struct ftl_timing_preset *
ftl_timing_preset_at (size_t i)
{
  return i < sizeof presets / sizeof presets[0] ? &presets[i] : NULL;
}

/* The names, from the table, once. */
static char preset_names[256];
static pthread_once_t preset_names_once = PTHREAD_ONCE_INIT;

static void
make_preset_names (void)
{
  size_t len = 0;

  for (size_t i = 0; i < sizeof presets / sizeof presets[0]; i++)
    len += snprintf (preset_names + len, sizeof preset_names - len, "%s%s",
                     i ? ", " : "", presets[i].name);
  assert (len < sizeof preset_names);
}

const char *
ftl_timing_preset_names (void)
{
  pthread_once (&preset_names_once, make_preset_names);
  return preset_names;
}

int
timing_init (struct timing *t, const struct ftl_timing *o)
{
  memset (t, 0, sizeof *t);
  if (!o || !o->enabled)
    return 0;
  t->enabled = true;
  t->read_ns = o->read_ns;
  t->program_ns = o->program_ns;
  t->erase_ns = o->erase_ns;
  t->channels = o->channels ? o->channels : FTL_DEFAULT_CHANNELS;
  t->units = t->channels * (o->dies ? o->dies : FTL_DEFAULT_DIES);
  t->planes = o->planes ? o->planes : 1;
  t->nand_page = o->nand_page;
  t->nand_block = o->nand_block;
  /* ps per byte: 10^12 / rate, rounded up so that a rate is never
   * exceeded.
   */
  t->xfer_ps_per_byte = o->channel_rate
    ? (UINT64_C (1000000000000) + o->channel_rate - 1) / o->channel_rate : 0;
  t->host_ps_per_byte = o->host_rate
    ? (UINT64_C (1000000000000) + o->host_rate - 1) / o->host_rate : 0;
  t->command_ns = o->command_ns;
  t->host_command_ns = o->host_command_ns;
  t->suspend = o->suspend;
  t->suspend_ns = o->suspend_ns;
  t->plp_buffer = o->plp_buffer;
  t->die_free = calloc (t->units, sizeof *t->die_free);
  t->die_rfree = calloc (t->units, sizeof *t->die_rfree);
  t->chan_free = calloc (t->channels, sizeof *t->chan_free);
  t->die_busy = calloc (t->units, sizeof *t->die_busy);
  t->die_wait = calloc (t->units, sizeof *t->die_wait);
  t->chan_busy = calloc (t->channels, sizeof *t->chan_busy);
  t->start_ns = clock_now ();
  if (!t->die_free || !t->die_rfree || !t->chan_free || !t->die_busy ||
      !t->die_wait || !t->chan_busy) {
    timing_free (t);
    return -ENOMEM;
  }
  timing_geometry (t, 4096, 256);
  return 0;
}

void
timing_free (struct timing *t)
{
  free (t->die_free);
  free (t->die_rfree);
  free (t->chan_free);
  free (t->die_busy);
  free (t->die_wait);
  free (t->chan_busy);
  t->die_free = t->die_rfree = t->chan_free = NULL;
  t->die_busy = t->die_wait = t->chan_busy = NULL;
  t->enabled = false;
}

void
timing_geometry (struct timing *t, uint32_t page_size,
                 uint32_t pages_per_block)
{
  uint64_t k = t->nand_page > page_size
    ? (uint64_t) t->planes * (t->nand_page / page_size) : t->planes;

  if (k < 1)
    k = 1;
  if (k > pages_per_block)
    k = pages_per_block;
  t->page_size = page_size;
  t->group = k;
  t->groups = (pages_per_block + k - 1) / k;
  t->xfer_page_ns = t->xfer_ps_per_byte * page_size / 1000;
  uint64_t per_die = (uint64_t) pages_per_block * page_size
    / MIN (t->groups, t->units);
  t->erase_share_ppm = t->nand_block && per_die < t->nand_block
    ? per_die * 1000000 / t->nand_block : 1000000;
  /* A buffer's worth of programs over every die. */
  uint64_t stripe_bytes = (uint64_t) t->units * t->group * page_size;
  t->plp_window_ns = t->plp_buffer / stripe_bytes * t->program_ns;
}

/* Reserve dur on a resource whose next-free time is *slot, starting no
 * earlier than floor; return the start.
 */
static uint64_t
reserve (uint64_t *slot, uint64_t floor, uint64_t dur)
{
  uint64_t old = __atomic_load_n (slot, __ATOMIC_RELAXED), start;

  do
    start = MAX (floor, old);
  while (!__atomic_compare_exchange_n (slot, &old, start + dur, true,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return start;
}

/* Raise *slot to at least v. */
static void
raise_to (uint64_t *slot, uint64_t v)
{
  uint64_t old = __atomic_load_n (slot, __ATOMIC_RELAXED);

  while (old < v &&
         !__atomic_compare_exchange_n (slot, &old, v, true,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
    ;
}

/* A die operation of dur ns that could start at ready and starts at
 * start: the die's busy and waiting time.
 */
static void
charge_die (struct timing *t, unsigned die, uint64_t ready, uint64_t start,
            uint64_t dur)
{
  __atomic_fetch_add (&t->busy_ns, dur, __ATOMIC_RELAXED);
  __atomic_fetch_add (&t->die_busy[die], dur, __ATOMIC_RELAXED);
  if (start > ready)
    __atomic_fetch_add (&t->die_wait[die], start - ready, __ATOMIC_RELAXED);
}

/* A transfer of x ns on a channel, reserved from floor: its end. */
static uint64_t
transfer (struct timing *t, unsigned die, uint64_t floor, uint64_t x)
{
  unsigned ch = die % t->channels;

  if (x)
    __atomic_fetch_add (&t->chan_busy[ch], x, __ATOMIC_RELAXED);
  return reserve (&t->chan_free[ch], floor, x) + x;
}

unsigned
timing_die (const struct timing *t, uint32_t blk, uint32_t page)
{
  return ((uint64_t) blk * t->groups + page / t->group) % t->units;
}

uint64_t
timing_program (struct timing *t, uint32_t blk, uint32_t page, uint32_t n,
                uint64_t lat)
{
  uint64_t now = clock_now (), end = now;
  uint32_t last_page = t->groups * t->group;    /* the block's end */

  while (n > 0) {
    uint32_t g = page / t->group;
    uint32_t gend = MIN ((g + 1) * t->group, last_page);
    uint32_t cnt = MIN (n, gend - page);
    unsigned die = timing_die (t, blk, page);
    uint64_t e = transfer (t, die, now, cnt * t->xfer_page_ns);

    if (page + cnt == gend || page + cnt == last_page) {
      uint64_t start = reserve (&t->die_free[die], e, lat);
      charge_die (t, die, e, start, lat);
      e = start + lat;
    }
    end = MAX (end, e);
    page += cnt;
    n -= cnt;
  }
  return end;
}

/* One read of lat on die, no earlier than floor; returns its end. */
static uint64_t
read_die (struct timing *t, unsigned die, uint64_t floor, uint64_t lat)
{
  uint64_t start;

  if (t->suspend) {
    uint64_t rstart = MAX (floor,
                           __atomic_load_n (&t->die_rfree[die],
                                            __ATOMIC_RELAXED));
    uint64_t busy = __atomic_load_n (&t->die_free[die], __ATOMIC_RELAXED);
    if (busy > rstart) {
      /* A program or an erase is under way or queued: suspend it, and
       * push it (and what waits behind it) back by this read.
       */
      start = rstart + t->suspend_ns;
      __atomic_fetch_add (&t->die_free[die], lat + t->suspend_ns,
                          __ATOMIC_RELAXED);
      raise_to (&t->die_rfree[die], start + lat);
      __atomic_fetch_add (&t->suspends, 1, __ATOMIC_RELAXED);
      charge_die (t, die, floor, start, lat);
      return start + lat;
    }
    start = reserve (&t->die_free[die], rstart, lat);
    raise_to (&t->die_rfree[die], start + lat);
  }
  else
    start = reserve (&t->die_free[die], floor, lat);
  charge_die (t, die, floor, start, lat);
  return start + lat;
}

uint64_t
timing_read (struct timing *t, uint32_t blk, uint32_t page, uint32_t n,
             uint64_t lat)
{
  uint64_t now = clock_now (), end = now;

  while (n > 0) {
    uint32_t g = page / t->group;
    uint32_t cnt = MIN (n, (g + 1) * t->group - page);
    unsigned die = timing_die (t, blk, page);
    uint64_t e = read_die (t, die, now, lat);

    e = transfer (t, die, e, cnt * t->xfer_page_ns);
    end = MAX (end, e);
    page += cnt;
    n -= cnt;
  }
  return end;
}

uint64_t
timing_read_retry (struct timing *t, uint32_t blk, uint32_t n, uint64_t lat)
{
  uint64_t now = clock_now (), end = now;
  unsigned die = timing_die (t, blk, 0);

  for (uint32_t i = 0; i < n; i++)
    end = read_die (t, die, end, lat);
  return end;
}

uint64_t
timing_erase (struct timing *t, uint32_t blk, uint64_t lat)
{
  uint64_t now = clock_now (), end = now;
  unsigned span = MIN (t->groups, t->units);

  lat = lat * t->erase_share_ppm / 1000000;

  for (unsigned i = 0; i < span; i++) {
    unsigned die = timing_die (t, blk, i * t->group);
    uint64_t start = reserve (&t->die_free[die], now, lat);
    charge_die (t, die, now, start, lat);
    end = MAX (end, start + lat);
  }
  return end;
}

uint64_t
timing_host (struct timing *t, uint64_t t0, uint64_t done, uint64_t bytes,
             bool read)
{
  uint64_t now = MAX (clock_now (), done);
  uint64_t x = t->host_ps_per_byte * bytes / 1000 + t->host_command_ns;

  if (x)
    __atomic_fetch_add (&t->host_busy, x, __ATOMIC_RELAXED);
  if (read)             /* overhead, the media (done), then the data */
    return reserve (&t->host_free, now + t->command_ns, x) + x;
  /* A write's data crossed the link when it began. */
  uint64_t s = reserve (&t->host_free, t0, x);
  return MAX (now, MAX (s, t0 + t->command_ns) + x);
}

/* The sum and the largest of n atomic counters. */
static uint64_t
sum_max (const uint64_t *v, unsigned n, uint64_t *max)
{
  uint64_t sum = 0;

  *max = 0;
  for (unsigned i = 0; i < n; i++) {
    uint64_t x = __atomic_load_n (&v[i], __ATOMIC_RELAXED);
    sum += x;
    *max = MAX (*max, x);
  }
  return sum;
}

void
timing_get_util (const struct timing *t, struct timing_util *u)
{
  uint64_t die_max, chan_max, wait_max;
  double el;

  memset (u, 0, sizeof *u);
  if (!t->enabled)
    return;
  u->elapsed_ns = clock_now () - t->start_ns;
  el = u->elapsed_ns ? (double) u->elapsed_ns : 1;
  u->die_busy_ns = sum_max (t->die_busy, t->units, &die_max);
  u->die_wait_ns = sum_max (t->die_wait, t->units, &wait_max);
  u->chan_busy_ns = sum_max (t->chan_busy, t->channels, &chan_max);
  u->host_busy_ns = __atomic_load_n (&t->host_busy, __ATOMIC_RELAXED);
  u->die_util = u->die_busy_ns / el / t->units;
  u->die_util_max = die_max / el;
  u->chan_util = u->chan_busy_ns / el / t->channels;
  u->chan_util_max = chan_max / el;
  u->host_util = u->host_busy_ns / el;
  u->die_queue_depth = (u->die_busy_ns + u->die_wait_ns) / el / t->units;
}
