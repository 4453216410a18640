#!/usr/bin/env bash
# nbdkit-ftl: sync=false syncs the image once at open (the session's
# mark) and twice at close, never in between, whatever the client does:
# writes enough for garbage collection and checkpoints, flushes, FUA
# writes, trims.  The statistics count the syncs done and skipped; with
# strace the system calls themselves are counted too (fdatasync and
# fsync).  The same session with sync=true syncs at every flush.  After
# the session the image opens clean and holds what was written.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout

# strace counts the system calls; scripts/build installs it, so under
# CI=true it must be there (elsewhere the statistics alone are checked).
if ! command -v strace >/dev/null 2>&1 && [ "${CI:-}" = true ]; then
    echo "FAIL: strace not found; scripts/build provides it, and under" \
         "CI=true a test must not do without it"
    exit 1
fi

make_tmpdir
disk="$tmp/disk.img"
stats="$tmp/stats.json"

# An existing image: creating one syncs it (create.c), sync= or not.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$disk" size=32M \
    pages-per-block=16 --run 'exit 0'

# 96 MiB of 1 MiB writes over a 32 MiB disk, each page naming itself
# and the pass; a flush every 4 MiB, a FUA write every 8, a trim of
# 256 KiB every 16.  Then every page is checked.
workload='
import nbd
def chunk(off, p):
    return b"".join((b"%016d:%08d;" % (off + i, p) * 158)[:4096]
                    for i in range(0, 1 << 20, 4096))
size = h.get_size()
for p in range(3):
    for i, off in enumerate(range(0, size, 1 << 20)):
        fua = nbd.CMD_FLAG_FUA if i % 8 == 7 else 0
        h.pwrite(chunk(off, p), off, fua)
        if i % 4 == 3:
            h.flush()
        if i % 16 == 15:
            h.trim(256 << 10, off)
h.flush()
for i, off in enumerate(range(0, size, 1 << 20)):
    got = h.pread(1 << 20, off)
    want = chunk(off, 2)
    if i % 16 == 15:
        want = bytes(256 << 10) + want[256 << 10:]
    assert got == want, "MiB %d differs" % i
'

# run SYNC: the workload in a session with sync=SYNC, under strace if
# there is one; $tmp/SYNC.json: its last statistics; $tmp/SYNC.strace:
# fdatasync and fsync calls.
run ()
{
    local s="$1" tracer=()
    if command -v strace >/dev/null 2>&1; then
        tracer=(strace -f -qq -e trace=fdatasync,fsync -o "$tmp/$s.strace")
    fi
    timeout 300 "${tracer[@]}" nbdkit -f -U - "$FTL_PLUGIN" file="$disk" \
        sync="$s" stats="$stats" \
        --run 'nbdsh -u "$uri" -c "$workload"'
    cp "$stats" "$tmp/$s.json"
    jq -c '{syncs: .media.syncs, syncs_skipped: .media.syncs_skipped,
            checkpoints, erases: .media.erases}' "$tmp/$s.json"
}
export workload

run false
# The last statistics are written before the close: the open's sync only.
jq -e '.media.syncs == 1 and .media.syncs_skipped > 50 and
       .media.erases > 0 and .checkpoints > 1' "$tmp/false.json" >/dev/null || {
    echo "$0: FAIL: sync=false: syncs or work not as expected"
    exit 1
}
run true
jq -e '.media.syncs > 50 and .media.syncs_skipped == 0' \
    "$tmp/true.json" >/dev/null || {
    echo "$0: FAIL: sync=true: syncs not as expected"
    exit 1
}

if command -v strace >/dev/null 2>&1; then
    for s in false true; do
        n_fdatasync=$(grep -c 'fdatasync(' "$tmp/$s.strace" || :)
        n_fsync=$(grep -c ' fsync(' "$tmp/$s.strace" || :)
        echo "sync=$s: $n_fdatasync fdatasync, $n_fsync fsync"
        eval "fdatasync_$s=$n_fdatasync fsync_$s=$n_fsync"
    done
    # One at open, two at close; nothing else of nbdkit syncs.
    if [ "$fdatasync_false" -ne 3 ] || [ "$fsync_false" -ne 0 ]; then
        echo "$0: FAIL: sync=false: $fdatasync_false fdatasync and" \
             "$fsync_false fsync, expected 3 and 0"
        exit 1
    fi
    if [ "$fdatasync_true" -le 50 ]; then
        echo "$0: FAIL: sync=true: only $fdatasync_true fdatasync"
        exit 1
    fi
else
    echo "$0: strace not found: the system calls are not counted"
fi

# Closed cleanly: the next open finds no mark and nothing lost.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$disk" stats="$stats" \
    --run 'nbdsh -u "$uri" -c "h.flush()"'
jq -e '.media.lost_pages == 0 and .health.unsafe_shutdowns == 0' \
    "$stats" >/dev/null
echo "$0: OK"
