#!/usr/bin/env bash
# nbdkit-ftl: run each fuzz target for FUZZ_SECONDS, starting from its
# seed corpus, and print how many inputs each ran.  Used by "make fuzz"
# and (for a few seconds per target) by the test in "make check".
#
# Environment: FUZZ_TARGETS (names), FUZZ_SECONDS, FUZZ_BUILDDIR (where
# the targets are), FUZZ_CORPUS (the seeds, only read), FUZZ_WORKDIR
# (where new inputs and crash reproducers go; a temporary directory,
# removed at the end, if unset), FUZZ_JOBS (how many targets run at
# once, default 1; their reports are printed in the order of
# FUZZ_TARGETS).
# Exits non-zero if a target found a crash, a hang or a leak; the input
# that causes it is kept in FUZZ_WORKDIR (or printed, for a temporary
# one) so that "fuzz-TARGET FILE" reproduces it.
set -euo pipefail

: "${FUZZ_SECONDS:=60}"
: "${FUZZ_TARGETS:?}"
: "${FUZZ_BUILDDIR:?}"
: "${FUZZ_CORPUS:?}"
: "${FUZZ_JOBS:=1}"
[[ "$FUZZ_JOBS" =~ ^[1-9][0-9]*$ ]] ||
    { echo "$0: FUZZ_JOBS=$FUZZ_JOBS: a count of targets" >&2; exit 1; }

keep=yes
if [ -z "${FUZZ_WORKDIR:-}" ]; then
    FUZZ_WORKDIR="$(mktemp -d "${TMPDIR:-/tmp}/ftl-fuzz.XXXXXX")"
    keep=no
fi
cleanup () { [ "$keep" = yes ] || rm -rf "$FUZZ_WORKDIR"; }
trap cleanup EXIT

# fuzz_one TARGET: run it; its report into $FUZZ_WORKDIR/TARGET/report,
# and "failed" into $FUZZ_WORKDIR/TARGET/failed if it failed.
fuzz_one ()
{
    local t="$1" new art log opts r runs secs cov start
    new="$FUZZ_WORKDIR/$t/corpus"
    art="$FUZZ_WORKDIR/$t/crashes/"
    log="$FUZZ_WORKDIR/$t/log"
    mkdir -p "$new" "$art"
    exec >"$FUZZ_WORKDIR/$t/report" 2>&1
    # fuzz-open's inputs are whole images: let them grow past the seeds.
    opts=()
    [ "$t" = fuzz-open ] && opts+=(-max_len=$(( 256 * 1024 + 1 )))
    # New inputs go to the work directory; the seeds are only read.
    r=0
    start=$(date +%s)
    "$FUZZ_BUILDDIR/$t" -max_total_time="$FUZZ_SECONDS" -timeout=20 \
        -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art" \
        "${opts[@]}" "$new" "$FUZZ_CORPUS/$t" > "$log" 2>&1 || r=$?
    runs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")"
    secs=$(( $(date +%s) - start ))
    cov="$(grep -Eo 'cov: [0-9]+' "$log" | tail -n 1 || :)"
    printf '%-16s %10s executions in %4ss, %s, %s new inputs\n' \
        "$t" "${runs:-?}" "$secs" "${cov:-cov: ?}" \
        "$(find "$new" -type f | wc -l)"
    if [ $r -ne 0 ]; then
        echo "$t: FAILED (exit status $r); the end of its log:"
        tail -n 60 "$log"
        for f in "$art"*; do
            [ -f "$f" ] || continue
            echo "$t: reproducer $f:"
            od -A d -t x1 "$f" | head -n 40
        done
        echo failed >"$FUZZ_WORKDIR/$t/failed"
    fi
}

# FUZZ_JOBS at a time.
status=0
running=()
for t in $FUZZ_TARGETS; do
    while [ ${#running[@]} -ge "$FUZZ_JOBS" ]; do
        wait -n || :
        still=()
        for p in "${running[@]}"; do
            kill -0 "$p" 2>/dev/null && still+=("$p")
        done
        running=("${still[@]}")
    done
    fuzz_one "$t" &
    running+=($!)
done
wait
for t in $FUZZ_TARGETS; do
    cat "$FUZZ_WORKDIR/$t/report"
    [ ! -e "$FUZZ_WORKDIR/$t/failed" ] || status=1
done
if [ $status -ne 0 ] && [ "$keep" = no ]; then
    keep=yes
    echo "inputs and logs kept in $FUZZ_WORKDIR"
fi
exit $status
