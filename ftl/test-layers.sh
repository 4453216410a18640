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
exec python3 "${srcdir:-.}/../scripts/check-layers" --verbose "${builddir:-.}"
