#!/usr/bin/env bash
# nbdkit-ftl: the short form of the torture bench (bench/torture.sh):
# three rounds from fixed seeds, each a random configuration killed or
# powered off under 3 clients, reopened and checked sector by sector,
# with ftlctl check and no error-level message from the server.  The
# seeds cover between them kill -9 and power cuts, one and two cycles,
# a 4 MiB disk, op=9, a paged map, write-cache=0 and the default cache,
# sync=false, both GC modes, the error model with a fast clock and read
# reclaim, and the SLC cache (bench/torture.py config SEED prints a
# seed's configuration).  TORTURE_SEEDS replaces them.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires timeout /usr/bin/python3
if ! /usr/bin/python3 -c 'import nbd' 2>/dev/null; then
    missing "the Python bindings of libnbd (python3-libnbd)"
fi
[ -x "${FTLCTL:-}" ] || missing "ftlctl not built"

make_tmpdir
for seed in ${TORTURE_SEEDS:-5 10 20}; do
    if ! "${srcdir:-.}/../bench/torture.sh" --seed "$seed" --rounds 1 \
            --plugin "$FTL_PLUGIN" --dir "$tmp/torture"; then
        echo "$0: FAIL: torture round seed $seed; its logs:"
        for f in "$tmp/torture/round-$seed"/*.log; do
            echo "== $f"
            tail -n 20 "$f"
        done
        exit 1
    fi
done
