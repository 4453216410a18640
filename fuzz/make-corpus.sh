#!/usr/bin/env bash
# nbdkit-ftl: regenerate the seed corpus of the fuzz targets from real
# images (made by gen-corpus with the FTL library).  "make seed-corpus" runs
#
#   make-corpus.sh GEN-CORPUS CORPUS-DIR
#
# Seeds that the fuzzers found and that were added by hand (crash
# reproducers kept as regression inputs) live in CORPUS-DIR/<target>/
# under names starting with "regress-" and are kept.
set -euo pipefail

gen="$1"
dir="$2"
mkdir -p "$dir"
for d in "$dir"/fuzz-*/; do
    [ -d "$d" ] || continue
    find "$d" -type f ! -name 'regress-*' -delete
done
"$gen" "$dir"
for d in "$dir"/fuzz-*/; do
    printf '%-40s %3d seeds, %7d bytes\n' "$d" \
        "$(find "$d" -type f | wc -l)" \
        "$(find "$d" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }')"
done
