/* nbdkit-ftl: reading host data from the log.
 *
 * read_pages reads whole logical pages as the map shows them, taking no
 * lock: it loads l2p atomically, reads a run of pages that are
 * consecutive on the media with one call, and validates every page by
 * its OOB entry (kind, LPN, the block's erase count, the data checksum
 * seeded with the PPN).  If GC erased the block meanwhile (its erase
 * generation changed), it looks the pages up again.  A page that fails
 * validation is never returned: the read fails with -EIO, as an
 * uncorrectable error does on a drive.
 *
 * It sees the log only, not the write cache (cache.c reads through it
 * for pages it does not hold).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "ftl-internal.h"

/* Longest run of pages read with one call (bounds the OOB buffer). */
#define READ_RUN_MAX 128

/* Read a run of logical pages that map to consecutive physical pages of
 * one block.  Returns -EAGAIN if the block was erased meanwhile.
 */
static int
read_run (struct ftl *ftl, uint64_t lpn, uint32_t ppn, uint32_t n,
          uint8_t *buf)
{
  struct media *m = &ftl->media;
  uint32_t blk = media_ppn_block (m, ppn);
  uint8_t oob[READ_RUN_MAX * FTL_OOB_BYTES];
  uint32_t gen, ec;
  int r;

  /* One block, at most READ_RUN_MAX pages (the OOB buffer). */
  assert (n >= 1 && n <= READ_RUN_MAX);
  assert (media_ppn_page (m, ppn) + n <= ftl->ppb);
  gen = media_block_gen (m, blk);
  if (l2p_load (ftl, lpn) != ppn)
    return -EAGAIN;
  r = media_read (m, ppn, n, buf);
  if (r == 0)
    r = media_read_oob (m, blk, media_ppn_page (m, ppn), n, oob);
  /* The erase count must be taken before the generation is checked
   * again: an erase that starts after that check would otherwise make
   * a good read look like a stale page.
   */
  ec = media_erase_count_acquire (m, blk);
  __atomic_thread_fence (__ATOMIC_SEQ_CST);
  if (media_block_gen (m, blk) != gen)
    return -EAGAIN;
  if (r < 0) {
    if (r != -ETIMEDOUT)
      log_msg (ftl, FTL_LOG_ERROR, "reading erase block %u: %s", blk,
               strerror (-r));
    return r;
  }
  for (uint32_t i = 0; i < n; i++) {
    struct ftl_oob o;
    const uint8_t *p = buf + ((size_t) i << ftl->page_shift);
    enum ftl_fmt_status s = fmt_oob_decode (oob + i * FTL_OOB_BYTES,
                                            FTL_OOB_BYTES, &o);
    if (s != FTL_FMT_OK || o.kind != FTL_OOB_DATA || o.lpn != lpn + i ||
        o.erase_count != ec ||
        o.data_checksum != fmt_checksum (p, ftl->page_size, ppn + i)) {
      log_msg (ftl, FTL_LOG_ERROR, "logical page %" PRIu64 ": page %u of "
               "erase block %u is damaged (%s)", lpn + i,
               media_ppn_page (m, ppn + i), blk,
               s != FTL_FMT_OK ? fmt_status_string (s) :
               o.kind == FTL_OOB_POISON ? "its data was lost: it was "
               "damaged after it was durable" :
               o.kind != FTL_OOB_DATA ? "it holds trim records" :
               o.lpn != lpn + i ? "it belongs to another logical page" :
               o.erase_count != ec ?
               "it was written before the block's last erase" :
               "data checksum mismatch");
      ctr_add (ftl, FTL_CTR_MEDIA_ERRORS, 1);
      return -EIO;
    }
  }
  /* The bit errors the pages would have had (errmodel.h). */
  return errmodel_read (ftl, ppn, n, ec);
}

int
read_pages (struct ftl *ftl, uint64_t lpn, uint32_t n, uint8_t *buf)
{
  uint32_t i = 0;

  while (i < n) {
    uint8_t *p = buf + ((size_t) i << ftl->page_shift);
    uint32_t ppn = l2p_load (ftl, lpn + i);
    if (ppn == FTL_UNMAPPED) {
      memset (p, 0, ftl->page_size);
      i++;
      continue;
    }
    uint32_t room = ftl->ppb - media_ppn_page (&ftl->media, ppn);
    uint32_t run = 1;
    while (i + run < n && run < room && run < READ_RUN_MAX &&
           l2p_load (ftl, lpn + i + run) == ppn + run)
      run++;
    int r = read_run (ftl, lpn + i, ppn, run, p);
    if (r == -EAGAIN)
      continue;                 /* the map moved under us: look again */
    if (r < 0)
      return r;
    i += run;
  }
  return 0;
}

