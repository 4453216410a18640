#!/usr/bin/env bash
# nbdkit-ftl: a short run of every fuzz target (FUZZ_SECONDS each,
# set by the Makefile): the seed corpus first, then new inputs.  Skips
# only when libFuzzer is not available.
set -euo pipefail

if [ "${HAVE_LIBFUZZER:-no}" != yes ]; then
    echo "$0: SKIP: libFuzzer is not available (configure found no clang" \
         "that links with -fsanitize=fuzzer; Debian: clang libclang-rt-14-dev)"
    exit 77
fi
exec timeout -k 10 600 "${srcdir:-.}/run-fuzz.sh"
