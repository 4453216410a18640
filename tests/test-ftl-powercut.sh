#!/usr/bin/env bash
# nbdkit-ftl: power cuts on demand (powercut=N).  A client writes pages
# that name themselves and their version:
#
#   requests   1..256   version 1 of pages 0..255, then a flush;
#            257..512   version 2 of pages 0..255;
#                 513   version 3 of page 300, with FUA (durable, and
#                       so is every write before it);
#            514..713   version 4 of pages 0..199, never flushed.
#
# powercut=650 cuts the power when request 650 (version 4 of page 136)
# arrives: it fails with EIO, and so does every request after it; the
# server stops by itself.  After a restart every page must hold a
# version the rules allow, and never anything else (an older version,
# zeros, another page's data or an I/O error):
#
#   pages 0..135     version 2 (durable) or 4 (acknowledged, not flushed)
#   pages 136..255   version 2
#   page 300         version 3
#
# With the write cache, some of the unflushed version 4 pages are lost
# (the cache is volatile); with write-cache=0, none is.  The image
# counts the power cycles and the unsafe shutdown.
#
# The same with sync=false, which syncs only the session's mark at open:
# the cut is the death of the server, not a crash of the host, and the
# page cache keeps everything written, so the same rules hold; the
# restart finds the mark, verifies every mapped page and finds none
# lost.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout

make_tmpdir
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"
uri="nbd+unix:///?socket=$sock"

pyhelpers='
import errno
def page(n, v):
    return (b"%08d:%08d;" % (n, v)) * 227 + b"\1" * (4096 - 18 * 227)
def version(n, allowed):
    got = h.pread(4096, 4096 * n)
    for v in allowed:
        if got == page(n, v):
            return v
    raise AssertionError("page %d holds none of versions %r" % (n, allowed))
'

writes='
for n in range(256):
    h.pwrite(page(n, 1), 4096 * n)
h.flush()
for n in range(256):
    h.pwrite(page(n, 2), 4096 * n)
h.pwrite(page(300, 3), 4096 * 300, nbd.CMD_FLAG_FUA)
try:
    for n in range(200):
        h.pwrite(page(n, 4), 4096 * n)
    assert False, "no power cut"
except nbd.Error as e:
    assert e.errnum == errno.EIO, e
    assert n == 136, n
    print("the power went at version 4 of page", n)
try:
    h.pread(4096, 0)
    assert False, "the disk answered after the power cut"
except nbd.Error as e:
    pass
'

verify='
lost = 0
for n in range(136):
    lost += version(n, [2, 4]) == 2
for n in range(136, 256):
    version(n, [2])
version(300, [3])
print("version 4 lost on", lost, "of 136 pages")
open(lostfile, "w").write("%d\n" % lost)
'

# run NAME KEY=VALUE...: the writes with the cut, then a restart that
# checks every page; $tmp/NAME.lost: version 4 pages lost.
run ()
{
    local name="$1"
    shift
    rm -f "$tmp/disk.img"
    start_server "$sock" "$pid" file="$tmp/disk.img" size=64M \
        stats="$stats" powercut=650 "$@" 2> "$tmp/$name.err"
    timeout 120 nbdsh -u "$uri" -c "$pyhelpers" -c "$writes"
    # The server stops by itself.
    for (( i = 0; i < 300; i++ )); do
        kill -0 $_server_job 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 $_server_job 2>/dev/null; then
        echo "$0: FAIL: $name: the server still runs after the power cut"
        exit 1
    fi
    wait $_server_job || :
    cat "$tmp/$name.err"
    grep -q 'power cut at write request 650' "$tmp/$name.err"
    jq -e '.health.power_cycles == 1 and .health.unsafe_shutdowns == 0' \
        "$stats"
    # sync=false: the open's sync of the mark, and no other.
    # and the image carries the session's mark.
    case "$*" in
    *sync=false*)
        jq -e '.media.syncs == 1 and .media.syncs_skipped > 0' "$stats"
        "$FTLCTL" info --json "$tmp/disk.img" > "$tmp/$name.info"
        jq -e '.superblock.unsynced' "$tmp/$name.info" ;;
    esac

    start_server "$sock" "$pid" file="$tmp/disk.img" stats="$stats"
    lostfile="$tmp/$name.lost" timeout 120 nbdsh -u "$uri" \
        -c "$pyhelpers" -c 'import os; lostfile = os.environ["lostfile"]' \
        -c "$verify"
    stop_server "$pid"
    jq -c .health "$stats"
    jq -e '.health.power_cycles == 2 and .health.unsafe_shutdowns == 1' \
        "$stats"
    jq -e '.media.lost_pages == 0' "$stats"
}

run cached write-cache=1M powercut-seed=3
if [ "$(cat "$tmp/cached.lost")" -eq 0 ]; then
    echo "$0: FAIL: the write cache lost nothing in a power cut"
    exit 1
fi
grep -E 'reached the media, the last one torn$' "$tmp/cached.err"

run nocache write-cache=0
if [ "$(cat "$tmp/nocache.lost")" -ne 0 ]; then
    echo "$0: FAIL: without a write cache, acknowledged writes were lost"
    exit 1
fi

for c in 1M 0; do
    run unsynced-$c write-cache=$c powercut-seed=3 sync=false
done
if [ "$(cat "$tmp/unsynced-0.lost")" -ne 0 ]; then
    echo "$0: FAIL: sync=false, no write cache: acknowledged writes were lost"
    exit 1
fi

# Bad values are refused, naming the key.
for bad in powercut=0 powercut=-1 powercut=many powercut-seed=x \
           powercut-tear=maybe; do
    if nbdkit -f -U "$tmp/bad.sock" "$FTL_PLUGIN" file="$tmp/disk.img" \
           "$bad" --run true 2> "$tmp/err"; then
        echo "$0: FAIL: $bad was accepted"
        exit 1
    fi
    grep -E "powercut" "$tmp/err" >/dev/null || {
        echo "$0: FAIL: $bad: the error does not name the key:"
        cat "$tmp/err"
        exit 1
    }
done
