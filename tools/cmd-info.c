/* ftlctl info: describe an image.
 *
 * Opens the image read-only (recovery runs in memory and nothing is
 * written), gathers what there is to say into struct info, and prints
 * it as text or as one JSON object whose members are nested as in the
 * plugin's statistics file.
 */

#include <config.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <glib.h>

#include "ftlctl.h"
#include "json.h"

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
  struct bucket hist[HIST_BUCKETS];
  unsigned nbuckets;
  char created[64];
};

/* Fill in everything info shows from the open image. */
static void
gather (struct ftl *ftl, const char *file, struct info *in)
{
  uint32_t span, width;

  memset (in, 0, sizeof *in);
  in->file = file;
  ftl_get_geometry (ftl, &in->g);
  ftl_get_stats (ftl, &in->st);
  ftl_inspect_image (ftl, &in->ii);

  /* One bucket per erase count when they are few, else HIST_BUCKETS
   * buckets of equal width from the lowest to the highest.
   */
  span = in->st.erase_max - in->st.erase_min + 1;
  width = (span + MIN (span, HIST_BUCKETS) - 1) / MIN (span, HIST_BUCKETS);
  in->nbuckets = (span + width - 1) / width;
  for (unsigned i = 0; i < in->nbuckets; i++) {
    in->hist[i].from = in->st.erase_min + i * width;
    in->hist[i].to = MIN (in->hist[i].from + width - 1, in->st.erase_max);
  }
  for (uint32_t b = 0; b < in->g.blocks; b++) {
    struct ftl_block_info bi;
    ftl_inspect_block (ftl, b, &bi);
    in->hist[(bi.erase_count - in->st.erase_min) / width].blocks++;
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
  field ("checkpoint", "generation %" PRIu64 " (slot %u)\n",
         in->ii.ckpt_generation, in->ii.ckpt_slot);

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

  printf ("\ncapacity:\n");
  field ("  mapped pages", "%" PRIu64 " / %" PRIu64 " (%.1f%%)\n",
         st->mapped_pages, in->g.logical_pages,
         100.0 * st->mapped_pages / in->g.logical_pages);
  field ("  erase blocks", "%u free, %u open, %u full, %u retired\n",
         in->ii.blocks_in_state[FTL_BLK_FREE], in->ii.blocks_in_state[FTL_BLK_OPEN],
         in->ii.blocks_in_state[FTL_BLK_FULL], in->ii.blocks_in_state[FTL_BLK_RETIRED]);

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
  field ("  waf", "%.4f\n", st->waf);
}

/* The JSON output: one object, nested as the statistics file. */
static void
print_json (const struct info *in)
{
  const struct ftl_stats *st = &in->st;
  struct json j;
  char *text;

  json_init (&j);
  json_begin_object (&j, NULL);
  json_string (&j, "file", in->file);
  json_string (&j, "uuid", in->ii.uuid);
  json_uint (&j, "created", in->ii.sb.created);

  json_begin_object (&j, "superblock");
  json_string (&j, "state", sb_state (in));
  json_bool (&j, "clean", in->ii.sb.state == FTL_SB_CLEAN);
  json_uint (&j, "generation", in->ii.sb.generation);
  json_end_object (&j);

  json_begin_object (&j, "checkpoint");
  json_uint (&j, "generation", in->ii.ckpt_generation);
  json_uint (&j, "slot", in->ii.ckpt_slot);
  json_end_object (&j);

  json_begin_object (&j, "geometry");
  json_uint (&j, "page_size", in->g.page_size);
  json_uint (&j, "pages_per_block", in->g.pages_per_block);
  json_uint (&j, "blocks", in->g.blocks);
  json_uint (&j, "logical_bytes", in->g.logical_bytes);
  json_uint (&j, "logical_pages", in->g.logical_pages);
  json_double (&j, "op_percent", in->g.op_percent);
  json_uint (&j, "physical_bytes", in->ii.physical_bytes);
  json_uint (&j, "image_bytes", in->ii.image_bytes);
  json_uint (&j, "meta_pages", in->ii.sb.meta_pages);
  json_uint (&j, "data_offset", in->ii.sb.data_offset);
  json_end_object (&j);

  json_begin_object (&j, "capacity");
  json_uint (&j, "mapped_pages", st->mapped_pages);
  json_uint (&j, "logical_pages", in->g.logical_pages);
  json_end_object (&j);

  json_begin_object (&j, "blocks");
  json_uint (&j, "free", in->ii.blocks_in_state[FTL_BLK_FREE]);
  json_uint (&j, "open", in->ii.blocks_in_state[FTL_BLK_OPEN]);
  json_uint (&j, "full", in->ii.blocks_in_state[FTL_BLK_FULL]);
  json_uint (&j, "retired", in->ii.blocks_in_state[FTL_BLK_RETIRED]);
  json_uint (&j, "total", in->g.blocks);
  json_end_object (&j);

  json_begin_object (&j, "wear");
  json_uint (&j, "erase_min", st->erase_min);
  json_uint (&j, "erase_max", st->erase_max);
  json_double (&j, "erase_mean", st->erase_mean);
  json_uint (&j, "endurance", st->endurance);
  json_uint (&j, "retired_blocks", st->retired_blocks);
  json_bool (&j, "worn_out", in->ii.worn_out);
  json_begin_array (&j, "histogram");
  for (unsigned i = 0; i < in->nbuckets; i++) {
    json_begin_object (&j, NULL);
    json_uint (&j, "erase_from", in->hist[i].from);
    json_uint (&j, "erase_to", in->hist[i].to);
    json_uint (&j, "blocks", in->hist[i].blocks);
    json_end_object (&j);
  }
  json_end_array (&j);
  json_end_object (&j);

  json_begin_object (&j, "host");
  json_uint (&j, "write_pages", st->host_write_pages);
  json_uint (&j, "read_pages", st->host_read_pages);
  json_uint (&j, "trim_pages", st->host_trim_pages);
  json_uint (&j, "flushes", st->host_flushes);
  json_end_object (&j);

  json_begin_object (&j, "media");
  json_uint (&j, "program_pages", st->media_program_pages);
  json_uint (&j, "read_pages", st->media_read_pages);
  json_uint (&j, "erases", st->media_erases);
  json_end_object (&j);

  json_begin_object (&j, "gc");
  json_uint (&j, "copied_pages", st->gc_copied_pages);
  json_uint (&j, "runs", st->gc_runs);
  json_uint (&j, "background_runs", st->gc_background_runs);
  json_end_object (&j);

  json_begin_object (&j, "wl");
  json_uint (&j, "moved_pages", st->wl_moved_pages);
  json_end_object (&j);

  json_uint (&j, "checkpoints", st->checkpoints);
  json_uint (&j, "mapped_pages", st->mapped_pages);
  json_double (&j, "waf", st->waf);
  json_end_object (&j);

  text = json_finish (&j);
  fputs (text, stdout);
  g_free (text);
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
  if (argc != 2) {
    usage_error (ctx, argc < 2 ? "no image file given"
                 : "too many arguments");
    goto out;
  }

  status = FTLCTL_EXIT_ERROR;
  ftl = image_open (argv[1], true, false);
  if (ftl == NULL)
    goto out;
  gather (ftl, argv[1], &in);
  ftl_close (ftl);
  if (json)
    print_json (&in);
  else
    print_text (&in);
  status = FTLCTL_EXIT_OK;

 out:
  g_option_context_free (ctx);
  return status;
}
