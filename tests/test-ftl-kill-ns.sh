#!/usr/bin/env bash
# nbdkit-ftl: test-ftl-kill.sh on an image of 3 namespaces with a client
# writing to each at once: kill -9 under load, and every flushed write
# survives in its own namespace, none in another's.
FTL_KILL_NS=1 exec bash "${srcdir:-.}/test-ftl-kill.sh"
