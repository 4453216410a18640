/* nbdkit-ftl: unit tests of deadline.c, timing.c and fault.c.
 *
 * Durations and histograms are checked directly.  The timing model is
 * checked through its unit reservations and through the time requests
 * take.  Each outcome of the timeout handler is made to happen on
 * purpose, through the library's API as the plugin uses it:
 *
 *   handled    a reply delay (fault file) longer than the deadline;
 *   reset      a write whose modeled programming takes several
 *              deadlines, with retries to spare;
 *   abort      the same write with too few retries;
 *   abort all  a stall injected at the media gate (fault file), and a
 *              real stall: a pwrite hook that blocks.
 *
 * Each checks what the caller sees (the error, that it comes back in
 * time, that the next request is served) and the counters, and that
 * the data is intact: every page holds the version last written to it,
 * or, for an aborted write, entirely the old or entirely the new one,
 * also after the image is closed and opened again.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"

#define PS 4096
#define PPB 64
#define SIZE (8 * 1024 * 1024)
#define LPAGES (SIZE / PS)

static char path[256], faults[256];

static void
setup (void)
{
  unit_path (path, sizeof path, "disk.img");
  unit_path (faults, sizeof faults, "faults");
}

static void
set_faults (const char *text)
{
  FILE *fp;

  if (!text) {
    unlink (faults);
    return;
  }
  /* Written beside and renamed, so a reader never sees half of it. */
  char tmp[300];
  snprintf (tmp, sizeof tmp, "%s.tmp", faults);
  fp = fopen (tmp, "w");
  ck_assert_ptr_nonnull (fp);
  fputs (text, fp);
  ck_assert_int_eq (fclose (fp), 0);
  ck_assert_int_eq (rename (tmp, faults), 0);
}

/* Open with a deadline and, if program_ns > 0, the timing model. */
static struct ftl *
open_dl (uint64_t timeout_ns, unsigned retries, uint64_t program_ns,
         const struct ftl_io *io)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = SIZE, .page_size = PS,
    .pages_per_block = PPB, .op_percent = 50, .log = unit_log,
    .io = io ? io : unit_nosync_io (),
    .timeout_ns = timeout_ns, .timeout_retries = retries,
    .timing = {
      .enabled = program_ns > 0, .read_ns = 0, .program_ns = program_ns,
      .erase_ns = 0, .channels = 1, .dies = 1,
    },
    .fault_file = faults,
  };
  struct ftl *ftl;
  char err[256];

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq (ftl_start_watchdog (ftl), 0);
  return ftl;
}

/* Versions last written, per logical page.  For the pages of an
 * aborted write, either[] is set, alt[] holds the version before it and
 * wid[] tells which write: the pages of one write must all hold the
 * new version or all the old one.
 */
static uint64_t ver[LPAGES], alt[LPAGES];
static bool either[LPAGES];
static unsigned wid[LPAGES], next_wid;

static int
write_range (struct ftl *ftl, uint64_t lpn, uint32_t n, uint64_t version)
{
  uint8_t *buf = malloc ((size_t) n * PS);
  int r;

  for (uint32_t i = 0; i < n; i++)
    unit_fill_page (buf + (size_t) i * PS, PS, lpn + i, version);
  r = ftl_write (ftl, buf, (uint64_t) n * PS, lpn * PS, 0);
  free (buf);
  return r;
}

/* Record the outcome of a write of n pages at lpn. */
static void
record (uint64_t lpn, uint32_t n, uint64_t version, int r)
{
  next_wid++;
  for (uint32_t i = 0; i < n; i++) {
    if (r != 0) {
      alt[lpn + i] = ver[lpn + i];
      either[lpn + i] = true;
      wid[lpn + i] = next_wid;
    }
    else
      either[lpn + i] = false;
    ver[lpn + i] = version;
  }
}

static int
write_rec (struct ftl *ftl, uint64_t lpn, uint32_t n, uint64_t version)
{
  int r = write_range (ftl, lpn, n, version);
  record (lpn, n, version, r);
  return r;
}

/* The version a page holds (0: unmapped), checking that it is intact. */
static uint64_t
page_version (struct ftl *ftl, uint64_t l)
{
  uint8_t buf[PS];
  uint64_t lpn, v;
  int k;

  ck_assert_int_eq (ftl_read (ftl, buf, PS, l * PS), 0);
  k = unit_page_identify (buf, PS, &lpn, &v);
  ck_assert_msg (k >= 0, "page %" PRIu64 " is corrupt", l);
  if (k == 1)
    ck_assert_uint_eq (lpn, l);
  return v;
}

static void
verify (struct ftl *ftl)
{
  static int applied[LPAGES + 1];     /* per write id: -1 unknown, 0, 1 */

  for (unsigned i = 0; i <= LPAGES && i <= next_wid; i++)
    applied[i] = -1;
  for (uint64_t l = 0; l < LPAGES; l++) {
    uint64_t v = page_version (ftl, l);
    if (!either[l]) {
      ck_assert_msg (v == ver[l], "page %" PRIu64 ": version %" PRIu64
                     ", expected %" PRIu64, l, v, ver[l]);
      continue;
    }
    ck_assert_msg (v == ver[l] || v == alt[l], "page %" PRIu64 ": version "
                   "%" PRIu64 ", expected %" PRIu64 " or %" PRIu64, l, v,
                   ver[l], alt[l]);
    int a = v == ver[l];
    if (wid[l] <= LPAGES) {
      if (applied[wid[l]] == -1)
        applied[wid[l]] = a;
      ck_assert_msg (applied[wid[l]] == a, "an aborted write was applied "
                     "in part (page %" PRIu64 ")", l);
    }
  }
}

static void
reset_ref (void)
{
  memset (ver, 0, sizeof ver);
  memset (alt, 0, sizeof alt);
  memset (either, 0, sizeof either);
  next_wid = 0;
}

static void
stats (struct ftl *ftl, struct ftl_stats *st)
{
  ftl_get_stats (ftl, st);
  fprintf (stderr, "deadline: requests %" PRIu64 " expired %" PRIu64
           " handled %" PRIu64 " reset %" PRIu64 " aborted %" PRIu64
           " abort_all %" PRIu64 " rejected %" PRIu64 "\n",
           st->deadline.requests, st->deadline.expired,
           st->deadline.handled, st->deadline.reset, st->deadline.aborted,
           st->deadline.abort_all, st->deadline.rejected);
}

/* ---- durations and histograms ---- */

START_TEST (test_duration)
{
  uint64_t ns;
  char err[128];

  ck_assert_int_eq (ftl_parse_duration ("500ms", &ns, err, sizeof err), 0);
  ck_assert_uint_eq (ns, 500000000);
  ck_assert_int_eq (ftl_parse_duration ("200us", &ns, err, sizeof err), 0);
  ck_assert_uint_eq (ns, 200000);
  ck_assert_int_eq (ftl_parse_duration ("30s", &ns, err, sizeof err), 0);
  ck_assert_uint_eq (ns, UINT64_C (30000000000));
  ck_assert_int_eq (ftl_parse_duration ("1.5ms", &ns, err, sizeof err), 0);
  ck_assert_uint_eq (ns, 1500000);
  ck_assert_int_eq (ftl_parse_duration ("0", &ns, err, sizeof err), 0);
  ck_assert_uint_eq (ns, 0);
  ck_assert_int_eq (ftl_parse_duration ("0s", &ns, err, sizeof err), 0);
  ck_assert_uint_eq (ns, 0);

  ck_assert_int_eq (ftl_parse_duration ("30", &ns, err, sizeof err), -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "no unit"));
  ck_assert_int_eq (ftl_parse_duration ("5m", &ns, err, sizeof err), -EINVAL);
  ck_assert_ptr_nonnull (strstr (err, "unknown unit 'm'"));
  ck_assert_int_eq (ftl_parse_duration ("-1s", &ns, err, sizeof err),
                    -EINVAL);
  ck_assert_int_eq (ftl_parse_duration ("ms", &ns, err, sizeof err), -EINVAL);
  ck_assert_int_eq (ftl_parse_duration ("", &ns, err, sizeof err), -EINVAL);
  ck_assert_int_eq (ftl_parse_duration ("1e9s", &ns, err, sizeof err),
                    -ERANGE);
  ck_assert_ptr_nonnull (strstr (err, "too long"));
  ck_assert_int_eq (ftl_parse_duration ("5 ms", &ns, err, sizeof err),
                    -EINVAL);
}
END_TEST

START_TEST (test_histogram)
{
  static struct dl_hist h;
  unsigned prev = 0;

  /* Buckets are ordered and every value lies inside its own. */
  for (uint64_t v = 0; v < 100000; v++) {
    unsigned i = dl_hist_index (v);
    ck_assert_uint_ge (i, prev);
    ck_assert_uint_le (v, dl_hist_bucket_max (i));
    if (i > 0)
      ck_assert_uint_gt (v, dl_hist_bucket_max (i - 1));
    prev = i;
  }
  ck_assert_uint_eq (dl_hist_bucket_max (dl_hist_index (UINT64_MAX)), UINT64_MAX);

  /* 1..10000: quantiles within 12.5% above the exact ones. */
  memset (&h, 0, sizeof h);
  for (uint64_t v = 1; v <= 10000; v++)
    dl_hist_add (&h, v);
  ck_assert_uint_eq (dl_hist_count (&h), 10000);
  ck_assert_uint_eq (h.max, 10000);
  /* The same values split over two histograms (two threads' shards),
   * then merged: the same histogram.
   */
  {
    struct dl_hist a, b;
    memset (&a, 0, sizeof a);
    memset (&b, 0, sizeof b);
    for (uint64_t v = 1; v <= 10000; v++)
      dl_hist_add (v % 3 ? &a : &b, v);
    ck_assert_uint_lt (dl_hist_count (&b), 10000);
    dl_hist_merge (&a, &b);
    ck_assert_int_eq (memcmp (&a, &h, sizeof h), 0);
  }
  uint64_t p50 = dl_hist_quantile (&h, 0.5), p99 = dl_hist_quantile (&h, 0.99);
  ck_assert_uint_ge (p50, 5000);
  ck_assert_uint_le (p50, 5000 * 1.125);
  ck_assert_uint_ge (p99, 9900);
  ck_assert_uint_le (p99, 10000);
  ck_assert_uint_eq (dl_hist_quantile (&h, 1.0), 10000);
}
END_TEST

/* ---- the timing model ---- */

/* A model of 4 channels x 8 dies, NAND pages of 4 FTL pages (16 KiB
 * over 4 KiB pages), 256 pages per block: k = 4, G = 64 groups per
 * block, so block 0's group g is on die g mod 32 and die d on channel
 * d mod 4.  The functions return modeled ends without sleeping; the
 * bounds leave SLACK for a loaded machine.
 */
#define MS_ (UINT64_C (1000000))
#define SLACK (5 * MS_)
static void
model32 (struct timing *t, uint64_t channel_rate, bool suspend)
{
  struct ftl_timing o = {
    .enabled = true, .channels = 4, .dies = 8, .planes = 1,
    .nand_page = 16384, .channel_rate = channel_rate,
    .suspend = suspend, .suspend_ns = 1 * MS_,
  };
  ck_assert_int_eq (timing_init (t, &o), 0);
  timing_geometry (t, 4096, 256);
  ck_assert_uint_eq (t->units, 32);
  ck_assert_uint_eq (t->group, 4);
  ck_assert_uint_eq (t->groups, 64);
}

/* 256 pages over 32 dies, 4 a program: ceil (256 / 4 / 32) = 2
 * program times, not 256 nor 64.
 */
START_TEST (test_timing_stripe)
{
  struct timing t;
  model32 (&t, 0, false);
  ck_assert_uint_eq (timing_die (&t, 0, 0), 0);
  ck_assert_uint_eq (timing_die (&t, 0, 4), 1);
  ck_assert_uint_eq (timing_die (&t, 0, 128), 0);
  ck_assert_uint_eq (timing_die (&t, 1, 0), 0);   /* 64 groups: wraps */
  uint64_t now = clock_now ();
  uint64_t end = timing_program (&t, 0, 0, 256, 10 * MS_);
  ck_assert_uint_ge (end, now + 20 * MS_);
  ck_assert_uint_le (end, now + 20 * MS_ + SLACK);
  /* A run that stops inside a group only transfers its pages: the
   * program is paid by the call that completes the group.
   */
  now = clock_now ();
  end = timing_program (&t, 1, 0, 3, 10 * MS_);
  ck_assert_uint_le (end, now + SLACK);
  end = timing_program (&t, 1, 3, 1, 10 * MS_);
  ck_assert_uint_ge (end, now + 10 * MS_);
  timing_free (&t);
}
END_TEST

/* An erase occupies every die of the block; a read waits only for its
 * own die.
 */
START_TEST (test_timing_erase_read)
{
  struct timing t;
  model32 (&t, 0, false);
  uint64_t now = clock_now ();
  uint64_t end = timing_erase (&t, 0, 10 * MS_);
  ck_assert_uint_ge (end, now + 10 * MS_);
  ck_assert_uint_le (end, now + 10 * MS_ + SLACK);
  for (uint32_t p = 0; p < 32 * 4; p += 4)        /* every die waits */
    ck_assert_uint_ge (timing_read (&t, 0, p, 1, 1 * MS_), now + 11 * MS_);
  timing_free (&t);

  model32 (&t, 0, false);
  now = clock_now ();
  timing_program (&t, 0, 0, 4, 10 * MS_);         /* die 0 busy */
  end = timing_read (&t, 0, 4, 4, 1 * MS_);        /* die 1: at once */
  ck_assert_uint_le (end, now + 1 * MS_ + SLACK);
  end = timing_read (&t, 0, 0, 1, 1 * MS_);        /* die 0: behind */
  ck_assert_uint_ge (end, now + 11 * MS_);
  timing_free (&t);
}
END_TEST

/* Transfers of one channel serialise; of two channels, overlap.  One
 * page takes 1 ms on the channel (4096 bytes at 4096000 bytes/s).
 */
START_TEST (test_timing_channel)
{
  struct timing t;
  model32 (&t, 4096000, false);
  ck_assert_uint_ge (t.xfer_page_ns, 1 * MS_);
  ck_assert_uint_le (t.xfer_page_ns, 1 * MS_ + 1000);
  uint64_t now = clock_now ();
  uint64_t a = timing_read (&t, 0, 0, 4, 0);        /* die 0, channel 0 */
  uint64_t b = timing_read (&t, 0, 16, 4, 0);       /* die 4, channel 0 */
  uint64_t c = timing_read (&t, 0, 4, 4, 0);        /* die 1, channel 1 */
  ck_assert_uint_ge (a, now + 4 * MS_);
  ck_assert_uint_ge (b, now + 8 * MS_);
  ck_assert_uint_le (c, now + 4 * MS_ + SLACK);
  ck_assert_uint_lt (c, b);
  timing_free (&t);
}
END_TEST

/* With suspend, a read on a die that programs waits suspend_ns, not
 * the program; the program is pushed back by the read.
 */
START_TEST (test_timing_suspend)
{
  struct timing t;
  model32 (&t, 0, true);
  uint64_t now = clock_now ();
  uint64_t p = timing_program (&t, 0, 0, 4, 20 * MS_);
  uint64_t r = timing_read (&t, 0, 0, 1, 2 * MS_);
  ck_assert_uint_ge (r, now + 3 * MS_);
  ck_assert_uint_le (r, now + 3 * MS_ + SLACK);
  ck_assert_uint_eq (__atomic_load_n (&t.die_free[0], __ATOMIC_RELAXED),
                     p + 3 * MS_);
  ck_assert_uint_eq (t.suspends, 1);
  timing_free (&t);
}
END_TEST

/* Utilization: a program of 20 ms and a read of 2 ms queued behind it
 * on die 0, a read on die 1 (1 ms of channel 1), and a host transfer:
 * the dies' busy and waiting time, the channels' and the link's.
 */
START_TEST (test_timing_util)
{
  struct timing t;
  struct timing_util u;
  model32 (&t, 4096000, false);             /* 1 ms a page on a channel */
  uint64_t x = t.xfer_page_ns;
  timing_program (&t, 0, 0, 4, 20 * MS_);   /* die 0: 4 pages, 20 ms */
  timing_read (&t, 0, 0, 1, 2 * MS_);       /* die 0, behind it */
  timing_read (&t, 0, 4, 1, 0);             /* die 1 */
  timing_get_util (&t, &u);
  ck_assert_uint_eq (u.die_busy_ns, 22 * MS_);
  /* The read on die 0 could start at once and waited for the program,
   * which began after its 4 pages crossed the channel.
   */
  ck_assert_uint_ge (u.die_wait_ns, 20 * MS_ + 4 * x - SLACK);
  ck_assert_uint_le (u.die_wait_ns, 20 * MS_ + 4 * x + SLACK);
  ck_assert_uint_eq (u.chan_busy_ns, 6 * x);
  ck_assert_uint_eq (u.host_busy_ns, 0);
  ck_assert_uint_gt (u.elapsed_ns, 0);
  /* Work booked ahead of now: die 0's share is far above 1 this early,
   * the mean is die 0's spread over 32 dies.
   */
  ck_assert (u.die_util_max > 1.0);
  ck_assert (u.die_util > u.die_util_max / 32 * 0.99 &&
             u.die_util < u.die_util_max / 32 * 1.01);
  ck_assert (u.die_queue_depth > u.die_util);
  timing_free (&t);

  /* The host link. */
  struct ftl_timing o = {
    .enabled = true, .channels = 1, .dies = 1, .host_rate = 4096000,
  };
  ck_assert_int_eq (timing_init (&t, &o), 0);
  timing_host (&t, clock_now (), 0, 4096, true);
  timing_host (&t, clock_now (), 0, 8192, false);
  timing_get_util (&t, &u);
  ck_assert_uint_ge (u.host_busy_ns, 3 * MS_);
  ck_assert_uint_le (u.host_busy_ns, 3 * MS_ + 1000);
  ck_assert_uint_eq (u.die_busy_ns, 0);
  timing_free (&t);
}
END_TEST

/* The host side: command overhead, then the link (read); a write's
 * transfers serialise on the link from their start.
 */
START_TEST (test_timing_host)
{
  struct ftl_timing o = {
    .enabled = true, .channels = 1, .dies = 1,
    .host_rate = 4096000, .command_ns = 2 * MS_,
  };
  struct timing t;
  ck_assert_int_eq (timing_init (&t, &o), 0);
  uint64_t now = clock_now ();
  uint64_t r = timing_host (&t, now, 0, 4096, true);
  ck_assert_uint_ge (r, now + 3 * MS_);
  ck_assert_uint_le (r, now + 3 * MS_ + SLACK);
  now = clock_now ();
  uint64_t w1 = timing_host (&t, now, 0, 4096, false);
  uint64_t w2 = timing_host (&t, now, 0, 4096, false);
  ck_assert_uint_ge (w1, now + 3 * MS_);
  ck_assert_uint_ge (w2, w1 + 1 * MS_);
  timing_free (&t);
}
END_TEST

/* The link's time per command (host_command_ns) is the link's, one
 * command at a time: 32 reads issued at once finish 32 x (command +
 * transfer) after the first begins, not together; the link's busy time
 * counts it; QD1 latency is the command overhead plus both.
 */
START_TEST (test_timing_host_command)
{
  struct ftl_timing o = {
    .enabled = true, .channels = 1, .dies = 1,
    .host_rate = 4096000000, .command_ns = 1 * MS_,
    .host_command_ns = 2 * MS_,
  };
  struct timing t;
  struct timing_util u;
  ck_assert_int_eq (timing_init (&t, &o), 0);
  /* 4096 bytes at 4.096 GB/s: 1 us on the link, besides the command. */
  uint64_t now = clock_now ();
  uint64_t r = timing_host (&t, now, 0, 4096, true);
  ck_assert_uint_ge (r, now + 3 * MS_ + 1000);
  ck_assert_uint_le (r, now + 3 * MS_ + 1000 + SLACK);
  uint64_t last = 0;
  now = clock_now ();
  for (int i = 0; i < 32; i++) {
    uint64_t end = timing_host (&t, now, 0, 4096, i % 2);
    last = MAX (last, end);
  }
  ck_assert_uint_ge (last, now + 32 * (2 * MS_ + 1000));
  timing_get_util (&t, &u);
  ck_assert_uint_ge (u.host_busy_ns, 33 * (2 * MS_ + 1000));
  ck_assert_uint_le (u.host_busy_ns, 33 * (2 * MS_ + 1000) + 1000);
  timing_free (&t);
}
END_TEST

/* With one unit, programs queue: 32 pages at 2 ms take 64 ms or more;
 * without the model they take much less.
 */
START_TEST (test_timing_write)
{
  struct ftl *ftl = open_dl (0, 0, 2000000, NULL);
  double t0 = unit_now ();

  ck_assert_int_eq (write_range (ftl, 0, 32, 1), 0);
  double dt = unit_now () - t0;
  ck_assert_msg (dt >= 0.064, "32 pages took %.3f s", dt);
  ck_assert_msg (dt < 2.0, "32 pages took %.3f s", dt);
  struct ftl_stats st;
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.latency[FTL_OP_WRITE].count, 1);
  ck_assert_uint_ge (st.latency[FTL_OP_WRITE].max, 64000);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* ---- outcomes of the timeout handler ---- */

/* The write itself takes milliseconds, but on a loaded host it may wait
 * a while for a CPU: the deadline (400 ms, no retries) leaves room for
 * that, and the reply delay (1.2 s) puts 800 ms after the deadline in
 * which the watchdog (every 50 ms) finds the request done.  Were the
 * request still marked running during its reply delay, it would be
 * aborted (no progress, no retries) and the write would fail.
 */
START_TEST (test_handled)
{
  struct ftl *ftl;
  struct ftl_stats st;

  reset_ref ();
  set_faults ("reply-delay 1200ms\n");
  ftl = open_dl (400000000, 0, 0, NULL);
  ck_assert_int_eq (write_rec (ftl, 0, 4, 1), 0);   /* completes */
  set_faults (NULL);
  ck_assert_int_eq (write_rec (ftl, 4, 4, 1), 0);
  stats (ftl, &st);
  ck_assert_uint_ge (st.deadline.handled, 1);
  ck_assert_uint_eq (st.deadline.aborted, 0);
  ck_assert_uint_eq (st.deadline.reset, 0);
  verify (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

START_TEST (test_reset)
{
  struct ftl *ftl;
  struct ftl_stats st;
  double t0;

  reset_ref ();
  set_faults (NULL);
  /* 48 pages at 10 ms: 480 ms of programming against a 150 ms
   * deadline, so at least 3 expiries, with 20 resets allowed (time
   * lost waiting for a CPU lengthens the write, not its modeled end).
   * Without resets the write would be aborted at the first expiry.
   */
  ftl = open_dl (150000000, 20, 10000000, NULL);
  t0 = unit_now ();
  ck_assert_int_eq (write_rec (ftl, 0, 48, 1), 0);
  ck_assert_double_ge (unit_now () - t0, 0.480);
  stats (ftl, &st);
  ck_assert_uint_ge (st.deadline.reset, 2);
  ck_assert_uint_eq (st.deadline.aborted, 0);
  ck_assert_uint_eq (st.deadline.expired, st.deadline.reset);
  verify (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

START_TEST (test_abort)
{
  struct ftl *ftl;
  struct ftl_stats st;
  double t0, dt;

  reset_ref ();
  set_faults (NULL);
  /* The first data, written without the model: no deadline of its own
   * can expire and count.
   */
  ftl = open_dl (150000000, 1, 0, NULL);
  ck_assert_int_eq (write_rec (ftl, 0, 8, 1), 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = open_dl (150000000, 1, 50000000, NULL);
  /* 48 pages at 50 ms: 2.4 s of programming against a 150 ms deadline.
   * The deadline is reset once, then the write is aborted (at about
   * 300 ms) before it programmed anything.  Uninterrupted, the write
   * cannot end before its modeled 2.4 s: the bound leaves 1.7 s for a
   * loaded host.
   */
  unit_quiet = true;
  t0 = unit_now ();
  ck_assert_int_eq (write_rec (ftl, 0, 48, 2), -ETIMEDOUT);
  dt = unit_now () - t0;
  ck_assert_msg (dt < 2.0, "the abort took %.3f s", dt);
  stats (ftl, &st);
  ck_assert_uint_eq (st.deadline.aborted, 1);
  ck_assert_uint_eq (st.deadline.reset, 1);
  ck_assert_uint_eq (st.deadline.abort_all, 0);
  /* Not applied at all: the old data is there. */
  verify (ftl);
  ck_assert_uint_eq (page_version (ftl, 0), 1);
  ck_assert_uint_eq (page_version (ftl, 7), 1);
  ck_assert_uint_eq (page_version (ftl, 8), 0);
  ck_assert_uint_eq (page_version (ftl, 47), 0);
  /* The next request is served. */
  ck_assert_int_eq (write_rec (ftl, 0, 4, 3), 0);
  verify (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = open_dl (150000000, 1, 0, NULL);
  verify (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

struct writer {
  struct ftl *ftl;
  uint64_t lpn;
  uint32_t n;
  uint64_t version;
  bool hold;                    /* as garbage collection does */
  int r;
  double took;
};

static void *
writer_thread (void *arg)
{
  struct writer *w = arg;
  double t0 = unit_now ();
  if (w->hold)
    dl_hold ();
  w->r = write_range (w->ftl, w->lpn, w->n, w->version);
  if (w->hold)
    dl_release ();
  w->took = unit_now () - t0;
  return NULL;
}

static void
writer_record (struct writer *w)
{
  record (w->lpn, w->n, w->version, w->r);
}

/* A stall at the media gate: the outstanding writes are aborted, new
 * requests fail at once, and service resumes when the stall is lifted.
 *
 * The first writer works in a held section (as garbage collection run
 * by a writer does): its own deadline does not stop it, only the stall
 * does, so the media has an operation in flight from the moment it
 * enters the gate until the stall is declared.  The other writers start
 * after that moment: their deadlines end later than the stall is
 * declared (both are a deadline, 100 ms, from their start), so they are
 * aborted by the stall, never by their own deadline, however late the
 * watchdog runs; a writer that starts only after the stall is declared
 * is refused at once.  Without the stall's abort the writers would wait
 * in the gate until the stall is lifted, which happens only after they
 * return: the test would time out.
 */
START_TEST (test_abort_all_gate)
{
  struct ftl *ftl;
  struct ftl_stats st;
  struct writer w[4];
  pthread_t th[4];
  uint8_t buf[PS];
  uint64_t rejected;
  double t0;

  reset_ref ();
  set_faults (NULL);
  ftl = open_dl (100000000, 3, 0, NULL);
  for (unsigned i = 0; i < 4; i++)
    ck_assert_int_eq (write_rec (ftl, i * 16, 16, 1), 0);

  unit_quiet = true;
  set_faults ("stall\n");
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.deadline.expired, 0);
  ck_assert_uint_eq (st.deadline.rejected, 0);
  for (unsigned i = 0; i < 4; i++) {
    w[i] = (struct writer) { .ftl = ftl, .lpn = i * 16, .n = 16,
                             .version = 2, .hold = i == 0 };
    pthread_create (&th[i], NULL, writer_thread, &w[i]);
    if (i > 0)
      continue;
    /* The first writer is in the gate. */
    t0 = unit_now ();
    while (dl_inflight (&ftl->dl) < 1) {
      ck_assert_msg (unit_now () - t0 < 10.0, "the writer never reached "
                     "the media");
      usleep (1000);
    }
  }
  for (unsigned i = 0; i < 4; i++) {
    pthread_join (th[i], NULL);
    ck_assert_int_eq (w[i].r, -ETIMEDOUT);
    ck_assert_msg (w[i].took < 5.0, "writer %u took %.3f s", i, w[i].took);
    writer_record (&w[i]);
  }
  stats (ftl, &st);
  ck_assert_uint_eq (st.deadline.abort_all, 1);
  ck_assert (st.deadline.stalled);
  /* Each writer was aborted (at least the first) or refused, once.
   * Whether a writer's own deadline fired before the abort of all is
   * the scheduler's choice (the stall is declared timeout_ns after the
   * last progress, a deadline timeout_ns after the request began; on a
   * loaded host all four have been seen to expire first), so the
   * expiries are not counted.
   */
  ck_assert_uint_ge (st.deadline.aborted, 1);
  ck_assert_uint_eq (st.deadline.aborted + st.deadline.rejected, 4);

  /* Stalled: a new request fails at once, refused before it does
   * anything (the counter of refusals, not a stopwatch, tells).
   */
  rejected = st.deadline.rejected;
  ck_assert_int_eq (ftl_read (ftl, buf, PS, 0), -ETIMEDOUT);
  stats (ftl, &st);
  ck_assert_uint_eq (st.deadline.rejected, rejected + 1);
  ck_assert_uint_eq (st.deadline.aborted + st.deadline.rejected, 5);
  ck_assert (st.deadline.stalled);

  /* Lifted: service resumes by itself within a few ticks (the bound is
   * for a loaded host: without the stall lifted it never resumes).
   */
  set_faults (NULL);
  t0 = unit_now ();
  for (;;) {
    ftl_get_stats (ftl, &st);
    if (!st.deadline.stalled)
      break;
    ck_assert_double_lt (unit_now () - t0, 10.0);
    usleep (5000);
  }
  ck_assert_int_eq (write_rec (ftl, 0, 4, 3), 0);
  verify (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = open_dl (100000000, 3, 0, NULL);
  verify (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* A real stall: a pwrite that blocks in the backing file (the struct
 * ftl_io hook).  That write cannot be interrupted; the watchdog still
 * declares the stall, new requests fail at once, and when the pwrite
 * returns the stuck write completes (entirely) with the timeout as its
 * reply, and service resumes.
 */
static pthread_mutex_t block_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t block_cond = PTHREAD_COND_INITIALIZER;
static bool block_on, blocked;

static int
blocking_pwrite (void *opaque, int fd, const void *buf, size_t len,
                 off_t off)
{
  pthread_mutex_lock (&block_lock);
  if (block_on) {
    blocked = true;
    pthread_cond_broadcast (&block_cond);
    while (block_on)
      pthread_cond_wait (&block_cond, &block_lock);
  }
  pthread_mutex_unlock (&block_lock);
  return media_default_io.pwrite (opaque, fd, buf, len, off);
}

START_TEST (test_abort_all_io)
{
  struct ftl_io io = *unit_nosync_io ();
  struct ftl *ftl;
  struct ftl_stats st;
  struct writer w;
  pthread_t th;
  uint8_t buf[PS];

  io.pwrite = blocking_pwrite;
  reset_ref ();
  set_faults (NULL);
  ftl = open_dl (100000000, 3, 0, &io);
  ck_assert_int_eq (write_rec (ftl, 0, 8, 1), 0);

  unit_quiet = true;
  pthread_mutex_lock (&block_lock);
  block_on = true;
  blocked = false;
  pthread_mutex_unlock (&block_lock);
  w = (struct writer) { .ftl = ftl, .lpn = 0, .n = 8, .version = 2 };
  pthread_create (&th, NULL, writer_thread, &w);
  pthread_mutex_lock (&block_lock);
  while (!blocked)
    pthread_cond_wait (&block_cond, &block_lock);
  pthread_mutex_unlock (&block_lock);

  /* Wait for the watchdog to see the stall. */
  double t0 = unit_now ();
  do {
    ck_assert_double_lt (unit_now () - t0, 10.0);
    usleep (5000);
    ftl_get_stats (ftl, &st);
  } while (!st.deadline.stalled);
  ck_assert_int_eq (ftl_read (ftl, buf, PS, 0), -ETIMEDOUT);

  pthread_mutex_lock (&block_lock);
  block_on = false;
  pthread_cond_broadcast (&block_cond);
  pthread_mutex_unlock (&block_lock);
  pthread_join (th, NULL);
  ck_assert_int_eq (w.r, -ETIMEDOUT);
  writer_record (&w);

  t0 = unit_now ();
  do {
    ck_assert_double_lt (unit_now () - t0, 10.0);
    usleep (5000);
    ftl_get_stats (ftl, &st);
  } while (st.deadline.stalled);
  stats (ftl, &st);
  ck_assert_uint_eq (st.deadline.abort_all, 1);
  ck_assert_uint_ge (st.deadline.aborted, 1);
  ck_assert_int_eq (write_rec (ftl, 8, 4, 3), 0);
  verify (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = open_dl (100000000, 3, 0, NULL);
  verify (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* Many threads with a generous deadline: nothing expires, every
 * request is counted, slots are reused.
 */
static void *
busy_thread (void *arg)
{
  struct writer *w = arg;
  uint8_t buf[PS];
  w->r = 0;
  for (unsigned i = 0; i < 200 && w->r == 0; i++) {
    w->r = write_range (w->ftl, w->lpn + i % 8, 1, i + 1);
    if (w->r == 0)
      w->r = ftl_read (w->ftl, buf, PS, (w->lpn + i % 8) * PS);
  }
  return NULL;
}

START_TEST (test_no_expiry)
{
  struct ftl *ftl;
  struct ftl_stats st;
  struct writer w[8];
  pthread_t th[8];

  set_faults (NULL);
  ftl = open_dl (UINT64_C (10000000000), 3, 0, NULL);
  for (unsigned i = 0; i < 8; i++) {
    w[i] = (struct writer) { .ftl = ftl, .lpn = i * 8 };
    pthread_create (&th[i], NULL, busy_thread, &w[i]);
  }
  for (unsigned i = 0; i < 8; i++) {
    pthread_join (th[i], NULL);
    ck_assert_int_eq (w[i].r, 0);
  }
  stats (ftl, &st);
  ck_assert_uint_eq (st.deadline.requests, 8 * 400);
  ck_assert_uint_eq (st.deadline.expired, 0);
  ck_assert_uint_eq (st.latency[FTL_OP_WRITE].count, 8 * 200);
  ck_assert_uint_eq (st.latency[FTL_OP_READ].count, 8 * 200);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

static Suite *
deadline_suite (void)
{
  Suite *s = suite_create ("deadline");
  TCase *tc = tcase_create ("deadline");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, unit_dir_clean, NULL);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_duration);
  tcase_add_test (tc, test_histogram);
  tcase_add_test (tc, test_timing_stripe);
  tcase_add_test (tc, test_timing_erase_read);
  tcase_add_test (tc, test_timing_channel);
  tcase_add_test (tc, test_timing_suspend);
  tcase_add_test (tc, test_timing_util);
  tcase_add_test (tc, test_timing_host);
  tcase_add_test (tc, test_timing_host_command);
  tcase_add_test (tc, test_timing_write);
  tcase_add_test (tc, test_handled);
  tcase_add_test (tc, test_reset);
  tcase_add_test (tc, test_abort);
  tcase_add_test (tc, test_abort_all_gate);
  tcase_add_test (tc, test_abort_all_io);
  tcase_add_test (tc, test_no_expiry);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (deadline_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
