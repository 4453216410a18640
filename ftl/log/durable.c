/* nbdkit-ftl: durable points: what a crash may tear, and what it may
 * not.
 *
 * After a crash, recovery meets pages that fail their checksum.  One
 * written after the last sync is a write cut short: it is dropped, and
 * the page's previous version is what the host flushed.  One that was
 * synced before was durable, and its damage came later (the media, a
 * stray write): dropping it would hand the host an older version of
 * data it replaced and flushed.  Such a page must read as an error.
 * The durable-point record (format.h) tells the two apart: every page
 * whose sequence number is below its seq was programmed and synced.
 *
 *   seq_reserve     host data and trim pages take their sequence
 *   seq_release     numbers here; a reservation stays registered until
 *                   its program has completed, so that
 *   durable_sample  never claims a number whose page may still be
 *                   programmed: it is the lowest reserved number, or
 *                   next_seq if none is;
 *   durable_synced  after a sync that began after a sample: every page
 *                   below it is durable (synced_seq, in memory);
 *   durable_commit  a flush or FUA write makes that known on the media:
 *                   the record, then a sync (only if synced_seq moved).
 *
 * Pages that garbage collection copies keep their sequence numbers and
 * are not reserved: a copy torn by a crash still has its intact
 * original (a block is erased only after a barrier that made its
 * copies durable), and recovery prefers an intact page to a damaged
 * one of the same logical page and sequence number.
 *
 * With sync=false (media.h) the syncs are skipped: the record then says
 * what survives the death of the server, not a crash of the host
 * (recovery of an image with the session's mark verifies every page
 * instead, recovery.c).
 *
 * Invariants: durable_seq (the newest record on the media) <=
 * synced_seq; both only grow.  The registry's lock is a leaf.
 */

#include <config.h>

#include <errno.h>
#include <string.h>

#include "ftl-internal.h"

int
durable_init (struct ftl *ftl)
{
  pthread_mutex_init (&ftl->seqreg.lock, NULL);
  pthread_cond_init (&ftl->seqreg.cond, NULL);
  pthread_mutex_init (&ftl->durable_lock, NULL);
  memset (ftl->seqreg.used, 0, sizeof ftl->seqreg.used);
  return 0;
}

void
durable_free (struct ftl *ftl)
{
  pthread_mutex_destroy (&ftl->seqreg.lock);
  pthread_cond_destroy (&ftl->seqreg.cond);
  pthread_mutex_destroy (&ftl->durable_lock);
}

uint64_t
seq_reserve (struct ftl *ftl, uint32_t k, int *slot)
{
  struct seqreg *s = &ftl->seqreg;
  uint64_t seq;

  pthread_mutex_lock (&s->lock);
  for (;;) {
    for (int i = 0; i < SEQ_SLOTS; i++)
      if (!s->used[i]) {
        *slot = i;
        goto found;
      }
    pthread_cond_wait (&s->cond, &s->lock);
  }
 found:
  seq = __atomic_fetch_add (&ftl->next_seq, k, __ATOMIC_RELAXED);
  s->used[*slot] = true;
  s->lo[*slot] = seq;
  pthread_mutex_unlock (&s->lock);
  return seq;
}

void
seq_release (struct ftl *ftl, int slot)
{
  struct seqreg *s = &ftl->seqreg;

  pthread_mutex_lock (&s->lock);
  s->used[slot] = false;
  pthread_cond_signal (&s->cond);
  pthread_mutex_unlock (&s->lock);
}

uint64_t
durable_sample (struct ftl *ftl)
{
  struct seqreg *s = &ftl->seqreg;
  uint64_t lo;

  pthread_mutex_lock (&s->lock);
  lo = __atomic_load_n (&ftl->next_seq, __ATOMIC_RELAXED);
  for (int i = 0; i < SEQ_SLOTS; i++)
    if (s->used[i] && s->lo[i] < lo)
      lo = s->lo[i];
  pthread_mutex_unlock (&s->lock);
  return lo;
}

void
durable_synced (struct ftl *ftl, uint64_t sample)
{
  atomic_max_u64 (&ftl->synced_seq, sample);
}

int
durable_commit (struct ftl *ftl)
{
  uint8_t buf[512];
  struct ftl_durable d;
  uint64_t seq;
  int r = 0;

  pthread_mutex_lock (&ftl->durable_lock);
  seq = __atomic_load_n (&ftl->synced_seq, __ATOMIC_ACQUIRE);
  if (seq > ftl->durable_seq) {
    d = (struct ftl_durable) {
      .generation = ftl->durable_gen + 1, .seq = seq,
      .uuid = { ftl->sb.uuid[0], ftl->sb.uuid[1] },
    };
    memset (buf, 0, sizeof buf);
    fmt_durable_encode (&d, buf);
    r = media_pwrite_raw (&ftl->media, buf, sizeof buf,
                          (d.generation & 1) * FTL_SB_SLOT
                          + FTL_DURABLE_OFFSET);
    if (r == 0)
      r = media_sync (&ftl->media);
    if (r == 0) {
      ftl->durable_gen = d.generation;
      ftl->durable_seq = seq;
    }
    else
      log_msg (ftl, FTL_LOG_ERROR, "writing the durable-point record: %s",
               strerror (-r));
  }
  pthread_mutex_unlock (&ftl->durable_lock);
  return r;
}

int
durable_load (struct ftl *ftl)
{
  uint8_t buf[FTL_DURABLE_BYTES];
  struct ftl_durable d;

  ftl->durable_gen = ftl->durable_seq = 0;
  for (int i = 0; i < 2; i++) {
    int r = media_pread_raw (&ftl->media, buf, sizeof buf,
                             (uint64_t) i * FTL_SB_SLOT + FTL_DURABLE_OFFSET);
    if (r < 0)
      return r;
    if (fmt_durable_decode (buf, sizeof buf, &d) != FTL_FMT_OK ||
        d.uuid[0] != ftl->sb.uuid[0] || d.uuid[1] != ftl->sb.uuid[1] ||
        d.generation < ftl->durable_gen)
      continue;
    ftl->durable_gen = d.generation;
    ftl->durable_seq = d.seq;
  }
  ftl->synced_seq = ftl->durable_seq;
  return 0;
}
