#!/bin/bash
# nbdkit-ftl: the SLC cache's write cliff, measured and drawn.
#
#   bench/cliff.sh [OUTDIR]
#
# Writes 1.5 times the SLC cache of a QLC drive sequentially with fio
# (256 KiB writes, queue depth 4) through the plugin with the timing
# model on, logs each write's completion, draws the throughput over
# LOG_MS windows with gnuplot to
# OUTDIR/cliff.png (default: a new directory under /tmp), and prints the
# throughput into the cache and after it, against the published figures.
#
# The drive imitated: Samsung 870 QVO 1TB (SATA, QLC): sequential writes
# up to 530 MB/s into its "Intelligent TurboWrite" SLC cache, 80 MB/s
# once the cache is full (PC Gamer, "Samsung 870 QVO 1TB SSD review",
# 2020, https://www.pcgamer.com/samsung-870-qvo-1tb-ssd-review-benchmarks);
# a 42 GB cache, 6 GB static and up to 36 GB dynamic (Samsung's 870 QVO
# data sheet; the 6 GB default region also in KitGuru's "Samsung SSD 870
# QVO 4TB review", 2020).
# The cache is scaled to the disk: SIZE * 42/1000 (6/1000 static, the
# rest dynamic).  The model's page latencies are those figures at the
# page size, for one frontier writing one block at a time:
#
#   slc-program     = PAGE / (530 MB/s / SCALE)
#   program-latency = PAGE / (80 MB/s / SCALE)
#
# SCALE slows the modeled drive down so that the host (nbd, checksums,
# copies) keeps up: a page of 16 KiB at 530 MB/s is 31 us, not much more
# than what the software costs per page on a small machine.  The rates
# measured are multiplied by SCALE before they are compared (both sides
# of the cliff alike, so their ratio is untouched).  SCALE=1 runs in real
# time.
#
# Environment: SIZE (default 4G), PAGE (16384), PPB (64), SCALE (16),
# LOG_MS (200), SLC_MBS (530), NATIVE_MBS (80), FTL_PLUGIN (the built
# plugin).  Needs nbdkit, fio, gnuplot and awk.

set -e

size=${SIZE:-4G}
page=${PAGE:-16384}
ppb=${PPB:-64}
scale=${SCALE:-16}
log_ms=${LOG_MS:-200}
slc_mbs=${SLC_MBS:-530}
native_mbs=${NATIVE_MBS:-80}
here=$(cd "$(dirname "$0")" && pwd)
plugin=${FTL_PLUGIN:-$here/../plugin/.libs/nbdkit-ftl-plugin.so}
outdir=${1:-$(mktemp -d /tmp/ftl-cliff.XXXXXX)}

for t in nbdkit fio gnuplot awk; do
    command -v $t >/dev/null ||
        { echo "$0: $t is not installed" >&2; exit 1; }
done
[ -r "$plugin" ] || { echo "$0: no plugin at $plugin (build first)" >&2; exit 1; }
mkdir -p "$outdir"

bytes=$(numfmt --from=iec "$size")
static=$((bytes * 6 / 1000))
dynamic=$((bytes * 36 / 1000))
cache=$((static + dynamic))
total=$((cache * 3 / 2 / 1048576 * 1048576))
# ns per page: PAGE bytes at MB/s / SCALE.
slc_ns=$(awk -v p=$page -v r=$slc_mbs -v s=$scale 'BEGIN { printf "%d", p * 1000 * s / r }')
qlc_ns=$(awk -v p=$page -v r=$native_mbs -v s=$scale 'BEGIN { printf "%d", p * 1000 * s / r }')
erase_ns=$((3500000 * scale))

keys="file=$outdir/disk.img size=$size page-size=$page pages-per-block=$ppb
      write-cache=0 streams=1 channels=1 dies=1 cell-bits=4
      read-latency=$((60 * scale))us program-latency=$((qlc_ns / 1000)).$(printf %03d $((qlc_ns % 1000)))us
      erase-latency=$((erase_ns / 1000))us slc-program=$((slc_ns / 1000)).$(printf %03d $((slc_ns % 1000)))us
      slc-read=$((30 * scale))us
      slc-static=$static slc-dynamic=$dynamic stats=$outdir/stats.json"
echo "cliff: disk $size, SLC cache $((cache / 1000000)) MB (static $((static / 1000000)) MB), writing $((total / 1000000)) MB"
echo "cliff: page $page B, slc-program ${slc_ns} ns, program-latency ${qlc_ns} ns (time scale 1/$scale)"
echo "cliff: nbdkit ftl $(echo $keys)"

rm -f "$outdir/disk.img" "$outdir"/cliff_*.log
# shellcheck disable=SC2086
(cd "$outdir" &&
 timeout 1800 nbdkit -U - "$plugin" $keys --run "
    fio --name=cliff --ioengine=nbd --uri=\"\$uri\" --rw=write --bs=256K \
        --iodepth=4 --size=$total --write_lat_log=cliff \
        --output=fio.txt")
rm -f "$outdir/disk.img"
log=$(ls "$outdir"/cliff_clat*.log | head -1)

# fio logs each write's completion (ms since the start) and its size:
# the bytes completed in each LOG_MS window give the throughput over
# time (x SCALE: as the drive would do it), and the MB written so far.
sort -t, -k1,1n "$log" | awk -F, -v s=$scale -v ms=$log_ms '
    { bin = int ($1 / ms); bytes[bin] += $4; if (bin > last) last = bin }
    END {
        for (b = 0; b <= last; b++) {
            done += bytes[b]
            printf "%.3f %.1f %.1f\n", (b + 1) * ms / 1000,
                bytes[b] / (ms / 1000) / 1e6 * s, done / 1e6
        }
    }' > "$outdir/cliff.dat"

# Before: the rate until 80% of the cache was written; after: from 110%
# of it to the end (the transition aside).  Rates from the bytes and
# times at those points, not from the windows.
read -r before after <<EOF
$(sort -t, -k1,1n "$log" | awk -F, -v c=$cache -v s=$scale '
    { done += $4; t = $1 }
    !t1 && done >= 0.8 * c { t1 = $1; d1 = done }
    !t2 && done >= 1.1 * c { t2 = $1; d2 = done }
    END { printf "%.1f %.1f\n", d1 / (t1 / 1000) / 1e6 * s,
                 (done - d2) / ((t - t2) / 1000) / 1e6 * s }')
EOF

gnuplot <<EOF
set terminal pngcairo size 1000,500 noenhanced
set output "$outdir/cliff.png"
set title "Sequential write of 1.5 x the SLC cache (870 QVO-like, cache scaled to $size, time scale 1/$scale)"
set xlabel "time (s, modeled at 1/$scale speed)"
set ylabel "write MB/s (x $scale)"
set grid
set yrange [0:$((slc_mbs * 6 / 5))]
set arrow from graph 0, first $slc_mbs to graph 1, first $slc_mbs nohead dt 2 lc rgb "gray"
set arrow from graph 0, first $native_mbs to graph 1, first $native_mbs nohead dt 2 lc rgb "gray"
set label "published: $slc_mbs MB/s into the SLC cache" at graph 0.55, first $slc_mbs offset 0,0.7
set label "published: $native_mbs MB/s after it" at graph 0.55, first $native_mbs offset 0,0.7
plot "$outdir/cliff.dat" using 1:2 with lines lw 2 title "fio writes completed per $log_ms ms"
EOF

jq -r '"stats: slc.size_pages \(.slc.size_pages), slc.used_pages \(.slc.used_pages), slc.folded_pages \(.slc.folded_pages), slc.exhausted \(.slc.exhausted), waf \(.waf)"' "$outdir/stats.json" 2>/dev/null || :
awk -v b=$before -v a=$after -v pb=$slc_mbs -v pa=$native_mbs 'BEGIN {
    printf "cliff: into the SLC cache %.0f MB/s (published %d: %.0f%%)\n", b, pb, 100 * b / pb
    printf "cliff: after the cache    %.0f MB/s (published %d: %.0f%%)\n", a, pa, 100 * a / pa
}'
echo "cliff: plot $outdir/cliff.png, samples $outdir/cliff.dat"
