#!/bin/bash
# nbdkit-ftl: the torture bench.  Rounds of random configurations, each
# killed or powered off under load, reopened and checked.
#
#   bench/torture.sh [--minutes N] [--rounds N] [--seed S] [--dir DIR]
#                    [--plugin PATH] [--keep]
#
# Round i has the seed S+i (S random unless given), from which
# bench/torture.py draws its configuration: a tiny disk (4 to 64 MiB)
# of 16-page erase blocks, op 7 to 40, wl-threshold 2 to 16, gc and
# gc-mode, hot-cold, streams, the write cache's size and bypass,
# sync=false, a paged map (map-cache=4K), the media error model with a
# fast clock, read reclaim and scrub, the SLC cache, a timing preset;
# how much of the disk is filled first, whether its cycles end in kill
# -9 or a power cut (powercut=), and 1 to 3 cycles.  Each cycle starts
# the server, runs 3 clients at once (writes, FUA writes, write
# zeroes, trims, flushes, reads that verify what the client wrote),
# ends with the kill or the cut, runs `ftlctl check` on the image as
# the crash left it, reopens it and checks every sector: it must read
# its last durable version (flushed or FUA) or a version written after
# it (with write-cache=0, no acknowledged write may be lost).  A round
# fails on a wrong sector, a failed request, a check that finds an
# error, or any error-level message of the server (`nbdkit: ...
# error:`) other than a power cut's own; after the last cycle the
# server stops cleanly and `ftlctl check` must find the image clean.
#
# A failing round prints its seed, its configuration and the command
# that reruns it alone, and keeps its directory (the servers' logs, the
# clients' logs, the image).  The others' directories are removed.
# Rounds run until --rounds have run or --minutes have passed
# (default: 1 round when neither is given), and the end prints the
# counts per key value of the configurations that ran.  Work files go
# under --dir (default: a new directory under /var/tmp, removed at the
# end if every round passed).  Exit status 0: every round passed; 1: a
# round failed; 2: bad usage.  Needs nbdkit, /usr/bin/python3 with
# libnbd's bindings (python3-libnbd) and timeout.

set -u
set -o pipefail

here="$(cd "$(dirname "$0")" && pwd)"
py=/usr/bin/python3
torture_py="$here/torture.py"
clients=3

die () { echo "torture: $*" >&2; exit 2; }

usage ()
{
    sed -n '4,5p' "$0" | sed 's/^# *//' >&2
    exit 2
}

minutes= rounds= seed= dir= plugin= keep=false
while [ $# -gt 0 ]; do
    case "$1" in
        --minutes) minutes="${2-}"; shift 2 || usage ;;
        --rounds) rounds="${2-}"; shift 2 || usage ;;
        --seed) seed="${2-}"; shift 2 || usage ;;
        --dir) dir="${2-}"; shift 2 || usage ;;
        --plugin) plugin="${2-}"; shift 2 || usage ;;
        --keep) keep=true; shift ;;
        -h|--help) usage ;;
        *) echo "torture: unknown argument: $1" >&2; usage ;;
    esac
done
for v in minutes rounds seed; do
    val="${!v}"
    [ -z "$val" ] || [[ "$val" =~ ^[0-9]+$ ]] ||
        die "--$v: not a whole number: '$val'"
done
[ -z "$minutes" ] || [ "$minutes" -ge 1 ] || die "--minutes: at least 1"
[ -z "$rounds" ] || [ "$rounds" -ge 1 ] || die "--rounds: at least 1"
[ -n "$minutes" ] || [ -n "$rounds" ] || rounds=1
[ -n "$seed" ] || seed=$(( (RANDOM << 15) | RANDOM ))

. "$here/find-plugin.sh"
find_plugin
ftlctl="${FTLCTL:-$builddir/tools/ftlctl}"
[ -x "$ftlctl" ] || die "ftlctl not built: $ftlctl"
for t in nbdkit timeout "$py"; do
    command -v "$t" >/dev/null || die "$t is not installed"
done
"$py" -c 'import nbd' 2>/dev/null ||
    die "$py cannot import nbd (install python3-libnbd)"

made_dir=false
if [ -z "$dir" ]; then
    dir="$(mktemp -d /var/tmp/ftl-torture.XXXXXX)"
    made_dir=true
fi
mkdir -p "$dir" || die "cannot create $dir"
dir="$(cd "$dir" && pwd)"

# The processes of the round that runs: the server and the clients.
server=
client_pids=()

stop_all ()
{
    local p
    if [ -n "$server" ]; then
        kill -9 "$server" 2>/dev/null
        wait "$server" 2>/dev/null
        server=
    fi
    for p in "${client_pids[@]}"; do
        kill -9 "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    client_pids=()
}
trap 'stop_all' EXIT
trap 'stop_all; exit 130' INT
trap 'stop_all; exit 143' TERM

# start_server LOG ARGS...: serve $rd/sock with the plugin; 0 once it
# serves, 1 if it exited first (its errors in LOG), 2 if it did not
# start within 60 s.
start_server ()
{
    local log="$1" i
    shift
    rm -f "$rd/sock" "$rd/pid"
    timeout -k 10 900 nbdkit -f -U "$rd/sock" -P "$rd/pid" "$plugin" \
        file="$rd/disk.img" "$@" 2>> "$log" &
    server=$!
    for (( i = 0; i < 600; i++ )); do
        [ -S "$rd/sock" ] && [ -s "$rd/pid" ] && return 0
        if ! kill -0 "$server" 2>/dev/null; then
            wait "$server" 2>/dev/null
            server=
            return 1
        fi
        sleep 0.1
    done
    return 2
}

# kill_server: kill -9 the server (nbdkit, not timeout: timeout would
# pass on a TERM) and wait for it.
kill_server ()
{
    [ -n "$server" ] || return 0
    [ -s "$rd/pid" ] && kill -9 "$(cat "$rd/pid")" 2>/dev/null
    kill -9 "$server" 2>/dev/null
    wait "$server" 2>/dev/null
    server=
}

# stop_server: a clean shutdown; 1 if it takes over 60 s (then killed)
# or exits with an error status.
stop_server ()
{
    local i r=0
    kill -TERM "$(cat "$rd/pid")" 2>/dev/null
    for (( i = 0; i < 600; i++ )); do
        kill -0 "$server" 2>/dev/null || break
        sleep 0.1
    done
    if kill -0 "$server" 2>/dev/null; then
        kill_server
        return 1
    fi
    wait "$server" 2>/dev/null || r=$?
    server=
    return $r
}

# A round's reasons to fail, in order.
why=()
fail () { why+=("$*"); }

# server_errors LOG: the error-level messages of the server in LOG,
# but for a power cut's own (the cut, and the requests it fails).
server_errors ()
{
    grep -E '(^|: )error: ' "$1" |
        grep -vE 'power cut|powered off|after the power' || :
}

# A round: 0 passed, 1 failed, 3 the configuration was refused at
# creation (not a failure: the generator's estimate of the spare erase
# blocks missed).
run_round ()
{
    local s="$1" cfg keys=() end size page cycles fill wcache c
    local delays=() cuts=() log slog i ready lines last still cut r
    rd="$dir/round-$s"
    rm -rf "$rd"
    mkdir -p "$rd"
    why=()
    cfg="$("$py" "$torture_py" config "$s")" || die "torture.py config failed"
    echo "$cfg" > "$rd/config.json"
    eval "$("$py" - "$cfg" <<'EOF'
import json, shlex, sys
c = json.loads(sys.argv[1])
print("keys=(%s)" % " ".join(shlex.quote(k) for k in c["keys"]))
print("delays=(%s)" % " ".join(c["delays"]))
print("cuts=(%s)" % " ".join(map(str, c["powercut"])))
for k in ("end", "size", "page", "cycles", "fill", "wcache"):
    print("%s=%s" % (k, shlex.quote(str(c[k]))))
print("summary=%s" % shlex.quote(" ".join(c["summary"])))
EOF
)"
    echo "round seed $s: ${keys[*]} fill=$fill% end=$end cycles=$cycles"
    for (( c = 0; c < cycles; c++ )); do
        slog="$rd/server.$c.log"
        cut=()
        [ "$end" = powercut ] && cut=(powercut="${cuts[c]}")
        start_server "$slog" "${keys[@]}" "${cut[@]}"
        r=$?
        if [ $r -ne 0 ]; then
            if [ $c -eq 0 ] && [ $r -eq 1 ] &&
                   grep -qE 'spare|impossible geometry|refused|larger than' \
                        "$slog"; then
                echo "  refused: $(grep -m1 error: "$slog")"
                return 3
            fi
            fail "cycle $c: the server did not start (see $slog)"
            kill_server
            return 1
        fi
        if [ $c -eq 0 ] && [ "$fill" -gt 0 ]; then
            if ! timeout 300 "$py" "$torture_py" fill "$rd/sock" "$size" \
                    "$fill" "$rd/base" > "$rd/fill.log" 2>&1; then
                # A power cut that came during the fill fails it; the
                # first cut is drawn past the fill's requests.
                fail "cycle $c: the fill failed: $(tail -n 1 "$rd/fill.log")"
                kill_server
                return 1
            fi
        fi
        local logs=()
        client_pids=()
        for (( i = 0; i < clients; i++ )); do
            logs+=("$rd/client.$c.$i")
            timeout -k 5 600 "$py" "$torture_py" client "$rd/sock" $i \
                $clients "$size" "$page" $c "$s" "$rd/base" \
                "$rd/client.$c.$i" 2> "$rd/client.$c.$i.err" &
            client_pids+=($!)
        done
        # Every client has had a write acknowledged and then a flush,
        # or the server stopped by itself (a power cut), or a client
        # stopped: then the delay, then the kill.  No progress for 60 s
        # fails the round.
        last=-1 still=0
        for (( i = 0; ; i++ )); do
            ready=0 lines=0
            for log in "${logs[@]}"; do
                [ -f "$log" ] || continue
                awk '/^A/ { a = 1 } a && /^F/ { f = 1; exit }
                     END { exit !f }' "$log" 2>/dev/null &&
                    ready=$(( ready + 1 ))
                lines=$(( lines + $(wc -l < "$log") ))
            done
            [ $ready -eq $clients ] && break
            kill -0 "$server" 2>/dev/null || break
            local alive=0 p
            for p in "${client_pids[@]}"; do
                kill -0 "$p" 2>/dev/null && alive=$(( alive + 1 ))
            done
            [ $alive -eq $clients ] || break
            if [ $lines -ne $last ]; then
                last=$lines still=0
            else
                still=$(( still + 1 ))
            fi
            if [ $still -ge 600 ]; then
                fail "cycle $c: no client made progress for 60 s"
                break
            fi
            sleep 0.1
        done
        if [ "$end" = powercut ]; then
            # The cut stops the server; if the clients are too slow to
            # reach it within 20 s, kill it instead.
            for (( i = 0; i < 200; i++ )); do
                kill -0 "$server" 2>/dev/null || break
                sleep 0.1
            done
            if kill -0 "$server" 2>/dev/null; then
                echo "  cycle $c: no power cut at request ${cuts[c]} within 20 s: kill -9"
                kill_server
            else
                wait "$server" 2>/dev/null
                server=
                grep -q 'power cut' "$slog" ||
                    fail "cycle $c: the server stopped without a power cut"
            fi
        else
            sleep "${delays[c]}"
            kill_server
        fi
        for i in "${!client_pids[@]}"; do
            wait "${client_pids[i]}" ||
                fail "cycle $c: client $i exited with status $? ($(tail -n 3 "$rd/client.$c.$i.err" | tr '\n' ' '))"
        done
        client_pids=()
        for (( i = 0; i < clients; i++ )); do
            if grep -q '^E' "${logs[i]}"; then
                fail "cycle $c: client $i: $(grep -m1 '^E' "${logs[i]}" | cut -c3-)"
            fi
            if ! grep -q 'power cut' "$slog" && grep -q '^C' "${logs[i]}"; then
                fail "cycle $c: client $i could not connect: $(grep -m1 '^C' "${logs[i]}" | cut -c3-)"
            fi
            if ! grep -q 'power cut' "$slog" && grep -q '^X' "${logs[i]}"; then
                fail "cycle $c: client $i: a request failed with EIO without a power cut: $(grep -m1 '^X' "${logs[i]}" | cut -c3-)"
            fi
        done
        # The image as the kill or the cut left it.
        "$ftlctl" check "$rd/disk.img" > "$rd/check.$c.log" 2>&1
        r=$?
        [ $r -eq 0 ] ||
            fail "cycle $c: ftlctl check after the crash: status $r ($(grep -v ': superblock copy\|: checkpoint slot' "$rd/check.$c.log" | head -n 3 | tr '\n' ' '))"
        if ! start_server "$rd/reopen.$c.log" "${keys[@]}"; then
            fail "cycle $c: the reopening server did not start (see $rd/reopen.$c.log)"
            kill_server
            return 1
        fi
        timeout 300 "$py" "$torture_py" verify "$rd/sock" $clients "$size" \
            "$page" "$rd/base" "$wcache" "${logs[@]}" > "$rd/verify.$c.log" 2>&1 ||
            fail "cycle $c: verify: $(grep -v '^verify: [0-9]* sectors checked' "$rd/verify.$c.log" | head -n 5 | tr '\n' ' ')"
        stop_server ||
            fail "cycle $c: the server did not stop cleanly after the verify"
        for log in "$rd/server.$c.log" "$rd/reopen.$c.log"; do
            if [ -n "$(server_errors "$log")" ]; then
                fail "cycle $c: $(basename "$log"): $(server_errors "$log" | head -n 3 | tr '\n' ' ')"
            fi
        done
        echo "  cycle $c: $(awk '/^W/ { w++ } /^F/ { f++ } /^R/ { r++ }
                END { printf "%d writes, %d flushes, %d reads", w, f, r }' \
                "${logs[@]}"); $(grep -o -m1 'power cut at [a-z ]*[0-9]*' \
                "$slog" || echo kill -9); $(tail -n 1 "$rd/verify.$c.log" | sed 's/^verify: //')"
        [ ${#why[@]} -eq 0 ] || return 1
    done
    "$ftlctl" check "$rd/disk.img" > "$rd/check.end.log" 2>&1
    r=$?
    [ $r -eq 0 ] ||
        fail "the last clean shutdown: ftlctl check: status $r ($(tail -n 2 "$rd/check.end.log" | tr '\n' ' '))"
    [ ${#why[@]} -eq 0 ] || return 1
    echo "$summary" >> "$dir/configs.txt"
    return 0
}

start=$SECONDS
deadline=
[ -n "$minutes" ] && deadline=$(( start + minutes * 60 ))
n=0 passed=0 refused=0 failed=()
echo "torture: seed $seed, work directory $dir"
while :; do
    [ -n "$rounds" ] && [ $n -ge "$rounds" ] && break
    [ -n "$deadline" ] && [ $SECONDS -ge "$deadline" ] && break
    s=$(( seed + n ))
    n=$(( n + 1 ))
    run_round "$s"
    r=$?
    stop_all
    case $r in
        0)
            passed=$(( passed + 1 ))
            $keep || rm -rf "$rd" ;;
        3)
            refused=$(( refused + 1 ))
            rm -rf "$rd" ;;
        *)
            failed+=("$s")
            echo "torture: FAIL: round seed $s:"
            printf '  %s\n' "${why[@]}"
            echo "  configuration: $(cat "$rd/config.json")"
            echo "  kept: $rd (servers' logs server.*.log, reopen.*.log; clients' logs; disk.img)"
            echo "  rerun it alone: bench/torture.sh --seed $s --rounds 1 --dir DIR"
            ;;
    esac
done
echo "torture: $n rounds in $(( SECONDS - start )) s from seed $seed:" \
     "$passed passed, ${#failed[@]} failed, $refused configurations refused"
[ -s "$dir/configs.txt" ] && "$py" "$torture_py" tally "$dir/configs.txt"
if [ ${#failed[@]} -gt 0 ]; then
    echo "torture: failing seeds: ${failed[*]} (kept in $dir)"
    exit 1
fi
$made_dir && ! $keep && rm -rf "$dir"
exit 0
