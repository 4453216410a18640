#!/usr/bin/env bash
# nbdkit-ftl: request deadlines as a client sees them.  Faults are
# injected through the debug-faults= control file; each outcome of the
# timeout handler is made to happen, and the client must get an answer
# in time (EIO when aborted), the next request must be served, and no
# data may be lost or half written.  The writes of cases 1 to 3 go
# straight to the media (write-cache=0), so that the media's work is
# inside the request; case 4 has the write cache.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"
faults="$tmp/faults"
uri="nbd+unix:///?socket=$sock"

check ()
{
    if ! stats_wait "$stats" "$1"; then
        echo "$0: FAIL: $1"
        jq .deadline "$stats"
        exit 1
    fi
}

# set_faults TEXT: replace the control file atomically ('' removes it).
set_faults ()
{
    if [ -z "$1" ]; then
        rm -f "$faults"
    else
        printf '%s\n' "$1" > "$faults.tmp"
        mv "$faults.tmp" "$faults"
    fi
}

# Helpers for the nbdsh scripts: pages that name themselves.
pyhelpers='
import time, errno
def page(n, v):
    return (b"%08d:%08d;" % (n, v)) * 227 + b"\0" * (4096 - 18 * 227)
def data(first, n, v):
    return b"".join(page(first + i, v) for i in range(n))
def check_pages(first, n, allowed):
    got = h.pread(4096 * n, 4096 * first)
    vs = set()
    for i in range(n):
        p = got[4096 * i : 4096 * (i + 1)]
        v = [x for x in allowed if p == page(first + i, x)]
        assert v, "page %d holds neither of %r" % (first + i, allowed)
        vs.add(v[0])
    assert len(vs) == 1, "pages %d..%d mix versions %r" % (first, first + n - 1, vs)
    return vs.pop()
'

# 1. reset, then abort: 64 pages at 10 ms = 640 ms of programming on
#    one unit against a 200 ms deadline.  With 10 retries the write goes
#    through; with 1 (and 40 ms pages: 2.56 s) it is aborted at about
#    400 ms and the client gets EIO well before the write could have
#    ended (the gaps leave room for a loaded host).
start_server "$sock" "$pid" file="$disk" size=64M stats="$stats" \
    write-cache=0 timeout=200ms timeout-retries=10 program-latency=10ms read-latency=0 \
    erase-latency=0 channels=1 dies=1 planes=1 nand-page=4K slc-static=0
timeout 60 nbdsh -u "$uri" -c "$pyhelpers" -c '
t = time.time()
h.pwrite(data(0, 64, 1), 0)
assert time.time() - t >= 0.64
assert check_pages(0, 64, [1]) == 1
h.flush()
'
check '.deadline.reset >= 2 and .deadline.aborted == 0'
stop_server "$pid"
jq -c .deadline "$stats"

start_server "$sock" "$pid" file="$disk" stats="$stats" \
    write-cache=0 timeout=200ms timeout-retries=1 program-latency=40ms read-latency=0 \
    erase-latency=0 channels=1 dies=1 planes=1 nand-page=4K slc-static=0
timeout 60 nbdsh -u "$uri" -c "$pyhelpers" -c '
t = time.time()
try:
    h.pwrite(data(0, 64, 2), 0)
    assert False, "the write was not aborted"
except nbd.Error as e:
    assert e.errnum == errno.EIO, e
took = time.time() - t
assert took < 2.0, took
# Not applied: the old data is all there; the next request is served.
assert check_pages(0, 64, [1, 2]) == 1
h.pwrite(data(0, 4, 3), 0)
assert check_pages(0, 4, [3]) == 3
h.flush()
'
check '.deadline.aborted == 1 and .deadline.reset == 1 and .deadline.abort_all == 0'
stop_server "$pid"
jq -c .deadline "$stats"

# 2. handled: replies held back past the deadline; the requests had
#    completed, so they succeed.  The deadline leaves room for a slow
#    host, the reply delay 800 ms more for the watchdog to see them done.
start_server "$sock" "$pid" file="$disk" stats="$stats" \
    write-cache=0 timeout=400ms debug-faults="$faults"
set_faults "reply-delay 1200ms"
timeout 60 nbdsh -u "$uri" -c "$pyhelpers" -c '
h.pwrite(data(4, 4, 4), 4 * 4096)
assert check_pages(4, 4, [4]) == 4
'
set_faults ''
timeout 60 nbdsh -u "$uri" -c 'h.flush()'
check '.deadline.handled >= 2 and .deadline.aborted == 0'
stop_server "$pid"
jq -c .deadline "$stats"

# 3. abort all: the media stalls under a running write and reads; all
#    fail with EIO within about a deadline, new requests fail at once,
#    and when the stall is lifted service resumes by itself.
start_server "$sock" "$pid" file="$disk" stats="$stats" \
    write-cache=0 timeout=200ms debug-faults="$faults"
faults="$faults" timeout 60 nbdsh -u "$uri" -c "$pyhelpers" -c '
import os
faults = os.environ["faults"]
def stall(on):
    if on:
        open(faults + ".tmp", "w").write("stall\n")
        os.rename(faults + ".tmp", faults)
    else:
        os.unlink(faults)
stall(True)
t = time.time()
c = [h.aio_pwrite(nbd.Buffer.from_bytearray(bytearray(data(8, 16, 5))),
                  8 * 4096),
     h.aio_pread(nbd.Buffer(4096), 0),
     h.aio_pread(nbd.Buffer(4096), 4096 * 20),
     h.aio_flush()]
while h.aio_in_flight() > 0:
    h.poll(1)
    assert time.time() - t < 5, "no answer"
took = time.time() - t
failed = 0
for x in c:
    try:
        h.aio_command_completed(x)
    except nbd.Error as e:
        assert e.errnum == errno.EIO, e
        failed += 1
assert failed == len(c), failed
assert took < 2, took
# New requests fail at once (refused: .deadline.rejected, checked below).
t = time.time()
try:
    h.pread(4096, 0)
    assert False, "a read succeeded during the stall"
except nbd.Error as e:
    assert e.errnum == errno.EIO, e
assert time.time() - t < 1
stall(False)
for i in range(200):
    try:
        h.pread(4096, 0)
        break
    except nbd.Error:
        time.sleep(0.02)
else:
    assert False, "service did not resume"
h.pwrite(data(40, 4, 6), 40 * 4096)
assert check_pages(40, 4, [6]) == 6
'
# Whatever was aborted, the disk is consistent: the aborted write is
# all there or not at all, the rest unchanged, after a restart too.
verify='
assert check_pages(0, 4, [3]) == 3
assert check_pages(4, 4, [4]) == 4
check_pages(8, 16, [1, 5])
assert check_pages(24, 16, [1]) == 1
assert check_pages(40, 4, [6]) == 6
'
timeout 60 nbdsh -u "$uri" -c "$pyhelpers" -c "$verify"
stop_server "$pid"
jq -c .deadline "$stats"
# The four requests of the stall all failed (checked above): each was
# either in flight when the stall was declared (aborted) or came after
# it (rejected), as was the read after them.
check '.deadline.abort_all == 1 and .deadline.aborted >= 1 and .deadline.rejected >= 1 and .deadline.aborted + .deadline.rejected >= 5'
start_server "$sock" "$pid" file="$disk"
timeout 60 nbdsh -u "$uri" -c "$pyhelpers" -c "$verify"
stop_server "$pid"

# 4. With the write cache: a write completes in RAM during a stall; the
#    flush that must destage it is aborted (EIO) in time, and loses
#    nothing: once the stall is lifted a flush succeeds, and the page
#    is there after a restart.
start_server "$sock" "$pid" file="$disk" stats="$stats" \
    write-cache=1M timeout=200ms debug-faults="$faults"
faults="$faults" timeout 60 nbdsh -u "$uri" -c "$pyhelpers" -c '
import os
faults = os.environ["faults"]
open(faults + ".tmp", "w").write("stall\n")
os.rename(faults + ".tmp", faults)
t = time.time()
h.pwrite(data(48, 4, 7), 48 * 4096)
assert time.time() - t < 1, "a cached write waited for the media"
try:
    h.flush()
    assert False, "a flush succeeded during the stall"
except nbd.Error as e:
    assert e.errnum == errno.EIO, e
assert time.time() - t < 2, time.time() - t
os.unlink(faults)
for i in range(200):
    try:
        h.flush()
        break
    except nbd.Error:
        time.sleep(0.02)
else:
    assert False, "the flush never succeeded after the stall"
assert check_pages(48, 4, [7]) == 7
'
stop_server "$pid"
check '.deadline.aborted >= 1 and .cache.destaged_pages >= 4'
start_server "$sock" "$pid" file="$disk" write-cache=0
timeout 60 nbdsh -u "$uri" -c "$pyhelpers" -c "$verify" \
    -c 'assert check_pages(48, 4, [7]) == 7'
stop_server "$pid"

# 5. timeout=0 turns tracking off; bad durations are refused.
start_server "$sock" "$pid" file="$disk" stats="$stats" timeout=0
timeout 60 nbdsh -u "$uri" -c 'h.pread(4096, 0)'
stop_server "$pid"
check '.deadline.requests == 0 and .latency_us.read.count >= 1'
for bad in timeout=30 timeout=5m timeout=-1s program-latency=fast \
           timeout=100us channels=0 dies=100000; do
    if nbdkit -f -U "$tmp/bad.sock" "$FTL_PLUGIN" file="$disk" "$bad" \
           --run true 2>"$tmp/err"; then
        echo "$0: FAIL: $bad was accepted"
        exit 1
    fi
    grep -E "timeout|latency|channels|dies" "$tmp/err" >/dev/null || {
        echo "$0: FAIL: $bad: unclear error:"; cat "$tmp/err"; exit 1; }
done
