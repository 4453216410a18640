#!/usr/bin/env bash
# nbdkit-ftl: a short run of every fuzz target (FUZZ_SECONDS each,
# set by the Makefile): the seed corpus first, then new inputs.  Skips
# only when libFuzzer is not available, and under CI=true (.ci/run) not
# even then: scripts/build installs clang and its libFuzzer runtime.
set -euo pipefail

if [ "${HAVE_LIBFUZZER:-no}" != yes ]; then
    why="libFuzzer is not available (configure found no clang that links"
    why="$why with -fsanitize=fuzzer; Debian: clang libclang-rt-14-dev)"
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $why; scripts/build installs it, and under CI=true" \
             "a test must not skip for want of it"
        exit 1
    fi
    echo "SKIP: $why"
    exit 77
fi
# Every module of the library is in the instrumented copy.
for c in "${srcdir:-.}"/../ftl/*/*.c; do
    m="$(basename "$c")"
    if [ ! -f "${srcdir:-.}/lib/ftl-$m" ]; then
        echo "FAIL: ${c#*/../} has no fuzz/lib/ftl-$m (add it to Makefile.am too)"
        exit 1
    fi
done
exec timeout -k 10 600 "${srcdir:-.}/run-fuzz.sh"
