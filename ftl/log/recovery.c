/* nbdkit-ftl: opening an image: load the newest checkpoint, then roll
 * the log forward.
 *
 * After a clean shutdown the superblock names the checkpoint written last
 * and nothing is scanned.  Otherwise the log written after the checkpoint
 * is found from the block table in it:
 *
 *   state at checkpoint   what may have happened since    scanned
 *   FREE                  opened and programmed           from page 0
 *   OPEN (wp = w)         pages w.. programmed            from page w
 *   FULL                  erased by GC (header's erase    from page 0 if
 *                         count is higher), and reused    erased, else not
 *   FULL, closed early    reopened for GC's copies        from page w
 *   (wp = w < pages)      (alloc_reopen_for_gc), or as    (or from page 0
 *                         FULL                            if erased)
 *
 * Each OOB entry found there is checked (its own checksum, the block's
 * erase count, then the data page's checksum, so torn pages are dropped)
 * and becomes a log item: a data page (LPN -> PPN) or a page of trim
 * entries.  A page that fails its data checksum is a torn write if it
 * was written after the last durable point, and is dropped; before it,
 * it is durable data damaged since, and stays mapped so that it reads
 * as an error (durable.c), unless it is a torn copy whose original is
 * intact.  Items are applied in sequence order; trim entries older than
 * the checkpoint are already in it and are skipped.  Then the valid
 * counts and the free pool are rebuilt from the map and the block table.
 *
 * A block's SLC mode (slc.c) comes from the checkpoint's block table,
 * or for a block written since, from its OOB entries.
 *
 * An image whose superblock carries the mark of a sync=false session
 * (FTL_SB_UNSYNCED) was not closed by it: if the host crashed, any write
 * of the session may be lost or torn, in any order.  Then no checkpoint
 * older than the one the session pinned is loaded, and after the roll
 * forward every mapped page is verified (verify_mapped): one that fails
 * becomes FTL_LOST and reads as an error.  After the death of the
 * server alone (the page cache kept every write) nothing fails.
 *
 * The cost is one small read per FULL block, plus reading the blocks
 * written since the checkpoint (bounded by the checkpoint interval).
 * A block whose metadata area is a hole of the file was never written
 * (an erase overwrites its area with zeros in place) and is not read:
 * on a large disk that holds little data that is most of them, asked
 * of the file a run of SCAN_SKIP blocks at a time.
 */

#include <config.h>

#include <assert.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftl-internal.h"

#define SCAN_RUN 256            /* data pages read at once in a scan */
#define SCAN_SKIP 1024          /* blocks whose metadata is one hole */

struct item {
  uint64_t seq;
  uint32_t lpn;
  uint32_t count;               /* trim: pages; data: 0 */
  uint32_t ppn;                 /* data only */
  bool damaged;                 /* data: durable, but fails its checksum */
};

struct items {
  struct item *v;
  size_t n, cap;
};

static int
items_push (struct items *it, struct item x)
{
  if (it->n == it->cap) {
    size_t cap = it->cap ? 2 * it->cap : 1024;
    struct item *v = realloc (it->v, cap * sizeof *v);
    if (!v)
      return -ENOMEM;
    it->v = v;
    it->cap = cap;
  }
  it->v[it->n++] = x;
  return 0;
}

static int
cmp_item (const void *a, const void *b)
{
  const struct item *x = a, *y = b;
  if (x->seq != y->seq)
    return x->seq < y->seq ? -1 : 1;
  /* Same sequence number: two copies of one page (GC).  An intact one
   * goes last, so that it is the one applied (a torn copy's original is
   * still there); else either will do: a stable order.
   */
  if (x->damaged != y->damaged)
    return x->damaged ? -1 : 1;
  return x->ppn < y->ppn ? -1 : x->ppn > y->ppn;
}

/* A checkpoint body read into an anonymous mapping, in FTL_CKPT_CHUNK
 * pieces; a piece that is a hole of the file is not read, and neither
 * the checksum nor the loading of the map touches it (its pages of the
 * mapping stay unallocated): the body of a disk that holds little data
 * is mostly holes (ckpt.c).
 */
struct body {
  uint8_t *p;
  uint64_t len;
  uint8_t *present;             /* per piece: read (else zeros) */
};

static void
free_body (struct body *b)
{
  ftl_lazy_free (b->p, b->len);
  free (b->present);
  b->p = NULL;
  b->present = NULL;
}

static int
read_body (struct ftl *ftl, uint64_t off, uint64_t len, struct body *b)
{
  b->len = len;
  b->p = ftl_lazy_alloc (len);
  b->present = calloc (DIV_ROUND_UP (len, FTL_CKPT_CHUNK) + 1, 1);
  if (!b->p || !b->present) {
    free_body (b);
    return -ENOMEM;
  }
  for (uint64_t i = 0, pos = 0; pos < len; i++, pos += FTL_CKPT_CHUNK) {
    uint64_t n = MIN (FTL_CKPT_CHUNK, len - pos);
    if (media_io_is_hole (ftl->media.io, ftl->media.fd, off + pos, n))
      continue;
    int r = media_pread_raw (&ftl->media, b->p + pos, n, off + pos);
    if (r < 0) {
      free_body (b);
      return r;
    }
    b->present[i] = 1;
  }
  return 0;
}

/* The versions of the translation pages that the two slots' directories
 * name (a paged map): a copy that GC made since, found by the scan,
 * takes the place of the page a directory names (tp_found).
 */

/* A checkpoint's block table (at p), checking every entry. */
static int
apply_blocks (struct ftl *ftl, const uint8_t *p, char *errbuf, size_t errlen)
{
  for (uint32_t b = 0; b < ftl->blocks; b++, p += FTL_CKPT_BLOCK_BYTES) {
    struct ftl_ckpt_block cb;
    char why[128];
    fmt_ckpt_block_decode (p, &cb);
    if (!fmt_ckpt_block_check (&cb, ftl->ppb, why, sizeof why)) {
      snprintf (errbuf, errlen, "checkpoint: erase block %u %s", b, why);
      return -EINVAL;
    }
    ftl->state[b] = cb.state;
    media_set_block (&ftl->media, b, cb.erase_count, cb.write_pointer);
    media_set_slc (&ftl->media, b, cb.slc);
    errmodel_set_program_hour (&ftl->em, b, cb.program_hour);
  }
  return 0;
}

/* A directory of a paged checkpoint (at off in its body) into slot's
 * names (and, for the map's, the map's), checking every entry.
 */
static int
apply_dir (struct ftl *ftl, const struct ftl_ckpt_header *h,
           const struct body *body, uint64_t off0, unsigned slot,
           bool map, char *errbuf, size_t errlen)
{
  struct pmap *pm = &ftl->pm;
  uint64_t phys = (uint64_t) ftl->blocks * ftl->ppb;

  for (uint64_t g = 0; g < pm->groups; g++) {
    uint64_t off = off0 + g * FTL_CKPT_DIR_BYTES;
    if (!body->present[off / FTL_CKPT_CHUNK])
      continue;
    uint32_t ppn;
    uint64_t version;
    fmt_ckpt_dir_decode (body->p + off, &ppn, &version);
    if (ppn == FTL_UNMAPPED)
      continue;
    if (ppn >= phys || version > h->seq) {
      snprintf (errbuf, errlen, "checkpoint names physical page %u "
                "(version %" PRIu64 ") as the translation page of logical "
                "pages %" PRIu64 "..., beyond the device or the checkpoint",
                ppn, version, g << FTL_TP_SHIFT);
      return -EINVAL;
    }
    pm->sdir[slot][g] = ~ppn;
    pm->sver[slot][g] = version;
    if (map) {
      pm->dir[g] = ~ppn;
      pm->dirseq[g] = version;
      __atomic_fetch_or (&ftl->l2p_pop[g / 64], UINT64_C (1) << (g % 64),
                         __ATOMIC_RELAXED);
    }
  }
  return 0;
}

/* A translation page found by the scan: a copy that GC made of one that
 * a directory names (the same version) takes its place.
 */
static void
tp_found (struct ftl *ftl, uint64_t g, uint64_t version, uint32_t ppn)
{
  struct pmap *pm = &ftl->pm;

  if (!pm->on || g >= pm->groups)
    return;
  for (unsigned s = 0; s < 2; s++)
    if (pm->sdir[s][g] && pm->sver[s][g] == version)
      pm->sdir[s][g] = ~ppn;
  if (pm->dir[g] && pm->dirseq[g] == version)
    pm->dir[g] = ~ppn;
}

/* Load a paged checkpoint body: the directory (apply_dir), the valid
 * data pages of each block and the mapped count.
 */
static int
apply_pbody (struct ftl *ftl, const struct ftl_ckpt_header *h,
             const struct body *body, unsigned slot, bool other,
             char *errbuf, size_t errlen)
{
  int r;

  map_clear (ftl);
  r = apply_dir (ftl, h, body, 0, slot, true, errbuf, errlen);
  /* The other slot's pages, as this checkpoint saw them, if that slot
   * still holds the checkpoint it saw there (an older one).
   */
  if (r == 0 && other)
    r = apply_dir (ftl, h, body, fmt_ckpt_podir_offset (ftl->logical_pages),
                   1 - slot, false, errbuf, errlen);
  if (r < 0)
    return r;
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    uint32_t v = get32le (body->p + fmt_ckpt_pvalid_offset
                          (ftl->logical_pages, ftl->blocks, b));
    if (v > ftl->ppb) {
      snprintf (errbuf, errlen, "checkpoint: erase block %u has %u valid "
                "pages, more than it holds", b, v);
      return -EINVAL;
    }
    ftl->valid[b] = v;
  }
  ftl->mapped = get64le (body->p + fmt_ckpt_pmapped_offset
                         (ftl->logical_pages, ftl->blocks));
  ftl->pm.program_pages = get64le (body->p + fmt_ckpt_pmapped_offset
                                   (ftl->logical_pages, ftl->blocks) + 8);
  if (ftl->mapped > ftl->logical_pages) {
    snprintf (errbuf, errlen, "checkpoint: %" PRIu64 " logical pages "
              "mapped, more than the disk has", ftl->mapped);
    return -EINVAL;
  }
  return apply_blocks (ftl, body->p + fmt_ckpt_pblock_offset
                       (ftl->logical_pages, 0), errbuf, errlen);
}

/* Load the map and the block table of a checkpoint body that passed its
 * checksum, checking every entry.
 */
static int
apply_body (struct ftl *ftl, const struct ftl_ckpt_header *h,
            const struct body *body, char *errbuf, size_t errlen)
{
  /* The map: only the mapped entries are stored, so that the pages of
   * l2p that hold none stay unallocated (map.c).  From version 5 a
   * piece that was not read holds only unmapped entries (zeros).
   */
  const uint64_t per = FTL_CKPT_CHUNK / FTL_CKPT_MAP_ENTRY_BYTES;
  const uint8_t *p;
  map_clear (ftl);
  for (uint64_t lpn = 0; lpn < ftl->logical_pages; lpn++) {
    if (lpn % per == 0 && h->version >= 5 && !body->present[lpn / per]) {
      lpn += per - 1;
      continue;
    }
    p = body->p + lpn * FTL_CKPT_MAP_ENTRY_BYTES;
    uint32_t ppn = fmt_ckpt_map_decode (p, h->version);
    if (!fmt_ckpt_map_check (h, ppn)) {
      snprintf (errbuf, errlen, "checkpoint maps logical page %" PRIu64
                " to physical page %u, beyond the device", lpn, ppn);
      return -EINVAL;
    }
    if (ppn != FTL_UNMAPPED)
      l2p_set (ftl, lpn, ppn);
  }
  return apply_blocks (ftl, body->p + fmt_ckpt_block_offset
                       (ftl->logical_pages, 0), errbuf, errlen);
}

/* Read both checkpoint slots and load the newest valid one. */
static int
load_checkpoint (struct ftl *ftl, struct ftl_ckpt_header *hp,
                 char *errbuf, size_t errlen)
{
  uint8_t hb[FTL_CKPT_HDR_BYTES];
  struct ftl_ckpt_header h[2];
  enum ftl_fmt_status st[2];
  struct body body = { 0 };
  int best = -1, r;

  for (int s = 0; s < 2; s++) {
    r = media_pread_raw (&ftl->media, hb, sizeof hb, ftl->sb.ckpt_offset[s]);
    if (r < 0) {
      snprintf (errbuf, errlen, "reading checkpoint slot %d: %s", s,
                strerror (-r));
      return r;
    }
    st[s] = fmt_ckpt_header_decode (hb, sizeof hb, &h[s]);
    if (st[s] == FTL_FMT_OK &&
        !fmt_ckpt_header_check (&h[s], &ftl->sb, NULL, 0))
      st[s] = FTL_FMT_BAD_FIELD;
    /* After a crash of the host during a sync=false session, a
     * checkpoint older than the one it pinned would roll forward over a
     * log that the session did not keep for it (trims dropped, blocks
     * erased): it could serve older data.
     */
    if (st[s] == FTL_FMT_OK && ftl->unsynced_found &&
        h[s].generation < ftl->sb.pinned_ckpt_gen) {
      log_msg (ftl, FTL_LOG_WARN, "checkpoint slot %d (generation %" PRIu64
               ") is older than the one the sync=false session pinned "
               "(%" PRIu64 "): not used", s, h[s].generation,
               ftl->sb.pinned_ckpt_gen);
      st[s] = FTL_FMT_BAD_FIELD;
    }
  }

  /* Try the newer valid slot first, then the other one. */
  for (int attempt = 0; attempt < 2; attempt++) {
    best = -1;
    for (int s = 0; s < 2; s++)
      if (st[s] == FTL_FMT_OK &&
          (best == -1 || h[s].generation > h[best].generation))
        best = s;
    if (best == -1)
      break;
    r = read_body (ftl, ftl->sb.ckpt_offset[best] + FTL_CKPT_HDR_BYTES,
                   h[best].body_bytes, &body);
    if (r < 0) {
      snprintf (errbuf, errlen, "reading checkpoint slot %d: %s", best,
                strerror (-r));
      return r;
    }
    if (fmt_checksum_sparse (body.p, body.len, 0, FTL_CKPT_CHUNK,
                             body.present) == h[best].body_checksum)
      break;
    log_msg (ftl, FTL_LOG_WARN, "checkpoint slot %d (generation %" PRIu64
             ") fails its checksum", best, h[best].generation);
    st[best] = FTL_FMT_BAD_CHECKSUM;
    free_body (&body);
  }
  if (!body.p) {
    snprintf (errbuf, errlen, "no valid checkpoint (slot 0: %s; slot 1: %s)",
              fmt_status_string (st[0]), fmt_status_string (st[1]));
    return -EINVAL;
  }
  if (best >= 0 && st[1 - best] != FTL_FMT_OK && ftl->ckpt_gen == 0 &&
      h[best].generation > 1 && st[1 - best] != FTL_FMT_EMPTY)
    log_msg (ftl, FTL_LOG_WARN, "checkpoint slot %d is damaged (%s); "
             "using slot %d", 1 - best, fmt_status_string (st[1 - best]),
             best);

  if (h[best].paged != ftl->pm.on) {
    snprintf (errbuf, errlen, "checkpoint slot %d %s a paged map, the "
              "superblock says the opposite", best,
              h[best].paged ? "holds" : "does not hold");
    free_body (&body);
    return -EINVAL;
  }
  if (ftl->pm.on)
    r = apply_pbody (ftl, &h[best], &body, best,
                     st[1 - best] == FTL_FMT_OK &&
                     h[1 - best].generation < h[best].generation,
                     errbuf, errlen);
  else
    r = apply_body (ftl, &h[best], &body, errbuf, errlen);
  free_body (&body);
  if (r < 0)
    return r;

  ftl->ckpt_gen = h[best].generation;
  ftl->ckpt_slot = best;
  /* The log must stay replayable from the other slot too, if it holds
   * an older checkpoint (see ftl-internal.h).
   */
  ftl->replay_seq = h[best].seq;
  if (st[1 - best] == FTL_FMT_OK && h[1 - best].seq < h[best].seq)
    ftl->replay_seq = h[1 - best].seq;
  *hp = h[best];
  return 0;
}

/* The log items of an intact page found in a scan: a data page, or the
 * trim records of a trim page.
 */
static int
page_items (struct ftl *ftl, uint32_t b, uint32_t i, uint32_t ppn,
            const struct ftl_oob *o, const uint8_t *page,
            struct ftl_trim_entry *trims, struct items *items,
            uint64_t *maxseq)
{
  uint32_t n;

  if (o->kind == FTL_OOB_MAP) {
    tp_found (ftl, o->lpn, o->seq, ppn);
    return 0;
  }
  if (o->kind == FTL_OOB_DATA || o->kind == FTL_OOB_POISON) {
    if (o->lpn >= ftl->logical_pages) {
      log_msg (ftl, FTL_LOG_WARN, "block %u page %u: logical page %u is "
               "beyond the disk; ignored", b, i, o->lpn);
      return 0;
    }
    return items_push (items, (struct item) {
        .seq = o->seq, .lpn = o->lpn, .count = 0, .ppn = ppn });
  }
  if (fmt_trim_page_decode (page, ftl->page_size, trims, &n) != FTL_FMT_OK) {
    log_msg (ftl, FTL_LOG_WARN, "block %u page %u: damaged trim records; "
             "ignored", b, i);
    return 0;
  }
  for (uint32_t k = 0; k < n; k++) {
    if ((uint64_t) trims[k].lpn + trims[k].count > ftl->logical_pages)
      continue;
    *maxseq = MAX (*maxseq, trims[k].seq);
    int r = items_push (items, (struct item) {
        .seq = trims[k].seq, .lpn = trims[k].lpn,
        .count = trims[k].count, .ppn = ppn });
    if (r < 0)
      return r;
  }
  return 0;
}

/* A page that fails its checksum.  Written after the last durable
 * point, it is a write cut short: dropped.  Below it, it was durable and
 * was damaged since: its logical page must not fall back to an older
 * version, so it stays mapped to it and reads as an error (durable.c).
 */
static int
damaged_page (struct ftl *ftl, uint32_t b, uint32_t i, uint32_t ppn,
              const struct ftl_oob *o, struct items *items)
{
  if (o->seq >= ftl->durable_seq || o->kind == FTL_OOB_MAP) {
    /* A damaged translation page: the directory names another (its
     * checkpoint synced its pages before it counted), or the group's
     * load finds it damaged and says so.
     */
    log_debug (ftl, FTL_DEBUG_RECOVERY, "block %u page %u: torn, dropped",
               b, i);
    return 0;
  }
  if (o->kind == FTL_OOB_TRIM) {
    log_msg (ftl, FTL_LOG_ERROR, "erase block %u page %u: durable trim "
             "records are damaged; the trims they recorded are lost", b, i);
    return 0;
  }
  if (o->lpn >= ftl->logical_pages)
    return 0;
  return items_push (items, (struct item) {
      .seq = o->seq, .lpn = o->lpn, .count = 0, .ppn = ppn,
      .damaged = true });
}

/* Scan one block for log items written after the checkpoint. */
static int
scan_block (struct ftl *ftl, uint32_t b, uint8_t *meta, uint8_t *data,
            struct ftl_trim_entry *trims, struct items *items,
            uint64_t *maxseq)
{
  struct media *m = &ftl->media;
  uint32_t state = ftl->state[b];
  uint32_t cec = media_erase_count (m, b), cwp = m->wp[b];
  uint32_t ec, start, wp, hec = 0;
  struct ftl_oob o;
  int r, hok;

  if (state == FTL_BLK_RETIRED)
    return 0;                   /* never written again */
  /* The whole metadata area in one read: both header copies and every
   * OOB entry (one I/O per block when the cache is cold).
   */
  r = media_read_meta (m, b, meta);
  if (r < 0)
    return r;
  hok = media_header_ec (m, meta, &hec);
  /* A block closed before it was full may have been reopened for GC's
   * copies since (alloc_reopen_for_gc): scanned from its write pointer
   * as an open one.
   */
  bool early = state == FTL_BLK_FULL && cwp < media_block_pages (m, b);
  if (state == FTL_BLK_FULL) {
    /* The common case: unchanged since the checkpoint. */
    bool first_ok = fmt_oob_decode (meta + FTL_BLKHDR_BYTES, FTL_OOB_BYTES,
                                    &o) == FTL_FMT_OK;
    if ((!hok || hec <= cec) && first_ok && o.erase_count <= cec && !early)
      return 0;
    if (!hok && all_zero (meta, (size_t) m->meta_pages * ftl->page_size)) {
      /* Erased since, and its header was lost in the crash: count the
       * erase so that erase counts never go backwards.
       */
      ftl->state[b] = FTL_BLK_FREE;
      media_set_block (m, b, cec + 1, 0);
      media_set_slc (m, b, false);
      errmodel_erased (&ftl->em, b);
      return 0;
    }
  }

  /* The block's erase count now: the highest of the checkpoint's, the
   * header's and any OOB entry's.
   */
  ec = cec;
  if (hok)
    ec = MAX (ec, hec);
  for (uint32_t i = 0; i < ftl->ppb; i++)
    if (fmt_oob_decode (meta + FTL_BLKHDR_BYTES + (size_t) i * FTL_OOB_BYTES,
                        FTL_OOB_BYTES, &o) == FTL_FMT_OK)
      ec = MAX (ec, o.erase_count);
  start = (ec == cec && (state == FTL_BLK_OPEN || early)) ? cwp : 0;
  if (ec == cec && state == FTL_BLK_FULL && !early)
    return 0;                   /* header damaged but block unchanged */
  wp = start;
  /* Its mode: the checkpoint's if the block was not erased since, else
   * what its entries of this erase say (format.h).
   */
  bool slc = ec == cec && media_block_slc (m, b);

  /* The last page with an entry of this erase: the pages up to it are
   * read SCAN_RUN at a time (with a cold cache, one read per page made
   * a roll-forward several times slower).
   */
  uint32_t last = start, win = 0, win_n = 0;
  for (uint32_t i = start; i < ftl->ppb; i++)
    if (fmt_oob_decode (meta + FTL_BLKHDR_BYTES + (size_t) i * FTL_OOB_BYTES,
                        FTL_OOB_BYTES, &o) == FTL_FMT_OK &&
        o.erase_count == ec)
      last = i;

  for (uint32_t i = start; i < ftl->ppb; i++) {
    uint32_t ppn = media_ppn (m, b, i);
    if (fmt_oob_decode (meta + FTL_BLKHDR_BYTES + (size_t) i * FTL_OOB_BYTES,
                        FTL_OOB_BYTES, &o) != FTL_FMT_OK ||
        o.erase_count != ec)
      continue;
    wp = i + 1;
    slc = o.slc;
    if (win_n == 0 || i >= win + win_n) {
      win = i;
      win_n = MIN (SCAN_RUN, last + 1 - i);
      r = media_read (m, ppn, win_n, data);
      if (r < 0)
        return r;
    }
    const uint8_t *page = data + ((size_t) (i - win) << ftl->page_shift);
    /* Even a torn page's number is never given out again. */
    *maxseq = MAX (*maxseq, o.seq);
    if (fmt_checksum (page, ftl->page_size, oob_seed (ftl, &o, ppn))
        != o.data_checksum) {
      r = damaged_page (ftl, b, i, ppn, &o, items);
      if (r < 0)
        return r;
      continue;
    }
    r = page_items (ftl, b, i, ppn, &o, page, trims, items, maxseq);
    if (r < 0)
      return r;
  }

  log_debug (ftl, FTL_DEBUG_RECOVERY, "block %u: rolled forward pages "
             "%u..%u (erase count %u)", b, start, wp, ec);
  media_set_block (m, b, ec, wp);
  media_set_slc (m, b, wp > 0 && slc);
  ftl->state[b] = wp == 0 ? FTL_BLK_FREE : FTL_BLK_FULL;
  /* Erased since the checkpoint: programmed after it, when is not
   * known (errmodel_recovered).
   */
  if (ec != cec)
    errmodel_erased (&ftl->em, b);
  return 0;
}

/* Does lpn map to an intact page of the same or a newer version than
 * seq?  Then a damaged copy of seq is a torn GC copy of it (durable.c)
 * and is not applied.  The page may be in a block not scanned (FULL
 * and unchanged since the checkpoint): its OOB entry and data are read.
 */
static bool
intact_version (struct ftl *ftl, uint32_t lpn, uint64_t seq, uint8_t *page)
{
  uint32_t ppn = l2p_load (ftl, lpn), blk;
  uint8_t oob[FTL_OOB_BYTES];
  struct ftl_oob o;

  if (ppn == FTL_UNMAPPED || ppn == FTL_LOST)
    return false;
  blk = media_ppn_block (&ftl->media, ppn);
  if (media_read_oob (&ftl->media, blk, media_ppn_page (&ftl->media, ppn),
                      1, oob) < 0 ||
      fmt_oob_decode (oob, sizeof oob, &o) != FTL_FMT_OK ||
      (o.kind != FTL_OOB_DATA && o.kind != FTL_OOB_POISON) ||
      o.lpn != lpn || o.seq < seq ||
      o.erase_count != media_erase_count (&ftl->media, blk))
    return false;
  return media_read (&ftl->media, ppn, 1, page) == 0 &&
    fmt_checksum (page, ftl->page_size, oob_seed (ftl, &o, ppn))
    == o.data_checksum;
}

/* Set a mapping in recovery: with a paged map, through the cache, and
 * the valid counts follow (they came with the checkpoint); else they
 * are rebuilt from the map afterwards.
 */
static void
recover_set (struct ftl *ftl, uint64_t lpn, uint32_t ppn)
{
  if (ftl->pm.on)
    pmap_recover_set (ftl, lpn, ppn);
  else
    l2p_set (ftl, lpn, ppn);
}

/* A trim replayed: a group that never held a mapping is skipped whole
 * (a paged map would load it).
 */
static void
recover_trim (struct ftl *ftl, uint64_t lpn, uint64_t count)
{
  for (uint64_t l = lpn; l < lpn + count; ) {
    uint64_t g = l >> FTL_MAP_GROUP_SHIFT;
    uint64_t end = MIN (lpn + count, (g + 1) << FTL_MAP_GROUP_SHIFT);
    if (ftl->l2p_pop[g / 64] >> (g % 64) & 1)
      for (; l < end; l++)
        if (l2p_load (ftl, l) != FTL_UNMAPPED)
          recover_set (ftl, l, FTL_UNMAPPED);
    l = end;
  }
}

static int
roll_forward (struct ftl *ftl, uint64_t ckpt_seq, char *errbuf,
              size_t errlen)
{
  struct items items = { 0 };
  uint8_t *meta, *data;
  struct ftl_trim_entry *trims;
  uint64_t maxseq = ckpt_seq, t0 = clock_now ();
  int r = 0;

  meta = malloc ((size_t) ftl->media.meta_pages * ftl->page_size);
  data = malloc ((size_t) MIN (ftl->ppb, SCAN_RUN) * ftl->page_size);
  trims = malloc (fmt_trim_page_capacity (ftl->page_size) * sizeof *trims);
  if (!meta || !data || !trims) {
    r = -ENOMEM;
    goto out;
  }

  for (uint32_t b = 0; b < ftl->blocks; b++) {
    /* A block whose metadata area was never written holds nothing:
     * on a large disk that holds little data, most of them, skipped a
     * run of SCAN_SKIP at a time.
     */
    if (b % SCAN_SKIP == 0 && b + (uint64_t) SCAN_SKIP <= ftl->blocks &&
        media_meta_is_hole (&ftl->media, b, SCAN_SKIP)) {
      b += SCAN_SKIP - 1;
      continue;
    }
    if (ftl->state[b] != FTL_BLK_FULL &&
        media_meta_is_hole (&ftl->media, b, 1))
      continue;
    r = scan_block (ftl, b, meta, data, trims, &items, &maxseq);
    if (r < 0) {
      snprintf (errbuf, errlen, "recovery: reading erase block %u: %s",
                b, strerror (-r));
      goto out;
    }
  }

  log_debug (ftl, FTL_DEBUG_RECOVERY, "scanned the log: %zu items in %.3f s",
             items.n, (clock_now () - t0) / 1e9);
  t0 = clock_now ();
  if (items.n > 0)
    qsort (items.v, items.n, sizeof *items.v, cmp_item);
  for (size_t i = 0; i < items.n; i++) {
    const struct item *it = &items.v[i];
    /* In sequence order: the newest item for a page is applied last. */
    assert (i == 0 || items.v[i - 1].seq <= it->seq);
    assert ((uint64_t) it->lpn + MAX (it->count, 1) <= ftl->logical_pages);
    if (it->count == 0) {
      if (it->damaged) {
        if (intact_version (ftl, it->lpn, it->seq, data)) {
          log_debug (ftl, FTL_DEBUG_RECOVERY, "logical page %u: a torn "
                     "copy; its original is intact", it->lpn);
          continue;
        }
      }
      recover_set (ftl, it->lpn, it->ppn);
    }
    else if (it->seq >= ckpt_seq)
      recover_trim (ftl, it->lpn, it->count);
  }
  /* The damaged pages that no newer version or trim replaced. */
  for (size_t i = 0; i < items.n; i++) {
    const struct item *it = &items.v[i];
    if (it->damaged && l2p_load (ftl, it->lpn) == it->ppn) {
      log_msg (ftl, FTL_LOG_WARN, "logical page %u: its durable version "
               "(physical page %u) is damaged; it reads as an error until "
               "it is rewritten or trimmed", it->lpn, it->ppn);
      ftl->recovered_damaged++;
    }
  }
  log_debug (ftl, FTL_DEBUG_RECOVERY, "rolled forward %zu log items in "
             "%.3f s; map groups loaded %" PRIu64 ", resident %" PRIu64
             ", dirty %" PRIu64, items.n, (clock_now () - t0) / 1e9,
             pmap_ctr (ftl, PMAP_MISSES), ftl->pm.resident, ftl->pm.dirty);
  ftl->next_seq = maxseq + 1;

 out:
  free (items.v);
  free (meta);
  free (data);
  free (trims);
  return r;
}

/* After a crash of the host during a sync=false session (the mark,
 * FTL_SB_UNSYNCED): any write of the session may be lost or torn, in
 * any order, the checkpoints included, so the map may name a page
 * whose data never reached the file, was erased since, or belongs to
 * another logical page.  Every mapped page is checked as a read checks
 * it (a page of a block's current program, its OOB entry naming this
 * logical page at the block's erase count, its data matching the
 * entry's checksum), and one that fails becomes FTL_LOST: it reads as
 * an error until it is rewritten or trimmed.  Nothing is written here
 * (the checkpoint after recovery records FTL_LOST), so this needs no
 * free block.
 *
 * Why a page that passes is not older data: the checkpoint loaded is
 * the pinned one (the image as that session opened it) or one the
 * session wrote (load_checkpoint refuses older ones), and the log items
 * applied after it were programmed after it; a page that passes is the
 * one its map entry was made for, since a page is programmed once per
 * erase count and the erase count recovery finds is never below the
 * one the map entry was made at.
 */
static int
verify_mapped (struct ftl *ftl)
{
  struct media *m = &ftl->media;
  uint8_t oob[FTL_OOB_BYTES];
  uint8_t *page = malloc (ftl->page_size);
  uint64_t lost = 0;
  int r = 0;

  if (!page)
    return -ENOMEM;
  for (uint64_t lpn = map_next (ftl, 0); lpn < ftl->logical_pages;
       lpn = map_next (ftl, lpn + 1)) {
    uint32_t ppn = l2p_load (ftl, lpn);
    struct ftl_oob o;
    if (ppn == FTL_UNMAPPED || ppn == FTL_LOST)
      continue;
    uint32_t b = media_ppn_block (m, ppn), p = media_ppn_page (m, ppn);
    bool ok = ftl->state[b] != FTL_BLK_FREE &&
      ftl->state[b] != FTL_BLK_RETIRED && p < m->wp[b];
    if (ok) {
      r = media_read_oob (m, b, p, 1, oob);
      if (r == 0)
        r = media_read (m, ppn, 1, page);
      if (r < 0)
        break;
      ok = fmt_oob_decode (oob, sizeof oob, &o) == FTL_FMT_OK &&
        (o.kind == FTL_OOB_DATA || o.kind == FTL_OOB_POISON) &&
        o.lpn == lpn && o.erase_count == media_erase_count (m, b) &&
        fmt_checksum (page, ftl->page_size, oob_seed (ftl, &o, ppn))
        == o.data_checksum;
    }
    if (!ok) {
      log_debug (ftl, FTL_DEBUG_RECOVERY, "logical page %" PRIu64 ": page "
                 "%u of erase block %u was lost in a crash of the host",
                 lpn, p, b);
      recover_set (ftl, lpn, FTL_LOST);
      lost++;
    }
  }
  free (page);
  if (r == 0 && lost > 0)
    log_msg (ftl, FTL_LOG_ERROR, "%" PRIu64 " logical pages were lost in a "
             "crash of the host during a sync=false session: they read "
             "as errors until they are rewritten or trimmed", lost);
  ftl->recovered_lost = lost;
  return r;
}

/* Rebuild valid counts, the reverse map, and the free pool from the map
 * and block states.
 */
static int
rebuild (struct ftl *ftl, char *errbuf, size_t errlen)
{
  uint64_t mapped = 0;
  uint64_t phys = (uint64_t) ftl->blocks * ftl->ppb;
  /* One bit per physical page, for this check only: no two logical
   * pages may map to one physical page.
   */
  uint64_t *seen = calloc (DIV_ROUND_UP (phys, 64), sizeof *seen);
  int r = 0;

  if (!seen)
    return -ENOMEM;
  /* A paged map: the valid data pages came with the checkpoint and
   * followed the roll forward; the translation pages are counted here.
   * The map is not walked (it is not all in memory).
   */
  if (ftl->pm.on) {
    pmap_count_refs (ftl);
    mapped = ftl->mapped;
    goto blocks;
  }
  memset (ftl->valid, 0, ftl->blocks * sizeof *ftl->valid);
  for (uint64_t lpn = map_next (ftl, 0); lpn < ftl->logical_pages;
       lpn = map_next (ftl, lpn + 1)) {
    uint32_t ppn = l2p_load (ftl, lpn);
    if (ppn == FTL_UNMAPPED)
      continue;
    if (ppn == FTL_LOST) {      /* no page: counted, reads as an error */
      mapped++;
      continue;
    }
    uint32_t b = media_ppn_block (&ftl->media, ppn);
    if (ftl->state[b] == FTL_BLK_FREE || ftl->state[b] == FTL_BLK_RETIRED ||
        media_ppn_page (&ftl->media, ppn) >= ftl->media.wp[b]) {
      snprintf (errbuf, errlen, "logical page %" PRIu64 " maps to page %u "
                "of erase block %u, which was never written", lpn,
                media_ppn_page (&ftl->media, ppn), b);
      r = -EINVAL;
      goto out;
    }
    if (seen[ppn / 64] & (UINT64_C (1) << (ppn % 64))) {
      snprintf (errbuf, errlen, "logical page %" PRIu64 " maps to physical "
                "page %u, as another logical page does", lpn, ppn);
      r = -EINVAL;
      goto out;
    }
    seen[ppn / 64] |= UINT64_C (1) << (ppn % 64);
    ftl->valid[b]++;
    mapped++;
  }
  ftl->mapped = mapped;

 blocks:
  ftl->nfree = 0;
  ftl->wl.retired = 0;
  for (uint32_t b = 0; b < ftl->blocks; b++) {
    /* Blocks that were open are closed: they stay partly written until
     * GC reclaims them.
     */
    if (ftl->state[b] == FTL_BLK_OPEN)
      ftl->state[b] = ftl->media.wp[b] == 0 ? FTL_BLK_FREE : FTL_BLK_FULL;
    if (ftl->state[b] == FTL_BLK_FULL && ftl->media.wp[b] == 0)
      ftl->state[b] = FTL_BLK_FREE;
    /* Ages are not persistent: every block starts the same age. */
    ftl->close_seq[b] = ftl->next_seq;
    /* A block erased for the last time just before a crash. */
    if (ftl->state[b] == FTL_BLK_FREE &&
        media_erase_count (&ftl->media, b) >= ftl->wl.endurance)
      ftl->state[b] = FTL_BLK_RETIRED;
    if (ftl->state[b] == FTL_BLK_RETIRED)
      ftl->wl.retired++;
    if (ftl->state[b] == FTL_BLK_FREE) {
      if (ftl->valid[b] != 0 || ftl->media.wp[b] != 0) {
        snprintf (errbuf, errlen, "erase block %u is free but holds data", b);
        r = -EINVAL;
        goto out;
      }
      ftl->nfree++;
    }
  }
  alloc_free_ec_recount (ftl);
  /* The blocks that were open are closed (state.h); with the pool at
   * the crash reserve, GC gets the room they have left.
   */
  alloc_blocks_closed (ftl);
  if (!ftl->readonly)
    alloc_reopen_for_gc (ftl);
  if (ftl->nfree < FTL_SPOR_RESERVE_BLOCKS)
    log_msg (ftl, FTL_LOG_WARN, "%u erase blocks are free, fewer than the "
             "%u kept for an open after a crash (an image written by an "
             "older version?): garbage collection may find no block for "
             "its copies", ftl->nfree, FTL_SPOR_RESERVE_BLOCKS);
 out:
  free (seen);
  return r;
}

int
recovery_run (struct ftl *ftl, char *errbuf, size_t errlen)
{
  struct ftl_ckpt_header h;
  bool clean;
  int r;

  ftl->unsynced_found = ftl->sb.flags & FTL_SB_UNSYNCED;
  if (ftl->unsynced_found)
    log_msg (ftl, FTL_LOG_WARN, "the image was left open by a sync=false "
             "session (the host crashed?): every mapped page is verified, "
             "and any that a crash of the host lost reads as an error");
  uint64_t t0 = clock_now ();
  r = load_checkpoint (ftl, &h, errbuf, errlen);
  if (r < 0)
    return r;
  log_debug (ftl, FTL_DEBUG_RECOVERY, "loaded the checkpoint in %.3f s",
             (clock_now () - t0) / 1e9);
  r = durable_load (ftl);
  if (r < 0) {
    snprintf (errbuf, errlen, "reading the durable-point record: %s",
              strerror (-r));
    return r;
  }
  for (int i = 0; i < FTL_CTR__MAX; i++)
    ctr_set (ftl, i, h.counters[i]);
  errmodel_set_clock (&ftl->em, h.clock_skew, h.pe_offset);
  /* The checkpoint took h.seq for itself (ckpt.c). */
  ftl->next_seq = h.seq + 1;
  ftl->durable_ckpt_seq = h.seq;

  clean = ftl->sb.state == FTL_SB_CLEAN && h.clean &&
    ftl->sb.clean_ckpt_gen == h.generation;
  log_debug (ftl, FTL_DEBUG_RECOVERY, "checkpoint %" PRIu64 " at sequence %"
             PRIu64 "; image %s", h.generation, h.seq,
             clean ? "shut down cleanly" : "not shut down cleanly: "
             "rolling the log forward");
  ftl->was_unclean = !clean;
  ftl->last_ckpt_clean = h.clean;
  if (!clean) {
    r = roll_forward (ftl, h.seq, errbuf, errlen);
    if (r < 0)
      return r;
  }
  if (ftl->unsynced_found) {
    r = verify_mapped (ftl);
    if (r < 0) {
      snprintf (errbuf, errlen, "recovery: verifying the mapped pages: %s",
                strerror (-r));
      return r;
    }
  }
  return rebuild (ftl, errbuf, errlen);
}
