/* ftlctl: block I/O traces, read into memory for ftlctl replay.
 *
 * Three formats, detected from the first meaningful line or named:
 *
 *   nbdkit-log  nbdkit's log filter (nbdkit --filter=log ...
 *               logfile=FILE): "DATE TIME [connection=N ]Write id=N
 *               offset=0x... count=0x... fua=0 ..." for each request
 *               and "... ...Write id=N return=R" when it completes;
 *               a request whose completion failed is not replayed.
 *   blkparse    blkparse's default text output: "MAJ,MIN CPU SEQ TIME
 *               PID ACTION RWBS SECTOR + SECTORS [COMM]", 512-byte
 *               sectors; events of one action (Q, queued, unless
 *               told) are the requests; blkparse's closing summary is
 *               ignored.
 *   msr         the MSR Cambridge / SNIA CSV block traces:
 *               "Timestamp,Hostname,DiskNumber,Type,Offset,Size,
 *               ResponseTime", the timestamp in Windows filetime
 *               (100 ns units), Type Read or Write, offset and size in
 *               bytes; an optional header line.
 *
 * Requests keep the order of the trace; times are seconds since its
 * first request.  A line that cannot be read is counted as malformed
 * and reported with its line number (all of them with strict, which
 * then stops at the first).
 */

#ifndef FTLCTL_TRACE_H
#define FTLCTL_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum trace_format { TRACE_AUTO, TRACE_NBDKIT_LOG, TRACE_BLKPARSE,
                    TRACE_MSR };
/* "nbdkit-log"... and back (-1: unknown). */
extern const char *trace_format_name (enum trace_format f);
extern int trace_format_from_name (const char *name);

enum trace_op { TRACE_READ, TRACE_WRITE, TRACE_TRIM, TRACE_ZERO,
                TRACE_FLUSH, TRACE_OP__MAX };
extern const char *trace_op_name (enum trace_op op);

#define TRACE_FUA       (1u << 0)
#define TRACE_MAY_TRIM  (1u << 1)   /* zero: may unmap */
#define TRACE_SKIP      (1u << 2)   /* not replayed (see skip) */

/* Why a request is not replayed. */
enum trace_skip {
  SKIP_MALFORMED,               /* the line could not be read */
  SKIP_FAILED,                  /* it failed when it was recorded */
  SKIP_KIND,                    /* a kind that changes nothing
                                 * (extents, cache) */
  SKIP_OTHER_DISK,              /* msr: not the disk chosen */
  SKIP_BEYOND,                  /* beyond the end of the disk */
  SKIP_EMPTY,                   /* zero bytes */
  SKIP__MAX
};
extern const char *trace_skip_reason (enum trace_skip s);

struct trace_req {
  double t;                     /* seconds since the first request */
  uint64_t offset, count;       /* bytes */
  uint32_t lineno;
  uint8_t op;                   /* enum trace_op */
  uint8_t flags;
};

struct trace {
  const char *path;
  enum trace_format format;
  struct trace_req *reqs;
  size_t n, cap;
  double t0;                    /* absolute time of the first request
                                 * (Unix seconds; 0 if unknown) */
  uint64_t end;                 /* highest offset + count */
  uint64_t skipped[SKIP__MAX];
  uint64_t other_lines;         /* lines that are not requests */
};

struct trace_options {
  enum trace_format format;
  char blkparse_action;         /* 'Q' by default */
  long disk;                    /* msr: -1 for every disk */
  bool strict;                  /* stop at the first malformed line */
  unsigned max_reports;         /* malformed lines printed (then counted) */
};

/* Read a whole trace.  Returns 0, or -1 after printing why (an
 * unreadable file, an unknown format, a malformed line with strict).
 */
extern int trace_read (const char *path, const struct trace_options *o,
                       struct trace *tr);
extern void trace_free (struct trace *tr);

#endif /* FTLCTL_TRACE_H */
