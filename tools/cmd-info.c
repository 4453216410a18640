/* ftlctl info: describe an image.
 *
 * Opens the image read-only (recovery runs in memory and nothing is
 * written) and prints it as text, gathered into struct info, or as one
 * JSON object: the library's statistics renderer, the plugin's, with
 * the image's section (ftl.h: FTL_STATS_IMAGE), so that a member that
 * both show has the same name and the same value, and the namespaces
 * as ns-list --json shows them.
 */

#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "ftlctl.h"

/* Erase count histogram: at most this many buckets of equal width. */
#define HIST_BUCKETS 10
/* Width of the longest bar in the text histogram. */
#define HIST_BAR 40
/* Column of the values in the text output. */
#define FIELD_WIDTH 22

struct bucket {
  uint32_t from, to;            /* erase counts, inclusive */
  uint32_t blocks;
};

struct info {
  const char *file;
  struct ftl_geometry g;
  struct ftl_stats st;
  struct ftl_image_info ii;
  uint64_t ckpt_gen;
  unsigned ckpt_slot;
  struct bucket hist[HIST_BUCKETS];
  unsigned nbuckets;
  char created[64];
  struct ftl *ftl;              /* for its namespaces */
};

/* Fill in everything the text shows from the open image. */
static void
gather (struct ftl *ftl, const char *file, struct info *in)
{
  uint64_t counts[HIST_BUCKETS];
  uint32_t first, width;

  memset (in, 0, sizeof *in);
  in->file = file;
  in->ftl = ftl;
  ftl_get_geometry (ftl, &in->g);
  ftl_get_stats (ftl, &in->st);
  ftl_inspect_image (ftl, &in->ii);
  ftl_inspect_checkpoint (ftl, &in->ckpt_gen, &in->ckpt_slot);

  /* One bucket per erase count when they are few, else HIST_BUCKETS
   * buckets of equal width from the lowest to the highest.
   */
  in->nbuckets = ftl_get_erase_histogram (ftl, counts, HIST_BUCKETS,
                                          &first, &width);
  for (unsigned i = 0; i < in->nbuckets; i++) {
    in->hist[i].from = first + i * width;
    in->hist[i].to = MIN (in->hist[i].from + width - 1, in->st.erase_max);
    in->hist[i].blocks = counts[i];
  }

  time_t t = in->ii.sb.created;
  struct tm tm;
  if (gmtime_r (&t, &tm) == NULL ||
      strftime (in->created, sizeof in->created, "%Y-%m-%d %H:%M:%S UTC",
                &tm) == 0)
    snprintf (in->created, sizeof in->created, "%" PRIu64,
              in->ii.sb.created);
}

/* The superblock's state as a word. */
static const char *
sb_state (const struct info *in)
{
  return in->ii.sb.state == FTL_SB_CLEAN ? "clean" : "dirty";
}

/* One "label:  value" line of the text output, values aligned. */
static void
field (const char *label, const char *fs, ...)
  __attribute__ ((format (printf, 2, 3)));

static void
field (const char *label, const char *fs, ...)
{
  va_list ap;

  printf ("%s:%*s", label, (int) (FIELD_WIDTH - strlen (label)), "");
  va_start (ap, fs);
  vprintf (fs, ap);
  va_end (ap);
}

/* The image's namespaces, in its order (the first is the default
 * export), with their sizes and where each starts in the logical space.
 */
static void
print_namespaces (struct ftl *ftl)
{
  struct ftl_ns *ns;

  printf ("\nnamespaces:\n");
  for (unsigned i = 0; (ns = ftl_ns_at (ftl, i)) != NULL; i++) {
    struct ftl_ns_info n;
    char label[FTL_MAX_NAMESPACE_NAME + 8];

    ftl_ns_get_info (ns, &n);
    snprintf (label, sizeof label, "  %s", n.name[0] ? n.name : "\"\"");
    printf ("%s%*s%" PRIu64 " bytes, from logical byte %" PRIu64 "%s\n",
            label, (int) (strlen (label) < FIELD_WIDTH + 1
                          ? FIELD_WIDTH + 1 - strlen (label) : 0), "",
            n.bytes, n.base, i == 0 ? " (the default export)" : "");
  }
}

/* The text output: sections of aligned "label: value" lines. */
static void
print_text (const struct info *in)
{
  const struct ftl_stats *st = &in->st;
  uint32_t most = 1;

  field ("image", "%s\n", in->file);
  field ("uuid", "%s\n", in->ii.uuid);
  field ("created", "%s\n", in->created);
  field ("state", "%s (superblock generation %" PRIu64 ")%s\n",
         sb_state (in), in->ii.sb.generation,
         in->ii.sb.state == FTL_SB_CLEAN ? "" :
         ": in use, or not shut down cleanly");
  if (in->ii.sb.flags & FTL_SB_UNSYNCED)
    field ("sync=false", "marked: a sync=false session has it open, or "
           "the host crashed during one (pinned checkpoint %" PRIu64 ")\n",
           in->ii.sb.pinned_ckpt_gen);
  field ("checkpoint", "generation %" PRIu64 " (slot %u)\n",
         in->ckpt_gen, in->ckpt_slot);

  printf ("\ngeometry:\n");
  field ("  page size", "%u bytes\n", in->g.page_size);
  field ("  pages per block", "%u\n", in->g.pages_per_block);
  field ("  erase blocks", "%u\n", in->g.blocks);
  field ("  logical size", "%" PRIu64 " bytes (%" PRIu64 " pages)\n",
         in->g.logical_bytes, in->g.logical_pages);
  field ("  over-provisioning", "%g%%\n", in->g.op_percent);
  field ("  physical size", "%" PRIu64 " bytes (%" PRIu64 " pages)\n",
         in->ii.physical_bytes, (uint64_t) in->g.blocks * in->g.pages_per_block);
  field ("  image file size", "%" PRIu64 " bytes (with metadata)\n",
         in->ii.image_bytes);

  print_namespaces (in->ftl);

  printf ("\ncapacity:\n");
  field ("  mapped pages", "%" PRIu64 " / %" PRIu64 " (%.1f%%)\n",
         st->mapped_pages, in->g.logical_pages,
         100.0 * st->mapped_pages / in->g.logical_pages);
  field ("  erase blocks", "%u free, %u open, %u full, %u retired\n",
         in->ii.blocks_in_state[FTL_BLK_FREE], in->ii.blocks_in_state[FTL_BLK_OPEN],
         in->ii.blocks_in_state[FTL_BLK_FULL], in->ii.blocks_in_state[FTL_BLK_RETIRED]);

  printf ("\nmap:\n");
  if (st->map.paged) {
    field ("  paged", "yes: %" PRIu64 " translation pages of %u entries "
           "in the log\n", in->ii.map_pages, FTL_TP_ENTRIES);
    field ("  cache", "%" PRIu64 " bytes in this open (map-cache=; %" PRIu64 " groups)\n",
           st->map.cache_bytes, st->map.cache_bytes / FTL_TP_BYTES);
    field ("  programmed", "%" PRIu64 " translation pages since the image "
           "was made\n", st->map.program_pages);
  }
  else
    field ("  paged", "no: the whole map is in memory (%" PRIu64
           " bytes)\n", st->map.cache_bytes);

  printf ("\nwear:\n");
  field ("  erase count", "min %u, mean %.2f, max %u\n",
         st->erase_min, st->erase_mean, st->erase_max);
  field ("  retired blocks", "%u%s\n", st->retired_blocks,
         in->ii.worn_out ? " (worn out: the disk is read-only)" : "");
  field ("  endurance", "%u erases (default; see the plugin's "
         "endurance=)\n", st->endurance);

  printf ("\nerase count histogram (erase blocks per erase count):\n");
  for (unsigned i = 0; i < in->nbuckets; i++)
    most = MAX (most, in->hist[i].blocks);
  for (unsigned i = 0; i < in->nbuckets; i++) {
    const struct bucket *h = &in->hist[i];
    unsigned bar = ((uint64_t) h->blocks * HIST_BAR + most - 1) / most;
    char range[32];

    if (h->from == h->to)
      snprintf (range, sizeof range, "  %u", h->from);
    else
      snprintf (range, sizeof range, "  %u-%u", h->from, h->to);
    printf ("%-*s%-8u ", FIELD_WIDTH + 1, range, h->blocks);
    for (unsigned k = 0; k < bar; k++)
      putchar ('#');
    putchar ('\n');
  }

  printf ("\ncounters:\n");
  field ("  host write pages", "%" PRIu64 "\n", st->host_write_pages);
  field ("  host read pages", "%" PRIu64 "\n", st->host_read_pages);
  field ("  host trim pages", "%" PRIu64 "\n", st->host_trim_pages);
  field ("  host flushes", "%" PRIu64 "\n", st->host_flushes);
  field ("  media program pages", "%" PRIu64 "\n", st->media_program_pages);
  field ("  media read pages", "%" PRIu64 "\n", st->media_read_pages);
  field ("  media erases", "%" PRIu64 "\n", st->media_erases);
  field ("  gc copied pages", "%" PRIu64 "\n", st->gc_copied_pages);
  field ("  gc runs", "%" PRIu64 " (%" PRIu64 " in the background)\n",
         st->gc_runs, st->gc_background_runs);
  field ("  wl moved pages", "%" PRIu64 "\n", st->wl_moved_pages);
  field ("  checkpoints", "%" PRIu64 "\n", st->checkpoints);
  field ("  waf", "%.4f (%.4f without the map's pages)\n", st->waf,
         st->waf_data);

  printf ("\nmedia errors (see the plugin's errors=):\n");
  field ("  corrected bits", "%" PRIu64 "\n", st->media_corrected_bits);
  field ("  read retries", "%" PRIu64 "\n", st->media_read_retries);
  field ("  media errors", "%" PRIu64 "\n", st->health.media_errors);
  field ("  media clock", "%+.1f days from the wall clock\n",
         st->media_clock_skew / 86400.0);
  field ("  cycles added", "%u (ftlctl age --pe)\n", st->media_pe_offset);
}

/* The JSON: the library's renderer, as for the plugin's statistics
 * file, and the namespaces (ns-list's array, cmd-ns.c) as its last
 * member, unless the library has one: both are rendered alike (two
 * spaces a level), so the second's members follow the first's.
 */
static int
print_json (struct ftl *ftl, const char *file)
{
  char *lib = NULL, *ns = NULL;
  size_t nlib = 0, nns = 0;
  FILE *a = open_memstream (&lib, &nlib), *b = open_memstream (&ns, &nns);
  int r = -ENOMEM;

  if (a && b && ftl_render_stats_json (ftl, FTL_STATS_IMAGE, a) == 0 &&
      ns_render_json (ftl, file, false, b) == 0 &&
      fflush (a) == 0 && fflush (b) == 0) {
    r = 0;
    fflush (stdout);
    if (strstr (lib, "\n  \"namespaces\": ") || nlib < 3 || nns < 2 ||
        strcmp (lib + nlib - 3, "\n}\n") != 0 || strncmp (ns, "{\n", 2) != 0)
      fputs (lib, stdout);
    else
      printf ("%.*s,\n%s", (int) (nlib - 3), lib, ns + 2);
    if (fflush (stdout) != 0)
      r = -errno;
  }
  if (a)
    fclose (a);
  if (b)
    fclose (b);
  free (lib);
  free (ns);
  return r;
}

int
cmd_info (int argc, char **argv)
{
  gboolean json = FALSE;
  const GOptionEntry entries[] = {
    { "json", 0, 0, G_OPTION_ARG_NONE, &json,
      "Print one JSON object", NULL },
    { NULL }
  };
  GOptionContext *ctx;
  struct ftl *ftl;
  struct info in;
  int status = FTLCTL_EXIT_USAGE;

  ctx = g_option_context_new ("FILE");
  g_option_context_set_summary (ctx, "Describe an nbdkit-ftl image: "
                                "geometry, capacity, wear and counters.");
  g_option_context_add_main_entries (ctx, entries, NULL);
  if (!parse_options (ctx, &argc, &argv))
    goto out;
  if (!one_image_arg (ctx, argc)) {
    goto out;
  }

  status = FTLCTL_EXIT_ERROR;
  ftl = image_open (argv[1], true, false);
  if (ftl == NULL)
    goto out;
  if (json) {
    if (print_json (ftl, argv[1]) == 0)
      status = FTLCTL_EXIT_OK;
    else
      ftlctl_error ("writing to standard output: %s", strerror (errno));
  }
  else {
    gather (ftl, argv[1], &in);
    print_text (&in);
    status = FTLCTL_EXIT_OK;
  }
  ftl_close (ftl);                /* read-only: writes nothing */

 out:
  g_option_context_free (ctx);
  return status;
}
