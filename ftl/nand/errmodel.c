/* nbdkit-ftl: media that ages.  See errmodel.h for the model.
 *
 * The pure model (the clock, rates and draws) comes first; then what
 * the FTL calls: errmodel_read after a page was read and verified,
 * the scrub's step and read reclaim's choice of a block.
 */

#include <config.h>

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftl-internal.h"

/* Program hours in a checkpoint: 24 bits (1900 years). */
#define HOUR_MAX 0xffffffu

static int64_t
wall_now (void)
{
  return (int64_t) time (NULL);
}

int
errmodel_init (struct errmodel *em, const struct ftl_errors *o,
               uint32_t blocks, uint32_t page_size, uint64_t created)
{
  memset (em, 0, sizeof *em);
  em->enabled = o->enabled;
  em->seed = o->seed;
  em->time_scale = o->time_scale > 0 ? o->time_scale : 1.0;
  em->scale = o->scale > 0 ? o->scale : 1.0;
  em->disturb = o->disturb > 0 ? o->disturb : 1.0;
  em->ecc_bits = o->ecc_bits ? o->ecc_bits : EM_ECC_BITS;
  em->steps = o->retry_steps ? o->retry_steps : EM_RETRY_STEPS;
  em->reclaim_reads = o->no_reclaim ? 0
    : o->reclaim_reads ? o->reclaim_reads : EM_RECLAIM_READS;
  em->scrub_ns = o->scrub_ns == UINT64_MAX ? 0
    : o->scrub_ns ? o->scrub_ns : EM_SCRUB_NS;
  em->codeword_bytes = MIN (EM_CODEWORD, page_size);
  em->codewords = page_size / em->codeword_bytes;
  em->created = created;
  em->blocks = blocks;
  em->prog = calloc (blocks, sizeof *em->prog);
  em->reads = calloc (blocks, sizeof *em->reads);
  em->reclaim = calloc (blocks, 1);
  if (!em->prog || !em->reads || !em->reclaim) {
    errmodel_free (em);
    return -ENOMEM;
  }
  errmodel_set_clock (em, 0, 0);
  return 0;
}

void
errmodel_free (struct errmodel *em)
{
  free (em->prog);
  free (em->reads);
  free (em->reclaim);
  em->prog = NULL;
  em->reads = NULL;
  em->reclaim = NULL;
}

void
errmodel_set_clock (struct errmodel *em, int64_t skew, uint32_t pe_offset)
{
  em->skew0 = skew;
  em->clock0 = wall_now () + skew;
  em->mono0 = clock_now ();
  em->pe_offset = pe_offset;
}

int64_t
errmodel_now (const struct errmodel *em)
{
  double dt = (double) (clock_now () - em->mono0) / 1e9;
  return em->clock0 + (int64_t) (dt * em->time_scale);
}

int64_t
errmodel_skew (const struct errmodel *em)
{
  /* What the clock gained on the wall clock since open: exact (and
   * stable) at the normal speed.
   */
  double dt = (double) (clock_now () - em->mono0) / 1e9;
  return em->skew0 + (int64_t) (dt * (em->time_scale - 1));
}

uint32_t
errmodel_program_hour (const struct errmodel *em, uint32_t blk)
{
  int64_t t = __atomic_load_n (&em->prog[blk], __ATOMIC_RELAXED);
  int64_t h;

  if (t == 0)
    return 0;
  h = (t - (int64_t) em->created) / 3600 + 1;
  return h < 1 ? 1 : h > HOUR_MAX ? HOUR_MAX : (uint32_t) h;
}

void
errmodel_set_program_hour (struct errmodel *em, uint32_t blk, uint32_t hour)
{
  em->prog[blk] = hour ? (int64_t) em->created + (int64_t) (hour - 1) * 3600
    : 0;
}

void
errmodel_erased (struct errmodel *em, uint32_t blk)
{
  __atomic_store_n (&em->prog[blk], 0, __ATOMIC_RELAXED);
  __atomic_store_n (&em->reads[blk], 0, __ATOMIC_RELAXED);
  __atomic_store_n (&em->reclaim[blk], 0, __ATOMIC_RELAXED);
}

void
errmodel_rates (const struct errmodel *em, uint32_t blk,
                uint32_t erase_count, uint32_t endurance, uint64_t reads,
                int64_t now, struct em_rates *r)
{
  double w = ((double) erase_count + em->pe_offset) / endurance;
  int64_t prog = __atomic_load_n (&em->prog[blk], __ATOMIC_RELAXED);
  double days = prog && now > prog ? (double) (now - prog) / 86400 : 0.0;

  r->base = em->scale * EM_B0 * (1 + EM_BW * w);
  r->shift = em->scale * (EM_R * (w + EM_R0) * pow (days, EM_K)
                          + EM_D * em->disturb * (w + EM_D0) * reads);
}

/* ---- draws: a counter-based generator ---- */

static uint64_t
mix (uint64_t x)
{
  x ^= x >> 30;
  x *= UINT64_C (0xbf58476d1ce4e5b9);
  x ^= x >> 27;
  x *= UINT64_C (0x94d049bb133111eb);
  x ^= x >> 31;
  return x;
}

/* A uniform number in (0, 1) from a key. */
static double
uniform (uint64_t key)
{
  return ((mix (key) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* A Poisson draw of mean lambda from a key: by inversion below 30,
 * else the normal approximation.
 */
static uint32_t
poisson (double lambda, uint64_t key)
{
  if (lambda <= 0)
    return 0;
  if (lambda < 30) {
    double u = uniform (key), p = exp (-lambda), cdf = p;
    uint32_t k = 0;
    while (u > cdf && k < 1000) {
      k++;
      p *= lambda / k;
      cdf += p;
    }
    return k;
  }
  double u1 = uniform (key), u2 = uniform (key ^ UINT64_C (0x5851f42d4c957f2d));
  double z = sqrt (-2 * log (u1)) * cos (2 * M_PI * u2);
  double x = lambda + sqrt (lambda) * z + 0.5;
  return x <= 0 ? 0 : x >= 1e9 ? 1000000000 : (uint32_t) x;
}

void
errmodel_draw (const struct errmodel *em, const struct em_rates *r,
               uint32_t ppn, uint32_t erase_count, uint64_t key,
               struct em_outcome *out)
{
  double bits = 8.0 * em->codeword_bytes;
  uint64_t k0 = mix (em->seed ^ mix (((uint64_t) ppn << 32) | erase_count)
                     ^ mix (key + UINT64_C (0x9e3779b97f4a7c15)));

  memset (out, 0, sizeof *out);
  for (uint32_t s = 0; s <= em->steps; s++) {
    double left = s == 0 ? 1.0 : EM_RF + (1 - EM_RF) * pow (EM_RHO, s);
    double lambda = (r->base + r->shift * left) * bits;
    uint64_t sum = 0;
    uint32_t worst = 0;
    bool ok = true;

    for (uint32_t c = 0; c < em->codewords; c++) {
      uint32_t x = poisson (lambda, k0 + ((uint64_t) s << 20) + c);
      worst = MAX (worst, x);
      sum += x;
      if (x > em->ecc_bits) {
        ok = false;
        break;
      }
    }
    if (ok) {
      out->ok = true;
      out->steps = s;
      out->bits = sum;
      out->worst = worst;
      return;
    }
  }
  out->steps = em->steps;
}

/* ---- what the FTL calls ---- */

/* Should block blk's data move (read reclaim)?  Its reads near the
 * limit, or a read that needed a retry or came within a quarter of
 * the ECC's limit.
 */
static void
note_reclaim (struct ftl *ftl, uint32_t blk, uint64_t reads,
              const struct em_outcome *o)
{
  struct errmodel *em = &ftl->em;

  if (!em->reclaim_reads)
    return;
  if (reads >= em->reclaim_reads || o->steps > 0 ||
      o->worst * 4 > em->ecc_bits * 3) {
    if (!__atomic_exchange_n (&em->reclaim[blk], 1, __ATOMIC_RELAXED) &&
        ftl_bell_listening (&ftl->bell))
      ftl_bell_ring (&ftl->bell);
  }
}

int
errmodel_read (struct ftl *ftl, uint32_t ppn, uint32_t n, uint32_t ec)
{
  struct errmodel *em = &ftl->em;
  struct media *m = &ftl->media;
  uint32_t blk = media_ppn_block (m, ppn);
  uint64_t first, bits = 0;
  uint32_t steps = 0;
  struct em_rates rates;
  int64_t now;
  int r = 0;

  if (!em->enabled)
    return 0;
  first = __atomic_fetch_add (&em->reads[blk], n, __ATOMIC_RELAXED);
  now = errmodel_now (em);
  for (uint32_t i = 0; i < n; i++) {
    struct em_outcome o;
    errmodel_rates (em, blk, ec, ftl->wl.endurance, first + i, now, &rates);
    errmodel_draw (em, &rates, ppn + i, ec, first + i, &o);
    note_reclaim (ftl, blk, first + i + 1, &o);
    steps += o.steps;
    bits += o.bits;
    if (!o.ok) {
      __atomic_fetch_add (&em->uncorrectable, 1, __ATOMIC_RELAXED);
      ctr_add (ftl, FTL_CTR_MEDIA_ERRORS, 1);
      log_msg (ftl, FTL_LOG_ERROR, "page %u of erase block %u: "
               "uncorrectable: more than %u bit errors in a codeword "
               "after %u read retry steps (raw bit error rate %.2g)",
               media_ppn_page (m, ppn + i), blk, em->ecc_bits, o.steps,
               rates.base + rates.shift);
      r = -EIO;
      break;
    }
  }
  ctr_add (ftl, FTL_CTR_CORRECTED_BITS, bits);
  ctr_add (ftl, FTL_CTR_READ_RETRIES, steps);
  /* Each retry step reads the page again. */
  if (steps > 0) {
    int r2 = media_read_retry (m, blk, steps);
    if (r == 0)
      r = r2;
  }
  return r;
}

bool
errmodel_relocation_lost (struct ftl *ftl, uint32_t ppn, uint32_t ec)
{
  struct errmodel *em = &ftl->em;
  uint32_t blk = media_ppn_block (&ftl->media, ppn);
  struct em_rates rates;
  struct em_outcome o;
  uint64_t k;

  if (!em->enabled)
    return false;
  k = __atomic_fetch_add (&em->reads[blk], 1, __ATOMIC_RELAXED);
  errmodel_rates (em, blk, ec, ftl->wl.endurance, k, errmodel_now (em),
                  &rates);
  errmodel_draw (em, &rates, ppn, ec, k, &o);
  ctr_add (ftl, FTL_CTR_CORRECTED_BITS, o.bits);
  ctr_add (ftl, FTL_CTR_READ_RETRIES, o.steps);
  if (o.steps > 0)
    (void) media_read_retry (&ftl->media, blk, o.steps);
  if (!o.ok)
    __atomic_fetch_add (&em->uncorrectable, 1, __ATOMIC_RELAXED);
  return !o.ok;
}

uint32_t
errmodel_reclaim_pick (struct ftl *ftl, bool (*skip) (struct ftl *, uint32_t))
{
  struct errmodel *em = &ftl->em;

  uint32_t pick = FTL_NO_BLOCK;

  if (!em->enabled || !em->reclaim_reads)
    return FTL_NO_BLOCK;
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t b = 0; b < ftl->blocks && pick == FTL_NO_BLOCK; b++) {
    if (!__atomic_load_n (&em->reclaim[b], __ATOMIC_RELAXED))
      continue;
    if (ftl->state[b] == FTL_BLK_FULL && !skip (ftl, b) &&
        !wl_on_last_cycle (ftl, b))
      pick = b;
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  return pick;
}

void
errmodel_reclaimed (struct ftl *ftl)
{
  __atomic_fetch_add (&ftl->em.reclaimed, 1, __ATOMIC_RELAXED);
}

int
errmodel_scrub_step (struct ftl *ftl)
{
  struct errmodel *em = &ftl->em;
  struct media *m = &ftl->media;
  uint64_t t = clock_now ();
  uint32_t b, wp, ec;
  int64_t now;

  if (!em->enabled || !em->scrub_ns ||
      t - em->scrub_last < em->scrub_ns)
    return 0;
  em->scrub_last = t;
  /* The next block holding data. */
  pthread_mutex_lock (&ftl->alloc_lock);
  for (uint32_t i = 0; i < ftl->blocks; i++) {
    b = (em->scrub_next + i) % ftl->blocks;
    if (ftl->state[b] == FTL_BLK_FULL)
      goto found;
  }
  pthread_mutex_unlock (&ftl->alloc_lock);
  return 0;

 found:
  em->scrub_next = (b + 1) % ftl->blocks;
  wp = m->wp[b];
  ec = media_erase_count (m, b);
  pthread_mutex_unlock (&ftl->alloc_lock);
  /* Read every page of it as the drive's scrub would (the model's
   * draws, without the data: nothing is returned to anyone), and note
   * a block whose reads need retries for read reclaim.  The reads
   * disturb the block like any other.
   */
  now = errmodel_now (em);
  for (uint32_t p = 0; p < wp; p++) {
    struct em_rates rates;
    struct em_outcome o;
    uint64_t k = __atomic_fetch_add (&em->reads[b], 1, __ATOMIC_RELAXED);
    errmodel_rates (em, b, ec, ftl->wl.endurance, k, now, &rates);
    errmodel_draw (em, &rates, media_ppn (m, b, p), ec, k, &o);
    note_reclaim (ftl, b, k + 1, &o);
  }
  __atomic_fetch_add (&em->scrub_pages, wp, __ATOMIC_RELAXED);
  __atomic_fetch_add (&em->scrub_blocks, 1, __ATOMIC_RELAXED);
  return 1;
}

void
errmodel_recovered (struct ftl *ftl)
{
  struct errmodel *em = &ftl->em;
  int64_t now = errmodel_now (em);

  for (uint32_t b = 0; b < ftl->blocks; b++) {
    if (ftl->media.wp[b] == 0)
      em->prog[b] = 0;
    else if (em->prog[b] == 0)
      em->prog[b] = now;
  }
}
