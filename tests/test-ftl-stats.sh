#!/usr/bin/env bash
# nbdkit-ftl: stats=PATH holds the statistics as JSON: at start, after
# each flush, every stats-interval seconds while busy, and at shutdown.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"
uri="nbd+unix:///?socket=$sock"

members="geometry.page_size geometry.pages_per_block geometry.blocks
         geometry.logical_bytes host.write_pages host.read_pages
         host.trim_pages host.flushes media.program_pages media.read_pages
         media.erases gc.copied_pages gc.runs checkpoints mapped_pages waf
         wear.erase_min wear.erase_max wear.erase_mean blocks.free
         blocks.total deadline.requests deadline.expired deadline.handled
         deadline.reset deadline.aborted deadline.abort_all
         latency_us.read.p50 latency_us.write.p99 latency_us.trim.p999
         latency_us.flush.max"

# member NAME: print one member of the statistics file.
member ()
{
    jq -r ".$1" "$stats"
}

# check EXPR: assert a jq expression about the statistics file.
check ()
{
    if ! stats_wait "$stats" "$1"; then
        echo "$0: FAIL: $1"
        cat "$stats"
        exit 1
    fi
}

start_server "$sock" "$pid" file="$disk" size=64M stats="$stats" stats-interval=1

# Written as soon as the server is ready: valid JSON with every member.
cat "$stats"
for m in $members; do
    check ".$m | type == \"number\""
done
check '.geometry.page_size == 4096'
check '.geometry.pages_per_block == 256'
check '.geometry.logical_bytes == 67108864'
check '.host.write_pages == 0 and .mapped_pages == 0'
check '.blocks.total > 0 and .blocks.free <= .blocks.total'
check '.wear.erase_min <= .wear.erase_mean and .wear.erase_mean <= .wear.erase_max'
check '.gc.policy == "cost-benefit" and .readonly == false'
# The erase-count histogram covers every erase block.
check '.wear.histogram.first == .wear.erase_min and .wear.histogram.width >= 1'
check '(.wear.histogram.counts | add) == .blocks.total'
check '(.wear.histogram.counts | length) <= 16'

# After writes and a flush.
timeout 120 nbdsh -u "$uri" -c '
for n in range(300):
    h.pwrite(bytes([n % 251 + 1]) * 4096, n * 4096)
h.flush()
'
cat "$stats"
check '.host.write_pages == 300'
check '.mapped_pages == 300'
check '.host.flushes >= 1'
check '.media.program_pages >= 300'
# Nothing to collect yet on a fresh disk: every page programmed is a
# host page, so the write amplification is exactly 1.
check '.media.program_pages == 300 and .gc.copied_pages == 0'
check '.waf == 1'
check '.latency_us.write.count == 300 and .latency_us.write.max > 0'
check '.latency_us.write.p50 <= .latency_us.write.p99 and .latency_us.write.p99 <= .latency_us.write.max'
check '.deadline.requests >= 301 and .deadline.expired == 0'

# Without a flush the file catches up within a few intervals.
timeout 120 nbdsh -u "$uri" -c '
for n in range(300, 310):
    h.pwrite(b"\x01" * 4096, n * 4096)
'
for (( i = 0; i < 100; i++ )); do
    [ "$(member host.write_pages)" = 310 ] && break
    sleep 0.1
done
check '.host.write_pages == 310'

stop_server "$pid"

# A flush wakes the statistics thread, which rewrites the file at once:
# not within the flush, and not at the next interval (an hour away).
start_server "$sock" "$pid" file="$disk" stats="$stats" stats-interval=3600
flushes="$(member host.flushes)"
writes="$(member host.write_pages)"
timeout 120 nbdsh -u "$uri" -c 'h.pwrite(b"\x02" * 4096, 0); h.flush()'
check ".host.flushes == $flushes + 1 and .host.write_pages == $writes + 1"
stop_server "$pid"

# At shutdown the file is written a final time (and the periodic writer
# does not hold up the shutdown, however long its interval).
start_server "$sock" "$pid" file="$disk" stats="$stats" stats-interval=3600
reads="$(member host.read_pages)"
timeout 120 nbdsh -u "$uri" -c 'h.pread(5 * 4096, 0)'
stop_server "$pid"
cat "$stats"
check ".host.read_pages >= $reads + 5"

# A whole-device trim unmaps everything.
start_server "$sock" "$pid" file="$disk" stats="$stats"
timeout 120 nbdsh -u "$uri" -c '
h.trim(h.get_size(), 0)
h.flush()
'
cat "$stats"
check '.host.trim_pages > 0'
check '.mapped_pages == 0'
stop_server "$pid"
check '.mapped_pages == 0'
