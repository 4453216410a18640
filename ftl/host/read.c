/* nbdkit-ftl: reading host data from the log.
 *
 * read_pages reads whole logical pages as the map shows them, taking no
 * lock: it loads l2p atomically, reads each run of pages that are
 * consecutive on the media with one call, and verifies every page
 * before it returns it:
 *
 *   media_read (the run)
 *     -> checksum of each page (fmt_checksum, seeded with its LPN, or
 *        its PPN in images made before version 7: page_seed)
 *     -> equal to check[lpn] (map.c)?          fast: no more I/O
 *        else: the OOB entries of the rest of the run (kind, LPN, the
 *        block's erase count, the checksum): the slow way, which notes
 *        the check it found for the next read
 *     -> the block's erase generation unchanged?  else look again
 *     -> verified: the pages are returned (the one place where a page
 *        leaves the log, verified)
 *
 * If GC erased the block meanwhile (its erase generation changed), it
 * looks the pages up again.  A page that fails verification is never
 * returned: the read fails with -EIO, as an uncorrectable error does on
 * a drive.  A page without a check (after a race with a write or a
 * relocation, a poison page, a page recovery found damaged) always
 * takes the slow way, so the fast way decides nothing that the OOB
 * entry would decide differently, but for a 32-bit collision.
 *
 * It sees the log only, not the write cache (cache.c reads through it
 * for pages it does not hold).
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <string.h>

#include "ftl-internal.h"

/* Longest run of pages read with one call (bounds the buffers of the
 * checks and the OOB entries, 14 KiB of stack).
 */
#define READ_RUN_MAX MEDIA_IOV_MAX

/* What the checks of a run found: sum[i] is page i's data checksum,
 * seen[i] the check of its logical page when it was compared.
 */
struct run_sums {
  uint64_t sum[READ_RUN_MAX];
  uint32_t seen[READ_RUN_MAX];
};

/* Compare each page of a run with the check of its logical page.
 * Returns the first page that does not match (n if all do).
 */
static uint32_t
verify_fast (struct ftl *ftl, uint64_t lpn, uint32_t ppn, uint32_t n,
             const uint8_t *buf, struct run_sums *s)
{
  uint32_t first = n;

  for (uint32_t i = 0; i < n; i++) {
    const uint8_t *p = buf + ((size_t) i << ftl->page_shift);
    s->sum[i] = fmt_checksum (p, ftl->page_size,
                              page_seed (ftl, FTL_OOB_DATA, lpn + i, ppn + i));
    s->seen[i] = check_load (ftl, lpn + i);
    if (first == n && map_check_fold (s->sum[i]) != s->seen[i])
      first = i;
  }
  return first;
}

/* Verify pages [first, n) of a run by their OOB entries oob[0..):
 * -EIO (logged) for the first that fails; else note their checks.
 */
static int
verify_oob (struct ftl *ftl, uint64_t lpn, uint32_t ppn, uint32_t first,
            uint32_t n, uint32_t ec, const uint8_t *oob,
            const struct run_sums *s)
{
  struct media *m = &ftl->media;

  for (uint32_t i = first; i < n; i++) {
    struct ftl_oob o;
    enum ftl_fmt_status st =
      fmt_oob_decode (oob + (size_t) (i - first) * FTL_OOB_BYTES,
                      FTL_OOB_BYTES, &o);
    if (st != FTL_FMT_OK || o.kind != FTL_OOB_DATA || o.lpn != lpn + i ||
        o.erase_count != ec || o.data_checksum != s->sum[i]) {
      log_msg (ftl, FTL_LOG_ERROR, "logical page %" PRIu64 ": page %u of "
               "erase block %u is damaged (%s)", lpn + i,
               media_ppn_page (m, ppn + i), media_ppn_block (m, ppn),
               st != FTL_FMT_OK ? fmt_status_string (st) :
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
  for (uint32_t i = first; i < n; i++)
    map_check_heal (ftl, lpn + i, s->seen[i], map_check_fold (s->sum[i]));
  return 0;
}

/* Read a run of logical pages that map to consecutive physical pages of
 * one block, and verify them.  Returns -EAGAIN if the block was erased
 * meanwhile.
 */
static int
read_run (struct ftl *ftl, uint64_t lpn, uint32_t ppn, uint32_t n,
          uint8_t *buf)
{
  struct media *m = &ftl->media;
  uint32_t blk = media_ppn_block (m, ppn);
  uint8_t oob[READ_RUN_MAX * FTL_OOB_BYTES];
  struct run_sums s;
  uint32_t gen, ec, first = n;
  int r;

  /* One block, at most READ_RUN_MAX pages (the buffers). */
  assert (n >= 1 && n <= READ_RUN_MAX);
  assert (media_ppn_page (m, ppn) + n <= ftl->ppb);
  gen = media_block_gen (m, blk);
  /* The run's checks are needed after its read: fetch their cache
   * lines now, so that the miss overlaps the system call.
   */
  if (!ftl->pm.on)
    for (uint32_t i = 0; i < n; i += 64 / sizeof *ftl->check)
      __builtin_prefetch (&ftl->check[lpn + i]);
  if (l2p_load (ftl, lpn) != ppn)
    return -EAGAIN;
  r = media_read (m, ppn, n, buf);
  if (r == 0)
    first = verify_fast (ftl, lpn, ppn, n, buf, &s);
  if (r == 0 && first < n)
    r = media_read_oob (m, blk, media_ppn_page (m, ppn) + first, n - first,
                        oob);
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
  if (first < n && (r = verify_oob (ftl, lpn, ppn, first, n, ec, oob,
                                     &s)) < 0)
    return r;
  /* Every page of the run is verified: the one place where pages leave
   * the log, with the bit errors they would have had (errmodel.h).
   */
  if (!ftl->em.enabled)
    return 0;
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
    if (ppn == FTL_LOST) {
      /* Lost in a crash of the host during a sync=false session
       * (recovery.c): an error, never zeros or older data.
       */
      log_msg (ftl, FTL_LOG_ERROR, "logical page %" PRIu64 ": its data "
               "was lost in a crash of the host (sync=false)", lpn + i);
      ctr_add (ftl, FTL_CTR_MEDIA_ERRORS, 1);
      return -EIO;
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
