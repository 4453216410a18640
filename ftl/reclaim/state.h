/* nbdkit-ftl: garbage collection's and wear leveling's state, as the
 * handle holds it (struct gc under gc.lock unless noted; struct wl set
 * at open, its flags atomic).
 */
#ifndef FTL_RECLAIM_STATE_H
#define FTL_RECLAIM_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "ftl.h"
#include "format/format.h"
#include "log/state.h"

/* A victim block being reclaimed (gc.c): its OOB entries, read once,
 * and how far relocation has got.  A reclaim may stop between batches
 * and go on later (background GC in slices); meanwhile the block stays
 * FULL, so no frontier takes it, and victim selection skips it.
 */
struct gc_victim {
  uint32_t block;               /* FTL_NO_BLOCK: none */
  uint32_t wp;                  /* its programmed pages */
  uint32_t next;                /* the next page to look at */
  uint64_t live_trim;           /* trim pages from this seq on are copied */
  uint8_t *oob;                 /* wp OOB entries */
};

/* Garbage collection's state (gc.c; under lock unless noted). */
struct gc {
  pthread_mutex_t lock;
  pthread_t owner;              /* atomic: the thread holding lock, if
                                 * owned */
  bool owned;                   /* atomic; for tests and assertions */
  enum ftl_gc_policy policy;    /* set at open */
  enum ftl_gc_mode mode;        /* set at open */
  uint32_t low;                 /* foreground GC starts at or below */
  uint32_t high;                /* background GC keeps more free than
                                 * this (foreground too, without it) */
  uint32_t drain_target;        /* the background thread erases drained
                                 * blocks (nothing to copy) up to this */
  uint32_t drain_ring;          /* a writer that opens a block wakes it
                                 * at or below this (a few blocks under
                                 * drain_target: a batch per wake) */
  bool from_slc;                /* relocating from an SLC block: a fold
                                 * (counted in slc.folded) */
  bool moving_for_wl;           /* relocating for wear leveling, not to
                                 * free space (counted apart) */
  bool wl_after;                /* background GC reclaimed a victim: its
                                 * next step may move a block for wear
                                 * leveling (gc_wear_level) */
  /* Victims relocated and drained, still FULL, waiting for a barrier
   * to cover them (gc.c): up to erase_batch of them share one, and a
   * client's flush or a background barrier may cover them first.
   * npending changes under gc.lock and is read atomically outside it.
   */
  bool defer;                   /* within gc_reclaim: victims may wait */
  uint32_t erase_batch;         /* set at open, 1..FTL_GC_ERASE_BATCH */
  uint32_t pending[FTL_GC_ERASE_BATCH];
  unsigned npending;
  struct gc_victim cur;         /* the victim background GC reclaims in
                                 * slices (block read atomically) */
  uint8_t *buf;                 /* relocation buffer */
  uint8_t *oob;                 /* a victim's OOB entries */
  uint32_t buf_pages;
  /* Counters since open (atomic). */
  uint64_t barriers;            /* barriers run for erases */
  uint64_t erases_unsynced;     /* erases an earlier barrier covered */
  uint64_t slices, yields;      /* deadline mode */
};

/* Wear leveling, retirement and end of life (wl.c). */
struct wl {
  uint32_t threshold;           /* static wear leveling trigger */
  uint32_t endurance;           /* erases before a block is retired */
  uint32_t retired;             /* retired blocks, under alloc_lock */
  uint32_t last_cycle;          /* blocks whose next erase retires them
                                 * (wl_on_last_cycle), under alloc_lock */
  uint32_t spread;              /* atomic: the erase count spread that
                                 * wl_pick found last */
  bool worn_out;                /* atomic: too few blocks left to write */
};

#endif /* FTL_RECLAIM_STATE_H */
