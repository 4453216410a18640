/* nbdkit-ftl: the NAND timing model.  See timing.h. */

#include <config.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl.h"
#include "timing.h"
#include "util.h"

int
timing_init (struct timing *t, const struct ftl_timing *o)
{
  memset (t, 0, sizeof *t);
  if (!o || !o->enabled)
    return 0;
  t->enabled = true;
  t->read_ns = o->read_ns;
  t->program_ns = o->program_ns;
  t->erase_ns = o->erase_ns;
  t->units = (o->channels ? o->channels : FTL_DEFAULT_CHANNELS)
    * (o->dies ? o->dies : FTL_DEFAULT_DIES);
  t->unit_free = calloc (t->units, sizeof *t->unit_free);
  if (!t->unit_free)
    return -ENOMEM;
  return 0;
}

void
timing_free (struct timing *t)
{
  free (t->unit_free);
  t->unit_free = NULL;
  t->enabled = false;
}

uint64_t
timing_now (void)
{
  struct timespec ts;
  clock_gettime (CLOCK_MONOTONIC, &ts);
  return (uint64_t) ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
timing_sleep_until (uint64_t t)
{
  struct timespec ts = {
    .tv_sec = t / 1000000000,
    .tv_nsec = t % 1000000000,
  };
  while (clock_nanosleep (CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL)
         == EINTR)
    ;
}

uint64_t
timing_reserve (struct timing *t, uint32_t blk, uint64_t dur)
{
  uint64_t *u = &t->unit_free[blk % t->units];
  uint64_t now = timing_now ();
  uint64_t old = __atomic_load_n (u, __ATOMIC_RELAXED), start;

  do
    start = MAX (now, old);
  while (!__atomic_compare_exchange_n (u, &old, start + dur, true,
                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED));
  return start;
}

