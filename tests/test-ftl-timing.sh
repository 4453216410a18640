#!/usr/bin/env bash
# nbdkit-ftl: the NAND timing model through nbdkit.  With timing=true
# every page program and page read sleeps its latency on one of the
# model's units, so without a write cache a client's 4 KiB write cannot
# take less than program-latency, nor a read less than read-latency:
# the statistics' median latencies must be at least that.  With the
# write cache, writes are served from RAM and the destager and the
# flush carry the programs.  timing=false with the same
# latencies given turns the model off again: a write then takes
# microseconds (the median is checked against the program latency
# only, so that a loaded machine does not fail the test).

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout

make_tmpdir
export tmp

# 200 page writes, 200 page reads, one at a time, and a flush.
cat > "$tmp/io.py" <<'EOF_PY'
page = bytearray(4096)
for p in range(200):
    page[0:8] = b"%08d" % p
    h.pwrite(page, p * 4096)
for p in range(200):
    h.pread(4096, p * 4096)
h.flush()
EOF_PY

# run NAME [KEY=VALUE...]: the statistics at shutdown in $tmp/NAME.json.
run ()
{
    local name="$1"
    shift
    rm -f "$tmp/disk.img"
    timeout 300 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=16M \
        pages-per-block=16 stats="$tmp/$name.json" "$@" \
        --run 'nbdsh -u "$uri" -c "exec(open(\"$tmp/io.py\").read())"'
    echo "$name: $(jq -c .latency_us "$tmp/$name.json")"
}

check ()
{
    if ! jq -e "$1" "$2" >/dev/null; then
        echo "$0: FAIL: $1"
        exit 1
    fi
}

# One FTL page per program (planes=1, nand-page=4K), and no SLC cache
# (its programs are shorter): every write waits.
run on timing=true program-latency=2ms read-latency=1ms write-cache=0 \
    planes=1 nand-page=4K slc-static=0
check '.latency_us.write.count == 200 and .latency_us.read.count == 200' \
    "$tmp/on.json"
check '.latency_us.write.p50 >= 2000 and .latency_us.read.p50 >= 1000' \
    "$tmp/on.json"

run off timing=false program-latency=2ms read-latency=1ms
check '.latency_us.write.count == 200' "$tmp/off.json"
check '.latency_us.write.p50 < 2000' "$tmp/off.json"

# With a write cache the writes complete from RAM: their median is far
# below one program; the pages reach the media later (the destager, the
# flush), every one of them.
run cached timing=true program-latency=2ms read-latency=1ms write-cache=1M
check '.latency_us.write.count == 200 and .latency_us.write.p50 < 2000' \
    "$tmp/cached.json"
check '.cache.destaged_pages == 200 and .media.program_pages >= 200' \
    "$tmp/cached.json"

# Presets.  model= is accepted, an unknown one is refused naming the
# key, and keys given override the preset (the effective values are in
# the statistics' "timing" object).
run preset model=sata-tlc program-latency=3ms dies=1
check '.timing.program_ns == 3000000 and .timing.dies == 8' "$tmp/preset.json"
check '.timing.read_ns == 45000 and .timing.planes == 2' "$tmp/preset.json"
check '.timing.pages_per_program == 8' "$tmp/preset.json"
# The preset's SLC cache (sata-tlc: 6 GB static and up to 36 GB dynamic
# per TB, scaled to the disk), off with slc-static=0, and the QLC
# preset's native blocks of 4 bits per cell.
check '.slc.size_pages > 0' "$tmp/preset.json"
run noslc model=sata-tlc slc-static=0
check '.slc.size_pages == 0' "$tmp/noslc.json"
rm -f "$tmp/disk.img"
if nbdkit -U "$tmp/bad.sock" "$FTL_PLUGIN" file="$tmp/disk.img" size=16M model=nosuch \
        --run true 2>"$tmp/err"; then
    echo "$0: FAIL: model=nosuch was accepted"
    exit 1
fi
cat "$tmp/err"
grep -q "model: unknown drive model 'nosuch'" "$tmp/err"
grep -q "sata-tlc" "$tmp/err"

# Striping: sequential 1 MiB writes (write-through, one at a time) of a
# preset with a long program time.  One die programs 8 pages (32 KiB)
# per 4 ms, 8 MB/s: 8 MiB would take 1 s on one die.  Over the preset's
# 16 dies, a 1 MiB block is 32 programs, 2 per die: 8 ms.  What is
# checked is the model's time, the writes' time less what this machine
# added to it (timing.host_stall_us: waking up late, the backing file),
# not the wall clock, which a loaded host stretches past any bound
# (0.66 s for the 8 MiB once, with a load of 16 on 2 CPUs).
cat > "$tmp/seq.py" <<'EOF_PY'
import time
buf = bytearray(1 << 20)
t0 = time.monotonic()
for i in range(8):
    h.pwrite(buf, i << 20)
dt = time.monotonic() - t0
print("8 MiB sequential: %.3f s" % dt)
EOF_PY
rm -f "$tmp/disk.img"
timeout 300 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=64M \
    model=sata-tlc program-latency=4ms read-latency=50us erase-latency=1ms \
    write-cache=0 slc-static=0 stats="$tmp/seq.json" \
    --run 'nbdsh -u "$uri" -c "exec(open(\"$tmp/seq.py\").read())"'
check '.media.program_pages >= 2048' "$tmp/seq.json"
jq -r '"8 MiB in the model: \((.latency_us.write.sum - .timing.host_stall_us.sum) / 1e6) s"' \
    "$tmp/seq.json"
check '.latency_us.write.count == 8 and
       .latency_us.write.sum - .timing.host_stall_us.sum < 500000' "$tmp/seq.json"
check '.deadline.aborted == 0' "$tmp/seq.json"
