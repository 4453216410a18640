/* nbdkit-ftl: what the crash-point tests share (crash.c): the
 * geometry of their image, the scripted workload and its reference
 * model, the classification of the recorded events, the checks of an
 * image that a cut left, and the recording of a run.  test-crash.c
 * enumerates the crash points of a workload, test-crash-create.c those
 * of the creation of an image.
 */

#ifndef FTL_TEST_CRASH_H
#define FTL_TEST_CRASH_H

#include <stdbool.h>
#include <stdint.h>

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

/* ---- the workload ---- */

enum op_kind { OP_WRITE, OP_TRIM, OP_ZERO, OP_FLUSH, OP_REOPEN, OP_STEP };

struct op {
  enum op_kind kind;
  uint32_t sector, n;           /* range in sectors */
  unsigned flags;
  uint64_t version;             /* write: sectors get this version */
};

/* ---- the reference model, per sector ---- */

struct model {
  uint64_t durable[NSECT];      /* 0: zeros */
  uint64_t last[NSECT];
  uint64_t *later[NSECT];       /* values written since it was durable */
  size_t nlater[NSECT], cap[NSECT];
};

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

/* ---- the test ---- */

struct counts {
  unsigned points, images, by_tag[NTAGS], second, second_images;
  unsigned torn, dropped, torn_writes, multi_torn, subsets;
  /* sync=false: images left by a crash of the host, those with pages
   * that read as errors (and how many), those whose open found the mark.
   */
  unsigned host, host_eio, eio_pages, marks, exercised;
};

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

/* Set by setup (a checked fixture) and by the variants of the tests. */
extern char base[256], start[256], img[256], img2[256], img3[256];
extern uint64_t seed;
extern uint64_t cache_bytes;    /* the write cache of the variant run */
extern uint64_t slc_bytes;      /* its SLC cache's static part (and a
                                 * dynamic part as free space allows) */
extern bool no_sync;            /* sync=false (the host-crash variant) */
extern bool with_ns;            /* the image in three namespaces (crash_ns),
                                 * every request through them */
extern long only;               /* FTL_CRASH_EVENT: check one point */

extern const char *tag_names[NTAGS];
extern const char *work_names[BG_WORK__MAX];

/* The namespaces of with_ns: the logical space in three, a boundary
 * inside the hot region of the mix.
 */
#define CRASH_NS 3
extern const struct ftl_ns_spec crash_ns[CRASH_NS];

/* Read count bytes at off of the logical space: with with_ns through
 * the namespaces that the range spans, a piece per namespace, after
 * checking that the image has crash_ns; else with ftl_read.
 */
int
crash_read (struct ftl *ftl, void *buf, uint64_t count, uint64_t off);

void
setup (void);

struct ftl *
open_image (const char *path, const struct ftl_io *io, char *err,
            size_t errlen, int *rp);

bool
op_sets (const struct op *o, uint32_t s, uint64_t *v);

void
model_free (struct model *m);

enum bg_work
ev_work (const struct unit_ev *e);

void
check_image_how (const char *path, struct unit_fault *rec,
                 const struct model *m, const struct op *inflight,
                 const uint32_t *ec_min, uint64_t *got, const char *what,
                 struct check_how *how);

void
check_image (const char *path, struct unit_fault *rec,
             const struct model *m, const struct op *inflight,
             const uint32_t *ec_min, uint64_t *got, const char *what);

int
write_whole_page (struct ftl *ftl, uint32_t p, uint64_t v);

void
expect_page (struct ftl *ftl, uint32_t p, uint64_t v, const char *what);

bool
exercise_lost (const char *path, const uint64_t *got, const char *what);

void
check_same (const uint64_t *want, const uint64_t *got, const char *what);

unsigned
pending_writes (const struct unit_fault *f, size_t n);

struct op *
record (struct unit_fault *f, struct ctx *c, unsigned mixn, size_t *nops,
        long **op_start, long **op_end);

void
second_crash (struct unit_fault *rec, const uint64_t *want,
              const uint32_t *ec_min, uint64_t *rng, const char *what1,
              struct counts *cnt);

void
walk_to (struct walk *w, size_t n);

#endif /* FTL_TEST_CRASH_H */
