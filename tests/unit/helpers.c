/* nbdkit-ftl: helpers shared by the Check unit tests.  See helpers.h. */

#include <config.h>

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "helpers.h"
#include "ftl-internal.h"
#include "nand/media.h"

#define UNIT_DIR_TEMPLATE "/tmp/ftl-unit.XXXXXX"

char unit_dir[64];
char unit_last_error[512];
bool unit_quiet;
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;

void
unit_dir_create (void)
{
  strcpy (unit_dir, UNIT_DIR_TEMPLATE);
  if (mkdtemp (unit_dir) == NULL) {
    perror ("mkdtemp");
    abort ();
  }
}

/* Remove the files in the directory (the tests create no
 * subdirectories).
 */
static void
empty_dir (void)
{
  DIR *d;
  struct dirent *e;
  char p[512];

  if (!unit_dir[0] || !(d = opendir (unit_dir)))
    return;
  while ((e = readdir (d)) != NULL) {
    if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
      continue;
    snprintf (p, sizeof p, "%s/%s", unit_dir, e->d_name);
    unlink (p);
  }
  closedir (d);
}

void
unit_dir_remove (void)
{
  if (!unit_dir[0])
    return;
  empty_dir ();
  if (rmdir (unit_dir) == -1)
    perror (unit_dir);
  unit_dir[0] = '\0';
}

void
unit_dir_clean (void)
{
  empty_dir ();
  unit_quiet = false;
  unit_last_error[0] = '\0';
}

void
unit_path (char *buf, size_t len, const char *name)
{
  ck_assert_msg (unit_dir[0], "no temporary directory (fixture missing?)");
  snprintf (buf, len, "%s/%s", unit_dir, name);
}

int
unit_oob_at (struct ftl *ftl, uint32_t ppn, struct ftl_oob *o)
{
  uint8_t buf[FTL_OOB_BYTES];
  uint32_t b = media_ppn_block (&ftl->media, ppn);
  int r = media_read_oob (&ftl->media, b, media_ppn_page (&ftl->media, ppn),
                          1, buf);

  if (r < 0)
    return r;
  return fmt_oob_decode (buf, sizeof buf, o) == FTL_FMT_OK ? 0 : -EINVAL;
}

static int
nosync (void *opaque, int fd)
{
  return 0;
}

static int
nosync_dir (void *opaque, const char *path)
{
  return 0;
}

static struct ftl_io nosync_io;

static void
nosync_io_init (void)
{
  nosync_io = media_default_io;
  nosync_io.sync = nosync;
  nosync_io.sync_dir = nosync_dir;
}

const struct ftl_io *
unit_nosync_io (void)
{
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once (&once, nosync_io_init);
  return &nosync_io;
}

void
unit_log (void *opaque, enum ftl_log_level level, const char *msg)
{
  if (level != FTL_LOG_ERROR)
    return;
  pthread_mutex_lock (&log_lock);
  snprintf (unit_last_error, sizeof unit_last_error, "%s", msg);
  pthread_mutex_unlock (&log_lock);
  if (!unit_quiet)
    fprintf (stderr, "ftl error: %s\n", msg);
}

int
unit_try_open (const char *path, const struct ftl_io *io, struct ftl **ftlp,
               char *err, size_t errlen)
{
  struct ftl_options o = {
    .path = path, .log = unit_log, .io = io,
  };
  return ftl_open (&o, ftlp, err, errlen);
}

struct ftl *
unit_open (const char *path, uint64_t size, uint32_t ps, uint32_t ppb,
           double op, unsigned streams, const struct ftl_io *io)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = size, .page_size = ps,
    .pages_per_block = ppb, .op_percent = op, .streams = streams,
    .log = unit_log, .io = io,
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);
  ck_assert_msg (r == 0, "ftl_open %s: %s", path, err);
  return ftl;
}

struct ftl *
unit_open_cached (const char *path, uint64_t size, uint32_t ps, uint32_t ppb,
                  double op, unsigned streams, uint64_t cache_bytes,
                  const struct ftl_io *io)
{
  struct ftl_options o = {
    .path = path, .logical_bytes = size, .page_size = ps,
    .pages_per_block = ppb, .op_percent = op, .streams = streams,
    .log = unit_log, .io = io,
    .write_cache_bytes = cache_bytes,
  };
  struct ftl *ftl;
  char err[256];
  int r = ftl_open (&o, &ftl, err, sizeof err);
  ck_assert_msg (r == 0, "ftl_open %s: %s", path, err);
  return ftl;
}

bool
unit_is_erase_write (const struct media *geo, uint64_t off, uint64_t len,
                     const uint8_t *data, uint32_t *blk)
{
  uint64_t meta_bytes = (uint64_t) geo->meta_pages << geo->page_shift;
  uint64_t in;

  if (!geo->blocks || !media_meta_at (geo, off, blk, &in) ||
      in != FTL_BLKHDR_BYTES || len != meta_bytes - 2 * FTL_BLKHDR_BYTES)
    return false;
  for (uint64_t i = 0; i < len; i++)
    if (data[i])
      return false;
  return true;
}

uint64_t
unit_rnd (uint64_t *s)
{
  uint64_t x = *s;
  x ^= x >> 12; x ^= x << 25; x ^= x >> 27;
  *s = x;
  return x * 0x2545F4914F6CDD1DULL;
}

/* The pattern: "FTLUNIT" tag, LPN, version, then a pseudo-random stream
 * seeded by both, so that two different pages never share content.
 */
static const char page_tag[8] = "FTLUNIT";

static uint64_t
pattern_seed (uint64_t lpn, uint64_t version)
{
  uint64_t s = (lpn + 1) * 0x9E3779B97F4A7C15ULL ^ version * 0xC2B2AE3D27D4EB4FULL;
  return s ? s : 1;
}

static void
put_le64 (uint8_t *p, uint64_t v)
{
  for (int i = 0; i < 8; i++) p[i] = v >> (8 * i);
}

static uint64_t
get_le64 (const uint8_t *p)
{
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

void
unit_fill_page (uint8_t *page, uint32_t ps, uint64_t lpn, uint64_t version)
{
  uint64_t s = pattern_seed (lpn, version);

  ck_assert_uint_ge (ps, 32);
  ck_assert_uint_ne (version, 0);
  memcpy (page, page_tag, 8);
  put_le64 (page + 8, lpn);
  put_le64 (page + 16, version);
  for (uint32_t i = 24; i < ps; i += 8) {
    uint64_t v = unit_rnd (&s);
    uint8_t b[8];
    put_le64 (b, v);
    memcpy (page + i, b, ps - i < 8 ? ps - i : 8);
  }
}

int
unit_page_identify (const uint8_t *page, uint32_t ps, uint64_t *lpn,
                    uint64_t *version)
{
  uint64_t s;
  bool zero = true;

  for (uint32_t i = 0; i < ps && zero; i++)
    zero = page[i] == 0;
  if (zero) {
    *version = 0;
    return 0;
  }
  if (memcmp (page, page_tag, 8) != 0)
    return -1;
  *lpn = get_le64 (page + 8);
  *version = get_le64 (page + 16);
  if (*version == 0)
    return -1;
  s = pattern_seed (*lpn, *version);
  for (uint32_t i = 24; i < ps; i += 8) {
    uint8_t b[8];
    put_le64 (b, unit_rnd (&s));
    if (memcmp (page + i, b, ps - i < 8 ? ps - i : 8) != 0)
      return -1;
  }
  return 1;
}

void
unit_copy_file (const char *from, const char *to)
{
  int in = open (from, O_RDONLY | O_CLOEXEC);
  int out = open (to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  char buf[65536];
  ssize_t n;

  ck_assert_msg (in >= 0, "open %s: %s", from, strerror (errno));
  ck_assert_msg (out >= 0, "open %s: %s", to, strerror (errno));
  while ((n = read (in, buf, sizeof buf)) > 0)
    ck_assert_int_eq (write (out, buf, n), n);
  ck_assert_int_eq (n, 0);
  close (in);
  ck_assert_int_eq (close (out), 0);
}

void
unit_flip_byte (const char *path, uint64_t off, uint8_t mask)
{
  int fd = open (path, O_RDWR | O_CLOEXEC);
  uint8_t b;

  ck_assert_msg (fd >= 0, "open %s: %s", path, strerror (errno));
  ck_assert_int_eq (pread (fd, &b, 1, off), 1);
  b ^= mask;
  ck_assert_int_eq (pwrite (fd, &b, 1, off), 1);
  close (fd);
}

void
unit_read_file (const char *path, void *buf, size_t len, uint64_t off)
{
  int fd = open (path, O_RDONLY | O_CLOEXEC);

  ck_assert_msg (fd >= 0, "open %s: %s", path, strerror (errno));
  ck_assert_int_eq (pread (fd, buf, len, off), (ssize_t) len);
  close (fd);
}

void
unit_seed_by_ppn (const char *path)
{
  int fd = open (path, O_RDWR | O_CLOEXEC);
  uint8_t slot[FTL_SB_BYTES];
  struct ftl_superblock sb[2];
  bool ok[2];
  int best = -1;

  ck_assert_msg (fd >= 0, "open %s: %s", path, strerror (errno));
  for (int s = 0; s < 2; s++) {
    ck_assert_int_eq (pread (fd, slot, FTL_SB_BYTES, s * FTL_SB_SLOT),
                      FTL_SB_BYTES);
    ok[s] = fmt_sb_decode (slot, FTL_SB_BYTES, &sb[s], NULL, 0)
      == FTL_FMT_OK;
    if (ok[s] && (best < 0 || sb[s].generation > sb[best].generation))
      best = s;
  }
  ck_assert_int_ge (best, 0);
  ck_assert_uint_eq (sb[best].version, FTL_FORMAT_VERSION);
  ck_assert (sb[best].flags & FTL_SB_LPN_SEED);

  /* Every OOB entry of the current erase count... of any erase count:
   * an entry that decodes gets its page's checksum seeded with the PPN,
   * if the checksum matched with the LPN seed (else it stays damaged).
   */
  const struct ftl_superblock *g = &sb[best];
  uint64_t meta_bytes = (uint64_t) g->meta_pages * g->page_size;
  uint8_t *meta = malloc (meta_bytes), *page = malloc (g->page_size);
  ck_assert (meta && page);
  for (uint32_t b = 0; b < g->blocks; b++) {
    uint64_t off = fmt_meta_area_offset (g, b);
    bool changed = false;
    ck_assert_int_eq (pread (fd, meta, meta_bytes, off), (ssize_t) meta_bytes);
    for (uint32_t i = 0; i < g->pages_per_block; i++) {
      uint8_t *e = meta + FTL_BLKHDR_BYTES + (size_t) i * FTL_OOB_BYTES;
      uint32_t ppn = b * g->pages_per_block + i;
      struct ftl_oob o;
      if (fmt_oob_decode (e, FTL_OOB_BYTES, &o) != FTL_FMT_OK)
        continue;
      ck_assert_int_eq (pread (fd, page, g->page_size,
                               fmt_data_page_offset (g, b, i)),
                        (ssize_t) g->page_size);
      if (fmt_checksum (page, g->page_size, fmt_oob_seed (g->flags, &o, ppn))
          != o.data_checksum)
        continue;
      o.data_checksum = fmt_checksum (page, g->page_size, ppn);
      fmt_oob_encode (&o, e);
      changed = true;
    }
    if (changed)
      ck_assert_int_eq (pwrite (fd, meta, meta_bytes, off),
                        (ssize_t) meta_bytes);
  }
  free (meta);
  free (page);
  for (int s = 0; s < 2; s++) {
    uint8_t buf[FTL_SB_BYTES];
    if (!ok[s])
      continue;
    sb[s].flags &= ~FTL_SB_LPN_SEED;
    fmt_sb_encode (&sb[s], buf);
    ck_assert_int_eq (pwrite (fd, buf, FTL_SB_BYTES, s * FTL_SB_SLOT),
                      FTL_SB_BYTES);
  }
  ck_assert_int_eq (close (fd), 0);
}

void
unit_make_interleaved (const char *path, uint32_t version)
{
  int fd = open (path, O_RDWR | O_CLOEXEC);
  uint8_t slot[2][FTL_SB_BYTES];
  struct ftl_superblock sb[2];
  bool ok[2];
  int best = -1;

  ck_assert (version >= 1 && version < 4);
  unit_seed_by_ppn (path);      /* as images before version 7 were */
  ck_assert_msg (fd >= 0, "open %s: %s", path, strerror (errno));
  for (int s = 0; s < 2; s++) {
    ck_assert_int_eq (pread (fd, slot[s], FTL_SB_BYTES, s * FTL_SB_SLOT),
                      FTL_SB_BYTES);
    ok[s] = fmt_sb_decode (slot[s], FTL_SB_BYTES, &sb[s], NULL, 0)
      == FTL_FMT_OK;
    if (ok[s] && (best < 0 || sb[s].generation > sb[best].generation))
      best = s;
  }
  ck_assert_int_ge (best, 0);
  ck_assert_uint_ne (sb[best].meta_offset, 0);

  /* Read both regions whole, then write every block where the older
   * layout puts it.
   */
  const struct ftl_superblock *g = &sb[best];
  uint64_t meta_bytes = (uint64_t) g->meta_pages * g->page_size;
  uint64_t data_bytes = (uint64_t) g->pages_per_block * g->page_size;
  uint64_t new_data = g->meta_offset;     /* right after the checkpoints */
  uint8_t *meta = malloc (g->blocks * meta_bytes);
  uint8_t *data = malloc (g->blocks * data_bytes);
  ck_assert (meta && data);
  ck_assert_int_eq (pread (fd, meta, g->blocks * meta_bytes, g->meta_offset),
                    (ssize_t) (g->blocks * meta_bytes));
  ck_assert_int_eq (pread (fd, data, g->blocks * data_bytes, g->data_offset),
                    (ssize_t) (g->blocks * data_bytes));
  for (uint32_t b = 0; b < g->blocks; b++) {
    uint64_t at = new_data + b * (meta_bytes + data_bytes);
    ck_assert_int_eq (pwrite (fd, meta + b * meta_bytes, meta_bytes, at),
                      (ssize_t) meta_bytes);
    ck_assert_int_eq (pwrite (fd, data + b * data_bytes, data_bytes,
                              at + meta_bytes), (ssize_t) data_bytes);
  }
  free (meta);
  free (data);
  ck_assert_int_eq (ftruncate (fd, new_data + g->blocks
                               * (meta_bytes + data_bytes)), 0);

  for (int s = 0; s < 2; s++) {
    uint8_t buf[FTL_SB_BYTES];
    if (!ok[s])
      continue;
    sb[s].version = version;
    sb[s].meta_offset = 0;
    sb[s].data_offset = new_data;
    fmt_sb_encode (&sb[s], buf);
    ck_assert_int_eq (pwrite (fd, buf, FTL_SB_BYTES, s * FTL_SB_SLOT),
                      FTL_SB_BYTES);
  }
  ck_assert_int_eq (close (fd), 0);
}

uint64_t
unit_file_size (const char *path)
{
  struct stat st;
  ck_assert_int_eq (stat (path, &st), 0);
  return st.st_size;
}

double
unit_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* ---- fault injection ---- */

static struct unit_ev *
fault_event (struct unit_fault *f, enum unit_ev_kind kind, uint64_t off,
             uint64_t len, const void *data)
{
  struct unit_ev *e;

  if (f->cut || (f->limit >= 0 && (long) f->n >= f->limit)) {
    f->cut = true;
    return NULL;
  }
  if (f->n == f->cap) {
    f->cap = f->cap ? 2 * f->cap : 1024;
    f->ev = realloc (f->ev, f->cap * sizeof *f->ev);
    ck_assert_ptr_nonnull (f->ev);
  }
  e = &f->ev[f->n];
  *e = (struct unit_ev) { .kind = kind, .off = off, .len = len,
                          .op = f->op };
  if (data) {
    e->data = malloc (len);
    ck_assert_ptr_nonnull (e->data);
    memcpy (e->data, data, len);
  }
  if (f->classify)
    e->tag = f->classify (f->classify_arg, e);
  f->n++;
  return e;
}

static int
fault_pwrite (void *opaque, int fd, const void *buf, size_t len, off_t off)
{
  struct unit_fault *f = opaque;
  if (!fault_event (f, UNIT_EV_PWRITE, off, len, buf))
    return -EIO;
  return media_default_io.pwrite (NULL, fd, buf, len, off);
}

static int
fault_pread (void *opaque, int fd, void *buf, size_t len, off_t off)
{
  return media_default_io.pread (NULL, fd, buf, len, off);
}

/* Nothing to sync for real: the trace decides what is durable. */
static int
fault_sync (void *opaque, int fd)
{
  struct unit_fault *f = opaque;
  if (!fault_event (f, UNIT_EV_SYNC, 0, 0, NULL))
    return -EIO;
  if (f->synced)
    f->synced (f->classify_arg, f->n - 1);
  return 0;
}

/* The size changes for real (reads must see it); the trace decides
 * whether it is durable.
 */
static int
fault_set_size (void *opaque, int fd, uint64_t size)
{
  struct unit_fault *f = opaque;
  if (!fault_event (f, UNIT_EV_RESIZE, 0, size, NULL))
    return -EIO;
  return media_default_io.set_size (NULL, fd, size);
}

static int
fault_sync_dir (void *opaque, const char *path)
{
  struct unit_fault *f = opaque;
  if (!fault_event (f, UNIT_EV_SYNC_DIR, 0, 0, NULL))
    return -EIO;
  return 0;
}

/* A hole of the real file is one in every image the trace can give:
 * no write, durable or not, ever reached it.
 */
static int
fault_is_hole (void *opaque, int fd, uint64_t off, uint64_t len)
{
  return media_default_io.is_hole (NULL, fd, off, len);
}

void
unit_fault_init (struct unit_fault *f)
{
  memset (f, 0, sizeof *f);
  f->io = (struct ftl_io) {
    .pwrite = fault_pwrite, .pread = fault_pread,
    .sync = fault_sync, .opaque = f,
    .set_size = fault_set_size, .sync_dir = fault_sync_dir,
    .is_hole = fault_is_hole,
  };
  f->limit = -1;
}

void
unit_fault_reset (struct unit_fault *f)
{
  for (size_t i = 0; i < f->n; i++)
    free (f->ev[i].data);
  f->n = 0;
  f->cut = false;
}

void
unit_fault_free (struct unit_fault *f)
{
  unit_fault_reset (f);
  free (f->ev);
  f->ev = NULL;
  f->cap = 0;
}

long
unit_fault_last_sync (const struct unit_fault *f, size_t n)
{
  for (size_t i = n; i-- > 0; )
    if (f->ev[i].kind == UNIT_EV_SYNC)
      return i;
  return -1;
}

/* The bytes that the file may span at any point of the trace. */
static size_t
disk_capacity (const struct unit_fault *f, size_t base_len)
{
  size_t cap = base_len;

  for (size_t i = 0; i < f->n; i++) {
    const struct unit_ev *e = &f->ev[i];
    if (e->kind == UNIT_EV_PWRITE && e->off + e->len > cap)
      cap = e->off + e->len;
    if (e->kind == UNIT_EV_RESIZE && e->len > cap)
      cap = e->len;
  }
  return cap;
}

void
unit_disk_init (struct unit_disk *d, const struct unit_fault *f,
                const char *base)
{
  memset (d, 0, sizeof *d);
  d->f = f;
  d->named = base != NULL;
  d->len = base ? unit_file_size (base) : 0;
  d->cap = disk_capacity (f, d->len);
  /* One spare byte: an empty file is still a buffer. */
  d->img = calloc (1, d->cap + 1);
  d->scratch = calloc (1, d->cap + 1);
  ck_assert_ptr_nonnull (d->img);
  ck_assert_ptr_nonnull (d->scratch);
  if (base)
    unit_read_file (base, d->img, d->len, 0);
}

void
unit_disk_free (struct unit_disk *d)
{
  free (d->img);
  free (d->scratch);
  d->img = d->scratch = NULL;
}

/* The file's bytes beyond its size are always zeros in img and scratch:
 * a file that grows reads zeros there.
 */
static void
set_len (uint8_t *img, size_t *len, size_t new_len)
{
  if (new_len < *len)
    memset (img + new_len, 0, *len - new_len);
  *len = new_len;
}

/* Bytes of a write reached the file at [from, to): it extends the file
 * to their end.
 */
static void
extend_len (size_t *len, uint64_t to)
{
  if (to > *len)
    *len = to;
}

/* Apply a subset of the 512-byte sectors of a write event to img (the
 * pieces of the write between the file's 512-byte boundaries): a
 * random one (rng), or piece i if bit i of mask is set.  Returns the
 * bytes applied.
 */
static uint64_t
apply_sectors (uint8_t *img, size_t cap, size_t *len, const struct unit_ev *e,
               uint64_t *rng, uint64_t mask)
{
  uint64_t applied = 0;
  unsigned i = 0;

  ck_assert_uint_le (e->off + e->len, cap);
  for (uint64_t p = e->off; p < e->off + e->len; i++) {
    uint64_t q = (p / 512 + 1) * 512;
    if (q > e->off + e->len)
      q = e->off + e->len;
    if (rng ? unit_rnd (rng) & 1 : i < 64 && (mask >> i) & 1) {
      memcpy (img + p, e->data + (p - e->off), q - p);
      applied += q - p;
      extend_len (len, q);
    }
    p = q;
  }
  return applied;
}

/* Apply the first 'bytes' bytes of a write event to img, or a size
 * change.
 */
static void
apply_event (uint8_t *img, size_t cap, size_t *len, const struct unit_ev *e,
             uint64_t bytes)
{
  switch (e->kind) {
  case UNIT_EV_PWRITE:
    ck_assert_uint_le (e->off + e->len, cap);
    memcpy (img + e->off, e->data, bytes);
    if (bytes > 0)
      extend_len (len, e->off + bytes);
    break;
  case UNIT_EV_RESIZE:
    set_len (img, len, e->len);
    break;
  case UNIT_EV_SYNC: case UNIT_EV_SYNC_DIR:
    break;
  }
}

/* Has the name of a new file become durable before event n? */
static bool
name_durable (const struct unit_disk *d, size_t n)
{
  if (d->named)
    return true;
  for (size_t i = 0; i < n; i++)
    if (d->f->ev[i].kind == UNIT_EV_SYNC_DIR)
      return true;
  return false;
}

/* How a cut treats what is pending, beyond what its mode says. */
struct cut_how {
  int64_t tear;                 /* >= 0: event n torn after so many bytes */
  bool use_mask;                /* event n: only the sectors in mask */
  uint64_t mask;
  int sizes;                    /* 1, 0: pending size changes kept, lost;
                                 * -1: as the mode says */
};

/* The file after a power cut during event n, written to path (or path
 * removed): unit_disk_cut and its variants (helpers.h), how saying what
 * the variant fixes.
 */
static void
disk_cut (struct unit_disk *d, size_t n, enum unit_cut_mode mode,
          uint64_t *rng, const struct cut_how *how, const char *path,
          struct unit_cut_info *info)
{
  const struct unit_fault *f = d->f;
  long s = unit_fault_last_sync (f, n);
  size_t start = s >= 0 ? (size_t) s + 1 : 0, end, len;
  size_t *pend, np = 0, nap;
  bool absent = false;
  int fd;

  ck_assert_uint_le (n, f->n);
  ck_assert_uint_le (d->durable, start);
  /* Everything before the last completed sync is durable. */
  for (size_t i = d->durable; i < start; i++)
    apply_event (d->img, d->cap, &d->len, &f->ev[i], f->ev[i].len);
  d->durable = start;

  /* The writes since, event n (in flight) included. */
  end = n < f->n ? n + 1 : f->n;
  pend = malloc ((end - start + 1) * sizeof *pend);
  ck_assert_ptr_nonnull (pend);
  memcpy (d->scratch, d->img, d->cap);
  len = d->len;
  memset (info, 0, sizeof *info);
  info->torn = -1;

  /* The size changes since: each reaches the file or not, before the
   * writes (the traces have none after a pending write).
   */
  for (size_t i = start; i < end; i++) {
    const struct unit_ev *e = &f->ev[i];
    bool keep;
    if (e->kind == UNIT_EV_PWRITE)
      np++;
    if (e->kind != UNIT_EV_RESIZE)
      continue;
    ck_assert_msg (np == 0, "the power-cut model has a size change (event "
                   "%zu) after a pending write", i);
    info->resizes++;
    if (how->sizes >= 0)
      keep = how->sizes;
    else if (mode == UNIT_CUT_ORDER || mode == UNIT_CUT_NONE)
      keep = mode == UNIT_CUT_ORDER;
    else
      keep = unit_rnd (rng) & 1;
    if (keep) {
      apply_event (d->scratch, d->cap, &len, e, 0);
      info->resizes_applied++;
    }
  }
  np = 0;
  for (size_t i = start; i < end; i++)
    if (f->ev[i].kind == UNIT_EV_PWRITE)
      pend[np++] = i;

  info->pending = np;
  nap = 0;
  switch (mode) {
  case UNIT_CUT_ORDER:
    nap = np;
    break;
  case UNIT_CUT_NONE:
    nap = 0;
    break;
  case UNIT_CUT_RANDOM:
  case UNIT_CUT_SECTORS:
    /* Keep each with probability 1/2, then shuffle what is kept. */
    for (size_t i = 0; i < np; i++)
      if (unit_rnd (rng) & 1)
        pend[nap++] = pend[i];
    for (size_t i = nap; i > 1; i--) {
      size_t j = unit_rnd (rng) % i, t = pend[i - 1];
      pend[i - 1] = pend[j];
      pend[j] = t;
    }
    break;
  }
  for (size_t i = 0; i < nap; i++) {
    const struct unit_ev *e = &f->ev[pend[i]];
    uint64_t bytes = e->len;
    if (how->use_mask && pend[i] == n) {
      bytes = apply_sectors (d->scratch, d->cap, &len, e, NULL, how->mask);
      if (bytes < e->len) {
        info->torn = pend[i];
        info->torn_at = bytes;
        info->torn_writes++;
      }
      continue;
    }
    if (mode == UNIT_CUT_SECTORS) {
      if (unit_rnd (rng) % 2 == 0) {
        bytes = apply_sectors (d->scratch, d->cap, &len, e, rng, 0);
        if (bytes > 0 && bytes < e->len) {
          info->torn = pend[i];
          info->torn_at = bytes;
          info->torn_writes++;
        }
        continue;
      }
    }
    else if (i == nap - 1) {
      /* The last one applied: in order, only event n is in flight. */
      if (how->tear >= 0 && pend[i] == n)
        bytes = how->tear;
      else if (mode == UNIT_CUT_RANDOM)
        bytes = unit_rnd (rng) % (e->len + 1);
      else if (pend[i] == n)
        bytes = unit_rnd (rng) % e->len;
      if (bytes < e->len) {
        info->torn = pend[i];
        info->torn_at = bytes;
        info->torn_writes++;
      }
    }
    apply_event (d->scratch, d->cap, &len, e, bytes);
  }
  info->applied = nap;
  free (pend);

  /* A new file's name, until a sync of its directory, is pending too. */
  if (!name_durable (d, n)) {
    if (mode == UNIT_CUT_NONE)
      absent = true;
    else if (mode != UNIT_CUT_ORDER)
      absent = unit_rnd (rng) & 1;
  }
  info->absent = absent;
  info->len = len;

  if (absent) {
    ck_assert_msg (unlink (path) == 0 || errno == ENOENT, "unlink %s: %s",
                   path, strerror (errno));
    return;
  }
  fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ck_assert_msg (fd >= 0, "open %s: %s", path, strerror (errno));
  if (len > 0)
    ck_assert_int_eq (media_default_io.pwrite (NULL, fd, d->scratch, len, 0),
                      0);
  ck_assert_int_eq (close (fd), 0);
}

void
unit_disk_cut (struct unit_disk *d, size_t n, enum unit_cut_mode mode,
               uint64_t *rng, const char *path, struct unit_cut_info *info)
{
  const struct cut_how how = { .tear = -1, .sizes = -1 };

  disk_cut (d, n, mode, rng, &how, path, info);
}

void
unit_disk_cut_at (struct unit_disk *d, size_t n, uint64_t bytes,
                  bool keep_sizes, const char *path,
                  struct unit_cut_info *info)
{
  const struct cut_how how = { .tear = bytes, .sizes = keep_sizes };
  uint64_t rng = 1;             /* in order: no choice is random */

  ck_assert_uint_lt (n, d->f->n);
  ck_assert_int_eq (d->f->ev[n].kind, UNIT_EV_PWRITE);
  ck_assert_uint_le (bytes, d->f->ev[n].len);
  disk_cut (d, n, UNIT_CUT_ORDER, &rng, &how, path, info);
}

void
unit_disk_cut_sectors (struct unit_disk *d, size_t n, uint64_t mask,
                       bool keep_sizes, const char *path,
                       struct unit_cut_info *info)
{
  const struct cut_how how = { .tear = -1, .use_mask = true, .mask = mask,
                               .sizes = keep_sizes };
  uint64_t rng = 1;

  ck_assert_uint_lt (n, d->f->n);
  ck_assert_int_eq (d->f->ev[n].kind, UNIT_EV_PWRITE);
  disk_cut (d, n, UNIT_CUT_ORDER, &rng, &how, path, info);
}

unsigned
unit_ev_sectors (const struct unit_ev *e)
{
  return e->len ? (e->off + e->len + 511) / 512 - e->off / 512 : 0;
}
