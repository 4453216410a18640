/* Unit tests of metrics.c: the statistics JSON read back, the timeline
 * line and the Prometheus text.
 */

#include <config.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "metrics.h"

static int
parse (const char *json, struct ftl_stat_set *set, char *err, size_t n)
{
  memset (set, 0, sizeof *set);
  return ftl_stats_parse (json, strlen (json), set, err, n);
}

/* Render into a string (free it). */
static char *
prometheus (const char *json)
{
  struct ftl_stat_set set;
  char err[200], *text = NULL;
  size_t len;
  FILE *fp;

  ck_assert_msg (parse (json, &set, err, sizeof err) == 0, "%s", err);
  fp = open_memstream (&text, &len);
  ck_assert_ptr_nonnull (fp);
  ck_assert_int_eq (ftl_render_prometheus (&set, fp), 0);
  fclose (fp);
  ftl_stats_free (&set);
  return text;
}

START_TEST (test_parse_paths)
{
  struct ftl_stat_set set;
  char err[200];

  ck_assert_int_eq (parse ("{\"a\": {\"b\": 1.5, \"c\": [3, 4]},"
                           " \"s\": \"x\\\"y\\u0041\", \"t\": true,"
                           " \"n\": null, \"e\": {}, \"z\": -2e3}",
                           &set, err, sizeof err), 0);
  ck_assert_uint_eq (set.n, 7);
  ck_assert_str_eq (set.v[0].path, "a.b");
  ck_assert_double_eq (ftl_stats_num (&set, "a.b", 0), 1.5);
  ck_assert_double_eq (ftl_stats_num (&set, "a.c[1]", 0), 4);
  ck_assert_str_eq (ftl_stats_find (&set, "s")->str, "x\"yA");
  ck_assert_double_eq (ftl_stats_num (&set, "t", 0), 1);
  ck_assert_int_eq (ftl_stats_find (&set, "n")->kind, FTL_STAT_NULL);
  ck_assert_double_eq (ftl_stats_num (&set, "z", 0), -2000);
  ck_assert_double_eq (ftl_stats_num (&set, "missing", 7), 7);
  ck_assert_double_eq (ftl_stats_num (&set, "s", 7), 7);
  ftl_stats_free (&set);
}
END_TEST

START_TEST (test_parse_errors)
{
  static const struct { const char *json, *msg; } bad[] = {
    { "", "unexpected end at byte 0" },
    { "{\"a\": 1", "expected ',' or '}' at byte 7" },
    { "{\"a\" 1}", "expected ':' at byte 5" },
    { "{\"a\": 1} x", "trailing characters at byte 9" },
    { "{\"a\": tru}", "unexpected character 't' at byte 6" },
    { "{\"a\": \"b}", "unterminated string" },
    { "{\"a\": 1e999}", "bad number" },
    { "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]",
      "nested too deeply" },
  };
  struct ftl_stat_set set;
  char err[200];

  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq (parse (bad[i].json, &set, err, sizeof err), -1);
    ck_assert_msg (strstr (err, bad[i].msg) != NULL, "%s: got '%s'",
                   bad[i].json, err);
    ftl_stats_free (&set);
  }
}
END_TEST

START_TEST (test_compact)
{
  char *out = NULL;
  size_t len;
  FILE *fp = open_memstream (&out, &len);

  ftl_json_compact ("{\n  \"a b\": \"x \\\" y\",\n  \"c\": [1, 2]\n}\n", fp);
  fclose (fp);
  ck_assert_str_eq (out, "{\"a b\":\"x \\\" y\",\"c\":[1,2]}");
  free (out);
}
END_TEST

START_TEST (test_timeline)
{
  const char *j1 = "{\"host\": {\"write_pages\": 100},"
    " \"media\": {\"program_pages\": 100}, \"blocks\": {\"free\": 9}}";
  const char *j2 = "{\"host\": {\"write_pages\": 300},"
    " \"media\": {\"program_pages\": 500}, \"waf\": 2,"
    " \"blocks\": {\"free\": 4}}";
  struct ftl_stat_set a, b, line;
  char err[200], *out = NULL;
  size_t len;
  FILE *fp;

  ck_assert_int_eq (parse (j1, &a, err, sizeof err), 0);
  ck_assert_int_eq (parse (j2, &b, err, sizeof err), 0);
  fp = open_memstream (&out, &len);
  ck_assert_int_eq (ftl_render_timeline_line (&a, &b, j2, 1000.5, 10, 2,
                                              fp), 0);
  fclose (fp);
  ck_assert_ptr_nonnull (strchr (out, '\n'));
  ck_assert_ptr_eq (strchr (out, '\n'), out + len - 1);
  ck_assert_int_eq (parse (out, &line, err, sizeof err), 0);
  ck_assert_double_eq (ftl_stats_num (&line, "time", 0), 1000.5);
  ck_assert_double_eq (ftl_stats_num (&line, "rates.write_pages_per_s", 0),
                       100);
  ck_assert_double_eq (ftl_stats_num (&line, "rates.waf_interval", 0), 2);
  ck_assert_double_eq (ftl_stats_num (&line, "rates.free_blocks", 0), 4);
  ck_assert_double_eq (ftl_stats_num (&line, "stats.host.write_pages", 0),
                       300);
  ftl_stats_free (&line);
  free (out);

  /* Nothing written in the interval: no interval WAF. */
  out = NULL;
  fp = open_memstream (&out, &len);
  ck_assert_int_eq (ftl_render_timeline_line (&b, &b, j2, 1, 1, 1, fp), 0);
  fclose (fp);
  ck_assert_ptr_nonnull (strstr (out, "\"waf_interval\":null"));
  free (out);
  ftl_stats_free (&a);
  ftl_stats_free (&b);
}
END_TEST

START_TEST (test_prometheus)
{
  char *t = prometheus ("{\"host\": {\"write_pages\": 12},"
                        " \"gc\": {\"policy\": \"greedy\", \"mode\": \"a\\\"b\"},"
                        " \"deadline\": {\"timeout_us\": 1500000},"
                        " \"health\": {\"new-thing\": 3},"
                        " \"waf\": 1.25, \"readonly\": false}");

  ck_assert_ptr_nonnull (strstr (t,
    "# TYPE nbdkit_ftl_host_write_pages_total counter\n"
    "nbdkit_ftl_host_write_pages_total 12\n"));
  ck_assert_ptr_nonnull (strstr (t, "nbdkit_ftl_deadline_timeout_seconds 1.5\n"));
  /* Unknown: a gauge named after its path. */
  ck_assert_ptr_nonnull (strstr (t,
    "# TYPE nbdkit_ftl_health_new_thing gauge\n"
    "nbdkit_ftl_health_new_thing 3\n"));
  ck_assert_ptr_nonnull (strstr (t, "nbdkit_ftl_write_amplification_ratio 1.25\n"));
  ck_assert_ptr_nonnull (strstr (t, "nbdkit_ftl_readonly 0\n"));
  ck_assert_ptr_nonnull (strstr (t,
    "nbdkit_ftl_gc_info{policy=\"greedy\",mode=\"a\\\"b\"} 1\n"));
  free (t);

  t = prometheus ("{\"wear\": {\"erase_mean\": 1.5, \"histogram\": "
                  "{\"first\": 1, \"width\": 2, \"counts\": [3, 1]}}}");
  ck_assert_ptr_nonnull (strstr (t,
    "nbdkit_ftl_block_erases_bucket{le=\"2\"} 3\n"
    "nbdkit_ftl_block_erases_bucket{le=\"4\"} 4\n"
    "nbdkit_ftl_block_erases_bucket{le=\"+Inf\"} 4\n"
    "nbdkit_ftl_block_erases_sum 6\n"
    "nbdkit_ftl_block_erases_count 4\n"));
  free (t);
}
END_TEST

static Suite *
metrics_suite (void)
{
  Suite *s = suite_create ("metrics");
  TCase *tc = tcase_create ("metrics");

  tcase_add_test (tc, test_parse_paths);
  tcase_add_test (tc, test_parse_errors);
  tcase_add_test (tc, test_compact);
  tcase_add_test (tc, test_timeline);
  tcase_add_test (tc, test_prometheus);
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
