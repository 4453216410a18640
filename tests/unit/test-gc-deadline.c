/* nbdkit-ftl: unit tests of deadline-aware garbage collection (gc.c,
 * gc_mode FTL_GC_DEADLINE) and of dl_earliest (deadline.c).
 *
 *   earliest     dl_earliest reports the earliest deadline of the
 *                running requests, and nothing once they end.
 *   yields       a request whose deadline is near, registered from the
 *                test thread (the watchdog is off, so it stays running):
 *                with the free pool at the low watermark, background GC
 *                works even so; above it, GC yields (gc.yields grows,
 *                no slice runs, no block is freed) until the request
 *                ends, then reclaims up to the high watermark.  Every
 *                page reads back as last written, before and after a
 *                reopen.
 *   writers      threads of random overwrites with the timing model,
 *                the watchdog and background GC in slices: no request
 *                is aborted, GC ran in slices, the stats JSON names the
 *                mode and counts yields, and the data is intact.
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
#define PPB 16
#define SIZE (4 * 1024 * 1024)
#define LPAGES (SIZE / PS)

static char path[256];
static uint64_t ver[LPAGES];
static pthread_mutex_t ver_lock[64];

static void
setup (void)
{
  unit_path (path, sizeof path, "disk.img");
  memset (ver, 0, sizeof ver);
  for (unsigned i = 0; i < 64; i++)
    pthread_mutex_init (&ver_lock[i], NULL);
}

static struct ftl *
open_dlgc (uint64_t timeout_ns, uint64_t program_ns, unsigned units)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = SIZE, .page_size = PS,
    .pages_per_block = PPB, .op_percent = 50, .streams = 1,
    .log = unit_log, .io = unit_nosync_io (),
    .gc_mode = FTL_GC_DEADLINE,
    .timeout_ns = timeout_ns, .timeout_retries = 3,
    .timing = {
      .enabled = program_ns > 0, .read_ns = program_ns / 4,
      .program_ns = program_ns, .erase_ns = program_ns * 4,
      .channels = units, .dies = 1,
    },
  };
  struct ftl *ftl;
  char err[256];

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  return ftl;
}

static void
write_page (struct ftl *ftl, uint64_t lpn)
{
  uint8_t buf[PS];

  unit_fill_page (buf, PS, lpn, ver[lpn] + 1);
  ck_assert_int_eq (ftl_write (ftl, buf, PS, lpn * PS, 0), 0);
  ver[lpn]++;
}

static void
verify_all (struct ftl *ftl)
{
  uint8_t buf[PS];

  for (uint64_t l = 0; l < LPAGES; l++) {
    uint64_t lpn, v;
    ck_assert_int_eq (ftl_read (ftl, buf, PS, l * PS), 0);
    int k = unit_page_identify (buf, PS, &lpn, &v);
    ck_assert_msg (k >= 0, "page %llu holds garbage", (unsigned long long) l);
    if (k > 0)
      ck_assert_uint_eq (lpn, l);
    ck_assert_msg (v == ver[l], "page %llu holds version %llu, not %llu",
                   (unsigned long long) l, (unsigned long long) v,
                   (unsigned long long) ver[l]);
  }
}

/* Wait up to secs for the free pool to rise above n. */
static bool
wait_free_above (struct ftl *ftl, uint32_t n, double secs)
{
  double end = unit_now () + secs;
  while (unit_now () < end) {
    if (alloc_nfree (ftl) > n)
      return true;
    usleep (1000);
  }
  return alloc_nfree (ftl) > n;
}

START_TEST (test_earliest)
{
  struct ftl *ftl = open_dlgc (10 * UINT64_C (1000000000), 0, 1);
  struct dl_ticket t;
  uint64_t before = clock_now ();

  ck_assert_uint_eq (dl_earliest (&ftl->dl), UINT64_MAX);
  ck_assert_int_eq (dl_begin (&ftl->dl, FTL_OP_WRITE, &t), 0);
  ck_assert_ptr_nonnull (t.slot);
  uint64_t e = dl_earliest (&ftl->dl);
  ck_assert_uint_ge (e, before + ftl->dl.timeout_ns);
  ck_assert_uint_le (e, clock_now () + ftl->dl.timeout_ns);
  ck_assert_int_eq (dl_end (&ftl->dl, &t, 0), 0);
  ck_assert_uint_eq (dl_earliest (&ftl->dl), UINT64_MAX);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

START_TEST (test_yields)
{
  /* A long timeout, so that background GC's yields are not cut short
   * (it yields for at most one timeout in a row); the request's own
   * deadline is set near by hand.
   */
  struct ftl *ftl = open_dlgc (10 * UINT64_C (1000000000), 20000, 4);
  uint64_t rng = 7;
  struct ftl_stats st;

  ck_assert_uint_ge (ftl->gc.high, ftl->gc.low + 2);
  for (uint64_t l = 0; l < LPAGES; l++)
    write_page (ftl, l);
  /* Overwrite until the free pool is down to the low watermark: GC has
   * work, and it is critical.
   */
  for (unsigned i = 0; alloc_nfree (ftl) != ftl->gc.low; i++) {
    ck_assert_uint_lt (i, 100 * LPAGES);
    write_page (ftl, unit_rnd (&rng) % LPAGES);
  }

  /* A running request with little time left. */
  struct dl_ticket t;
  ck_assert_int_eq (dl_begin (&ftl->dl, FTL_OP_WRITE, &t), 0);
  ck_assert_ptr_nonnull (t.slot);
  __atomic_store_n (&t.slot->deadline, clock_now () + 50000000,
                    __ATOMIC_RELAXED);

  /* At the low watermark GC does not yield. */
  ck_assert_int_eq (ftl_start_background (ftl), 0);
  ck_assert_msg (wait_free_above (ftl, ftl->gc.low, 5),
                 "background GC did not work at the low watermark");
  ftl_get_stats (ftl, &st);
  ck_assert_uint_gt (st.gc_slices, 0);

  /* Above it, it yields to the request: no slice, no block freed. */
  uint64_t slices = st.gc_slices, yields = st.gc_yields;
  uint32_t nfree = alloc_nfree (ftl);
  ck_assert_uint_le (nfree, ftl->gc.high);
  usleep (300000);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_gt (st.gc_yields, yields + 10);
  ck_assert_uint_eq (st.gc_slices, slices);
  ck_assert_uint_eq (alloc_nfree (ftl), nfree);

  /* The request ends: GC goes on, up to the high watermark. */
  ck_assert_int_eq (dl_end (&ftl->dl, &t, 0), 0);
  ck_assert_msg (wait_free_above (ftl, ftl->gc.high, 5),
                 "background GC did not resume");
  ftl_get_stats (ftl, &st);
  ck_assert_uint_gt (st.gc_slices, slices);
  ck_assert_uint_eq (st.deadline.aborted, 0);
  ftl_stop_background (ftl);

  verify_all (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = open_dlgc (10 * UINT64_C (1000000000), 0, 1);
  verify_all (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

struct writer {
  struct ftl *ftl;
  uint64_t seed;
  double end;
  unsigned errors;
};

static void *
writer (void *arg)
{
  struct writer *w = arg;
  uint8_t buf[PS];

  while (unit_now () < w->end) {
    uint64_t lpn = unit_rnd (&w->seed) % LPAGES;
    pthread_mutex_t *l = &ver_lock[lpn % 64];
    pthread_mutex_lock (l);
    unit_fill_page (buf, PS, lpn, ver[lpn] + 1);
    if (ftl_write (w->ftl, buf, PS, lpn * PS, 0) == 0)
      ver[lpn]++;
    else
      w->errors++;
    pthread_mutex_unlock (l);
  }
  return NULL;
}

START_TEST (test_writers)
{
  struct ftl *ftl;
  struct ftl_stats st;
  char stats[300], json[8192];
  pthread_t th[4];
  struct writer w[4];

  ftl = open_dlgc (0, 0, 1);
  for (uint64_t l = 0; l < LPAGES; l++)
    write_page (ftl, l);
  ck_assert_int_eq (ftl_close (ftl), 0);

  /* 50 us programs on 8 units; a deadline far above what a write
   * takes, so that none may be aborted even on a loaded host.
   */
  ftl = open_dlgc (2 * UINT64_C (1000000000), 50000, 8);
  ck_assert_int_eq (ftl_start_background (ftl), 0);
  ck_assert_int_eq (ftl_start_watchdog (ftl), 0);
  for (unsigned i = 0; i < 4; i++) {
    w[i] = (struct writer) { .ftl = ftl, .seed = 11 + i,
                             .end = unit_now () + 1.5 };
    ck_assert_int_eq (pthread_create (&th[i], NULL, writer, &w[i]), 0);
  }
  for (unsigned i = 0; i < 4; i++) {
    pthread_join (th[i], NULL);
    ck_assert_uint_eq (w[i].errors, 0);
  }
  ftl_stop_watchdog (ftl);
  ftl_stop_background (ftl);
  ftl_get_stats (ftl, &st);
  ck_assert_uint_eq (st.deadline.aborted, 0);
  ck_assert_uint_gt (st.gc_runs, 0);
  ck_assert_uint_gt (st.gc_slices, 0);
  ck_assert_int_eq (st.gc_mode, FTL_GC_DEADLINE);

  unit_path (stats, sizeof stats, "stats.json");
  ck_assert_int_eq (ftl_write_stats_json (ftl, stats), 0);
  memset (json, 0, sizeof json);
  unit_read_file (stats, json, MIN (sizeof json - 1, unit_file_size (stats)),
                  0);
  ck_assert_ptr_nonnull (strstr (json, "\"mode\": \"deadline\""));
  ck_assert_ptr_nonnull (strstr (json, "\"yields\": "));
  ck_assert_ptr_nonnull (strstr (json, "\"slices\": "));

  verify_all (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl = open_dlgc (0, 0, 1);
  verify_all (ftl);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

static Suite *
gc_deadline_suite (void)
{
  Suite *s = suite_create ("gc-deadline");
  TCase *tc = tcase_create ("gc-deadline");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_earliest);
  tcase_add_test (tc, test_yields);
  tcase_add_test (tc, test_writers);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (gc_deadline_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
