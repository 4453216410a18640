#!/usr/bin/env bash
# nbdkit-ftl: the error model's counts against data age and wear.
#
# For each erase count (ftlctl age --pe) a fresh 2 MiB image is written
# (512 pages of 4 KiB), then aged step by step (ftlctl age --days) and
# read whole after each step by a server with errors=true and a fixed
# seed (no scrub, no read reclaim: every page read once, as written).
# Each cell: bits ECC corrected per page read / read retry steps per
# page / pages lost (uncorrectable, of 512).
#
#   bench/errors-table.sh [--plugin PATH] [--ftlctl PATH] [--seed N]
#                         [--pe "0 1000 2000 3000"]
#                         [--days "0 30 90 180 365 730 1095"]
#                         [-- EXTRA PLUGIN KEYS...]

set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
plugin="$here/../plugin/.libs/nbdkit-ftl-plugin.so"
ftlctl="$here/../tools/ftlctl"
seed=7
pes="0 1000 2000 3000"
days="0 30 90 180 365 730 1095"
while [ $# -gt 0 ]; do
    case "$1" in
        --plugin) plugin="$2"; shift 2 ;;
        --ftlctl) ftlctl="$2"; shift 2 ;;
        --seed) seed="$2"; shift 2 ;;
        --pe) pes="$2"; shift 2 ;;
        --days) days="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "$0: unknown option $1" >&2; exit 2 ;;
    esac
done
extra=("$@")
for t in nbdkit nbdsh jq; do
    command -v "$t" >/dev/null || { echo "$0: $t is needed" >&2; exit 2; }
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
disk="$tmp/disk.img"
stats="$tmp/stats.json"
export read_pass='
lost = 0
for n in range(512):
    try:
        assert h.pread(4096, n * 4096) == bytes([n % 251 + 1]) * 4096, n
    except nbd.Error:
        lost += 1
print(lost)
'

declare -A cell
for pe in $pes; do
    rm -f "$disk"
    nbdkit -U - "$plugin" file="$disk" size=2M page-size=4096 \
        pages-per-block=16 op=100 --run 'nbdsh -u "$uri" -c "
for n in range(512):
    h.pwrite(bytes([n % 251 + 1]) * 4096, n * 4096)
h.flush()
"'
    [ "$pe" = 0 ] || "$ftlctl" age --pe "$pe" "$disk" >/dev/null
    age=0 bits0=0 retries0=0
    for d in $days; do
        [ "$d" -gt "$age" ] && "$ftlctl" age --days $(( d - age )) "$disk" >/dev/null
        age=$d
        lost="$(nbdkit -U - "$plugin" file="$disk" errors=true seed="$seed" \
            scrub-interval=0 read-reclaim=false stats="$stats" "${extra[@]}" \
            --run 'nbdsh -u "$uri" -c "$read_pass"' 2>/dev/null)"
        bits="$(jq .media.corrected_bits "$stats")"
        retries="$(jq .media.read_retries "$stats")"
        cell[$pe,$d]="$(awk -v b=$(( bits - bits0 )) -v r=$(( retries - retries0 )) \
            -v l="$lost" 'BEGIN { printf "%.1f / %.2f / %d", b / 512, r / 512, l }')"
        bits0=$bits retries0=$retries
    done
done

printf '| age (days) |'
for pe in $pes; do printf ' %s P/E |' "$pe"; done
printf '\n|---|'
for pe in $pes; do printf -- '---|'; done
printf '\n'
for d in $days; do
    printf '| %s |' "$d"
    for pe in $pes; do printf ' %s |' "${cell[$pe,$d]}"; done
    printf '\n'
done
echo
echo "Each cell: bits corrected per page read / read retry steps per page /"
echo "pages lost of 512 (seed=$seed, endurance 3000, ECC 72 bits per 1 KiB,"
echo "8 read retry steps)."
