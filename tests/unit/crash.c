/* nbdkit-ftl: what the crash-point tests share (see crash.h and the
 * comment at the top of test-crash.c).
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "crash.h"

char base[256], start[256], img[256], img2[256], img3[256];
uint64_t seed;
uint64_t cache_bytes;
uint64_t slc_bytes;
bool no_sync;
bool with_ns;
long only = -1;

const struct ftl_ns_spec crash_ns[CRASH_NS] = {
  { "a", 8 * PS }, { "bb", 24 * PS }, { "c", 32 * PS },
};

void
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

struct ftl *
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
    .namespaces = with_ns ? crash_ns : NULL,
    .nnamespaces = with_ns ? CRASH_NS : 0,
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
bool
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

/* A request of the logical space through the namespaces its range
 * spans, a piece in each (with_ns).  kind: OP_WRITE, OP_TRIM, OP_ZERO,
 * or OP_FLUSH for a read.
 */
static int
ns_request (struct ftl *ftl, enum op_kind kind, uint8_t *buf,
            uint64_t count, uint64_t off, unsigned flags)
{
  uint64_t done = 0;
  int r = 0;

  if (ftl_ns_count (ftl) != CRASH_NS)
    ck_abort_msg ("the image has %u namespaces, not %u", ftl_ns_count (ftl),
                  CRASH_NS);
  while (r == 0 && done < count) {
    struct ftl_ns_info in;
    struct ftl_ns *ns;
    unsigned i;
    for (i = 0; (ns = ftl_ns_at (ftl, i)) != NULL; i++) {
      ftl_ns_get_info (ns, &in);
      if (strcmp (in.name, crash_ns[i].name) != 0 ||
          in.bytes != crash_ns[i].bytes)
        ck_abort_msg ("namespace %u is '%s' of %" PRIu64 " bytes, not '%s'",
                      i, in.name, in.bytes, crash_ns[i].name);
      if (off + done >= in.base && off + done < in.base + in.bytes)
        break;
    }
    if (!ns)
      ck_abort_msg ("no namespace holds logical byte %" PRIu64, off + done);
    uint64_t at = off + done - in.base, n = MIN (count - done, in.bytes - at);
    switch (kind) {
    case OP_WRITE: r = ftl_ns_write (ns, buf + done, n, at, flags); break;
    case OP_TRIM: r = ftl_ns_trim (ns, n, at, flags); break;
    case OP_ZERO: r = ftl_ns_zero (ns, n, at, flags); break;
    default: r = ftl_ns_read (ns, buf + done, n, at); break;
    }
    done += n;
  }
  return r;
}

int
crash_read (struct ftl *ftl, void *buf, uint64_t count, uint64_t off)
{
  return with_ns ? ns_request (ftl, OP_FLUSH, buf, count, off, 0)
    : ftl_read (ftl, buf, count, off);
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
    r = with_ns ? ns_request (ftl, OP_WRITE, buf, count, off, o->flags)
      : ftl_write (ftl, buf, count, off, o->flags);
    free (buf);
    return r;
  }
  case OP_TRIM:
    return with_ns ? ns_request (ftl, OP_TRIM, NULL, count, off, o->flags)
      : ftl_trim (ftl, count, off, o->flags);
  case OP_ZERO:
    return with_ns ? ns_request (ftl, OP_ZERO, NULL, count, off, o->flags)
      : ftl_zero (ftl, count, off, o->flags);
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

void
model_free (struct model *m)
{
  for (uint32_t s = 0; s < NSECT; s++)
    free (m->later[s]);
}

const char *tag_names[NTAGS] = {
  "garbage collection", "wear leveling", "checkpoint", "superblock update",
  "erase", "open", "close",
};
const char *work_names[BG_WORK__MAX] = {
  [BG_CKPT] = "checkpoint", [BG_ERASE] = "erases",
  [BG_BARRIER] = "barrier", [BG_WL] = "wear leveling",
  [BG_GC] = "garbage collection", [BG_DESTAGE] = "destage",
  [BG_RECLAIM] = "read reclaim", [BG_SCRUB] = "scrub",
  [BG_FOLD] = "SLC fold",
};

enum bg_work
ev_work (const struct unit_ev *e)
{
  return e->tag >> TAG_WORK_SHIFT;
}


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


/* Open path (recording the recovery in rec, if given), read every
 * sector and check it against the model (ops completed so far, op
 * inflight in progress), and the erase counts against ec_min.  got
 * receives each sector's version (GOT_EIO if its page read as an
 * error, which only how->eio_ok allows).
 */
void
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
      r = crash_read (ftl, buf + (size_t) p * PS, PS, (uint64_t) p * PS);
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
    r = crash_read (ftl, buf, SIZE, 0);
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

void
check_image (const char *path, struct unit_fault *rec,
             const struct model *m, const struct op *inflight,
             const uint32_t *ec_min, uint64_t *got, const char *what)
{
  check_image_how (path, rec, m, inflight, ec_min, got, what, NULL);
}

/* ---- pages lost in a crash of the host (sync=false) ---- */

/* Write page p whole, each sector at version v. */
int
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
void
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
bool
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
void
check_same (const uint64_t *want, const uint64_t *got, const char *what)
{
  for (uint32_t s = 0; s < NSECT; s++)
    if (want[s] != got[s])
      ck_abort_msg ("%s: sector %u reads version %" PRIu64
                    ", the first recovery gave %" PRIu64, what, s, got[s],
                    want[s]);
}


/* The writes pending at a crash during event n: since the last sync
 * before it, event n included.
 */
unsigned
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
struct op *
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
  ck_assert_int_eq (crash_read (ftl, check, SIZE, 0), 0);
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
void
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


void
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
