#!/usr/bin/env bash
# nbdkit-ftl: where a request's time goes.  Workloads that force each
# stage (lock waits behind a modeled program, a full write cache, GC on
# a full small disk, flushes and FUA writes, a slowed and a stalled
# backing file through the debug-faults= control file) must show their
# time in that stage, and every request kind's stages must add up to its
# total.  The Prometheus histograms parse with Prometheus's own parser
# and agree with the stats; slow-log= has a line for each slow request
# and none for the fast ones, and follows the file when it is moved.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout
py=/usr/bin/python3
[ -x "$py" ] || missing "$py not found"
"$py" -c 'import prometheus_client.parser' 2>/dev/null ||
    missing "python3-prometheus-client not installed"

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"
prom="$tmp/metrics.prom"
faults="$tmp/faults"
slow="$tmp/slow.jsonl"
uri="nbd+unix:///?socket=$sock"

check ()
{
    if ! jq -e "$1" "$stats" >/dev/null; then
        echo "$0: FAIL: $1"
        jq -c '.latency_us | map_values({count, sum, queue: .queue.sum,
               cache: .cache.sum, gc: .gc.sum, media: .media.sum,
               sync: .sync.sum, other: .other.sum})' "$stats"
        exit 1
    fi
}

# Every kind's stages add up to its total (sums in us, to the ns), and
# no stage counts more requests than the kind.
add_up ()
{
    check '.latency_us | to_entries | all(.value as $l |
             ([$l.queue, $l.cache, $l.gc, $l.media, $l.sync, $l.other]
              | (map(.sum) | add) - $l.sum | fabs) <= 0.001 and
             ([$l.queue, $l.cache, $l.gc, $l.media, $l.sync, $l.other]
              | all(.count <= $l.count and .sum >= 0)))'
}

set_faults ()
{
    if [ -z "$1" ]; then
        rm -f "$faults"
    else
        printf '%s\n' "$1" > "$faults.tmp"
        mv "$faults.tmp" "$faults"
    fi
}

# 1. queue and media: four writes of the same page at once, each
#    programmed for 5 ms by the timing model on one die without a write
#    cache; three of each four wait for the page's stripe lock.  Then
#    the host stall: 3 writes whose reply the fault file delays by
#    30 ms, which the model does not cover.
start_server "$sock" "$pid" file="$disk" size=64M stats="$stats" \
    metrics="$prom" debug-faults="$faults" \
    write-cache=0 program-latency=5ms read-latency=0 erase-latency=0 \
    channels=1 dies=1 planes=1 nand-page=4K slc-static=0
timeout 60 nbdsh -u "$uri" -c '
buf = nbd.Buffer.from_bytearray(bytearray(b"q" * 4096))
for r in range(5):
    for i in range(4):
        h.aio_pwrite(buf, 0)
    while h.aio_in_flight() > 0:
        h.poll(-1)
'
set_faults 'reply-delay 30ms'
timeout 60 nbdsh -u "$uri" -c '
for i in range(3):
    h.pwrite(b"r" * 4096, 4096 * (i + 1))
'
set_faults ''
stop_server "$pid"
jq -c '.latency_us.write | {count, sum, split}' "$stats"
jq -c '.timing.host_stall_us' "$stats"
check '.timing.host_stall_us.requests == 23 and .timing.host_stall_us.count >= 3'
check '.timing.host_stall_us.max >= 30000 and
       .timing.host_stall_us.sum >= 90000 and .timing.host_stall_us.p50 < 30000'
"$py" - "$prom" "$stats" <<'PY'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
h = json.load(open(sys.argv[2]))["timing"]["host_stall_us"]
f = fams["nbdkit_ftl_timing_host_stall_seconds"]
assert f.type == "histogram"
v = {(s.name, s.labels.get("le")): s.value for s in f.samples}
assert v[("nbdkit_ftl_timing_host_stall_seconds_bucket", "+Inf")] == h["count"]
assert v[("nbdkit_ftl_timing_host_stall_seconds_count", None)] == h["count"]
assert abs(v[("nbdkit_ftl_timing_host_stall_seconds_sum", None)] - h["sum"] * 1e-6) < 1e-6
assert v[("nbdkit_ftl_timing_host_stall_seconds_bucket", "0.016384")] <= h["count"] - 3
PY
check '.latency_us.write.count == 23'
check '.latency_us.write.queue.count >= 5 and .latency_us.write.queue.max >= 3000'
check '.latency_us.write.media.count == 23 and .latency_us.write.media.p50 >= 4000'
add_up
rm -f "$disk"

# 2. cache, gc and sync: a 16 MiB disk with a 1 MiB write cache, filled
#    with 1 MiB writes (each fills the cache), then overwritten at
#    random without a cache (write-cache=0: the writers collect), with a
#    FUA write and a flush.
start_server "$sock" "$pid" file="$disk" size=16M pages-per-block=64 \
    stats="$stats" write-cache=1M write-cache-bypass=0
timeout 120 nbdsh -u "$uri" -c '
for i in range(16):
    h.pwrite(b"y" * (1 << 20), i << 20)
h.pwrite(b"z" * 4096, 0, nbd.CMD_FLAG_FUA)
h.flush()
'
stop_server "$pid"
jq -c '.latency_us | map_values({count, split})' "$stats"
check '.latency_us.write.cache.count >= 8 and .latency_us.write.cache.sum > 0'
check '.latency_us.write.sync.count >= 1 and .latency_us.flush.sync.count == 1'
check '.latency_us.flush.sync.sum >= 0.5 * .latency_us.flush.sum'
add_up
start_server "$sock" "$pid" file="$disk" stats="$stats" write-cache=0
timeout 120 nbdsh -u "$uri" -c '
import random
random.seed(1)
for i in range(1024):
    h.pwrite(b"z" * 65536, random.randrange(256) * 65536)
'
stop_server "$pid"
jq -c '.latency_us.write | {count, split}' "$stats"
jq -c .gc "$stats"
check '.latency_us.write.gc.count >= 1 and .latency_us.write.gc.sum > 0'
add_up
rm -f "$disk"

# 3. media: the backing file's own reads, and the waits of the fault
#    file; the slow log and the Prometheus text.  Reads without a cache: 40 fast ones, then 3 slowed by 150 ms
#    each, then the log is moved away and 2 more are slowed, then one
#    after a SIGHUP.  The threshold (50 ms) is far from both.
start_server "$sock" "$pid" file="$disk" size=64M stats="$stats" \
    metrics="$prom" write-cache=0 debug-faults="$faults" \
    slow-log="$slow" slow-threshold=50ms
timeout 60 nbdsh -u "$uri" -c '
h.pwrite(b"m" * (1 << 20), 0)
for i in range(40):
    h.pread(4096, i * 4096)
'
set_faults 'delay 150ms'
nbdsh -u "$uri" -c '
for i in range(3):
    h.pread(4096, (100 + i) * 4096)
'
set_faults ''
mv "$slow" "$slow.1"
set_faults 'delay 150ms'
nbdsh -u "$uri" -c '
for i in range(2):
    h.pread(4096, (200 + i) * 4096)
'
# SIGHUP reopens the file (and does not stop the server).
kill -HUP "$(cat "$pid")"
nbdsh -u "$uri" -c 'h.pread(4096, 250 * 4096)'
set_faults ''
stop_server "$pid"
cat "$slow.1" "$slow"
# The slowed reads, each once, in the file that was there at its end.
jq -e -s 'map(select(.op == "read")) | map(.offset / 4096) ==
          [100, 101, 102]' "$slow.1" >/dev/null
jq -e -s 'map(select(.op == "read")) | map(.offset / 4096) ==
          [200, 201, 250]' "$slow" >/dev/null
# Nothing fast, and each line's stages add up to its total.
jq -e -s 'all(.[]; .total_us >= 50000 and
              ((.stages_us | add) - .total_us | fabs) < 0.01)' \
    "$slow.1" "$slow" >/dev/null
jq -e -s 'map(select(.op == "read")) | all(.stages_us.media >= 140000 and
          .length == 4096 and .fua == false and .result == 0)' \
    "$slow.1" "$slow" >/dev/null
# Every read reached the backing file: its own pread is media, for the
# 40 fast reads too (not other); the 6 slowed ones are the slowest.
check '.latency_us.read.count == 46 and .latency_us.read.media.count == 46'
check '.latency_us.read.media.p50 < 50000 and .latency_us.read.media.max >= 140000'
check '.latency_us.read.media.sum > 0.9 * 6 * 150000'
check '.slow.threshold_us == 50000 and .slow.dropped == 0'
add_up

"$py" - "$prom" "$stats" <<'PY'
import json, math, sys
from prometheus_client.parser import text_string_to_metric_families
fams = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}
st = json.load(open(sys.argv[2]))
lat = st["latency_us"]
seen = 0
for name, stage in (("nbdkit_ftl_request_duration_seconds", False),
                    ("nbdkit_ftl_request_stage_duration_seconds", True)):
    f = fams[name]
    assert f.type == "histogram", f.type
    series = {}
    for s in f.samples:
        key = (s.labels["op"], s.labels.get("stage"))
        series.setdefault(key, []).append(s)
    for (op, sg), samples in series.items():
        b = [(float(s.labels["le"]), s.value) for s in samples
             if s.name.endswith("_bucket")]
        assert b == sorted(b), (op, sg, "le not increasing")
        vals = [v for _, v in b]
        assert all(x <= y for x, y in zip(vals, vals[1:])), (op, sg, vals)
        assert b[-1][0] == math.inf
        count = [s.value for s in samples if s.name.endswith("_count")][0]
        total = [s.value for s in samples if s.name.endswith("_sum")][0]
        assert b[-1][1] == count, (op, sg, b[-1], count)
        # Every request took less than the last finite le (67 s), and a
        # stage's requests without time in it are in its first bucket.
        assert b[-2][1] == count, (op, sg, b[-2], count)
        if stage:
            assert b[0][1] >= lat[op]["count"] - lat[op][sg]["count"], (op, sg)
        assert count == lat[op]["count"], (op, sg, count)
        want = lat[op][sg]["sum"] if stage else lat[op]["sum"]
        assert abs(total - want * 1e-6) <= 1e-9 * max(1, want), (op, sg)
        seen += 1
assert seen == 5 * 7, seen
# The stages add up to the total in the histograms too.
for op in lat:
    tot = [s.value for s in fams["nbdkit_ftl_request_duration_seconds"].samples
           if s.name.endswith("_sum") and s.labels["op"] == op][0]
    parts = sum(s.value for s in
                fams["nbdkit_ftl_request_stage_duration_seconds"].samples
                if s.name.endswith("_sum") and s.labels["op"] == op)
    assert abs(tot - parts) < 1e-6, (op, tot, parts)
print("prometheus: %d histogram series" % seen)
PY
rm -f "$disk" "$slow" "$slow.1"

# 4. a stalled backing file: the read is aborted at its deadline (no
#    retries), the client gets an error, and the slow log says it was
#    waiting on the media.
start_server "$sock" "$pid" file="$disk" size=64M stats="$stats" \
    write-cache=0 debug-faults="$faults" slow-log="$slow" \
    timeout=300ms timeout-retries=0
timeout 60 nbdsh -u "$uri" -c 'h.pwrite(b"s" * 4096, 0)'
set_faults 'stall'
( trap - EXIT; sleep 1.5; set_faults '' ) &
lift=$!
timeout 60 nbdsh -u "$uri" -c '
try:
    h.pread(4096, 0)
    assert False, "read through a stall"
except nbd.Error as e:
    pass
'
wait $lift
# Service resumes once the watchdog sees the file answer again.
timeout 60 nbdsh -u "$uri" -c '
import time
for i in range(100):
    try:
        assert h.pread(4096, 0) == b"s" * 4096
        break
    except nbd.Error:
        time.sleep(0.1)
else:
    assert False, "no service after the stall"
'
stop_server "$pid"
cat "$slow"
jq -e -s 'map(select(.aborted)) | length == 1 and
          (.[0] | .op == "read" and .waiting_on == "media" and
           .stages_us.media > 0)' "$slow" >/dev/null
check '.deadline.aborted >= 1 and .latency_us.read.media.max >= 250000'
add_up
echo "$0: OK"
