/* nbdkit-ftl: small helpers shared by the FTL modules. */

#include <config.h>

#include "util/util.h"

FTL_TLS unsigned ftl_tls_shard;
static unsigned next_shard;

unsigned
ftl_shard_assign (void)
{
  unsigned i = __atomic_fetch_add (&next_shard, 1, __ATOMIC_RELAXED)
    % FTL_SHARDS;

  ftl_tls_shard = i + 1;
  return i;
}
