/* nbdkit-ftl: a power cut on demand (ftl_power_cut, see ftl.h).
 *
 * What a drive without power-loss protection loses when it is
 * unplugged: its DRAM write cache.  What it may leave half done: the
 * programs in flight, a batch of destage writes spread over its dies,
 * of which any subset completed, one of them perhaps torn.  The cut
 * reproduces that from a seed:
 *
 *   1. the handle is marked off: requests that start now fail with
 *      -EIO (request.c);
 *   2. the watchdog, the background thread and the destager stop (each
 *      finishes the step it is in: that happened before the power went);
 *   3. a batch is picked as the destage in flight, as the destager
 *      picks one (cache_pick: the oldest dirty pages and their logical
 *      neighbours; its size drawn from the seed, 1 to ALLOC_PROGRAM_MAX);
 *      each page reached the media with probability 1/2; those that did
 *      are programmed now, as a destage would (write_cached), and with
 *      tear the last of them is torn (media_tear): its OOB entry says
 *      what it should hold, its data is cut short, so it fails its
 *      checksum and recovery treats it as a write that never completed;
 *   4. the media is powered off: every operation fails with -EIO, so
 *      that nothing still running in other threads reaches the file.
 *
 * Nothing is synced: what was programmed stays in the file, as on NAND.
 * The next open finds no clean shutdown and rolls the log forward.
 * Everything a flush or a FUA write made durable was in the log before
 * the cut and is untouched by it.
 *
 * What the cut does not model is a crash of the host: every write the
 * process completed stays in the file (the host's page cache keeps it
 * whether or not it was synced).  So with sync=false, where flushes,
 * barriers and checkpoints reach the page cache only, the cut is the
 * death of the server, and loses exactly what it loses with sync=true:
 * the drive's DRAM cache and the destage in flight.  A crash of the
 * host during a sync=false session may lose any write since its open;
 * tests/unit/test-crash.c enumerates that (test_crash_host).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "ftl-internal.h"

static uint64_t
rnd (uint64_t *s)
{
  *s ^= *s >> 12;
  *s ^= *s << 25;
  *s ^= *s >> 27;
  return *s * UINT64_C (0x2545F4914F6CDD1D);
}

/* Step 3: the destage writes in flight. */
static int
in_flight (struct ftl *ftl, uint64_t *rng, bool tear, struct ftl_power_cut *pc)
{
  struct cache_entry e[ALLOC_PROGRAM_MAX], sub[ALLOC_PROGRAM_MAX];
  uint32_t idx[ALLOC_PROGRAM_MAX];
  uint32_t want = 1 + rnd (rng) % ALLOC_PROGRAM_MAX;
  uint32_t n, k = 0;
  int ticket, r = 0;

  n = cache_pick (ftl, e, want, UINT64_MAX, -1, &ticket);
  pc->in_flight = n;
  if (n == 0)
    return 0;
  for (uint32_t i = 0; i < n; i++) {
    e[i].done = false;
    if (rnd (rng) & 1) {
      idx[k] = i;
      sub[k++] = e[i];
    }
  }
  if (k > 0) {
    dl_hold ();
    ckpt_shared (ftl);
    r = write_cached (ftl, sub, k);
    ckpt_release (ftl);
    dl_release ();
  }
  /* The last page programmed (in logical order, as write_cached
   * programs a frontier's pages) is the one torn.
   */
  for (uint32_t i = 0; r == 0 && i < k; i++) {
    if (!sub[i].done)
      continue;
    e[idx[i]].done = true;
    pc->programmed++;
    pc->torn_lpn = sub[i].lpn;
  }
  if (r == 0 && tear && pc->programmed > 0) {
    uint32_t ppn = l2p_load (ftl, pc->torn_lpn);
    assert (ppn != FTL_UNMAPPED);
    pc->torn_bytes = rnd (rng) % (ftl->page_size / 512) * 512;
    r = media_tear (&ftl->media, ppn, pc->torn_bytes);
    pc->torn = r == 0;
  }
  /* The batch leaves the flight registry, so that no flush waits for
   * it; what it held is lost with the rest of the cache.
   */
  cache_complete (ftl, e, n, ticket, -EIO);
  return r;
}

int
ftl_power_cut (struct ftl *ftl, uint64_t seed, bool tear,
               struct ftl_power_cut *out)
{
  struct ftl_power_cut pc;
  uint64_t rng = seed ^ UINT64_C (0x9E3779B97F4A7C15);
  uint64_t dirty;
  int r = 0;

  memset (&pc, 0, sizeof pc);
  if (!rng)
    rng = 1;
  if (__atomic_exchange_n (&ftl->powered_off, true, __ATOMIC_ACQ_REL))
    return -EALREADY;
  ftl_stop_watchdog (ftl);
  ftl_stop_background (ftl);
  if (ftl->cache.nslots && !ftl->readonly) {
    dirty = __atomic_load_n (&ftl->cache.dirty, __ATOMIC_RELAXED);
    r = in_flight (ftl, &rng, tear, &pc);
    pc.lost_pages = dirty > pc.programmed ? dirty - pc.programmed : 0;
    pc.lost_pages += pc.torn;
  }
  media_power_off (&ftl->media);
  log_msg (ftl, FTL_LOG_WARN, "power cut: %" PRIu64 " cached pages lost; "
           "%u pages were being destaged, %u of them reached the media%s",
           pc.lost_pages, pc.in_flight, pc.programmed,
           pc.torn ? ", the last one torn" : "");
  if (out)
    *out = pc;
  /* A failed program in flight is part of the cut, not an error. */
  (void) r;
  return 0;
}
