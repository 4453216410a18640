#!/usr/bin/env bash
# nbdkit-ftl: test-ftl-kill.sh with a paged map (map-cache=4K on an
# 8 MiB disk: two groups, one in memory): kill -9 under load while
# checkpoints write translation pages and groups are evicted and
# reloaded; every flushed write survives.
FTL_KILL_PAGED=1 exec bash "${srcdir:-.}/test-ftl-kill.sh"
