#!/usr/bin/env bash
# nbdkit-ftl: instructions per 4 KiB write and read in the FTL library,
# counted by callgrind on the fixed workload of ftl-ops.  Machine noise
# does not move these figures; a change to the hot path does.
#
#   callgrind.sh FTL-OPS [FTL-OPS OPTIONS...]
#
# One valgrind run per phase (write, read, steady), each counting only
# its phase, so that each output file attributes the cost to the right
# functions.  "make callgrind" in bench/ runs it.  KEEP=DIR keeps the
# output files (callgrind_annotate DIR/callgrind.write) in DIR.

set -euo pipefail

prog="${0##*/}"
[ $# -ge 1 ] || { echo "usage: $prog FTL-OPS [OPTIONS...]" >&2; exit 2; }
ops="$1"
shift

command -v valgrind >/dev/null ||
    { echo "$prog: valgrind not found (Debian: apt-get install valgrind)" >&2; exit 1; }
[ -x "$ops" ] || { echo "$prog: $ops: not built" >&2; exit 1; }

work="$(mktemp -d "${TMPDIR:-/tmp}/ftl-callgrind.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# Operations per phase: the default, unless the caller gives --ops.
n=10000
args=("$@")
for (( i = 0; i < ${#args[@]}; i++ )); do
    case "${args[i]}" in
        --ops) n="${args[i+1]}" ;;
        --ops=*) n="${args[i]#--ops=}" ;;
    esac
done

printf '%-38s %12s %10s\n' "$n operations per phase" "Ir" "Ir per op"
for phase in write read steady; do
    if ! valgrind --tool=callgrind --collect-atstart=no \
            --callgrind-out-file="$work/out.$phase" \
            "$ops" "$@" --phase "$phase" \
            >"$work/stdout.$phase" 2>"$work/stderr.$phase"; then
        cat "$work/stdout.$phase" "$work/stderr.$phase" >&2
        echo "$prog: valgrind failed" >&2
        exit 1
    fi
    # The dump of the phase is out.PHASE.1 (out.PHASE is the empty one
    # of the exit); its "summary:" line is the instruction count.
    f="$work/out.$phase.1"
    if [ ! -f "$f" ] ||
       ! grep -q "^desc: Trigger: Client Request: $phase\$" "$f"; then
        echo "$prog: no callgrind dump for the $phase phase (was ftl-ops built with valgrind/callgrind.h?)" >&2
        exit 1
    fi
    ir="$(awk '$1 == "summary:" { print $2; exit }' "$f")"
    case "$phase" in
        write) label="4 KiB write (fresh disk, no GC)" ;;
        read) label="4 KiB read" ;;
        steady) label="4 KiB write (full disk, GC running)" ;;
    esac
    printf '%-38s %12s %10s\n' "$label" "$ir" "$(( ir / n ))"
    if [ -n "${KEEP:-}" ]; then
        mkdir -p "$KEEP"
        cp "$f" "$KEEP/callgrind.$phase"
    fi
done
sed -n 's/^steady: /steady phase: /p' "$work/stdout.steady"
if [ -n "${KEEP:-}" ]; then
    echo "callgrind output in $KEEP (callgrind_annotate $KEEP/callgrind.write)"
fi
