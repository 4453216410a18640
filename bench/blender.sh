#!/usr/bin/env bash
# nbdkit-ftl: the I/O blender, and its cure by data placement.
#
# Four namespaces on one image, each an NBD export by name, and four
# sequential fio writers, one per export (fio's nbd engine), with 4K,
# 16K, 64K and 256K blocks, unthrottled and concurrent, as Micron
# measured a 7450 PRO split in four (WAF about 1.6 on one drive, 1.02
# for each writer alone).  After a fill of every namespace (the same
# writers, one pass each), the writers run until each has written
# --drive-writes times its namespace; then the device's write
# amplification (media bytes over host bytes, the NVMe FDP statistics)
# and each namespace's own (the bytes programmed for its data, GC's
# copies of its pages included, over its host bytes) are taken over
# that phase.  One run per placement= (shared, isolated,
# initially-isolated), the whole set --repeat times; a Markdown table
# of the medians.
#
# --noisy: the noisy neighbour instead.  Two namespaces, A and B, both
# filled; A takes random 4 KiB overwrites, B sequential 4 KiB
# overwrites (so that the two write at about the same rate: B's data
# then waits a whole pass of B in blocks that A's overwrites empty),
# concurrently, until B has written --drive-writes times
# its namespace: B's own WAF with placement=shared and isolated, and B
# alone (the same image, A idle), medians of --repeat.
#
#   bench/blender.sh [--size 1G] [--op 28] [--drive-writes 3]
#                    [--repeat 3] [--placements "shared isolated
#                    initially-isolated"] [--noisy] [--dir DIR]
#                    [--plugin SO] [-- PLUGIN-KEY=VALUE ...]
#
# --size is the whole logical size, split evenly.  Run from the top of
# a built tree (or give --plugin).  Needs nbdkit, fio and jq.  The
# timing model is off unless a key turns it on: write amplification
# does not depend on the machine's speed or load.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
plugin=
size=1G
op=28
drive_writes=3
repeat=3
placements="shared isolated initially-isolated"
noisy=false
dir=
extra=()

die () { echo "${0##*/}: $*" >&2; exit 1; }

while [ $# -gt 0 ]; do
    case "$1" in
        --size) size="$2"; shift 2 ;;
        --op) op="$2"; shift 2 ;;
        --drive-writes) drive_writes="$2"; shift 2 ;;
        --repeat) repeat="$2"; shift 2 ;;
        --placements) placements="$2"; shift 2 ;;
        --noisy) noisy=true; shift ;;
        --dir) dir="$2"; shift 2 ;;
        --plugin) plugin="$2"; shift 2 ;;
        --) shift; extra=("$@"); break ;;
        *) die "unknown option $1 (see the comment at the top)" ;;
    esac
done

source "$here/find-plugin.sh"
find_plugin
for t in nbdkit fio jq numfmt; do
    command -v "$t" >/dev/null || die "$t is needed"
done
if [ -z "$dir" ]; then
    if [ -d /dev/shm ] && [ -w /dev/shm ]; then dir=/dev/shm; else dir=/tmp; fi
fi

tmp="$(mktemp -d "$dir/blender.XXXXXX")"
server=
writers=()
cleanup ()
{
    local p
    for p in "${writers[@]}" $server; do
        kill "$p" 2>/dev/null || :
    done
    for p in "${writers[@]}" $server; do
        wait "$p" 2>/dev/null || :
    done
    rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

bytes="$(numfmt --from=iec "$size")"
if $noisy; then
    names=(A B)
else
    names=(n4k n16k n64k n256k)
    blocks=(4k 16k 64k 256k)
fi
nns=${#names[@]}
ns_bytes=$(( bytes / nns / 1048576 * 1048576 ))
[ "$ns_bytes" -gt 0 ] || die "--size $size is too small for $nns namespaces"
spec=
for n in "${names[@]}"; do
    spec="${spec:+$spec,}$n:$ns_bytes"
done

start ()
{
    rm -f "$tmp/disk.img" "$tmp/stats.json" "$tmp/sock"
    nbdkit -f -U "$tmp/sock" "$plugin" file="$tmp/disk.img" \
           namespaces="$spec" placement="$1" op="$op" \
           stats="$tmp/stats.json" stats-interval=1 "${extra[@]}" \
           2>"$tmp/server.err" &
    server=$!
    for _ in $(seq 300); do [ -s "$tmp/stats.json" ] && [ -S "$tmp/sock" ] && return 0; sleep 0.1; done
    cat "$tmp/server.err" >&2
    die "the server did not start"
}

stop ()
{
    kill "$server"
    wait "$server" || :
    server=
}

# The statistics once they stop moving (the file is rewritten every
# second while the counters change): host and media bytes of the
# device and of each namespace.
counts ()
{
    jq -c '[.fdp.host_bytes_with_metadata_written, .fdp.media_bytes_written,
            [.namespaces[] | [.host_write_bytes, .media_write_bytes]]]' \
       "$tmp/stats.json"
}

snapshot ()
{
    local prev= cur
    while :; do
        sleep 1.2
        cur="$(counts)"
        [ "$cur" = "$prev" ] && break
        prev="$cur"
    done
    echo "$cur"
}


# writer I BS [FIO OPTIONS...]: a fio job on namespace I's export, in
# the background (its pid appended to writers).
writer ()
{
    local i="$1" bs="$2"
    shift 2
    fio --name="${names[i]}" --ioengine=nbd \
        --uri="nbd+unix:///${names[i]}?socket=$tmp/sock" --thread \
        --bs="$bs" --iodepth=16 --size="$ns_bytes" \
        --output="$tmp/fio.${names[i]}" "$@" &
    writers+=($!)
}

wait_writers ()
{
    local p
    for p in "${writers[@]}"; do
        wait "$p" || die "fio failed: $(cat "$tmp"/fio.* | tail -n 20)"
    done
    writers=()
}

# Run until each namespace of the list given has written n times its
# size since the snapshot base: then stop every writer.
until_written ()
{
    local base="$1" n="$2" p
    shift 2
    local want=$(( n * ns_bytes ))
    while :; do
        sleep 1
        jq -e --argjson b "$base" --argjson w "$want" --arg l "$*" '
            ($l | split(" ") | map(tonumber)) as $l
            | [.namespaces[] | .host_write_bytes] as $h
            | all($l[]; $h[.] - $b[2][.][0] >= $w)' \
            "$tmp/stats.json" >/dev/null && break
        for p in "${writers[@]}"; do
            kill -0 "$p" 2>/dev/null || die "a writer stopped early"
        done
    done
    for p in "${writers[@]}"; do
        kill -INT "$p" 2>/dev/null || :
    done
    for p in "${writers[@]}"; do
        wait "$p" 2>/dev/null || :
    done
    writers=()
}

# WAFs over [a, z]: the device's, then each namespace's.
wafs ()
{
    jq -rn --argjson a "$1" --argjson z "$2" '
        def r(x; y): if y > 0 then x / y else 0 end;
        [r($z[1] - $a[1]; $z[0] - $a[0])]
        + [range(0; $z[2] | length) as $i
           | r($z[2][$i][1] - $a[2][$i][1]; $z[2][$i][0] - $a[2][$i][0])]
        | map(. * 1000 | round / 1000) | @tsv'
}

# One blender run: prints the WAFs, the fewest drive writes of a
# namespace and the seconds of the measured phase.
blender_run ()
{
    local base end t0
    start "$1"
    for (( i = 0; i < nns; i++ )); do
        writer $i "${blocks[i]}" --rw=write
    done
    wait_writers
    base="$(snapshot)"
    t0=$SECONDS
    for (( i = 0; i < nns; i++ )); do
        writer $i "${blocks[i]}" --rw=write --time_based --runtime=100000
    done
    until_written "$base" "$drive_writes" 0 1 2 3
    stop        # the last statistics: written once the cache is destaged
    end="$(counts)"
    printf '%s\t%s\t%s\n' "$(wafs "$base" "$end")" \
        "$(jq -rn --argjson a "$base" --argjson z "$end" --arg s "$ns_bytes" '
            [range(0; $z[2] | length) as $i
             | ($z[2][$i][0] - $a[2][$i][0]) / ($s | tonumber)] | min
            | . * 10 | floor / 10')" "$(( SECONDS - t0 ))"
}

# One noisy-neighbour run: B's WAF.  $2: whether A writes.
noisy_run ()
{
    local base end
    start "$1"
    writer 0 1m --rw=write
    writer 1 1m --rw=write
    wait_writers
    base="$(snapshot)"
    if [ "$2" = true ]; then
        writer 0 4k --rw=randwrite --norandommap --randrepeat=0 \
               --time_based --runtime=100000
    fi
    writer 1 4k --rw=write --time_based --runtime=100000
    until_written "$base" "$drive_writes" 1
    stop        # the last statistics: written once the cache is destaged
    end="$(counts)"
    wafs "$base" "$end"
}

median ()
{
    sort -g | awk '{ v[NR] = $1 }
        END { if (NR % 2) print v[(NR + 1) / 2]
              else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# The median of column c of the rows in file f.
col_median ()
{
    cut -f "$2" "$1" | median
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(cd "$here/.." && git rev-parse --short HEAD 2>/dev/null || echo '?'): size=$size op=$op drive-writes=$drive_writes repeat=$repeat ${extra[*]}" >&2
if $noisy; then
    echo "| placement | B's WAF (median) | device WAF | A's WAF | runs |"
    echo "|---|---:|---:|---:|---|"
    for what in "shared true" "isolated true" "shared false"; do
        set -- $what
        : > "$tmp/rows"
        for (( r = 0; r < repeat; r++ )); do
            noisy_run "$1" "$2" >> "$tmp/rows"
            tail -n 1 "$tmp/rows" >&2
        done
        label="$1"
        [ "$2" = true ] || label="B alone ($1, A idle)"
        printf '| %s | %.3f | %.3f | %s | %s |\n' "$label" \
            "$(col_median "$tmp/rows" 3)" "$(col_median "$tmp/rows" 1)" \
            "$([ "$2" = true ] && col_median "$tmp/rows" 2 || echo -)" \
            "$(cut -f 3 "$tmp/rows" | paste -sd ' ')"
    done
    exit 0
fi

echo "| placement | device WAF | ${names[0]} | ${names[1]} | ${names[2]} | ${names[3]} | drive writes (fewest) | seconds | device WAF of each run |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
for p in $placements; do
    : > "$tmp/rows"
    for (( r = 0; r < repeat; r++ )); do
        blender_run "$p" >> "$tmp/rows"
        tail -n 1 "$tmp/rows" >&2
    done
    printf '| %s | %.3f | %.3f | %.3f | %.3f | %.3f | %s | %s | %s |\n' "$p" \
        "$(col_median "$tmp/rows" 1)" "$(col_median "$tmp/rows" 2)" \
        "$(col_median "$tmp/rows" 3)" "$(col_median "$tmp/rows" 4)" \
        "$(col_median "$tmp/rows" 5)" "$(col_median "$tmp/rows" 6)" \
        "$(col_median "$tmp/rows" 7)" "$(cut -f 1 "$tmp/rows" | paste -sd ' ')"
done
