#!/usr/bin/env bash
# nbdkit-ftl: where a write's time goes in the steady state.
#
# For the plugin's defaults and for each preset given (default:
# sata-tlc), a fresh image is filled (sequential 1 MiB writes) and
# preconditioned (one drive write of random 4 KiB writes at iodepth
# 32), then the server starts again on it, so that its latency
# statistics hold the measured run alone: random 4 KiB writes at
# iodepth 32 for --runtime seconds through fio's nbd engine.  Printed
# per configuration: the p50 and p99.9 of the writes and each stage's
# share there (latency_us.write.split: the requests whose total lies in
# the same power of 2 of microseconds), and each stage's share of all
# the writes' time.
#
#   stages.sh [--size 256M] [--runtime 10] [--presets sata-tlc]
#             [--op PERCENT] [--dir DIR] [--plugin PATH]

set -euo pipefail

prog="${0##*/}"
here="$(cd "$(dirname "$0")" && pwd)"

die () { echo "$prog: $*" >&2; exit 1; }

size=256M
runtime=10
presets=sata-tlc
op=
dir=
plugin=

while [ $# -gt 0 ]; do
    case "$1" in
        --size) size="${2:?--size needs a value}"; shift 2 ;;
        --runtime) runtime="${2:?--runtime needs a value}"; shift 2 ;;
        --presets) presets="${2?--presets needs a value}"; shift 2 ;;
        --op) op="${2:?--op needs a value}"; shift 2 ;;
        --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
        --plugin) plugin="${2:?--plugin needs a value}"; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown option '$1' (--help)" ;;
    esac
done
[[ "$runtime" =~ ^[1-9][0-9]*$ ]] || die "--runtime $runtime: whole seconds"
size_bytes="$(numfmt --from=iec "$size" 2>/dev/null)" || die "bad size '$size'"

# shellcheck source=find-plugin.sh
source "$here/find-plugin.sh"
find_plugin
for cmd in nbdkit fio jq numfmt; do
    command -v "$cmd" >/dev/null || die "$cmd not found"
done

work="$(mktemp -d "${dir:-${TMPDIR:-/tmp}}/ftl-stages.XXXXXX")"
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

start_server ()
{
    local i
    rm -f "$sock" "$work/pid"
    nbdkit -f -U "$sock" -P "$work/pid" "$plugin" file="$work/ftl.img" \
        size="$size_bytes" ${op:+op="$op"} stats="$work/stats.json" "$@" \
        2>>"$work/server.log" &
    for (( i = 0; i < 1200; i++ )); do
        if [ -s "$work/pid" ] && [ -S "$sock" ]; then
            server_pid="$(cat "$work/pid")"
            return 0
        fi
        kill -0 $! 2>/dev/null || { cat "$work/server.log" >&2; die "nbdkit exited"; }
        sleep 0.05
    done
    die "nbdkit did not start"
}

stop_server ()
{
    kill -TERM "$server_pid"
    wait "$server_pid" 2>/dev/null || :
    server_pid=
}

fio_run ()
{
    fio --name=stages --ioengine=nbd --uri="$uri" --size="$size_bytes" \
        --output="$work/fio.out" "$@" >/dev/null 2>"$work/fio.err" ||
        { cat "$work/fio.err" >&2; die "fio failed: $*"; }
}

stages="queue cache gc media sync other"
printf '| %-16s | %-8s | %8s |' config point us
for s in $stages; do printf ' %6s |' "$s"; done
printf '\n|%s|%s|%s|' ------------------ ---------- ----------
for s in $stages; do printf '%s|' --------; done
printf '\n'

run ()
{
    local name="$1" w
    shift
    rm -f "$work/ftl.img"
    start_server "$@"
    fio_run --rw=write --bs=1M --iodepth=16
    fio_run --rw=randwrite --bs=4k --iodepth=32 --norandommap \
        --io_size="$size_bytes"
    stop_server
    start_server "$@"
    fio_run --rw=randwrite --bs=4k --iodepth=32 --norandommap \
        --time_based --runtime="$runtime"
    stop_server
    w="$(jq -c .latency_us.write "$work/stats.json")"
    for point in p50 p999 all; do
        printf '| %-16s | %-8s |' "$name" "$point"
        if [ "$point" = all ]; then
            printf ' %8s |' "$(jq -r '.sum / .count | floor' <<<"$w")"
        else
            printf ' %8s |' "$(jq -r ".$point" <<<"$w")"
        fi
        for s in $stages; do
            if [ "$point" = all ]; then
                printf ' %6s |' "$(jq -r "(.$s.sum / .sum * 1000 | round) / 10" <<<"$w")"
            else
                printf ' %6s |' "$(jq -r "(.split.$point.$s * 1000 | round) / 10" <<<"$w")"
            fi
        done
        printf '\n'
    done
}

run "model off"
IFS=, read -r -a ps <<<"$presets"
for p in "${ps[@]}"; do
    [ -n "$p" ] && run "model=$p" model="$p"
done
echo
echo "shares in %; p50/p999: of the writes whose total is in the same power of 2"
echo "of us as that percentile; all: of all the writes' time (us column: the mean)."
echo "size $size, $runtime s of random 4 KiB writes at iodepth 32 on a full disk."
