/* nbdkit-ftl: unit tests of inspect.c, the inspection API.
 *
 * On a small image with known contents: the summary, each erase block,
 * the map and the pages read through the API agree with what was
 * written; the superblock copies and checkpoint slots read raw decode
 * and pass the checkpoint validity rule; and every call refuses what
 * inspect.h says it refuses (-EINVAL beyond the last erase block,
 * physical or logical page, -EIO for a file that ends too soon).
 */

#include <config.h>

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect.h"
#include "helpers.h"

#define PS     4096
#define PPB    8
#define SIZE   (256 * PS)
#define NPAGES 20               /* logical pages written: 0 .. NPAGES-1 */

static char path[256];

static void
setup (void)
{
  struct ftl *ftl;
  uint8_t page[PS];

  unit_dir_clean ();
  unit_path (path, sizeof path, "inspect.img");
  ftl = unit_open (path, SIZE, PS, PPB, 100, 1, NULL);
  for (uint64_t lpn = 0; lpn < NPAGES; lpn++) {
    memset (page, (int) lpn + 1, sizeof page);
    ck_assert_int_eq (ftl_write (ftl, page, PS, lpn * PS, 0), 0);
  }
  ck_assert_int_eq (ftl_close (ftl), 0);
}

static struct ftl *
open_readonly (void)
{
  struct ftl_options o = { .path = path, .readonly = true,
                           .log = unit_log };
  char err[256] = "";
  struct ftl *ftl;

  ck_assert_msg (ftl_open (&o, &ftl, err, sizeof err) == 0, "%s", err);
  return ftl;
}

START_TEST (test_inspect_handle)
{
  struct ftl *ftl = open_readonly ();
  struct ftl_geometry g;
  struct ftl_image_info ii;
  struct ftl_block_info bi;
  uint32_t ppn, sum = 0;
  uint64_t gen;
  unsigned slot;
  uint8_t *meta, data[2 * PS];
  struct ftl_oob o;

  ftl_get_geometry (ftl, &g);
  ftl_inspect_image (ftl, &ii);
  ck_assert_str_eq (ii.path, path);
  ck_assert_uint_eq (ii.sb.state, FTL_SB_CLEAN);
  ck_assert_uint_eq (ii.mapped_count, NPAGES);
  ck_assert_uint_eq (ii.worn_out, false);
  for (unsigned s = 0; s <= FTL_BLK_RETIRED; s++)
    sum += ii.blocks_in_state[s];
  ck_assert_uint_eq (sum, g.blocks);
  ck_assert_uint_eq (ii.blocks_unknown, 0);
  ck_assert_uint_eq (ii.free_pool, ii.blocks_in_state[FTL_BLK_FREE]);
  /* The layout of format.h: metadata region, then data region, each
   * block's data aligned to its size.
   */
  ck_assert_uint_eq (ii.sb.meta_offset,
                     ii.sb.ckpt_offset[1] + ii.sb.ckpt_bytes);
  ck_assert_uint_eq (ii.sb.data_offset % ((uint64_t) PPB * PS), 0);
  ck_assert_uint_ge (ii.sb.data_offset, ii.sb.meta_offset
                     + (uint64_t) g.blocks * ftl_inspect_meta_bytes (ftl));
  ck_assert_uint_eq (ii.block_bytes, ftl_inspect_meta_bytes (ftl)
                     + (uint64_t) PPB * PS);
  ck_assert_uint_eq (ii.image_bytes, ii.sb.data_offset
                     + (uint64_t) g.blocks * PPB * PS);
  ck_assert_uint_eq (unit_file_size (path), ii.image_bytes);
  ftl_inspect_checkpoint (ftl, &gen, &slot);
  ck_assert_uint_ge (gen, 2);
  ck_assert_uint_le (slot, 1);

  /* Logical page 5: its physical page, its OOB entry and its data. */
  ck_assert_int_eq (ftl_inspect_lookup (ftl, 5, &ppn), 0);
  ck_assert_uint_ne (ppn, FTL_UNMAPPED);
  ck_assert_int_eq (ftl_inspect_block (ftl, ppn / PPB, &bi), 0);
  ck_assert_uint_gt (bi.write_pointer, ppn % PPB);
  ck_assert_uint_ge (bi.valid, 1);
  ck_assert_uint_eq (bi.meta_offset, ii.sb.meta_offset
                     + (ppn / PPB) * ftl_inspect_meta_bytes (ftl));
  ck_assert_uint_eq (bi.data_offset, ii.sb.data_offset
                     + (uint64_t) (ppn / PPB) * PPB * PS);
  meta = malloc (ftl_inspect_meta_bytes (ftl));
  ck_assert_int_eq (ftl_inspect_read_meta (ftl, ppn / PPB, meta), 0);
  ck_assert_int_eq (fmt_oob_decode (ftl_inspect_oob_entry (meta, ppn % PPB),
                                    FTL_OOB_BYTES, &o), FTL_FMT_OK);
  ck_assert_uint_eq (o.kind, FTL_OOB_DATA);
  ck_assert_uint_eq (o.lpn, 5);
  ck_assert_uint_eq (o.erase_count, bi.erase_count);
  ck_assert_int_eq (ftl_inspect_read_pages (ftl, ppn, 1, data), 0);
  ck_assert_uint_eq (data[0], 6);
  ck_assert_uint_eq (data[PS - 1], 6);
  ck_assert_uint_eq (fmt_checksum (data, PS, ftl_inspect_page_seed (ftl, &o, ppn)),
                     o.data_checksum);
  /* A new image seeds with the page's kind and logical page. */
  ck_assert_uint_eq (fmt_checksum (data, PS, fmt_page_seed (FTL_SB_LPN_SEED,
                                                            FTL_OOB_DATA, 5, 0)),
                     o.data_checksum);
  free (meta);

  /* An unwritten logical page is not mapped. */
  ck_assert_int_eq (ftl_inspect_lookup (ftl, NPAGES, &ppn), 0);
  ck_assert_uint_eq (ppn, FTL_UNMAPPED);

  /* What is refused. */
  ck_assert_int_eq (ftl_inspect_lookup (ftl, g.logical_pages, &ppn),
                    -EINVAL);
  ck_assert_int_eq (ftl_inspect_block (ftl, g.blocks, &bi), -EINVAL);
  ck_assert_int_eq (ftl_inspect_read_meta (ftl, g.blocks, data), -EINVAL);
  ck_assert_int_eq (ftl_inspect_read_pages (ftl, 0, 0, data), -EINVAL);
  ck_assert_int_eq (ftl_inspect_read_pages (ftl, PPB - 1, 2, data), -EINVAL);
  ck_assert_int_eq (ftl_inspect_read_pages (ftl, g.blocks * PPB, 1, data),
                    -EINVAL);
  ck_assert_int_eq (ftl_close (ftl), 0);
}
END_TEST

START_TEST (test_inspect_raw)
{
  struct ftl_superblock sb[2];
  struct ftl_ckpt_header h;
  enum ftl_fmt_status st[2], hs;
  char why[128], short_path[256];
  uint8_t *body;
  int fd, newest = -1, valid = 0;

  fd = open (path, O_RDONLY);
  ck_assert_int_ge (fd, 0);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq (ftl_inspect_read_sb (fd, i, &sb[i], &st[i], why,
                                           sizeof why), 0);
    if (st[i] == FTL_FMT_OK &&
        (newest < 0 || sb[i].generation > sb[newest].generation))
      newest = i;
  }
  ck_assert_int_ge (newest, 0);
  ck_assert_int_eq (ftl_inspect_read_sb (fd, 2, &sb[0], &st[0], NULL, 0),
                    -EINVAL);

  for (int s = 0; s < 2; s++) {
    ck_assert_int_eq (ftl_inspect_read_ckpt_header (fd, &sb[newest], s, &h,
                                                    &hs), 0);
    if (hs == FTL_FMT_EMPTY)
      continue;
    ck_assert_int_eq (hs, FTL_FMT_OK);
    ck_assert (fmt_ckpt_header_check (&h, &sb[newest], why, sizeof why));
    body = malloc (h.body_bytes);
    ck_assert_int_eq (ftl_inspect_read_ckpt_body (fd, &sb[newest], s, &h,
                                                  body, NULL), 0);
    ck_assert (fmt_ckpt_body_check (&h, body));
    ck_assert (ftl_inspect_body_check (&h, body, NULL));
    free (body);
    /* The same read piece by piece, the holes skipped. */
    uint8_t *present = calloc (h.body_bytes / FTL_INSPECT_PIECE + 1, 1);
    body = ftl_inspect_body_alloc (h.body_bytes);
    ck_assert_ptr_nonnull (body);
    ck_assert_int_eq (ftl_inspect_read_ckpt_body (fd, &sb[newest], s, &h,
                                                  body, present), 0);
    ck_assert (ftl_inspect_body_check (&h, body, present));
    ftl_inspect_body_free (body, h.body_bytes);
    free (present);
    valid++;
  }
  ck_assert_int_ge (valid, 1);
  close (fd);

  /* A file that ends inside superblock copy B. */
  unit_path (short_path, sizeof short_path, "short.img");
  fd = open (short_path, O_RDWR | O_CREAT | O_TRUNC, 0644);
  ck_assert_int_ge (fd, 0);
  ck_assert_int_eq (ftruncate (fd, FTL_SB_SLOT + 100), 0);
  ck_assert_int_eq (ftl_inspect_read_sb (fd, 1, &sb[0], &st[0], NULL, 0),
                    -EIO);
  ck_assert_int_eq (ftl_inspect_read_sb (fd, 0, &sb[0], &st[0], NULL, 0), 0);
  ck_assert_int_eq (st[0], FTL_FMT_EMPTY);
  close (fd);
}
END_TEST

static Suite *
inspect_suite (void)
{
  Suite *s = suite_create ("inspect");
  TCase *tc = tcase_create ("inspect");

  tcase_set_timeout (tc, 60);
  tcase_add_unchecked_fixture (tc, unit_dir_create, unit_dir_remove);
  tcase_add_checked_fixture (tc, setup, NULL);
  tcase_add_test (tc, test_inspect_handle);
  tcase_add_test (tc, test_inspect_raw);
  suite_add_tcase (s, tc);
  return s;
}

int
main (void)
{
  SRunner *sr = srunner_create (inspect_suite ());
  int failed;

  srunner_run_all (sr, CK_NORMAL);
  failed = srunner_ntests_failed (sr);
  srunner_free (sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
