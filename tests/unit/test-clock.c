/* nbdkit-ftl: unit tests of the modeled waits (util/clock.c,
 * clock_wait_model), the way every request of the timing model waits
 * for its modeled end.
 *
 *   crowd      32 threads, as a client at queue depth 32 makes them,
 *              each waiting for ends spread over 3 ms: no wait ends
 *              before its end, and they end close after it (the yields
 *              of a crowd, not a kernel timer each);
 *   alone      one thread, the sleep and the spin of a client at queue
 *              depth 1: never early, and close after;
 *   long       a wait longer than the yield window sleeps first and
 *              yields only through the window (clock_spun_ns);
 *   abort      through the library: four writers whose modeled programs
 *              take seconds, waiting at once on one die, are all
 *              aborted by their deadlines and come back within the
 *              watchdog's bounds.
 *
 * The bounds on lateness are wide (a loaded host runs the suite with
 * make -j2); earliness has no slack at all: a modeled wait that ends
 * before its end makes the drive faster than its model.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"

#define US (UINT64_C (1000))
#define MS (UINT64_C (1000000))

#define CROWD 32
#define WAITS 40

struct waiter {
  unsigned seed;
  uint64_t early;               /* waits that ended before their end */
  uint64_t worst_early;         /* ns, the earliest of them */
  uint64_t late[WAITS];         /* ns after the end */
};

static pthread_barrier_t start;

static int
cmp_u64 (const void *a, const void *b)
{
  uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

  return x < y ? -1 : x > y;
}

/* WAITS modeled waits, each for an end 0 to 3 ms from now. */
static void *
crowd_thread (void *arg)
{
  struct waiter *w = arg;

  pthread_barrier_wait (&start);
  for (unsigned i = 0; i < WAITS; i++) {
    uint64_t end = clock_now () + (uint64_t) (rand_r (&w->seed) % 3000) * US;
    clock_wait_model (end);
    uint64_t now = clock_now ();
    if (now < end) {
      w->early++;
      w->worst_early = MAX (w->worst_early, end - now);
      w->late[i] = 0;
    }
    else
      w->late[i] = now - end;
  }
  return NULL;
}

START_TEST (test_crowd)
{
  static struct waiter w[CROWD];
  static uint64_t all[CROWD * WAITS];
  pthread_t th[CROWD];
  uint64_t early = 0, worst = 0;

  memset (w, 0, sizeof w);
  pthread_barrier_init (&start, NULL, CROWD);
  for (unsigned i = 0; i < CROWD; i++) {
    w[i].seed = 1 + i;
    ck_assert_int_eq (pthread_create (&th[i], NULL, crowd_thread, &w[i]), 0);
  }
  for (unsigned i = 0; i < CROWD; i++) {
    pthread_join (th[i], NULL);
    early += w[i].early;
    worst = MAX (worst, w[i].worst_early);
    memcpy (&all[i * WAITS], w[i].late, sizeof w[i].late);
  }
  pthread_barrier_destroy (&start);
  ck_assert_msg (early == 0, "%" PRIu64 " of %u waits ended before their "
                 "end, the earliest by %" PRIu64 " ns", early,
                 CROWD * WAITS, worst);
  qsort (all, CROWD * WAITS, sizeof all[0], cmp_u64);
  uint64_t p50 = all[CROWD * WAITS / 2], max = all[CROWD * WAITS - 1];
  /* On an idle 2-CPU machine: a p50 of a few tens of us. */
  ck_assert_msg (p50 < 5 * MS, "the median wait ended %" PRIu64 " us late",
                 p50 / US);
  ck_assert_msg (max < 500 * MS, "a wait ended %" PRIu64 " ms late",
                 max / MS);
}
END_TEST

START_TEST (test_alone)
{
  uint64_t late[200];

  for (unsigned i = 0; i < 200; i++) {
    uint64_t end = clock_now () + (20 + i % 7 * 30) * US;
    uint64_t s0 = clock_spun_ns ();
    clock_wait_model (end);
    uint64_t now = clock_now ();
    ck_assert_msg (now >= end, "wait %u ended %" PRIu64 " ns early", i,
                   end - now);
    /* Alone: it spins only the end of the wait. */
    ck_assert_msg (clock_spun_ns () - s0 <= CLOCK_SPIN_MAX_NS + 100 * US,
                   "wait %u spun %" PRIu64 " us", i,
                   (clock_spun_ns () - s0) / US);
    late[i] = now - end;
  }
  qsort (late, 200, sizeof late[0], cmp_u64);
  ck_assert_msg (late[100] < 5 * MS, "the median wait ended %" PRIu64
                 " us late", late[100] / US);
}
END_TEST

/* 4 threads each wait 5 ms 20 times: a crowd, whose waits sleep
 * until the yield window before their end and yield only through it
 * (a sleep aims early by at most 20 us).  Yielding through whole waits
 * would keep the threads on the CPU for as long as they wait.
 */
static void *
long_thread (void *arg)
{
  uint64_t *worst = arg;

  pthread_barrier_wait (&start);
  for (unsigned i = 0; i < 20; i++) {
    uint64_t end = clock_now () + 5 * MS, s0 = clock_spun_ns ();
    clock_wait_model (end);
    /* Checked by the main thread: Check's assertions are not for
     * threads that run beside others (each passing one writes a record
     * to Check's pipe, and concurrent records garble it).
     */
    if (clock_now () < end)
      *worst = UINT64_MAX;
    *worst = MAX (*worst, clock_spun_ns () - s0);
  }
  return NULL;
}

START_TEST (test_long)
{
  pthread_t th[4];
  uint64_t worst[4] = { 0 };

  pthread_barrier_init (&start, NULL, 4);
  for (unsigned i = 0; i < 4; i++)
    ck_assert_int_eq (pthread_create (&th[i], NULL, long_thread, &worst[i]),
                      0);
  for (unsigned i = 0; i < 4; i++) {
    pthread_join (th[i], NULL);
    ck_assert_msg (worst[i] != UINT64_MAX, "a wait ended before its end");
    ck_assert_msg (worst[i] <= CLOCK_YIELD_NS + 100 * US,
                   "a wait of 5 ms spun or yielded for %" PRIu64 " us",
                   worst[i] / US);
  }
  pthread_barrier_destroy (&start);
}
END_TEST

/* ---- aborts reach a crowd of waiters ---- */

#define PS 4096
#define SIZE (8 * 1024 * 1024)

static char path[256];

struct writer {
  struct ftl *ftl;
  uint64_t lpn;
  int r;
  double took;
  uint64_t spun;                /* ns in spins and yields */
};

static void *
writer_thread (void *arg)
{
  struct writer *w = arg;
  uint8_t *buf = malloc (48 * PS);
  double t0;

  for (unsigned i = 0; i < 48; i++)
    unit_fill_page (buf + (size_t) i * PS, PS, w->lpn + i, 1);
  pthread_barrier_wait (&start);
  t0 = unit_now ();
  w->spun = clock_spun_ns ();
  w->r = ftl_write (w->ftl, buf, 48 * PS, w->lpn * PS, 0);
  w->spun = clock_spun_ns () - w->spun;
  w->took = unit_now () - t0;
  free (buf);
  return NULL;
}

/* Four writes of 48 pages at 50 ms a page on one die: 2.4 s each
 * alone, 9.6 s for the last of them, against a deadline of 150 ms that
 * may be reset once.  Every one is aborted, all while the others wait
 * beside it.  Their waits are cut into slices of 1 ms for the aborts:
 * the slices sleep, and none of the writers spins or yields for more
 * than a few windows in all (none of its waits reached its end).
 */
START_TEST (test_abort_crowd)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = SIZE, .page_size = PS,
    .pages_per_block = 64, .op_percent = 50, .log = unit_log,
    .io = unit_nosync_io (),
    .timeout_ns = 150 * MS, .timeout_retries = 1,
    .timing = {
      .enabled = true, .program_ns = 50 * MS, .channels = 1, .dies = 1,
    },
  };
  struct ftl *ftl;
  struct ftl_stats st;
  struct writer w[4];
  pthread_t th[4];
  char err[256];

  unit_path (path, sizeof path, "disk.img");
  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq (ftl_start_watchdog (ftl), 0);
  unit_quiet = true;
  pthread_barrier_init (&start, NULL, 4);
  for (unsigned i = 0; i < 4; i++) {
    w[i] = (struct writer) { .ftl = ftl, .lpn = i * 64 };
    ck_assert_int_eq (pthread_create (&th[i], NULL, writer_thread, &w[i]),
                      0);
  }
  for (unsigned i = 0; i < 4; i++) {
    pthread_join (th[i], NULL);
    ck_assert_int_eq (w[i].r, -ETIMEDOUT);
    ck_assert_msg (w[i].took < 2.0, "writer %u took %.3f s", i, w[i].took);
    ck_assert_msg (w[i].spun < 4 * CLOCK_YIELD_NS, "writer %u spun or "
                   "yielded for %" PRIu64 " us in %.3f s", i, w[i].spun / US,
                   w[i].took);
  }
  pthread_barrier_destroy (&start);
  unit_quiet = false;
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.deadline.aborted, 4);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unlink (path);
}
END_TEST

static Suite *
clock_suite (void)
{
  Suite *s = suite_create ("clock");
  TCase *tc = tcase_create ("wait");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, unit_dir_clean, NULL);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_crowd);
  tcase_add_test (tc, test_alone);
  tcase_add_test (tc, test_long);
  tcase_add_test (tc, test_abort_crowd);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (clock_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
