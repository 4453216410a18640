#!/usr/bin/env bash
# nbdkit-ftl: throughput, latency, CPU time and memory of the plugin
# next to nbdkit's own file and memory plugins.
#
# Three servers run side by side on Unix sockets: our plugin (ftl), the
# file plugin on an image in the same directory (file), and the memory
# plugin (memory, the ceiling of the NBD path).  The same fio job runs
# through fio's nbd engine against each in turn, ftl file memory, then
# memory file ftl in the next repeat, and so on, so that a burst of
# load from elsewhere on the machine hits the three alike and no server
# always runs first.  Each figure
# is the median of the repeats, with the spread (min..max) next to it.
#
#   per repeat:  fresh ftl image, filled  -> reads, sequential write
#                fresh ftl image          -> random writes before GC
#                same image, filled, then two drive writes of random
#                4 KiB writes (GC running) -> steady-state random write
#
# The floor of the server's CPU per request: what memory's server
# spends on the NBD path for the same workload, plus the library's own
# work for a request of the same kind (bench/ftl-ops --as-plugin on a
# disk of the same size, once per repeat); the table gives the ftl
# server's CPU per request against it, and the idle CPU per request.
#
# See bench/README.md.  "perf.sh --memory" reports the plugin's memory
# use and open time instead.

set -euo pipefail

prog="${0##*/}"
here="$(cd "$(dirname "$0")" && pwd)"

usage ()
{
    cat <<EOF
Usage: $prog [OPTION]...
Run fio through nbdkit against the ftl, file and memory plugins and print
a Markdown table: median IOPS and bandwidth with their spread, ratios to
the file and memory plugins, completion latency, CPU time per GiB, peak
RSS; and where the machine's CPU time went per request (the server,
fio, the rest, idle), with the server's share that the goals against
memory leave, and the server's CPU per request against its floor (the
NBD path, memory's server, plus the library's own work, bench/ftl-ops).

  --dir DIR          where the images go (default: \$TMPDIR unless it is
                     tmpfs, else the build tree); a private directory is
                     created inside and removed at exit
  --size SIZE        disk size, e.g. 1G (default 1G; --quick: 256M)
  --runtime TIME     seconds per fio run, fio syntax (default 5; --quick: 1)
  --repeat N         repeats of the whole set (default 3; --quick: 1)
  --quick            a short run for smoke testing (about 1 minute)
  --workloads LIST   comma list of workloads (default: all; see --list)
  --list             list the workloads and exit
  --json DIR         keep fio's JSON output of every run in DIR
  --plugin PATH      the plugin (default: the one in this build tree)
  --ftl-args ARGS    more KEY=VALUE parameters for the ftl server, e.g.
                     "write-cache=0" (words split on spaces)
  --memory           instead: resident memory of the plugin for 1, 4 and
                     16 GiB disks and the open time of the largest
  --memory-sizes L   comma list of sizes for --memory (default 1G,4G,16G)
  -h, --help         this text
EOF
}

die () { echo "$prog: $*" >&2; exit 1; }

# ---- workloads ------------------------------------------------------
#
# name|group|description|fio options[|ftl keys]
#   group F: filled disk; group P: fresh disk, before garbage collection
#   starts (the volume is bounded, see io_size below); group S: steady
#   state.  @S@ is replaced by the disk size in bytes, @S8@, @S4@ and
#   @S16@ by a fraction of it.  The ftl keys, if any, are given to the
#   ftl server for that workload alone (restarted on the same image).

workloads_table='
seq-read|F|sequential read 1 MiB, iodepth 16|--rw=read --bs=1M --iodepth=16 --time_based
rand-read-qd1|F|random read 4 KiB, iodepth 1|--rw=randread --bs=4k --iodepth=1 --time_based
rand-read-qd16|F|random read 4 KiB, iodepth 16|--rw=randread --bs=4k --iodepth=16 --time_based
rand-read-4conn|F|random read 4 KiB, iodepth 16, 4 connections|--rw=randread --bs=4k --iodepth=16 --numjobs=4 --time_based
seq-write|F|sequential write 1 MiB, iodepth 16, over a full disk|--rw=write --bs=1M --iodepth=16 --time_based
seq-write-fsync64|F|sequential write 1 MiB, iodepth 16, over a full disk, a flush every 64 MiB|--rw=write --bs=1M --iodepth=16 --fsync=64 --time_based
seq-write-unsynced|F|sequential write 1 MiB, iodepth 16, over a full disk, ftl with sync=false|--rw=write --bs=1M --iodepth=16 --time_based|sync=false
rand-write-qd1|P|random write 4 KiB, iodepth 1, before GC|--rw=randwrite --bs=4k --iodepth=1 --io_size=@S8@
rand-write-qd16|P|random write 4 KiB, iodepth 16, before GC|--rw=randwrite --bs=4k --iodepth=16 --io_size=@S4@
rand-write-4conn|P|random write 4 KiB, iodepth 16, 4 connections, before GC|--rw=randwrite --bs=4k --iodepth=16 --numjobs=4 --io_size=@S16@
rand-write-fsync32|P|random write 4 KiB, iodepth 16, flush every 32 writes|--rw=randwrite --bs=4k --iodepth=16 --fsync=32 --io_size=@S4@
rand-write-steady|S|random write 4 KiB, iodepth 16, steady state (full disk, GC running)|--rw=randwrite --bs=4k --iodepth=16 --norandommap --time_based
'

servers=(ftl file memory)

wl_field () # NAME FIELD(1-5)
{
    local line
    line="$(grep "^$1|" <<<"$workloads_table")" || return 1
    cut -d'|' -f"$2" <<<"$line"
}

all_workloads ()
{
    grep -v '^$' <<<"$workloads_table" | cut -d'|' -f1
}

# ---- options --------------------------------------------------------

dir=
size=
runtime=
repeat=
quick=false
selected=
json_dir=
plugin=
mode=perf
memory_sizes=1G,4G,16G
ftl_args=()

while [ $# -gt 0 ]; do
    case "$1" in
        --dir) dir="${2:?--dir needs a value}"; shift 2 ;;
        --size) size="${2:?--size needs a value}"; shift 2 ;;
        --runtime) runtime="${2:?--runtime needs a value}"; shift 2 ;;
        --repeat) repeat="${2:?--repeat needs a value}"; shift 2 ;;
        --quick) quick=true; shift ;;
        --workloads) selected="${2:?--workloads needs a value}"; shift 2 ;;
        --list)
            grep -v '^$' <<<"$workloads_table" |
                awk -F'|' '{ printf "%-20s %s\n", $1, $3 }'
            exit 0 ;;
        --json) json_dir="${2:?--json needs a value}"; shift 2 ;;
        --plugin) plugin="${2:?--plugin needs a value}"; shift 2 ;;
        --ftl-args) read -r -a ftl_args <<<"${2?--ftl-args needs a value}"
                    shift 2 ;;
        --memory) mode=memory; shift ;;
        --memory-sizes) memory_sizes="${2:?--memory-sizes needs a value}"; shift 2 ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option '$1'" ;;
    esac
done

if $quick; then
    : "${size:=256M}" "${runtime:=1}" "${repeat:=1}"
else
    : "${size:=1G}" "${runtime:=5}" "${repeat:=3}"
fi

to_bytes ()
{
    local b
    b="$(numfmt --from=iec "$1" 2>/dev/null)" ||
        die "bad size '$1' (expected a number with an optional K, M, G or T)"
    echo "$b"
}

size_bytes="$(to_bytes "$size")"
[ "$size_bytes" -ge $((16 << 20)) ] || die "--size $size: at least 16M"
[ $((size_bytes % (1 << 20))) -eq 0 ] || die "--size $size: not a whole number of MiB"
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || die "--repeat $repeat: not a positive integer"

if [ -z "$selected" ]; then
    selected="$(all_workloads | paste -sd, -)"
fi
IFS=, read -r -a run_workloads <<<"$selected"
for w in "${run_workloads[@]}"; do
    wl_field "$w" 1 >/dev/null || die "unknown workload '$w' (see --list)"
done

# Build tree: the plugin is ../plugin/.libs from this script, or from
# the current directory when it is the build directory of bench/.
# shellcheck source=find-plugin.sh
source "$here/find-plugin.sh"
find_plugin
ftlctl="$builddir/tools/ftlctl"
ftl_ops="$builddir/bench/ftl-ops"

# A self-check build (./configure --enable-self-check, as ./check
# makes) checks the whole map at every checkpoint: its figures are
# not the product's.
self_check=false
if nbdkit --dump-plugin "$plugin" 2>/dev/null | grep -qx 'ftl_self_check=yes'; then
    self_check=true
    echo "$prog: warning: $plugin was built with --enable-self-check: its figures are not a release build's (rebuild with ./configure alone)" >&2
fi

for cmd in nbdkit fio jq numfmt awk; do
    command -v "$cmd" >/dev/null || die "$cmd not found"
done
if [ "$mode" = memory ]; then
    command -v nbdinfo >/dev/null || die "nbdinfo not found"
fi

fstype () { df --output=fstype "$1" | tail -n 1; }

if [ -z "$dir" ]; then
    if [ -n "${TMPDIR:-}" ] && [ -d "$TMPDIR" ] && [ "$(fstype "$TMPDIR")" != tmpfs ]; then
        dir="$TMPDIR"
    else
        dir="$builddir/bench"
    fi
fi
[ -d "$dir" ] || die "--dir $dir: no such directory"
if [ "$(fstype "$dir")" = tmpfs ]; then
    echo "$prog: warning: $dir is on tmpfs: the images are in memory, not on a disk" >&2
fi

if [ -n "$json_dir" ]; then
    mkdir -p "$json_dir" || die "--json $json_dir: cannot create it"
fi
work="$(mktemp -d "$dir/ftl-perf.XXXXXX")"
work="$(cd "$work" && pwd)"
declare -A pid_of=()            # server name -> nbdkit pid
declare -A hwm_kib=()           # server name -> highest VmHWM seen

cleanup ()
{
    local name
    set +e
    for name in "${!pid_of[@]}"; do
        kill -9 "${pid_of[$name]}" 2>/dev/null
    done
    wait 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Room: the ftl image (size * 1.28 and some metadata), the file image,
# and the memory plugin's RAM.
need_kib=$(( size_bytes / 1024 * 5 / 2 ))
[ "$mode" = memory ] && need_kib=$(( $(to_bytes "${memory_sizes##*,}") / 1024 / 2 ))
avail_kib="$(df -Pk "$work" | awk 'NR == 2 { print $4 }')"
[ "$avail_kib" -ge "$need_kib" ] ||
    die "$dir: $((avail_kib / 1024)) MiB free, need about $((need_kib / 1024)) MiB"

# ---- servers --------------------------------------------------------

uri_of () { echo "nbd+unix:///?socket=$work/$1.sock"; }

# start_server NAME PLUGIN ARGS...: nbdkit in the foreground of a
# background job; returns when it serves its socket.
start_server ()
{
    local name="$1" i
    shift
    rm -f "$work/$name.sock" "$work/$name.pid"
    nbdkit -f -U "$work/$name.sock" -P "$work/$name.pid" "$@" \
        2>>"$work/$name.log" &
    for (( i = 0; i < 1200; i++ )); do
        if [ -s "$work/$name.pid" ] && [ -S "$work/$name.sock" ]; then
            pid_of[$name]="$(cat "$work/$name.pid")"
            return 0
        fi
        if ! kill -0 $! 2>/dev/null; then
            cat "$work/$name.log" >&2
            die "nbdkit ($name) exited before serving"
        fi
        sleep 0.05
    done
    die "nbdkit ($name) did not start within 60 seconds"
}

status_kib () # NAME FIELD: a field of /proc/PID/status, in KiB
{
    awk -v f="$2:" '$1 == f { print $2 }' "/proc/${pid_of[$1]}/status"
}

note_hwm ()
{
    local h
    h="$(status_kib "$1" VmHWM)"
    if [ "${hwm_kib[$1]:-0}" -lt "$h" ]; then hwm_kib[$1]="$h"; fi
}

# stop_server NAME: clean shutdown, waiting for it (killed after 120 s).
stop_server ()
{
    local name="$1" pid i
    pid="${pid_of[$name]}"
    note_hwm "$name"
    kill -TERM "$pid"
    for (( i = 0; i < 1200; i++ )); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill -9 "$pid"
        die "nbdkit ($name) did not stop within 120 seconds"
    fi
    wait "$pid" 2>/dev/null || :
    unset "pid_of[$name]"
}

# start_ftl [KEY=VALUE...]: the ftl server, with --ftl-args and these.
start_ftl ()
{
    start_server ftl "$plugin" file="$work/ftl.img" size="$size_bytes" \
        stats="$work/stats.json" stats-interval=1 "${ftl_args[@]}" "$@"
}

# A fresh ftl image: stop the server, delete the image, start again.
fresh_ftl ()
{
    if [ -n "${pid_of[ftl]:-}" ]; then stop_server ftl; fi
    rm -f "$work/ftl.img" "$work/stats.json"
    start_ftl
}

cpu_ticks () # NAME: utime + stime of the server, in clock ticks
{
    # comm is "nbdkit": no spaces, so fields count from 1 as in proc(5).
    awk '{ print $14 + $15 }' "/proc/${pid_of[$1]}/stat"
}

# fio_run NAME OUTPUT FIO-OPTIONS...: one fio job against a server.
# fio runs in the work directory: the output of its exec_prerun and
# exec_postrun commands goes to JOBNAME.prerun.txt and .postrun.txt in
# the current directory.
fio_run ()
{
    local name="$1" out="$2"
    shift 2
    if ! (cd "$work" &&
          fio --name="${out##*/}" --ioengine=nbd --uri="$(uri_of "$name")" \
              --size="$size_bytes" --group_reporting \
              --output-format=json --output="$out" "$@" \
              >"$out.stdout" 2>"$out.stderr"); then
        cat "$out.stdout" "$out.stderr" >&2
        die "fio failed on $name: $*"
    fi
}

# stats_get EXPR: a value from the ftl statistics file, fresh: the
# plugin rewrites it every second while the counters change.
stats_get ()
{
    jq -r "$1" "$work/stats.json"
}
stats_settle () { sleep 1.5; }

sub_sizes ()
{
    sed -e "s/@S@/$size_bytes/g" \
        -e "s/@S4@/$((size_bytes / 4))/g" \
        -e "s/@S8@/$((size_bytes / 8))/g" \
        -e "s/@S16@/$((size_bytes / 16))/g" <<<"$1"
}

clk_tck="$(getconf CLK_TCK)"
results="$work/results.tsv"
: >"$results"

# The machine's CPU time and a server's, when fio's jobs start and end
# (fio runs it through exec_prerun and exec_postrun): "BUSY TOTAL
# SERVER" in clock ticks, BUSY and TOTAL over all CPUs (/proc/stat;
# idle and iowait are not busy), SERVER the server's user + system.
snap_script ()
{
    cat >"$work/snap" <<'EOF2'
#!/bin/sh
# snap FILE PID: append the machine's busy and total CPU ticks and
# those of process PID to FILE.
awk -v pid="$2" '$1 == "cpu" {
    t = 0
    for (i = 2; i <= 9; i++) t += $i
    getline s < ("/proc/" pid "/stat")
    split(s, f, " ")
    print t - $5 - $6, t, f[14] + f[15]
    exit
}' /proc/stat >>"$1"
EOF2
    chmod +x "$work/snap"
}
snap_script

# measure REP WORKLOAD NAME: run the workload against one server and
# append a row to the results: fio's figures; the server's CPU time
# over the whole run; and over the jobs' run alone (from the first
# job's start to the last one's end: not fio's own start), the
# machine's busy and total CPU time, the server's, and the jobs' own
# (the client's).
measure ()
{
    local rep="$1" wl="$2" name="$3" opts out t0 t1 pre post
    opts="$(sub_sizes "$(wl_field "$wl" 4)")"
    out="$work/$wl.$name.$rep.json"
    rm -f "$work/snap.pre" "$work/snap.post"
    t0="$(cpu_ticks "$name")"
    # shellcheck disable=SC2086
    fio_run "$name" "$out" --runtime="$runtime" \
        --percentile_list=50:99:99.9 \
        --exec_prerun="'$work/snap' '$work/snap.pre' ${pid_of[$name]}" \
        --exec_postrun="'$work/snap' '$work/snap.post' ${pid_of[$name]}" $opts
    t1="$(cpu_ticks "$name")"
    pre="$(head -n 1 "$work/snap.pre")"
    post="$(tail -n 1 "$work/snap.post")"
    jq -r --arg rep "$rep" --arg wl "$wl" --arg srv "$name" \
          --arg cpu "$(awk -v a="$t0" -v b="$t1" -v h="$clk_tck" \
                          'BEGIN { print (b - a) / h }')" \
          --arg window "$(awk -v a="$pre" -v b="$post" -v h="$clk_tck" '
                BEGIN {
                    split(a, x, " "); split(b, y, " ")
                    printf "%s %s %s", (y[1] - x[1]) / h, (y[2] - x[2]) / h,
                        (y[3] - x[3]) / h
                }')" '
        .jobs[0] as $j
        | (if $j.write.io_bytes > 0 then $j.write else $j.read end) as $d
        | [$rep, $wl, $srv,
           ($j.read.iops + $j.write.iops),
           ($j.read.bw_bytes + $j.write.bw_bytes),
           ($j.read.io_bytes + $j.write.io_bytes),
           ($d.clat_ns.percentile["50.000000"] // 0) / 1000,
           ($d.clat_ns.percentile["99.000000"] // 0) / 1000,
           ($d.clat_ns.percentile["99.900000"] // 0) / 1000,
           $cpu, ($window | split(" ") | map(tonumber))[],
           ($j.usr_cpu + $j.sys_cpu) / 100 * $j.job_runtime / 1000,
           ($j.read.total_ios + $j.write.total_ios)]
        | @tsv' "$out" >>"$results"
    if [ -n "$json_dir" ]; then cp "$out" "$json_dir/"; fi
    note_hwm "$name"
}

progress () { echo "$prog: $*" >&2; }

# ---- memory mode ----------------------------------------------------

now () { date +%s.%N; }
elapsed () { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", b - a }'; }
mib () { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# wait_answer NAME: until an NBD request to the server is answered.
wait_answer ()
{
    local i
    for (( i = 0; i < 6000; i++ )); do
        if nbdinfo --size "$(uri_of "$1")" >/dev/null 2>&1; then return 0; fi
        sleep 0.01
    done
    die "$1: no answer within 60 seconds"
}

memory_mode ()
{
    local sizes sz bytes t0 t1 rss_open hwm first=true
    local largest open_s ftlctl_s
    IFS=, read -r -a sizes <<<"$memory_sizes"
    echo "### Memory and open time"
    echo
    echo "\`bench/perf.sh --memory --memory-sizes $memory_sizes\` on $(fstype "$work") ($dir), $(date -u +%Y-%m-%d)."
    echo
    echo "| Disk | Map and checks at 8 B/page | RSS after create | RSS after full write | Peak RSS | Create to first answer | Clean shutdown |"
    echo "|---|---|---|---|---|---|---|"
    for sz in "${sizes[@]}"; do
        bytes="$(to_bytes "$sz")"
        rm -f "$work/mem.img"
        progress "memory: $sz: create"
        t0="$(now)"
        start_server mem "$plugin" file="$work/mem.img" size="$bytes"
        wait_answer mem
        t1="$(now)"
        local create_s fill_rss="-"
        create_s="$(elapsed "$t0" "$t1")"
        rss_open="$(status_kib mem VmRSS)"
        if $first; then
            progress "memory: $sz: sequential fill"
            fio_run mem "$work/mem-fill.json" --rw=write --bs=1M --iodepth=16
            fill_rss="$(mib "$(status_kib mem VmRSS)") MiB"
        elif [ "$sz" = "${sizes[-1]}" ]; then
            # The image whose open time is measured holds data scattered
            # over the whole disk: 1/16 of its pages, at random.
            progress "memory: $sz: random writes over the disk"
            fio_run mem "$work/mem-fill.json" --rw=randwrite --bs=4k \
                --iodepth=16 --io_size=$((bytes / 16)) --runtime=300
        fi
        hwm="$(status_kib mem VmHWM)"
        t0="$(now)"
        stop_server mem
        t1="$(now)"
        printf '| %s | %s MiB | %s MiB | %s | %s MiB | %s s | %s s |\n' \
            "$sz" "$(mib $(( bytes / 4096 * 8 / 1024 )))" "$(mib "$rss_open")" \
            "$fill_rss" "$(mib "$hwm")" "$create_s" "$(elapsed "$t0" "$t1")"
        first=false
    done
    largest="${sizes[-1]}"
    progress "memory: $largest: open after a clean shutdown"
    t0="$(now)"
    start_server mem "$plugin" file="$work/mem.img"
    wait_answer mem
    t1="$(now)"
    open_s="$(elapsed "$t0" "$t1")"
    rss_open="$(status_kib mem VmRSS)"
    stop_server mem
    ftlctl_s=n/a
    if [ -x "$ftlctl" ]; then
        t0="$(now)"
        "$ftlctl" info "$work/mem.img" >/dev/null
        t1="$(now)"
        ftlctl_s="$(elapsed "$t0" "$t1") s"
    fi
    echo
    echo "Open of the $largest image after a clean shutdown (1/16 of its pages"
    echo "written at random): nbdkit start to first NBD request answered"
    echo "$open_s s (RSS then $(mib "$rss_open") MiB); \`ftlctl info\`: $ftlctl_s."
}

if [ "$mode" = memory ]; then
    memory_mode
    exit 0
fi

# ---- benchmark ------------------------------------------------------

load_before="$(cut -d' ' -f1-3 /proc/loadavg)"
started="$(date +%s)"

progress "images in $work ($(fstype "$work")), size $size, runtime $runtime, repeat $repeat"

# file and memory: started once and filled once, so that every run sees
# a fully written disk (the file image fully allocated).
truncate -s "$size_bytes" "$work/file.img"
start_server file file file="$work/file.img"
start_server memory memory size="$size_bytes"
start_ftl
for name in file memory; do
    progress "fill $name"
    fio_run "$name" "$work/fill.$name.json" --rw=write --bs=1M --iodepth=16
done

in_group () # GROUP: the selected workloads of a group
{
    local w
    for w in "${run_workloads[@]}"; do
        if [ "$(wl_field "$w" 2)" = "$1" ]; then echo "$w"; fi
    done
}

gc_pre_runs=()                  # GC runs during the pre-GC writes
steady_gc=()                    # GC runs during the steady-state run
steady_waf=()                   # WAF during the steady-state run
warm_s=()                       # seconds of the steady-state warm-up

# The servers in repeat REP's order: ftl file memory, then the reverse,
# so that neither the first place (just after a fill, whose writeback
# may still run) nor the last falls on one server every time.
rep_order ()
{
    local i
    if (( $1 % 2 )); then
        printf '%s\n' "${servers[@]}"
    else
        for (( i = ${#servers[@]} - 1; i >= 0; i-- )); do
            printf '%s\n' "${servers[i]}"
        done
    fi
}

# The library's own CPU per request, for the floor: bench/ftl-ops with
# the plugin's defaults and background threads on a disk of this size,
# once per repeat (between the servers' runs, so that it sees the same
# machine): "REP PHASE US" lines (write, read, steady) into $work/lib.
lib_floor ()
{
    local mib=$(( size_bytes >> 20 )) ops
    ops=$(( size_bytes / 4096 / 8 ))
    [ "$ops" -le 100000 ] || ops=100000
    "$ftl_ops" --as-plugin --dir "$work" --size "$mib" --ops "$ops" \
        >"$work/ftl-ops.out" 2>&1 || { cat "$work/ftl-ops.out" >&2; die "bench/ftl-ops failed"; }
    awk -v r="$1" '$1 ~ /^(write|read|steady)$/ && $2 ~ /^[0-9]+$/ {
            for (i = 1; i < NF; i++) if ($i == "CPU") print r, $1, $(i + 1) + 0
        }' "$work/ftl-ops.out" >>"$work/lib"
}
: >"$work/lib"
has_floor=false
if [ -x "$ftl_ops" ]; then
    has_floor=true
else
    progress "no $ftl_ops (make builds it): the floor is not measured"
fi

for (( rep = 1; rep <= repeat; rep++ )); do
    mapfile -t order < <(rep_order "$rep")
    if $has_floor; then
        progress "repeat $rep: the library's own CPU per request (bench/ftl-ops --as-plugin)"
        lib_floor "$rep"
    fi
    # F: filled disk.
    mapfile -t ws < <(in_group F)
    if [ ${#ws[@]} -gt 0 ]; then
        progress "repeat $rep: fresh ftl image, sequential fill"
        fresh_ftl
        fio_run ftl "$work/fill.ftl.$rep.json" --rw=write --bs=1M --iodepth=16
        for w in "${ws[@]}"; do
            # A workload with keys of its own: the ftl server restarted
            # with them on the same image, and without them after.
            read -r -a keys <<<"$(wl_field "$w" 5)"
            if [ ${#keys[@]} -gt 0 ]; then
                stop_server ftl
                start_ftl "${keys[@]}"
            fi
            for name in "${order[@]}"; do
                progress "repeat $rep: $w: $name"
                measure "$rep" "$w" "$name"
            done
            if [ ${#keys[@]} -gt 0 ]; then
                stop_server ftl
                start_ftl
            fi
        done
    fi

    # P: fresh disk, before GC.  The workloads of this group write at
    # most 7/8 of the logical size in all; the image has 1.28 times the
    # logical size, so garbage collection does not start.
    mapfile -t ws < <(in_group P)
    if [ ${#ws[@]} -gt 0 ]; then
        progress "repeat $rep: fresh ftl image"
        fresh_ftl
        for w in "${ws[@]}"; do
            for name in "${order[@]}"; do
                progress "repeat $rep: $w: $name"
                measure "$rep" "$w" "$name"
            done
        done
        stats_settle
        gc_pre_runs+=("$(stats_get .gc.runs)")
    fi

    # S: steady state.  Fill the ftl disk, then write it twice over with
    # random 4 KiB writes, so that it is full, free blocks are at GC's
    # watermark and victims hold valid pages to copy.
    mapfile -t ws < <(in_group S)
    if [ ${#ws[@]} -gt 0 ]; then
        progress "repeat $rep: steady state: fill, then two drive writes at random"
        t0="$(date +%s)"
        fio_run ftl "$work/fill2.ftl.$rep.json" --rw=write --bs=1M --iodepth=16
        # Not fio's default seed, which the measured run uses: the
        # same sequence of offsets twice would overwrite the oldest
        # blocks first, like a sequential write, and GC would find
        # them empty.
        fio_run ftl "$work/warm.ftl.$rep.json" --rw=randwrite --bs=4k \
            --iodepth=16 --norandommap --randseed=$((rep * 7919)) \
            --io_size=$((2 * size_bytes)) --runtime=600
        warm_s+=($(( $(date +%s) - t0 )))
        for w in "${ws[@]}"; do
            stats_settle
            g0="$(stats_get .gc.runs)"
            h0="$(stats_get .host.write_pages)"
            p0="$(stats_get .media.program_pages)"
            for name in "${order[@]}"; do
                progress "repeat $rep: $w: $name"
                measure "$rep" "$w" "$name"
            done
            stats_settle
            steady_gc+=($(( $(stats_get .gc.runs) - g0 )))
            steady_waf+=("$(awk -v h=$(( $(stats_get .host.write_pages) - h0 )) \
                               -v p=$(( $(stats_get .media.program_pages) - p0 )) \
                               'BEGIN { printf "%.2f", h ? p / h : 0 }')")
        done
    fi
done

for name in "${servers[@]}"; do note_hwm "$name"; done
load_after="$(cut -d' ' -f1-3 /proc/loadavg)"
minutes="$(awk -v s=$(( $(date +%s) - started )) 'BEGIN { printf "%.1f", s / 60 }')"

# ---- report ---------------------------------------------------------

cpu_model="$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)"
cmdline="bench/perf.sh"
$quick && cmdline+=" --quick"
cmdline+=" --size $size --runtime $runtime --repeat $repeat"

echo "### Benchmark: \`$cmdline\`"
echo
echo "$(date -u +%Y-%m-%d), $(nproc) CPUs ($cpu_model), images on $(fstype "$work")"
echo "($dir), disk $size, OP 28% (the plugin's default), $runtime s per run,"
echo "$repeat repeat$([ "$repeat" -eq 1 ] || echo s) interleaved (ftl, file, memory, then memory, file, ftl, ...), $minutes minutes;"
echo "load average $load_before before, $load_after after. nbdkit $(nbdkit --version | awk '{ print $2 }'),"
echo "$(fio --version). Median (min..max) over the repeats; ratios are medians"
echo "of the per-repeat ratios (min..max); latency is fio's completion latency"
echo "(median over the repeats); CPU is the server's user+system time per GiB moved."
if $self_check; then
    echo
    echo "**The plugin was built with --enable-self-check:** it cross-checks its whole map"
    echo "at every checkpoint, so these are not the figures of a release build."
fi
echo

awk -F'\t' -v order="$(IFS=,; echo "${run_workloads[*]}")" \
    -v images_fs="$(fstype "$work")" -v ncpu="$(nproc)" -v libfile="$work/lib" '
function median(s,    a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) {
        t = a[i] + 0
        for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]
        a[j + 1] = t
    }
    lo = a[1]; hi = a[n]
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function add(k, v) { vals[k] = (k in vals) ? vals[k] " " v : v }
function num(x) {
    if (x >= 100) return sprintf("%.0f", x)
    if (x >= 10) return sprintf("%.1f", x)
    return sprintf("%.2f", x)
}
function spread(k,    m) {
    if (!(k in vals)) return "-"
    m = median(vals[k])
    return (lo == hi) ? num(m) : num(m) " (" num(lo) ".." num(hi) ")"
}
function med(k) { return (k in vals) ? num(median(vals[k])) : "-" }
FILENAME == libfile {
    split($0, a, " ")
    lib[a[1], a[2]] = a[3]
    next
}
{
    rep = $1; w = $2; s = $3
    iops[rep, w, s] = $4
    add(w SUBSEP s SUBSEP "iops", $4)
    add(w SUBSEP s SUBSEP "mib", $5 / 1048576)
    add(w SUBSEP s SUBSEP "p50", $7)
    add(w SUBSEP s SUBSEP "p99", $8)
    add(w SUBSEP s SUBSEP "p999", $9)
    if ($6 > 0) add(w SUBSEP s SUBSEP "cpu", $10 / ($6 / 1073741824))
    if ($6 > 0) cpu[rep, w, s] = $10 / ($6 / 1073741824)
    # Per request, in µs, over the run of the jobs: the server ($13),
    # fio ($14), the rest of the machine (busy $11 less those two) and
    # idle CPU (total $12 less busy), which add up to CPUs × wall time
    # / requests ($15).
    if ($15 > 0 && $12 > 0) {
        us = 1e6 / $15
        rest = $11 - $13 - $14; if (rest < 0) rest = 0
        add(w SUBSEP s SUBSEP "us_srv", $13 * us)
        add(w SUBSEP s SUBSEP "us_cli", $14 * us)
        add(w SUBSEP s SUBSEP "us_rest", rest * us)
        add(w SUBSEP s SUBSEP "us_idle", ($12 - $11) * us)
        add(w SUBSEP s SUBSEP "us_all", $12 * us)
        cli_us[rep, w, s] = $14 * us
        rest_us[rep, w, s] = rest * us
        srv_us[rep, w, s] = $13 * us
    }
    reps[rep] = 1
}
END {
    nw = split(order, ws, ",")
    ns = split("ftl file memory", ss, " ")
    for (r in reps) for (i = 1; i <= nw; i++) for (j = 1; j <= ns; j++) {
        w = ws[i]; s = ss[j]
        if (!((r, w, s) in iops)) continue
        if (iops[r, w, "file"] > 0)
            add(w SUBSEP s SUBSEP "xfile", iops[r, w, s] / iops[r, w, "file"])
        if (iops[r, w, "memory"] > 0)
            add(w SUBSEP s SUBSEP "xmem", iops[r, w, s] / iops[r, w, "memory"])
        if (((r, w, "file") in cpu) && cpu[r, w, "file"] > 0 && ((r, w, s) in cpu))
            add(w SUBSEP s SUBSEP "cpuxfile", cpu[r, w, s] / cpu[r, w, "file"])
    }
    for (r in reps) for (j = 1; j <= ns; j++) {
        s = ss[j]
        if (((r, "rand-read-4conn", s) in iops) && iops[r, "rand-read-qd16", s] > 0)
            add("scale-read" SUBSEP s, iops[r, "rand-read-4conn", s] / iops[r, "rand-read-qd16", s])
        if (((r, "rand-write-4conn", s) in iops) && iops[r, "rand-write-qd16", s] > 0)
            add("scale-write" SUBSEP s, iops[r, "rand-write-4conn", s] / iops[r, "rand-write-qd16", s])
    }
    print "| Workload | Server | IOPS | MiB/s | × file | × memory | p50 µs | p99 µs | p99.9 µs | CPU s/GiB |"
    print "|---|---|---|---|---|---|---|---|---|---|"
    for (i = 1; i <= nw; i++) for (j = 1; j <= ns; j++) {
        w = ws[i]; s = ss[j]; k = w SUBSEP s SUBSEP
        if (!((k "iops") in vals)) continue
        printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", \
            (j == 1 ? w : ""), s, spread(k "iops"), med(k "mib"), \
            (s == "file" ? "1" : spread(k "xfile")), \
            (s == "memory" ? "1" : spread(k "xmem")), \
            med(k "p50"), med(k "p99"), med(k "p999"), med(k "cpu")
    }
    if (("scale-read" SUBSEP "ftl") in vals || ("scale-write" SUBSEP "ftl") in vals) {
        print ""
        print "Four connections (numjobs=4, iodepth 16 each) / one connection (iodepth 16), IOPS:"
        print ""
        print "| Server | Random read 4 KiB | Random write 4 KiB |"
        print "|---|---|---|"
        for (j = 1; j <= ns; j++)
            printf "| %s | %s | %s |\n", ss[j], \
                spread("scale-read" SUBSEP ss[j]), spread("scale-write" SUBSEP ss[j])
    }
    # CPU time per GiB moved, the plugin against the file plugin.
    print ""
    print "CPU time per GiB moved (user+system of the server), ftl against file:"
    print ""
    print "| Workload | ftl CPU s/GiB | file CPU s/GiB | ftl / file |"
    print "|---|---|---|---|"
    for (i = 1; i <= nw; i++) {
        w = ws[i]
        if (!((w SUBSEP "ftl" SUBSEP "cpu") in vals)) continue
        printf "| %s | %s | %s | %s |\n", w, spread(w SUBSEP "ftl" SUBSEP "cpu"), \
            spread(w SUBSEP "file" SUBSEP "cpu"), spread(w SUBSEP "ftl" SUBSEP "cpuxfile")
    }
    # Where the time went, per request.
    print ""
    print "Where the machine'"'"'s CPU time went, µs per request (medians): the server, fio (the"
    print "client), the rest of the machine (other processes, the kernel'"'"'s threads: writeback)"
    print "and idle CPU. They add up to " ncpu " CPUs × wall time / requests."
    print ""
    print "| Workload | Server | server | client | rest | idle | all |"
    print "|---|---|---|---|---|---|---|"
    for (i = 1; i <= nw; i++) for (j = 1; j <= ns; j++) {
        w = ws[i]; s = ss[j]; k = w SUBSEP s SUBSEP
        if (!((k "us_all") in vals)) continue
        printf "| %s | %s | %s | %s | %s | %s | %s |\n", (j == 1 ? w : ""), s, \
            med(k "us_srv"), med(k "us_cli"), med(k "us_rest"), med(k "us_idle"), \
            med(k "us_all")
    }
    # The floor: what a request must cost the server, the NBD path
    # (memory'"'"'s server, the same workload and repeat) plus the
    # library'"'"'s own work (bench/ftl-ops --as-plugin, the phase of the
    # same kind, the same repeat).
    nfl = split("rand-read-qd1 read rand-read-qd16 read rand-read-4conn read " \
          "rand-write-qd1 write rand-write-qd16 write rand-write-4conn write " \
          "rand-write-steady steady", fl, " ")
    for (i = 1; i < nfl; i += 2) phase_of[fl[i]] = fl[i + 1]
    hdr = 0
    for (i = 1; i <= nw; i++) {
        w = ws[i]
        if (!(w in phase_of)) continue
        for (r in reps) {
            if (!((r, w, "ftl") in srv_us) || !((r, w, "memory") in srv_us) ||
                !((r, phase_of[w]) in lib)) continue
            f = srv_us[r, w, "memory"] + lib[r, phase_of[w]]
            add(w SUBSEP "lib", lib[r, phase_of[w]])
            add(w SUBSEP "floor", f)
            add(w SUBSEP "xfloor", srv_us[r, w, "ftl"] / f)
        }
        if (!((w SUBSEP "floor") in vals)) continue
        if (!hdr) {
            print ""
            print "The server'"'"'s CPU per request against its floor, µs (medians, min..max): the NBD"
            print "path (memory'"'"'s server, the same workload and repeat) plus the library'"'"'s own"
            print "work (bench/ftl-ops --as-plugin, the phase of the same kind, the same repeat);"
            print "idle is the machine'"'"'s idle CPU per request during the ftl run."
            print ""
            print "| Workload | ftl server | memory server | library | floor | ftl / floor | idle |"
            print "|---|---|---|---|---|---|---|"
            hdr = 1
        }
        printf "| %s | %s | %s | %s (%s) | %s | %s | %s |\n", w, \
            spread(w SUBSEP "ftl" SUBSEP "us_srv"), \
            spread(w SUBSEP "memory" SUBSEP "us_srv"), \
            spread(w SUBSEP "lib"), phase_of[w], spread(w SUBSEP "floor"), \
            spread(w SUBSEP "xfloor"), med(w SUBSEP "ftl" SUBSEP "us_idle")
    }
    # Targets: the plugin against the file plugin.
    print ""
    print "| Target (ftl) | Goal | Measured | |"
    print "|---|---|---|---|"
    # Writes against what bounds them: the same durable work as file
    # (a flush every 64 MiB), or, for the 5-second overwrite, images in
    # tmpfs (--dir /dev/shm: the cost of the FTL alone) or with
    # sync=false on the same disk; random writes against memory, the
    # NBD ceiling.
    target("seq-read", "xfile", 1.0, "sequential read vs file")
    target("rand-read-qd1", "xfile", 1.0, "random read iodepth 1 vs file")
    target("rand-read-qd16", "xfile", 1.0, "random read iodepth 16 vs file")
    target("seq-write-fsync64", "xfile", 0.9, "sequential overwrite, a flush every 64 MiB, vs file")
    # (the 5-second overwrite is that goal only with the images in tmpfs)
    if (images_fs == "tmpfs")
        target("seq-write", "xfile", 0.9, "sequential overwrite, 5 s, vs file (images in tmpfs)")
    else
        targetk("seq-write" SUBSEP "ftl" SUBSEP "xfile", 0.9,
                "sequential overwrite, 5 s, vs file (images on " images_fs ")",
                "- (the goal is in tmpfs: --dir /dev/shm)")
    target("seq-write-unsynced", "xfile", 0.9, "sequential overwrite, 5 s, sync=false, vs file")
    # CPU per GiB of sequential writes, where both servers do the same
    # durable work: both sync (a flush every 64 MiB), neither syncs
    # (sync=false), or syncs cost nothing (tmpfs).  In the 5-second
    # overwrite on a disk the ftl writes back for its erases (the log
    # keeps flushed data) while file writes nothing back: shown, not a
    # goal.
    targetmax("seq-write-fsync64" SUBSEP "ftl" SUBSEP "cpuxfile", 1.3,
              "CPU per GiB of sequential writes vs file, a flush every 64 MiB")
    targetmax("seq-write-unsynced" SUBSEP "ftl" SUBSEP "cpuxfile", 1.3,
              "CPU per GiB of sequential writes vs file, sync=false")
    if (images_fs == "tmpfs")
        targetmax("seq-write" SUBSEP "ftl" SUBSEP "cpuxfile", 1.3,
                  "CPU per GiB of sequential writes vs file (images in tmpfs)")
    else
        targetmax("seq-write" SUBSEP "ftl" SUBSEP "cpuxfile", 1.3,
                  "CPU per GiB of sequential writes vs file, 5 s (images on " images_fs ")",
                  "- (the ftl writes back for its erases, file nothing: not the same work)")
    target("rand-write-qd16", "xmem", 0.85, "random write iodepth 16, before GC, vs memory")
    target("rand-write-steady", "xmem", 0.70, "random write steady state vs memory")
    target("rand-write-4conn", "xmem", 0.80, "random write, 4 connections, vs memory")
    target("rand-write-fsync32", "xfile", 1.0, "random write fsync=32 vs file")
    targetk("scale-read" SUBSEP "ftl", 1.0, "4 connections / 1, reads")
    targetk("scale-write" SUBSEP "ftl", 1.0, "4 connections / 1, writes")
    targetmax("rand-write-qd16" SUBSEP "xfloor", 1.1,
              "server CPU per request vs the floor, random write iodepth 16")
    targetmax("rand-write-4conn" SUBSEP "xfloor", 1.1,
              "server CPU per request vs the floor, random write, 4 connections")
    targetmax("rand-write-steady" SUBSEP "xfloor", 1.1,
              "server CPU per request vs the floor, random write steady state")
    # What the goals against memory leave for the server: at goal ×
    # memory'"'"'s IOPS the machine has ncpu / (goal × IOPS) per request,
    # less what fio and the rest of the machine spent per request in
    # the ftl run, with nothing idle.
    hdr = 0
    for (i = 1; i <= nw; i++) {
        w = ws[i]
        if (!(w in memgoal)) continue
        goal = memgoal[w]
        for (r in reps) {
            if (!((r, w, "ftl") in srv_us) || iops[r, w, "memory"] <= 0) continue
            add(w SUBSEP "budget", ncpu * 1e6 / (goal * iops[r, w, "memory"]) \
                - cli_us[r, w, "ftl"] - rest_us[r, w, "ftl"])
        }
        if (!((w SUBSEP "budget") in vals)) continue
        if (!hdr) {
            print ""
            print "The server'"'"'s CPU per request that the goals against memory leave: at goal ×"
            print "memory'"'"'s IOPS the machine has " ncpu " CPUs / (goal × IOPS) per request; less what fio"
            print "and the rest of the machine spent per request in the ftl run, nothing idle:"
            print ""
            print "| Workload | Goal | ftl server now, µs | the goal leaves, µs |"
            print "|---|---|---|---|"
            hdr = 1
        }
        printf "| %s | ≥ %.2f× memory | %s | %s |\n", w, goal, \
            spread(w SUBSEP "ftl" SUBSEP "us_srv"), spread(w SUBSEP "budget")
    }
}
function targetmax(k, goal, label, status,    m) {
    if (!(k in vals)) return
    m = median(vals[k])
    if (status == "") status = (m <= goal ? "met" : "missed")
    printf "| %s | ≤ %.2f× | %s× (%s..%s) | %s |\n", label, goal, num(m), num(lo), num(hi), status
}
function target(w, what, goal, label) {
    if (what == "xmem") memgoal[w] = goal
    targetk(w SUBSEP "ftl" SUBSEP what, goal, label)
}
function targetk(k, goal, label, status,    m) {
    if (!(k in vals)) return
    m = median(vals[k])
    if (status == "") status = (m >= goal ? "met" : "missed")
    printf "| %s | ≥ %.2f× | %s× (%s..%s) | %s |\n", label, goal, num(m), num(lo), num(hi), status
}
' "$work/lib" "$results"

echo
echo "Peak RSS (VmHWM, highest over the server instances): $(
    for name in "${servers[@]}"; do
        printf '%s %d MiB (%s MiB per GiB of disk), ' "$name" \
            $(( ${hwm_kib[$name]:-0} / 1024 )) \
            "$(awk -v k="${hwm_kib[$name]:-0}" -v b="$size_bytes" \
                   'BEGIN { printf "%.1f", k / 1024 / (b / 1073741824) }')"
    done | sed 's/, $//')."
if [ ${#gc_pre_runs[@]} -gt 0 ]; then
    echo "GC runs in the ftl image during the \"before GC\" writes, per repeat: ${gc_pre_runs[*]}."
fi
if [ ${#steady_gc[@]} -gt 0 ]; then
    echo "Steady state (ftl): warm-up (fill + two drive writes at random) ${warm_s[*]} s;"
    echo "during the measured run GC reclaimed ${steady_gc[*]} erase blocks at a WAF of ${steady_waf[*]} (per repeat)."
fi
