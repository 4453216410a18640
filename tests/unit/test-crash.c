/* nbdkit-ftl: crash-point enumeration.
 *
 * A scripted workload (writes, overwrites, sub-page writes, trims,
 * zeros, flushes, FUA, enough churn for garbage collection, wear
 * leveling moves, checkpoints, and a clean close and reopen in the
 * middle) runs once through the fault-injection layer (helpers.h),
 * which records every backing write and sync.  The handle is opened
 * with manual_background: no thread runs, and the background work
 * (checkpoints, erases of drained blocks, barriers, wear leveling
 * moves, garbage collection) runs in steps (ftl_background_step) that
 * the workload places between its requests, seeded; the requests
 * leave that work to the steps, as they would to the thread, and do
 * it themselves only when the steps fall behind.  So the power is also
 * cut inside each kind of background work, at every one of its writes
 * and syncs.  Then, for every event index n, the backing file is
 * rebuilt as a power cut during event n would leave it, five ways:
 *
 *   in order   the writes since the last sync reached the file, event n
 *              torn at a random byte;
 *   random     a random subset of them, in a random order, the last one
 *              applied torn at a random byte;
 *   sectors    twice: another random subset, in a random order, each
 *              write applied torn with probability 1/2: any of its
 *              512-byte sectors reached the file, the others did not;
 *   none       none of them (only at syncs: the cut with most lost).
 *
 * (The cuts other than "in order" are only made where writes are
 * pending: with none, every cut gives the same file.)  Each crash point
 * has its own seeded sequence of random choices.
 *
 * The image is reopened and checked against a reference model at
 * 512-byte sector granularity: each sector reads as its last durable
 * value (flushed, or written with FUA) or as a value written to that
 * same sector after it, or zeros where a trim or zero came after it;
 * never another sector's data, never garbage.  An op counts as in
 * progress from its first backing write or sync; a close (in the
 * middle of the workload) has made everything durable once it has
 * returned, so a crash during the open that follows must keep every
 * value written before the close.  Erase counts are never below those
 * at the last completed sync.  A clean restart then gives the same
 * content.
 *
 * For a seeded sample of those crash points the recovery itself is
 * recorded and cut at each of its events, and the image recovered
 * again: it must give exactly what the uninterrupted recovery gave.
 *
 * A second, shorter workload runs with a write cache, whose pages
 * reach the log in destage batches (background steps, writers that
 * find the cache full, flushes and FUA writes), and is checked with
 * the same model: flushes and FUA writes are its durability points,
 * and anything written since may be lost, but never what they covered.
 *
 * Each event is classified when it is issued (inside garbage
 * collection, wear leveling, a checkpoint, a superblock update, an
 * erase, an open or a close; and, inside a background step, what the
 * step was doing: bg_work_here), and the number of crash points in
 * each category is printed; every kind of background step must have
 * been cut.  FTL_CRASH_SEED=N in the environment replays a run; the
 * seed is always printed.
 *
 * A fourth runs with sync=false, where only the session's mark (at
 * open) and its close are synced: a cut in order is then the death of
 * the server (nothing completed may be lost, no page may fail), every
 * other cut a crash of the host, which may lose or tear any write since
 * the mark, in any order: each sector must read as it was when the
 * session opened or as a value written since, or its page as an error
 * (test_crash_host).
 *
 * The creation of an image is cut the same way, at each of its events,
 * its writes also torn at every subset of their sectors and at chosen
 * bytes, and each file left opened again three ways
 * (test_crash_during_creation).
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftl-internal.h"
#include "helpers.h"

/* 64 pages of 2 KiB (256 sectors), 8 pages per block, 20 blocks. */
#define PS      2048
#define SECT    512
#define SPP     (PS / SECT)
#define LP      64
#define NSECT   (LP * SPP)
#define SIZE    ((uint64_t) LP * PS)
#define PPB     8
#define OP      150.0
#define WL      2               /* wl-threshold: frequent moves */

static char base[256], start[256], img[256], img2[256], img3[256];
static uint64_t seed;
static uint64_t cache_bytes;    /* the write cache of the variant run */
static uint64_t slc_bytes;      /* its SLC cache's static part (and a
                                 * dynamic part as free space allows) */
static bool no_sync;            /* sync=false (the host-crash variant) */
static long only = -1;          /* FTL_CRASH_EVENT: check one point */

static void
setup (void)
{
  const char *e = getenv ("FTL_CRASH_SEED");

  unit_dir_clean ();
  unit_path (base, sizeof base, "base.img");
  unit_path (start, sizeof start, "start.img");
  unit_path (img, sizeof img, "crash.img");
  unit_path (img2, sizeof img2, "crash-copy.img");
  unit_path (img3, sizeof img3, "crash2.img");
  seed = e && *e ? strtoull (e, NULL, 0) : 20240611;
  e = getenv ("FTL_CRASH_EVENT");
  only = e && *e ? strtol (e, NULL, 0) : -1;
  if (seed == 0)
    seed = 1;
}

/* FTL_CRASH_DEBUG=1: print the library's debug messages. */
static void
debug_log (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level == FTL_LOG_DEBUG)
    fprintf (stderr, "debug: %s\n", msg);
  else
    unit_log (opaque, level, msg);
}

static struct ftl *
open_image (const char *path, const struct ftl_io *io, char *err,
            size_t errlen, int *rp)
{
  bool debug = getenv ("FTL_CRASH_DEBUG") != NULL;
  struct ftl_options o = {
    .path = path, .logical_bytes = SIZE, .page_size = PS,
    .pages_per_block = PPB, .op_percent = OP, .streams = 1,
    .wl_threshold = WL, .log = debug ? debug_log : unit_log, .io = io,
    .debug = debug ? ~0u : 0, .write_cache_bytes = cache_bytes,
    .manual_background = true, .no_sync = no_sync,
    /* Two bits per cell: 4 pages per SLC block; folds in every step
     * that has nothing else to do.
     */
    .slc = { .static_bytes = slc_bytes,
             .dynamic_bytes = slc_bytes ? FTL_SLC_AUTO : 0,
             .cell_bits = 2, .fold_idle_ns = 1 },
  };
  struct ftl *ftl = NULL;
  *rp = ftl_open (&o, &ftl, err, errlen);
  return ftl;
}

/* Open the image the workload runs on: background work is left to its
 * steps (OP_STEP), which run no thread.
 */
static struct ftl *
open_workload (const char *path, const struct ftl_io *io, char *err,
               size_t errlen, int *rp)
{
  struct ftl *ftl = open_image (path, io, err, errlen, rp);

  if (*rp == 0)
    ck_assert_int_eq (ftl_start_background (ftl), 0);
  return ftl;
}

/* ---- the workload ---- */

enum op_kind { OP_WRITE, OP_TRIM, OP_ZERO, OP_FLUSH, OP_REOPEN, OP_STEP };

struct op {
  enum op_kind kind;
  uint32_t sector, n;           /* range in sectors */
  unsigned flags;
  uint64_t version;             /* write: sectors get this version */
};

static void
add (struct op **ops, size_t *n, size_t *cap, struct op o)
{
  if (*n == *cap) {
    *cap = *cap ? 2 * *cap : 256;
    *ops = realloc (*ops, *cap * sizeof **ops);
    ck_assert_ptr_nonnull (*ops);
  }
  o.version = *n + 1;
  (*ops)[(*n)++] = o;
}

/* A random mix, biased to a hot region so that some blocks stay cold
 * and wear leveling moves them.
 */
static void
mix (struct op **ops, size_t *n, size_t *cap, uint64_t *rng, unsigned count)
{
  for (unsigned i = 0; i < count; i++) {
    unsigned k = unit_rnd (rng) % 100;
    bool hot = unit_rnd (rng) % 100 < 80;
    uint32_t page = hot ? unit_rnd (rng) % 12 : unit_rnd (rng) % LP;
    struct op o = { .kind = OP_WRITE };

    if (k < 45) {                       /* whole pages */
      o.sector = page * SPP;
      o.n = SPP * (1 + unit_rnd (rng) % 3);
    }
    else if (k < 62) {                  /* sub-page, maybe across pages */
      o.sector = page * SPP + unit_rnd (rng) % SPP;
      o.n = 1 + unit_rnd (rng) % 3;
    }
    else if (k < 70) {                  /* trim, partial pages ignored */
      o.kind = OP_TRIM;
      o.sector = unit_rnd (rng) % NSECT;
      o.n = 1 + unit_rnd (rng) % (6 * SPP);
    }
    else if (k < 78) {                  /* zero */
      o.kind = OP_ZERO;
      o.sector = unit_rnd (rng) % NSECT;
      o.n = 1 + unit_rnd (rng) % (3 * SPP);
      o.flags = unit_rnd (rng) % 2 ? FTL_MAY_TRIM : 0;
    }
    else if (k < 87)
      o.kind = OP_FLUSH;
    else {                              /* FUA */
      o.sector = page * SPP + (k % 2 ? 0 : unit_rnd (rng) % SPP);
      o.n = k % 2 ? SPP : 1 + unit_rnd (rng) % 2;
      o.flags = FTL_FUA;
      if (k > 97) {
        o.kind = OP_TRIM;
        o.n = 2 * SPP;
      }
    }
    if (o.kind != OP_FLUSH && o.sector + o.n > NSECT)
      o.n = NSECT - o.sector;
    add (ops, n, cap, o);
  }
}

/* Background steps after the ops, from their own generator (the ops
 * stay those of the seed): none after most, one after a quarter, two
 * or three after an eighth.
 */
static struct op *
add_steps (const struct op *ops, size_t nops, uint64_t s, size_t *n)
{
  struct op *out = NULL;
  size_t cap = 0;
  uint64_t rng = s ^ 0x5DEECE66DULL;

  *n = 0;
  for (size_t i = 0; i < nops; i++) {
    unsigned k = unit_rnd (&rng) % 8;
    add (&out, n, &cap, ops[i]);
    for (unsigned j = 0; j < (k < 5 ? 0 : k < 7 ? 1 : 2 + k % 2); j++)
      add (&out, n, &cap, (struct op) { .kind = OP_STEP });
  }
  return out;
}

/* The workload: fill the disk and flush, then a random mix of mixn
 * ops, a clean close and reopen, and another mix, with background
 * steps between the ops.
 */
static struct op *
make_workload (uint64_t s, unsigned mixn, size_t *nops)
{
  struct op *ops = NULL, *stepped;
  size_t n = 0, cap = 0;
  uint64_t rng = s;

  /* Fill the disk, flush. */
  for (uint32_t p = 0; p < LP; p += 4)
    add (&ops, &n, &cap, (struct op) { .kind = OP_WRITE, .sector = p * SPP,
                                       .n = 4 * SPP });
  add (&ops, &n, &cap, (struct op) { .kind = OP_FLUSH });
  mix (&ops, &n, &cap, &rng, mixn);
  add (&ops, &n, &cap, (struct op) { .kind = OP_REOPEN });
  mix (&ops, &n, &cap, &rng, mixn);
  stepped = add_steps (ops, n, s, nops);
  free (ops);
  return stepped;
}

/* The whole pages inside an op's range, as the FTL trims them. */
static void
trim_pages (const struct op *o, uint32_t *first, uint32_t *end)
{
  uint64_t off = (uint64_t) o->sector * SECT, count = (uint64_t) o->n * SECT;
  *first = (off + PS - 1) / PS;
  *end = off + count == SIZE ? LP : (off + count) / PS;
}

/* Does op o set sector s, and to what (0: zeros)? */
static bool
op_sets (const struct op *o, uint32_t s, uint64_t *v)
{
  uint32_t first, end;

  switch (o->kind) {
  case OP_WRITE:
    *v = o->version;
    return s >= o->sector && s < o->sector + o->n;
  case OP_ZERO:
    *v = 0;
    return s >= o->sector && s < o->sector + o->n;
  case OP_TRIM:
    *v = 0;
    trim_pages (o, &first, &end);
    return s / SPP >= first && s / SPP < end;
  case OP_FLUSH: case OP_REOPEN: case OP_STEP:
    return false;
  }
  abort ();
}

static int
run_op (struct ftl *ftl, const struct op *o)
{
  uint64_t off = (uint64_t) o->sector * SECT, count = (uint64_t) o->n * SECT;
  int r;

  switch (o->kind) {
  case OP_WRITE: {
    uint8_t *buf = malloc (count);
    for (uint32_t i = 0; i < o->n; i++)
      unit_fill_page (buf + (size_t) i * SECT, SECT, o->sector + i,
                      o->version);
    r = ftl_write (ftl, buf, count, off, o->flags);
    free (buf);
    return r;
  }
  case OP_TRIM:
    return ftl_trim (ftl, count, off, o->flags);
  case OP_ZERO:
    return ftl_zero (ftl, count, off, o->flags);
  case OP_FLUSH:
    return ftl_flush (ftl);
  case OP_STEP:
    r = ftl_background_step (ftl);
    return r < 0 ? r : 0;
  case OP_REOPEN:                /* done by the caller */
    break;
  }
  abort ();
}

/* ---- the reference model, per sector ---- */

struct model {
  uint64_t durable[NSECT];      /* 0: zeros */
  uint64_t last[NSECT];
  uint64_t *later[NSECT];       /* values written since it was durable */
  size_t nlater[NSECT], cap[NSECT];
};

static void
model_set (struct model *m, uint32_t s, uint64_t v, bool durable)
{
  if (durable) {
    m->durable[s] = m->last[s] = v;
    m->nlater[s] = 0;
    return;
  }
  if (m->nlater[s] == m->cap[s]) {
    m->cap[s] = m->cap[s] ? 2 * m->cap[s] : 8;
    m->later[s] = realloc (m->later[s], m->cap[s] * sizeof *m->later[s]);
  }
  m->later[s][m->nlater[s]++] = v;
  m->last[s] = v;
}

/* Op o returned successfully. */
static void
model_complete (struct model *m, const struct op *o)
{
  uint64_t v;

  if (o->kind == OP_FLUSH || o->kind == OP_REOPEN) {
    for (uint32_t s = 0; s < NSECT; s++)
      model_set (m, s, m->last[s], true);
    return;
  }
  for (uint32_t s = 0; s < NSECT; s++)
    if (op_sets (o, s, &v))
      model_set (m, s, v, o->flags & FTL_FUA);
}

/* The same for a crash of the host during a sync=false session: nothing
 * that a session wrote is durable until it closes (a flush or FUA
 * reaches the host's page cache only); a close, which syncs, makes
 * everything durable.
 */
static void
model_complete_host (struct model *m, const struct op *o)
{
  uint64_t v;

  if (o->kind == OP_FLUSH)
    return;
  if (o->kind == OP_REOPEN) {
    model_complete (m, o);
    return;
  }
  for (uint32_t s = 0; s < NSECT; s++)
    if (op_sets (o, s, &v))
      model_set (m, s, v, false);
}

static bool
model_allows (const struct model *m, const struct op *inflight, uint32_t s,
              uint64_t v)
{
  uint64_t w;

  if (v == m->durable[s])
    return true;
  for (size_t i = 0; i < m->nlater[s]; i++)
    if (m->later[s][i] == v)
      return true;
  return inflight && op_sets (inflight, s, &w) && w == v;
}

static void
model_free (struct model *m)
{
  for (uint32_t s = 0; s < NSECT; s++)
    free (m->later[s]);
}

/* ---- classification of events ---- */

enum {
  TAG_GC = 1 << 0, TAG_WL = 1 << 1, TAG_CKPT = 1 << 2, TAG_SB = 1 << 3,
  TAG_ERASE = 1 << 4, TAG_OPEN = 1 << 5, TAG_CLOSE = 1 << 6,
  NTAGS = 7,
  /* Above the tags: what the background step that issued the event
   * was doing (enum bg_work; BG_NONE in requests, opens and closes).
   */
  TAG_WORK_SHIFT = 8,
};
static const char *tag_names[NTAGS] = {
  "garbage collection", "wear leveling", "checkpoint", "superblock update",
  "erase", "open", "close",
};
static const char *work_names[BG_WORK__MAX] = {
  [BG_CKPT] = "checkpoint", [BG_ERASE] = "erases",
  [BG_BARRIER] = "barrier", [BG_WL] = "wear leveling",
  [BG_GC] = "garbage collection", [BG_DESTAGE] = "destage",
  [BG_RECLAIM] = "read reclaim", [BG_SCRUB] = "scrub",
  [BG_FOLD] = "SLC fold",
};

static enum bg_work
ev_work (const struct unit_ev *e)
{
  return e->tag >> TAG_WORK_SHIFT;
}

struct ctx {
  struct ftl *ftl;              /* when a handle is open */
  unsigned phase;               /* TAG_OPEN or TAG_CLOSE or 0 */
  uint64_t ckpt_start;          /* file offset of checkpoint slot 0 */
  struct media geo;             /* the image's geometry */
  /* Erase counts at each completed sync. */
  size_t nsnap, capsnap;
  size_t *snap_ev;
  uint32_t *snap_ec;
  uint32_t blocks;
};

static unsigned
classify (void *arg, const struct unit_ev *e)
{
  struct ctx *c = arg;
  unsigned tag = c->phase | bg_work_here () << TAG_WORK_SHIFT;

  if (c->ftl && gc_running_here (c->ftl)) {
    tag |= TAG_GC;
    if (c->ftl && c->ftl->gc.moving_for_wl)
      tag |= TAG_WL;
  }
  uint32_t blk;

  if (e->kind == UNIT_EV_PWRITE &&
      unit_is_erase_write (&c->geo, e->off, e->len, e->data, &blk))
    tag |= TAG_ERASE;
  if (e->kind == UNIT_EV_PWRITE) {
    if (e->off < 2 * FTL_SB_SLOT)
      tag |= TAG_SB;
    else if (e->off >= c->ckpt_start &&
             e->off < media_regions_offset (&c->geo))
      tag |= TAG_CKPT;
  }
  return tag;
}

/* Syncs belong to the write they commit (or prepare, for the sync
 * before a checkpoint slot is written), and a block header written
 * just after the zeros of the OOB entries is part of the erase.
 */
static void
classify_after (struct unit_fault *f)
{
  for (size_t i = 0; i < f->n; i++) {
    struct unit_ev *e = &f->ev[i];
    if (e->kind == UNIT_EV_PWRITE && (e->tag & (TAG_CKPT | TAG_SB))) {
      if (i > 0 && f->ev[i - 1].kind == UNIT_EV_SYNC && (e->tag & TAG_CKPT))
        f->ev[i - 1].tag |= TAG_CKPT;
      if (i + 1 < f->n && f->ev[i + 1].kind == UNIT_EV_SYNC)
        f->ev[i + 1].tag |= e->tag & (TAG_CKPT | TAG_SB);
    }
    if ((e->tag & TAG_ERASE) && i + 1 < f->n &&
        f->ev[i + 1].kind == UNIT_EV_PWRITE &&
        f->ev[i + 1].len == FTL_BLKHDR_BYTES)
      f->ev[i + 1].tag |= TAG_ERASE;
  }
}

static void
synced (void *arg, size_t ev)
{
  struct ctx *c = arg;

  if (!c->ftl)
    return;
  if (c->nsnap == c->capsnap) {
    c->capsnap = c->capsnap ? 2 * c->capsnap : 256;
    c->snap_ev = realloc (c->snap_ev, c->capsnap * sizeof *c->snap_ev);
    c->snap_ec = realloc (c->snap_ec, c->capsnap * c->blocks
                          * sizeof *c->snap_ec);
  }
  c->snap_ev[c->nsnap] = ev;
  for (uint32_t b = 0; b < c->blocks; b++)
    c->snap_ec[c->nsnap * c->blocks + b] =
      media_erase_count (&c->ftl->media, b);
  c->nsnap++;
}

/* ---- checking an image ---- */

/* A sector of a page that read as an error (got[], eio). */
#define GOT_EIO UINT64_MAX

/* How check_image_how reads: may pages read as errors (lost in a crash
 * of the host during a sync=false session), and did the open find the
 * session's mark?
 */
struct check_how {
  bool eio_ok;
  unsigned eio_pages;           /* out: pages that read as errors */
  bool mark;                    /* out: the open found the mark */
};

/* Open path (recording the recovery in rec, if given), read every
 * sector and check it against the model (ops completed so far, op
 * inflight in progress), and the erase counts against ec_min.  got
 * receives each sector's version (GOT_EIO if its page read as an
 * error, which only how->eio_ok allows).
 */
static void
check_image_how (const char *path, struct unit_fault *rec,
                 const struct model *m, const struct op *inflight,
                 const uint32_t *ec_min, uint64_t *got, const char *what,
                 struct check_how *how)
{
  static uint8_t buf[SIZE];
  struct ftl *ftl;
  char err[256];
  int r;

  ftl = open_image (path, rec ? &rec->io : unit_nosync_io (), err,
                    sizeof err, &r);
  ck_assert_msg (r == 0, "%s: the image does not open: %s", what, err);
  if (how) {
    how->mark = ftl->unsynced_found;
    how->eio_pages = 0;
  }
  if (how && how->eio_ok) {
    /* Page by page: a page may read as an error, never as wrong data. */
    memset (got, 0, NSECT * sizeof *got);
    for (uint32_t p = 0; p < LP; p++) {
      r = ftl_read (ftl, buf + (size_t) p * PS, PS, (uint64_t) p * PS);
      if (r == -EIO) {
        how->eio_pages++;
        for (uint32_t i = 0; i < SPP; i++)
          got[p * SPP + i] = GOT_EIO;
        continue;
      }
      ck_assert_msg (r == 0, "%s: read of page %u failed: %s (%s)", what, p,
                     strerror (-r), unit_last_error);
    }
  }
  else {
    r = ftl_read (ftl, buf, SIZE, 0);
    ck_assert_msg (r == 0, "%s: read failed: %s (%s)", what, strerror (-r),
                   unit_last_error);
  }
  for (uint32_t s = 0; s < NSECT; s++) {
    uint64_t id = s, v = 0;
    if (how && how->eio_ok && got[s] == GOT_EIO)
      continue;                 /* its page read as an error */
    int k = unit_page_identify (buf + (size_t) s * SECT, SECT, &id, &v);
    /* ck_abort_msg, not ck_assert_msg, in the loops of this file: each
     * ck_assert records its location through a file, and these run
     * millions of times.
     */
    if (k < 0)
      ck_abort_msg ("%s: sector %u holds garbage", what, s);
    if (id != s)
      ck_abort_msg ("%s: sector %u holds the data of sector %"
                    PRIu64 " (version %" PRIu64 ")", what, s, id, v);
    if (m && !model_allows (m, inflight, s, v)) {
      char allowed[256];
      int n = snprintf (allowed, sizeof allowed, "durable %" PRIu64 ", later:",
                        m->durable[s]);
      for (size_t i = 0; i < m->nlater[s] && n < 200; i++)
        n += snprintf (allowed + n, sizeof allowed - n, " %" PRIu64,
                       m->later[s][i]);
      ck_abort_msg ("%s: sector %u (page %u) reads version %" PRIu64
                    "; allowed: %s (0 = zeros)", what, s, s / SPP, v,
                    allowed);
    }
    got[s] = v;
  }
  for (uint32_t b = 0; b < ftl->blocks; b++)
    if (media_erase_count (&ftl->media, b) < ec_min[b])
      ck_abort_msg ("%s: the erase count of block %u went back from %u to %u",
                    what, b, ec_min[b], media_erase_count (&ftl->media, b));
  if (rec)
    open_abandon (ftl);          /* the recovery's events only */
  else
    ck_assert_int_eq (ftl_close (ftl), 0);
}

static void
check_image (const char *path, struct unit_fault *rec,
             const struct model *m, const struct op *inflight,
             const uint32_t *ec_min, uint64_t *got, const char *what)
{
  check_image_how (path, rec, m, inflight, ec_min, got, what, NULL);
}

/* ---- pages lost in a crash of the host (sync=false) ---- */

/* Write page p whole, each sector at version v. */
static int
write_whole_page (struct ftl *ftl, uint32_t p, uint64_t v)
{
  uint8_t buf[PS];

  for (uint32_t i = 0; i < SPP; i++)
    unit_fill_page (buf + i * SECT, SECT, p * SPP + i, v);
  return ftl_write (ftl, buf, PS, (uint64_t) p * PS, 0);
}

/* Page p must read with every sector at version v (0: zeros), or fail
 * with EIO if v is GOT_EIO.
 */
static void
expect_page (struct ftl *ftl, uint32_t p, uint64_t v, const char *what)
{
  uint8_t buf[PS];
  int r = ftl_read (ftl, buf, PS, (uint64_t) p * PS);

  if (v == GOT_EIO) {
    if (r != -EIO)
      ck_abort_msg ("%s: lost page %u: read gave %d, not EIO", what, p, r);
    return;
  }
  if (r != 0)
    ck_abort_msg ("%s: page %u: read failed: %s", what, p, strerror (-r));
  for (uint32_t i = 0; i < SPP; i++) {
    uint64_t id = p * SPP + i, got = 0;
    if (unit_page_identify (buf + i * SECT, SECT, &id, &got) < 0 ||
        got != v || (v && id != p * SPP + i))
      ck_abort_msg ("%s: page %u sector %u reads version %" PRIu64 ", not %"
                    PRIu64, what, p, i, got, v);
  }
}

/* What a page that a crash of the host lost (it reads as EIO: got[]
 * says which) does next, on path, a copy of the image: a whole-page
 * write replaces it, a trim unmaps it, a write of part of it fails with
 * EIO (the rest of the page is lost), garbage collection and wear
 * leveling run past the others (every other page rewritten three times
 * over), and a clean restart keeps each state.  Returns false if the
 * image has fewer than three such pages.
 */
static bool
exercise_lost (const char *path, const uint64_t *got, const char *what)
{
  uint64_t want[LP];
  uint32_t lost[LP], n = 0;
  struct ftl *ftl;
  char err[256];
  uint8_t sect[SECT];
  int r;

  for (uint32_t p = 0; p < LP; p++) {
    want[p] = got[p * SPP];
    if (want[p] == GOT_EIO)
      lost[n++] = p;
  }
  if (n < 3)
    return false;
  ftl = open_image (path, unit_nosync_io (), err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s: the copy does not open: %s", what, err);
  if ((r = write_whole_page (ftl, lost[0], 1u << 30)) != 0)
    ck_abort_msg ("%s: writing lost page %u: %s", what, lost[0],
                  strerror (-r));
  want[lost[0]] = 1u << 30;
  if ((r = ftl_trim (ftl, PS, (uint64_t) lost[1] * PS, 0)) != 0)
    ck_abort_msg ("%s: trimming lost page %u: %s", what, lost[1],
                  strerror (-r));
  want[lost[1]] = 0;
  unit_fill_page (sect, SECT, lost[2] * SPP, 1u << 30);
  if ((r = ftl_write (ftl, sect, SECT, (uint64_t) lost[2] * PS, 0)) != -EIO)
    ck_abort_msg ("%s: a sector written into lost page %u gave %d, not "
                  "EIO", what, lost[2], r);
  for (uint64_t k = 1; k <= 3; k++)
    for (uint32_t p = 0; p < LP; p++) {
      if (want[p] == GOT_EIO)
        continue;
      if ((r = write_whole_page (ftl, p, (1u << 30) + k)) != 0)
        ck_abort_msg ("%s: writing page %u: %s", what, p, strerror (-r));
      want[p] = (1u << 30) + k;
      if (p % 8 == 0)
        ck_assert_int_ge (ftl_background_step (ftl), 0);
    }
  want[lost[1]] = 0;            /* rewritten above: trim it again */
  ck_assert_int_eq (ftl_trim (ftl, PS, (uint64_t) lost[1] * PS, 0), 0);
  for (int pass = 0; pass < 2; pass++) {
    for (uint32_t p = 0; p < LP; p++)
      expect_page (ftl, p, want[p], what);
    ck_assert_int_eq (ftl_close (ftl), 0);
    if (pass == 0) {
      ftl = open_image (path, unit_nosync_io (), err, sizeof err, &r);
      ck_assert_msg (r == 0, "%s: the copy does not open again: %s", what,
                     err);
      ck_assert_msg (!ftl->unsynced_found, "%s: the mark survived a clean "
                     "close", what);
    }
  }
  return true;
}

/* got[] must equal want[] sector for sector. */
static void
check_same (const uint64_t *want, const uint64_t *got, const char *what)
{
  for (uint32_t s = 0; s < NSECT; s++)
    if (want[s] != got[s])
      ck_abort_msg ("%s: sector %u reads version %" PRIu64
                    ", the first recovery gave %" PRIu64, what, s, got[s],
                    want[s]);
}

/* ---- the test ---- */

struct counts {
  unsigned points, images, by_tag[NTAGS], second, second_images;
  unsigned torn, dropped, torn_writes, multi_torn, subsets;
  /* sync=false: images left by a crash of the host, those with pages
   * that read as errors (and how many), those whose open found the mark.
   */
  unsigned host, host_eio, eio_pages, marks, exercised;
};

/* The writes pending at a crash during event n: since the last sync
 * before it, event n included.
 */
static unsigned
pending_writes (const struct unit_fault *f, size_t n)
{
  size_t end = n < f->n ? n + 1 : f->n;
  unsigned np = 0;

  for (size_t i = unit_fault_last_sync (f, n) + 1; i < end; i++)
    np += f->ev[i].kind == UNIT_EV_PWRITE;
  return np;
}

/* Record the workload of mixn random ops on each side of the reopen;
 * returns the ops and fills f.
 */
static struct op *
record (struct unit_fault *f, struct ctx *c, unsigned mixn, size_t *nops,
        long **op_start, long **op_end)
{
  struct ftl *ftl;
  struct op *ops = make_workload (seed, mixn, nops);
  unsigned steps = 0, idle = 0;
  uint8_t check[SIZE];
  char err[256];
  int r;

  /* The empty image the run starts from. */
  ftl = open_image (base, unit_nosync_io (), err, sizeof err, &r);
  ck_assert_msg (r == 0, "creating the image: %s", err);
  c->ckpt_start = ftl->sb.ckpt_offset[0];
  c->geo = ftl->media;
  c->blocks = ftl->blocks;
  ck_assert_uint_le (c->blocks, 64);
  ck_assert_int_eq (ftl_close (ftl), 0);
  unit_copy_file (base, start);

  f->classify = classify;
  f->classify_arg = c;
  f->synced = synced;
  *op_start = calloc (*nops + 1, sizeof **op_start);
  *op_end = calloc (*nops + 1, sizeof **op_end);
  c->phase = TAG_OPEN;
  ftl = open_workload (base, &f->io, err, sizeof err, &r);
  ck_assert_msg (r == 0, "open: %s", err);
  c->phase = 0;
  c->ftl = ftl;
  for (size_t i = 0; i < *nops; i++) {
    f->op = i;
    (*op_start)[i] = f->n;
    if (ops[i].kind == OP_REOPEN) {
      /* Events of the close, then of the open.  The op is complete
       * once the close has returned: everything is durable then.
       */
      c->phase = TAG_CLOSE;
      r = ftl_close (ftl);
      c->ftl = NULL;
      ck_assert_int_eq (r, 0);
      (*op_end)[i] = f->n;
      c->phase = TAG_OPEN;
      ftl = open_workload (base, &f->io, err, sizeof err, &r);
      ck_assert_msg (r == 0, "reopen: %s", err);
      c->phase = 0;
      c->ftl = ftl;
    }
    else {
      size_t n0 = f->n;
      r = run_op (ftl, &ops[i]);
      ck_assert_msg (r == 0, "op %zu failed: %s", i, strerror (-r));
      (*op_end)[i] = f->n;
      /* Background steps write only inside steps, and always say
       * what they are doing.
       */
      for (size_t k = n0; k < f->n; k++)
        ck_assert_msg ((ops[i].kind == OP_STEP) == (ev_work (&f->ev[k])
                                                    != BG_NONE),
                       "op %zu, event %zu: background work %d", i, k,
                       ev_work (&f->ev[k]));
      if (ops[i].kind == OP_STEP) {
        steps++;
        idle += f->n == n0;
      }
    }
  }
  /* The run itself must read back as the model's last values. */
  ck_assert_int_eq (ftl_read (ftl, check, SIZE, 0), 0);
  {
    static struct model m;
    memset (&m, 0, sizeof m);
    for (size_t i = 0; i < *nops; i++)
      model_complete (&m, &ops[i]);
    for (uint32_t s = 0; s < NSECT; s++) {
      uint64_t id = s, v = 0;
      ck_assert_int_ge (unit_page_identify (check + (size_t) s * SECT, SECT,
                                            &id, &v), 0);
      ck_assert_uint_eq (v, m.last[s]);
    }
    model_free (&m);
  }
  printf ("crash: workload of %zu ops (%u background steps, %u of them "
          "idle): %zu backing writes and syncs; %" PRIu64 " gc runs (%"
          PRIu64 " in the background), %" PRIu64 " pages moved by wear "
          "leveling, %" PRIu64 " checkpoints, %" PRIu64 " erases (%" PRIu64
          " without a sync of their own)\n",
          *nops, steps, idle, f->n, ctr_get (ftl, FTL_CTR_GC_RUNS),
          ctr_get (ftl, FTL_CTR_GC_BG_RUNS), ctr_get (ftl, FTL_CTR_WL_MOVED),
          ctr_get (ftl, FTL_CTR_CKPTS), ctr_get (ftl, FTL_CTR_ERASE)
          + media_count (&ftl->media, MEDIA_ERASES), ftl->gc.erases_unsynced);
  c->ftl = NULL;
  open_abandon (ftl);
  classify_after (f);
  return ops;
}

/* Crash a second time, at every event of the recovery of img2 (a copy
 * of the first crash image), in order and at random.
 */
static void
second_crash (struct unit_fault *rec, const uint64_t *want,
              const uint32_t *ec_min, uint64_t *rng, const char *what1,
              struct counts *cnt)
{
  struct unit_disk d;
  uint64_t got[NSECT];
  char what[1024];

  unit_disk_init (&d, rec, img2);
  for (size_t m = 0; m <= rec->n; m++) {
    for (int mode = 0; mode < 2; mode++) {
      struct unit_cut_info info;
      unit_disk_cut (&d, m, mode == 0 ? UNIT_CUT_ORDER : UNIT_CUT_RANDOM,
                     rng, img3, &info);
      snprintf (what, sizeof what, "%s, then a crash during recovery at "
                "event %zu of %zu (%s, %u of %u pending writes applied, "
                "torn: %ld at %" PRIu64 ")", what1, m, rec->n,
                mode == 0 ? "in order" : "random", info.applied,
                info.pending, info.torn, info.torn_at);
      check_image (img3, NULL, NULL, NULL, ec_min, got, what);
      check_same (want, got, what);
      cnt->second_images++;
    }
    cnt->second++;
  }
  unit_disk_free (&d);
}

/* The model and the erase counts at a crash point, advanced event by
 * event along a recorded run.
 */
struct walk {
  struct model m;
  struct model mh;              /* for a crash of the host (sync=false) */
  const struct op *ops;
  size_t nops, k, snap;
  const long *op_start, *op_end;
  const struct ctx *c;
  const struct op *inflight;    /* the op in progress */
  uint32_t ec_min[64];
};

static void
walk_to (struct walk *w, size_t n)
{
  /* Ops that returned before event n, and the one in progress: it has
   * issued event n or one before it.
   */
  while (w->k < w->nops && w->op_end[w->k] <= (long) n) {
    model_complete_host (&w->mh, &w->ops[w->k]);
    model_complete (&w->m, &w->ops[w->k++]);
  }
  w->inflight = w->k < w->nops && w->op_start[w->k] <= (long) n
    ? &w->ops[w->k] : NULL;
  /* Erase counts at the last sync completed before event n. */
  while (w->snap < w->c->nsnap && w->c->snap_ev[w->snap] < n)
    w->snap++;
  if (w->snap > 0)
    memcpy (w->ec_min, &w->c->snap_ec[(w->snap - 1) * w->c->blocks],
            w->c->blocks * sizeof *w->ec_min);
}

/* What is enumerated: the write cache, the size of the workload, the
 * cuts at each crash point, how often a recovery is crashed again, and
 * the background work that must have been cut.
 */
struct variant {
  const char *name;
  uint64_t cache_bytes;
  uint64_t slc_bytes;
  unsigned mix;                 /* random ops on each side of the reopen */
  const enum unit_cut_mode *modes;
  size_t nmodes;
  unsigned twice;               /* 1 in twice images: a second crash */
  unsigned must_cut;            /* 1 << enum bg_work */
  bool volatile_cache;          /* writes that completed in the cache
                                 * are lost at some cuts in order; with
                                 * none, never */
  bool no_sync;                 /* sync=false: a cut in order is the
                                 * death of the server (nothing written
                                 * is lost), the others crashes of the
                                 * host (see test_crash_host) */
};

/* Does a sector read other than the last write of data that completed
 * to it (a lost write: allowed by the model only if it was not
 * flushed)?  Trims and zeros are not counted: their records wait in
 * memory for the next barrier, cache or not.
 */
static bool
lost_write (const struct walk *w, const uint64_t *got)
{
  uint64_t v;

  for (uint32_t s = 0; s < NSECT; s++)
    if (w->m.last[s] != 0 && got[s] != w->m.last[s] &&
        !(w->inflight && op_sets (w->inflight, s, &v)))
      return true;
  return false;
}

/* The op in progress at a crash point, for messages. */
static const char *
op_name (const struct op *o, const struct unit_ev *e)
{
  static const char *names[] = {
    [OP_WRITE] = "write", [OP_TRIM] = "trim", [OP_ZERO] = "zero",
    [OP_FLUSH] = "flush", [OP_REOPEN] = "close and open",
    [OP_STEP] = "background step",
  };
  if (!o)
    return "between ops";
  if (o->kind == OP_STEP && e && ev_work (e) != BG_NONE)
    return work_names[ev_work (e)];
  return names[o->kind];
}

static void
crash_every_event (const struct variant *v)
{
  static struct walk w;
  struct unit_fault f, rec;
  struct unit_disk d;
  struct ctx c = { 0 };
  struct counts cnt = { 0 };
  unsigned fg = 0, bg = 0, by_work[BG_WORK__MAX] = { 0 };
  unsigned steps_cut[BG_WORK__MAX] = { 0 };
  long last_step = -1;
  unsigned lost_in_order = 0;
  size_t nops;
  long *op_start, *op_end;
  struct op *ops;
  uint64_t got[NSECT], again[NSECT];
  double t0 = unit_now ();
  char what[512];

  printf ("%s: seed %" PRIu64 " (set FTL_CRASH_SEED to replay)\n", v->name,
          seed);
  cache_bytes = v->cache_bytes;
  slc_bytes = v->slc_bytes;
  no_sync = v->no_sync;
  unit_fault_init (&f);
  unit_fault_init (&rec);
  ops = record (&f, &c, v->mix, &nops, &op_start, &op_end);
  unit_disk_init (&d, &f, start);
  memset (&w, 0, sizeof w);
  w = (struct walk) { .ops = ops, .nops = nops, .op_start = op_start,
                      .op_end = op_end, .c = &c };

  for (size_t n = 0; n <= f.n; n++) {
    const struct unit_ev *e = n < f.n ? &f.ev[n] : NULL;
    uint64_t rng = seed ^ (n * 0x9E3779B97F4A7C15ULL);

    walk_to (&w, n);
    if (only >= 0 && (long) n != only)
      continue;

    unsigned pending = pending_writes (&f, n);
    for (size_t i = 0; i < v->nmodes; i++) {
      enum unit_cut_mode mode = v->modes[i];
      struct unit_cut_info info;
      if (mode != UNIT_CUT_ORDER && pending == 0)
        continue;               /* the same file as in order */
      if (mode == UNIT_CUT_NONE && (!e || e->kind != UNIT_EV_SYNC))
        continue;
      unit_disk_cut (&d, n, mode, &rng, img, &info);
      ck_assert_uint_eq (info.pending, pending);
      snprintf (what, sizeof what, "%s: seed %" PRIu64 ", crash at event "
                "%zu of %zu (op %zu: %s; tags 0x%x; %s: %u of %u pending "
                "writes applied, %u torn, the last torn: %ld at %" PRIu64
                ")", v->name, seed, n, f.n, w.k,
                op_name (w.inflight, e), e ? e->tag : 0,
                mode == UNIT_CUT_ORDER ? "in order" :
                mode == UNIT_CUT_NONE ? "all lost" :
                mode == UNIT_CUT_RANDOM ? "random" : "random, sectors",
                info.applied, info.pending, info.torn_writes, info.torn,
                info.torn_at);
      /* A sample gets its recovery recorded and crashed again. */
      bool twice = v->twice && unit_rnd (&rng) % v->twice == 0;
      if (twice)
        unit_copy_file (img, img2);
      unit_fault_reset (&rec);
      /* sync=false: a cut in order is the death of the server, which
       * loses nothing written (the host's page cache has it all); the
       * others are crashes of the host, which may lose anything the
       * session wrote: every sector reads as it was when the session
       * opened, or as a value written since, or its page reads as an
       * error, never as anything else.
       */
      bool host = v->no_sync && mode != UNIT_CUT_ORDER;
      struct check_how how = { .eio_ok = host }, how2 = how;
      check_image_how (img, twice ? &rec : NULL, host ? &w.mh : &w.m,
                       w.inflight, w.ec_min, got, what, &how);
      if (twice)
        second_crash (&rec, got, w.ec_min, &rng, what, &cnt);
      if (v->no_sync) {
        /* From the sync of the open's mark (or of a new pin) to the
         * first sync of the close, the mark is on the media whatever
         * was lost.
         */
        long ls = unit_fault_last_sync (&f, n);
        if (ls >= 0 && !(f.ev[ls].tag & TAG_CLOSE) && !how.mark)
          ck_abort_msg ("%s: the open did not find the mark of the "
                        "sync=false session", what);
        cnt.marks += how.mark;
        cnt.host += host;
        cnt.host_eio += how.eio_pages > 0;
        cnt.eio_pages += how.eio_pages;
        /* A sample of the images with lost pages: what they do next. */
        if (how.eio_pages >= 3 && cnt.host_eio % 16 == 1) {
          unit_copy_file (img, img2);
          cnt.exercised += exercise_lost (img2, got, what);
        }
      }
      /* A clean restart gives the same content (the same errors). */
      check_image_how (img, NULL, NULL, NULL, w.ec_min, again, what, &how2);
      check_same (got, again, what);
      /* Every write issued reached the file, in order (but the one
       * in flight): only data still in a write cache can be missing.
       */
      if (mode == UNIT_CUT_ORDER && lost_write (&w, got))
        lost_in_order++;
      cnt.images++;
      if (info.torn >= 0)
        cnt.torn++;
      cnt.torn_writes += info.torn_writes;
      if (info.torn_writes > 1)
        cnt.multi_torn++;
      if (info.applied < info.pending)
        cnt.dropped++;
      if (mode == UNIT_CUT_RANDOM || mode == UNIT_CUT_SECTORS)
        cnt.subsets++;
    }
    cnt.points++;
    for (int t = 0; t < NTAGS; t++)
      if (e && (e->tag & (1u << t)))
        cnt.by_tag[t]++;
    if (e && ev_work (e) != BG_NONE) {
      bg++;
      by_work[ev_work (e)]++;
      if (e->op != last_step) {
        steps_cut[ev_work (e)]++;
        last_step = e->op;
      }
    }
    else if (e)
      fg++;
  }

  printf ("%s: %u crash points (every event: %u in requests, opens and "
          "closes, %u in background steps), %u images checked (%u with a "
          "torn write, %u with several, %u writes torn in all; %u with "
          "lost writes; %u random subsets of pending writes) in %.1f s\n",
          v->name, cnt.points, fg, bg, cnt.images, cnt.torn, cnt.multi_torn,
          cnt.torn_writes, cnt.dropped, cnt.subsets, unit_now () - t0);
  for (int t = 0; t < NTAGS; t++)
    printf ("%s:   %5u crash points in %s\n", v->name, cnt.by_tag[t],
            tag_names[t]);
  for (int k = BG_NONE + 1; k < BG_WORK__MAX; k++)
    printf ("%s:   %5u crash points in %u background steps: %s\n", v->name,
            by_work[k], steps_cut[k], work_names[k]);
  printf ("%s: %u crash points during recovery (%u images checked)\n",
          v->name, cnt.second, cnt.second_images);
  printf ("%s: %u cuts with every issued write in the file lost a "
          "completed write (in a write cache)\n", v->name, lost_in_order);
  if (v->no_sync) {
    unsigned syncs = 0, repins = 0;
    for (size_t i = 0; i < f.n; i++)
      if (f.ev[i].kind == UNIT_EV_SYNC) {
        syncs++;
        repins += !(f.ev[i].tag & (TAG_OPEN | TAG_CLOSE));
      }
    printf ("%s: %u syncs, %u of them inside sessions (new pins: the trim "
            "records kept took a quarter of the spare)\n", v->name, syncs,
            repins);
    printf ("%s: %u images opened with the mark of the session; %u left by "
            "a crash of the host, %u of them with pages that read as "
            "errors (%u pages in all; %u of those images written, trimmed "
            "and collected after)\n", v->name, cnt.marks, cnt.host,
            cnt.host_eio, cnt.eio_pages, cnt.exercised);
    ck_assert (only >= 0 || cnt.exercised > 10);
    /* Both outcomes, so that a check that never fires shows. */
    ck_assert (only >= 0 || cnt.host_eio > 0);
    ck_assert (only >= 0 || cnt.host_eio < cnt.host);
    ck_assert (only >= 0 || cnt.marks > cnt.points / 2);
  }
  for (int t = 0; t < NTAGS && only < 0; t++)
    ck_assert_msg (cnt.by_tag[t] > 0, "no crash point in %s", tag_names[t]);
  for (int k = BG_NONE + 1; k < BG_WORK__MAX && only < 0; k++)
    if (v->must_cut & (1u << k))
      ck_assert_msg (steps_cut[k] > 0, "no crash point in a background "
                     "step doing %s", work_names[k]);
  ck_assert (only >= 0 || !v->twice || cnt.second > 100);
  if (v->volatile_cache)
    ck_assert (only >= 0 || lost_in_order > 100);
  else
    ck_assert_msg (lost_in_order == 0, "%u cuts lost a completed write "
                   "with no write cache", lost_in_order);
  ck_assert (only >= 0 || cnt.multi_torn > 100);

  unit_disk_free (&d);
  unit_fault_free (&f);
  unit_fault_free (&rec);
  model_free (&w.m);
  model_free (&w.mh);
  free (op_start);
  free (op_end);
  free (ops);
  free (c.snap_ev);
  free (c.snap_ec);
  no_sync = false;
}

static const enum unit_cut_mode all_modes[] = {
  UNIT_CUT_ORDER, UNIT_CUT_RANDOM, UNIT_CUT_SECTORS, UNIT_CUT_SECTORS,
  UNIT_CUT_NONE,
};

START_TEST (test_crash_every_event)
{
  static const struct variant v = {
    .name = "crash", .mix = 220,
    .modes = all_modes, .nmodes = sizeof all_modes / sizeof all_modes[0],
    .twice = 16,
    .must_cut = 1u << BG_GC | 1u << BG_WL | 1u << BG_CKPT | 1u << BG_ERASE
      | 1u << BG_BARRIER,
  };
  crash_every_event (&v);
}
END_TEST

/* The same with a write cache of 8 pages (an eighth of the disk, as
 * much as its spare allows): writes complete in the cache, and reach
 * the log in destage batches, run by background steps, by writers that
 * find the cache full, and by flushes and FUA writes, which are the
 * only durability points.
 * After a cut, every write that a completed flush (or FUA) covered
 * must read back; a write not flushed may be lost, but a sector never
 * reads older than its last flushed version, nor garbage.
 */
static const enum unit_cut_mode cache_modes[] = {
  UNIT_CUT_ORDER, UNIT_CUT_SECTORS, UNIT_CUT_NONE,
};

START_TEST (test_crash_write_cache)
{
  static const struct variant v = {
    .name = "crash, write cache", .cache_bytes = 8 * PS, .mix = 120,
    .modes = cache_modes,
    .nmodes = sizeof cache_modes / sizeof cache_modes[0],
    .must_cut = 1u << BG_DESTAGE | 1u << BG_GC | 1u << BG_CKPT,
    .volatile_cache = true,
  };
  crash_every_event (&v);
}
END_TEST

/* The same with the SLC cache: host writes fill blocks in SLC mode (a
 * static block and what free space allows), background steps fold
 * them; cut inside folds, and recovery must know each block's mode.
 */
START_TEST (test_crash_slc)
{
  static const struct variant v = {
    .name = "crash, SLC cache", .slc_bytes = 4 * PS, .mix = 140,
    .modes = cache_modes,
    .nmodes = sizeof cache_modes / sizeof cache_modes[0],
    .must_cut = 1u << BG_FOLD | 1u << BG_CKPT,
  };
  crash_every_event (&v);
  slc_bytes = 0;
}
END_TEST

/* sync=false: the image is synced only to set the session's mark at its
 * open and to clear it at its close, and everything between is cut two
 * ways.  In order (every write issued reached the file, the one in
 * flight torn): the death of the server, or a power cut emulated in it,
 * which the host's page cache survives: nothing completed may be lost,
 * and no page may read as an error.  A random subset of every write
 * since the mark, in a random order, torn at random bytes or sectors,
 * or none of them: a crash of the host.  The open must find the mark
 * (recovery.c then never loads a checkpoint older than the one the
 * session pinned, and verifies every mapped page), and each sector must
 * read as it was when the session opened or as a value written since,
 * or its page as an error; and the same after a clean restart.
 */
static const enum unit_cut_mode host_modes[] = {
  UNIT_CUT_ORDER, UNIT_CUT_RANDOM, UNIT_CUT_SECTORS, UNIT_CUT_NONE,
};

START_TEST (test_crash_host)
{
  static const struct variant v = {
    .name = "crash, sync=false", .mix = 220,
    .modes = host_modes, .nmodes = sizeof host_modes / sizeof host_modes[0],
    .must_cut = 1u << BG_GC | 1u << BG_CKPT | 1u << BG_ERASE,
    .no_sync = true,
  };
  unit_quiet = true;            /* a message per page lost */
  crash_every_event (&v);
}
END_TEST

/* Syncs among the events recorded in f. */
static unsigned
count_syncs (const struct unit_fault *f)
{
  unsigned n = 0;

  for (size_t i = 0; i < f->n; i++)
    n += f->ev[i].kind == UNIT_EV_SYNC;
  return n;
}

/* The format version of both superblock copies of path (0 if they
 * differ or one does not decode).
 */
static uint32_t
sb_versions (const char *path)
{
  uint8_t buf[FTL_SB_BYTES];
  struct ftl_superblock sb[2];

  for (int s = 0; s < 2; s++) {
    unit_read_file (path, buf, sizeof buf, s * FTL_SB_SLOT);
    if (fmt_sb_decode (buf, sizeof buf, &sb[s], NULL, 0) != FTL_FMT_OK)
      return 0;
  }
  return sb[0].version == sb[1].version ? sb[0].version : 0;
}

/* sync=false on an image of format version 4 (no flags in its
 * superblock): it opens, becomes version 5 in both superblock copies
 * (so that a program that reads up to version 4 refuses it from then
 * on), at the cost of one sync more at that open only; then each
 * sync=false open syncs once (the mark), each close twice, and a
 * session writes no sync between.
 */
START_TEST (test_unsynced_version_4)
{
  struct unit_fault f;
  struct ftl *ftl;
  uint8_t buf[FTL_SB_BYTES];
  char err[256];
  int r;

  unit_fault_init (&f);
  no_sync = false;
  ftl = open_image (img, unit_nosync_io (), err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert_int_eq (write_whole_page (ftl, 5, 1), 0);
  ck_assert_int_eq (ftl_close (ftl), 0);
  /* Both copies as a version 4 program writes them, its checksums
   * seeded with the PPN.
   */
  unit_seed_by_ppn (img);
  for (int s = 0; s < 2; s++) {
    struct ftl_superblock sb;
    unit_read_file (img, buf, sizeof buf, s * FTL_SB_SLOT);
    ck_assert_int_eq (fmt_sb_decode (buf, sizeof buf, &sb, NULL, 0),
                      FTL_FMT_OK);
    sb.version = 4;
    fmt_sb_encode (&sb, buf);
    int fd = open (img, O_WRONLY | O_CLOEXEC);
    ck_assert_int_eq (pwrite (fd, buf, sizeof buf, s * FTL_SB_SLOT),
                      (ssize_t) sizeof buf);
    close (fd);
  }
  ck_assert_uint_eq (sb_versions (img), 4);

  no_sync = true;
  for (unsigned round = 0; round < 2; round++) {
    unit_fault_reset (&f);
    ftl = open_image (img, &f.io, err, sizeof err, &r);
    ck_assert_msg (r == 0, "%s", err);
    ck_assert_uint_eq (count_syncs (&f), round == 0 ? 2 : 1);
    ck_assert_uint_eq (sb_versions (img), FTL_FORMAT_VERSION);
    ck_assert (ftl->sb.flags & FTL_SB_UNSYNCED);
    expect_page (ftl, 5, round + 1, "version 4, sync=false");
    unit_fault_reset (&f);
    for (uint32_t p = 0; p < LP; p++)
      ck_assert_int_eq (write_whole_page (ftl, p, round + 2), 0);
    ck_assert_int_eq (ftl_flush (ftl), 0);
    ck_assert_int_eq (ftl_write (ftl, buf, SECT, 0, FTL_FUA), 0);
    ck_assert_int_eq (ftl_trim (ftl, 2 * PS, 8 * PS, 0), 0);
    ck_assert_int_eq (ftl_flush (ftl), 0);
    ck_assert_uint_eq (count_syncs (&f), 0);
    ck_assert_uint_gt (f.n, LP);
    unit_fault_reset (&f);
    ck_assert_int_eq (write_whole_page (ftl, 5, round + 2), 0);
    ck_assert_int_eq (ftl_close (ftl), 0);
    ck_assert_uint_eq (count_syncs (&f), 2);
  }
  /* Cleanly closed: no mark, nothing to verify. */
  ftl = open_image (img, unit_nosync_io (), err, sizeof err, &r);
  ck_assert_msg (r == 0, "%s", err);
  ck_assert (!ftl->unsynced_found);
  expect_page (ftl, 5, 3, "version 4, after sync=false");
  ck_assert_int_eq (ftl_close (ftl), 0);
  no_sync = false;
  unit_fault_free (&f);
}
END_TEST

/* Does checkpoint slot i of img hold a whole checkpoint for this
 * geometry: a header that decodes and a body that matches its checksum?
 */
static bool
slot_valid (const char *path, const struct ftl_superblock *sb, int i,
            struct ftl_ckpt_header *h)
{
  uint8_t hb[FTL_CKPT_HDR_BYTES];
  uint8_t *body;
  bool ok;

  unit_read_file (path, hb, sizeof hb, sb->ckpt_offset[i]);
  if (fmt_ckpt_header_decode (hb, sizeof hb, h) != FTL_FMT_OK) {
    h->generation = 0;
    return false;
  }
  if (h->logical_pages != LP || h->pages_per_block != PPB ||
      h->body_bytes > unit_file_size (path))
    return false;
  body = malloc (h->body_bytes);
  ck_assert_ptr_nonnull (body);
  unit_read_file (path, body, h->body_bytes,
                  sb->ckpt_offset[i] + FTL_CKPT_HDR_BYTES);
  ok = fmt_checksum (body, h->body_bytes, 0) == h->body_checksum;
  free (body);
  return ok;
}

/* The newest checkpoint damaged (a byte of its body flipped) at every
 * event after the second checkpoint.  Where the other slot holds a
 * whole checkpoint, recovery must fall back to it and roll forward to
 * a state the model allows; only where it does not (the crash tore the
 * older slot while it was being rewritten) may the image be refused,
 * and then with "no valid checkpoint".  Never wrong data.
 */
START_TEST (test_damaged_newest_checkpoint)
{
  static struct walk w;
  struct unit_fault f;
  struct unit_disk d;
  struct ctx c = { 0 };
  size_t nops;
  long *op_start, *op_end;
  struct op *ops;
  uint64_t got[NSECT];
  unsigned recovered = 0, refused = 0;
  char what[512];

  ck_assert_uint_eq (LP * PS, SIZE);
  printf ("damaged checkpoint: seed %" PRIu64 "\n", seed);
  unit_fault_init (&f);
  cache_bytes = 0;
  ops = record (&f, &c, 220, &nops, &op_start, &op_end);
  unit_disk_init (&d, &f, start);
  memset (&w, 0, sizeof w);
  w = (struct walk) { .ops = ops, .nops = nops, .op_start = op_start,
                      .op_end = op_end, .c = &c };
  unit_quiet = true;

  for (size_t n = 0; n <= f.n; n++) {
    uint64_t rng = seed ^ (n * 0xD1B54A32D192ED03ULL);
    struct ftl_superblock sb;
    struct ftl_ckpt_header h[2];
    uint8_t buf[FTL_SB_SLOT];
    struct unit_cut_info info;
    struct ftl *ftl;
    char err[256];
    int r, newest;
    bool valid[2], fallback;

    walk_to (&w, n);
    if (only >= 0 && (long) n != only)
      continue;
    unit_disk_cut (&d, n, UNIT_CUT_ORDER, &rng, img, &info);
    unit_read_file (img, buf, FTL_SB_BYTES, 0);
    ck_assert_int_eq (fmt_sb_decode (buf, FTL_SB_BYTES, &sb, NULL, 0),
                      FTL_FMT_OK);
    for (int i = 0; i < 2; i++)
      valid[i] = slot_valid (img, &sb, i, &h[i]);
    if (h[0].generation < 2 && h[1].generation < 2)
      continue;                 /* no older checkpoint to fall back to */
    newest = h[1].generation > h[0].generation;
    fallback = valid[1 - newest];
    uint64_t off = sb.ckpt_offset[newest] + FTL_CKPT_HDR_BYTES
      + unit_rnd (&rng) % h[newest].body_bytes;
    unit_flip_byte (img, off, 1u << (unit_rnd (&rng) % 8));
    snprintf (what, sizeof what, "seed %" PRIu64 ", event %zu of %zu (op "
              "%zu), checkpoint %" PRIu64 " damaged at byte %" PRIu64 "; "
              "the other slot %s", seed, n, f.n, w.k, h[newest].generation,
              off - sb.ckpt_offset[newest], fallback
              ? "holds a whole checkpoint" : "does not");

    ftl = open_image (img, unit_nosync_io (), err, sizeof err, &r);
    if (r < 0) {
      ck_assert_msg (!fallback, "%s: open failed with '%s'", what, err);
      ck_assert_msg (strstr (err, "no valid checkpoint") != NULL, "%s: "
                     "open failed with '%s'", what, err);
      refused++;
      continue;
    }
    ck_assert_msg (fallback, "%s: the image opened", what);
    open_abandon (ftl);
    check_image (img, NULL, &w.m, w.inflight, w.ec_min, got, what);
    recovered++;
  }
  printf ("damaged checkpoint: %u images recovered from the older "
          "checkpoint, %u refused to open\n", recovered, refused);
  ck_assert (only >= 0 || recovered + refused > 500);
  ck_assert (only >= 0 || recovered > 10 * refused);

  unit_disk_free (&d);
  unit_fault_free (&f);
  model_free (&w.m);
  free (op_start);
  free (op_end);
  free (ops);
  free (c.snap_ev);
  free (c.snap_ec);
}
END_TEST

/* ---- a power cut while an image is created ---- */

/* Read path whole into buf (at most cap bytes); returns its size. */
static uint64_t
read_whole (const char *path, uint8_t *buf, size_t cap)
{
  uint64_t len = unit_file_size (path);

  ck_assert_uint_le (len, cap);
  if (len > 0)
    unit_read_file (path, buf, len, 0);
  return len;
}

/* The power-cut model with size changes and a new file's name, on a
 * trace made by hand: a new file grown to 3000 bytes, 600 bytes
 * written at 1000, a sync, grown to 5000, 100 bytes written at 4500,
 * its directory synced.
 */
START_TEST (test_power_cut_model)
{
  struct unit_fault f;
  struct unit_disk d;
  struct unit_cut_info info;
  uint8_t a[600], b[100], got[8192];
  uint64_t rng = 1;
  int fd;

  memset (a, 0xaa, sizeof a);
  memset (b, 0xbb, sizeof b);
  unit_fault_init (&f);
  fd = open (img, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  ck_assert_int_ge (fd, 0);
  ck_assert_int_eq (f.io.set_size (f.io.opaque, fd, 3000), 0);
  ck_assert_int_eq (f.io.pwrite (f.io.opaque, fd, a, sizeof a, 1000), 0);
  ck_assert_int_eq (f.io.sync (f.io.opaque, fd), 0);
  ck_assert_int_eq (f.io.set_size (f.io.opaque, fd, 5000), 0);
  ck_assert_int_eq (f.io.pwrite (f.io.opaque, fd, b, sizeof b, 4500), 0);
  ck_assert_int_eq (f.io.sync_dir (f.io.opaque, img), 0);
  close (fd);
  ck_assert_uint_eq (f.n, 6);
  ck_assert_int_eq (f.ev[0].kind, UNIT_EV_RESIZE);
  ck_assert_int_eq (f.ev[5].kind, UNIT_EV_SYNC_DIR);
  unit_disk_init (&d, &f, NULL);

  /* During the first size change: no file, or an empty one, or one of
   * 3000 zeros.
   */
  unit_disk_cut (&d, 0, UNIT_CUT_NONE, &rng, img2, &info);
  ck_assert (info.absent);
  ck_assert_int_eq (access (img2, F_OK), -1);
  unit_disk_cut (&d, 0, UNIT_CUT_ORDER, &rng, img2, &info);
  ck_assert (!info.absent);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 3000);
  for (int i = 0; i < 3000; i++)
    ck_assert_uint_eq (got[i], 0);

  /* The first write torn after one sector, the size change lost: the
   * write alone makes the file 1512 bytes long.
   */
  unit_disk_cut_at (&d, 1, 512, false, img2, &info);
  ck_assert_uint_eq (info.resizes, 1);
  ck_assert_uint_eq (info.resizes_applied, 0);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 1512);
  for (int i = 0; i < 1512; i++)
    ck_assert_uint_eq (got[i], i < 1000 ? 0 : 0xaa);
  unit_disk_cut_at (&d, 1, 0, true, img2, &info);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 3000);
  /* Only its second piece between 512-byte boundaries ([1024, 1536)
   * of [1000, 1024), [1024, 1536), [1536, 1600)).
   */
  ck_assert_uint_eq (unit_ev_sectors (&f.ev[1]), 3);
  unit_disk_cut_sectors (&d, 1, 2, false, img2, &info);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 1536);
  for (int i = 0; i < 1536; i++)
    ck_assert_uint_eq (got[i], i < 1024 ? 0 : 0xaa);

  /* After the sync: 3000 bytes are durable; the second write reaches
   * the file without the size change before it: 4600 bytes, zeros
   * between.
   */
  unit_disk_cut_at (&d, 4, sizeof b, false, img2, &info);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 4600);
  for (int i = 0; i < 4600; i++)
    ck_assert_uint_eq (got[i], i >= 1000 && i < 1600 ? 0xaa
                       : i >= 4500 ? 0xbb : 0);

  /* After the directory sync the file keeps its name even when every
   * pending change is lost.
   */
  unit_disk_cut (&d, 6, UNIT_CUT_NONE, &rng, img2, &info);
  ck_assert (!info.absent);
  ck_assert_uint_eq (read_whole (img2, got, sizeof got), 3000);
  unit_disk_free (&d);
  unit_fault_free (&f);
}
END_TEST

/* What a file left by a power cut during creation is, before it is
 * opened again.
 */
enum pre_state {
  PRE_BLANK,                    /* no file, or only zeros */
  PRE_WHOLE,                    /* a superblock copy decodes */
  PRE_PARTIAL,                  /* anything else */
};

/* The three ways of opening it again. */
enum reopen { REOPEN_CREATE, REOPEN_RW, REOPEN_RO, NREOPEN };
static const char *const reopen_names[NREOPEN] = {
  "with the options that created it", "without size=", "read-only",
};

enum { CR_REFUSED, CR_OPENED, CR_RECREATED, NCR };

struct creation {
  struct unit_fault f;
  struct unit_disk d;
  uint64_t uuid[2];             /* of the image the run created */
  uint64_t ckpt_off;            /* checkpoint slot 0 */
  long sb_synced;               /* the sync after superblock copy A */
  long dir_synced;              /* the sync of the directory */
  char cut[256], try[256];
  uint8_t *buf;                 /* the file a cut left */
  uint64_t *seen;               /* hashes of the files opened */
  size_t nseen, capseen;
  unsigned points, mode_cuts, tear_cuts, files, reopens;
  unsigned by_class[NCR], cut_short, not_image, give_size, absent;
};

/* Record the creation: ftl_open of a new file, up to its return. */
static void
creation_record (struct creation *cr, const char *path)
{
  struct ftl *ftl;
  char err[256];
  int r;

  unit_fault_init (&cr->f);
  ck_assert_int_eq (access (path, F_OK), -1);
  ftl = open_image (path, &cr->f.io, err, sizeof err, &r);
  ck_assert_msg (r == 0, "creating the image: %s", err);
  memcpy (cr->uuid, ftl->sb.uuid, sizeof cr->uuid);
  cr->ckpt_off = ftl->sb.ckpt_offset[0];
  open_abandon (ftl);

  cr->sb_synced = cr->dir_synced = -1;
  for (size_t i = 0; i < cr->f.n; i++) {
    const struct unit_ev *e = &cr->f.ev[i];
    if (cr->sb_synced == -2 && e->kind == UNIT_EV_SYNC)
      cr->sb_synced = i;
    if (cr->sb_synced == -1 && e->kind == UNIT_EV_PWRITE && e->off == 0)
      cr->sb_synced = -2;
    if (cr->dir_synced == -1 && e->kind == UNIT_EV_SYNC_DIR)
      cr->dir_synced = i;
  }
  ck_assert_int_eq (cr->f.ev[0].kind, UNIT_EV_RESIZE);
  ck_assert_msg (cr->sb_synced >= 0, "no sync after superblock copy A");
  ck_assert_msg (cr->dir_synced >= 0, "the directory is never synced");
  unit_disk_init (&cr->d, &cr->f, NULL);
  cr->buf = malloc (cr->d.cap + 1);
  ck_assert_ptr_nonnull (cr->buf);
}

/* What the file a cut left (len bytes in cr->buf, if present) is; *ours
 * says whether a partial one shows that our creation was cut short.
 */
static enum pre_state
pre_state (const struct creation *cr, bool present, uint64_t len,
           bool *ours)
{
  const uint8_t *b = cr->buf;
  struct ftl_superblock sb;
  bool zero = true;

  *ours = false;
  for (uint64_t i = 0; i < len && zero; i++)
    zero = b[i] == 0;
  if (!present || zero)
    return PRE_BLANK;
  for (int i = 0; i < 2; i++)
    if (len > (uint64_t) i * FTL_SB_SLOT &&
        fmt_sb_decode (b + i * FTL_SB_SLOT,
                       MIN (len - i * FTL_SB_SLOT, FTL_SB_SLOT), &sb, NULL,
                       0) == FTL_FMT_OK)
      return PRE_WHOLE;
  /* Superblock copy B never written, and the start of our checkpoint
   * where slot 0 goes.
   */
  *ours = len >= cr->ckpt_off + 8 &&
    memcmp (b + cr->ckpt_off, FTL_CKPT_MAGIC, 8) == 0;
  for (size_t i = FTL_SB_SLOT; i < FTL_SB_SLOT + FTL_SB_BYTES && *ours; i++)
    *ours = b[i] == 0;
  return PRE_PARTIAL;
}

/* Sectors written by check_new_image, and the version of each. */
static const struct { uint32_t sector, n; uint64_t version; } new_writes[] = {
  { 3 * SPP, SPP, 1 },          /* a page */
  { 7 * SPP + 1, 2, 2 },        /* two sectors inside a page */
  { NSECT - SPP - 1, SPP + 1, 3 },      /* across the last two pages */
};

/* Read the whole disk: each sector holds its own pattern at the version
 * that new_writes gave it (all zeros if written is false).
 */
static void
expect_new_writes (struct ftl *ftl, bool written, const char *what)
{
  static uint8_t buf[SIZE];
  int r = ftl_read (ftl, buf, SIZE, 0);

  if (r != 0)
    ck_abort_msg ("%s: read failed: %s", what, strerror (-r));
  for (uint32_t s = 0; s < NSECT; s++) {
    uint64_t id = s, v = 0, want = 0;
    if (written)
      for (size_t i = 0; i < sizeof new_writes / sizeof new_writes[0]; i++)
        if (s >= new_writes[i].sector &&
            s < new_writes[i].sector + new_writes[i].n)
          want = new_writes[i].version;
    if (unit_page_identify (buf + (size_t) s * SECT, SECT, &id, &v) < 0 ||
        (v && id != s) || v != want)
      ck_abort_msg ("%s: sector %u reads version %" PRIu64 " of sector %"
                    PRIu64 ", expected version %" PRIu64 " (0: zeros)",
                    what, s, v, id, want);
  }
}

/* An image that opened: it has the geometry it was created with and
 * holds only zeros; writes, a flush and a read give back what was
 * written, and so does a reopen.  Closes ftl.
 */
static void
check_new_image (struct ftl *ftl, const char *path, bool readonly,
                 const char *what)
{
  uint8_t buf[(SPP + 1) * SECT];
  struct ftl_geometry g;
  char err[256];
  int r;

  ftl_get_geometry (ftl, &g);
  if (g.logical_bytes != SIZE || g.page_size != PS ||
      g.pages_per_block != PPB)
    ck_abort_msg ("%s: opened with another geometry", what);
  expect_new_writes (ftl, false, what);
  if (!readonly) {
    for (size_t i = 0; i < sizeof new_writes / sizeof new_writes[0]; i++) {
      for (uint32_t j = 0; j < new_writes[i].n; j++)
        unit_fill_page (buf + (size_t) j * SECT, SECT,
                        new_writes[i].sector + j, new_writes[i].version);
      r = ftl_write (ftl, buf, (uint64_t) new_writes[i].n * SECT,
                     (uint64_t) new_writes[i].sector * SECT, 0);
      if (r != 0)
        ck_abort_msg ("%s: write failed: %s", what, strerror (-r));
    }
    if ((r = ftl_flush (ftl)) != 0)
      ck_abort_msg ("%s: flush failed: %s", what, strerror (-r));
    expect_new_writes (ftl, true, what);
  }
  if ((r = ftl_close (ftl)) != 0)
    ck_abort_msg ("%s: close failed: %s", what, strerror (-r));
  if (readonly)
    return;
  if ((r = unit_try_open (path, unit_nosync_io (), &ftl, err,
                          sizeof err)) != 0)
    ck_abort_msg ("%s: the image does not open again: %s", what, err);
  expect_new_writes (ftl, true, what);
  if ((r = ftl_close (ftl)) != 0)
    ck_abort_msg ("%s: close failed: %s", what, strerror (-r));
}

/* Open the file a cut left (a copy of it) one way, and check what
 * happens against what the file is.
 */
static void
creation_reopen (struct creation *cr, bool present, uint64_t len,
                 enum pre_state pre, bool ours, enum reopen how,
                 const char *what1)
{
  struct ftl_options o = {
    .path = cr->try, .log = unit_log, .io = unit_nosync_io (),
    .readonly = how == REOPEN_RO,
  };
  struct ftl *ftl = NULL;
  char err[256], what[1024];
  const char *want;
  int r;

  snprintf (what, sizeof what, "%s, opened %s", what1, reopen_names[how]);
  if (present)
    unit_copy_file (cr->cut, cr->try);
  else if (unlink (cr->try) == -1 && errno != ENOENT)
    ck_abort_msg ("unlink %s: %s", cr->try, strerror (errno));
  if (how == REOPEN_CREATE)
    ftl = open_image (cr->try, unit_nosync_io (), err, sizeof err, &r);
  else
    r = ftl_open (&o, &ftl, err, sizeof err);
  cr->reopens++;

  if (r == 0) {
    bool same = memcmp (ftl->sb.uuid, cr->uuid, sizeof cr->uuid) == 0;
    if (pre == PRE_PARTIAL)
      ck_abort_msg ("%s: a file whose creation was cut short opened",
                    what);
    if (pre == PRE_WHOLE && !same)
      ck_abort_msg ("%s: a whole image was created again", what);
    if (pre == PRE_BLANK && (same || how != REOPEN_CREATE))
      ck_abort_msg ("%s: a blank file opened %s", what,
                    same ? "as the old image" : "without size=");
    cr->by_class[same ? CR_OPENED : CR_RECREATED]++;
    check_new_image (ftl, cr->try, how == REOPEN_RO, what);
    return;
  }

  cr->by_class[CR_REFUSED]++;
  if (pre == PRE_WHOLE)
    ck_abort_msg ("%s: a whole image was refused: %s", what, err);
  if (pre == PRE_BLANK && how == REOPEN_CREATE)
    ck_abort_msg ("%s: a blank file was not created again: %s", what, err);
  if (pre == PRE_BLANK) {
    want = !present ? "no such file (give a size to create a new image)"
      : len == 0 ? "the file is empty: give a size to create a new image"
      : "the file holds only zeros: give a size to create a new image";
    cr->give_size++;
  }
  else if (ours) {
    want = CREATE_CUT_SHORT;
    cr->cut_short++;
  }
  else {
    want = "not an nbdkit-ftl image (no superblock found)";
    cr->not_image++;
  }
  if (strcmp (err, want) != 0)
    ck_abort_msg ("%s: refused with '%s', expected '%s'", what, err, want);
  /* Left as it was. */
  if (!present) {
    if (access (cr->try, F_OK) == 0)
      ck_abort_msg ("%s: a file was made", what);
    return;
  }
  if (unit_file_size (cr->try) != len)
    ck_abort_msg ("%s: the file changed size", what);
  uint8_t *after = malloc (len + 1);
  ck_assert_ptr_nonnull (after);
  if (len > 0)
    unit_read_file (cr->try, after, len, 0);
  if (memcmp (after, cr->buf, len) != 0)
    ck_abort_msg ("%s: the file changed", what);
  free (after);
}

/* The file that a cut during event n left: where the run had got to
 * bounds what it may be; a file not opened before is opened every way.
 */
static void
creation_check (struct creation *cr, size_t n,
                const struct unit_cut_info *info, const char *what)
{
  bool present = access (cr->cut, F_OK) == 0, ours;
  uint64_t len = present ? unit_file_size (cr->cut) : 0, h;
  enum pre_state pre;

  ck_assert (present == !info->absent);
  ck_assert_uint_le (len, cr->d.cap);
  if (len > 0)
    unit_read_file (cr->cut, cr->buf, len, 0);
  pre = pre_state (cr, present, len, &ours);
  if ((long) n > cr->dir_synced && !present)
    ck_abort_msg ("%s: the file is gone after its directory was synced",
                  what);
  if ((long) n > cr->sb_synced && present && pre != PRE_WHOLE)
    ck_abort_msg ("%s: no whole superblock after superblock copy A was "
                  "synced", what);

  /* Each distinct file once. */
  h = present ? fmt_checksum (cr->buf, len, len + 1) : 0;
  for (size_t i = 0; i < cr->nseen; i++)
    if (cr->seen[i] == h)
      return;
  cr->absent += !present;
  if (cr->nseen == cr->capseen) {
    cr->capseen = cr->capseen ? 2 * cr->capseen : 64;
    cr->seen = realloc (cr->seen, cr->capseen * sizeof *cr->seen);
    ck_assert_ptr_nonnull (cr->seen);
  }
  cr->seen[cr->nseen++] = h;
  cr->files++;
  for (int how = 0; how < NREOPEN; how++)
    creation_reopen (cr, present, len, pre, ours, how, what);
}

/* Is anything pending at a cut during event n: writes or size changes
 * since the last sync, or the name of the new file?
 */
static bool
creation_pending (const struct creation *cr, size_t n)
{
  size_t end = n < cr->f.n ? n + 1 : cr->f.n;

  if ((long) n <= cr->dir_synced)
    return true;
  for (size_t i = unit_fault_last_sync (&cr->f, n) + 1; i < end; i++)
    if (cr->f.ev[i].kind == UNIT_EV_PWRITE ||
        cr->f.ev[i].kind == UNIT_EV_RESIZE)
      return true;
  return false;
}

/* The write in flight at event n torn every way: each subset of its
 * sectors (up to 8 sectors; prefixes beyond), and after chosen bytes of
 * its first sector (inside the magic, the version, the length, the
 * checksum, and the ends of the superblock and checkpoint headers);
 * with a pending size change kept and lost.
 */
static void
creation_tears (struct creation *cr, size_t n, const char *what1)
{
  char what[1024];
  static const uint64_t bytes[] = {
    1, 7, 8, 11, 12, 15, 16, 23, 24, 100, 127, 128, 255, 256, 511,
  };
  const struct unit_ev *e = &cr->f.ev[n];
  unsigned k = unit_ev_sectors (e), resizes = 0;
  struct unit_cut_info info;

  for (size_t i = unit_fault_last_sync (&cr->f, n) + 1; i < n; i++)
    resizes += cr->f.ev[i].kind == UNIT_EV_RESIZE;
  for (int keep = 1; keep >= (resizes ? 0 : 1); keep--) {
    for (uint64_t m = 0; m < (k <= 8 ? 1u << k : k + 1u); m++) {
      uint64_t mask = k <= 8 ? m : (UINT64_C (1) << m) - 1;
      unit_disk_cut_sectors (&cr->d, n, mask, keep, cr->cut, &info);
      snprintf (what, sizeof what, "%s, sectors 0x%" PRIx64 " of %u "
                "reached the file%s", what1, mask, k,
                keep ? "" : ", the size change did not");
      creation_check (cr, n, &info, what);
      cr->tear_cuts++;
    }
    for (size_t i = 0; i < sizeof bytes / sizeof bytes[0]; i++) {
      if (bytes[i] >= e->len)
        continue;
      unit_disk_cut_at (&cr->d, n, bytes[i], keep, cr->cut, &info);
      snprintf (what, sizeof what, "%s, torn after %" PRIu64 " bytes%s",
                what1, bytes[i], keep ? "" : ", the size change lost");
      creation_check (cr, n, &info, what);
      cr->tear_cuts++;
    }
  }
}

/* A power cut at every event of the creation of an image (ftl_open of
 * a new file, up to its return: its size, checkpoint slot 0, the two
 * superblock copies, the sync of the directory, the superblock marked
 * in use), cut in order, at random, in random sectors (twice) and with
 * everything pending lost; and the write in flight torn every way
 * (creation_tears).  Each distinct file left is opened again three
 * ways (with the options that created it, without size=, read-only)
 * and must be one of
 *
 *   blank      no file, or only zeros: with size= the image is created
 *              again; otherwise refused, "give a size";
 *   whole      a superblock copy decodes: opens as the image the run
 *              created (its uuid), every way;
 *   partial    anything else: refused every way and left as it is, as
 *              an incomplete image when superblock copy B is zeros and
 *              our checkpoint's magic is in slot 0, otherwise as not an
 *              image.
 *
 * An image that opens must work (check_new_image).  Once the sync after
 * superblock copy A has completed, a file that is there is whole; once
 * its directory has been synced, it is there.
 */
START_TEST (test_crash_during_creation)
{
  static const enum unit_cut_mode modes[] = {
    UNIT_CUT_ORDER, UNIT_CUT_RANDOM, UNIT_CUT_SECTORS, UNIT_CUT_SECTORS,
    UNIT_CUT_NONE,
  };
  static const char *const mode_names[] = {
    "in order", "random", "random sectors", "random sectors", "all lost",
  };
  struct creation cr = { 0 };
  double t0 = unit_now ();
  char path[256], what[512];

  printf ("creation: seed %" PRIu64 "\n", seed);
  unit_quiet = true;
  unit_path (path, sizeof path, "created.img");
  unit_path (cr.cut, sizeof cr.cut, "cut.img");
  unit_path (cr.try, sizeof cr.try, "reopened.img");
  creation_record (&cr, path);

  for (size_t n = 0; n <= cr.f.n; n++) {
    const struct unit_ev *e = n < cr.f.n ? &cr.f.ev[n] : NULL;
    static const char *const kinds[] = {
      [UNIT_EV_PWRITE] = "write", [UNIT_EV_SYNC] = "sync",
      [UNIT_EV_RESIZE] = "size change", [UNIT_EV_SYNC_DIR] = "directory sync",
    };
    uint64_t rng = seed ^ (n * 0x9E3779B97F4A7C15ULL);
    char where[128];

    if (e)
      snprintf (where, sizeof where, "a %s at %" PRIu64, kinds[e->kind],
                e->off);
    else
      snprintf (where, sizeof where, "after the open returned");
    for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++) {
      struct unit_cut_info info;
      if (i > 0 && !creation_pending (&cr, n))
        break;                  /* the same file as in order */
      unit_disk_cut (&cr.d, n, modes[i], &rng, cr.cut, &info);
      snprintf (what, sizeof what, "seed %" PRIu64 ", creation cut at event "
                "%zu of %zu (%s), %s", seed, n, cr.f.n, where,
                mode_names[i]);
      creation_check (&cr, n, &info, what);
      cr.mode_cuts++;
    }
    if (e && e->kind == UNIT_EV_PWRITE) {
      snprintf (what, sizeof what, "creation cut at event %zu of %zu (%s)",
                n, cr.f.n, where);
      creation_tears (&cr, n, what);
    }
    cr.points++;
  }

  printf ("creation: %u crash points, %u cuts (%u tearing the write in "
          "flight), %u distinct files (%u of them no file), %u opens: %u "
          "refused (%u incomplete, %u not an image, %u asking for a size), "
          "%u opened complete, %u created again, in %.1f s\n", cr.points,
          cr.mode_cuts + cr.tear_cuts, cr.tear_cuts, cr.files, cr.absent,
          cr.reopens,
          cr.by_class[CR_REFUSED], cr.cut_short, cr.not_image, cr.give_size,
          cr.by_class[CR_OPENED], cr.by_class[CR_RECREATED],
          unit_now () - t0);
  /* Every class, so that a check that never fires shows. */
  ck_assert_uint_gt (cr.absent, 0);
  ck_assert_uint_gt (cr.cut_short, 0);
  ck_assert_uint_gt (cr.give_size, 0);
  ck_assert_uint_gt (cr.by_class[CR_OPENED], 0);
  ck_assert_uint_gt (cr.by_class[CR_RECREATED], 0);

  unit_disk_free (&cr.d);
  unit_fault_free (&cr.f);
  free (cr.buf);
  free (cr.seen);
}
END_TEST

/* The storage fails during the creation of an image, from each of its
 * events on (every write, sync, size change and directory sync fails
 * with EIO): the open fails with a message that names the step, and
 * the file it created is removed.
 */
START_TEST (test_create_io_errors)
{
  struct unit_fault f, rec;
  struct ftl *ftl;
  char path[256], err[256];
  int r;

  unit_quiet = true;
  unit_path (path, sizeof path, "failing.img");
  unit_fault_init (&rec);
  ftl = open_image (path, &rec.io, err, sizeof err, &r);
  ck_assert_msg (r == 0, "creating the image: %s", err);
  open_abandon (ftl);
  ck_assert_int_eq (unlink (path), 0);

  /* The image is written, its directory synced, then it is marked in
   * use.
   */
  size_t dir = 0;
  while (dir < rec.n && rec.ev[dir].kind != UNIT_EV_SYNC_DIR)
    dir++;
  ck_assert_uint_lt (dir, rec.n);

  unit_fault_init (&f);
  for (size_t k = 0; k < rec.n; k++) {
    const char *want =
      k > dir ? "marking the image in use: " :
      k == dir ? "syncing the directory of the new image: " :
      rec.ev[k].kind == UNIT_EV_RESIZE ? "setting the image size to " :
      "writing the new image: ";

    unit_fault_reset (&f);
    f.limit = k;
    ftl = open_image (path, &f.io, err, sizeof err, &r);
    ck_assert_msg (r < 0, "event %zu failed, and the open succeeded", k);
    ck_assert_msg (strncmp (err, want, strlen (want)) == 0 &&
                   strstr (err, strerror (EIO)) != NULL,
                   "event %zu failed: '%s', expected '%s...%s'", k, err,
                   want, strerror (EIO));
    ck_assert_msg (access (path, F_OK) == -1,
                   "event %zu failed, and the file is left", k);
  }
  printf ("creation: the storage failed from each of %zu events on: "
          "refused, no file left\n", rec.n);
  unit_fault_free (&f);
  unit_fault_free (&rec);
}
END_TEST

static Suite *
crash_suite (void)
{
  Suite *s = suite_create ("crash");
  TCase *tc = tcase_create ("crash");

  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_crash_every_event);
  tcase_add_test (tc, test_crash_write_cache);
  tcase_add_test (tc, test_crash_slc);
  tcase_add_test (tc, test_damaged_newest_checkpoint);
  suite_add_tcase (s, tc);

  tc = tcase_create ("host");
  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 600);
  tcase_add_test (tc, test_crash_host);
  tcase_add_test (tc, test_unsynced_version_4);
  suite_add_tcase (s, tc);

  tc = tcase_create ("creation");
  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_set_timeout (tc, 120);
  tcase_add_test (tc, test_power_cut_model);
  tcase_add_test (tc, test_crash_during_creation);
  tcase_add_test (tc, test_create_io_errors);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (crash_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
