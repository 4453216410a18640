/* nbdkit-ftl: make the seed corpus of the fuzz targets from real images.
 *
 *   gen-corpus DIR
 *
 * Creates a few small images with the FTL library (a fresh one; one
 * shut down cleanly after overwrites, trims and garbage collection; one
 * left as a crash would leave it, with log written after its last
 * checkpoint; and one with a paged map, 4 KiB pages, left the same
 * way) and writes into DIR/<target>/ the structures each fuzz
 * target reads, cut out of those images: superblock copies, checkpoint
 * slots, block headers, OOB entries, trim pages, and whole images.
 * Each seed is named after the checksum of its bytes (images differ
 * from run to run: they get a random UUID and the time of creation).
 * fuzz/make-corpus.sh runs it.
 */

#include <config.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"
#include "ftl-internal.h"

/* A small geometry: 24 logical pages of 512 bytes, 13 erase blocks of
 * 8 pages, about 68 KiB in all.
 */
#define PAGE_SIZE   512
#define PPB         8
#define LOGICAL     (24 * PAGE_SIZE)
#define OP_PERCENT  333.0

static const char *outdir;

static void
die (const char *what)
{
  perror (what);
  exit (EXIT_FAILURE);
}

static void
check (int r, const char *what)
{
  if (r < 0) {
    fprintf (stderr, "gen-corpus: %s: %s\n", what, strerror (-r));
    exit (EXIT_FAILURE);
  }
}

/* Write one seed: prefix (may be NULL, plen bytes) then data. */
static void
seed (const char *target, const uint8_t *prefix, size_t plen,
      const uint8_t *data, size_t len)
{
  char dir[4096], file[4200];
  uint8_t *buf = malloc (plen + len);
  FILE *fp;

  if (!buf)
    die ("malloc");
  if (plen)
    memcpy (buf, prefix, plen);
  memcpy (buf + plen, data, len);
  snprintf (dir, sizeof dir, "%s/%s", outdir, target);
  if (mkdir (dir, 0755) == -1 && errno != EEXIST)
    die (dir);
  snprintf (file, sizeof file, "%s/%016llx", dir,
            (unsigned long long) fmt_checksum (buf, plen + len, 0));
  fp = fopen (file, "w");
  if (!fp || fwrite (buf, 1, plen + len, fp) != plen + len ||
      fclose (fp) != 0)
    die (file);
  free (buf);
}

static void
fill (uint8_t *page, unsigned v)
{
  for (unsigned i = 0; i < PAGE_SIZE * 8; i++)
    page[i] = v * 31 + i;
}

/* Three namespaces of a third of the disk each (version 8). */
static const struct ftl_ns_spec ns3[] = {
  { "a", LOGICAL / 3 }, { "bb", LOGICAL / 3 }, { "c.1", LOGICAL / 3 },
};

static struct ftl *
open_image (const char *path, bool paged, bool ns)
{
  struct ftl_options o = {
    .path = path,
    .logical_bytes = paged ? LOGICAL * 8 : LOGICAL,
    .page_size = paged ? PAGE_SIZE * 8 : PAGE_SIZE,
    .pages_per_block = PPB,
    .op_percent = OP_PERCENT,
    .streams = 1,
    /* Less than the whole map (one translation page): paged. */
    .map_cache_bytes = paged ? 1 : 0,
    .namespaces = ns ? ns3 : NULL,
    .nnamespaces = ns ? 3 : 0,
  };
  char errbuf[256];
  struct ftl *ftl;

  if (ftl_open (&o, &ftl, errbuf, sizeof errbuf) < 0) {
    fprintf (stderr, "gen-corpus: %s: %s\n", path, errbuf);
    exit (EXIT_FAILURE);
  }
  return ftl;
}

/* Overwrites enough to run garbage collection and write checkpoints,
 * with trims and zeros among them.
 */
static void
workload (struct ftl *ftl, unsigned rounds, uint32_t ps)
{
  uint8_t page[PAGE_SIZE * 8];
  unsigned x = 1;

  for (unsigned r = 0; r < rounds; r++)
    for (unsigned lpn = 0; lpn < LOGICAL / PAGE_SIZE; lpn++) {
      x = x * 1103515245 + 12345;
      fill (page, x >> 16);
      check (ftl_write (ftl, page, ps, (uint64_t) lpn * ps, 0), "write");
      if ((x >> 8) % 11 == 0)
        check (ftl_trim (ftl, 2 * ps, (uint64_t) ((x >> 12) % 20) * ps, 0),
               "trim");
      if ((x >> 8) % 13 == 0)
        check (ftl_zero (ftl, ps + 100, 300, 0), "zero");
      if ((x >> 8) % 5 == 0)
        check (ftl_flush (ftl), "flush");
    }
}

static uint8_t *
slurp (const char *path, size_t *lenp)
{
  struct stat st;
  uint8_t *buf;
  int fd = open (path, O_RDONLY);

  if (fd == -1 || fstat (fd, &st) == -1)
    die (path);
  buf = malloc (st.st_size);
  if (!buf || pread (fd, buf, st.st_size, 0) != st.st_size)
    die (path);
  close (fd);
  *lenp = st.st_size;
  return buf;
}

/* Cut the seeds out of one image. */
static void
seeds_of_image (const char *path, bool with_write)
{
  struct ftl_superblock sb;
  uint8_t flags;
  uint8_t *img;
  size_t n;
  unsigned oob_seeds = 0, hdr_seeds = 0;

  img = slurp (path, &n);
  if (fmt_sb_decode (img, n, &sb, NULL, 0) != FTL_FMT_OK) {
    fprintf (stderr, "gen-corpus: %s: no valid superblock\n", path);
    exit (EXIT_FAILURE);
  }

  /* Whole images: opened read-only and, for some, read-write (flags
   * in fuzz-open.c).
   */
  flags = 0;
  seed ("fuzz-open", &flags, 1, img, n);
  if (with_write) {
    flags = 0x10;
    seed ("fuzz-open", &flags, 1, img, n);
  }

  /* A slot: its superblock, and its namespace table if it has one. */
  for (int i = 0; i < 2; i++) {
    const uint8_t *slot = img + i * FTL_SB_SLOT;
    struct ftl_superblock s;
    size_t len = FTL_SB_BYTES;
    if (fmt_sb_decode (slot, FTL_SB_SLOT, &s, NULL, 0) == FTL_FMT_OK &&
        (s.flags & FTL_SB_NAMESPACES))
      len = FTL_NS_OFFSET + get32le (slot + FTL_NS_OFFSET + 12);
    seed ("fuzz-superblock", NULL, 0, slot, len);
  }
  for (int s = 0; s < 2; s++) {
    const uint8_t *h = img + sb.ckpt_offset[s];
    if (!all_zero (h, FTL_CKPT_HDR_BYTES))
      seed ("fuzz-ckpt", NULL, 0, h,
            FTL_CKPT_HDR_BYTES + get64le (h + 40));
  }

  for (uint32_t b = 0; b < sb.blocks; b++) {
    const uint8_t *meta = img + fmt_meta_area_offset (&sb, b);
    if (!all_zero (meta, FTL_BLKHDR_BYTES) && hdr_seeds++ < 3)
      seed ("fuzz-blkhdr", NULL, 0, meta, FTL_BLKHDR_BYTES);
    for (uint32_t i = 0; i < sb.pages_per_block; i++) {
      const uint8_t *e = meta + FTL_BLKHDR_BYTES + i * FTL_OOB_BYTES;
      const uint8_t *page = img + fmt_data_page_offset (&sb, b, i);
      uint8_t ps = 0;           /* 512 << 0 */
      if (all_zero (e, FTL_OOB_BYTES))
        continue;
      if (e[2] == FTL_OOB_TRIM && sb.page_size == 512) {
        seed ("fuzz-oob", NULL, 0, e, FTL_OOB_BYTES);
        seed ("fuzz-trim", &ps, 1, page, sb.page_size);
      }
      else if (e[2] == FTL_OOB_MAP)
        seed ("fuzz-oob", NULL, 0, e, FTL_OOB_BYTES);
      else if (oob_seeds++ < 3)
        seed ("fuzz-oob", NULL, 0, e, FTL_OOB_BYTES);
    }
  }
  free (img);
}

int
main (int argc, char **argv)
{
  char tmpl[] = "/tmp/ftl-corpus.XXXXXX";
  char path[5][4200];
  struct ftl *ftl;

  if (argc != 2) {
    fprintf (stderr, "usage: gen-corpus DIR\n");
    return 2;
  }
  outdir = argv[1];
  if (mkdir (outdir, 0755) == -1 && errno != EEXIST)
    die (outdir);
  if (!mkdtemp (tmpl))
    die ("mkdtemp");
  for (int i = 0; i < 5; i++)
    snprintf (path[i], sizeof path[i], "%s/%d.img", tmpl, i);

  /* A fresh image. */
  check (ftl_close (open_image (path[0], false, false)), "close");

  /* Shut down cleanly after garbage collection. */
  ftl = open_image (path[1], false, false);
  workload (ftl, 12, PAGE_SIZE);
  check (ftl_close (ftl), "close");

  /* A crash: log written after the last checkpoint, never closed. */
  ftl = open_image (path[2], false, false);
  workload (ftl, 9, PAGE_SIZE);
  check (ftl_flush (ftl), "flush");
  open_abandon (ftl);

  /* A paged map, the same way. */
  ftl = open_image (path[3], true, false);
  workload (ftl, 9, PAGE_SIZE * 8);
  check (ftl_flush (ftl), "flush");
  open_abandon (ftl);

  /* Namespaces, after a crash as above. */
  ftl = open_image (path[4], false, true);
  workload (ftl, 9, PAGE_SIZE);
  check (ftl_flush (ftl), "flush");
  open_abandon (ftl);

  seeds_of_image (path[0], false);
  seeds_of_image (path[1], true);
  seeds_of_image (path[2], true);
  seeds_of_image (path[3], true);
  seeds_of_image (path[4], true);

  for (int i = 0; i < 5; i++)
    unlink (path[i]);
  rmdir (tmpl);
  return 0;
}
