#!/usr/bin/env bash
# nbdkit-ftl: the write amplification benchmark through the plugin.
#
# The same method as ftl-bench (a sequential fill, then random 4 KiB
# overwrites; steady WAF over the last half of them), but through NBD:
# nbdkit serves the plugin on a Unix socket and fio's nbd engine writes.
# WAF comes from the plugin's statistics file.  Prints one row per
# workload, beside ftl-bench's figure for the same workload when
# --compare is given.
#
#   bench/fio-waf.sh [--size 1G] [--drive-writes 10] [--dir DIR]
#                    [--workloads "uniform 80/20 90/10 zipf"]
#                    [--compare] [-- PLUGIN-KEY=VALUE ...]
#
# Run from the top of a built tree.  Needs nbdkit, fio and jq.
set -euo pipefail

top="$(cd "$(dirname "$0")/.." && pwd)"
plugin="$top/plugin/.libs/nbdkit-ftl-plugin.so"
size=1G
drive_writes=10
dir=
workloads="uniform 80/20 90/10 zipf"
compare=false
extra=()

while [ $# -gt 0 ]; do
    case "$1" in
        --size) size="$2"; shift 2 ;;
        --drive-writes) drive_writes="$2"; shift 2 ;;
        --dir) dir="$2"; shift 2 ;;
        --workloads) workloads="$2"; shift 2 ;;
        --compare) compare=true; shift ;;
        --) shift; extra=("$@"); break ;;
        *) echo "$0: unknown option $1 (see the comment at the top)" >&2
           exit 1 ;;
    esac
done

for t in nbdkit fio jq; do
    command -v "$t" >/dev/null || { echo "$0: $t is needed" >&2; exit 1; }
done
[ -f "$plugin" ] || { echo "$0: build first: $plugin is missing" >&2; exit 1; }
if [ -z "$dir" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then dir=/dev/shm; else dir=/tmp; fi
fi

tmp="$(mktemp -d "$dir/fio-waf.XXXXXX")"
server=
cleanup ()
{
    if [ -n "$server" ]; then
        kill "$server" 2>/dev/null || :
        wait "$server" 2>/dev/null || :
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

bytes="$(numfmt --from=iec "$size")"
pages=$(( bytes / 4096 ))

# fio's name for each workload's distribution of logical pages.
distribution ()
{
    case "$1" in
        uniform) echo random ;;
        80/20) echo zoned:80/20:20/80 ;;
        90/10) echo zoned:90/10:10/90 ;;
        zipf) echo zipf:0.99 ;;
        *) echo "$0: unknown workload $1" >&2; exit 1 ;;
    esac
}

# snapshot: the statistics once the stats thread has caught up (it
# rewrites the file every second while the counters move).
snapshot ()
{
    local prev= cur
    while :; do
        sleep 1.2
        cur="$(jq -c '[.host.write_pages, .media.program_pages]' "$tmp/stats.json")"
        [ "$cur" = "$prev" ] && break
        prev="$cur"
    done
    echo "$cur"
}

fio_run ()
{
    fio --name=w --ioengine=nbd --uri="nbd+unix:///?socket=$tmp/sock" \
        --thread --output=/dev/null "$@"
}

printf "%-8s %7s %8s %9s %10s %8s\n" workload steady overall erases \
       "GC copied" seconds
for w in $workloads; do
    rm -f "$tmp/disk.img" "$tmp/stats.json" "$tmp/sock"
    nbdkit -f -U "$tmp/sock" "$plugin" file="$tmp/disk.img" size="$size" \
           stats="$tmp/stats.json" stats-interval=1 "${extra[@]}" &
    server=$!
    for _ in $(seq 100); do [ -S "$tmp/sock" ] && break; sleep 0.1; done
    start=$SECONDS
    fio_run --rw=write --bs=1M --iodepth=16 --size="$bytes"
    base="$(snapshot)"
    half=$(( pages * 4096 * drive_writes / 2 ))
    dist="$(distribution "$w")"
    fio_run --rw=randwrite --bs=4k --iodepth=16 --size="$bytes" \
            --io_size=$half --norandommap --randrepeat=0 \
            --random_distribution="$dist"
    mid="$(snapshot)"
    fio_run --rw=randwrite --bs=4k --iodepth=16 --size="$bytes" \
            --io_size=$half --norandommap --randrepeat=0 \
            --random_distribution="$dist"
    end="$(snapshot)"
    secs=$(( SECONDS - start ))
    kill "$server"; wait "$server" || :; server=
    jq -rn --argjson b "$base" --argjson m "$mid" --argjson e "$end" \
       --arg w "$w" --arg s "$secs" \
       --slurpfile st "$tmp/stats.json" '
        def waf(a; z): (z[1] - a[1]) / (z[0] - a[0]);
        "\($w)\t\(waf($m; $e))\t\(waf($b; $e))\t\($st[0].media.erases)\t\($st[0].gc.copied_pages)\t\($s)"' |
        awk -F'\t' '{ printf "%-8s %7.2f %8.2f %9d %10d %8d\n", $1, $2, $3, $4, $5, $6 }'
    if $compare; then
        "$top/bench/ftl-bench" --dir "$dir" --size "$size" --workload "$w" \
            --drive-writes "$drive_writes" | tail -n 1 |
            awk '{ printf "  in-process: steady %s overall %s\n", $2, $4 }'
    fi
done
