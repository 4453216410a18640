#!/usr/bin/env bash
# nbdkit-ftl: ftlctl replay reads traces in each format (nbdkit's log
# filter, blkparse text, MSR Cambridge / SNIA CSV), reports malformed
# lines with their line numbers, says what it skipped and why, and ends
# with the plugin's statistics JSON.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq gnuplot
: "${FTLCTL:=../tools/ftlctl}"

make_tmpdir

# fails CMD...: the command must fail (status 1 or 2).
fails ()
{
    local r=0
    "$@" >"$tmp/out" 2>"$tmp/err" || r=$?
    if [ $r -eq 0 ]; then
        echo "$0: FAIL: succeeded: $*"; cat "$tmp/err"; exit 1
    fi
    cat "$tmp/err"
}

# expect FILE EXPR: a jq assertion on FILE.
expect ()
{
    if ! jq -e "$2" "$1" >/dev/null; then
        echo "$0: FAIL: $1: $2"; jq -c '{host, media}' "$1"; exit 1
    fi
}

### MSR Cambridge / SNIA CSV: 2000 requests, 4 KiB aligned, over 32 MiB
### of disk 1, a header, one request of disk 2, one malformed line.
msr="$tmp/trace.csv"
awk 'BEGIN {
    srand(5); ts = 0; w = 0; r = 0
    print "Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime"
    for (i = 0; i < 2000; i++) {
        ts += 10000 + int(rand() * 1000)          # about 1 ms apart
        # Windows filetime (100 ns units) of a day in 2008, as text:
        # awk numbers are doubles.
        off = int(rand() * 8192) * 4096
        if (rand() < 0.7) { type = "Write"; w += 2 } else { type = "Read"; r += 2 }
        printf "12816637%010d,hm,1,%s,%d,8192,%d\n", ts, type, off, 500 + int(rand() * 100)
        if (i == 1000) print "128166379999999999,hm,1,Write,oops,4096,1"
    }
    printf "12816637%010d,hm,2,Write,0,4096,1\n", ts + 1
    printf "%d %d\n", w, r > "/dev/stderr"
}' > "$msr" 2> "$tmp/msr-pages"
read -r wpages rpages < "$tmp/msr-pages"

"$FTLCTL" replay --disk 1 "$msr" size=64M > "$tmp/msr.json" 2> "$tmp/msr.err"
cat "$tmp/msr.err"
expect "$tmp/msr.json" ".host.write_pages == $wpages and .host.read_pages == $rpages"
expect "$tmp/msr.json" '.media.program_pages > 0 and .geometry.logical_bytes == 67108864'
grep -q "trace.csv:1003: bad Offset 'oops'" "$tmp/msr.err"
grep -q '^replay: .*trace.csv (msr): 2000 requests' "$tmp/msr.err"
grep -q '^  1 malformed lines' "$tmp/msr.err"
grep -q '^  1 another disk of the trace' "$tmp/msr.err"

# The same members as the plugin's stats file.
stats="$tmp/live-stats.json"
nbdkit -U - "$FTL_PLUGIN" file="$tmp/d0.img" size=64M stats="$stats" --run true
[ "$(jq -c '[paths] | sort' "$stats")" = "$(jq -c '[paths] | sort' "$tmp/msr.json")" ]

# --strict stops at the malformed line; a bad key or format is refused.
fails "$FTLCTL" replay --strict --disk 1 "$msr"
grep -q "trace.csv:1003: bad Offset" "$tmp/err"
fails "$FTLCTL" replay "$msr" gc=fifo
grep -q 'gc must be cost-benefit or greedy: fifo' "$tmp/err"
fails "$FTLCTL" replay "$msr" frobnicate=1
grep -q "unknown key 'frobnicate'" "$tmp/err"
fails "$FTLCTL" replay "$msr" ecc-bits=0
grep -q 'ecc-bits must be from 1 to 8192: 0' "$tmp/err"
fails "$FTLCTL" replay "$msr" channels=64 dies=128
grep -q 'channels x dies must be at most 4096: 64 x 128' "$tmp/err"

# The error model's keys, as the plugin's: bits corrected by ECC on
# the reads of the trace, none without the model.
"$FTLCTL" replay -q --disk 1 "$msr" size=64M > "$tmp/clean.json" 2>/dev/null
expect "$tmp/clean.json" '.media.corrected_bits == 0'
"$FTLCTL" replay -q --disk 1 "$msr" size=64M errors=true seed=7 \
    error-scale=20 > "$tmp/aged.json" 2>/dev/null
expect "$tmp/aged.json" '.media.corrected_bits > 0 and .media.uncorrectable == 0'

# The timing model's preset, as the plugin's: its values (the keys
# given over them: 8 channels of 2 dies) and its SLC cache; an unknown
# one is refused.
"$FTLCTL" replay -q --disk 1 "$msr" size=64M model=sata-qlc dies=2 \
    > "$tmp/qlc.json" 2>/dev/null
expect "$tmp/qlc.json" '.timing.program_ns == 3300000 and .timing.dies == 16 and .slc.size_pages > 0'
fails "$FTLCTL" replay "$msr" model=nosuch
grep -q "model: unknown drive model 'nosuch' (known: sata-tlc" "$tmp/err"
fails "$FTLCTL" replay --format=vhd "$msr"
echo 'hello world' > "$tmp/junk"
fails "$FTLCTL" replay "$tmp/junk"
grep -q 'junk:1: cannot tell the trace format' "$tmp/err"

# Beyond the disk: skipped and counted, or folded in with --wrap.
"$FTLCTL" replay --disk 1 "$msr" size=64M op=28 > /dev/null 2>&1
"$FTLCTL" replay -f msr --disk 1 "$msr" size=16M pages-per-block=32 > /dev/null 2> "$tmp/err"
grep -q 'beyond the end of the disk' "$tmp/err"
"$FTLCTL" replay --disk 1 --wrap "$msr" size=16M pages-per-block=32 > "$tmp/wrap.json" 2> "$tmp/err"
grep -q 'folded into the disk' "$tmp/err"
expect "$tmp/wrap.json" ".host.write_pages == $wpages"

# A timeline of the replay, in trace time, and its plot.
"$FTLCTL" replay -q --disk 1 "$msr" size=64M stats-log="$tmp/t.jsonl" \
    stats-interval=0.5 stats="$tmp/s.json"
[ "$(wc -l < "$tmp/t.jsonl")" -ge 4 ]
jq -e -s '.[-1].stats.host.write_pages == '"$wpages"' and
          (map(.elapsed_s) | . == sort)' "$tmp/t.jsonl" >/dev/null
expect "$tmp/s.json" ".host.write_pages == $wpages"
"$FTLCTL" plot -o "$tmp/t.png" "$tmp/t.jsonl" >/dev/null
[ -s "$tmp/t.png" ]

### blkparse: queue events (Q) are the requests; other actions, a
### message line and the closing summary are not.
cat > "$tmp/trace.blk" <<'BLK'
  8,0    3        1     0.000000000  4162  Q  WS 2048 + 64 [jbd2/sda3-8]
  8,0    3        2     0.000001000  4162  G  WS 2048 + 64 [jbd2/sda3-8]
  8,0    3        3     0.000002000  4162  D  WS 2048 + 64 [jbd2/sda3-8]
  8,0    3        4     0.000300000     0  C  WS 2048 + 64 [0]
  8,0    0        5     0.001000000  4163  Q FWFS 4096 + 8 [jbd2/sda3-8]
  8,0    0        0     0.001100000     0  m   N cfq4163 alloced
  8,0    1        6     0.002000000  4200  Q   R 0 + 256 [cat]
  8,0    1        7     0.003000000  4200  Q   D 8192 + 2048 [fstrim]
  8,0    1        8     0.004000000  4200  Q  FN [kworker/1:1]
  8,0    1        9     0.005000000  4200  Q  WS 100 + 1 [dd]
  8,0    1       10     0.006000000  4200  Q  WS 5000 x 8 [dd]
CPU0 (8,0):
 Reads Queued:           1,      128KiB	 Writes Queued:           3,       36KiB
Total (8,0):
 Reads Queued:           1,      128KiB	 Writes Queued:           3,       36KiB
BLK
"$FTLCTL" replay "$tmp/trace.blk" > "$tmp/blk.json" 2> "$tmp/blk.err"
cat "$tmp/blk.err"
# Writes: 32 KiB (8 pages), 4 KiB (1), 512 bytes at 51200 (1 page);
# read 128 KiB (32); trim 1 MiB (256); flushes: a preflush and FN.
expect "$tmp/blk.json" '.host.write_pages == 10 and .host.read_pages == 32 and
                        .host.trim_pages == 256 and .host.flushes == 2'
grep -q "trace.blk:11: expected 'SECTOR + SECTORS'" "$tmp/blk.err"
grep -q '^  1 malformed lines' "$tmp/blk.err"

### nbdkit's log filter: a session recorded live gives the same host
### counters when replayed; a request that failed is not replayed.
log="$tmp/session.log"
nbdkit -U - --filter=log "$FTL_PLUGIN" file="$tmp/live.img" size=64M \
    stats="$tmp/live.json" logfile="$log" \
    --run 'nbdsh -u "$uri" -c "
buf = b\"\\x5a\" * 65536
for i in range(64):
    h.pwrite(buf, i * 1048576)
h.pwrite(b\"y\" * 1000, 5000, nbd.CMD_FLAG_FUA)
h.pread(131072, 0)
h.trim(1048576, 2097152)
h.zero(65536, 4194304)
h.zero(65536, 5242880, nbd.CMD_FLAG_NO_HOLE)
h.flush()
h.cache(65536, 0)
"'
head -12 "$log"
"$FTLCTL" replay "$log" size=64M > "$tmp/log.json" 2> "$tmp/log.err"
cat "$tmp/log.err"
for m in host.write_pages host.read_pages host.trim_pages host.flushes \
         mapped_pages; do
    [ "$(jq ".$m" "$tmp/log.json")" = "$(jq ".$m" "$tmp/live.json")" ] || {
        echo "$0: FAIL: $m differs: replay $(jq ".$m" "$tmp/log.json")," \
             "live $(jq ".$m" "$tmp/live.json")"; exit 1; }
done
grep -q '(nbdkit-log): 71 requests' "$tmp/log.err"

# A failed request and a malformed line, in a log written by hand.
cat > "$tmp/failed.log" <<'LOG'
2026-12-04 18:08:31.666755 Ready thread_model=3
2026-12-04 18:08:31.789595 connection=1 Connect export="" tls=0 size=0x4000000
2026-12-04 18:08:31.790745 connection=1 Write id=1 offset=0x2000 count=0x1000 fua=0 ...
2026-12-04 18:08:31.790780 connection=1 ...Write id=1 return=0
2026-12-04 18:08:31.790800 connection=1 Write id=2 offset=0x3000 count=0x1000 fua=0 ...
2026-12-04 18:08:31.790900 connection=1 ...Write id=2 return=-1 (Input/output error)
2026-12-04 18:08:31.791000 connection=1 Write id=3 offset=0x4000 fua=0 ...
2026-12-04 18:08:31.791100 connection=1 Flush id=4 ...
LOG
"$FTLCTL" replay "$tmp/failed.log" > "$tmp/failed.json" 2> "$tmp/err"
cat "$tmp/err"
expect "$tmp/failed.json" '.host.write_pages == 1 and .host.flushes == 1'
grep -q 'failed.log:7: Write without offset= and count=' "$tmp/err"
grep -q '^  1 failed when recorded' "$tmp/err"
