#!/usr/bin/env bash
# nbdkit-ftl: the library's calls go down its layers (ftl/README.md).
# scripts/check-layers reads the compiled objects with nm and fails on
# a call from a layer to a higher one, and on a cycle between modules.
set -euo pipefail
for cmd in python3 nm; do
    if ! command -v "$cmd" >/dev/null 2>&1; then
        # Both come with scripts/build's packages: never skip in CI.
        [ "${CI:-}" = true ] && { echo "FAIL: $cmd not found"; exit 1; }
        echo "SKIP: $cmd not found"
        exit 77
    fi
done
status=0
python3 "${srcdir:-.}/../scripts/check-layers" --verbose "${builddir:-.}" ||
    status=1

# Sizes a reader can hold: no source file of the library over 1000
# lines, no function over 120 (from its opening brace in column 0 to
# its closing one).
shopt -s nullglob
for f in "${srcdir:-.}"/*.[ch] "${srcdir:-.}"/*/*.[ch]; do
    n=$(wc -l < "$f")
    if [ "$n" -gt 1000 ]; then
        echo "FAIL: ${f#"${srcdir:-.}"/} has $n lines (at most 1000)"
        status=1
    fi
    awk -v f="${f#"${srcdir:-.}"/}" '
        /^\{/ { start = NR; name = prev }
        /^\}/ && start { if (NR - start > 120) {
                printf "FAIL: %s:%d: a function of %d lines (at most 120): %s\n",
                       f, start, NR - start, name; bad = 1 }
            start = 0 }
        { prev = $0 }
        END { exit bad }' "$f" || status=1
done
[ $status -eq 0 ] && echo "sizes: every file at most 1000 lines, every function at most 120"
exit $status
