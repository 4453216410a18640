/* nbdkit-ftl: the trim log and barriers.
 *
 * Trims and zeros unmap pages in the map at once; to survive a crash they
 * are also recorded as trim records (first LPN, count, sequence number).
 * Records collect in a buffer under trim_lock and are written to the log
 * as pages of kind FTL_OOB_TRIM at the metadata frontier when the buffer
 * fills, at every barrier and at a clean shutdown.  A record is appended
 * before its pages are unmapped (see ftl-internal.h for why).
 *
 * A barrier (trimlog_barrier) writes the buffered records and syncs the
 * backing file: every write, trim and relocation completed before it
 * began is then durable (with sync=false: in the host's page cache, so
 * durable against the death of the server, not a crash of the host;
 * ftl-internal.h).  A client's flush is a barrier, and GC runs one
 * before it erases blocks whose pages were replaced (map.c: drain notes).
 *
 * A trim page is live while replay could need it: while its highest
 * sequence number is not older than that of the older checkpoint slot
 * (recovery falls back to it if the newest is damaged).  GC copies live
 * trim pages and drops the rest.
 *
 * The metadata frontier keeps a page of room for the buffer: the first
 * record that enters an empty buffer opens a block for it if the
 * frontier has no room left (trimlog_append, as ALLOC_TRIM: the free
 * pool's account, state.h).  Writing the buffer (a full buffer, a
 * barrier, a clean shutdown) then needs no free block: GC can run the
 * barrier that precedes its erases even when it has taken the last
 * free block for its copies.
 *
 * A failed program takes that room (its page counts as programmed).
 * The block that replaces it is taken as any trim record's
 * (ALLOC_TRIM), never from GC's reserve: no erase would pay that back,
 * and GC's next victim would find no block for its copies.  When none
 * is free above the reserve the records wait without room, and the
 * next write of them opens a block (ALLOC_TRIM) or, within GC's
 * barrier, goes to the room of a GC frontier or a block of GC's
 * reserve (ALLOC_GC: the erase that follows the barrier pays it back);
 * a client's flush that finds none collects garbage and tries again
 * (write_barrier in write.c).
 *
 * This module never runs garbage collection: when trimlog_append finds
 * no block to open it fails with -ENOSPC, the record is not appended,
 * and the caller collects garbage (gc_make_room) and tries again.
 *
 * Invariants: trim_count <= trim_cap; while trim_count > 0 the metadata
 * frontier has an open block with room for at least one page (after a
 * failed program closed its block, a new one is opened at once as for
 * any trim record; only if none is free above the reserve does the
 * buffer wait without room, see above); every
 * buffered record's sequence number is newer than the older
 * checkpoint's (older ones are dropped by trimlog_drop_before once both
 * slots include them).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

int
trimlog_init (struct ftl *ftl)
{
  pthread_mutex_init (&ftl->trim_lock, NULL);
  ftl->trim_cap = fmt_trim_page_capacity (ftl->page_size);
  ftl->trim_buf = malloc (ftl->trim_cap * sizeof *ftl->trim_buf);
  ftl->trim_page = malloc (ftl->page_size);
  if (!ftl->trim_buf || !ftl->trim_page)
    return -ENOMEM;
  return 0;
}

void
trimlog_free (struct ftl *ftl)
{
  free (ftl->trim_buf);
  free (ftl->trim_page);
  ftl->trim_buf = NULL;
  ftl->trim_page = NULL;
  pthread_mutex_destroy (&ftl->trim_lock);
}

/* Give the metadata frontier room again after a failed program closed
 * its block with records still buffered, as for any trim record
 * (ALLOC_TRIM): a block taken here from GC's reserve would never be
 * given back.  -ENOSPC: the records wait without room.
 */
static int
reopen_after_error (struct ftl *ftl)
{
  int r = alloc_frontier_open (ftl, &ftl->metaf, ALLOC_TRIM);
  if (r == -ENOSPC)
    log_debug (ftl, FTL_DEBUG_ALLOC, "trim records wait for a free erase "
               "block after a failed program (%u free)", alloc_nfree (ftl));
  return r;
}

/* Where the buffered records go (under trim_lock): the room the
 * metadata frontier keeps; after a failed program took it, a new block
 * of its own, else spare's room or a block of GC's reserve for spare
 * (a GC frontier, within GC's barrier: see the top of the file).
 * NULL: no room anywhere (*r says why).
 */
static struct frontier *
trim_page_frontier (struct ftl *ftl, struct frontier *spare, int *r)
{
  struct frontier *f = &ftl->metaf;

  *r = 0;
  if (alloc_frontier_room (ftl, f) > 0 || (*r = reopen_after_error (ftl)) == 0)
    return f;
  if (*r != -ENOSPC || spare == NULL)
    return NULL;
  if (alloc_frontier_room (ftl, spare) == 0 &&
      (*r = alloc_frontier_open (ftl, spare, ALLOC_GC)) < 0)
    return NULL;
  log_debug (ftl, FTL_DEBUG_ALLOC, "trim records go to a GC frontier "
             "(block %u)", spare->block);
  *r = 0;
  return spare;
}

/* Write the buffered records as one trim page (under trim_lock). */
static int
write_trim_page (struct ftl *ftl, struct frontier *spare)
{
  struct log_page lp = { .kind = FTL_OOB_TRIM };
  struct frontier *f;
  int r;

  assert (ftl->trim_count > 0 && ftl->trim_count <= ftl->trim_cap);
  f = trim_page_frontier (ftl, spare, &r);
  if (f == NULL)
    return r;
  for (uint32_t i = 0; i < ftl->trim_count; i++)
    lp.seq = MAX (lp.seq, ftl->trim_buf[i].seq);
  lp.trim_entries = ftl->trim_count;
  fmt_trim_page_encode (ftl->trim_buf, ftl->trim_count, ftl->trim_page,
                        ftl->page_size);
  r = alloc_program (ftl, f, &lp, 1, ftl->trim_page, NULL);
  if (r < 0) {
    /* The page counts as programmed; the records stay buffered and keep
     * their room if a block allows.
     */
    if (alloc_frontier_room (ftl, &ftl->metaf) == 0)
      reopen_after_error (ftl);
    return r;
  }
  ftl->trim_count = 0;
  return 0;
}

int
trimlog_append (struct ftl *ftl, uint64_t lpn, uint64_t count)
{
  int r = 0;

  assert (lpn + count <= ftl->logical_pages);
  assert (count > 0 && count < UINT32_MAX);
  pthread_mutex_lock (&ftl->trim_lock);
  if (ftl->trim_count == ftl->trim_cap)
    r = write_trim_page (ftl, NULL);
  /* The page this record will go out in has its room before the record
   * is buffered.
   */
  if (r == 0 && alloc_frontier_room (ftl, &ftl->metaf) == 0)
    r = alloc_frontier_open (ftl, &ftl->metaf, ALLOC_TRIM);
  if (r == 0) {
    uint64_t seq = __atomic_fetch_add (&ftl->next_seq, 1, __ATOMIC_RELAXED);
    ftl->trim_buf[ftl->trim_count++] = (struct ftl_trim_entry) {
      .lpn = lpn, .count = count, .seq = seq,
    };
  }
  pthread_mutex_unlock (&ftl->trim_lock);
  return r;
}

int
trimlog_flush (struct ftl *ftl, struct frontier *spare)
{
  int r = 0;

  pthread_mutex_lock (&ftl->trim_lock);
  if (ftl->trim_count > 0)
    r = write_trim_page (ftl, spare);
  pthread_mutex_unlock (&ftl->trim_lock);
  return r;
}

int
trimlog_barrier (struct ftl *ftl, struct frontier *spare)
{
  uint64_t k = map_barrier_begin (ftl);
  int r;

  /* Writing trim records is work done for everybody: a request's
   * deadline does not interrupt it (deadline.h), only the sync after.
   */
  uint64_t durable;

  dl_hold ();
  r = trimlog_flush (ftl, spare);
  dl_release ();
  /* Every page below this is programmed: durable after the sync. */
  durable = durable_sample (ftl);
  if (r == 0)
    r = media_sync (&ftl->media);
  if (r < 0)
    return r;
  map_barrier_done (ftl, k);
  durable_synced (ftl, durable);
  return 0;
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
