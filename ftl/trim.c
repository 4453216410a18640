/* nbdkit-ftl: the trim log.
 *
 * Trims and zeros unmap pages in the map at once; to survive a crash they
 * are also recorded as trim entries (first LPN, count, sequence number).
 * Entries collect in a buffer under trim_lock and are written to the log
 * as pages of kind FTL_OOB_TRIM at the metadata frontier when the buffer
 * fills, at every flush and before any erase.  An entry is appended
 * before its pages are unmapped (see ftl-internal.h for why).
 *
 * A trim page is live while replay could need it: while its highest
 * sequence number is not older than that of the older checkpoint slot
 * (recovery falls back to it if the newest is damaged).  GC copies live
 * trim pages and drops the rest.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

/* Write the buffered entries as one trim page (under trim_lock). */
static int
write_trim_page (struct ftl *ftl)
{
  struct frontier *f = &ftl->metaf;
  uint8_t oob[FTL_OOB_BYTES];
  uint64_t maxseq = 0;
  int r;

  assert (ftl->trim_count > 0);
  r = frontier_ensure_block (ftl, f);
  if (r < 0)
    return r;
  for (uint32_t i = 0; i < ftl->trim_count; i++)
    maxseq = MAX (maxseq, ftl->trim_buf[i].seq);
  ftl_trim_page_encode (ftl->trim_buf, ftl->trim_count, ftl->trim_page,
                        ftl->page_size);

  uint32_t ppn = media_ppn (&ftl->media, f->block, f->wp);
  struct ftl_oob o = {
    .kind = FTL_OOB_TRIM,
    .lpn = ftl->trim_count,
    .seq = maxseq,
    .erase_count = media_erase_count (&ftl->media, f->block),
    .data_checksum = ftl_checksum (ftl->trim_page, ftl->page_size, ppn),
  };
  ftl_oob_encode (&o, oob);
  gc_note_trim_page (ftl, f->block, maxseq);
  r = media_program (&ftl->media, f->block, f->wp, 1, ftl->trim_page, oob);
  __atomic_fetch_add (&ftl->trim_pages[f->block], 1, __ATOMIC_RELAXED);
  frontier_advance (ftl, f, 1);
  if (r < 0) {
    ftl_log (ftl, FTL_LOG_ERROR, "writing trim records: %s", strerror (-r));
    return r;
  }
  ftl->trim_count = 0;
  return 0;
}

/* Outside GC, before taking trim_lock (GC takes it too): reclaim
 * blocks first if the free pool is low, so that a trim page about to be
 * written finds a block without eating into GC's reserve.  Called by
 * trimlog_append and, before trimlog_flush, by flushes.
 */
int
trimlog_make_room (struct ftl *ftl)
{
  if (gc_running_here () || alloc_nfree (ftl) > ftl->gc_low)
    return 0;
  int r = gc_reclaim (ftl, ftl->gc_low);
  return r == -ENOSPC ? 0 : r;
}

int
trimlog_append (struct ftl *ftl, uint64_t lpn, uint64_t count,
                uint64_t *seqp)
{
  int r;

  assert (lpn + count <= ftl->logical_pages);
  assert (count > 0 && count < UINT32_MAX);
  r = trimlog_make_room (ftl);
  if (r < 0)
    return r;
  pthread_mutex_lock (&ftl->trim_lock);
  if (ftl->trim_count == ftl->trim_cap)
    r = write_trim_page (ftl);
  if (r == 0) {
    uint64_t seq = __atomic_fetch_add (&ftl->next_seq, 1, __ATOMIC_RELAXED);
    ftl->trim_buf[ftl->trim_count++] = (struct ftl_trim_entry) {
      .lpn = lpn, .count = count, .seq = seq,
    };
    if (seqp)
      *seqp = seq;
  }
  pthread_mutex_unlock (&ftl->trim_lock);
  return r;
}

int
trimlog_flush (struct ftl *ftl)
{
  int r = 0;

  pthread_mutex_lock (&ftl->trim_lock);
  if (ftl->trim_count > 0)
    r = write_trim_page (ftl);
  pthread_mutex_unlock (&ftl->trim_lock);
  return r;
}

void
trimlog_drop_before (struct ftl *ftl, uint64_t seq)
{
  uint32_t j = 0;

  pthread_mutex_lock (&ftl->trim_lock);
  for (uint32_t i = 0; i < ftl->trim_count; i++)
    if (ftl->trim_buf[i].seq >= seq)
      ftl->trim_buf[j++] = ftl->trim_buf[i];
  ftl->trim_count = j;
  pthread_mutex_unlock (&ftl->trim_lock);
}
