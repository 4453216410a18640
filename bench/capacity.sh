#!/usr/bin/env bash
# nbdkit-ftl: what a disk costs by its size when it holds little data:
# creation, a clean open, an open after a kill, the server's peak
# memory and the image's bytes on the host's disk.  See bench/README.md.
set -euo pipefail

prog="${0##*/}"
here="$(cd "$(dirname "$0")" && pwd)"
die () { echo "$prog: $*" >&2; exit 1; }
source "$here/find-plugin.sh"

usage ()
{
    cat <<EOF
Usage: $prog [--plugin SO] [--dir DIR] [--sizes LIST] [--writes N]
       [--kill-writes N] [--repeat N]

For each size: create a disk and write N pages at random offsets across
it with a flush (nbdkit --run nbdsh), shut down cleanly; open it again
and read one page back; kill -9 a server after N more random writes and
a flush, and open it again (recovery).  Prints a Markdown table: the
median over the repeats of each time (range in brackets), the largest
peak RSS (VmHWM) and the image's allocated bytes.

  --plugin SO     the plugin (default: the build tree's)
  --dir DIR       where the images go (default: a new directory in
                  \$TMPDIR or /tmp); must hold files of the largest size
  --sizes LIST    comma list (default 16G,256G,1T,4T)
  --writes N      pages written before each shutdown (default 64)
  --kill-writes N before the kill, N random 4 KiB writes by fio at queue
                  depth 16 and no flush, instead of the --writes ones
                  (what a busy server leaves to recovery: e.g. 100000)
  --repeat N      runs per size (default 3)
EOF
}

plugin=
dir=
sizes=16G,256G,1T,4T
writes=64
kill_writes=
repeat=3
while [ $# -gt 0 ]; do
    case "$1" in
        --plugin) plugin="${2:?}"; shift 2 ;;
        --dir) dir="${2:?}"; shift 2 ;;
        --sizes) sizes="${2:?}"; shift 2 ;;
        --writes) writes="${2:?}"; shift 2 ;;
        --kill-writes) kill_writes="${2:?}"; shift 2 ;;
        --repeat) repeat="${2:?}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; exit 2 ;;
    esac
done
[[ "$writes" =~ ^[0-9]+$ ]] || die "--writes must be a number: $writes"
[[ -z "$kill_writes" || "$kill_writes" =~ ^[1-9][0-9]*$ ]] ||
    die "--kill-writes must be a number: $kill_writes"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat must be at least 1: $repeat"
find_plugin
export PATH=/usr/bin:$PATH      # nbdsh needs Debian's python3
for c in nbdkit nbdsh ${kill_writes:+fio}; do
    command -v $c >/dev/null || die "$c not found"
done

work="$(mktemp -d "${dir:-${TMPDIR:-/tmp}}/ftl-capacity.XXXXXX")"
trap 'pkill -9 -f "$work/sock" 2>/dev/null || :; rm -rf "$work"' EXIT
img="$work/disk.img"
sock="$work/sock"
pidf="$work/pid"

writer="
import os, random
r = random.Random(int(os.environ['CAP_SEED']))
n = h.get_size() // 4096
for i in range(int(os.environ['CAP_WRITES'])):
    h.pwrite(b'c' * 4096, r.randrange(n) * 4096)
h.flush()
"

# timed CMD...: run it; set t (seconds) and hwm (KiB of the server's
# peak RSS, from /usr/bin/time).
timed ()
{
    local out
    out="$( { /usr/bin/time -f '%e %M' "$@" >/dev/null; } 2>&1 | tail -n 1)"
    t="${out% *}"
    hwm="${out#* }"
}

# median and range of the words of $1
stat3 ()
{
    tr ' ' '\n' <<<"$1" | sort -g | awk '
        { v[NR] = $1 }
        END {
            m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
            printf "%.2f s [%.2f-%.2f]", m, v[1], v[NR]
        }'
}

echo "\`bench/capacity.sh --sizes $sizes --writes $writes" \
     "${kill_writes:+--kill-writes $kill_writes }--repeat $repeat\`," \
     "images on $(df -T "$work" | awk 'NR == 2 { print $2 }'), $(date -u +%Y-%m-%d):"
echo
echo "| size | create and $writes writes | clean open | open after a kill | peak RSS | allocated |"
echo "|---|---|---|---|---|---|"
IFS=, read -r -a list <<<"$sizes"
for sz in "${list[@]}"; do
    create=() open=() killed=()
    peak=0
    for (( i = 0; i < repeat; i++ )); do
        rm -f "$img"
        export CAP_SEED=$i CAP_WRITES=$writes
        timed nbdkit -U - "$plugin" file="$img" size="$sz" \
            --run "nbdsh -u \"\$uri\" -c \"$writer\""
        create+=("$t"); peak=$(( hwm > peak ? hwm : peak ))
        timed nbdkit -U - "$plugin" file="$img" \
            --run 'nbdsh -u "$uri" -c "h.pread(4096, 0)"'
        open+=("$t"); peak=$(( hwm > peak ? hwm : peak ))
        rm -f "$sock" "$pidf"
        nbdkit -f -U "$sock" -P "$pidf" "$plugin" file="$img" &
        srv=$!
        for (( k = 0; k < 600; k++ )); do
            [ -S "$sock" ] && break
            sleep 0.1
        done
        [ -S "$sock" ] || die "$sz: the server did not start"
        if [ -n "$kill_writes" ]; then
            fio --name=kill --ioengine=nbd \
                --uri="nbd+unix:///?socket=$sock" --rw=randwrite --bs=4k \
                --iodepth=16 --number_ios="$kill_writes" --size="$sz" \
                --norandommap --randseed=$(( i + 100 )) --output=/dev/null
        else
            CAP_SEED=$(( i + 100 )) nbdsh -u "nbd+unix:///?socket=$sock" \
                -c "$writer"
        fi
        kill -9 "$srv"
        wait "$srv" 2>/dev/null || :
        timed nbdkit -U - "$plugin" file="$img" \
            --run 'nbdsh -u "$uri" -c "h.pread(4096, 0)"'
        killed+=("$t"); peak=$(( hwm > peak ? hwm : peak ))
    done
    alloc=$(du -k "$img" | cut -f1)
    printf '| %s | %s | %s | %s | %d MiB | %d MiB |\n' "$sz" \
        "$(stat3 "${create[*]}")" "$(stat3 "${open[*]}")" \
        "$(stat3 "${killed[*]}")" $(( peak / 1024 )) $(( alloc / 1024 ))
    rm -f "$img"
done
