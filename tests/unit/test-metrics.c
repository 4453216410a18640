/* Unit tests of the statistics snapshot (metrics.c, stats.c): sets
 * built member by member, the JSON, timeline and Prometheus renderers,
 * and the snapshot of a real handle with its descriptions.
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "metrics.h"
#include "helpers.h"

#define COUNTER(name, help) \
  (&(const struct ftl_metric) { name, FTL_METRIC_COUNTER, 1, help })
#define GAUGE(name, scale, help) \
  (&(const struct ftl_metric) { name, FTL_METRIC_GAUGE, scale, help })

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "metrics.img");
}

/* What fn writes, as a string (free it); fn must return r. */
#define RENDER(r, call)                                 \
  ({                                                    \
    char *text_ = NULL;                                 \
    size_t len_;                                        \
    FILE *fp = open_memstream (&text_, &len_);          \
    ck_assert_ptr_nonnull (fp);                         \
    ck_assert_int_eq ((call), (r));                     \
    ck_assert_int_eq (fclose (fp), 0);                  \
    text_;                                              \
  })

/* Every kind of member, nested. */
static void
build_sample (struct ftl_stat_set *s)
{
  memset (s, 0, sizeof *s);
  ftl_stats_begin_object (s, NULL, NULL);
  ftl_stats_add_uint (s, "a", 1, NULL);
  ftl_stats_begin_object (s, "o", NULL);
  ftl_stats_add_fixed (s, "f", 1.23456, NULL);
  ftl_stats_add_int (s, "neg", -5, NULL);
  ftl_stats_begin_array (s, "arr");
  ftl_stats_add_uint (s, NULL, 3, NULL);
  ftl_stats_add_uint (s, "ignored", 4, NULL);
  ftl_stats_end (s);
  ftl_stats_begin_object (s, "empty", NULL);
  ftl_stats_end (s);
  ftl_stats_begin_array (s, "none");
  ftl_stats_end (s);
  ftl_stats_end (s);
  ftl_stats_add_string (s, "s", "x\"y\\z\n");
  ftl_stats_add_bool (s, "t", true, NULL);
  ftl_stats_add_null (s, "n");
  ftl_stats_add_uint (s, "big", UINT64_MAX, NULL);
  ftl_stats_add_real (s, "r", 0.5);
  ftl_stats_end (s);
}

START_TEST (test_build_paths)
{
  static const char *const paths[] = {
    "", "a", "o", "o.f", "o.neg", "o.arr", "o.arr[0]", "o.arr[1]", "o.arr",
    "o.empty", "o.empty", "o.none", "o.none", "o", "s", "t", "n", "big",
    "r", "",
  };
  struct ftl_stat_set s;

  build_sample (&s);
  ck_assert_int_eq (ftl_stats_error (&s), 0);
  ck_assert_uint_eq (s.n, sizeof paths / sizeof paths[0]);
  for (size_t i = 0; i < s.n; i++)
    ck_assert_str_eq (s.v[i].path, paths[i]);
  ck_assert_int_eq (s.v[0].kind, FTL_STAT_OBJECT);
  ck_assert_ptr_null (s.v[0].key);
  ck_assert_str_eq (s.v[3].key, "f");
  ck_assert_ptr_null (s.v[7].key);     /* an element */
  ck_assert_int_eq (s.v[8].kind, FTL_STAT_END);
  ck_assert_int_eq (s.v[s.n - 1].kind, FTL_STAT_END);
  /* A fixed number is what it is written as. */
  ck_assert_double_eq (ftl_stats_num (&s, "o.f", 0), 1.2346);
  ck_assert_double_eq (ftl_stats_num (&s, "o.neg", 0), -5);
  ck_assert_double_eq (ftl_stats_num (&s, "o.arr[1]", 0), 4);
  ck_assert_str_eq (ftl_stats_find (&s, "s")->str, "x\"y\\z\n");
  ck_assert_double_eq (ftl_stats_num (&s, "t", 0), 1);
  ck_assert_int_eq (ftl_stats_find (&s, "n")->kind, FTL_STAT_NULL);
  ck_assert_uint_eq (ftl_stats_find (&s, "big")->u, UINT64_MAX);
  ck_assert_int_eq (ftl_stats_find (&s, "o")->kind, FTL_STAT_OBJECT);
  ck_assert_double_eq (ftl_stats_num (&s, "missing", 7), 7);
  ck_assert_double_eq (ftl_stats_num (&s, "s", 7), 7);
  ck_assert_double_eq (ftl_stats_num (&s, "o", 7), 7);
  ftl_stats_free (&s);
  ck_assert_uint_eq (s.n, 0);
  ck_assert_ptr_null (s.v);
}
END_TEST

START_TEST (test_build_errors)
{
  struct ftl_stat_set s = { 0 };
  char *t;

  /* Empty, or not closed: not whole. */
  ck_assert_int_eq (ftl_stats_error (&s), -EINVAL);
  t = RENDER (-EINVAL, ftl_render_json (&s, false, fp));
  free (t);
  ftl_stats_begin_object (&s, NULL, NULL);
  ftl_stats_add_uint (&s, "a", 1, NULL);
  ck_assert_int_eq (ftl_stats_error (&s), -EINVAL);
  ck_assert_int_eq (s.error, 0);
  ftl_stats_end (&s);
  ck_assert_int_eq (ftl_stats_error (&s), 0);
  /* A member after the top value; then nothing more is added. */
  ftl_stats_add_uint (&s, "b", 2, NULL);
  ck_assert_int_eq (ftl_stats_error (&s), -EINVAL);
  ck_assert_uint_eq (s.n, 3);
  ftl_stats_free (&s);

  ftl_stats_end (&s);
  ck_assert_int_eq (ftl_stats_error (&s), -EINVAL);
  ftl_stats_free (&s);

  /* A member of an object needs a name. */
  ftl_stats_begin_object (&s, NULL, NULL);
  ftl_stats_add_uint (&s, NULL, 1, NULL);
  ck_assert_int_eq (s.error, -EINVAL);
  ftl_stats_free (&s);

  ftl_stats_begin_array (&s, NULL);
  ftl_stats_add_real (&s, NULL, NAN);
  ck_assert_int_eq (s.error, -EINVAL);
  ftl_stats_free (&s);

  /* FTL_STATS_MAX_DEPTH levels, not one more. */
  for (int i = 0; i < FTL_STATS_MAX_DEPTH; i++)
    ftl_stats_begin_array (&s, NULL);
  ck_assert_int_eq (s.error, 0);
  ftl_stats_begin_array (&s, NULL);
  ck_assert_int_eq (s.error, -E2BIG);
  ftl_stats_free (&s);
}
END_TEST

START_TEST (test_json)
{
  struct ftl_stat_set s;
  char *t;

  build_sample (&s);
  t = RENDER (0, ftl_render_json (&s, false, fp));
  ck_assert_str_eq (t,
                    "{\n"
                    "  \"a\": 1,\n"
                    "  \"o\": {\n"
                    "    \"f\": 1.2346,\n"
                    "    \"neg\": -5,\n"
                    "    \"arr\": [3, 4],\n"
                    "    \"empty\": {},\n"
                    "    \"none\": []\n"
                    "  },\n"
                    "  \"s\": \"x\\\"y\\\\z\\u000a\",\n"
                    "  \"t\": true,\n"
                    "  \"n\": null,\n"
                    "  \"big\": 18446744073709551615,\n"
                    "  \"r\": 0.5\n"
                    "}\n");
  free (t);
  t = RENDER (0, ftl_render_json (&s, true, fp));
  ck_assert_str_eq (t,
                    "{\"a\":1,\"o\":{\"f\":1.2346,\"neg\":-5,\"arr\":[3,4],"
                    "\"empty\":{},\"none\":[]},\"s\":\"x\\\"y\\\\z\\u000a\","
                    "\"t\":true,\"n\":null,\"big\":18446744073709551615,"
                    "\"r\":0.5}");
  free (t);
  ftl_stats_free (&s);
}
END_TEST

/* host.write_pages, media.program_pages, blocks.free, and waf if >= 0. */
static void
build_counters (struct ftl_stat_set *s, uint64_t w, uint64_t p,
                uint64_t nfree, double waf)
{
  memset (s, 0, sizeof *s);
  ftl_stats_begin_object (s, NULL, NULL);
  ftl_stats_begin_object (s, "host", NULL);
  ftl_stats_add_uint (s, "write_pages", w, NULL);
  ftl_stats_end (s);
  ftl_stats_begin_object (s, "media", NULL);
  ftl_stats_add_uint (s, "program_pages", p, NULL);
  ftl_stats_end (s);
  if (waf >= 0)
    ftl_stats_add_fixed (s, "waf", waf, NULL);
  ftl_stats_begin_object (s, "blocks", NULL);
  ftl_stats_add_uint (s, "free", nfree, NULL);
  ftl_stats_end (s);
  ftl_stats_end (s);
}

START_TEST (test_timeline)
{
  struct ftl_stat_set a, b, bad = { 0 };
  char *t;

  build_counters (&a, 100, 100, 9, -1);
  build_counters (&b, 300, 500, 4, 2);
  t = RENDER (0, ftl_render_timeline_line (&a, &b, 1000.5, 10, 2, fp));
  ck_assert_str_eq (t,
    "{\"time\":1000.500,\"elapsed_s\":10.000,\"interval_s\":2.000,"
    "\"rates\":{\"write_pages_per_s\":100.0,\"read_pages_per_s\":0.0,"
    "\"trim_pages_per_s\":0.0,\"flushes_per_s\":0.0,"
    "\"program_pages_per_s\":200.0,\"media_read_pages_per_s\":0.0,"
    "\"erases_per_s\":0.0,\"gc_copied_pages_per_s\":0.0,"
    "\"gc_runs_per_s\":0.0,\"map_misses_per_s\":0.0,"
    "\"map_program_pages_per_s\":0.0,\"waf_interval\":2.0000,\"waf\":2.0000,"
    "\"free_blocks\":4,\"gc_copied_pages\":0,\"gc_runs\":0,"
    "\"deadline_requests\":0,\"deadline_expired\":0,"
    "\"deadline_handled\":0,\"deadline_reset\":0,\"deadline_aborted\":0,"
    "\"deadline_rejected\":0},"
    "\"stats\":{\"host\":{\"write_pages\":300},"
    "\"media\":{\"program_pages\":500},\"waf\":2.0000,"
    "\"blocks\":{\"free\":4}}}\n");
  free (t);

  /* Nothing written in the interval: no interval WAF.  The first line:
   * rates since 0.
   */
  t = RENDER (0, ftl_render_timeline_line (&b, &b, 1, 1, 1, fp));
  ck_assert_ptr_nonnull (strstr (t, "\"waf_interval\":null"));
  free (t);
  t = RENDER (0, ftl_render_timeline_line (NULL, &b, 1, 1, 4, fp));
  ck_assert_ptr_nonnull (strstr (t, "\"write_pages_per_s\":75.0,"));
  free (t);
  /* A restart: the counter went down, the rate is since 0. */
  t = RENDER (0, ftl_render_timeline_line (&b, &a, 1, 1, 1, fp));
  ck_assert_ptr_nonnull (strstr (t, "\"write_pages_per_s\":100.0,"));
  free (t);
  t = RENDER (-EINVAL, ftl_render_timeline_line (&a, &bad, 1, 1, 1, fp));
  free (t);
  ftl_stats_free (&a);
  ftl_stats_free (&b);
}
END_TEST

static char *
prometheus (const struct ftl_stat_set *s)
{
  return RENDER (0, ftl_render_prometheus (s, fp));
}

START_TEST (test_prometheus)
{
  struct ftl_stat_set s = { 0 };
  char *t;

  ftl_stats_begin_object (&s, NULL, NULL);
  ftl_stats_begin_object (&s, "host", NULL);
  ftl_stats_add_uint (&s, "write_pages", 12,
                      COUNTER ("host_write_pages_total", "Host pages."));
  ftl_stats_end (&s);
  ftl_stats_begin_object (&s, "gc", NULL);
  ftl_stats_add_string (&s, "policy", "greedy");
  ftl_stats_add_string (&s, "mode", "a\"b");
  ftl_stats_end (&s);
  ftl_stats_begin_object (&s, "deadline", NULL);
  ftl_stats_add_uint (&s, "timeout_us", 1500000,
                      GAUGE ("deadline_timeout_seconds", 1e-6, "Deadline."));
  ftl_stats_end (&s);
  ftl_stats_begin_object (&s, "health", NULL);
  ftl_stats_add_uint (&s, "new-thing", 3, NULL);
  ftl_stats_end (&s);
  ftl_stats_add_fixed (&s, "waf", 1.25,
                       GAUGE ("write_amplification_ratio", 1, "WAF."));
  ftl_stats_add_bool (&s, "readonly", false, GAUGE ("readonly", 1, "RO."));
  ftl_stats_end (&s);
  t = prometheus (&s);
  ck_assert_ptr_nonnull (strstr (t,
    "# HELP nbdkit_ftl_host_write_pages_total Host pages.\n"
    "# TYPE nbdkit_ftl_host_write_pages_total counter\n"
    "nbdkit_ftl_host_write_pages_total 12\n"));
  ck_assert_ptr_nonnull (strstr (t,
    "# TYPE nbdkit_ftl_deadline_timeout_seconds gauge\n"
    "nbdkit_ftl_deadline_timeout_seconds 1.5\n"));
  /* Not described: a gauge named after its path. */
  ck_assert_ptr_nonnull (strstr (t,
    "# HELP nbdkit_ftl_health_new_thing Statistic health.new-thing "
    "(nbdkit-ftl-plugin(1)).\n"
    "# TYPE nbdkit_ftl_health_new_thing gauge\n"
    "nbdkit_ftl_health_new_thing 3\n"));
  ck_assert_ptr_nonnull (strstr (t,
    "nbdkit_ftl_write_amplification_ratio 1.25\n"));
  ck_assert_ptr_nonnull (strstr (t, "nbdkit_ftl_readonly 0\n"));
  ck_assert_ptr_nonnull (strstr (t,
    "# TYPE nbdkit_ftl_gc_info gauge\n"
    "nbdkit_ftl_gc_info{policy=\"greedy\",mode=\"a\\\"b\"} 1\n"));
  free (t);
  ftl_stats_free (&s);
}
END_TEST

START_TEST (test_prometheus_families)
{
  struct ftl_stat_set s = { 0 };
  char *t;

  ftl_stats_begin_object (&s, NULL, NULL);
  ftl_stats_begin_object (&s, "wear", NULL);
  ftl_stats_add_fixed (&s, "erase_mean", 1.5, NULL);
  ftl_stats_begin_object (&s, "histogram", &(const struct ftl_metric) {
      "block_erases", FTL_METRIC_HISTOGRAM, 1, "By erase count." });
  ftl_stats_add_uint (&s, "first", 1, NULL);
  ftl_stats_add_uint (&s, "width", 2, NULL);
  ftl_stats_begin_array (&s, "counts");
  ftl_stats_add_uint (&s, NULL, 3, NULL);
  ftl_stats_add_uint (&s, NULL, 1, NULL);
  ftl_stats_end (&s);
  ftl_stats_end (&s);
  ftl_stats_end (&s);
  ftl_stats_begin_object (&s, "lat", &(const struct ftl_metric) {
      "latency_seconds", FTL_METRIC_SUMMARY, 1e-6, "Latency." });
  for (int op = 0; op < 2; op++) {
    ftl_stats_begin_object (&s, op ? "write" : "read", NULL);
    ftl_stats_add_uint (&s, "count", 2 + op, NULL);
    ftl_stats_add_uint (&s, "p50", 10, NULL);
    ftl_stats_add_uint (&s, "p99", 20, NULL);
    ftl_stats_add_uint (&s, "p999", 30, NULL);
    ftl_stats_add_uint (&s, "max", 40 + op,
                        GAUGE ("latency_max_seconds", 1e-6, "Longest."));
    ftl_stats_end (&s);
  }
  ftl_stats_end (&s);
  ftl_stats_end (&s);
  t = prometheus (&s);
  ck_assert_ptr_nonnull (strstr (t,
    "# HELP nbdkit_ftl_block_erases By erase count.\n"
    "# TYPE nbdkit_ftl_block_erases histogram\n"
    "nbdkit_ftl_block_erases_bucket{le=\"2\"} 3\n"
    "nbdkit_ftl_block_erases_bucket{le=\"4\"} 4\n"
    "nbdkit_ftl_block_erases_bucket{le=\"+Inf\"} 4\n"
    "nbdkit_ftl_block_erases_sum 6\n"
    "nbdkit_ftl_block_erases_count 4\n"
    "# HELP nbdkit_ftl_latency_seconds Latency.\n"
    "# TYPE nbdkit_ftl_latency_seconds summary\n"
    "nbdkit_ftl_latency_seconds{op=\"read\",quantile=\"0.5\"} 1e-05\n"
    "nbdkit_ftl_latency_seconds{op=\"read\",quantile=\"0.99\"} 2e-05\n"
    "nbdkit_ftl_latency_seconds{op=\"read\",quantile=\"0.999\"} 3e-05\n"
    "nbdkit_ftl_latency_seconds_count{op=\"read\"} 2\n"
    "nbdkit_ftl_latency_seconds{op=\"write\",quantile=\"0.5\"} 1e-05\n"));
  ck_assert_ptr_nonnull (strstr (t,
    "nbdkit_ftl_latency_seconds_count{op=\"write\"} 3\n"
    "# HELP nbdkit_ftl_latency_max_seconds Longest.\n"
    "# TYPE nbdkit_ftl_latency_max_seconds gauge\n"
    "nbdkit_ftl_latency_max_seconds{op=\"read\"} 4e-05\n"
    "nbdkit_ftl_latency_max_seconds{op=\"write\"} 4.1e-05\n"));
  /* Their members are nothing else. */
  ck_assert_ptr_null (strstr (t, "nbdkit_ftl_wear_histogram"));
  ck_assert_ptr_null (strstr (t, "nbdkit_ftl_lat_"));
  ck_assert_ptr_nonnull (strstr (t, "nbdkit_ftl_wear_erase_mean 1.5\n"));
  free (t);
  ftl_stats_free (&s);
}
END_TEST

/* A small image with 10 pages written by one request, 3 read. */
static struct ftl *
open_written (void)
{
  struct ftl *ftl = unit_open (path, 1024 * 1024, 4096, 16, 100, 1,
                               unit_nosync_io ());
  static uint8_t buf[10 * 4096];

  memset (buf, 0xa5, sizeof buf);
  ck_assert_int_eq (ftl_write (ftl, buf, sizeof buf, 0, 0), 0);
  ck_assert_int_eq (ftl_read (ftl, buf, 3 * 4096, 0), 0);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  return ftl;
}

#define HEALTH_START "{\n  \"health\": {\n    \"critical_warning\": 0,\n"

START_TEST (test_snapshot)
{
  struct ftl *ftl = open_written ();
  struct ftl_stat_set s = { 0 };
  const struct ftl_stat *v;
  char *a, *b;

  ck_assert_int_eq (ftl_stats_snapshot (ftl, FTL_STATS_SERVER, &s), 0);
  ck_assert_int_eq (ftl_stats_error (&s), 0);
  ck_assert_double_eq (ftl_stats_num (&s, "host.write_pages", 0), 10);
  ck_assert_double_eq (ftl_stats_num (&s, "host.read_pages", 0), 3);
  ck_assert_double_eq (ftl_stats_num (&s, "latency_us.write.count", 0), 1);
  ck_assert_ptr_null (ftl_stats_find (&s, "file"));
  v = ftl_stats_find (&s, "host.write_pages");
  ck_assert_int_eq (v->metric.type, FTL_METRIC_COUNTER);
  ck_assert_str_eq (v->metric.name, "host_write_pages_total");
  ck_assert_int_eq (ftl_stats_find (&s, "latency_us")->metric.type,
                    FTL_METRIC_SUMMARY);
  ck_assert_int_eq (ftl_stats_find (&s, "wear.histogram")->metric.type,
                    FTL_METRIC_HISTOGRAM);
  ck_assert_str_eq (ftl_stats_find (&s, "latency_us.read.max")->metric.name,
                    "request_latency_max_seconds");
  ck_assert_int_eq (ftl_stats_find (&s, "gc.policy")->kind, FTL_STAT_STRING);
  ck_assert_int_eq (ftl_stats_find (&s, "errors.seed")->metric.type,
                    FTL_METRIC_NONE);

  /* The descriptions: counters end in _total, each name is one
   * member's, each has help.
   */
  for (size_t i = 0; i < s.n; i++) {
    const struct ftl_metric *m = &s.v[i].metric;
    size_t len;

    if (m->type != FTL_METRIC_GAUGE && m->type != FTL_METRIC_COUNTER)
      continue;
    len = strlen (m->name);
    ck_assert_msg (m->type != FTL_METRIC_COUNTER ||
                   (len > 6 && strcmp (m->name + len - 6, "_total") == 0),
                   "%s: %s", s.v[i].path, m->name);
    ck_assert_msg (m->help && m->help[0], "%s: no help", s.v[i].path);
    if (strcmp (m->name, "request_latency_max_seconds") == 0)
      continue;                 /* one per request kind */
    for (size_t j = i + 1; j < s.n; j++)
      ck_assert_msg (s.v[j].metric.name == NULL ||
                     strcmp (s.v[j].metric.name, m->name) != 0,
                     "%s and %s: both %s", s.v[i].path, s.v[j].path,
                     m->name);
  }

  /* The statistics JSON is this snapshot's. */
  a = RENDER (0, ftl_render_json (&s, false, fp));
  b = RENDER (0, ftl_render_stats_json (ftl, FTL_STATS_SERVER, fp));
  ck_assert_str_eq (a, b);
  ck_assert_ptr_nonnull (strstr (a,
    "\n  \"host\": {\n    \"write_pages\": 10,\n    \"read_pages\": 3,\n"));
  ck_assert_ptr_nonnull (strstr (a, "\n  \"waf\": "));
  free (a);
  free (b);

  a = prometheus (&s);
  ck_assert_ptr_nonnull (strstr (a,
    "# TYPE nbdkit_ftl_host_write_pages_total counter\n"
    "nbdkit_ftl_host_write_pages_total 10\n"));
  ck_assert_ptr_nonnull (strstr (a,
    "# TYPE nbdkit_ftl_capacity_logical_pages gauge\n"
    "nbdkit_ftl_capacity_logical_pages 256\n"));
  ck_assert_ptr_nonnull (strstr (a,
    "# TYPE nbdkit_ftl_request_latency_seconds summary\n"));
  ck_assert_ptr_nonnull (strstr (a,
    "nbdkit_ftl_request_latency_seconds_count{op=\"write\"} 1\n"));
  ck_assert_ptr_nonnull (strstr (a,
    "# TYPE nbdkit_ftl_block_erases histogram\n"));
  ck_assert_ptr_nonnull (strstr (a, "nbdkit_ftl_gc_info{policy=\""));
  ck_assert_ptr_null (strstr (a, "nbdkit_ftl_latency_us"));
  free (a);
  ftl_stats_free (&s);

  /* ftlctl info's sections: the file, nothing of the server. */
  ck_assert_int_eq (ftl_stats_snapshot (ftl, FTL_STATS_IMAGE, &s), 0);
  ck_assert_str_eq (s.v[1].path, "file");
  ck_assert_str_eq (s.v[1].str, path);
  ck_assert_ptr_null (ftl_stats_find (&s, "latency_us"));
  ck_assert_ptr_null (ftl_stats_find (&s, "gc.policy"));
  ck_assert_ptr_nonnull (ftl_stats_find (&s, "superblock.clean"));
  ftl_stats_free (&s);

  a = RENDER (0, ftl_render_health_json (ftl, fp));
  ck_assert_msg (strncmp (a, HEALTH_START, strlen (HEALTH_START)) == 0,
                 "%s", a);
  ck_assert_int_eq (a[strlen (a) - 1], '\n');
  free (a);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

static Suite *
metrics_suite (void)
{
  Suite *s = suite_create ("metrics");
  TCase *tc = tcase_create ("metrics");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_build_paths);
  tcase_add_test (tc, test_build_errors);
  tcase_add_test (tc, test_json);
  tcase_add_test (tc, test_timeline);
  tcase_add_test (tc, test_prometheus);
  tcase_add_test (tc, test_prometheus_families);
  tcase_add_test (tc, test_snapshot);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (metrics_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
