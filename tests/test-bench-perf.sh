#!/usr/bin/env bash
# nbdkit-ftl: bench/perf.sh still runs: a tiny run of three of its
# workloads and of its memory mode.  Speed is not checked here (see
# bench/README.md); only that every server answered and every figure
# the report promises is there.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires fio jq nbdinfo numfmt timeout

make_tmpdir
perf="$(cd "${srcdir:-.}/../bench" && pwd)/perf.sh"
plugin="$(cd "$(dirname "$FTL_PLUGIN")" && pwd)/${FTL_PLUGIN##*/}"

# From a directory of its own, which must stay empty: fio writes the
# output of its exec_prerun and exec_postrun hooks to the current
# directory, and the script runs it in its work directory.
mkdir "$tmp/cwd"
(cd "$tmp/cwd" &&
 timeout 120 "$perf" --plugin "$plugin" --dir "$tmp" \
    --size 64M --runtime 500ms --repeat 1 \
    --workloads seq-read,rand-write-qd16,rand-write-steady) \
    >"$tmp/out.md"
test -z "$(ls -A "$tmp/cwd")"
cat "$tmp/out.md"

# One row per server and workload, with a positive median IOPS.
sed -n '/^| Workload | Server | IOPS /,/^$/p' "$tmp/out.md" >"$tmp/iops.md"
for w in seq-read rand-write-qd16 rand-write-steady; do
    grep -q "^| $w | ftl | [1-9]" "$tmp/iops.md"
done
test "$(grep -c '^|  | file | [1-9]' "$tmp/iops.md")" -eq 3
test "$(grep -c '^|  | memory | [1-9]' "$tmp/iops.md")" -eq 3

# Where the CPU time went, per request: a row per workload and server;
# the server and fio spent CPU on every request, and the four parts
# (one repeat: no medians of parts) add up to the whole.  Idle is what
# the others leave, but not below 0: in runs of a few hundredths of a
# second the clock ticks of the CPU times can add up to more than the
# whole.
sed -n '/^| Workload | Server | server | client /,/^$/p' "$tmp/out.md" \
    >"$tmp/cpu.md"
awk -F'|' '
    NR > 2 && NF > 7 {
        rows++
        srv = $4 + 0; cli = $5 + 0; rest = $6 + 0; idle = $7 + 0; all = $8 + 0
        sum = srv + cli + rest + idle
        if (!(srv > 0 && cli > 0 && rest >= 0 && idle >= 0 && all > 0 &&
              sum > 0.97 * all && sum < 1.25 * all)) {
            print "bad row: " $0; bad++
        }
    }
    END { exit !(rows == 9 && !bad) }' "$tmp/cpu.md"
# What the goals against memory leave for the server: a figure for
# each random write workload that ran (it may be negative).
grep -Eq '^\| rand-write-qd16 \| ≥ 0\.85× memory \| [0-9.]+ \| -?[0-9.]+ \|$' \
    "$tmp/out.md"
grep -Eq '^\| rand-write-steady \| ≥ 0\.70× memory \| [0-9.]+ \| -?[0-9.]+ \|$' \
    "$tmp/out.md"
grep -q '^| random write steady state vs memory | ' "$tmp/out.md"
# The server's CPU per request against its floor (memory's server plus
# the library's own, from bench/ftl-ops): a row for each random write
# workload, every figure positive, the floor their sum, and the goal.
sed -n '/^| Workload | ftl server | memory server | library | floor /,/^$/p' \
    "$tmp/out.md" >"$tmp/floor.md"
awk -F' *[|] *' '
    NR > 2 && NF > 7 {
        rows++
        split($5, lib, " ")
        if (!($3 > 0 && $4 > 0 && lib[1] > 0 && $6 > 0 && $7 > 0 &&
              $6 > 0.95 * ($4 + lib[1]) && $6 < 1.05 * ($4 + lib[1]) + 0.02 &&
              $8 >= 0)) { print "bad row: " $0; bad++ }
    }
    END { exit !(rows == 2 && !bad) }' "$tmp/floor.md"
grep -q '^| server CPU per request vs the floor, random write steady state | ≤ 1.10× | ' \
    "$tmp/out.md"
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
