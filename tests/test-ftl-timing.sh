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

run on timing=true program-latency=2ms read-latency=1ms write-cache=0
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
