#!/bin/sh
# nbdkit-ftl: draw the files of ftl-bench with gnuplot.
#
#   bench/plot.sh TIMELINE.csv [HISTOGRAM.csv] [OUTDIR]
#
# writes OUTDIR/waf-timeline.png (interval WAF against drive writes, one
# line per workload, with the steady-state WAF dashed in the same colour)
# and, given the histogram file, OUTDIR/erase-counts.png (erase counts
# per workload: the mean as a bar, minimum to maximum as an error bar).
# OUTDIR defaults to the directory of TIMELINE.csv.
#
# Needs gnuplot with the pngcairo terminal; on Debian:
#   apt-get install -y --no-install-recommends gnuplot-nox

set -e

usage () {
    echo "usage: $0 TIMELINE.csv [HISTOGRAM.csv] [OUTDIR]" >&2
    exit 2
}

[ $# -ge 1 ] && [ $# -le 3 ] || usage
timeline=$1
histogram=
outdir=$(dirname "$timeline")
case $# in
    2) case $2 in *.csv) histogram=$2 ;; *) outdir=$2 ;; esac ;;
    3) histogram=$2; outdir=$3 ;;
esac

if ! command -v gnuplot >/dev/null 2>&1; then
    echo "$0: gnuplot is not installed (Debian: apt-get install -y" \
         "--no-install-recommends gnuplot-nox)" >&2
    exit 1
fi
for f in "$timeline" $histogram; do
    [ -r "$f" ] || { echo "$0: cannot read $f" >&2; exit 1; }
done
mkdir -p "$outdir"

# The workloads in the order they ran.  Names have no spaces or quotes.
workloads=$(awk -F, 'NR > 1 && !seen[$1]++ { printf "%s ", $1 }' "$timeline")
[ -n "$workloads" ] || { echo "$0: $timeline has no rows" >&2; exit 1; }

gnuplot <<EOF
set terminal pngcairo size 1000,600 noenhanced
set output "$outdir/waf-timeline.png"
set datafile separator comma
set title "Write amplification over time (interval: every 1/20 drive write; dashed: steady state, last half)"
set xlabel "drive writes after the fill"
set ylabel "WAF (media pages / host pages)"
set key outside right top
set grid
set yrange [0:*]
workloads = "$workloads"
n = words (workloads)
matching (i) = strcol (1) eq word (workloads, i) ? column (2) : NaN
plot for [i = 1:n] "$timeline" using (matching (i)):3 \
       with lines lc i lw 1.5 title word (workloads, i), \
     for [i = 1:n] "$timeline" using (matching (i)):4 \
       with lines lc i dt 2 notitle
EOF
echo "wrote $outdir/waf-timeline.png"

[ -n "$histogram" ] || exit 0
gnuplot <<EOF
set terminal pngcairo size 800,500 noenhanced
set output "$outdir/erase-counts.png"
set datafile separator comma
set title "Erase-count histogram after each workload"
set xlabel "erase count"
set ylabel "erase blocks"
set key top left
set grid ytics
set yrange [0:*]
set style fill solid 0.3
workloads = system("grep -v '^#' '$histogram' | tail -n +2 | cut -d, -f1 | uniq | tr '\\n' ' '")
n = words(workloads)
matching (i) = strcol(1) eq word(workloads, i) ? (\$2 + \$3) / 2.0 : NaN
plot for [i = 1:n] "$histogram" using (matching (i)):4 with linespoints \
       lc i title word(workloads, i)
EOF
echo "wrote $outdir/erase-counts.png"
