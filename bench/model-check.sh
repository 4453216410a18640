#!/usr/bin/env bash
# nbdkit-ftl: the timing model's presets against their drives' published
# figures.
#
# For every preset (model=NAME) the four corners run through fio's nbd
# engine on a Unix socket: sequential 128 KiB read and write at iodepth
# 32, random 4 KiB read and write at iodepth 1 and 32, and, for the
# presets whose drive has a published steady-state figure, random 4 KiB
# writes at iodepth 32 on a full disk with GC running.  Each figure is
# printed beside the preset's published one (nbdkit --dump-plugin lists
# them, from the table in ftl/timing.c; sources in the plugin's man
# page, Timing) with the ratio measured / published.
#
# The NBD transport of this machine has its own ceiling: the same
# corners run once with the model off (timing=false), and a published
# figure above what the untimed plugin reaches is marked "transport
# cap" (the model cannot be faster than the path it is measured
# through).  With the model on every request waits for its modeled
# end, which costs CPU time: the QD32 random corners run once more on a
# model where nothing queues (4096 dies, free transfers), and a
# published figure above that is marked "host cap".
# At iodepth 1 the transport's latency adds to the model's:
# the "model only" column gives 1 / (measured latency - untimed
# latency), the drive the model stands for without this machine's
# NBD path in front of it.  At iodepth 32 (and in the steady state) it
# gives the figure over the busier of the dies' and the host link's
# shares of the run's time, what the model alone would deliver; the
# "untimed" column is the untimed plugin's figure of the same run, and
# "bound" names what held the figure: "model" (the dies or the link
# busy 90% of the time or more), "transport" (within 10% of the
# untimed figure), or "host" (this machine's own work for a timed
# request).
#
# nbdkit serves each connection with -t 32 threads, so that a client at
# iodepth 32 puts all of its requests into the model at once (nbdkit's
# default, 16, would hold half of them back).
#
# Per preset:  fresh image -> random writes qd1, qd32 (before GC)
#              -> fill (sequential 1 MiB writes) -> sequential read,
#              random reads qd1, qd32 -> sequential write (over the full
#              disk) -> steady state: one drive write of random 4 KiB
#              writes, then the measured run.
# At the end of each preset the statistics must show no request aborted
# by its deadline (default timeout).
#
# Beside each figure: the share of the run's time that the model's dies
# (mean over them) and host link were busy (the statistics' timing.*
# before and after the run, over fio's job runtime): a corner held by
# the dies or the link shows it near 1; one below its figure with both
# low was held back by this machine.  "host stall us" is the mean time
# by which the real work of this machine made the run's requests slower
# than the model (timing.host_stall_us): the time after their modeled
# end (the backing file, copies, waking up), and syncs of the backing
# file and waits for other threads held up by them, before a modeled
# end; a figure spoiled by the host shows it large.  --repeat N runs each preset's
# corners N times on a fresh image and gives the median, the range and
# max/min.
#
# What the host's own work cost the run, beside each figure: "sync
# ms/s", the time the backing file's syncs took (media.sync_ns) per
# second of the run; "destage stall ms/s", the write cache's destage
# batches' real work that their modeled programs did not cover (syncs
# before them, work past their end: cache.destage_stall_ns), which
# writers waiting for cache room wait too and count into their host
# stall; "cache+sync %",
# the share of the requests' time spent in the cache and sync stages
# (latency_us.<op>.cache and .sync).  A run is spoiled by the host
# (--host-limit, 10%) when the syncs took more than a tenth of its time
# ("sync": another process's writeback makes them slow, and garbage
# collection's erases wait for them), or the destage stall did
# ("destage-stall"), or the requests' host stall is more than a tenth
# of their time ("host-stall": at iodepth 1 and for the QD32 random
# reads the wake-up from the model's sleeps alone may pass it on a busy
# machine): the "host" column counts such runs and names what spoiled
# them.
#
# For a preset with an SLC cache in front of slower cells (a figure
# after the cache, post_cache_mbs: sata-qlc), "seq-write-cache" writes
# --cache-write (512 MiB) sequentially on a fresh --cache-size (16 GiB,
# sparse: the image holds what was written) image, whose SLC cache has
# room for all of it, and compares it with the published figure (the
# cache's); the sequential write over the full disk is compared with
# the figure after the cache.  "rand-write-qd32-cache" does the same
# with random 4 KiB writes at iodepth 32 (a data sheet's random write
# figure is also its cache's): on the small disk, whose SLC cache is a
# few tens of MiB, those run mostly after the cache.
#
# See bench/README.md.

set -euo pipefail

prog="${0##*/}"
here="$(cd "$(dirname "$0")" && pwd)"

usage ()
{
    cat <<EOF
Usage: $prog [OPTION]...
Run the four corners against every timing preset and print a Markdown
table: measured, published, ratio, and where the NBD transport of this
machine caps a figure.

  --presets LIST     comma list (default: every preset of the plugin)
  --corners LIST     comma list of the corners to measure (default: all
                     of seq-read, seq-write, seq-write-cache,
                     rand-read-qd1, rand-read-qd32, rand-write-qd1,
                     rand-write-qd32, rand-write-qd32-cache,
                     rand-write-steady); the fills
                     they need run anyway
  --size SIZE        disk size (default 256M; --quick: 128M)
  --op PERCENT       over-provisioning of the images (default 10: the
                     drives' 1 TB of user space on 1 TiB of NAND)
  --runtime SECS     seconds per measured fio run (default 3; --quick: 1)
  --quick            a short run (a few minutes in all)
  --no-steady        skip the steady-state random writes
  --dir DIR          where the images go (default: \$TMPDIR unless tmpfs,
                     else the build tree)
  --plugin PATH      the plugin (default: the one in this build tree)
  --ftl-args ARGS    more KEY=VALUE parameters for every server
  --repeat N         run every preset's corners N times, each on a fresh
                     image, and print the median, the range and max/min
                     (default 1)
  --cache-size SIZE  the in-cache write corner's disk (default 16G)
  --cache-write SIZE what it writes (default 512M)
  --host-limit PCT   a run is spoiled by the host when the syncs or the
                     destage stall took more than PCT% of its time, or
                     the host stall PCT% of its requests' (default 10)
  --runs FILE        also write every run's figures to FILE, a line per
                     corner and run: preset, run, corner, figure, die
                     and host utilisation, host stall us, sync and
                     destage stall ms/s, cache+sync %, what spoiled it
  -h, --help         this text
EOF
}

die () { echo "$prog: $*" >&2; exit 1; }

presets=
corner_list=
size=
op=10
runtime=
quick=false
steady=true
dir=
plugin=
ftl_args=()
repeat=1
runs_file=
cache_size=16G
cache_write=512M
host_limit=10

while [ $# -gt 0 ]; do
    case "$1" in
        --presets) presets="${2:?--presets needs a value}"; shift 2 ;;
        --corners) corner_list="${2:?--corners needs a value}"; shift 2 ;;
        --size) size="${2:?--size needs a value}"; shift 2 ;;
        --op) op="${2:?--op needs a value}"; shift 2 ;;
        --runtime) runtime="${2:?--runtime needs a value}"; shift 2 ;;
        --quick) quick=true; shift ;;
        --no-steady) steady=false; shift ;;
        --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
        --plugin) plugin="${2:?--plugin needs a value}"; shift 2 ;;
        --ftl-args) read -r -a ftl_args <<<"${2?--ftl-args needs a value}"
                    shift 2 ;;
        --repeat) repeat="${2:?--repeat needs a value}"; shift 2 ;;
        --cache-size) cache_size="${2:?--cache-size needs a value}"; shift 2 ;;
        --cache-write) cache_write="${2:?--cache-write needs a value}"; shift 2 ;;
        --host-limit) host_limit="${2:?--host-limit needs a value}"; shift 2 ;;
        --runs) runs_file="${2:?--runs needs a file}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done

if $quick; then
    : "${size:=128M}" "${runtime:=1}"
else
    : "${size:=256M}" "${runtime:=3}"
fi
[[ "$runtime" =~ ^[1-9][0-9]*$ ]] || die "--runtime $runtime: whole seconds"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat $repeat: a count of runs"
size_bytes="$(numfmt --from=iec "$size" 2>/dev/null)" ||
    die "bad size '$size'"
[ "$size_bytes" -ge $((64 << 20)) ] || die "--size $size: at least 64M"
cache_size_bytes="$(numfmt --from=iec "$cache_size" 2>/dev/null)" ||
    die "bad size '$cache_size'"
cache_write_bytes="$(numfmt --from=iec "$cache_write" 2>/dev/null)" ||
    die "bad size '$cache_write'"
[ "$cache_write_bytes" -ge $((1 << 20)) ] &&
    [ "$cache_write_bytes" -le "$cache_size_bytes" ] ||
    die "--cache-write $cache_write: 1M to --cache-size"
[[ "$host_limit" =~ ^[0-9]+([.][0-9]+)?$ ]] ||
    die "--host-limit $host_limit: a percentage"
if [ -n "$runs_file" ]; then
    : >"$runs_file" || die "--runs $runs_file: cannot write it"
fi
IFS=, read -r -a cl <<<"$corner_list"
for c in "${cl[@]}"; do
    case "$c" in
        seq-read|seq-write|seq-write-cache|rand-read-qd1|rand-read-qd32|\
        rand-write-qd1|rand-write-qd32|rand-write-qd32-cache|\
        rand-write-steady) ;;
        *) die "--corners: unknown corner '$c'" ;;
    esac
done

# shellcheck source=find-plugin.sh
source "$here/find-plugin.sh"
find_plugin

for cmd in nbdkit fio jq numfmt awk; do
    command -v "$cmd" >/dev/null || die "$cmd not found"
done

# The presets and their published figures.
dump="$(nbdkit --dump-plugin "$plugin")"
published () # PRESET FIELD
{
    sed -n "s/^ftl_model_$1_$2=//p" <<<"$dump"
}
if [ -z "$presets" ]; then
    presets="$(sed -n 's/^ftl_models=//p' <<<"$dump" | tr -d ' ')"
fi
IFS=, read -r -a run_presets <<<"$presets"
for p in "${run_presets[@]}"; do
    [ -n "$(published "$p" drive)" ] || die "unknown preset '$p'"
done

fstype () { df --output=fstype "$1" | tail -n 1; }
if [ -z "$dir" ]; then
    if [ -n "${TMPDIR:-}" ] && [ -d "$TMPDIR" ] && [ "$(fstype "$TMPDIR")" != tmpfs ]; then
        dir="$TMPDIR"
    else
        dir="$builddir/bench"
    fi
fi
[ -d "$dir" ] || die "--dir $dir: no such directory"
work="$(mktemp -d "$dir/ftl-model.XXXXXX")"
server_pid=

cleanup ()
{
    set +e
    if [ -n "$server_pid" ]; then kill -9 "$server_pid" 2>/dev/null; fi
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

sock="$work/ftl.sock"
uri="nbd+unix:///?socket=$sock"

# start_server ARGS...: a fresh image of $disk_bytes (the plugin
# creates it sparse), nbdkit serving it, with its statistics live on a
# loopback port (metrics-port=, /stats.json): a port picked at random,
# and another one if it was taken.
disk_bytes="$size_bytes"
port=
start_server ()
{
    local i try
    for (( try = 0; try < 20; try++ )); do
        rm -f "$work/ftl.img" "$work/stats.json" "$sock" "$work/pid"
        port=$(( 20000 + (RANDOM * 32768 + RANDOM) % 40000 ))
        : >"$work/start.log"
        nbdkit -f -t 32 -U "$sock" -P "$work/pid" "$plugin" file="$work/ftl.img" \
            size="$disk_bytes" op="$op" stats="$work/stats.json" \
            stats-interval=1 metrics-port="$port" "$@" \
            "${ftl_args[@]}" \
            2>"$work/start.log" &
        for (( i = 0; i < 1200; i++ )); do
            if [ -s "$work/pid" ] && [ -S "$sock" ]; then
                server_pid="$(cat "$work/pid")"
                rm -f "$work/last_snap"
                return 0
            fi
            kill -0 $! 2>/dev/null || break
            sleep 0.05
        done
        wait $! 2>/dev/null || :
        cat "$work/start.log" >>"$work/server.log"
        [ "$i" -lt 1200 ] || die "nbdkit did not start"
        grep -q 'metrics-port: cannot serve' "$work/start.log" ||
            { cat "$work/server.log" >&2; die "nbdkit exited"; }
    done
    die "nbdkit: no free loopback port for metrics-port= in 20 tries"
}

stop_server ()
{
    local i
    kill -TERM "$server_pid"
    for (( i = 0; i < 1200; i++ )); do
        kill -0 "$server_pid" 2>/dev/null || break
        sleep 0.1
    done
    kill -0 "$server_pid" 2>/dev/null && { kill -9 "$server_pid"; die "nbdkit did not stop"; }
    wait "$server_pid" 2>/dev/null || :
    cat "$work/start.log" >>"$work/server.log"
    server_pid=
}

# util_snapshot: "DIE_BUSY_NS HOST_BUSY_NS DIES STALL_US MODELED SYNC_NS
# DESTAGE_STALL_NS LAT_US WAIT_US" into $work/last_snap once the disk
# is idle.  The statistics are read live (metrics-port=, /stats.json:
# the stats= file is rewritten only every second, and not at all once
# the host stops) every 50 ms by one python3 process, until they have
# not moved for 0.5 s (longer than slc-fold-idle's 200 ms and the
# background thread's 100 ms look, so the folding, destaging and
# garbage collection that follow a run are over or under way), or
# after 3 s of background work whatever it does (the steady state's
# garbage collection does not stop between runs on a real drive
# either).  STALL_US is the sum of the requests' host stalls
# (timing.host_stall_us), MODELED the requests that waited for the
# model (0 for both, and for the busy times, without the timing model);
# SYNC_NS the time the backing file's syncs took (media.sync_ns),
# DESTAGE_STALL_NS the destager's time past its modeled programs
# (cache.destage_stall_ns); LAT_US the reads' and writes' total time,
# WAIT_US the part of it in the cache and sync stages (latency_us).
# The snapshot after a run is the one before the next (the disk is
# idle in between), until the server restarts.
util_snapshot ()
{
    python3 - "$port" >"$work/last_snap" <<'PY' ||
import json, sys, time, urllib.error, urllib.request

url = "http://127.0.0.1:%s/stats.json" % sys.argv[1]

def get(d, path):
    for k in path.split("."):
        d = d.get(k) if isinstance(d, dict) else None
    return d or 0

def snap():
    # A server that just started may serve NBD before its statistics
    # port listens: refused connections are tried again for 5 s.
    for attempt in range(100):
        try:
            with urllib.request.urlopen(url, timeout=30) as r:
                st = json.load(r)
            break
        except urllib.error.URLError as e:
            if attempt == 99 or not isinstance(e.reason, ConnectionRefusedError):
                raise
            time.sleep(0.05)
    lat = [get(st, "latency_us." + op) for op in ("read", "write")]
    fig = [get(st, p) for p in (
        "timing.die_busy_ns", "timing.host_busy_ns", "timing.dies",
        "timing.host_stall_us.sum", "timing.host_stall_us.requests",
        "media.sync_ns", "cache.destage_stall_ns")]
    fig.append(sum(get(l, "sum") for l in lat))
    fig.append(sum(get(l, "cache.sum") + get(l, "sync.sum") for l in lat))
    busy = [get(st, p) for p in (
        "media.program_pages", "media.read_pages", "media.erases",
        "cache.dirty_bytes", "slc.folded_pages", "gc.copied_pages")]
    return fig, busy

start = time.monotonic()
prev = snap()
still = start
while True:
    time.sleep(0.05)
    cur = snap()
    now = time.monotonic()
    if cur != prev:
        still = now
    prev = cur
    if now - still >= 0.5 or now - start >= 3:
        break
print(" ".join(str(v) for v in prev[0]))
PY
    die "cannot read the statistics of 127.0.0.1:$port"
}

# fio_run OPTIONS...: prints "IOPS BW_BYTES_PER_S DIE_UTIL HOST_UTIL
# STALL SYNC DSTALL WAIT SPOILED" of the run: the dies' and the host
# link's busy time in the model over the run's time (fio's job
# runtime), from the statistics before and after it, and the mean host
# stall of its requests in us (how long after its modeled end a request
# ended: "-" without the model); the syncs' and the destager's stall
# time in ms per second of the run, the requests' share of time (%) in
# the cache and sync stages; SPOILED is "-", or what made the host
# spoil the run (host-stall, destage-stall, sync: see --host-limit).
fio_run ()
{
    local out="$work/fio.json" before after
    [ -s "$work/last_snap" ] || util_snapshot
    before="$(cat "$work/last_snap")"
    fio --name=mc --ioengine=nbd --uri="$uri" --size="$size_bytes" \
        --group_reporting --output-format=json --output="$out" "$@" \
        >"$work/fio.stdout" 2>"$work/fio.stderr" ||
        { cat "$work/fio.stdout" "$work/fio.stderr" >&2; die "fio failed: $*"; }
    util_snapshot
    after="$(cat "$work/last_snap")"
    jq -r --arg b "$before" --arg a "$after" --argjson lim "$host_limit" '
        ($b | split(" ") | map(tonumber)) as $b |
        ($a | split(" ") | map(tonumber)) as $a |
        .jobs[0] | (.job_runtime * 1e6) as $ns |
        (.read.iops + .write.iops | tostring) + " "
        + ((.read.bw_bytes + .write.bw_bytes) | tostring) + " "
        + (if $a[2] > 0 and $ns > 0
           then (($a[0] - $b[0]) / $ns / $a[2] * 100 | floor / 100 | tostring)
           else "-" end) + " "
        + (if $a[2] > 0 and $ns > 0
           then (($a[1] - $b[1]) / $ns * 100 | floor / 100 | tostring)
           else "-" end) + " "
        + (if $a[4] > $b[4]
           then (($a[3] - $b[3]) / ($a[4] - $b[4]) * 10 | floor / 10 | tostring)
           else "-" end) + " "
        + (if $ns > 0 then (($a[5] - $b[5]) / $ns * 1000 | floor | tostring)
           else "-" end) + " "
        + (if $ns > 0 then (($a[6] - $b[6]) / $ns * 1000 | floor | tostring)
           else "-" end) + " "
        + (if $a[7] > $b[7]
           then (($a[8] - $b[8]) / ($a[7] - $b[7]) * 100 | floor | tostring)
           else "-" end) + " "
        + ([ (if $a[7] > $b[7] and ($a[3] - $b[3]) > $lim / 100 * ($a[7] - $b[7])
              then "host-stall" else empty end),
             (if $ns > 0 and ($a[6] - $b[6]) > $lim / 100 * $ns
              then "destage-stall" else empty end),
             (if $ns > 0 and ($a[5] - $b[5]) > $lim / 100 * $ns
              then "sync" else empty end) ]
           | if length > 0 then join(",") else "-" end)' "$out"
}

iops () { fio_run "$@" | awk '{ printf "%.0f %s %s %s %s %s %s %s", $1, $3, $4, $5, $6, $7, $8, $9 }'; }
mbs () { fio_run "$@" | awk '{ printf "%.1f %s %s %s %s %s %s %s", $2 / 1e6, $3, $4, $5, $6, $7, $8, $9 }'; }

tb=(--time_based --runtime="$runtime")

# want CORNER: is CORNER one of --corners (or were none given)?
want ()
{
    [ -z "$corner_list" ] || [[ ",$corner_list," == *",$1,"* ]]
}

# corners STEADY INCACHE ARGS...: every corner against a server started
# with ARGS (the steady state if STEADY is yes, the in-cache write if
# INCACHE is yes); "name value..." lines into $work/corners.
corners ()
{
    local steady_run="$1" incache="$2"
    shift 2
    : >"$work/corners"
    disk_bytes="$size_bytes"
    start_server "$@"
    if want rand-write-qd1; then
        echo "rand-write-qd1 $(iops --rw=randwrite --bs=4k --iodepth=1 "${tb[@]}" \
            --io_size=$((size_bytes / 16)))" >>"$work/corners"
    fi
    if want rand-write-qd32; then
        echo "rand-write-qd32 $(iops --rw=randwrite --bs=4k --iodepth=32 "${tb[@]}" \
            --io_size=$((size_bytes / 8)))" >>"$work/corners"
    fi
    fio_run --rw=write --bs=1M --iodepth=16 >/dev/null          # fill
    if want seq-read; then
        echo "seq-read $(mbs --rw=read --bs=128k --iodepth=32 "${tb[@]}")" >>"$work/corners"
    fi
    if want rand-read-qd1; then
        echo "rand-read-qd1 $(iops --rw=randread --bs=4k --iodepth=1 "${tb[@]}")" >>"$work/corners"
    fi
    if want rand-read-qd32; then
        echo "rand-read-qd32 $(iops --rw=randread --bs=4k --iodepth=32 "${tb[@]}")" >>"$work/corners"
    fi
    if want seq-write; then
        echo "seq-write $(mbs --rw=write --bs=128k --iodepth=32 "${tb[@]}")" >>"$work/corners"
    fi
    if [ "$steady_run" = yes ] && want rand-write-steady; then
        fio_run --rw=randwrite --bs=4k --iodepth=32 --norandommap \
            --io_size="$size_bytes" >/dev/null
        echo "rand-write-steady $(iops --rw=randwrite --bs=4k --iodepth=32 \
            --norandommap "${tb[@]}")" >>"$work/corners"
    fi
    stop_server                 # it writes the statistics file at its end
    aborted="$(jq -r '.deadline.aborted + .deadline.abort_all' "$work/stats.json")"
    if [ "$incache" = yes ]; then
        # Into the SLC cache: a fresh, large, sparse image whose cache
        # holds all of it; no folding after the run (it would only
        # lengthen the wait for the statistics to settle).
        disk_bytes="$cache_size_bytes"
        if want seq-write-cache; then
            start_server "$@" slc-fold-idle=never
            echo "seq-write-cache $(mbs --rw=write --bs=128k --iodepth=32 \
                --io_size="$cache_write_bytes")" >>"$work/corners"
            stop_server
            aborted=$(( aborted + $(jq -r '.deadline.aborted + .deadline.abort_all' \
                                      "$work/stats.json") ))
        fi
        if want rand-write-qd32-cache; then
            # The same for the random writes: a data sheet's random
            # write figure is its SLC cache's too.
            start_server "$@" slc-fold-idle=never
            echo "rand-write-qd32-cache $(iops --rw=randwrite --bs=4k \
                --iodepth=32 --io_size="$cache_write_bytes")" >>"$work/corners"
            stop_server
            aborted=$(( aborted + $(jq -r '.deadline.aborted + .deadline.abort_all' \
                                      "$work/stats.json") ))
        fi
        disk_bytes="$size_bytes"
    fi
}

get () { awk -v k="$1" '$1 == k { print $2 }' "$2"; }
# median_of CORNER FIELD: the median of field FIELD (awk's numbering:
# 2 is the figure) of the corner's lines in $work/runs ("" if none has
# one).
median_of ()
{
    local v
    mapfile -t v < <(awk -v k="$1" -v f="$2" \
                         '$1 == k && $f != "-" && $f != "" { print $f }' \
                         "$work/runs")
    [ ${#v[@]} -gt 0 ] && stats_of "${v[@]}" | cut -d' ' -f1
    return 0
}
# getn KEY FIELD FILE: the FIELD-th value of KEY's line.
getn () { awk -v k="$1" -v f="$2" '$1 == k { print $(f + 1) }' "$3"; }

# stats_of VALUES...: "median min max max/min" of the values.
stats_of ()
{
    printf '%s\n' "$@" | sort -g | awk '
        { v[NR] = $1 }
        END {
            if (NR == 0) exit
            m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%s %s %s %.2f", m, v[1], v[NR], (v[1] > 0 ? v[NR] / v[1] : 0)
        }'
}

# The host's ceiling at deep queues: every request waits for its
# modeled end, which costs CPU time.  sata-tlc's latencies on 4096
# dies with free transfers: nothing queues, every request waits as long
# as under a preset; the figure is what this machine can do with the
# model's waits.
ceiling ()
{
    start_server model=sata-tlc channels=64 dies=64 channel-rate=0 host-rate=0
    echo "rand-write-qd32 $(iops --rw=randwrite --bs=4k --iodepth=32 "${tb[@]}" \
        --io_size=$((size_bytes / 8)))" >"$work/ceiling"
    fio_run --rw=write --bs=1M --iodepth=16 >/dev/null
    echo "rand-read-qd32 $(iops --rw=randread --bs=4k --iodepth=32 "${tb[@]}")" >>"$work/ceiling"
    stop_server
}

echo "$prog: transport ceiling (timing=false), size $size, ${runtime}s runs" >&2
corners yes yes timing=false
cp "$work/corners" "$work/untimed"
if want rand-read-qd32 || want rand-write-qd32; then
    echo "$prog: the host's ceiling for timed requests (nothing queues)" >&2
    ceiling
else
    : >"$work/ceiling"
fi

declare -A field_of=(
    [seq-read]=seq_read_mbs [seq-write]=seq_write_mbs
    [rand-read-qd1]=rand_read_qd1_iops [rand-read-qd32]=rand_read_qd32_iops
    [rand-write-qd1]=rand_write_qd1_iops [rand-write-qd32]=rand_write_qd32_iops
    [rand-write-steady]=rand_write_steady_iops
    [seq-write-cache]=seq_write_mbs
    [rand-write-qd32-cache]=rand_write_qd32_iops
)
order=(seq-read seq-write seq-write-cache rand-read-qd1 rand-read-qd32
       rand-write-qd1 rand-write-qd32 rand-write-qd32-cache rand-write-steady)

table="$work/table"
{
    echo "| preset | corner | unit | measured | range (max/min) | model only | published | ratio | untimed | bound | die util | host util | host stall us | sync ms/s | destage stall ms/s | cache+sync % | host | note |"
    echo "|---|---|---|---:|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---|"
} >"$table"

for p in "${run_presets[@]}"; do
    st=no
    if $steady && [ "$(published "$p" rand_write_steady_iops)" != 0 ]; then
        st=yes
    fi
    post="$(published "$p" post_cache_mbs)"
    ic=no
    if [ -n "$post" ] && [ "$post" != 0 ]; then
        ic=yes
    fi
    echo "$prog: $p ($(published "$p" drive))" >&2
    : >"$work/runs"
    aborts=0
    for (( run = 1; run <= repeat; run++ )); do
        [ "$repeat" -gt 1 ] && echo "$prog: $p, run $run of $repeat" >&2
        corners "$st" "$ic" model="$p"  # a fresh image each time
        cat "$work/corners" >>"$work/runs"
        [ -z "$runs_file" ] ||
            awk -v p="$p" -v r="$run" '{ print p, r, $0 }' "$work/corners" \
                >>"$runs_file"
        aborts=$(( aborts + aborted ))
    done
    for c in "${order[@]}"; do
        mapfile -t vals < <(awk -v k="$c" '$1 == k { print $2 }' "$work/runs")
        [ ${#vals[@]} -gt 0 ] || continue
        read -r m lo hi spread <<<"$(stats_of "${vals[@]}")"
        range="$lo..$hi ($spread)"
        [ "$repeat" -gt 1 ] || range=
        mapfile -t dv < <(awk -v k="$c" '$1 == k && $3 != "-" { print $3 }' "$work/runs")
        mapfile -t hv < <(awk -v k="$c" '$1 == k && $4 != "-" { print $4 }' "$work/runs")
        mapfile -t sv < <(awk -v k="$c" '$1 == k && $5 != "-" && $5 != "" { print $5 }' "$work/runs")
        su=
        [ ${#sv[@]} -gt 0 ] && su="$(stats_of "${sv[@]}" | cut -d' ' -f1)"
        du=; hu=
        [ ${#dv[@]} -gt 0 ] && du="$(stats_of "${dv[@]}" | cut -d' ' -f1)"
        [ ${#hv[@]} -gt 0 ] && hu="$(stats_of "${hv[@]}" | cut -d' ' -f1)"
        # The host's work: medians over the runs; the runs it spoiled.
        syn="$(median_of "$c" 6)"
        dst="$(median_of "$c" 7)"
        wt="$(median_of "$c" 8)"
        host="$(awk -v k="$c" '$1 == k {
                   n++
                   if ($9 != "-" && $9 != "") {
                       s++
                       m = split($9, w, ",")
                       for (i = 1; i <= m; i++) by[w[i]]++
                   }
               }
               END {
                   if (s == 0) exit
                   printf "SPOILED %d/%d:", s, n
                   sep = " "
                   split("sync destage-stall host-stall", names, " ")
                   for (i = 1; i <= 3; i++)
                       if (names[i] in by) {
                           printf "%s%s %d", sep, names[i], by[names[i]]
                           sep = ", "
                       }
               }' "$work/runs")"
        pub="$(published "$p" "${field_of[$c]}")"
        unit=IOPS
        [[ "$c" == seq-* ]] && unit=MB/s
        u="$(get "$c" "$work/untimed")"
        note=
        only=
        bound=
        if [[ "$c" == *-qd1 ]]; then
            only="$(awk -v m="$m" -v u="$u" 'BEGIN {
                d = 1 / m - 1 / u; if (d > 0) printf "%.0f", 1 / d }')"
        elif [[ "$c" == *-qd32* || "$c" == rand-write-steady ]]; then
            # What the model alone would deliver: the figure over the
            # busier of the dies' and the link's shares of the run.
            # What bound the figure: the model (its dies or link busy 90%
            # of the time or more), else the transport (within 10% of
            # the untimed plugin's figure), else the host (this
            # machine's own work for a timed request).
            read -r only bound <<<"$(awk -v m="$m" -v d="${du:-0}" \
                -v h="${hu:-0}" -v u="${u:-0}" 'BEGIN {
                    b = d > h ? d : h
                    only = b > 0 ? sprintf ("%.0f", m / b) : "-"
                    if (b >= 0.9) bound = "model"
                    else if (u > 0 && m >= 0.9 * u) bound = "transport"
                    else bound = "host"
                    print only, bound }')"
            [ "$only" != - ] || only=
        fi
        if [ "$pub" = 0 ] || [ -z "$pub" ]; then
            ratio="-"; pub="n/p"
        else
            r="$m"
            [[ "$c" != *-qd1 ]] || r="${only:-$m}"
            ratio="$(awk -v m="$r" -v p="$pub" 'BEGIN { printf "%.2f", m / p }')"
            cl="$(get "$c" "$work/ceiling")"
            if [ -n "$u" ] && awk -v u="$u" -v p="$pub" 'BEGIN { exit !(u < p) }'; then
                note="transport cap: untimed $u"
            elif [ -n "$cl" ] &&
                 awk -v u="$cl" -v p="$pub" 'BEGIN { exit !(u < p) }'; then
                note="host cap: ceiling $cl"
            fi
        fi
        if [ "$c" = seq-write ] && [ "$ic" = yes ]; then
            note="published figure is the SLC cache's; after it: $post MB/s, ratio $(awk -v m="$m" -v p="$post" 'BEGIN { printf "%.2f", m / p }')"
        elif [ "$c" = rand-write-qd32 ] && [ "$ic" = yes ]; then
            note="published figure is the SLC cache's (rand-write-qd32-cache); this disk's cache is smaller than the run${note:+; $note}"
        elif [ "$c" = seq-write-cache ] || [ "$c" = rand-write-qd32-cache ]; then
            note="$cache_write into the SLC cache of a fresh $cache_size disk${note:+; $note}"
        fi
        echo "| $p | $c | $unit | $m | $range | $only | $pub | $ratio | $u | $bound | $du | $hu | $su | $syn | $dst | $wt | $host | $note |" >>"$table"
    done
    echo "| $p | deadline aborts | | $aborts | | | 0 | | | | | | | | | | | default timeout, all runs |" >>"$table"
done

echo
echo "Untimed plugin (timing=false) on this machine, the transport ceiling:"
echo
awk '{ print "    " $1 " " $2 }' "$work/untimed"
echo
echo "The host's ceiling for timed requests on this machine (sata-tlc on 4096 dies, free transfers):"
echo
awk '{ print "    " $1 " " $2 }' "$work/ceiling"
echo
cat "$table"
