/* nbdkit-ftl: unit tests of recovery.c and ckpt.c: what survives a
 * crash.  What a damaged image does is in test-recovery-damage.c.
 *
 * A killed process is simulated two ways.  open_abandon frees the handle
 * without writing anything (kill -9 between two calls).  For a crash in
 * the middle of a write, the workload runs in a forked child whose I/O
 * hooks tear one chosen write (only a prefix of the buffer reaches the
 * file) and then either end the process on the spot or, as a process
 * whose storage is gone would see it, fail every later write and sync
 * with -EIO.  The parent then recovers the image with the default I/O.
 *
 * The expected content after a crash is kept per page: the version at
 * the last flush that returned, plus every version written (or zeros,
 * for trims) after it, including by the request that was in progress.
 * A page must read as one of those, page by page, and never as another
 * page's data or as garbage.  One of the kill tests runs on an image
 * of three namespaces, every write and read through them: a page reads
 * back in its own namespace only.
 *
 * The torn writes: make check tears every 14th write of the workload,
 * the process-ends form from the first, the -EIO form from the 8th, so
 * that together they tear every 7th; make check-long (FTL_CHECK_LONG=1)
 * tears every 7th in both.
 */

#include <config.h>

#include <sys/stat.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"
#include "inspect.h"

static char path[256];

static void
setup (void)
{
  unit_dir_clean ();
  unit_path (path, sizeof path, "recovery.img");
}

/* ---- per-page history ---- */

struct hist {
  uint64_t lpages;
  uint64_t *durable;            /* version at the last flush; 0 = zeros */
  uint64_t *last;               /* latest version written */
  uint64_t **later;             /* versions written since the flush */
  size_t *nlater, *caplater;
};

static void
hist_init (struct hist *h, uint64_t lpages)
{
  h->lpages = lpages;
  h->durable = calloc (lpages, sizeof *h->durable);
  h->last = calloc (lpages, sizeof *h->last);
  h->later = calloc (lpages, sizeof *h->later);
  h->nlater = calloc (lpages, sizeof *h->nlater);
  h->caplater = calloc (lpages, sizeof *h->caplater);
}

static void
hist_free (struct hist *h)
{
  for (uint64_t l = 0; l < h->lpages; l++)
    free (h->later[l]);
  free (h->durable);
  free (h->last);
  free (h->later);
  free (h->nlater);
  free (h->caplater);
}

/* Version 0 records a trim (the page reads as zeros). */
static void
hist_write (struct hist *h, uint64_t lpn, uint64_t version)
{
  if (h->nlater[lpn] == h->caplater[lpn]) {
    h->caplater[lpn] = h->caplater[lpn] ? 2 * h->caplater[lpn] : 4;
    h->later[lpn] = realloc (h->later[lpn],
                             h->caplater[lpn] * sizeof *h->later[lpn]);
  }
  h->later[lpn][h->nlater[lpn]++] = version;
  h->last[lpn] = version;
}

static void
hist_flush (struct hist *h)
{
  for (uint64_t l = 0; l < h->lpages; l++) {
    h->durable[l] = h->last[l];
    h->nlater[l] = 0;
  }
}

static bool
hist_allows (const struct hist *h, uint64_t lpn, uint64_t version)
{
  if (version == h->durable[lpn])
    return true;
  for (size_t i = 0; i < h->nlater[lpn]; i++)
    if (h->later[lpn][i] == version)
      return true;
  return false;
}

/* Read every page and check it against the history; returns the number
 * of pages checked.  what names the situation in failure messages.
 */
static uint64_t
hist_verify (struct ftl *ftl, const struct hist *h, uint32_t ps,
             uint64_t *versions, const char *what)
{
  uint8_t *page = malloc (ps);

  for (uint64_t l = 0; l < h->lpages; l++) {
    uint64_t lpn = l, v = 0;
    int e = ftl_read (ftl, page, ps, l * ps);
    ck_assert_msg (e == 0, "%s: reading page %" PRIu64 ": %s", what, l,
                   strerror (-e));
    int k = unit_page_identify (page, ps, &lpn, &v);
    ck_assert_msg (k >= 0, "%s: page %" PRIu64 " holds garbage (a torn or "
                   "mixed page)", what, l);
    ck_assert_msg (lpn == l, "%s: page %" PRIu64 " holds the data of page %"
                   PRIu64 " (version %" PRIu64 ")", what, l, lpn, v);
    if (!hist_allows (h, l, v)) {
      char allowed[256];
      int n = snprintf (allowed, sizeof allowed, "%" PRIu64,
                        h->durable[l]);
      for (size_t i = 0; i < h->nlater[l] && n < 200; i++)
        n += snprintf (allowed + n, sizeof allowed - n, ", %" PRIu64,
                       h->later[l][i]);
      ck_abort_msg ("%s: page %" PRIu64 " has version %" PRIu64 "; allowed: "
                    "%s (0 = zeros)", what, l, v, allowed);
    }
    if (versions)
      versions[l] = v;
  }
  free (page);
  return h->lpages;
}

/* ---- a small random workload ---- */

enum op_kind { OP_WRITE, OP_TRIM, OP_FLUSH };

struct op {
  enum op_kind kind;
  uint32_t lpn, n;
  uint64_t version;             /* pages written by op i get i + 1 */
};

static struct op *
make_ops (size_t nops, uint64_t lpages, uint64_t seed)
{
  struct op *ops = calloc (nops, sizeof *ops);
  uint64_t rng = seed;

  for (size_t i = 0; i < nops; i++) {
    uint64_t k = unit_rnd (&rng) % 100;
    ops[i].lpn = unit_rnd (&rng) % lpages;
    ops[i].n = 1 + unit_rnd (&rng) % 3;
    if (ops[i].lpn + ops[i].n > lpages)
      ops[i].n = lpages - ops[i].lpn;
    ops[i].version = i + 1;
    ops[i].kind = k < 75 ? OP_WRITE : k < 85 ? OP_TRIM : OP_FLUSH;
  }
  return ops;
}

static int
do_op (struct ftl *ftl, const struct op *o, uint32_t ps)
{
  switch (o->kind) {
  case OP_WRITE: {
    uint8_t *buf = malloc ((size_t) o->n * ps);
    for (uint32_t k = 0; k < o->n; k++)
      unit_fill_page (buf + (size_t) k * ps, ps, o->lpn + k, o->version);
    int r = ftl_write (ftl, buf, (uint64_t) o->n * ps,
                       (uint64_t) o->lpn * ps, 0);
    free (buf);
    return r;
  }
  case OP_TRIM:
    return ftl_trim (ftl, (uint64_t) o->n * ps, (uint64_t) o->lpn * ps, 0);
  case OP_FLUSH:
    return ftl_flush (ftl);
  }
  abort ();
}

/* Apply an op to the history; a flush only if it returned. */
static void
hist_apply (struct hist *h, const struct op *o, bool completed)
{
  switch (o->kind) {
  case OP_WRITE:
    for (uint32_t k = 0; k < o->n; k++)
      hist_write (h, o->lpn + k, o->version);
    break;
  case OP_TRIM:
    for (uint32_t k = 0; k < o->n; k++)
      hist_write (h, o->lpn + k, 0);
    break;
  case OP_FLUSH:
    if (completed)
      hist_flush (h);
    break;
  }
}

/* ---- (a) flush, then kill ---- */

/* 64 pages of 4 KiB, 8 per block, 20 blocks. */
#define PS4     4096
#define LP4     64
#define SIZE4   ((uint64_t) LP4 * PS4)

/* Everything written before a flush is there after the process is
 * killed and the image reopened, and so is a write made with FUA after
 * the flush; writes after the flush without FUA read as old or new.
 * Several rounds, with garbage collection and checkpoints in between.
 */
START_TEST (test_flush_then_kill)
{
  struct ftl *ftl = unit_open (path, SIZE4, PS4, 8, 150, 0,
                               unit_nosync_io ());
  struct hist h;
  uint64_t version = 1, rng = 11;
  uint8_t page[PS4];

  hist_init (&h, LP4);
  for (int round = 0; round < 8; round++) {
    for (int i = 0; i < 150; i++) {
      uint64_t l = unit_rnd (&rng) % LP4;
      unit_fill_page (page, PS4, l, version);
      ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
      hist_write (&h, l, version++);
    }
    ck_assert_int_eq (ftl_flush (ftl), 0);
    hist_flush (&h);
    if (round % 2 == 1) {
      /* Unflushed writes, then one with FUA. */
      for (int i = 0; i < 10; i++) {
        uint64_t l = unit_rnd (&rng) % LP4;
        unit_fill_page (page, PS4, l, version);
        ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
        hist_write (&h, l, version++);
      }
      uint64_t l = unit_rnd (&rng) % LP4;
      unit_fill_page (page, PS4, l, version);
      ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, FTL_FUA), 0);
      h.durable[l] = h.last[l] = version++;
      h.nlater[l] = 0;
    }
    open_abandon (ftl);
    ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
    hist_verify (ftl, &h, PS4, NULL, "after kill");
  }
  ck_assert_uint_gt (ctr_get (ftl, FTL_CTR_GC_RUNS), 10);
  ck_assert_int_eq (ftl_close (ftl), 0);
  hist_free (&h);
}
END_TEST

/* The same on an image of three namespaces (16, 24 and 24 pages): each
 * write goes to the namespace of its page, at its offset there, and
 * after each kill every page is read back through its namespace: it
 * holds its own data (the pattern names the page of the logical space
 * it was written to), never another namespace's.
 */
static const struct ftl_ns_spec three_ns[] = {
  { "a", 16 * PS4 }, { "bb", 24 * PS4 }, { "c", 24 * PS4 },
};

/* Logical page l: its namespace and its offset there. */
static struct ftl_ns *
ns_of (struct ftl *ftl, uint64_t l, uint64_t *off)
{
  struct ftl_ns_info in;
  struct ftl_ns *ns;

  ck_assert_uint_eq (ftl_ns_count (ftl), 3);
  for (unsigned i = 0; (ns = ftl_ns_at (ftl, i)) != NULL; i++) {
    ftl_ns_get_info (ns, &in);
    ck_assert_str_eq (in.name, three_ns[i].name);
    if (l * PS4 >= in.base && l * PS4 < in.base + in.bytes) {
      *off = l * PS4 - in.base;
      return ns;
    }
  }
  ck_abort_msg ("no namespace holds page %" PRIu64, l);
  return NULL;
}

START_TEST (test_flush_then_kill_ns)
{
  struct ftl_options o = {
    .path = path, .page_size = PS4, .pages_per_block = 8,
    .op_percent = 150, .namespaces = three_ns, .nnamespaces = 3,
    .log = unit_log, .io = unit_nosync_io (),
  };
  struct ftl *ftl;
  struct hist h;
  uint64_t version = 1, rng = 12, off, written[3] = { 0 };
  uint8_t page[PS4];
  char err[256];

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  hist_init (&h, LP4);
  for (int round = 0; round < 6; round++) {
    for (int i = 0; i < 150; i++) {
      uint64_t l = unit_rnd (&rng) % LP4;
      struct ftl_ns *ns = ns_of (ftl, l, &off);
      unit_fill_page (page, PS4, l, version);
      ck_assert_int_eq (ftl_ns_write (ns, page, PS4, off, 0), 0);
      hist_write (&h, l, version++);
      written[ns == ftl_ns_at (ftl, 0) ? 0 : ns == ftl_ns_at (ftl, 1)
              ? 1 : 2]++;
      if (i == 100) {
        ck_assert_int_eq (ftl_flush (ftl), 0);
        hist_flush (&h);
      }
    }
    open_abandon (ftl);
    o.namespaces = NULL;
    o.nnamespaces = 0;
    ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
    for (uint64_t l = 0; l < LP4; l++) {
      uint64_t lpn = l, v = 0;
      struct ftl_ns *ns = ns_of (ftl, l, &off);
      ck_assert_int_eq (ftl_ns_read (ns, page, PS4, off), 0);
      ck_assert_msg (unit_page_identify (page, PS4, &lpn, &v) >= 0 &&
                     lpn == l && hist_allows (&h, l, v), "round %d: page %"
                     PRIu64 " reads page %" PRIu64 " version %" PRIu64,
                     round, l, lpn, v);
      h.durable[l] = h.last[l] = v;       /* what the reopen found */
      h.nlater[l] = 0;
    }
  }
  for (int i = 0; i < 3; i++)
    ck_assert_uint_gt (written[i], 100);
  ck_assert_int_eq (ftl_close (ftl), 0);
  hist_free (&h);
}
END_TEST

/* ---- (b) trims and kills ---- */

static void
write_all (struct ftl *ftl, struct hist *h, uint64_t version)
{
  uint8_t page[PS4];
  for (uint64_t l = 0; l < LP4; l++) {
    unit_fill_page (page, PS4, l, version);
    ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
    hist_write (h, l, version);
  }
}

/* A trim (and a zero) followed by a flush is durable: after a kill the
 * range reads as zeros and the rest is intact.
 */
START_TEST (test_trim_flush_kill)
{
  struct ftl *ftl = unit_open (path, SIZE4, PS4, 8, 150, 0,
                               unit_nosync_io ());
  struct hist h;
  uint8_t page[PS4];

  hist_init (&h, LP4);
  write_all (ftl, &h, 1);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  /* Pages 10..29, and 40..47 through zero. */
  ck_assert_int_eq (ftl_trim (ftl, 20 * PS4, 10 * PS4, 0), 0);
  ck_assert_int_eq (ftl_zero (ftl, 8 * PS4, 40 * PS4, FTL_MAY_TRIM), 0);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  for (uint64_t l = 10; l < 30; l++) hist_write (&h, l, 0);
  for (uint64_t l = 40; l < 48; l++) hist_write (&h, l, 0);
  hist_flush (&h);
  open_abandon (ftl);

  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  hist_verify (ftl, &h, PS4, NULL, "trim, flush, kill");
  ck_assert_uint_eq (ftl->mapped, LP4 - 28);
  for (uint64_t l = 10; l < 30; l++)
    ck_assert_uint_eq (l2p_load (ftl, l), FTL_UNMAPPED);

  /* Rewrite some trimmed pages, trim again with FUA, kill. */
  unit_fill_page (page, PS4, 12, 2);
  ck_assert_int_eq (ftl_write (ftl, page, PS4, 12 * PS4, 0), 0);
  ck_assert_int_eq (ftl_trim (ftl, 4 * PS4, 0, FTL_FUA), 0);
  hist_write (&h, 12, 2);
  for (uint64_t l = 0; l < 4; l++) hist_write (&h, l, 0);
  hist_flush (&h);
  open_abandon (ftl);
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  hist_verify (ftl, &h, PS4, NULL, "trim with FUA, kill");
  ck_assert_int_eq (ftl_close (ftl), 0);
  hist_free (&h);
}
END_TEST

/* A large disk that holds little data: checkpoints leave the unmapped
 * part of the map as holes (format version 5), the image stays small,
 * and a page trimmed from a piece of the map that a slot once wrote
 * stays trimmed through clean closes and a kill, whichever slot is
 * read.
 */
#define LPS     (UINT64_C (1) << 20)      /* 4 GiB of 4 KiB pages */

static void
sparse_check (struct ftl *ftl, const uint64_t *lpn, const bool *mapped,
              int n, const char *when)
{
  uint8_t page[PS4];
  uint64_t l, v;

  for (int i = 0; i < n; i++) {
    ck_assert_int_eq (ftl_read (ftl, page, PS4, lpn[i] * PS4), 0);
    if (mapped[i]) {
      ck_assert_msg (unit_page_identify (page, PS4, &l, &v) == 1 &&
                     l == lpn[i], "%s: page %" PRIu64 " lost", when, lpn[i]);
    }
    else {
      for (size_t k = 0; k < PS4; k++)
        ck_assert_msg (page[k] == 0, "%s: trimmed page %" PRIu64
                       " came back", when, lpn[i]);
    }
  }
}

START_TEST (test_sparse_checkpoints)
{
  /* One page in the first piece of the map, one in the middle, one in
   * the last (FTL_CKPT_CHUNK bytes each).
   */
  const uint64_t lpn[] = { 100, LPS / 2 + 7, LPS - 3 };
  bool mapped[] = { true, true, true };
  uint8_t page[PS4];
  struct stat st;
  struct ftl *ftl = unit_open (path, LPS * PS4, PS4, 64, 28, 0,
                               unit_nosync_io ());

  for (int i = 0; i < 3; i++) {
    unit_fill_page (page, PS4, lpn[i], 1);
    ck_assert_int_eq (ftl_write (ftl, page, PS4, lpn[i] * PS4, 0), 0);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
  /* Two checkpoints' maps would be 8 MiB of the file. */
  ck_assert_int_eq (stat (path, &st), 0);
  ck_assert_msg ((uint64_t) st.st_blocks * 512 < 3 * (UINT64_C (1) << 20),
                 "the image holds %" PRIu64 " bytes",
                 (uint64_t) st.st_blocks * 512);

  /* Every open writes a checkpoint to the other slot: both have held
   * the middle page when it is trimmed.
   */
  for (int round = 0; round < 3; round++) {
    ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
    sparse_check (ftl, lpn, mapped, 3, "reopened");
    ck_assert_int_eq (ftl_close (ftl), 0);
  }
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  ck_assert_int_eq (ftl_trim (ftl, PS4, lpn[1] * PS4, 0), 0);
  mapped[1] = false;
  ck_assert_int_eq (ftl_close (ftl), 0);
  for (int round = 0; round < 3; round++) {
    ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
    sparse_check (ftl, lpn, mapped, 3, "trimmed, closed, reopened");
    ck_assert_int_eq (ftl_close (ftl), 0);
  }
  /* The same through a kill after a flush. */
  ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
  ck_assert_int_eq (ftl_trim (ftl, PS4, lpn[2] * PS4, 0), 0);
  ck_assert_int_eq (ftl_flush (ftl), 0);
  mapped[2] = false;
  open_abandon (ftl);
  for (int round = 0; round < 3; round++) {
    ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
    sparse_check (ftl, lpn, mapped, 3, "trimmed, flushed, killed");
    ck_assert_int_eq (ftl_close (ftl), 0);
  }
}
END_TEST

/* Where a full disk's page checks would not fit in memory beside the
 * map, only the groups of the map that got them first keep them
 * (map_memory_check, map_grant_checks); nothing is stored in the
 * others' part of check[], their reads verify the OOB entry, and
 * everything reads back, before and after a reopen.
 */
START_TEST (test_checks_budget)
{
  const uint64_t group = UINT64_C (1) << FTL_MAP_GROUP_SHIFT;
  struct ftl_options o = {
    .path = path, .logical_bytes = 16 * group * PS4, .page_size = PS4,
    .pages_per_block = 64, .op_percent = 28, .log = unit_log,
    .io = unit_nosync_io (),
  };
  struct ftl_geometry g;
  struct ftl_image_info ii;
  struct ftl *ftl;
  char err[256];
  uint8_t page[PS4];
  uint64_t l, v;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  ck_assert (ftl->checks_all);
  ftl_get_geometry (ftl, &g);
  ftl_inspect_image (ftl, &ii);
  ck_assert_int_eq (ftl_close (ftl), 0);
  /* What map_memory_check counts for the map, and two groups more. */
  o.memory_limit = g.logical_pages * 4 + (uint64_t) g.blocks * 64
    + ii.sb.ckpt_bytes + 2 * 4 * group;

  for (int round = 0; round < 2; round++) {
    ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
    ck_assert (!ftl->checks_all);
    if (round == 0)
      for (uint64_t k = 0; k < 6; k++) {
        unit_fill_page (page, PS4, k * group + 3, 1);
        ck_assert_int_eq (ftl_write (ftl, page, PS4,
                                     (k * group + 3) * PS4, 0), 0);
      }
    for (uint64_t k = 0; k < 6; k++) {
      uint64_t lpn = k * group + 3;
      ck_assert_int_eq (ftl_read (ftl, page, PS4, lpn * PS4), 0);
      ck_assert_int_eq (unit_page_identify (page, PS4, &l, &v), 1);
      ck_assert_uint_eq (l, lpn);
      /* The first two groups written (or recovered) keep checks. */
      /* A check is never 0 once stored (map_check_fold): 0 in every
       * entry of the others' part of check[] is that nothing was
       * stored there, so none of its memory was taken.
       */
      for (uint64_t i = k * group; i < (k + 1) * group; i++)
        ck_assert_msg ((check_load (ftl, i) != 0) == (k < 2 && i == lpn),
                       "round %d: logical page %" PRIu64 " has check %u",
                       round, i, check_load (ftl, i));
    }
    ck_assert_int_eq (ftl_close (ftl), 0);
  }
}
END_TEST

/* Trims not followed by a flush, mixed with writes of other pages (so
 * that GC and checkpoints run), then a kill: each trimmed page reads as
 * its old data or as zeros, never anything else; many rounds.
 */
START_TEST (test_trim_no_flush_kill)
{
  struct ftl *ftl = unit_open (path, SIZE4, PS4, 8, 150, 0,
                               unit_nosync_io ());
  struct hist h;
  uint64_t rng = 5, version = 1;
  uint8_t page[PS4];
  unsigned zeros = 0, olds = 0;

  hist_init (&h, LP4);
  for (int round = 0; round < 40; round++) {
    write_all (ftl, &h, version++);
    ck_assert_int_eq (ftl_flush (ftl), 0);
    hist_flush (&h);
    unsigned nops = unit_rnd (&rng) % 60;
    for (unsigned i = 0; i < nops; i++) {
      uint64_t l = unit_rnd (&rng) % LP4, n = 1 + unit_rnd (&rng) % 6;
      if (l + n > LP4) n = LP4 - l;
      if (unit_rnd (&rng) % 3 == 0) {
        ck_assert_int_eq (ftl_trim (ftl, n * PS4, l * PS4, 0), 0);
        for (uint64_t k = 0; k < n; k++) hist_write (&h, l + k, 0);
      }
      else {
        unit_fill_page (page, PS4, l, version);
        ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
        hist_write (&h, l, version++);
      }
    }
    open_abandon (ftl);
    ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
    uint64_t got[LP4];
    hist_verify (ftl, &h, PS4, got, "trim without flush, kill");
    for (uint64_t l = 0; l < LP4; l++)
      if (h.nlater[l] > 0 && h.last[l] == 0)
        got[l] == 0 ? zeros++ : olds++;
  }
  printf ("trim without flush: trimmed pages after a kill: %u read as zeros, "
          "%u as their old data\n", zeros, olds);
  ck_assert_uint_gt (zeros + olds, 100);
  ck_assert_int_eq (ftl_close (ftl), 0);
  hist_free (&h);
}
END_TEST

/* ---- (c) erase counts ---- */

/* Erase counts never go backwards, across kills (at any point of a
 * workload with GC) and across clean restarts.
 */
START_TEST (test_erase_counts_monotonic)
{
  struct ftl *ftl = unit_open (path, SIZE4, PS4, 8, 150, 0,
                               unit_nosync_io ());
  uint32_t before[64];
  uint64_t rng = 77, version = 1;
  uint8_t page[PS4];
  uint32_t blocks = ftl->blocks;
  uint64_t total = 0;

  ck_assert_uint_le (blocks, 64);
  for (int round = 0; round < 30; round++) {
    unsigned n = 50 + unit_rnd (&rng) % 200;
    for (unsigned i = 0; i < n; i++) {
      uint64_t l = unit_rnd (&rng) % LP4;
      unit_fill_page (page, PS4, l, version++);
      ck_assert_int_eq (ftl_write (ftl, page, PS4, l * PS4, 0), 0);
      if (unit_rnd (&rng) % 50 == 0)
        ck_assert_int_eq (ftl_trim (ftl, PS4, (l ^ 1) * PS4, 0), 0);
    }
    for (uint32_t b = 0; b < blocks; b++)
      before[b] = media_erase_count (&ftl->media, b);
    bool clean = round % 3 == 2;
    if (clean)
      ck_assert_int_eq (ftl_close (ftl), 0);
    else
      open_abandon (ftl);
    ftl = unit_open (path, 0, 0, 0, 0, 0, unit_nosync_io ());
    for (uint32_t b = 0; b < blocks; b++) {
      uint32_t after = media_erase_count (&ftl->media, b);
      ck_assert_msg (after >= before[b], "round %d (%s): erase count of "
                     "block %u went from %u to %u", round,
                     clean ? "clean restart" : "kill", b, before[b], after);
      if (clean)
        ck_assert_uint_eq (after, before[b]);
    }
  }
  for (uint32_t b = 0; b < blocks; b++)
    total += media_erase_count (&ftl->media, b);
  ck_assert_uint_gt (total, 100);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

/* ---- (d) torn writes ---- */

/* 64 pages of 512 bytes, 8 per block, 20 blocks, one stream. */
#define PS5     512
#define LP5     64
#define NOPS    300
#define CRASH_STEP 7

enum crash_mode { CRASH_EXIT, CRASH_EIO };
#define CHILD_DONE     0
#define CHILD_CRASHED  3
#define CHILD_FAILED   4

/* In the child. */
static struct {
  long writes;                  /* pwrites so far */
  long crash_at;                /* the one that is torn; -1: none */
  enum crash_mode mode;
  bool crashed;
} cs;

static void
crash_now (void)
{
  cs.crashed = true;
  if (cs.mode == CRASH_EXIT)
    _exit (CHILD_CRASHED);
}

static int
crash_pwrite (void *opaque, int fd, const void *buf, size_t len, off_t off)
{
  if (cs.crashed)
    return -EIO;
  if (cs.writes++ == cs.crash_at) {
    /* Half of it reaches the file. */
    if (len / 2 > 0)
      media_default_io.pwrite (opaque, fd, buf, len / 2, off);
    crash_now ();
    return -EIO;
  }
  return media_default_io.pwrite (opaque, fd, buf, len, off);
}

static int
crash_sync (void *opaque, int fd)
{
  return cs.crashed ? -EIO : 0;
}

static const struct ftl_io crash_io = {
  .pwrite = crash_pwrite, .pread = NULL,
  .sync = crash_sync,
};

/* Shared between the child and the parent. */
struct shared {
  long completed;               /* ops that returned success */
  long writes;                  /* writes counted by the child */
  int open_failed;
};

static void __attribute__ ((noreturn))
run_child (const char *img, const char *errfile, const struct op *ops,
           struct shared *sh, enum crash_mode mode, long crash_at)
{
  struct ftl_io io = crash_io;
  struct ftl *ftl;
  char err[256];
  struct rlimit rl = { 0, 0 };
  int fd;

  /* Assertion messages go to a file; no core files. */
  setrlimit (RLIMIT_CORE, &rl);
  fd = open (errfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    dup2 (fd, 2);
    close (fd);
  }
  io.pread = media_default_io.pread;
  cs.writes = 0;
  cs.crash_at = crash_at;
  cs.mode = mode;
  cs.crashed = false;
  unit_quiet = true;

  if (unit_try_open (img, &io, &ftl, err, sizeof err) < 0) {
    sh->open_failed = 1;
    sh->writes = cs.writes;
    _exit (cs.crashed ? CHILD_DONE : CHILD_FAILED);
  }
  for (long i = 0; i < NOPS; i++) {
    if (do_op (ftl, &ops[i], PS5) < 0)
      break;
    sh->completed = i + 1;
  }
  sh->writes = cs.writes;
  if (sh->completed < NOPS && !cs.crashed)
    _exit (CHILD_FAILED);       /* an error without a crash */
  open_abandon (ftl);
  _exit (CHILD_DONE);
}

/* Recover the image and check every page against the history of the ops
 * the child completed (plus the one in progress).  Then a clean restart
 * must give the same content.  Returns the pages checked.
 */
static uint64_t
verify_crash (const char *img, const struct op *ops, long completed,
              long crash_at)
{
  struct hist h;
  struct ftl *ftl;
  char err[256], what[128];
  uint64_t first[LP5], second[LP5];
  int r;

  hist_init (&h, LP5);
  for (long i = 0; i < completed; i++)
    hist_apply (&h, &ops[i], true);
  if (completed < NOPS)
    hist_apply (&h, &ops[completed], false);

  snprintf (what, sizeof what, "crash at write %ld (during op %ld)",
            crash_at, completed);
  r = unit_try_open (img, NULL, &ftl, err, sizeof err);
  ck_assert_msg (r == 0, "%s: recovery failed: %s", what, err);
  hist_verify (ftl, &h, PS5, first, what);
  ck_assert_int_eq (ftl_close (ftl), 0);

  snprintf (what, sizeof what, "crash at write %ld, after a clean restart",
            crash_at);
  r = unit_try_open (img, unit_nosync_io (), &ftl, err, sizeof err);
  ck_assert_msg (r == 0, "%s: %s", what, err);
  hist_verify (ftl, &h, PS5, second, what);
  for (uint64_t l = 0; l < LP5; l++)
    ck_assert_msg (first[l] == second[l], "%s: page %" PRIu64 " changed "
                   "from version %" PRIu64 " to %" PRIu64, what, l,
                   first[l], second[l]);
  ck_assert_int_eq (ftl_close (ftl), 0);
  hist_free (&h);
  return LP5;
}

/* make check-long (FTL_CHECK_LONG set, not 0). */
static bool
check_long (void)
{
  const char *e = getenv ("FTL_CHECK_LONG");

  return e && *e && strcmp (e, "0") != 0;
}

static void
torn_writes (enum crash_mode mode)
{
  /* make check: every other of the long form's points, the two forms
   * on alternate ones.
   */
  bool halve = !check_long ();
  long step = halve ? 2 * CRASH_STEP : CRASH_STEP;
  long first = halve && mode == CRASH_EIO ? CRASH_STEP : 0;
  char base[256], img[256], errfile[256];
  struct op *ops = make_ops (NOPS, LP5, 0xc0ffee);
  struct shared *sh;
  struct ftl *ftl;
  long total = -1;
  unsigned points = 0, aborted = 0, mid = 0;
  long first_abort = -1;
  char abort_msg[256] = "";
  uint64_t pages = 0;

  unit_path (base, sizeof base, "base.img");
  unit_path (img, sizeof img, "crash.img");
  unit_path (errfile, sizeof errfile, "child.err");
  ftl = unit_open (base, LP5 * PS5, PS5, 8, 150, 1, unit_nosync_io ());
  ck_assert_int_eq (ftl_close (ftl), 0);
  sh = mmap (NULL, sizeof *sh, PROT_READ | PROT_WRITE,
             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ck_assert_ptr_ne (sh, MAP_FAILED);

  /* A run without a crash counts the writes. */
  for (long crash_at = -1; ; crash_at += crash_at < 0 ? 1 + first : step) {
    int status;
    pid_t pid;

    unit_copy_file (base, img);
    memset (sh, 0, sizeof *sh);
    fflush (NULL);
    pid = fork ();
    ck_assert_int_ge (pid, 0);
    if (pid == 0)
      run_child (img, errfile, ops, sh, mode, crash_at);
    ck_assert_int_eq (waitpid (pid, &status, 0), pid);

    if (crash_at == -1) {
      ck_assert_msg (WIFEXITED (status) && WEXITSTATUS (status) == CHILD_DONE,
                     "the workload without a crash failed (status 0x%x)",
                     status);
      ck_assert_int_eq (sh->completed, NOPS);
      total = sh->writes;
      ck_assert_int_gt (total, 500);
      pages += verify_crash (img, ops, NOPS, -1);
      continue;
    }
    if (crash_at >= total)
      break;

    if (WIFSIGNALED (status)) {
      if (aborted++ == 0) {
        FILE *fp = fopen (errfile, "r");
        first_abort = crash_at;
        if (fp) {
          if (!fgets (abort_msg, sizeof abort_msg, fp))
            abort_msg[0] = '\0';
          fclose (fp);
        }
        abort_msg[strcspn (abort_msg, "\n")] = '\0';
      }
    }
    else
      ck_assert_msg (WIFEXITED (status) &&
                     WEXITSTATUS (status) == (mode == CRASH_EXIT
                                              ? CHILD_CRASHED : CHILD_DONE),
                     "crash at write %ld: the child ended with status 0x%x",
                     crash_at, status);
    if (sh->completed > 0 && sh->completed < NOPS)
      mid++;
    pages += verify_crash (img, ops, sh->completed, crash_at);
    points++;
  }
  printf ("torn writes (%s): %u crash points checked (every %ldth of %ld "
          "writes, the first at write %ld, %u in the middle of the "
          "workload), %" PRIu64 " pages verified\n", mode == CRASH_EXIT ?
          "process ends" : "later I/O fails", points, step, total, first,
          mid, pages);
  ck_assert_uint_gt (points, halve ? 45 : 50);
  ck_assert_uint_gt (mid, 40);
  munmap (sh, sizeof *sh);
  free (ops);
  ck_assert_msg (aborted == 0, "%u of %u crash points: the process aborted "
                 "on an I/O error instead of returning -EIO (first at "
                 "write %ld: %s)", aborted, points, first_abort, abort_msg);
}

/* Crash (the process ends) in the middle of every 7th write of a
 * workload of writes, trims and flushes with GC and checkpoints: half
 * of that write reaches the file.  After recovery every page reads as
 * its value at the last completed flush or as a value written later.
 */
START_TEST (test_torn_write_exit)
{
  torn_writes (CRASH_EXIT);
}
END_TEST

/* The same, but the torn write and every later write and sync fail with
 * -EIO, so the FTL's error paths run before the process gives up: they
 * must return the error, never abort (an abort is reported with its
 * assertion message, and the image it left is verified all the same).
 */
START_TEST (test_torn_write_eio)
{
  torn_writes (CRASH_EIO);
}
END_TEST

static Suite *
recovery_suite (void)
{
  Suite *s = suite_create ("recovery");
  TCase *tc;

  tc = tcase_create ("kill");
  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 30);
  tcase_add_test (tc, test_flush_then_kill);
  tcase_add_test (tc, test_flush_then_kill_ns);
  tcase_add_test (tc, test_trim_flush_kill);
  tcase_add_test (tc, test_sparse_checkpoints);
  tcase_add_test (tc, test_checks_budget);
  tcase_add_test (tc, test_trim_no_flush_kill);
  tcase_add_test (tc, test_erase_counts_monotonic);
  suite_add_tcase (s, tc);

  tc = tcase_create ("torn");
  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 60);
  tcase_add_test (tc, test_torn_write_exit);
  tcase_add_test (tc, test_torn_write_eio);
  suite_add_tcase (s, tc);

  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (recovery_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
