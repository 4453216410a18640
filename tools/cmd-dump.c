/* ftlctl dump: show one page or one erase block as it is on the media.
 *
 *   --page PPN    a physical page: where it is in the file, its OOB entry
 *                 decoded and checked against its data, and (--hex) the
 *                 data itself;
 *   --lpn LPN     the physical page a logical page maps to, likewise;
 *   --block N     an erase block: its state in the open image, its block
 *                 header, and one line per page from its OOB entry.
 *
 * The image is opened read-only, so the map and block states shown are
 * those recovery arrives at.
 */

#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <glib.h>

#include "ftlctl.h"

/* Read at most this many bytes of data pages at once. */
#define READ_BYTES (1024 * 1024)

/* hexdump -C's format: offset, 16 bytes in hex, the same as text;
 * repeated lines are shown once, then "*".
 */
static void
hex_dump (const uint8_t *data, size_t len)
{
  bool starred = false;

  for (size_t off = 0; off < len; off += 16) {
    size_t n = MIN (16, len - off);

    if (off > 0 && n == 16 && memcmp (data + off, data + off - 16, 16) == 0) {
      if (!starred)
        printf ("*\n");
      starred = true;
      continue;
    }
    starred = false;
    printf ("%08zx ", off);
    for (size_t i = 0; i < 16; i++) {
      if (i == 8)
        putchar (' ');
      if (i < n)
        printf (" %02x", data[off + i]);
      else
        printf ("   ");
    }
    printf ("  |");
    for (size_t i = 0; i < n; i++)
      putchar (g_ascii_isprint (data[off + i]) ? data[off + i] : '.');
    printf ("|\n");
  }
  printf ("%08zx\n", len);
}

/* The image being dumped. */
struct image {
  struct ftl *ftl;
  const char *file;
  struct ftl_geometry g;
};

/* Whether the data at ppn is the current version of its logical page. */
/* Is ppn the translation page that the map has now for its group? */
static const char *
tp_status (const struct image *im, const struct ftl_oob *o, uint32_t ppn)
{
  uint32_t now;
  uint64_t version;

  if (ftl_inspect_map_page (im->ftl, o->lpn, &now, &version) < 0)
    return "not a group of this map";
  if (now == ppn)
    return "live: the map's";
  return "stale: the map's is elsewhere";
}

static const char *
map_status (const struct image *im, const struct ftl_oob *o, uint32_t ppn)
{
  uint32_t cur;

  if (ftl_inspect_lookup (im->ftl, o->lpn, &cur) < 0)
    return "beyond the disk";
  return cur == ppn ? "valid" : "stale";
}

/* The trim records of a trim page whose data is intact. */
static void
print_trim_records (const struct image *im, const uint8_t *data)
{
  uint32_t cap = fmt_trim_page_capacity (im->g.page_size), n;
  struct ftl_trim_entry *e = g_new (struct ftl_trim_entry, cap);
  enum ftl_fmt_status s = fmt_trim_page_decode (data, im->g.page_size, e,
                                                &n);

  if (s != FTL_FMT_OK)
    printf ("  trim records:     %s\n", fmt_status_string (s));
  else
    for (uint32_t i = 0; i < n; i++)
      printf ("  trim record:      logical pages %u-%" PRIu64 " unmapped at "
              "sequence %" PRIu64 "\n", e[i].lpn,
              (uint64_t) e[i].lpn + e[i].count - 1, e[i].seq);
  g_free (e);
}

/* --page: physical page ppn64. */
static int
dump_page (const struct image *im, uint64_t ppn64, bool hex)
{
  uint32_t ppb = im->g.pages_per_block;
  uint64_t phys = (uint64_t) im->g.blocks * ppb;
  struct ftl_block_info bi;
  uint32_t ppn, b, p;
  uint8_t *meta, *data;
  const uint8_t *oob;
  enum ftl_fmt_status s;
  struct ftl_oob o;
  int r;

  if (ppn64 >= phys) {
    ftlctl_error ("%s: physical page %" PRIu64 " is beyond the last (%"
                  PRIu64 ")", im->file, ppn64, phys - 1);
    return FTLCTL_EXIT_ERROR;
  }
  ppn = ppn64;
  b = ppn / ppb;
  p = ppn % ppb;
  ftl_inspect_block (im->ftl, b, &bi);
  meta = g_malloc (ftl_inspect_meta_bytes (im->ftl));
  data = g_malloc (im->g.page_size);
  r = ftl_inspect_read_meta (im->ftl, b, meta);
  if (r == 0)
    r = ftl_inspect_read_pages (im->ftl, ppn, 1, data);
  if (r < 0) {
    ftlctl_error ("%s: reading physical page %u: %s", im->file, ppn,
                  g_strerror (-r));
    g_free (data);
    g_free (meta);
    return FTLCTL_EXIT_ERROR;
  }
  oob = ftl_inspect_oob_entry (meta, p);

  printf ("physical page %u: erase block %u, page %u\n", ppn, b, p);
  printf ("  data offset:      %" PRIu64 "\n",
          bi.data_offset + (uint64_t) p * im->g.page_size);
  printf ("  OOB offset:       %" PRIu64 "\n", bi.meta_offset
          + (uint64_t) (oob - meta));
  printf ("  erase block:      %s, erase count %u, %u of %u pages "
          "written\n", block_state_name (bi.state), bi.erase_count,
          bi.write_pointer, ppb);
  if (p >= bi.write_pointer)
    printf ("  written:          no (beyond the program pointer)\n");

  s = fmt_oob_decode (oob, FTL_OOB_BYTES, &o);
  printf ("  OOB entry:        %s\n", fmt_status_string (s));
  if (s == FTL_FMT_OK) {
    uint64_t sum = fmt_checksum (data, im->g.page_size,
                                 ftl_inspect_page_seed (im->ftl, &o, ppn));

    if (o.kind == FTL_OOB_DATA)
      printf ("  kind:             data\n"
              "  logical page:     %u (%s)\n", o.lpn,
              map_status (im, &o, ppn));
    else if (o.kind == FTL_OOB_MAP)
      printf ("  kind:             translation page\n"
              "  logical pages:    %" PRIu64 "..%" PRIu64 " (%s)\n",
              (uint64_t) o.lpn * FTL_TP_ENTRIES,
              (uint64_t) (o.lpn + 1) * FTL_TP_ENTRIES - 1,
              tp_status (im, &o, ppn));
    else if (o.kind == FTL_OOB_POISON)
      printf ("  kind:             lost data\n"
              "  logical page:     %u (%s)\n", o.lpn,
              map_status (im, &o, ppn));
    else
      printf ("  kind:             trim records (%u)\n", o.trim_entries);
    if (o.slc)
      printf ("  mode:             SLC (the block holds fewer pages, to be "
              "folded)\n");
    printf ("  sequence:         %" PRIu64 "\n", o.seq);
    printf ("  erase count:      %u", o.erase_count);
    if (o.erase_count != bi.erase_count)
      printf (" (wrong: the erase block's is %u)", bi.erase_count);
    printf ("\n");
    if (sum == o.data_checksum)
      printf ("  data checksum:    %016" PRIx64 " (matches)\n", sum);
    else
      printf ("  data checksum:    %016" PRIx64 " (MISMATCH: the data's is "
              "%016" PRIx64 ")\n", o.data_checksum, sum);
    if (o.kind == FTL_OOB_TRIM && sum == o.data_checksum)
      print_trim_records (im, data);
    if (o.kind == FTL_OOB_MAP && sum == o.data_checksum) {
      uint32_t mapped = 0;
      for (uint32_t i = 0; i < FTL_TP_ENTRIES; i++)
        mapped += data[4 * i] | data[4 * i + 1] | data[4 * i + 2]
          | data[4 * i + 3] ? 1 : 0;
      printf ("  entries:          %u of %u mapped\n", mapped,
              FTL_TP_ENTRIES);
    }
  }
  if (hex)
    hex_dump (data, im->g.page_size);
  g_free (data);
  g_free (meta);
  return FTLCTL_EXIT_OK;
}

/* --lpn: the physical page that logical page lpn maps to. */
static int
dump_lpn (const struct image *im, uint64_t lpn, bool hex)
{
  uint32_t ppn;

  if (ftl_inspect_lookup (im->ftl, lpn, &ppn) < 0) {
    ftlctl_error ("%s: logical page %" PRIu64 " is beyond the last (%"
                  PRIu64 ")", im->file, lpn, im->g.logical_pages - 1);
    return FTLCTL_EXIT_ERROR;
  }
  if (ppn == FTL_UNMAPPED) {
    printf ("logical page %" PRIu64 ": not mapped (reads as zeros)\n", lpn);
    return FTLCTL_EXIT_OK;
  }
  if (ppn == FTL_LOST) {
    printf ("logical page %" PRIu64 ": lost in a crash of the host "
            "(reads as an error)\n", lpn);
    return FTLCTL_EXIT_OK;
  }
  printf ("logical page %" PRIu64 ": physical page %u\n", lpn, ppn);
  return dump_page (im, ppn, hex);
}

/* One line for page p of erase block b, given its OOB entry; data is
 * the page (NULL if it could not be read).
 */
static void
print_block_page (const struct image *im, const struct ftl_block_info *bi,
                  uint32_t b, uint32_t p, const struct ftl_oob *o,
                  const uint8_t *data)
{
  uint32_t ppn = b * im->g.pages_per_block + p;

  if (o->kind == FTL_OOB_DATA)
    printf ("  page %5u  data  lpn %-10u seq %-12" PRIu64 " %s", p, o->lpn,
            o->seq, map_status (im, o, ppn));
  else if (o->kind == FTL_OOB_MAP)
    printf ("  page %5u  map   group %-8u seq %-12" PRIu64 " %s", p, o->lpn,
            o->seq, tp_status (im, o, ppn));
  else
    printf ("  page %5u  trim  %-3u records     seq %-12" PRIu64, p,
            o->trim_entries, o->seq);
  if (data == NULL)
    printf (", unreadable");
  else if (fmt_checksum (data, im->g.page_size,
                         ftl_inspect_page_seed (im->ftl, o, ppn))
           != o->data_checksum)
    printf (", DATA CHECKSUM MISMATCH");
  if (o->erase_count != bi->erase_count)
    printf (", erase count %u (WRONG)", o->erase_count);
  if (p >= bi->write_pointer)
    printf (", beyond the program pointer");
  if (o->slc)
    printf (", SLC");
  printf ("\n");
}

/* The two copies of the block header (format.h): odd erase counts in
 * the first, even ones in the second; the higher valid one counts.
 */
static void
print_headers (const struct image *im, const uint8_t *meta)
{
  struct ftl_block_header h[2];
  enum ftl_fmt_status hs[2];
  int newer = -1;

  for (int i = 0; i < 2; i++) {
    hs[i] = fmt_blkhdr_decode (ftl_inspect_header_copy (im->ftl, meta, i),
                               FTL_BLKHDR_BYTES, &h[i]);
    if (hs[i] == FTL_FMT_OK &&
        (newer < 0 || h[i].erase_count > h[newer].erase_count))
      newer = i;
  }
  for (int i = 0; i < 2; i++) {
    printf ("  block header %d:   ", i + 1);
    if (hs[i] == FTL_FMT_OK)
      printf ("erase count %u, erased at sequence %" PRIu64 "%s\n",
              h[i].erase_count, h[i].erase_seq,
              i == newer ? " (current)" : "");
    else if (hs[i] == FTL_FMT_EMPTY)
      printf ("none (all zeros)\n");
    else
      printf ("%s\n", fmt_status_string (hs[i]));
  }
}

/* --block: erase block b, a line per page (runs of empty pages make
 * one line).
 */
static int
dump_block (const struct image *im, uint64_t b)
{
  uint32_t ppb = im->g.pages_per_block;
  uint32_t run_pages = MAX (1, MIN (ppb, READ_BYTES / im->g.page_size));
  uint32_t run_start = UINT32_MAX, empty_from = UINT32_MAX;
  struct ftl_block_info bi;
  enum ftl_fmt_status s;
  uint8_t *meta, *buf;
  int r, run_r = 0;

  if (b >= im->g.blocks) {
    ftlctl_error ("%s: erase block %" PRIu64 " is beyond the last (%u)",
                  im->file, b, im->g.blocks - 1);
    return FTLCTL_EXIT_ERROR;
  }
  ftl_inspect_block (im->ftl, b, &bi);
  meta = g_malloc (ftl_inspect_meta_bytes (im->ftl));
  buf = g_malloc ((size_t) run_pages * im->g.page_size);
  r = ftl_inspect_read_meta (im->ftl, b, meta);
  if (r < 0) {
    ftlctl_error ("%s: reading erase block %" PRIu64 ": %s", im->file, b,
                  g_strerror (-r));
    goto out;
  }

  printf ("erase block %" PRIu64 ": %s, erase count %u, %u of %u pages "
          "written, %u valid\n", b, block_state_name (bi.state),
          bi.erase_count, bi.write_pointer, ppb, bi.valid);
  printf ("  metadata offset:  %" PRIu64 "\n", bi.meta_offset);
  printf ("  data offset:      %" PRIu64 "\n", bi.data_offset);
  print_headers (im, meta);

  for (uint32_t p = 0; p <= ppb; p++) {
    struct ftl_oob o;

    s = p < ppb
      ? fmt_oob_decode (ftl_inspect_oob_entry (meta, p), FTL_OOB_BYTES, &o)
      : FTL_FMT_OK;
    /* Runs of empty pages make one line. */
    if (s == FTL_FMT_EMPTY) {
      if (empty_from == UINT32_MAX)
        empty_from = p;
      continue;
    }
    if (empty_from != UINT32_MAX) {
      if (empty_from == p - 1)
        printf ("  page %5u  empty\n", empty_from);
      else
        printf ("  pages %u-%u  empty\n", empty_from, p - 1);
      empty_from = UINT32_MAX;
    }
    if (p == ppb)
      break;
    if (s != FTL_FMT_OK) {
      printf ("  page %5u  damaged OOB entry (%s)\n", p,
              fmt_status_string (s));
      continue;
    }
    if (run_start == UINT32_MAX || p >= run_start + run_pages) {
      run_start = p;
      run_r = ftl_inspect_read_pages (im->ftl, b * ppb + p,
                                      MIN (run_pages, ppb - p), buf);
    }
    print_block_page (im, &bi, b, p, &o, run_r < 0 ? NULL :
                      buf + (size_t) (p - run_start) * im->g.page_size);
  }

 out:
  g_free (buf);
  g_free (meta);
  return r < 0 ? FTLCTL_EXIT_ERROR : FTLCTL_EXIT_OK;
}

int
cmd_dump (int argc, char **argv)
{
  char *page_s = NULL, *lpn_s = NULL, *block_s = NULL;
  gboolean hex = FALSE;
  const GOptionEntry entries[] = {
    { "page", 'p', 0, G_OPTION_ARG_STRING, &page_s,
      "Show physical page PPN", "PPN" },
    { "lpn", 'l', 0, G_OPTION_ARG_STRING, &lpn_s,
      "Show the physical page that logical page LPN maps to", "LPN" },
    { "block", 'b', 0, G_OPTION_ARG_STRING, &block_s,
      "Show erase block N, a line per page", "N" },
    { "hex", 'x', 0, G_OPTION_ARG_NONE, &hex,
      "With --page or --lpn: a hex dump of the page's data", NULL },
    { NULL }
  };
  GOptionContext *ctx;
  struct image im;
  uint64_t v;
  int status = FTLCTL_EXIT_USAGE;

  ctx = g_option_context_new ("FILE");
  g_option_context_set_summary (ctx, "Show a page or an erase block of an "
                                "nbdkit-ftl image as it is on the media.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv))
    goto out;
  if (!one_image_arg (ctx, argc)) {
    goto out;
  }
  if ((page_s != NULL) + (lpn_s != NULL) + (block_s != NULL) != 1) {
    usage_error (ctx, "give one of --page, --lpn and --block");
    goto out;
  }
  if (hex && block_s) {
    usage_error (ctx, "--hex goes with --page or --lpn");
    goto out;
  }
  if (!parse_uint64 (page_s ? "--page" : lpn_s ? "--lpn" : "--block",
                     page_s ? page_s : lpn_s ? lpn_s : block_s, &v))
    goto out;

  status = FTLCTL_EXIT_ERROR;
  im.file = argv[1];
  im.ftl = image_open (im.file, true, false);
  if (im.ftl == NULL)
    goto out;
  ftl_get_geometry (im.ftl, &im.g);
  if (page_s)
    status = dump_page (&im, v, hex);
  else if (lpn_s)
    status = dump_lpn (&im, v, hex);
  else
    status = dump_block (&im, v);
  ftl_close (im.ftl);

 out:
  g_option_context_free (ctx);
  g_free (page_s);
  g_free (lpn_s);
  g_free (block_s);
  return status;
}
