#!/usr/bin/env bash
# nbdkit-ftl: fio random writes from two connections, three times the
# size of the disk so that garbage collection runs, with every block
# verified.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires fio jq timeout

make_tmpdir
export tmp

# Each job owns half of the 64 MiB disk and writes it three times over
# (--loops=3), verifying after each pass; --fsync=64 sends flushes.
# fio runs in $tmp so that nothing it writes is left behind.
timeout 600 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=64M op=28 \
    stats="$tmp/stats.json" \
    --run '
        cd "$tmp"
        fio --name=ftl --ioengine=nbd --uri="$uri" \
            --rw=randwrite --bs=4k --iodepth=8 \
            --numjobs=2 --size=32M --offset_increment=32M --loops=3 \
            --fsync=64 \
            --verify=crc32c --do_verify=1 --verify_fatal=1 \
            --verify_state_save=0 \
            --group_reporting
    '

cat "$tmp/stats.json"
jq -e '.host.write_pages == 2 * 3 * 8192' "$tmp/stats.json"
jq -e '.gc.runs > 0 and .media.erases > 0' "$tmp/stats.json"
# Most victims are reclaimed by the background thread, not by writes.
jq -e '.gc.background_runs > 0 and .gc.background_runs <= .gc.runs' \
    "$tmp/stats.json"
# Where the host's pages went: the write cache replaced some in RAM
# (coalesced), sent the others to the log (destaged; closing destaged
# the last), and trim dropped none here.
jq -e '.host.write_pages == .cache.destaged_pages + .cache.coalesced_pages
       + .cache.dropped_pages and .cache.dirty_bytes == 0 and
       .cache.destaged_pages > 0' "$tmp/stats.json"
# Write amplification.  Every page programmed is a destaged page, a GC
# copy, a wear-leveling move, or a copy that lost its race with a host
# write of the same page (a few: 13 of 49670 pages in one run; no trims
# here).  Whether GC copies anything depends on timing: each loop
# rewrites the same offsets, so blocks drain whole when the background
# GC keeps ahead (WAF 1.000 seen in CI) and it copies a little when it
# falls behind.  Over six runs WAF was 1.042 .. 1.104, once 1.000:
#   for i in $(seq 6); do
#     make -C tests check TESTS=test-ftl-fio.sh
#     grep '"waf"' tests/test-ftl-fio.sh.log
#   done
# Above 1.25 (more than twice that spread above the highest) GC copies
# far more than it did.
jq -e '.media.program_pages >=
       .cache.destaged_pages + .gc.copied_pages + .wl.moved_pages and
       .waf < 1.25' "$tmp/stats.json"
jq -e '.mapped_pages == 16384' "$tmp/stats.json"
