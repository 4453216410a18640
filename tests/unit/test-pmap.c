/* nbdkit-ftl: unit tests of the paged map (pmap.c): translation pages
 * in the log, a cache of groups smaller than the map, checkpoints that
 * write the dirty groups, recovery over them, and GC moving them.
 *
 * The disks are small but hold many groups (FTL_TP_ENTRIES logical pages
 * each), and the cache holds two or three of them, so that nearly every
 * access to another group is a miss and groups are evicted all the time.
 * Every page written is kept in a model (its version, 0 for zeros) and
 * read back after each phase, the cache counters must show the misses,
 * evictions and write-backs that this needs, and the self-check must
 * pass (it counts the translation pages in the valid counts).
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"
#include "helpers.h"

#define PS      4096
#define GROUPS  12
#define LP      ((uint64_t) GROUPS * FTL_TP_ENTRIES)
#define SIZE    (LP * PS)
#define CACHE   (2 * PMAP_GROUP_BYTES)

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "pmap.img");
}

static struct ftl *
open_paged (uint64_t size, uint64_t cache, double op)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = size, .page_size = PS,
    .pages_per_block = 64, .op_percent = op, .log = unit_log,
    .io = unit_nosync_io (), .map_cache_bytes = cache,
    .write_cache_bytes = 0,
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);
  ck_assert_msg (r == 0, "ftl_open %s: %s", path, err);
  return ftl;
}

/* Write n random single pages (and now and then a trim of a few), all
 * over the disk, recording each page's version in model.
 */
static void
workload (struct ftl *ftl, uint64_t *model, uint64_t *version,
          uint64_t *rng, unsigned n)
{
  uint8_t page[PS];

  for (unsigned i = 0; i < n; i++) {
    uint64_t l = unit_rnd (rng) % LP;
    if (unit_rnd (rng) % 10 == 0) {
      uint64_t k = MIN (1 + unit_rnd (rng) % 4, LP - l);
      ck_assert_int_eq (ftl_trim (ftl, k * PS, l * PS, 0), 0);
      for (uint64_t j = 0; j < k; j++)
        model[l + j] = 0;
      continue;
    }
    unit_fill_page (page, PS, l, *version);
    ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
    model[l] = (*version)++;
  }
}

/* Pages 0..n-1 read as model says (0: zeros). */
static void
verify_pages (struct ftl *ftl, const uint64_t *model, uint64_t n,
              const char *what)
{
  uint8_t page[PS];

  for (uint64_t l = 0; l < n; l++) {
    uint64_t lpn = l, v = 0;
    int e = ftl_read (ftl, page, PS, l * PS);
    ck_assert_msg (e == 0, "%s: reading page %" PRIu64 ": %s", what, l,
                   strerror (-e));
    int k = unit_page_identify (page, PS, &lpn, &v);
    ck_assert_msg (k >= 0 && lpn == l && v == model[l],
                   "%s: page %" PRIu64 " reads as page %" PRIu64
                   " version %" PRIu64 ", not version %" PRIu64, what, l,
                   lpn, v, model[l]);
  }
}

/* Every page reads back through a cache of two groups of twelve, across
 * checkpoints, a clean close and a kill; the counters show the misses,
 * the evictions and the translation pages written; memory stays within
 * the cache.
 */
START_TEST (test_paged_roundtrip)
{
  struct ftl *ftl = open_paged (SIZE, CACHE, 25);
  uint64_t *model = calloc (LP, sizeof *model);
  uint64_t version = 1, rng = 7;

  ck_assert (ftl->pm.on);
  ck_assert_uint_eq (ftl->pm.limit, 2);
  workload (ftl, model, &version, &rng, 6000);
  verify_pages (ftl, model, LP, "paged, open");
  ck_assert_uint_gt (pmap_ctr (ftl, PMAP_MISSES), 100);
  ck_assert_uint_gt (pmap_ctr (ftl, PMAP_EVICTIONS), 0);
  ck_assert_uint_gt (pmap_ctr (ftl, PMAP_WRITEBACKS), 10);
  /* Each checkpoint wrote the translation pages of the groups dirtied
   * since the last.
   */
  ck_assert_uint_gt (ctr_get (ftl, FTL_CTR_CKPTS), 100);
  ck_assert_uint_ge (ftl->pm.program_pages, ctr_get (ftl, FTL_CTR_CKPTS) - 2);
  /* Resident groups: the cache, and the few that a checkpoint due
   * makes wait (dirty ones are never evicted).
   */
  ck_assert_uint_le (ftl->pm.resident, GROUPS);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  struct ftl_stats st;
  ftl_get_stats (ftl, &st);
  ck_assert (st.map.paged && st.map.program_pages > 0);
  ck_assert (st.waf_data < st.waf);
  ck_assert_int_eq (ftl_close (ftl), 0);

  ftl = open_paged (0, CACHE, 0);
  ck_assert (ftl->pm.on);
  /* The translation pages programmed so far come with the image. */
  ck_assert_uint_ge (ftl->pm.program_pages, st.map.program_pages);
  verify_pages (ftl, model, LP, "after a clean close");
  ck_assert_uint_le (__atomic_load_n (&ftl->pm.resident, __ATOMIC_RELAXED),
                     ftl->pm.limit);
  workload (ftl, model, &version, &rng, 3000);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  open_abandon (ftl);

  ftl = open_paged (0, CACHE, 0);
  verify_pages (ftl, model, LP, "after a kill");
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
  free (model);
}
END_TEST

/* Kill after every round of writes, flushed or not: what was flushed
 * reads back (the rounds here flush before each kill), over many
 * checkpoints and GC moving translation pages.
 */
START_TEST (test_paged_kills)
{
  struct ftl *ftl = open_paged (SIZE, 3 * PMAP_GROUP_BYTES, 12);
  uint64_t *model = calloc (LP, sizeof *model);
  uint64_t version = 1, rng = 99;
  uint64_t moved = 0, tp_moved = 0;

  for (int round = 0; round < 6; round++) {
    workload (ftl, model, &version, &rng, 4000);
    ck_assert_int_eq (ftl_flush (ftl), 0);
    moved += ctr_get (ftl, FTL_CTR_GC_COPIED);
    tp_moved += pmap_ctr (ftl, PMAP_MOVED);
    open_abandon (ftl);
    ftl = open_paged (0, 3 * PMAP_GROUP_BYTES, 0);
    verify_pages (ftl, model, LP, "after a kill");
    ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  }
  ck_assert_uint_gt (moved, 0);
  /* GC moved translation pages too, and recovery found their copies. */
  ck_assert_uint_gt (tp_moved, 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
  free (model);
}
END_TEST

/* The kill test's disk (tests/test-ftl-kill-paged.sh): two groups, a
 * cache of one, 16-page erase blocks.
 */
static struct ftl_options
two_groups (double op)
{
  return (struct ftl_options) {
    .path = path, .logical_bytes = 2 * FTL_TP_ENTRIES * PS, .page_size = PS,
    .pages_per_block = 16, .op_percent = op, .log = unit_log,
    .io = unit_nosync_io (), .map_cache_bytes = 4096,
  };
}

/* Threads on a map cache of one group of two (the kill test's disk):
 * four writers, two to a group, write, trim, flush and read back their
 * own pages through a write cache, with the destager and background GC
 * running, so that groups are evicted and reloaded while checkpoints
 * write them back and GC moves pages and translation pages.  The valid
 * counts must match the map throughout (a self-check build checks them
 * at every checkpoint; here at the end), and every page must read back
 * as its writer left it, before and after a kill.
 */
#define TH_WRITERS 4
#define TH_LP      (2 * (uint64_t) FTL_TP_ENTRIES)

struct th_arg {
  struct ftl *ftl;
  unsigned k;
  uint64_t rng;
  double deadline;
  uint64_t reg;                 /* its pages: reg from k * reg */
  uint64_t *ver;                /* reg versions, 0: zeros */
  uint64_t ops;
  char err[256];
};

static void *
th_writer (void *arg)
{
  struct th_arg *t = arg;
  uint8_t *buf = malloc (8 * PS);
  uint64_t base = t->k * t->reg, n = 0;

  while (!t->err[0] && unit_now () < t->deadline) {
    uint64_t off = unit_rnd (&t->rng) % t->reg;
    uint64_t cnt = 1 + unit_rnd (&t->rng) % 8;

    uint64_t what = unit_rnd (&t->rng) % 100;
    int r = 0;

    cnt = MIN (cnt, t->reg - off);
    t->ops++;
    if (what < 70) {
      uint64_t v = ((uint64_t) (t->k + 1) << 40) | ++n;
      for (uint64_t i = 0; i < cnt; i++)
        unit_fill_page (buf + i * PS, PS, base + off + i, v);
      r = ftl_write (t->ftl, buf, cnt * PS, (base + off) * PS, 0);
      for (uint64_t i = 0; r == 0 && i < cnt; i++)
        t->ver[off + i] = v;
    }
    else if (what < 76) {
      r = ftl_trim (t->ftl, cnt * PS, (base + off) * PS, 0);
      for (uint64_t i = 0; r == 0 && i < cnt; i++)
        t->ver[off + i] = 0;
    }
    else if (what < 78)
      r = ftl_flush (t->ftl);
    else {
      r = ftl_read (t->ftl, buf, cnt * PS, (base + off) * PS);
      for (uint64_t i = 0; r == 0 && i < cnt; i++) {
        uint64_t l = base + off + i, v = 0;
        if (unit_page_identify (buf + i * PS, PS, &l, &v) < 0 ||
            l != base + off + i || v != t->ver[off + i])
          snprintf (t->err, sizeof t->err, "writer %u: page %" PRIu64
                    " reads as page %" PRIu64 " version 0x%" PRIx64
                    ", not version 0x%" PRIx64, t->k, base + off + i, l, v,
                    t->ver[off + i]);
      }
    }
    if (r < 0)
      snprintf (t->err, sizeof t->err, "writer %u: %s", t->k,
                strerror (-r));
  }
  free (buf);
  return NULL;
}

START_TEST (test_paged_threads)
{
  struct ftl_options o = two_groups (40);
  uint64_t *model = calloc (TH_LP, sizeof *model);
  struct th_arg t[TH_WRITERS];
  pthread_t th[TH_WRITERS];
  struct ftl *ftl;
  char err[256];

  o.wl_threshold = 4;
  o.streams = 4;
  o.write_cache_bytes = 64 * PS;
  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  ck_assert (ftl->pm.on);
  ck_assert_uint_eq (ftl->pm.limit, 1);
  ck_assert_uint_eq (ftl->pm.groups, 2);
  /* The disk's logical pages are whole erase blocks' worth. */
  uint64_t reg = ftl->logical_pages / TH_WRITERS;
  ck_assert_int_eq (ftl_start_background (ftl), 0);
  for (unsigned k = 0; k < TH_WRITERS; k++) {
    t[k] = (struct th_arg) { .ftl = ftl, .k = k, .rng = 77 + k,
                             .deadline = unit_now () + 2.0,
                             .reg = reg, .ver = model + k * reg };
    ck_assert_int_eq (pthread_create (&th[k], NULL, th_writer, &t[k]), 0);
  }
  for (unsigned k = 0; k < TH_WRITERS; k++)
    pthread_join (th[k], NULL);
  ftl_stop_background (ftl);
  for (unsigned k = 0; k < TH_WRITERS; k++) {
    ck_assert_msg (!t[k].err[0], "%s", t[k].err);
    ck_assert_uint_gt (t[k].ops, 1000);
  }
  printf ("paged threads: %" PRIu64 " misses, %" PRIu64 " evictions, %"
          PRIu64 " write-backs, %" PRIu64 " translation pages moved, %"
          PRIu64 " checkpoints, %" PRIu64 " pages copied by GC\n",
          pmap_ctr (ftl, PMAP_MISSES), pmap_ctr (ftl, PMAP_EVICTIONS),
          pmap_ctr (ftl, PMAP_WRITEBACKS), pmap_ctr (ftl, PMAP_MOVED),
          ctr_get (ftl, FTL_CTR_CKPTS), ctr_get (ftl, FTL_CTR_GC_COPIED));
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  verify_pages (ftl, model, reg * TH_WRITERS, "after the threads");
  ck_assert_int_eq (ftl_flush (ftl), 0);
  open_abandon (ftl);
  o.logical_bytes = 0;
  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  verify_pages (ftl, model, reg * TH_WRITERS, "after a kill");
  ck_assert_int_eq (ftl_close (ftl), 0);
  free (model);
}
END_TEST

/* The kill test's disk in one process per round, many rounds: a child
 * opens the image (recovering it), runs the four writers of
 * test_paged_threads with the write cache or without, sync=true or
 * false, and is killed with SIGKILL at a random moment once every
 * writer has had a flush acknowledged.  The writers keep their model in
 * shared memory: for each page, its value when the writer's last
 * acknowledged flush was sent (stable) and whether anything was sent
 * to it since.  The parent then opens the image: the self-check must
 * pass, and every page must read as its stable value, or, if something
 * was sent to it after that flush, as a newer version or as zeros
 * after a trim.  An older version is flushed data replaced by older
 * data.  FTL_PMAP_KILL_ROUNDS=N runs N rounds (24); with
 * FTL_PMAP_KILL_KEEP=FILE each image is copied to FILE after the kill,
 * and to FILE.pre before the child opens it, for a failure to keep.
 */
struct kill_page {
  uint64_t acked;               /* value acknowledged last (0: zeros) */
  uint64_t stable;              /* acked when the last flush was sent */
  uint64_t ops, stable_ops;     /* requests sent to it; at that flush */
  uint64_t trim_ops;            /* ops when the last trim was sent */
  uint64_t snap, snap_ops;      /* acked and ops as a flush is sent */
};

struct kill_shared {
  uint64_t flushes[TH_WRITERS]; /* acknowledged */
  /* A writer sets it while it copies snap into stable after its flush
   * was acknowledged; if it is killed meanwhile, the parent finishes.
   */
  uint64_t committing[TH_WRITERS];
  uint64_t n[TH_WRITERS];       /* versions given out */
  struct kill_page pg[TH_LP];
};

static void
kill_commit (struct kill_page *pg, uint64_t reg)
{
  for (uint64_t i = 0; i < reg; i++) {
    __atomic_store_n (&pg[i].stable_ops, pg[i].snap_ops, __ATOMIC_SEQ_CST);
    __atomic_store_n (&pg[i].stable, pg[i].snap, __ATOMIC_SEQ_CST);
  }
}

static void
kill_writer (struct ftl *ftl, struct kill_shared *sh, unsigned k,
             uint64_t reg, uint64_t rng)
{
  uint8_t *buf = malloc (8 * PS);
  uint64_t base = k * reg;

  for (;;) {
    uint64_t off = unit_rnd (&rng) % reg;
    uint64_t cnt = 1 + unit_rnd (&rng) % 8;
    uint64_t what = unit_rnd (&rng) % 100;
    struct kill_page *pg = &sh->pg[base];
    int r;

    cnt = MIN (cnt, reg - off);
    if (what < 80) {
      uint64_t v = ((uint64_t) (k + 1) << 40) | ++sh->n[k];
      for (uint64_t i = 0; i < cnt; i++) {
        unit_fill_page (buf + i * PS, PS, base + off + i, v);
        __atomic_add_fetch (&pg[off + i].ops, 1, __ATOMIC_SEQ_CST);
      }
      r = ftl_write (ftl, buf, cnt * PS, (base + off) * PS, 0);
      for (uint64_t i = 0; r == 0 && i < cnt; i++)
        __atomic_store_n (&pg[off + i].acked, v, __ATOMIC_SEQ_CST);
    }
    else if (what < 90) {
      for (uint64_t i = 0; i < cnt; i++) {
        uint64_t o = __atomic_add_fetch (&pg[off + i].ops, 1,
                                         __ATOMIC_SEQ_CST);
        __atomic_store_n (&pg[off + i].trim_ops, o, __ATOMIC_SEQ_CST);
      }
      r = ftl_trim (ftl, cnt * PS, (base + off) * PS, 0);
      for (uint64_t i = 0; r == 0 && i < cnt; i++)
        __atomic_store_n (&pg[off + i].acked, 0, __ATOMIC_SEQ_CST);
    }
    else {
      /* What the flush covers: what was acknowledged before it (this
       * thread is the pages' only writer: nothing is in flight).
       */
      for (uint64_t i = 0; i < reg; i++) {
        pg[i].snap_ops = pg[i].ops;
        pg[i].snap = pg[i].acked;
      }
      r = ftl_flush (ftl);
      if (r == 0) {
        __atomic_store_n (&sh->committing[k], 1, __ATOMIC_SEQ_CST);
        kill_commit (pg, reg);
        __atomic_store_n (&sh->committing[k], 0, __ATOMIC_SEQ_CST);
        __atomic_add_fetch (&sh->flushes[k], 1, __ATOMIC_SEQ_CST);
      }
    }
    if (r < 0) {
      fprintf (stderr, "kill writer %u: %s\n", k, strerror (-r));
      _exit (2);
    }
  }
}

struct kill_targ {
  struct ftl *ftl;
  struct kill_shared *sh;
  unsigned k;
  uint64_t reg, rng;
};

static void *
kill_thread (void *arg)
{
  struct kill_targ *t = arg;
  kill_writer (t->ftl, t->sh, t->k, t->reg, t->rng);
  return NULL;
}

static void
kill_child (struct ftl_options *o, struct kill_shared *sh, uint64_t seed)
{
  struct kill_targ t[TH_WRITERS];
  pthread_t th[TH_WRITERS];
  struct ftl *ftl;
  char err[256];

  if (ftl_open (o, &ftl, err, sizeof err) < 0) {
    fprintf (stderr, "child: ftl_open: %s\n", err);
    _exit (2);
  }
  if (ftl_start_background (ftl) < 0)
    _exit (2);
  for (unsigned k = 0; k < TH_WRITERS; k++) {
    t[k] = (struct kill_targ) { .ftl = ftl, .sh = sh, .k = k,
                                .reg = ftl->logical_pages / TH_WRITERS,
                                .rng = seed * 8 + k + 1 };
    if (pthread_create (&th[k], NULL, kill_thread, &t[k]) != 0)
      _exit (2);
  }
  for (;;)
    pause ();
}

START_TEST (test_paged_kill_threads)
{
  struct ftl_options o = two_groups (40);
  struct kill_shared *sh = mmap (NULL, sizeof *sh, PROT_READ | PROT_WRITE,
                                 MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  const char *env = getenv ("FTL_PMAP_KILL_ROUNDS");
  unsigned rounds = env ? atoi (env) : 24;
  uint64_t rng = 20261207, reg = 0;
  struct ftl *ftl;
  char err[256];

  o.wl_threshold = 4;
  o.streams = 4;

  ck_assert (sh != MAP_FAILED);
  memset (sh, 0, sizeof *sh);
  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  reg = ftl->logical_pages / TH_WRITERS;
  ck_assert_int_eq (ftl_close (ftl), 0);
  o.logical_bytes = 0;
  for (unsigned round = 0; round < rounds; round++) {
    o.write_cache_bytes = round % 4 < 2 ? 64 * PS : 0;
    o.no_sync = round % 2;
    uint64_t seed = unit_rnd (&rng);
    uint64_t before[TH_WRITERS];
    for (unsigned k = 0; k < TH_WRITERS; k++)
      before[k] = sh->flushes[k];
    if (getenv ("FTL_PMAP_KILL_KEEP")) {
      char pre[256];
      snprintf (pre, sizeof pre, "%s.pre", getenv ("FTL_PMAP_KILL_KEEP"));
      unit_copy_file (path, pre);
    }
    pid_t pid = fork ();
    ck_assert_int_ge (pid, 0);
    if (pid == 0)
      kill_child (&o, sh, seed);
    /* Every writer has had a flush acknowledged: then a moment in the
     * next 300 ms.
     */
    double t0 = unit_now ();
    for (unsigned k = 0; k < TH_WRITERS; k++)
      while (__atomic_load_n (&sh->flushes[k], __ATOMIC_SEQ_CST)
             == before[k]) {
        int st;
        ck_assert_msg (waitpid (pid, &st, WNOHANG) == 0, "round %u: the "
                       "child ended (status %d)", round, st);
        if (unit_now () - t0 >= 30) {
          kill (pid, SIGKILL);          /* no process outlives the test */
          waitpid (pid, NULL, 0);
          ck_abort_msg ("round %u: writer %u had no flush acknowledged in "
                        "30 s", round, k);
        }
        usleep (1000);
      }
    usleep (unit_rnd (&rng) % 300000);
    kill (pid, SIGKILL);
    ck_assert_int_eq (waitpid (pid, NULL, 0), pid);
    for (unsigned k = 0; k < TH_WRITERS; k++)
      if (sh->committing[k]) {
        kill_commit (&sh->pg[k * reg], reg);
        sh->committing[k] = 0;
      }
    if (getenv ("FTL_PMAP_KILL_KEEP"))
      unit_copy_file (path, getenv ("FTL_PMAP_KILL_KEEP"));

    ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0,
                   "round %u (write cache %s, %s): after the kill: %s",
                   round, o.write_cache_bytes ? "on" : "off",
                   o.no_sync ? "sync=false" : "sync=true", err);
    ck_assert_msg (selfcheck_run (ftl, "test") == 0, "round %u: the "
                   "self-check failed after the kill", round);
    unsigned wrong = 0;
    for (uint64_t l = 0; l < reg * TH_WRITERS; l++) {
      struct kill_page *pg = &sh->pg[l];
      uint8_t page[PS];
      uint64_t lpn = l, v = 0;
      ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
      bool ok = unit_page_identify (page, PS, &lpn, &v) >= 0 && lpn == l;
      bool after = pg->ops != pg->stable_ops;
      if (ok && v != pg->stable)
        ok = after && (v == 0 ? pg->trim_ops > pg->stable_ops
                       : v > pg->stable && (v >> 40) == (pg->stable >> 40
                                             ? pg->stable >> 40 : v >> 40));
      if (!ok && wrong++ < 5)
        fprintf (stderr, "round %u: page %" PRIu64 " reads as page %"
                 PRIu64 " version 0x%" PRIx64 "; flushed 0x%" PRIx64
                 ", %s since\n", round, l, lpn, v, pg->stable,
                 after ? "written" : "nothing sent");
      /* What it holds now is what the next round starts from. */
      pg->acked = pg->stable = v;
      pg->ops = pg->stable_ops = pg->trim_ops = 0;
    }
    ck_assert_msg (wrong == 0, "round %u (write cache %s, %s): %u pages "
                   "read wrong after the kill", round,
                   o.write_cache_bytes ? "on" : "off",
                   o.no_sync ? "sync=false" : "sync=true", wrong);
    ck_assert_int_eq (ftl_close (ftl), 0);
  }
  munmap (sh, sizeof *sh);
}
END_TEST

/* A checkpoint that finds no free block for its translation pages
 * collects garbage and tries again (host_ckpt): those relocations
 * change the map, so they hold ckpt_rw shared like every other change
 * (a self-check build asserts it in map.c); else a checkpoint of
 * another thread could copy a group while they move its entries and
 * then mark it clean, and the group, evicted, would come back without
 * them.  Single-threaded: a write, then a checkpoint, until the map's
 * frontier needs a block while the free pool is at the reserve.
 */
START_TEST (test_paged_ckpt_makes_room)
{
  struct ftl_options o = two_groups (12);
  uint64_t *model, rng = 5, version = 1, hits = 0;
  struct ftl *ftl;
  char err[256];
  uint8_t page[PS];

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  ck_assert (ftl->pm.on);
  model = calloc (ftl->logical_pages, sizeof *model);
  for (uint64_t i = 0; i < 20000 && hits < 5; i++) {
    uint64_t l = unit_rnd (&rng) % ftl->logical_pages;
    unit_fill_page (page, PS, l, version);
    ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
    model[l] = version++;
    uint64_t copied = ctr_get (ftl, FTL_CTR_GC_COPIED);
    ck_assert_int_eq (host_ckpt (ftl, false, false), 0);
    hits += ctr_get (ftl, FTL_CTR_GC_COPIED) > copied;
  }
  printf ("paged checkpoints that collected garbage first: %" PRIu64 "\n",
          hits);
  ck_assert_uint_ge (hits, 5);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  verify_pages (ftl, model, ftl->logical_pages, "after the checkpoints");
  ck_assert_int_eq (ftl_close (ftl), 0);
  free (model);
}
END_TEST

/* Every checkpoint takes a sequence number of its own, even when only
 * GC ran since the last one: its translation pages carry it as their
 * version, and recovery takes a page of a group at the version that a
 * directory names for a copy GC made of it.  Checkpoint A, then GC
 * moves pages (no new number), then checkpoint B, whose slot a crash
 * then tears: recovery falls back to A and rolls GC's copies forward.
 * Had B written its pages at A's number, recovery would take them for
 * A's, and A's valid counts would not describe that map.
 */
START_TEST (test_paged_ckpt_versions)
{
  struct ftl_options o = two_groups (25);
  uint64_t *model, rng = 11, version = 1, seq_a, seq_b, gen_b, off;
  struct ftl *ftl;
  char err[256];
  uint8_t page[PS];
  uint32_t victim = FTL_NO_BLOCK;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  model = calloc (ftl->logical_pages, sizeof *model);
  for (uint64_t i = 0; i < 2 * ftl->logical_pages; i++) {
    uint64_t l = unit_rnd (&rng) % ftl->logical_pages;
    unit_fill_page (page, PS, l, version);
    ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
    model[l] = version++;
  }
  ck_assert_int_eq (host_ckpt (ftl, false, false), 0);
  seq_a = ftl->durable_ckpt_seq;
  /* A block of data pages only, partly valid: GC moves its pages. */
  for (uint32_t b = 0; b < ftl->blocks && victim == FTL_NO_BLOCK; b++)
    if (ftl->state[b] == FTL_BLK_FULL && ftl->pm.tvalid[b] == 0 &&
        ftl->valid[b] > 0 && ftl->valid[b] < ftl->ppb)
      victim = b;
  ck_assert_uint_ne (victim, FTL_NO_BLOCK);
  uint64_t copied = ctr_get (ftl, FTL_CTR_GC_COPIED);
  ckpt_shared (ftl);
  ck_assert_int_eq (gc_reclaim_block (ftl, victim), 0);
  ckpt_release (ftl);
  ck_assert_uint_gt (ctr_get (ftl, FTL_CTR_GC_COPIED), copied);
  ck_assert_int_eq (host_ckpt (ftl, false, false), 0);
  seq_b = ftl->durable_ckpt_seq;
  gen_b = ftl->ckpt_gen;
  ck_assert_uint_gt (seq_b, seq_a);
  /* The crash tears B's slot (its header). */
  off = ftl->sb.ckpt_offset[ftl->ckpt_slot] + 8;
  open_abandon (ftl);
  unit_flip_byte (path, off, 0x10);

  o.logical_bytes = 0;
  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  /* It fell back to A: the checkpoint after recovery took B's
   * generation.
   */
  ck_assert (ftl->was_unclean);
  ck_assert_uint_eq (ftl->ckpt_gen, gen_b);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  verify_pages (ftl, model, ftl->logical_pages, "after falling back to A");
  ck_assert_int_eq (ftl_close (ftl), 0);
  free (model);
}
END_TEST

/* A checkpoint's directory and its block table describe one moment:
 * each translation page the directory names lies in the written part
 * of its block as the block table has it (ftlctl check reports a slot
 * that breaks this as an error).  The torture bench (seed 1010: a
 * paged map, gc-mode=deadline, power cuts) found a slot naming page 8
 * of an erase block that its block table had open with 8 pages
 * written: the directory was encoded after the checkpoint's programs,
 * from the map as it was then, and GC had moved a clean group's page
 * since the snapshot of the block table.  Here a thread of GC moves
 * group 0's page (clean: only group 1 is written) whenever its block
 * is full, and reclaims other blocks to fill its own, while checkpoints
 * run; every slot written must hold the rule.
 */
struct mover {
  struct ftl *ftl;
  bool stop;
  uint64_t moves;
  int err;                      /* a failed gc_reclaim_block, or 0 */
};

static void *
mover_thread (void *arg)
{
  struct mover *m = arg;
  struct ftl *ftl = m->ftl;
  uint32_t next = 0;

  while (!__atomic_load_n (&m->stop, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock (&ftl->pm.lock);
    uint32_t b0 = ~ftl->pm.dir[0] / ftl->ppb;
    pthread_mutex_unlock (&ftl->pm.lock);
    uint32_t b = b0;
    if (__atomic_load_n (&ftl->state[b0], __ATOMIC_RELAXED) != FTL_BLK_FULL)
      for (uint32_t i = 0; i < ftl->blocks; i++) {
        b = (next + i) % ftl->blocks;
        if (b != b0 && __atomic_load_n (&ftl->state[b], __ATOMIC_RELAXED)
            == FTL_BLK_FULL && __atomic_load_n (&ftl->valid[b],
                                                __ATOMIC_RELAXED) > 0)
          break;
      }
    next = b + 1;
    int r = gc_reclaim_block (ftl, b);
    /* Checked by the main thread: Check's assertions garble its pipe
     * when two threads pass them at once.
     */
    if (r != 0 && r != -EINVAL) {
      m->err = r;
      break;
    }
    m->moves += r == 0 && b == b0;
  }
  return NULL;
}

/* The slot written last, as ftlctl check reads it: false (and why in
 * msg) if a group's translation page lies past what its block table
 * says of its block.
 */
static bool
slot_one_moment (struct ftl *ftl, char *msg, size_t len)
{
  uint64_t base = ftl->sb.ckpt_offset[ftl->ckpt_slot] + FTL_CKPT_HDR_BYTES;
  bool ok = true;
  int fd = open (path, O_RDONLY);

  ck_assert_int_ge (fd, 0);
  for (uint64_t g = 0; g < ftl->pm.groups && ok; g++) {
    uint8_t dir[FTL_CKPT_DIR_BYTES], blk[FTL_CKPT_BLOCK_BYTES];
    struct ftl_ckpt_block cb;
    uint32_t ppn;
    uint64_t ver;
    ck_assert_int_eq (pread (fd, dir, sizeof dir,
                             base + g * FTL_CKPT_DIR_BYTES), sizeof dir);
    fmt_ckpt_dir_decode (dir, &ppn, &ver);
    if (ppn == FTL_UNMAPPED)
      continue;
    uint32_t b = ppn / ftl->ppb, pg = ppn % ftl->ppb;
    ck_assert_int_eq (pread (fd, blk, sizeof blk, base +
                             fmt_ckpt_pblock_offset (ftl->logical_pages, b)),
                      sizeof blk);
    fmt_ckpt_block_decode (blk, &cb);
    if (cb.state == FTL_BLK_FREE || cb.state == FTL_BLK_RETIRED ||
        pg >= cb.write_pointer) {
      snprintf (msg, len, "checkpoint %" PRIu64 " names page %u of erase "
                "block %u as group %" PRIu64 "'s translation page, and has "
                "that block in state %u with %u pages written",
                ftl->ckpt_gen, pg, b, g, cb.state, cb.write_pointer);
      ok = false;
    }
  }
  close (fd);
  return ok;
}

START_TEST (test_paged_ckpt_one_moment)
{
  struct ftl_options o = two_groups (100);
  struct ftl *ftl;
  struct mover m = { 0 };
  pthread_t th;
  char err[256], msg[256] = "";
  uint8_t page[PS];
  uint64_t version = 1, rng = 5, *model;
  unsigned n = 0;
  bool ok = true;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  model = calloc (ftl->logical_pages, sizeof *model);
  for (uint64_t g = 0; g < 2; g++) {
    model[g * FTL_TP_ENTRIES] = version;
    unit_fill_page (page, PS, g * FTL_TP_ENTRIES, version++);
    ck_assert_int_eq (ftl_write (ftl, page, PS, g * FTL_TP_ENTRIES * PS, 0),
                      0);
  }
  ck_assert_int_eq (host_ckpt (ftl, false, false), 0);
  m.ftl = ftl;
  ck_assert_int_eq (pthread_create (&th, NULL, mover_thread, &m), 0);
  double end = unit_now () + 2.0;
  while (ok && (n < 300 || (m.moves < 20 && unit_now () < end))) {
    uint64_t l = FTL_TP_ENTRIES + unit_rnd (&rng) % FTL_TP_ENTRIES;
    model[l] = version;
    unit_fill_page (page, PS, l, version++);
    ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
    ck_assert_int_eq (host_ckpt (ftl, false, false), 0);
    ok = slot_one_moment (ftl, msg, sizeof msg);
    n++;
  }
  __atomic_store_n (&m.stop, true, __ATOMIC_RELEASE);
  pthread_join (th, NULL);
  ck_assert_msg (m.err == 0, "gc_reclaim_block: %s", strerror (-m.err));
  printf ("one moment: %u checkpoints, group 0's page moved %" PRIu64
          " times\n", n, m.moves);
  ck_assert_msg (ok, "%s", msg);
  ck_assert_uint_gt (m.moves, 0);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  /* Killed after the last one: recovery from it finds every page. */
  ck_assert_int_eq (ftl_flush (ftl), 0);
  open_abandon (ftl);
  o.logical_bytes = 0;
  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  verify_pages (ftl, model, ftl->logical_pages, "after a kill");
  ck_assert_int_eq (ftl_close (ftl), 0);
  free (model);
}
END_TEST

/* The choice at creation: a cache below the whole map makes a paged
 * image; the default keeps a small disk's map whole; an image made
 * whole refuses a cache below its map; a paged one takes any.
 */
START_TEST (test_paged_choice)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = SIZE, .page_size = PS, .log = unit_log,
    .io = unit_nosync_io (),
  };
  struct ftl *ftl;
  char err[256];

  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
  ck_assert (!ftl->pm.on);
  ck_assert_int_eq (ftl_close (ftl), 0);
  o.map_cache_bytes = CACHE;
  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), -EINVAL);
  ck_assert_msg (strstr (err, "without a paged map") != NULL, "%s", err);
  unit_dir_clean ();

  ftl = open_paged (SIZE, CACHE, 0);
  ck_assert (ftl->pm.on);
  ck_assert_int_eq (ftl_close (ftl), 0);
  /* A paged image opened with a cache as large as its map. */
  ftl = open_paged (0, 100 * CACHE, 0);
  ck_assert (ftl->pm.on);
  ck_assert_uint_eq (ftl->pm.limit, GROUPS);
  ck_assert_int_eq (ftl_close (ftl), 0);
  ftl_default_map_cache (SIZE, PS);
  ck_assert_uint_eq (ftl_default_map_cache (SIZE, PS),
                     (uint64_t) GROUPS * PMAP_GROUP_BYTES);
  ck_assert_uint_eq (ftl_default_map_cache (UINT64_C (8) << 40, PS),
                     FTL_MAX_DEFAULT_MAP_CACHE);
}
END_TEST

/* A default cache shrinks to what memory allows, and says so; one that
 * map-cache= gives is refused if it does not fit, naming the memory.
 */
START_TEST (test_paged_fit)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = UINT64_C (2) << 40, .page_size = PS,
    .log = unit_log, .io = unit_nosync_io (),
    .memory_limit = UINT64_C (700) << 20,
  };
  struct ftl *ftl;
  char err[256];

  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
  ck_assert (ftl->pm.on);
  ck_assert_uint_lt (ftl->pm.limit * PMAP_GROUP_BYTES,
                     FTL_MAX_DEFAULT_MAP_CACHE);
  ck_assert_uint_ge (ftl->pm.limit, 16);
  ck_assert_int_eq (ftl_close (ftl), 0);
  o.logical_bytes = 0;
  o.map_cache_bytes = UINT64_C (1) << 30;
  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), -ENOMEM);
  ck_assert_msg (strstr (err, "with a map cache of 1 GiB needs") != NULL &&
                 strstr (err, "memory_limit allows 700 MiB") != NULL, "%s",
                 err);
}
END_TEST


/* An open after a kill replays more groups than the cache holds: each
 * is loaded, changed and stays dirty until the checkpoint after the
 * roll forward, so none can be evicted meanwhile.  The clock hand must
 * not sweep the whole map for every one of them (an 8 TiB disk has two
 * million groups; an open after 100,000 random writes took minutes):
 * what the hand passes is bounded by the groups replayed, not by the
 * disk's.  The session holds ckpt_lock while it writes, so that its
 * requests take no checkpoint (ckpt_maybe only tries the lock) and the
 * log since the last one holds every group written.
 */
#define RG_GROUPS  4096
#define RG_WRITTEN 64

START_TEST (test_paged_replay_bounded)
{
  uint64_t lp = (uint64_t) RG_GROUPS * FTL_TP_ENTRIES;
  struct ftl *ftl = open_paged (lp * PS, 2 * PMAP_GROUP_BYTES, 0);
  uint8_t page[PS];

  ck_assert_uint_eq (ftl->pm.groups, RG_GROUPS);
  ck_assert_uint_eq (ftl->pm.limit, 2);
  pthread_mutex_lock (&ftl->ckpt_lock);
  for (uint64_t k = 0; k < RG_WRITTEN; k++) {
    uint64_t l = k * (RG_GROUPS / RG_WRITTEN) * FTL_TP_ENTRIES + k;
    unit_fill_page (page, PS, l, k + 1);
    ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
  }
  ck_assert_int_eq (ftl_flush (ftl), 0);
  ck_assert_uint_ge (ftl->pm.dirty, RG_WRITTEN);
  pthread_mutex_unlock (&ftl->ckpt_lock);
  open_abandon (ftl);

  ftl = open_paged (0, 2 * PMAP_GROUP_BYTES, 0);
  ck_assert (ftl->was_unclean);
  ck_assert_uint_ge (pmap_ctr (ftl, PMAP_MISSES), RG_WRITTEN);
  ck_assert_msg (ftl->pm.swept <= 4 * RG_WRITTEN,
                 "the open after a kill replayed %d groups and the clock "
                 "hand passed %" PRIu64 " groups of %d", RG_WRITTEN,
                 ftl->pm.swept, RG_GROUPS);
  for (uint64_t k = 0; k < RG_WRITTEN; k++) {
    uint64_t l = k * (RG_GROUPS / RG_WRITTEN) * FTL_TP_ENTRIES + k;
    uint64_t lpn = l, v = 0;
    ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
    ck_assert (unit_page_identify (page, PS, &lpn, &v) >= 0);
    ck_assert (lpn == l && v == k + 1);
  }
  ck_assert_int_eq (selfcheck_run (ftl, "test"), 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST
/* In the timing model a map miss costs a NAND read: QD1 reads spread
 * over more groups than the cache holds take one read more each than
 * reads within one group (a DRAM-less drive's random reads beyond what
 * its host memory buffer covers).
 */
/* The reads' time in the model so far, in seconds: the sum of their
 * latencies less the host stall (what the machine added after their
 * modeled ends; only reads run while it is read).
 */
static double
modeled_read_s (struct ftl *ftl)
{
  struct ftl_stats st;

  ftl_get_stats (ftl, &st);
  return ((double) st.latency[FTL_OP_READ].sum_ns
          - (double) st.host_stall.sum_ns) / 1e9;
}

START_TEST (test_paged_miss_timing)
{
  const uint64_t read_ns = 2000000;
  struct ftl_options o = {
    .path = path, .logical_bytes = SIZE, .page_size = PS,
    .pages_per_block = 64, .log = unit_log, .io = unit_nosync_io (),
    .map_cache_bytes = 4 * PMAP_GROUP_BYTES,
    /* No background thread: nothing of its own (a checkpoint's
     * programs) may keep a die busy under the reads.
     */
    .manual_background = true,
    /* Dies enough that the translation page and the data page are
     * apt to be on different ones: the data page still waits for it.
     */
    .timing = {
      .enabled = true, .channels = 4, .dies = 2, .planes = 1,
      .read_ns = read_ns,
    },
  };
  struct ftl *ftl;
  char err[256];
  uint8_t page[PS];

  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
  for (uint64_t g = 0; g < GROUPS; g++) {
    unit_fill_page (page, PS, g * FTL_TP_ENTRIES, 1);
    ck_assert_int_eq (ftl_write (ftl, page, PS, g * FTL_TP_ENTRIES * PS, 0),
                      0);
  }
  for (uint64_t l = 1; l < 8; l++) {
    unit_fill_page (page, PS, l, 1);
    ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
  }
  ck_assert_int_eq (ckpt_write (ftl, false), 0);

  /* Within group 0: hits.  The reads' time is the model's (their
   * latencies less their host stall), not the wall clock's, which a
   * busy machine stretches.
   */
  double t = modeled_read_s (ftl);
  for (int r = 0; r < 3; r++)
    for (uint64_t l = 0; l < 8; l++)
      ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
  double hit = (modeled_read_s (ftl) - t) / 24;
  /* One page of each group in turn: every read misses. */
  uint64_t misses = pmap_ctr (ftl, PMAP_MISSES);
  t = modeled_read_s (ftl);
  for (int r = 0; r < 2; r++)
    for (uint64_t g = 0; g < GROUPS; g++)
      ck_assert_int_eq (ftl_read (ftl, page, PS, g * FTL_TP_ENTRIES * PS),
                        0);
  double miss = (modeled_read_s (ftl) - t) / (2 * GROUPS);
  ck_assert_uint_ge (pmap_ctr (ftl, PMAP_MISSES) - misses, 2 * GROUPS - 4);
  fprintf (stderr, "QD1 read: %.2f ms within the cache, %.2f ms on a miss "
           "(a NAND read is %.2f ms)\n", hit * 1e3, miss * 1e3,
           read_ns / 1e6);
  /* The upper bound is looser than one read: the host's own work
   * before a modeled end (the translation page's pread, the group's
   * memory) is in the latency but not in the host stall.
   */
  ck_assert_msg (miss - hit >= 0.7 * read_ns / 1e9 &&
                 miss - hit <= 2.5 * read_ns / 1e9,
                 "a miss costs %.2f ms more, not about one read (%.2f ms)",
                 (miss - hit) * 1e3, read_ns / 1e6);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* A version 5 image (no paged map: its superblocks and checkpoints say
 * version 5) opens as it is, read-only stays so, and the first
 * read-write open makes it version 6 with its data intact.
 */
START_TEST (test_upgrade_from_v5)
{
  struct ftl *ftl = open_paged (16 * FTL_TP_ENTRIES * (uint64_t) PS / 8, 0,
                                50);
  uint8_t page[PS], buf[FTL_SB_SLOT], hb[FTL_CKPT_HDR_BYTES];
  struct ftl_superblock sb;
  struct ftl_ckpt_header h;
  int fd;

  ck_assert (!ftl->pm.on);
  for (uint64_t l = 0; l < 64; l++) {
    unit_fill_page (page, PS, l * 3, 5);
    ck_assert_int_eq (ftl_write (ftl, page, PS, l * 3 * PS, 0), 0);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_seed_by_ppn (path);      /* as version 5 seeded its checksums */

  /* Both superblock copies and both checkpoint headers say 5. */
  fd = open (path, O_RDWR);
  ck_assert_int_ge (fd, 0);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq (pread (fd, buf, sizeof buf, i * FTL_SB_SLOT),
                      (ssize_t) sizeof buf);
    ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &sb, NULL, 0),
                      FTL_FMT_OK);
    sb.version = 5;
    memset (buf, 0, sizeof buf);
    fmt_sb_encode (&sb, buf);
    ck_assert_int_eq (pwrite (fd, buf, sizeof buf, i * FTL_SB_SLOT),
                      (ssize_t) sizeof buf);
  }
  for (int s = 0; s < 2; s++) {
    ck_assert_int_eq (pread (fd, hb, sizeof hb, sb.ckpt_offset[s]),
                      (ssize_t) sizeof hb);
    if (fmt_ckpt_header_decode (hb, sizeof hb, &h) != FTL_FMT_OK)
      continue;
    h.version = 5;
    fmt_ckpt_header_encode (&h, hb);
    ck_assert_int_eq (pwrite (fd, hb, sizeof hb, sb.ckpt_offset[s]),
                      (ssize_t) sizeof hb);
  }
  close (fd);

  struct ftl_options o = {
    .path = path, .log = unit_log, .io = unit_nosync_io (),
    .readonly = true,
  };
  char err[256];
  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
  ck_assert_uint_eq (ftl->sb.version, 5);
  ck_assert_int_eq (ftl_close (ftl), 0);
  o.readonly = false;
  ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
  ck_assert_uint_eq (ftl->sb.version, FTL_FORMAT_VERSION);
  /* It keeps its PPN seeds (format.h, version 7). */
  ck_assert (!(ftl->sb.flags & FTL_SB_LPN_SEED));
  ck_assert_uint_eq (ftl->seed_flags, 0);
  for (uint64_t l = 0; l < 64; l++) {
    uint64_t lpn = l * 3, v = 0;
    ck_assert_int_eq (ftl_read (ftl, page, PS, l * 3 * PS), 0);
    ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &v), 1);
    ck_assert_uint_eq (lpn, l * 3);
    ck_assert_uint_eq (v, 5);
  }
  /* Garbage collection over its PPN-seeded pages: every copy hashed
   * for its new place, read back intact, after a reopen too.
   */
  struct ftl_stats st;
  uint64_t lpages = ftl->logical_pages, rng = 11;
  for (uint64_t l = 0; l < lpages; l++)
    if (l % 3 != 0 || l / 3 >= 64) {
      unit_fill_page (page, PS, l, 8);
      ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
    }
  for (uint64_t i = 0; i < 2 * lpages; i++) {
    uint64_t l = unit_rnd (&rng) % lpages;
    if (l % 3 != 0 || l / 3 >= 64) {
      unit_fill_page (page, PS, l, 8);
      ck_assert_int_eq (ftl_write (ftl, page, PS, l * PS, 0), 0);
    }
  }
  ftl_get_stats (ftl, &st);
  ck_assert_uint_gt (st.gc_copied_pages, 0);
  for (int pass = 0; pass < 2; pass++) {
    for (uint64_t l = 0; l < lpages; l++) {
      uint64_t lpn = l, v = 0;
      ck_assert_int_eq (ftl_read (ftl, page, PS, l * PS), 0);
      ck_assert_int_eq (unit_page_identify (page, PS, &lpn, &v), 1);
      ck_assert_uint_eq (lpn, l);
      ck_assert_uint_eq (v, l % 3 == 0 && l / 3 < 64 ? 5 : 8);
    }
    ck_assert_int_eq (ftl_close (ftl), 0);
    if (pass == 0)
      ck_assert_int_eq (ftl_open (&o, &ftl, err, sizeof err), 0);
  }
}
END_TEST

static Suite *
suite (void)
{
  Suite *s = suite_create ("pmap");
  TCase *tc = tcase_create ("paged map");
  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_paged_roundtrip);
  tcase_add_test (tc, test_paged_kills);
  tcase_add_test (tc, test_paged_ckpt_makes_room);
  tcase_add_test (tc, test_paged_ckpt_versions);
  tcase_add_test (tc, test_paged_threads);
  tcase_add_test (tc, test_paged_kill_threads);
  tcase_add_test (tc, test_paged_choice);
  tcase_add_test (tc, test_paged_fit);
  tcase_add_test (tc, test_paged_miss_timing);
  tcase_add_test (tc, test_paged_replay_bounded);
  tcase_add_test (tc, test_upgrade_from_v5);
  tcase_add_test (tc, test_paged_ckpt_one_moment);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr;
  int failed;

  sr = srunner_create (suite ());
  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
