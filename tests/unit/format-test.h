/* nbdkit-ftl: what the unit tests of format.c share (test-format.c,
 * test-format-ckpt.c, test-format-log.c).
 */

#ifndef FTL_TEST_FORMAT_H
#define FTL_TEST_FORMAT_H

#include "format/format.h"

/* Flip masks tried at every byte position. */
static const uint8_t masks[] = { 0x01, 0x10, 0x80, 0xff };
#define NMASKS (sizeof masks / sizeof masks[0])

/* A self-consistent superblock: 4 KiB pages, 256 pages per block,
 * 64 MiB, 82 erase blocks (28% over-provisioning).
 */
static inline struct ftl_superblock
good_sb (void)
{
  struct ftl_superblock sb = {
    .version = FTL_FORMAT_VERSION,
    .generation = 0x0102030405060708ULL,
    .page_size = 4096,
    .pages_per_block = 256,
    .blocks = 82,
    .logical_bytes = 64 << 20,
    .state = FTL_SB_CLEAN,
    .op_ppm = 280000,
    .clean_ckpt_gen = 0x1122334455667788ULL,
    .uuid = { 0xdeadbeefcafef00dULL, 0x0123456789abcdefULL },
    .created = 1700000000,
  };
  sb.meta_pages = fmt_meta_pages (sb.page_size, sb.pages_per_block);
  sb.ckpt_bytes = fmt_ckpt_bytes (sb.page_size,
                                  sb.logical_bytes / sb.page_size, sb.blocks);
  sb.ckpt_offset[0] = 2 * FTL_SB_SLOT;
  sb.ckpt_offset[1] = sb.ckpt_offset[0] + sb.ckpt_bytes;
  fmt_place_regions (&sb);
  return sb;
}

#endif /* FTL_TEST_FORMAT_H */
