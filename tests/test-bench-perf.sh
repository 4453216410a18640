#!/usr/bin/env bash
# nbdkit-ftl: bench/perf.sh still runs: a tiny run of three of its
# workloads and of its memory mode.  Speed is not checked here (see
# bench/README.md); only that every server answered and every figure
# the report promises is there.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires fio jq nbdinfo numfmt timeout

make_tmpdir
perf="${srcdir:-.}/../bench/perf.sh"

timeout 120 "$perf" --plugin "$FTL_PLUGIN" --dir "$tmp" \
    --size 64M --runtime 500ms --repeat 1 \
    --workloads seq-read,rand-write-qd16,rand-write-steady \
    >"$tmp/out.md"
cat "$tmp/out.md"

# One row per server and workload, with a positive median IOPS.
for w in seq-read rand-write-qd16 rand-write-steady; do
    grep -q "^| $w | ftl | [1-9]" "$tmp/out.md"
done
test "$(grep -c '^|  | file | [1-9]' "$tmp/out.md")" -eq 3
test "$(grep -c '^|  | memory | [1-9]' "$tmp/out.md")" -eq 3
grep -q '^| random write steady state vs memory | ' "$tmp/out.md"
grep -q '^Peak RSS (VmHWM.*ftl [1-9][0-9]* MiB ([0-9.]* MiB per GiB of disk)' "$tmp/out.md"
grep -q '^| seq-read | [0-9.]* .*| [0-9.]* .*| [0-9.]*' "$tmp/out.md"
# The steady-state run had garbage collection running.
grep -q 'during the measured run GC reclaimed [1-9]' "$tmp/out.md"

timeout 120 "$perf" --plugin "$FTL_PLUGIN" --dir "$tmp" \
    --memory --memory-sizes 64M >"$tmp/mem.md"
cat "$tmp/mem.md"
# The row of the 64M disk: its measured figures (the "Map at 4 B/page"
# column is computed from the size, so it is not checked): resident
# memory after create and after the full write, both positive and at
# most the peak, and the create and shutdown times.
awk -F'|' '
    $2 ~ /^ *64M *$/ {
        rows++
        for (i = 4; i <= 8; i++) {
            v[i] = $i
            gsub(/[^0-9.]/, "", v[i])
        }
        rss_create = v[4] + 0; rss_write = v[5] + 0; peak = v[6] + 0
        if (!(rss_create > 0 && rss_write > 0 && peak >= rss_create &&
              peak >= rss_write && v[7] + 0 > 0 && v[8] != ""))
            bad++
    }
    END { exit !(rows == 1 && !bad) }' "$tmp/mem.md"
grep -q '^Open of the 64M image after a clean shutdown' "$tmp/mem.md"

# Nothing left behind in the directory but our own files.
test -z "$(find "$tmp" -name 'ftl-perf.*')"
