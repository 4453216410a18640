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
# The plugin's model=sata-qlc preset is that drive: its SLC cache is
# scaled to the disk (SIZE * 6/1000 static, up to SIZE * 36/1000
# dynamic), programs of its QLC dies give 80 MB/s over its 8 dies and
# SLC programs run at the host link's speed.  EXTRA adds keys (say,
# slc-static=0 to see the drive without its cache).
#
# It runs in real time: bench/model-check.sh says what this machine's
# host path allows (the plugin untimed), which caps the first figure.
#
# Environment: SIZE (default 16G), LOG_MS (100), SLC_MBS
# (530), NATIVE_MBS (80), EXTRA, FTL_PLUGIN (the built plugin).  Needs
# nbdkit, fio, gnuplot, jq and awk.

set -e

size=${SIZE:-16G}
log_ms=${LOG_MS:-100}
slc_mbs=${SLC_MBS:-530}
native_mbs=${NATIVE_MBS:-80}
here=$(cd "$(dirname "$0")" && pwd)
plugin=${FTL_PLUGIN:-$here/../plugin/.libs/nbdkit-ftl-plugin.so}
outdir=${1:-$(mktemp -d /tmp/ftl-cliff.XXXXXX)}

for t in nbdkit fio gnuplot jq awk; do
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
keys="file=$outdir/disk.img size=$size model=sata-qlc stats=$outdir/stats.json"
keys="$keys ${EXTRA:-}"
echo "cliff: disk $size, SLC cache $((cache / 1000000)) MB (static $((static / 1000000)) MB), writing $((total / 1000000)) MB"
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
# time, and the MB written so far.
sort -t, -k1,1n "$log" | awk -F, -v s=1 -v ms=$log_ms '
    { bin = int ($1 / ms); bytes[bin] += $4; if (bin > last) last = bin }
    END {
        # (the last window is cut short by the end of the run)
        for (b = 0; b < last; b++) {
            done += bytes[b]
            printf "%.3f %.1f %.1f\n", (b + 1) * ms / 1000,
                bytes[b] / (ms / 1000) / 1e6 * s, done / 1e6
        }
    }' > "$outdir/cliff.dat"

if [ "$(wc -l < "$outdir/cliff.dat")" -lt 4 ]; then
    echo "$0: the run took less than 4 windows of $log_ms ms: raise SIZE or lower LOG_MS" >&2
    exit 1
fi

# Before: the rate until 80% of the cache was written; after: from 110%
# of it to the end (the transition aside).  Rates from the bytes and
# times at those points, not from the windows.
read -r before after <<EOF
$(sort -t, -k1,1n "$log" | awk -F, -v c=$cache -v s=1 '
    { done += $4; t = $1 }
    !t1 && done >= 0.8 * c { t1 = $1; d1 = done }
    !t2 && done >= 1.1 * c { t2 = $1; d2 = done }
    END { printf "%.1f %.1f\n", d1 / (t1 / 1000) / 1e6 * s,
                 (done - d2) / ((t - t2) / 1000) / 1e6 * s }')
EOF

gnuplot <<EOF
set terminal pngcairo size 1000,500 noenhanced
set output "$outdir/cliff.png"
set title "Sequential write of 1.5 x the SLC cache (model=sata-qlc, cache scaled to $size)"
set xlabel "time (s)"
set ylabel "write MB/s"
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
