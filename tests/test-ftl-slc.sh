#!/usr/bin/env bash
# nbdkit-ftl: the SLC cache, with short timings.  A sequential write of
# more than the cache exhausts it (slc.exhausted), an idle pause folds
# it (slc.folded_pages), and the data written reads back intact, after
# a clean restart too; then a kill -9 in the middle of a stream of
# writes, after which ftlctl check passes and a restart serves what was
# flushed before.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout sha256sum
export FTLCTL="${FTLCTL:-../tools/ftlctl}"
if [ ! -x "$FTLCTL" ]; then
    missing "$FTLCTL not built"
fi

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"
uri="nbd+unix:///?socket=$sock"

# 32 MiB, 256 KiB erase blocks, QLC: an SLC block holds 16 of its 64
# pages.  A static part of 1 MiB (16 blocks) and a dynamic part from
# free space: about a fifth of the empty disk.  Microsecond timings.
keys="size=32M op=50 pages-per-block=64 cell-bits=4
      slc-static=1M slc-dynamic=auto slc-fold-idle=100ms
      read-latency=20us program-latency=40us erase-latency=100us
      slc-program=10us slc-read=10us channels=2 dies=2
      stats=$stats"

check ()
{
    if ! stats_wait "$stats" "$1"; then
        echo "$0: FAIL: $1"
        cat "$stats"
        exit 1
    fi
}

# 1. 16 MiB of sequential writes at 4 MiB: the cache is exhausted.  The data is
# random, its checksum kept.
head -c 16M /dev/urandom > "$tmp/data"
want="$(sha256sum < "$tmp/data" | cut -d' ' -f1)"
start_server "$sock" "$pid" file="$disk" $keys
check '.slc.size_pages > 0 and .slc.used_pages == 0 and .slc.exhausted == 0'
size0="$(jq .slc.size_pages "$stats")"
timeout 120 nbdsh -u "$uri" -c "
data = open('$tmp/data', 'rb').read()
for off in range(0, len(data), 1 << 20):
    h.pwrite(data[off:off + (1 << 20)], (4 << 20) + off)
h.flush()
"
cat "$stats"
check '.slc.exhausted >= 1'
# The dynamic part shrank as the disk filled (what it held beyond the
# budget may have been folded already).
check ".slc.used_pages > 0 and .slc.size_pages < $size0"

# 2. Idle: the background folds the cache.  A flush (not a write)
# rewrites the statistics.
for i in $(seq 50); do
    sleep 0.2
    nbdsh -u "$uri" -c 'h.flush()'
    if jq -e '.slc.used_pages == 0' "$stats" >/dev/null; then
        break
    fi
done
cat "$stats"
check '.slc.used_pages == 0 and .slc.folded_pages > 0'
check '.media.program_pages >= .host.write_pages + .slc.folded_pages'

read_back ()
{
    timeout 120 nbdsh -u "$uri" -c "
import sys
sys.stdout.buffer.write(h.pread(16 << 20, 4 << 20))
" | sha256sum | cut -d' ' -f1
}
got="$(read_back)"
test "$got" = "$want"

# 3. A clean restart: the same data.
stop_server "$pid"
start_server "$sock" "$pid" file="$disk" $keys
got="$(read_back)"
test "$got" = "$want"

# 4. Rewrite the first 4 MiB (in the SLC cache) and flush, then a
# stream of writes to the last 8 MiB, killed in the middle.
head -c 4M /dev/urandom > "$tmp/first"
timeout 120 nbdsh -u "$uri" -c "
h.pwrite(open('$tmp/first', 'rb').read(), 0)
h.flush()
"
first="$(sha256sum < "$tmp/first" | cut -d' ' -f1)"
timeout 120 nbdsh -u "$uri" -c "
import os
while True:
    for off in range(24 << 20, 32 << 20, 256 << 10):
        h.pwrite(os.urandom(256 << 10), off)
" 2>/dev/null &
writer=$!
cleanup_fn kill $writer
sleep 1.5
kill_server "$pid"
wait $writer 2>/dev/null || :

$FTLCTL check "$disk"
start_server "$sock" "$pid" file="$disk" $keys
timeout 120 nbdsh -u "$uri" -c "
import sys
sys.stdout.buffer.write(h.pread(4 << 20, 0))
" | sha256sum | cut -d' ' -f1 > "$tmp/got-first"
test "$(cat "$tmp/got-first")" = "$first"
# The 16 MiB written first, never rewritten since.
got="$(read_back)"
test "$got" = "$want"
stop_server "$pid"
$FTLCTL check "$disk"
