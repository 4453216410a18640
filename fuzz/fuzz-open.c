/* nbdkit-ftl fuzz target: opening a whole image (the recovery path).
 *
 * Input: one byte of flags, then the image.  The image is written to an
 * in-memory file (memfd) and opened as the plugin would open it:
 * superblocks, checkpoint, roll-forward, rebuild.  Then every logical
 * page is read.  Whatever the bytes, the open either fails with a
 * message or succeeds, and then every read either fails with EIO or
 * returns exactly the data of a page of the image whose OOB entry names
 * that logical page and whose checksum matches (zeros for an unmapped
 * page).  Never a crash, a hang or data that fails its checksum.
 *
 * Flags: RESEAL_* recompute the checksums of one kind of structure
 * before the open, so that the fuzzer gets past them to the fields
 * behind; WRITE opens the image read-write instead, writes and trims a
 * few pages, closes it and opens it again, which must then succeed and
 * read back what was written.
 */

#include <config.h>

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "ftl-internal.h"

#define RESEAL_SB      0x01     /* superblock copies */
#define RESEAL_CKPT    0x02     /* checkpoint headers and bodies */
#define RESEAL_META    0x04     /* block headers and OOB entries */
#define RESEAL_DATA    0x08     /* data checksums in OOB entries, trim pages */
#define WRITE          0x10     /* open read-write, write, reopen */

/* Images larger than this are not worth the time. */
#define MAX_IMAGE (256 * 1024)

static int memfd = -1;
static char path[64];

static void
log_sink (void *opaque, enum ftl_log_level level, const char *msg)
{
  FUZZ_CHECK (msg[0] != '\0');
}

/* The newest valid superblock copy of the image, if any. */
static bool
image_superblock (const uint8_t *img, size_t n, struct ftl_superblock *sb)
{
  struct ftl_superblock s;
  bool found = false;

  for (int i = 0; i < 2; i++)
    if (n >= (size_t) i * FTL_SB_SLOT + FTL_SB_BYTES &&
        fmt_sb_decode (img + i * FTL_SB_SLOT, FTL_SB_BYTES, &s, NULL, 0)
        == FTL_FMT_OK &&
        (!found || s.generation > sb->generation)) {
      *sb = s;
      found = true;
    }
  return found;
}

static void
reseal_image (uint8_t *img, size_t n, unsigned flags)
{
  struct ftl_superblock sb;

  if (flags & RESEAL_SB)
    for (int i = 0; i < 2; i++)
      if (n >= (size_t) i * FTL_SB_SLOT + FTL_SB_BYTES)
        fuzz_reseal_sb (img + i * FTL_SB_SLOT);
  if (!image_superblock (img, n, &sb))
    return;

  if (flags & RESEAL_CKPT)
    for (int s = 0; s < 2; s++) {
      uint8_t *h = img + sb.ckpt_offset[s];
      uint64_t body;
      if (sb.ckpt_offset[s] + sb.ckpt_bytes > n)
        continue;
      body = get64le (h + 40);
      if (body <= sb.ckpt_bytes - FTL_CKPT_HDR_BYTES)
        put64le (h + 48, fmt_checksum (h + FTL_CKPT_HDR_BYTES, body, 0));
      fuzz_reseal_ckpt_header (h);
    }

  if (!(flags & (RESEAL_META | RESEAL_DATA)))
    return;
  for (uint32_t b = 0; b < sb.blocks; b++) {
    uint64_t off = fmt_meta_area_offset (&sb, b);
    uint8_t *meta = img + off;
    if (off + (uint64_t) sb.meta_pages * sb.page_size > n ||
        fmt_data_page_offset (&sb, b, sb.pages_per_block) > n)
      break;
    if ((flags & RESEAL_META) && !all_zero (meta, FTL_BLKHDR_BYTES))
      fuzz_reseal_blkhdr (meta);
    for (uint32_t i = 0; i < sb.pages_per_block; i++) {
      uint8_t *e = meta + FTL_BLKHDR_BYTES + (size_t) i * FTL_OOB_BYTES;
      uint8_t *page = img + fmt_data_page_offset (&sb, b, i);
      uint32_t ppn = b * sb.pages_per_block + i;
      if (all_zero (e, FTL_OOB_BYTES))
        continue;
      if (flags & RESEAL_DATA) {
        if (e[2] == FTL_OOB_TRIM)
          fuzz_reseal_trim_page (page, sb.page_size);
        put64le (e + 24, fmt_checksum (page, sb.page_size,
                                       fmt_page_seed (sb.flags,
                                                      e[2] & ~FTL_OOB_SLC,
                                                      get32le (e + 4), ppn)));
      }
      if (flags & RESEAL_META)
        fuzz_reseal_oob (e);
    }
  }
}

/* What a successful read of logical page lpn returned (len bytes in
 * buf) must be: zeros if it is unmapped, else the data of the physical
 * page it maps to in the image, which is intact and belongs to it.
 */
static void
check_page (struct ftl *ftl, const uint8_t *img, size_t n, uint64_t lpn,
            const uint8_t *buf, uint32_t len)
{
  struct media *m = &ftl->media;
  uint32_t ppn = l2p_load (ftl, lpn);
  struct ftl_oob o;
  uint64_t meta, data;

  if (ppn == FTL_UNMAPPED) {
    FUZZ_CHECK (all_zero (buf, len));
    return;
  }
  FUZZ_CHECK (media_ppn_block (m, ppn) < ftl->blocks);
  meta = media_meta_offset (m, media_ppn_block (m, ppn)) + FTL_BLKHDR_BYTES
    + (uint64_t) media_ppn_page (m, ppn) * FTL_OOB_BYTES;
  data = media_page_offset (m, ppn);
  FUZZ_CHECK (meta + FTL_OOB_BYTES <= n && data + ftl->page_size <= n);
  FUZZ_CHECK (fmt_oob_decode (img + meta, FTL_OOB_BYTES, &o) == FTL_FMT_OK);
  FUZZ_CHECK (o.kind == FTL_OOB_DATA);
  FUZZ_CHECK (o.lpn == lpn);
  FUZZ_CHECK (fmt_checksum (img + data, ftl->page_size,
                            oob_seed (ftl, &o, ppn)) == o.data_checksum);
  FUZZ_CHECK (memcmp (buf, img + data, len) == 0);
}

struct extent_walk {
  uint64_t pos;
};

static int
extent_cb (void *opaque, uint64_t offset, uint64_t length, bool hole)
{
  struct extent_walk *w = opaque;

  FUZZ_CHECK (offset == w->pos && length > 0);
  w->pos += length;
  return 0;
}

/* Read the whole disk, page by page and at once, and its extents. */
static void
read_all (struct ftl *ftl, const uint8_t *img, size_t n)
{
  struct ftl_geometry g;
  struct ftl_stats st;
  struct extent_walk w = { 0 };
  uint8_t *buf, *all;
  int r, whole;

  ftl_get_geometry (ftl, &g);
  FUZZ_CHECK (g.logical_bytes <= n);
  buf = malloc (g.page_size);
  all = malloc (g.logical_bytes);
  FUZZ_CHECK (buf && all);
  whole = ftl_read (ftl, all, g.logical_bytes, 0);
  FUZZ_CHECK (whole == 0 || whole == -EIO);
  for (uint64_t lpn = 0; lpn < g.logical_pages; lpn++) {
    uint64_t off = lpn * g.page_size;
    uint32_t len = g.logical_bytes - off < g.page_size
      ? g.logical_bytes - off : g.page_size;
    r = ftl_read (ftl, buf, len, off);
    if (r == 0) {
      check_page (ftl, img, n, lpn, buf, len);
      if (whole == 0)
        FUZZ_CHECK (memcmp (buf, all + off, len) == 0);
    }
    else {
      FUZZ_CHECK (r == -EIO);
      FUZZ_CHECK (whole == -EIO);
    }
  }
  /* Unaligned: across the first page boundary. */
  if (g.logical_bytes > g.page_size) {
    r = ftl_read (ftl, buf, 512, g.page_size - 256);
    FUZZ_CHECK (r == 0 || r == -EIO);
  }
  FUZZ_CHECK (ftl_extents (ftl, g.logical_bytes, 0, extent_cb, &w) == 0);
  FUZZ_CHECK (w.pos == g.logical_bytes);
  ftl_get_stats (ftl, &st);
  FUZZ_CHECK (st.mapped_pages <= g.logical_pages);
  FUZZ_CHECK (st.blocks_free <= st.blocks_total);
  free (buf);
  free (all);
}

/* Read-write: write the first and last pages, trim the second, flush,
 * close, and open again; the image must open and hold what was written.
 */
static void
write_and_reopen (struct ftl *ftl, const struct ftl_options *opts)
{
  struct ftl_geometry g;
  char errbuf[256];
  uint8_t *pat, *buf;
  uint64_t last;
  int r;

  ftl_get_geometry (ftl, &g);
  last = (g.logical_pages - 1) * g.page_size;
  pat = malloc (g.page_size);
  buf = malloc (g.page_size);
  FUZZ_CHECK (pat && buf);
  for (uint32_t i = 0; i < g.page_size; i++)
    pat[i] = i * 7 + 1;
  if (ftl_is_read_only (ftl)) {
    FUZZ_CHECK (ftl_write (ftl, pat, 512, 0, 0) == -EROFS);
    ftl_close (ftl);
    goto out;
  }
  r = ftl_write (ftl, pat, g.page_size, 0, 0);
  if (r == 0)
    r = ftl_write (ftl, pat, g.logical_bytes - last, last, FTL_FUA);
  if (r == 0 && g.logical_pages > 2)
    r = ftl_trim (ftl, g.page_size, g.page_size, 0);
  if (r == 0)
    r = ftl_flush (ftl);
  /* A write may fail (a damaged page read back for a partial write,
   * no room left); it must not crash, and the image must still open.
   */
  FUZZ_CHECK (r == 0 || r == -EIO || r == -ENOSPC || r == -EROFS);
  if (ftl_close (ftl) < 0)
    r = -1;
  FUZZ_CHECK (ftl_open (opts, &ftl, errbuf, sizeof errbuf) == 0);
  if (r == 0) {
    FUZZ_CHECK (ftl_read (ftl, buf, g.page_size, 0) == 0);
    FUZZ_CHECK (memcmp (buf, pat, g.page_size) == 0);
    FUZZ_CHECK (ftl_read (ftl, buf, g.logical_bytes - last, last) == 0);
    FUZZ_CHECK (memcmp (buf, pat, g.logical_bytes - last) == 0);
    if (g.logical_pages > 2) {
      FUZZ_CHECK (ftl_read (ftl, buf, g.page_size, g.page_size) == 0);
      FUZZ_CHECK (all_zero (buf, g.page_size));
    }
  }
  ftl_close (ftl);
 out:
  free (pat);
  free (buf);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct ftl_options opts = { .log = log_sink };
  struct ftl *ftl;
  char errbuf[256];
  unsigned flags;
  uint8_t *img;
  size_t n;
  int r;

  if (size < 1 || size - 1 > MAX_IMAGE)
    return -1;
  if (memfd == -1) {
    memfd = memfd_create ("ftl-fuzz-image", MFD_CLOEXEC);
    FUZZ_CHECK (memfd >= 0);
    snprintf (path, sizeof path, "/proc/self/fd/%d", memfd);
  }
  flags = data[0];
  n = size - 1;
  img = malloc (n ? n : 1);
  FUZZ_CHECK (img);
  memcpy (img, data + 1, n);
  reseal_image (img, n, flags);

  FUZZ_CHECK (ftruncate (memfd, 0) == 0);
  FUZZ_CHECK (pwrite (memfd, img, n, 0) == (ssize_t) n);
  opts.path = path;
  opts.readonly = !(flags & WRITE);
  r = ftl_open (&opts, &ftl, errbuf, sizeof errbuf);
  if (r < 0) {
    /* Refused: with a reason. */
    FUZZ_CHECK (errbuf[0] != '\0');
    FUZZ_CHECK (strlen (errbuf) < sizeof errbuf);
  }
  else if (flags & WRITE)
    write_and_reopen (ftl, &opts);
  else {
    read_all (ftl, img, n);
    FUZZ_CHECK (ftl_close (ftl) == 0);
  }
  free (img);
  return 0;
}
