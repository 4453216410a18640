/* nbdkit-ftl: the NAND timing model.
 *
 * Owns the modeled time of the device's dies, channels and host link.
 * The NAND of a drive is channels x dies parallel dies ("units"); die d
 * sits on channel d mod channels.  A die reads or programs several
 * planes at once, so one NAND operation moves k FTL pages:
 *
 *   k = planes x nand_page / page_size       (1 at the least)
 *
 * Striping (superblocks).  The image layout is unchanged: with the
 * model on, one erase block of the image IS a superblock, a stripe of
 * one physical block on each of the dies it spans.  Its pages are cut
 * into program groups of k pages; group g of block b is programmed and
 * read on die
 *
 *   die (b, g) = (b x G + g) mod units,   G = ceil (pages_per_block / k)
 *
 * so consecutive groups go to consecutive dies (and channels), and a
 * stream that fills one block keeps every die busy.  A block spans
 * min (G, units) dies; when G < units (a small erase block, many dies)
 * consecutive blocks start on the dies that the previous one did not
 * use (the b x G term), so the open frontiers still cover the dies.
 * For full striping pick pages-per-block >= units x k: with 32 dies,
 * 4 planes and 16 KiB NAND pages one page-stripe is 2 MiB (512 FTL
 * pages of 4 KiB).  Erasing a block erases, in parallel, its part of a
 * physical block on every die it spans.  A physical NAND block
 * (nand_block, all planes: megabytes) is much larger than an image's
 * erase block per die (pages_per_block x page_size / dies spanned:
 * often tens of KiB), and a drive erases it once for all the data it
 * holds; so each die is busy for the superblock's share of tBERS,
 *
 *   tBERS x min (1, bytes per die / nand_block)
 *
 * (the whole tBERS when nand_block is 0).
 *
 * One stripe, one sleep.  media.c asks for a whole run at once (a
 * destage batch, a GC batch, a host read run), a stripe of at most one
 * group per die at a time (units x k pages: most runs are one), and
 * sleeps once per stripe, until the latest end among its groups:
 *
 *   program, per group:  channel transfer of its pages, then tPROG on
 *                        the die (after the transfer and after the
 *                        die's previous work);
 *   read, per group:     tR on the die, then the channel transfer of
 *                        its pages;
 *   erase:               tBERS on every die of the block.
 *
 * A program that does not reach the last page of a group (nor of the
 * block) only transfers its pages: the die's page buffer holds them
 * until the group is complete, and the call that completes the group
 * pays the program for all of its pages, as a controller that fills a
 * multi-plane page before it programs it.
 *
 * Each die, each channel and the host link keeps its next-free time
 * (CLOCK_MONOTONIC ns), an atomic updated by compare-and-swap:
 *
 *   start = max (earliest, next free);  next free = start + duration
 *
 * There is no lock: the die and the channel of a group are reserved one
 * after the other, which may leave a short idle gap when two threads
 * race for the same channel, never an overlap.
 *
 * Reads and suspension.  A host read waits only for the dies of its
 * own pages (behind whatever they are doing).  With suspend on, a read
 * that finds its die busy with a program or an erase suspends it: the
 * read starts after suspend_ns (behind other reads only), and the
 * suspended operation, and everything queued behind it, is pushed back
 * by the read's time plus suspend_ns.
 *
 * Power-loss protection (plp_buffer): a program completes once its
 * data is in the drive's protected buffer, not when the dies are done:
 * its caller waits only until the modeled end minus the time the dies
 * take to program a buffer's worth (plp_window_ns), so the dies may be
 * behind the requests by at most the buffer.
 *
 * Host side (request.c): every host command costs command_ns of
 * controller overhead, then it crosses the host link (SATA or PCIe; the
 * link is one shared resource, one command at a time): its data at
 * host_rate bytes/s plus host_command_ns of the protocol's own traffic
 * (SATA's command, DMA setup and status frames; NVMe's queue entries),
 * which caps random IOPS at deep queues as on a real link.  A write
 * that the write cache takes completes then: that is the DRAM cache's
 * acknowledgment; the NAND work happens when the destager programs it.
 *
 * Latencies come from the caller for each operation (media.c), so that
 * a caller can charge different latencies to different blocks (an SLC
 * mode block, say).  The model is off (and costs one test) unless
 * timing_init was given enabled = true.
 */

#ifndef FTL_TIMING_H
#define FTL_TIMING_H

#include <stdbool.h>
#include <stdint.h>

struct timing {
  bool enabled;
  uint64_t read_ns, program_ns, erase_ns;   /* tR, tPROG, tBERS */
  uint64_t slc_program_ns, slc_read_ns;     /* blocks in SLC mode (slc.c) */
  uint64_t xfer_ps_per_byte;    /* channel transfer; 0: free */
  uint64_t host_ps_per_byte;    /* host link transfer; 0: free */
  uint64_t command_ns;          /* controller overhead per host command */
  uint64_t host_command_ns;     /* host link time per command, beside data */
  bool suspend;                 /* reads suspend programs and erases */
  uint64_t suspend_ns;
  uint64_t plp_buffer;          /* bytes; 0: none */
  unsigned channels, units, planes;
  uint32_t nand_page;           /* bytes; 0: the FTL page */
  uint64_t nand_block;          /* bytes per die; 0: tBERS whole */
  /* Set by timing_geometry: */
  uint32_t page_size;
  uint32_t group;               /* k: FTL pages per die operation */
  uint32_t groups;              /* G: groups per erase block */
  uint64_t xfer_page_ns;        /* channel time of one FTL page */
  uint64_t erase_share_ppm;     /* share of tBERS an erase costs a die */
  uint64_t plp_window_ns;       /* programs wait until end - this */
  /* Next-free times, CLOCK_MONOTONIC ns (atomic). */
  uint64_t *die_free;           /* per die: every operation */
  uint64_t *die_rfree;          /* per die: reads (with suspend) */
  uint64_t *chan_free;          /* per channel */
  uint64_t host_free;           /* the host link */
  /* Counters (atomic): die time charged, ns, and suspensions. */
  uint64_t busy_ns, suspends;
  /* Utilization (atomic; timing_get_util): per die the time it was
   * charged and the time operations waited for it (from when they could
   * have started to when they did), per channel its transfer time, and
   * the host link's; all in ns, since start_ns.
   */
  uint64_t start_ns;
  uint64_t *die_busy, *die_wait, *chan_busy;
  uint64_t host_busy;
};

/* What the dies, the channels and the host link were busy with since
 * the model started (elapsed_ns ago): their mean and busiest shares of
 * the time (0 to 1; work booked ahead of now counts, so a share may
 * exceed 1 for a moment), and the mean number of operations at a die,
 * queued or in service (Little's law: the dies' busy and waiting time
 * over the time elapsed).
 */
struct timing_util {
  uint64_t elapsed_ns;
  uint64_t die_busy_ns, die_wait_ns, chan_busy_ns, host_busy_ns;
  double die_util, die_util_max;
  double chan_util, chan_util_max;
  double host_util;
  double die_queue_depth;
};
extern void timing_get_util (const struct timing *t, struct timing_util *u);

struct ftl_timing;
extern int timing_init (struct timing *t, const struct ftl_timing *opts);
extern void timing_free (struct timing *t);

/* The image's geometry: FTL page size and pages per erase block. */
extern void timing_geometry (struct timing *t, uint32_t page_size,
                             uint32_t pages_per_block);

/* The die of page `page` of block blk, and a die's channel. */
extern unsigned timing_die (const struct timing *t, uint32_t blk,
                            uint32_t page);

/* Reserve the model for n pages from `page` of block blk, with a NAND
 * latency of lat per group; return the modeled end (CLOCK_MONOTONIC
 * ns) of the whole operation.  timing_erase reserves every die of the
 * block for lat.  timing_read_retry: n more reads of lat on the die of
 * the block's first group.
 */
extern uint64_t timing_program (struct timing *t, uint32_t blk,
                                uint32_t page, uint32_t n, uint64_t lat);
extern uint64_t timing_read (struct timing *t, uint32_t blk, uint32_t page,
                             uint32_t n, uint64_t lat);
extern uint64_t timing_erase (struct timing *t, uint32_t blk, uint64_t lat);
extern uint64_t timing_read_retry (struct timing *t, uint32_t blk,
                                   uint32_t n, uint64_t lat);

/* A host command that began at t0, whose media work is done at `done`
 * (or now, if later), and that moves `bytes` over the host link: the
 * time it completes.  A read's data crosses the link after the command
 * overhead and the media work; a write's crossed it from t0, and the
 * write completes no earlier than t0 + command_ns + its transfer.
 */
extern uint64_t timing_host (struct timing *t, uint64_t t0, uint64_t done,
                             uint64_t bytes, bool read);

#endif /* FTL_TIMING_H */
