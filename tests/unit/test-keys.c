/* Unit tests of keys.c: the FTL's KEY=VALUE settings, which the plugin
 * and ftlctl replay share.
 */

#include <config.h>

#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ftl.h"
#include "keys.h"

/* Set one key; returns ftl_keys_set's result, err holds the message. */
static int
set (struct ftl_keys *k, const char *key, const char *value, char *err)
{
  return ftl_keys_set (k, key, value, err, 256);
}

START_TEST (test_sizes)
{
  char err[256];
  uint64_t v;

  ck_assert_int_eq (ftl_parse_size ("size", "4096", &v, err, sizeof err), 0);
  ck_assert_uint_eq (v, 4096);
  ck_assert_int_eq (ftl_parse_size ("size", "64M", &v, err, sizeof err), 0);
  ck_assert_uint_eq (v, 64 << 20);
  ck_assert_int_eq (ftl_parse_size ("size", "1g", &v, err, sizeof err), 0);
  ck_assert_uint_eq (v, 1 << 30);
  ck_assert_int_eq (ftl_parse_size ("size", "512b", &v, err, sizeof err), 0);
  ck_assert_uint_eq (v, 512);
  ck_assert_int_eq (ftl_parse_size ("size", "15E", &v, err, sizeof err), 0);
  ck_assert_uint_eq (v, UINT64_C (15) << 60);
  /* Overflow, a second suffix, a sign, nothing, a unit alone. */
  const char *bad[] = { "16E", "1MM", "-1", "", "K", "1.5M", "1 M", "0x10" };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_msg (ftl_parse_size ("size", bad[i], &v, err,
                                   sizeof err) == -1, "accepted '%s'",
                   bad[i]);
    ck_assert_msg (strstr (err, "size: not a size") != NULL, "%s", err);
  }
}
END_TEST

START_TEST (test_defaults_and_keys)
{
  struct ftl_keys k;
  char err[256];

  ftl_keys_init (&k);
  ck_assert_int_eq (ftl_keys_finish (&k, err, sizeof err), 0);
  ck_assert (!k.opts.timing.enabled);
  ck_assert_uint_eq (k.opts.write_cache_bytes, FTL_WRITE_CACHE_AUTO);
  ck_assert_uint_eq (k.opts.write_cache_bypass,
                     FTL_DEFAULT_WRITE_CACHE_BYPASS);
  ck_assert_uint_eq (k.opts.timeout_ns, FTL_DEFAULT_TIMEOUT_NS);

  ck_assert_int_eq (set (&k, "size", "256M", err), 1);
  ck_assert_uint_eq (k.opts.logical_bytes, 256 << 20);
  ck_assert (!k.opts.one_log && !k.opts.hot_cold_always);   /* auto */
  ck_assert_int_eq (set (&k, "hot-cold", "true", err), 1);
  ck_assert (!k.opts.one_log && k.opts.hot_cold_always);
  ck_assert_int_eq (set (&k, "hot-cold", "auto", err), 1);
  ck_assert (!k.opts.one_log && !k.opts.hot_cold_always);
  ck_assert_int_eq (set (&k, "hot-cold", "off", err), 1);
  ck_assert (k.opts.one_log && !k.opts.hot_cold_always);
  ck_assert_int_eq (set (&k, "gc", "greedy", err), 1);
  ck_assert_int_eq (k.opts.gc_policy, FTL_GC_GREEDY);
  ck_assert_int_eq (set (&k, "scrub-interval", "0", err), 1);
  ck_assert_uint_eq (k.opts.errors.scrub_ns, UINT64_MAX);
  ck_assert_int_eq (set (&k, "read-reclaim", "no", err), 1);
  ck_assert (k.opts.errors.no_reclaim);

  /* Not the FTL's: left to the caller. */
  ck_assert_int_eq (set (&k, "file", "disk.img", err), 0);
  ck_assert_int_eq (set (&k, "rotational", "true", err), 0);

  /* A latency turns the model on, unless timing=false. */
  ck_assert_int_eq (set (&k, "program-latency", "200us", err), 1);
  ck_assert_int_eq (ftl_keys_finish (&k, err, sizeof err), 0);
  ck_assert (k.opts.timing.enabled);
  ck_assert_uint_eq (k.opts.timing.program_ns, 200000);
  ck_assert_int_eq (set (&k, "timing", "false", err), 1);
  ck_assert_int_eq (ftl_keys_finish (&k, err, sizeof err), 0);
  ck_assert (!k.opts.timing.enabled);
}
END_TEST

/* model= picks a preset; keys given override its values, wherever
 * they come in the list.
 */
START_TEST (test_presets)
{
  const struct ftl_timing_preset *qlc = ftl_timing_preset ("sata-qlc");
  const struct ftl_timing_preset *def = ftl_timing_preset_default ();
  struct ftl_keys k;
  char err[256];

  ck_assert_ptr_nonnull (qlc);
  ck_assert_ptr_nonnull (def);

  /* timing=true alone: the default preset, with its caches. */
  ftl_keys_init (&k);
  ck_assert_int_eq (set (&k, "timing", "true", err), 1);
  ck_assert_int_eq (ftl_keys_finish (&k, err, sizeof err), 0);
  ck_assert (k.opts.timing.enabled);
  ck_assert_uint_eq (k.opts.timing.program_ns, def->timing.program_ns);
  ck_assert_uint_eq (k.opts.timing.dies, def->timing.dies);
  ck_assert_uint_eq (k.opts.write_cache_bytes, def->write_cache);
  ck_assert_uint_eq (k.opts.write_cache_bypass, 0);

  /* model= turns the model on; a key before or after it wins. */
  ftl_keys_init (&k);
  ck_assert_int_eq (set (&k, "dies", "3", err), 1);
  ck_assert_int_eq (set (&k, "model", "sata-qlc", err), 1);
  ck_assert_int_eq (set (&k, "write-cache", "0", err), 1);
  ck_assert_int_eq (ftl_keys_finish (&k, err, sizeof err), 0);
  ck_assert (k.opts.timing.enabled);
  ck_assert_uint_eq (k.opts.timing.dies, 3);
  ck_assert_uint_eq (k.opts.timing.channels, qlc->timing.channels);
  ck_assert_uint_eq (k.opts.timing.program_ns, qlc->timing.program_ns);
  ck_assert_uint_eq (k.opts.write_cache_bytes, 0);
  ck_assert_uint_eq (k.opts.slc.cell_bits, 4);
  ck_assert_uint_eq (k.opts.slc.static_per_million, 6000);
  ck_assert_uint_eq (k.opts.slc.dynamic_per_million, 36000);
  ck_assert_uint_eq (k.opts.slc.program_ns, qlc->slc_program_ns);

  /* slc-static= given: the cache's size is the keys' alone; a native
   * program time given: the SLC one is derived from it.
   */
  ftl_keys_init (&k);
  ck_assert_int_eq (set (&k, "model", "sata-qlc", err), 1);
  ck_assert_int_eq (set (&k, "slc-static", "0", err), 1);
  ck_assert_int_eq (set (&k, "program-latency", "2ms", err), 1);
  ck_assert_int_eq (ftl_keys_finish (&k, err, sizeof err), 0);
  ck_assert_uint_eq (k.opts.slc.static_per_million, 0);
  ck_assert_uint_eq (k.opts.slc.dynamic_per_million, 0);
  ck_assert_uint_eq (k.opts.slc.program_ns, 0);

  /* timing=false wins over model=: nothing of the preset is used. */
  ftl_keys_init (&k);
  ck_assert_int_eq (set (&k, "model", "enterprise-tlc", err), 1);
  ck_assert_int_eq (set (&k, "timing", "false", err), 1);
  ck_assert_int_eq (ftl_keys_finish (&k, err, sizeof err), 0);
  ck_assert (!k.opts.timing.enabled);
  ck_assert_uint_eq (k.opts.write_cache_bytes, FTL_WRITE_CACHE_AUTO);

  ftl_keys_init (&k);
  ck_assert_int_eq (set (&k, "model", "nosuch", err), -1);
  ck_assert_msg (strstr (err, "model: unknown drive model 'nosuch' "
                         "(known: sata-tlc") != NULL, "%s", err);
}
END_TEST

START_TEST (test_refused)
{
  static const struct { const char *key, *value, *message; } cases[] = {
    { "size", "0", "size must be greater than 0" },
    { "op", "ten", "op must be a percentage from 1 to 400: ten" },
    { "page-size", "3000",
      "page-size must be a power of 2 from 512 to 65536: 3000" },
    { "streams", "0", "streams must be from 1 to 16: 0" },
    { "streams", "-1", "streams: not a non-negative integer: '-1'" },
    { "gc-mode", "lazy", "gc-mode must be deadline or watermark: lazy" },
    { "hot-cold", "maybe", "hot-cold must be auto, true or false: 'maybe'" },
    { "wl-threshold", "0", "wl-threshold must be at least 1: 0" },
    { "timeout", "500us", "timeout must be 0 (off) or at least 1ms: 500us" },
    { "read-latency", "5", "read-latency: duration '5' has no unit" },
    { "channels", "5000", "channels must be from 1 to 4096: 5000" },
    { "planes", "0", "planes must be from 1 to 16: 0" },
    { "nand-page", "256", "nand-page must be from 512 to 262144 bytes: 256" },
    { "suspend", "sometimes",
      "suspend: not a boolean (true or false): 'sometimes'" },
    { "cell-bits", "5", "cell-bits must be 2 (MLC), 3 (TLC) or 4 (QLC): 5" },
    { "slc-dynamic", "lots", "slc-dynamic must be a size, auto or false: lots" },
    { "time-scale", "0",
      "time-scale must be a number above 0 and at most 1e+09: 0" },
    { "ecc-bits", "0", "ecc-bits must be from 1 to 8192: 0" },
    { "seed", "x", "seed: not a non-negative integer: 'x'" },
    { "namespaces", "", "namespaces: give NAME:SIZE[,NAME:SIZE...]" },
    { "namespaces", "a", "namespaces: 'a' is not NAME:SIZE" },
    { "namespaces", "a:1M,", "namespaces: a ',' with nothing after it" },
    { "namespaces", "a:1M,a:2M",
      "namespaces: 'a' given twice (names are unique)" },
    { "namespaces", ":1M", "namespaces: bad name '' (1 to 63 characters" },
    { "namespaces", "a b:1M", "namespaces: bad name 'a b' (1 to 63" },
    { "namespaces", "a:0", "namespaces: 'a' has size 0" },
    { "namespaces", "a:1Q", "namespaces: not a size" },
    { "namespaces", "a:1,b:1,c:1,d:1,e:1,f:1,g:1,h:1,i:1,j:1,k:1,l:1,"
      "m:1,n:1,o:1,p:1,q:1", "namespaces: more than 16" },
  };
  struct ftl_keys k;
  char err[256];

  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    ftl_keys_init (&k);
    ck_assert_int_eq (set (&k, cases[i].key, cases[i].value, err), -1);
    ck_assert_msg (strncmp (err, cases[i].message,
                            strlen (cases[i].message)) == 0,
                   "%s=%s: '%s', expected '%s'", cases[i].key,
                   cases[i].value, err, cases[i].message);
  }

  /* namespaces=, in order, with the sizes of size=. */
  ftl_keys_init (&k);
  ck_assert_int_eq (set (&k, "namespaces", "a:1G,b.2_x-Y:512K,c:4096", err),
                    1);
  ck_assert_uint_eq (k.opts.nnamespaces, 3);
  ck_assert_str_eq (k.opts.namespaces[0].name, "a");
  ck_assert_uint_eq (k.opts.namespaces[0].bytes, UINT64_C (1) << 30);
  ck_assert_str_eq (k.opts.namespaces[1].name, "b.2_x-Y");
  ck_assert_uint_eq (k.opts.namespaces[1].bytes, 512 << 10);
  ck_assert_uint_eq (k.opts.namespaces[2].bytes, 4096);

  ftl_keys_init (&k);
  ck_assert_int_eq (set (&k, "channels", "64", err), 1);
  ck_assert_int_eq (set (&k, "dies", "128", err), 1);
  ck_assert_int_eq (ftl_keys_finish (&k, err, sizeof err), -1);
  ck_assert_str_eq (err, "channels x dies must be at most 4096: 64 x 128");
}
END_TEST

static Suite *
keys_suite (void)
{
  Suite *s = suite_create ("keys");
  TCase *tc = tcase_create ("keys");

  tcase_add_test (tc, test_sizes);
  tcase_add_test (tc, test_defaults_and_keys);
  tcase_add_test (tc, test_presets);
  tcase_add_test (tc, test_refused);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (keys_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
