/* nbdkit-ftl: media that ages: the raw bit error model, ECC and read
 * retry, and the media clock.
 *
 * Owns the media clock (retention time), each erase block's program
 * time and its reads since the erase, and the error model's counters.
 * The data on the backing file is never changed: the model decides,
 * for every page a host read takes from the log (after its checksum
 * was verified), how many raw bit errors each ECC codeword of it
 * would hold, and so whether the read is corrected (counted), needs
 * read retry steps (counted, and one page read of latency each in the
 * timing model) or fails as uncorrectable (-EIO: never wrong data).
 * Garbage collection's reads of the pages it relocates draw the same
 * way; a page they find uncorrectable moves as lost data (POISON).
 *
 * The raw bit error rate of a page of erase block b (see the man
 * page's MEDIA ERRORS for the sources of the defaults):
 *
 *   w     = (erase count of b + pe_offset) / endurance
 *   base  = B0 * (1 + BW * w)                      wear: wider cell
 *                                                  distributions,
 *                                                  not recoverable
 *   shift = R * (w + R0) * days^K                  retention (charge
 *         + D * disturb * (w + D0) * reads         loss), read disturb
 *   rber  = scale * (base + shift)
 *
 * where days is the media clock's age of the block's first program
 * since its erase, and reads the pages read from the block since.
 * The shift moves threshold voltages; read retry step s (1..steps)
 * reads again with shifted references and leaves
 * shift * (RF + (1 - RF) * RHO^s) of it.  At each step every codeword
 * of the page draws its bit errors (Poisson with mean rber * bits);
 * the step succeeds if none has more than ecc_bits.
 *
 * The media clock: seconds, the wall clock plus a skew kept in the
 * checkpoints; while the disk runs it advances time_scale times as
 * fast as the wall clock, and ftlctl age moves it forward.  Time
 * passes while the image is at rest, as it does for a drive on a
 * shelf.
 *
 * Draws are a hash of (seed, page, erase count, the block's read
 * index, step, codeword): the same reads in the same order give the
 * same errors.
 *
 * Concurrency: prog[] is written by the thread that programs the
 * block's first page (it owns the block's frontier) and read with
 * relaxed atomics; reads[] and reclaim[] are atomics; the settings are
 * fixed at open.
 */

#ifndef FTL_ERRMODEL_H
#define FTL_ERRMODEL_H

#include <stdbool.h>
#include <stdint.h>

/* Defaults (see the man page for their sources). */
#define EM_B0       1.0e-4      /* fresh TLC raw bit error rate */
#define EM_BW       9.0         /* ... 10x at the rated endurance */
#define EM_R        2.6e-4      /* retention: 1e-2 at the endurance after
                                 * a year, 1e-3 fresh */
#define EM_R0       0.1
#define EM_K        0.6         /* retention grows as days^0.6 */
#define EM_D        3.3e-8      /* read disturb per page read of the
                                 * block: 5e-3 after 1e5 reads at the
                                 * endurance */
#define EM_D0       0.5
#define EM_RHO      0.75        /* read retry: shift left per step ... */
#define EM_RF       0.3         /* ... of what a step can recover */
#define EM_CODEWORD 1024        /* bytes of data per ECC codeword */
#define EM_ECC_BITS 72          /* correctable bits per codeword */
#define EM_RETRY_STEPS 8
#define EM_RECLAIM_READS 100000 /* page reads of a block before read
                                 * reclaim moves its data */
#define EM_SCRUB_NS (1000 * UINT64_C (1000000))  /* a block a second */

struct ftl_errors;

struct errmodel {
  bool enabled;
  uint64_t seed;
  double time_scale;
  double scale, disturb;        /* multipliers of the rates */
  uint32_t ecc_bits, codeword_bytes, codewords;
  uint32_t steps;
  uint32_t reclaim_reads;       /* 0: read reclaim off */
  uint64_t scrub_ns;            /* 0: scrub off */
  uint32_t pe_offset;           /* added cycles (ftlctl age --pe) */
  uint64_t created;             /* the image's creation: program hours
                                 * count from it */
  /* The media clock: clock0 at mono0 (clock_now), time_scale. */
  int64_t clock0;
  uint64_t mono0;
  int64_t skew0;                /* media clock - wall clock at open */
  /* Per erase block. */
  uint32_t blocks;
  int64_t *prog;                /* media clock of its first program
                                 * since its erase; 0: none (or not
                                 * known) */
  uint32_t *reads;              /* pages read since its erase */
  uint8_t *reclaim;             /* due for read reclaim */
  /* Counters since open (atomic). */
  uint64_t uncorrectable, reclaimed, scrub_pages, scrub_blocks;
  uint64_t scrub_last;          /* clock_now of the last scrub */
  uint32_t scrub_next;          /* the next block the scrub looks at */
};

/* At open, before recovery: the settings, and the clock from the
 * checkpoint's skew (set later by errmodel_set_clock).
 */
extern int errmodel_init (struct errmodel *em, const struct ftl_errors *o,
                          uint32_t blocks, uint32_t page_size,
                          uint64_t created);
extern void errmodel_free (struct errmodel *em);
/* The media clock now, in seconds. */
extern int64_t errmodel_now (const struct errmodel *em);
/* The media clock's skew now (for a checkpoint), and at open (from
 * one); pe_offset likewise.
 */
extern int64_t errmodel_skew (const struct errmodel *em);
extern void errmodel_set_clock (struct errmodel *em, int64_t skew,
                                uint32_t pe_offset);

/* Program hours as the checkpoint keeps them (0: none; see format.h)
 * and back.
 */
extern uint32_t errmodel_program_hour (const struct errmodel *em,
                                       uint32_t blk);
extern void errmodel_set_program_hour (struct errmodel *em, uint32_t blk,
                                       uint32_t hour);

/* The block's first page was programmed; it was erased. */
static inline void
errmodel_programmed (struct errmodel *em, int64_t now, uint32_t blk)
{
  __atomic_store_n (&em->prog[blk], now, __ATOMIC_RELAXED);
}
extern void errmodel_erased (struct errmodel *em, uint32_t blk);

/* The outcome of reading a page, as the model draws it. */
struct em_outcome {
  bool ok;                      /* corrected (possibly after retries) */
  uint32_t steps;               /* read retry steps taken */
  uint64_t bits;                /* bits corrected */
  uint32_t worst;               /* most errors in one codeword, at the
                                 * step that succeeded */
};
/* The raw bit error rates of block blk after reads page reads. */
struct em_rates {
  double base, shift;
};
extern void errmodel_rates (const struct errmodel *em, uint32_t blk,
                            uint32_t erase_count, uint32_t endurance,
                            uint64_t reads, int64_t now,
                            struct em_rates *r);
/* Draw the outcome of reading page ppn with rates r, as the key-th
 * read of its block.
 */
extern void errmodel_draw (const struct errmodel *em,
                           const struct em_rates *r, uint32_t ppn,
                           uint32_t erase_count, uint64_t key,
                           struct em_outcome *out);

#endif /* FTL_ERRMODEL_H */
