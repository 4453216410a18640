/* nbdkit-ftl: superblock updates and checkpoints.
 *
 * A checkpoint is a snapshot of the map (4 bytes per logical page), of
 * each erase block's erase count, program pointer and state, and of the
 * counters, taken at one sequence number.  The two slots alternate; the
 * valid slot with the higher generation is the newest.  Writing one:
 *
 *   1. take ckpt_rw exclusively: no write, trim or relocation is half
 *      done; copy the state; release it (the snapshot costs a memcpy);
 *   2. sync: every page the snapshot maps is durable;
 *   3. write the older slot and sync: only now does it count, and only
 *      now may GC drop trim pages older than the checkpoint it replaces
 *      as the fallback (the log stays replayable from either slot).
 *
 * The snapshot's buffer is an anonymous mapping that the snapshot
 * stores only mapped entries into (an unmapped one is zero, format.h):
 * its pages hold memory only where the map holds data.  The slot is
 * written in FTL_CKPT_CHUNK pieces, and a piece of zeros is not written
 * where the slot already reads as zeros (ckpt_zero, or a hole of the
 * file): a disk that holds little data has small checkpoints on the
 * host's disk too.
 *
 * A crash at any step leaves the previous checkpoint and the log after it
 * intact.  With sync=false the syncs are skipped: a crash of the host
 * may then tear any checkpoint of the session, so the session writes
 * them all to the slot that the pinned checkpoint (the one durable at
 * its open) does not hold, and keeps the log replayable from the pinned
 * one (ftl-internal.h).  The trim records that replay from it needs
 * stay live, and take spare space: once as many trim pages as trigger
 * a checkpoint (a quarter of the spare) were written since the pin,
 * the checkpoint just written is synced and pinned instead, and the
 * superblock says so (repin: the session's only syncs but those of its
 * open and close; many trims over a long session).
 *
 * The superblock copies alternate the same way and record whether the
 * image was shut down cleanly, and after which checkpoint, and with
 * sync=false the session's mark and pinned checkpoint.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

int
ckpt_init (struct ftl *ftl)
{
  pthread_rwlockattr_t attr;

  pthread_mutex_init (&ftl->ckpt_lock, NULL);
  /* Writer-preferring: under a steady stream of requests a checkpoint
   * must not starve.  Nothing takes ckpt_rw shared twice in one thread,
   * which this kind of lock would not allow.
   */
  pthread_rwlockattr_init (&attr);
  pthread_rwlockattr_setkind_np (&attr,
                                 PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
  pthread_rwlock_init (&ftl->ckpt_rw, &attr);
  pthread_rwlockattr_destroy (&attr);
  return 0;
}

void
ckpt_free (struct ftl *ftl)
{
  free (ftl->ckpt_zero[0]);
  free (ftl->ckpt_zero[1]);
  ftl->ckpt_zero[0] = ftl->ckpt_zero[1] = NULL;
  pthread_mutex_destroy (&ftl->ckpt_lock);
  pthread_rwlock_destroy (&ftl->ckpt_rw);
}

int
ckpt_write_superblock (struct ftl *ftl, enum ftl_sb_state state,
                       uint64_t clean_ckpt_gen)
{
  /* The slot's first sector, and the namespace table after it if the
   * image has one (rewritten with every superblock, so that a table
   * damaged in one slot heals at the next write there); the rest of
   * the slot holds the durable-point record (format.h).
   */
  uint8_t buf[FTL_NS_OFFSET + FTL_NS_MAX_BYTES];
  size_t len = FTL_NS_OFFSET;
  struct ftl_superblock sb = ftl->sb;
  int r;

  static_assert (FTL_SB_BYTES <= FTL_NS_OFFSET &&
                 sizeof buf <= FTL_DURABLE_OFFSET, "superblock sector");
  sb.generation++;
  sb.state = state;
  sb.clean_ckpt_gen = clean_ckpt_gen;
  /* A sync=false session marks the image in use with the checkpoint
   * it pins; a clean close clears the mark.
   */
  sb.flags = (sb.flags & (FTL_SB_PAGED | FTL_SB_LPN_SEED |
                       FTL_SB_NAMESPACES)) |
    (state == FTL_SB_DIRTY && ftl->pinned_gen ? FTL_SB_UNSYNCED : 0);
  sb.pinned_ckpt_gen = sb.flags & FTL_SB_UNSYNCED ? ftl->pinned_gen : 0;
  memset (buf, 0, sizeof buf);
  if (sb.flags & FTL_SB_NAMESPACES) {
    sb.ns_check = fmt_ns_encode (&ftl->ns_table, buf + FTL_NS_OFFSET);
    len += fmt_ns_bytes (&ftl->ns_table);
  }
  fmt_sb_encode (&sb, buf);
  r = media_pwrite_raw (&ftl->media, buf, len,
                        (sb.generation & 1) * FTL_SB_SLOT);
  /* Synced even with sync=false: these are the syncs of its open and
   * its close.
   */
  if (r == 0)
    r = media_sync_always (&ftl->media);
  if (r < 0) {
    log_msg (ftl, FTL_LOG_ERROR, "writing the superblock: %s", strerror (-r));
    return r;
  }
  ftl->sb = sb;
  return 0;
}

/* Step 1 of a checkpoint: the map and the block table into body, the
 * sequence number and counters into h, with no write in progress
 * (ckpt_rw exclusive).  Returns the pages written since the last
 * checkpoint, as counted when the snapshot was taken, and in *trims
 * the trim pages among them.
 */
/* Erase block b's entry of the block table (under alloc_lock). */
static void
encode_block (struct ftl *ftl, uint32_t b, uint8_t *p)
{
  struct ftl_ckpt_block cb = {
    .erase_count = media_erase_count (&ftl->media, b),
    .write_pointer = ftl->media.wp[b],
    .state = ftl->state[b],
    .slc = media_block_slc (&ftl->media, b),
  };
  if (cb.state == FTL_BLK_OPEN || cb.state == FTL_BLK_FULL)
    cb.program_hour = errmodel_program_hour (&ftl->em, b);
  /* A FREE block is unwritten; no frontier is open in a snapshot that
   * a writer could be changing (ckpt_rw is exclusive).
   */
  assert (cb.state != FTL_BLK_FREE || cb.write_pointer == 0);
  assert (cb.write_pointer <= ftl->ppb);
  fmt_ckpt_block_encode (&cb, p);
}

/* The paged map's part of the snapshot: the dirty groups' copies into
 * tp->buf (pmap.c), the valid data pages of each block, the mapped
 * count and the directories (of slot, and the other slot's) into the
 * body.  The directory is the snapshot's, like the block table: GC may
 * move a translation page before the checkpoint is written, into a
 * block that the block table has free or with fewer pages written, and
 * a directory taken later would name a page that the block table says
 * is not written (a copy recovery finds by scanning that block, as it
 * finds a copy made after the checkpoint).  write_tps then names the
 * pages it programs.
 */
struct tp_batch {
  uint8_t *buf;
  uint64_t *gs;
  uint64_t n, cap;
};

static int
snapshot_paged (struct ftl *ftl, uint8_t *body, struct tp_batch *tp,
                unsigned slot)
{
  tp->cap = __atomic_load_n (&ftl->pm.dirty, __ATOMIC_RELAXED);
  tp->n = 0;
  if (tp->cap) {
    /* While the open runs, nothing changes the map but this thread:
     * the groups are copied from the cache as they are programmed, not
     * all at once (after a roll forward over many groups, as much
     * memory again as the groups replayed).
     */
    if (!ftl->opening)
      tp->buf = ftl_lazy_alloc (tp->cap * FTL_TP_BYTES);
    tp->gs = malloc (tp->cap * sizeof *tp->gs);
    if ((!ftl->opening && !tp->buf) || !tp->gs)
      return -ENOMEM;
    tp->n = pmap_ckpt_collect (ftl, tp->buf, tp->gs, tp->cap);
  }
  pthread_mutex_lock (&ftl->pm.lock);
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    uint32_t v = __atomic_load_n (&ftl->valid[b], __ATOMIC_RELAXED);
    assert (v >= ftl->pm.tvalid[b]);
    put32le (body + fmt_ckpt_pvalid_offset (ftl->logical_pages, ftl->blocks,
                                            b), v - ftl->pm.tvalid[b]);
  }
  pthread_mutex_unlock (&ftl->pm.lock);
  put64le (body + fmt_ckpt_pmapped_offset (ftl->logical_pages, ftl->blocks),
           __atomic_load_n (&ftl->mapped, __ATOMIC_RELAXED));
  /* Programs so far, and those of this checkpoint's pages (counted in
   * the program count of its header, taken in this snapshot too).
   */
  put64le (body + fmt_ckpt_pmapped_offset (ftl->logical_pages, ftl->blocks)
           + 8, __atomic_load_n (&ftl->pm.program_pages, __ATOMIC_RELAXED));
  pmap_ckpt_encode_dir (ftl, body, slot);
  return 0;
}

/* Step 1a with a paged map: program the dirty groups' copies as
 * translation pages at the map frontier (this thread's: ckpt_lock),
 * and name them in the snapshot's directory.  The blocks that took
 * them hold nothing else: their entries of the block table say what
 * they hold now, so that a clean open, which scans nothing, finds the
 * pages the directory names, and a roll forward starts after them.  On
 * failure the groups not written are dirty again.
 */
static int
write_tps (struct ftl *ftl, struct tp_batch *tp, uint64_t seq, uint8_t *body)
{
  struct log_page lp[ALLOC_PROGRAM_MAX];
  uint32_t *bl = malloc ((tp->n / ftl->ppb + 2) * sizeof *bl), nb = 0;
  uint8_t *pages = calloc (ALLOC_PROGRAM_MAX, ftl->page_size);
  uint64_t done = 0;
  int r = 0;

  if (!bl || !pages)
    r = -ENOMEM;
  while (r == 0 && done < tp->n) {
    r = alloc_frontier_open (ftl, &ftl->mapf, ALLOC_MAP);
    if (r < 0)
      break;
    if (nb == 0 || bl[nb - 1] != ftl->mapf.block)
      bl[nb++] = ftl->mapf.block;
    uint32_t k = MIN (MIN (alloc_frontier_room (ftl, &ftl->mapf),
                           ALLOC_PROGRAM_MAX), tp->n - done);
    for (uint32_t i = 0; i < k; i++) {
      if (tp->buf)
        memcpy (pages + (size_t) i * ftl->page_size,
                tp->buf + (done + i) * FTL_TP_BYTES, FTL_TP_BYTES);
      else
        pmap_tp_copy (ftl, tp->gs[done + i],
                      pages + (size_t) i * ftl->page_size);
      lp[i] = (struct log_page) {
        .kind = FTL_OOB_MAP, .lpn = tp->gs[done + i], .seq = seq,
        .from = FTL_UNMAPPED };
    }
    uint32_t blk = ftl->mapf.block, first = ftl->mapf.wp;
    r = alloc_program (ftl, &ftl->mapf, lp, k, pages, NULL);
    if (r < 0)
      break;
    /* Where they are now: GC may move them as soon as their block is
     * full, and the map's directory follows, the snapshot's does not.
     */
    for (uint32_t i = 0; i < k; i++)
      fmt_ckpt_dir_encode (media_ppn (&ftl->media, blk, first + i), seq,
                           body + tp->gs[done + i] * FTL_CKPT_DIR_BYTES);
    for (uint32_t i = 0; i < k; i++)
      __atomic_fetch_and (&ftl->pm.gstate[tp->gs[done + i]], ~PMAP_WB,
                          __ATOMIC_ACQ_REL);
    __atomic_fetch_sub (&ftl->pm.wb, k, __ATOMIC_RELAXED);
    done += k;
    __atomic_fetch_add (&ftl->pm.program_pages, k, __ATOMIC_RELAXED);
    pmap_count (ftl, PMAP_WRITEBACKS, k);
  }
  if (r < 0)
    pmap_ckpt_abort (ftl, tp->gs, done, tp->n);
  else {
    pthread_mutex_lock (&ftl->alloc_lock);
    for (uint32_t i = 0; i < nb; i++)
      encode_block (ftl, bl[i], body + fmt_ckpt_pblock_offset
                    (ftl->logical_pages, bl[i]));
    pthread_mutex_unlock (&ftl->alloc_lock);
  }
  free (bl);
  free (pages);
  return r;
}

/* Before the snapshot: give the buffer's pages that it will store into
 * their memory now, not in page faults while writers wait for it (a
 * fault costs microseconds in a virtual machine; a 1 GiB disk's map is
 * 256 pages of it).  The map's groups that may hold a mapping now (more
 * may by the snapshot: they fault then) and the block table.
 */
static void
prefault (struct ftl *ftl, uint8_t *body)
{
  const uint64_t group = UINT64_C (1) << FTL_MAP_GROUP_SHIFT;
  uint64_t run = 0, run_end = 0;

  if (ftl->pm.on) {
    ftl_lazy_populate (body + fmt_ckpt_pblock_offset (ftl->logical_pages, 0),
                       (uint64_t) ftl->blocks * FTL_CKPT_BLOCK_BYTES);
    return;
  }
  for (uint64_t g = map_next (ftl, 0); g < ftl->logical_pages;
       g = map_next (ftl, g + group)) {
    uint64_t end = MIN (g + group, ftl->logical_pages);
    if (g != run_end) {
      ftl_lazy_populate (body + run * FTL_CKPT_MAP_ENTRY_BYTES,
                         (run_end - run) * FTL_CKPT_MAP_ENTRY_BYTES);
      run = g;
    }
    run_end = end;
  }
  ftl_lazy_populate (body + run * FTL_CKPT_MAP_ENTRY_BYTES,
                     (run_end - run) * FTL_CKPT_MAP_ENTRY_BYTES);
  ftl_lazy_populate (body + fmt_ckpt_block_offset (ftl->logical_pages, 0),
                     (uint64_t) ftl->blocks * FTL_CKPT_BLOCK_BYTES);
}

static uint64_t
snapshot (struct ftl *ftl, uint8_t *body, struct ftl_ckpt_header *h,
          uint64_t *trims, uint8_t *nonzero, struct tp_batch *tp,
          unsigned slot, int *err, uint64_t *drain_ns, uint64_t *hold_ns)
{
  uint8_t *p;
  uint64_t since, t0 = clock_now (), t1;

  ckpt_exclusive (ftl);
  t1 = clock_now ();
  *drain_ns = t1 - t0;
  *err = 0;
  if (ftl->pm.on) {
    *err = snapshot_paged (ftl, body, tp, slot);
    p = body + fmt_ckpt_pblock_offset (ftl->logical_pages, 0);
    goto blocks;
  }
  /* body is zeros: only the map's groups that may hold a mapping are
   * stored.  Writers wait while this runs, so it is a copy: l2p[]
   * holds ~ppn, which is the checkpoint's entry (format.c) in this
   * host's byte order on a little-endian host, so a group is one
   * memcpy there (a group with no mapping left stores zeros, which is
   * what an unmapped entry is).
   */
  const uint64_t group = UINT64_C (1) << FTL_MAP_GROUP_SHIFT;
  static_assert (FTL_CKPT_MAP_ENTRY_BYTES == sizeof *ftl->l2p,
                 "a checkpoint's map entry is an l2p[] entry");
  for (uint64_t g = map_next (ftl, 0); g < ftl->logical_pages;
       g = map_next (ftl, g + group)) {
    uint64_t end = MIN (g + group, ftl->logical_pages);
    bool any = false;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy (body + g * FTL_CKPT_MAP_ENTRY_BYTES, &ftl->l2p[g],
            (end - g) * FTL_CKPT_MAP_ENTRY_BYTES);
    any = true;
#else
    for (uint64_t lpn = g; lpn < end; lpn++) {
      uint32_t ppn = l2p_load (ftl, lpn);
      if (ppn != FTL_UNMAPPED) {
        fmt_ckpt_map_encode (ppn, body + lpn * FTL_CKPT_MAP_ENTRY_BYTES);
        any = true;
      }
    }
#endif
    /* The body starts FTL_CKPT_HDR_BYTES into the slot: a group's
     * entries may span two pieces.
     */
    if (any) {
      nonzero[(FTL_CKPT_HDR_BYTES + g * FTL_CKPT_MAP_ENTRY_BYTES)
              / FTL_CKPT_CHUNK] = 1;
      nonzero[(FTL_CKPT_HDR_BYTES + (end - 1) * FTL_CKPT_MAP_ENTRY_BYTES)
              / FTL_CKPT_CHUNK] = 1;
    }
  }
  p = body + fmt_ckpt_block_offset (ftl->logical_pages, 0);
 blocks:
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks; b++, p += FTL_CKPT_BLOCK_BYTES)
    encode_block (ftl, b, p);
  pthread_mutex_unlock (&ftl->alloc_lock);
  assert (ftl->pm.on || (uint64_t) (p - body)
          == fmt_ckpt_body_bytes (ftl->logical_pages, ftl->blocks));
  /* A sequence number of its own, even with nothing written since the
   * last checkpoint (GC copies take none): its translation pages carry
   * it as their version, and recovery takes a page of a group at the
   * version a directory names for a copy that GC made of the page named
   * (tp_found).  Two checkpoints at one number would write different
   * pages of one version, and recovery from the first could take the
   * second's, whose map the first's valid counts do not describe.
   */
  h->seq = __atomic_fetch_add (&ftl->next_seq, 1, __ATOMIC_RELAXED);
  since = __atomic_load_n (&ftl->pages_since_ckpt, __ATOMIC_RELAXED);
  *trims = __atomic_load_n (&ftl->trim_pages_since_ckpt, __ATOMIC_RELAXED);
  ctr_add (ftl, FTL_CTR_CKPTS, 1);
  for (int i = 0; i < FTL_CTR__MAX; i++)
    h->counters[i] = ctr_get (ftl, i);
  h->counters[FTL_CTR_PROGRAM] +=
    media_count (&ftl->media, MEDIA_PROGRAMS);
  h->counters[FTL_CTR_MEDIA_READ] +=
    media_count (&ftl->media, MEDIA_READS);
  h->counters[FTL_CTR_ERASE] +=
    media_count (&ftl->media, MEDIA_ERASES);
  h->pe_offset = ftl->em.pe_offset;
  h->clock_skew = errmodel_skew (&ftl->em);
  selfcheck_assert (ftl, "checkpoint");
  ckpt_release (ftl);
  *hold_ns = clock_now () - t1;
  return since;
}

int
ckpt_write_chunks (const struct ftl_io *io, int fd, struct media *m,
                   uint64_t base, const uint8_t *buf, uint64_t bytes,
                   const uint8_t *nonzero, uint8_t *zero)
{
  for (uint64_t i = 0, off = 0; off < bytes; i++, off += FTL_CKPT_CHUNK) {
    uint64_t len = MIN (FTL_CKPT_CHUNK, bytes - off);
    int r;

    if (!nonzero[i] &&
        (zero[i] || media_io_is_hole (io, fd, base + off, len))) {
      zero[i] = 1;
      continue;
    }
    zero[i] = 0;
    if (m)
      r = media_pwrite_raw (m, buf + off, len, base + off);
    else
      r = io->pwrite (io->opaque, fd, buf + off, len, base + off);
    if (r < 0)
      return r;
    zero[i] = !nonzero[i];
  }
  return 0;
}

/* sync=false: pin the checkpoint just written (generation gen, in
 * slot, at seq) in place of the pinned one.  A sync makes it, and the
 * log it maps, durable; then the superblock names it, with its own
 * sync.  From the first sync on, either pin is safe to recover from
 * (the new checkpoint is newer than the old pin, and durable), so the
 * handle moves to the new pin then, even if the superblock write fails.
 */
static int
repin (struct ftl *ftl, uint64_t gen, unsigned slot, uint64_t seq)
{
  int r = media_sync_always (&ftl->media);

  if (r < 0)
    return r;
  ftl->pinned_gen = gen;
  ftl->pinned_slot = slot;
  ftl->pinned_seq = seq;
  __atomic_store_n (&ftl->trim_pages_since_pin,
                    __atomic_load_n (&ftl->trim_pages_since_ckpt,
                                     __ATOMIC_RELAXED), __ATOMIC_RELAXED);
  log_debug (ftl, FTL_DEBUG_CKPT, "sync=false: checkpoint %" PRIu64 " is "
             "pinned (the trim records kept for the last took a quarter "
             "of the spare)", gen);
  return ckpt_write_superblock (ftl, FTL_SB_DIRTY, 0);
}

/* Step 3 is done: the checkpoint in slot is the newest durable one. */
static int
committed (struct ftl *ftl, const struct ftl_ckpt_header *hp, unsigned slot,
           uint64_t since, uint64_t trims, bool clean)
{
  const struct ftl_ckpt_header h = *hp;
  int r = 0;

  /* The slot's directory is the map's now: the translation pages only
   * the checkpoint it replaced named are free to go.
   */
  if (ftl->pm.on)
    pmap_ckpt_commit (ftl, slot);
  ftl->ckpt_gen = h.generation;
  ftl->ckpt_slot = slot;
  __atomic_fetch_sub (&ftl->pages_since_ckpt, since, __ATOMIC_RELAXED);
  __atomic_fetch_sub (&ftl->trim_pages_since_ckpt, trims, __ATOMIC_RELAXED);
  if (ftl->pinned_gen && !clean &&
      __atomic_load_n (&ftl->trim_pages_since_pin, __ATOMIC_RELAXED)
      >= ftl->ckpt_trim_interval)
    r = repin (ftl, h.generation, slot, h.seq);
  /* The previous checkpoint is the fallback now: trim records older
   * than it are in both slots and may go.
   */
  uint64_t prev = __atomic_load_n (&ftl->durable_ckpt_seq, __ATOMIC_RELAXED);
  /* sync=false: the fallback stays the pinned checkpoint. */
  if (ftl->pinned_gen)
    prev = ftl->pinned_seq;
  __atomic_store_n (&ftl->replay_seq, prev, __ATOMIC_RELEASE);
  __atomic_store_n (&ftl->durable_ckpt_seq, h.seq, __ATOMIC_RELEASE);
  trimlog_drop_before (ftl, prev);
  return r;
}

/* -D ftl.ckpt: a checkpoint written, what it took, and how long the
 * writers waited for it: for the ones in progress (the drain), then
 * while the snapshot held them.
 */
static void
debug_written (struct ftl *ftl, const struct ftl_ckpt_header *h,
               unsigned slot, uint64_t tps, uint64_t t0, uint64_t drain_ns,
               uint64_t hold_ns)
{
  log_debug (ftl, FTL_DEBUG_CKPT, "checkpoint %" PRIu64 " in slot %u at "
             "sequence %" PRIu64 "%s: %" PRIu64 " translation pages, %.3f s; "
             "writers waited %.3f ms for the ones in progress, then were "
             "held %.3f ms by the snapshot",
             h->generation, slot, h->seq, h->clean ? " (clean)" : "", tps,
             (clock_now () - t0) / 1e9, drain_ns / 1e6, hold_ns / 1e6);
}

static int
ckpt_write_locked (struct ftl *ftl, bool clean)
{
  struct ftl_ckpt_header h = { .version = FTL_FORMAT_VERSION,
                               .paged = ftl->pm.on };
  struct tp_batch tp = { 0 };
  uint64_t bytes = ftl->sb.ckpt_bytes;
  uint8_t *buf, *body, *nonzero;
  uint64_t since, trims, chunks = DIV_ROUND_UP (bytes, FTL_CKPT_CHUNK);
  unsigned slot;
  uint64_t t0 = clock_now (), drain_ns = 0, hold_ns = 0;
  int r;

  for (int s = 0; s < 2; s++)
    if (!ftl->ckpt_zero[s] &&
        !(ftl->ckpt_zero[s] = calloc (chunks, 1)))
      return -ENOMEM;
  nonzero = calloc (chunks, 1);
  if (!nonzero)
    return -ENOMEM;

  /* Lazy, not malloc'd: the buffer is as large as the map, but the
   * snapshot stores only mapped entries, and freeing it gives it back
   * to the system at once, where malloc would keep it in its heap.
   */
  buf = ftl_lazy_alloc (bytes);
  if (!buf) {
    free (nonzero);
    return -ENOMEM;
  }
  body = buf + FTL_CKPT_HDR_BYTES;

  /* The slot it goes to: the older one (sync=false: never the pinned
   * one, the only one known durable).  ckpt_lock keeps it so.
   */
  slot = ftl->ckpt_gen == 0 ? 0 : 1 - ftl->ckpt_slot;
  if (ftl->pinned_gen)
    slot = 1 - ftl->pinned_slot;

  /* 1. The snapshot.  The header's chunk and the block table's are
   * always written.
   */
  prefault (ftl, body);
  since = snapshot (ftl, body, &h, &trims, nonzero, &tp, slot, &r, &drain_ns,
                   &hold_ns);
  if (r < 0) {
    pmap_ckpt_abort (ftl, tp.gs, 0, tp.n);
    goto out;
  }
  nonzero[0] = 1;
  for (uint64_t i = (FTL_CKPT_HDR_BYTES
                     + (ftl->pm.on ? 0
                        : fmt_ckpt_block_offset (ftl->logical_pages, 0)))
         / FTL_CKPT_CHUNK; i < chunks; i++)
    nonzero[i] = 1;

  /* 1a. A paged map: the dirty groups' translation pages, named in the
   * snapshot's directory.
   */
  if (ftl->pm.on) {
    r = write_tps (ftl, &tp, h.seq, body);
    if (r < 0)
      goto out;
    /* The directory and the valid counts of a disk that holds little
     * data are mostly zeros: as holes of the file, like a map's.
     */
    for (uint64_t i = 1; i < chunks; i++)
      nonzero[i] = !all_zero (buf + i * FTL_CKPT_CHUNK,
                              MIN (FTL_CKPT_CHUNK, bytes - i * FTL_CKPT_CHUNK));
  }

  /* 2. What it maps is durable. */
  r = media_sync (&ftl->media);
  if (r < 0)
    goto out;

  /* 3. Write the older slot, never over the newest durable checkpoint
   * (sync=false: the pinned one).
   */
  assert (ftl->ckpt_gen == 0 || ftl->pinned_gen || slot != ftl->ckpt_slot);
  assert (!ftl->pinned_gen || slot != ftl->pinned_slot);
  h.generation = ftl->ckpt_gen + 1;
  h.logical_pages = ftl->logical_pages;
  h.blocks = ftl->blocks;
  h.body_bytes = fmt_ckpt_hbody_bytes (&h);
  h.body_checksum = fmt_checksum_sparse (body, h.body_bytes,
                                         FTL_CKPT_HDR_BYTES, FTL_CKPT_CHUNK,
                                         nonzero);
  h.pages_per_block = ftl->ppb;
  h.clean = clean;
  fmt_ckpt_header_encode (&h, buf);
  r = ckpt_write_chunks (ftl->media.io, ftl->media.fd, &ftl->media,
                         ftl->sb.ckpt_offset[slot], buf, bytes, nonzero,
                         ftl->ckpt_zero[slot]);
  if (r == 0)
    r = media_sync (&ftl->media);
  if (r < 0) {
    /* The zeros written may not be durable: known no more. */
    memset (ftl->ckpt_zero[slot], 0, chunks);
    goto out;
  }

  r = committed (ftl, &h, slot, since, trims, clean);
  debug_written (ftl, &h, slot, tp.n, t0, drain_ns, hold_ns);

 out:
  /* A paged map's translation pages found no free block: the caller
   * collects garbage and tries again (host_ckpt).
   */
  if (r == -ENOSPC && ftl->pm.on)
    log_debug (ftl, FTL_DEBUG_CKPT, "checkpoint: no free block for the "
               "translation pages yet");
  else if (r < 0)
    log_msg (ftl, FTL_LOG_ERROR, "writing a checkpoint: %s", strerror (-r));
  ftl_lazy_free (buf, bytes);
  free (nonzero);
  if (tp.buf)
    ftl_lazy_free (tp.buf, tp.cap * FTL_TP_BYTES);
  free (tp.gs);
  return r;
}

int
ckpt_write (struct ftl *ftl, bool clean)
{
  int r;

  pthread_mutex_lock (&ftl->ckpt_lock);
  r = ckpt_write_locked (ftl, clean);
  pthread_mutex_unlock (&ftl->ckpt_lock);
  return r;
}

/* A checkpoint is due once an interval of pages, or of trim pages, has
 * been written since the last (open.c); overdue after n intervals.
 */
static bool
ckpt_past (struct ftl *ftl, uint64_t n)
{
  return !ftl->readonly &&
    (__atomic_load_n (&ftl->pages_since_ckpt, __ATOMIC_RELAXED)
     >= n * ftl->ckpt_interval ||
     (ftl->pm.on && __atomic_load_n (&ftl->pm.dirty, __ATOMIC_RELAXED)
      >= n * ftl->pm.dirty_limit) ||
     __atomic_load_n (&ftl->trim_pages_since_ckpt, __ATOMIC_RELAXED)
     >= n * ftl->ckpt_trim_interval);
}

bool
ckpt_due (struct ftl *ftl)
{
  return ckpt_past (ftl, 1);
}

bool
ckpt_overdue (struct ftl *ftl)
{
  return ckpt_past (ftl, 2);
}

/* Called by background steps (bg.c), and by requests when there is
 * no background thread or it is behind (request.c), with no lock held:
 * write a checkpoint once enough has been written since the last one,
 * which bounds the work of a recovery.  Only one thread does it; the
 * others go on.  Returns 1 if it wrote one, 0 if none was due or
 * another thread was writing one, or a negative errno (logged).
 */
int
ckpt_maybe (struct ftl *ftl)
{
  int r = 0;

  if (!ckpt_due (ftl))
    return 0;
  if (pthread_mutex_trylock (&ftl->ckpt_lock) != 0)
    return 0;
  if (ckpt_due (ftl)) {
    r = ckpt_write_locked (ftl, false);
    if (r == 0)
      r = 1;
  }
  pthread_mutex_unlock (&ftl->ckpt_lock);
  return r;
}
