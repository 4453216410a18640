/* nbdkit-ftl: a doorbell.  See bell.h. */

#include <config.h>

#include "util/bell.h"

void
ftl_bell_init (struct ftl_bell *b)
{
  pthread_mutex_init (&b->lock, NULL);
  pthread_cond_init (&b->cond, NULL);
  b->rings = 0;
  b->stop = false;
  b->listening = false;
}

void
ftl_bell_destroy (struct ftl_bell *b)
{
  pthread_mutex_destroy (&b->lock);
  pthread_cond_destroy (&b->cond);
}

void
ftl_bell_ring (struct ftl_bell *b)
{
  pthread_mutex_lock (&b->lock);
  b->rings++;
  pthread_cond_signal (&b->cond);
  pthread_mutex_unlock (&b->lock);
}
