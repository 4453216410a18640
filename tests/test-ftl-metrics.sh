#!/usr/bin/env bash
# nbdkit-ftl: stats-log= appends a timeline line per interval, ftlctl
# plot draws it; metrics= and metrics-port= give the statistics in the
# Prometheus text format, which Prometheus's own Python parser reads.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires fio jq timeout gnuplot
: "${FTLCTL:=../tools/ftlctl}"
py=/usr/bin/python3
[ -x "$py" ] || missing "$py not found"
"$py" -c 'import prometheus_client.parser' 2>/dev/null ||
    missing "python3-prometheus-client not installed"

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"
log="$tmp/timeline.jsonl"
prom="$tmp/metrics.prom"
uri="nbd+unix:///?socket=$sock"

# A free loopback port (the kernel picks it; another process could take
# it before nbdkit does, which would fail the start visibly).
port=$("$py" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Bad values are refused before anything starts.
if nbdkit -U "$tmp/bad.sock" "$FTL_PLUGIN" file="$disk" size=64M metrics-port=0 \
          --run true 2>"$tmp/err"; then
    echo "$0: FAIL: metrics-port=0 accepted"; exit 1
fi
grep -q 'metrics-port must be from 1 to 65535' "$tmp/err"
if nbdkit -U "$tmp/bad.sock" "$FTL_PLUGIN" file="$disk" size=64M \
          stats-log="$tmp/no/such/dir/log" --run true 2>"$tmp/err"; then
    echo "$0: FAIL: stats-log in a missing directory accepted"; exit 1
fi
grep -q 'stats-log: cannot write a file next to' "$tmp/err"

start_server "$sock" "$pid" file="$disk" size=64M stats="$stats" \
             stats-log="$log" metrics="$prom" metrics-port="$port" \
             stats-interval=1

# At start: one timeline line, a metrics file.
[ "$(wc -l < "$log")" -eq 1 ]
jq -e '.rates.write_pages_per_s == 0 and .rates.waf_interval == null
       and .stats.host.write_pages == 0' "$log" >/dev/null

# Three seconds of random writes over twice the disk (GC runs): held
# to 10000 a second, so that the timeline has lines while they run
# however fast the machine writes.
timeout 120 fio --name=w --ioengine=nbd --uri="$uri" --rw=randwrite \
    --bs=4k --size=64M --io_size=128M --randseed=7 --rate_iops=10000 \
    --output="$tmp/fio.out"

# The endpoint, scraped from the loopback address while the disk serves.
"$py" - "$port" <<'PY'
import json, sys, urllib.request
from prometheus_client.parser import text_string_to_metric_families
port = sys.argv[1]
with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=10) as r:
    assert r.status == 200
    ctype = r.headers["Content-Type"]
    assert ctype.startswith("text/plain; version=0.0.4"), ctype
    text = r.read().decode()
fams = {f.name: f for f in text_string_to_metric_families(text)}
w = fams["nbdkit_ftl_host_write_pages"]
assert w.type == "counter", w.type
assert w.samples[0].value >= 32768, w.samples
# The statistics JSON, live: every write that fio saw complete is
# counted at once (the stats= file may still be a second behind).
with urllib.request.urlopen("http://127.0.0.1:%s/stats.json" % port, timeout=10) as r:
    assert r.status == 200
    ctype = r.headers["Content-Type"]
    assert ctype == "application/json", ctype
    st = json.loads(r.read().decode())
assert st["host"]["write_pages"] == 32768, st["host"]
assert st["geometry"]["logical_pages"] > 0, st["geometry"]
try:
    urllib.request.urlopen("http://127.0.0.1:%s/other" % port, timeout=10)
    raise SystemExit("FAIL: /other answered")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
print("endpoint: %d families" % len(fams))
PY

stop_server "$pid"

# The timeline: a line at start, while busy, after, and at shutdown;
# each a JSON object with the rates and the statistics.
head -c 2000 "$log"; echo
lines=$(wc -l < "$log")
[ "$lines" -ge 3 ]
jq -e -s 'all(.[]; (.time | type) == "number" and
                   (.rates.write_pages_per_s | type) == "number" and
                   (.rates.free_blocks | type) == "number" and
                   (.stats.latency_us.write.p99 | type) == "number")' \
    "$log" >/dev/null
# Rates integrate back to the counters: the sum of write pages over all
# intervals is the final count (each rate is rounded to 0.1 page/s).
jq -e -s '(map(.rates.write_pages_per_s * .interval_s) | add) as $sum |
          .[-1].stats.host.write_pages as $total |
          ($sum - $total | fabs) <= 0.01 * $total + 10' "$log" >/dev/null
jq -e -s '.[-1].stats.host.write_pages == 32768 and
          any(.[]; .rates.waf_interval != null and .rates.waf_interval > 1)' \
    "$log" >/dev/null
# The last line is the last stats file.
[ "$(jq -c -s '.[-1].stats' "$log")" = "$(jq -c . "$stats")" ]

# The plot.
"$FTLCTL" plot -o "$tmp/t.png" "$log"
[ "$(head -c 8 "$tmp/t.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
# A broken line is named.
{ head -1 "$log"; echo '{"time": 1, oops'; tail -1 "$log"; } > "$tmp/bad.jsonl"
if "$FTLCTL" plot -o "$tmp/bad.png" "$tmp/bad.jsonl" 2>"$tmp/err"; then
    echo "$0: FAIL: a broken timeline plotted"; exit 1
fi
cat "$tmp/err"
grep -q 'bad.jsonl:2: not a timeline line' "$tmp/err"

# The metrics file, with Prometheus's parser: names, types, values that
# match the stats file, the histogram and the latency summary.
"$py" - "$prom" "$stats" <<'PY'
import json, sys
from prometheus_client.parser import text_string_to_metric_families
text = open(sys.argv[1]).read()
st = json.load(open(sys.argv[2]))
fams = {f.name: f for f in text_string_to_metric_families(text)}
def one(name):
    return fams[name].samples[0].value
for f in fams.values():
    assert f.name.startswith("nbdkit_ftl_"), f.name
    assert f.documentation, f.name
assert "# TYPE nbdkit_ftl_host_write_pages_total counter" in text
assert fams["nbdkit_ftl_host_write_pages"].type == "counter"
assert one("nbdkit_ftl_host_write_pages") == st["host"]["write_pages"]
assert one("nbdkit_ftl_media_program_pages") == st["media"]["program_pages"]
assert one("nbdkit_ftl_media_erases") == st["media"]["erases"]
assert one("nbdkit_ftl_blocks_free") == st["blocks"]["free"]
assert fams["nbdkit_ftl_blocks_free"].type == "gauge"
assert abs(one("nbdkit_ftl_write_amplification_ratio") - st["waf"]) < 1e-4
assert one("nbdkit_ftl_cache_size_bytes") == st["cache"]["size_bytes"]
assert one("nbdkit_ftl_deadline_timeout_seconds") == 30
# Settings as an info metric.
gc = fams["nbdkit_ftl_gc_info"].samples[0]
assert gc.labels == {"policy": "cost-benefit", "mode": "watermark"}, gc.labels
# Erase counts: a histogram whose +Inf bucket holds every block.
h = fams["nbdkit_ftl_block_erases"]
assert h.type == "histogram"
inf = [s for s in h.samples if s.name.endswith("_bucket") and s.labels["le"] == "+Inf"]
assert inf[0].value == st["blocks"]["total"], inf
# Latency: a summary per request kind, in seconds.
lat = fams["nbdkit_ftl_request_latency_seconds"]
assert lat.type == "summary"
p99 = [s.value for s in lat.samples
       if s.labels.get("op") == "write" and s.labels.get("quantile") == "0.99"]
assert p99 == [st["latency_us"]["write"]["p99"] / 1e6], p99
cnt = [s.value for s in lat.samples
       if s.name.endswith("_count") and s.labels["op"] == "write"]
assert cnt == [st["latency_us"]["write"]["count"]], cnt
print("metrics file: %d families" % len(fams))
PY

# ftlctl top, once, on the stats file and on the timeline.
"$FTLCTL" top --once "$stats" > "$tmp/top1"
cat "$tmp/top1"
grep -q '(stats file)' "$tmp/top1"
grep -Eq "^WAF +$(jq -r '.waf | tostring | .[0:4]')" "$tmp/top1"
grep -Eq "^blocks +$(jq .blocks.free "$stats") free" "$tmp/top1"
grep -q 'power_cycles 1 unsafe_shutdowns 0' "$tmp/top1"
grep -Eq '^  write +32768 ' "$tmp/top1"
grep -Eq "^hot/cold +$(jq -r 'if .hot_cold.separating then "apart" else "one log" end' "$stats") " "$tmp/top1"
if grep -q $'\033' "$tmp/top1"; then echo "$0: FAIL: escapes with --once"; exit 1; fi
"$FTLCTL" top --once "$log" > "$tmp/top2"
cat "$tmp/top2"
grep -q '(timeline, last line)' "$tmp/top2"
grep -Eq '^host +[0-9]+ write pages/s' "$tmp/top2"
grep -Eq '^hot/cold +(apart|one log) ' "$tmp/top2"
if "$FTLCTL" top --once "$tmp/no-such-file" 2>"$tmp/err"; then
    echo "$0: FAIL: top on a missing file"; exit 1
fi
grep -q 'no-such-file' "$tmp/err"
