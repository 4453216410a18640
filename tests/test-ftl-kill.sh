#!/usr/bin/env bash
# nbdkit-ftl: kill -9 under load.  Several clients write at once (any
# sector alignment, some with FUA, some zeros, a few of 128 KiB or more
# in whole pages, which go past the write cache) with periodic flushes,
# each logging what it sent and what was acknowledged; once every client
# has had writes and a flush acknowledged, the server is killed with
# SIGKILL at a random moment within the next second, restarted, and
# every 512-byte sector must read as its last flushed value or as a
# value written to it after that flush.  Clients write to disjoint
# regions, so that each knows which of its writes a flush covers.
# Repeated several times on one image, with garbage collection running:
# the first rounds with the write cache (the default), where some
# acknowledged writes that no flush covered are lost (the cache is
# volatile, and over the rounds some must be); the last ones with
# write-cache=0, where no acknowledged write may be (write zeroes may:
# whole pages are unmapped, and the trim records that say so are
# durable only at a flush).  The odd rounds run with sync=false, which
# makes no difference here: nothing is synced, and the page cache keeps
# everything the server wrote; the restart finds the session's mark and
# verifies every mapped page, and none may read as an error (the verify
# reads would fail).  FTL_KILL_SEED=N replays a run.
#
# SIGKILL ends the process, not the machine: whatever the server wrote
# to the file is still in the page cache and reaches the disk, synced or
# not.  So this test checks what the server acknowledged against what it
# had written, and cannot see a missing or misplaced fdatasync; the
# power cuts of tests/unit/test-crash.c, which drop the writes after the
# last sync, do.
#
# FTL_KILL_NS=1 (test-ftl-kill-ns.sh): an image of 3 namespaces, each an
# export of its own, and each client writes to one of them at once; the
# sectors name themselves in the image's numbering, so a sector that
# reads back in another namespace is caught as another sector's data.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires timeout /usr/bin/python3
if ! /usr/bin/python3 -c 'import nbd' 2>/dev/null; then
    missing "the Python bindings of libnbd (python3-libnbd)"
fi

seed="${FTL_KILL_SEED:-$(( (RANDOM << 15) | RANDOM ))}"
echo "$0: seed $seed (set FTL_KILL_SEED to replay)"
RANDOM=$seed

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
clients=3
rounds=6
cached_rounds=4                 # then write-cache=0

# client.py SOCK ID NCLIENTS ROUND SEED LOG: write to this client's
# sectors until the connection breaks.  The log has one line per
# event: "W first count version" before a write is sent (count sectors
# from first; version 0 is zeros), "A" when it was acknowledged, "D
# first count version" when a FUA write was acknowledged, "F" when a
# flush was acknowledged, "E errno message" if a request failed while
# the server was up (never allowed: the test fails).
#
# verify.py SOCK NCLIENTS ROUND BASE LOGS...: read the disk and check
# it against BASE (the versions read after the previous round) and the
# logs; write the versions read back to BASE.
cat > "$tmp/kill.py" <<'EOF_PY'
import errno, os, random, struct, sys
import nbd

# What a request gets when the server is killed under it.
GONE = (None, errno.ENOTCONN, errno.ECONNRESET, errno.EPIPE,
        errno.ESHUTDOWN, errno.ECONNABORTED)

SECT = 512
# FTL_KILL_NS: a namespace per client, n0, n1, ..., each its region.
NS = os.environ.get("FTL_KILL_NS", "") != ""
SIZE = (6 if NS else 4) * 1024 * 1024
NSECT = SIZE // SECT

def connect(sock, name):
    h = nbd.NBD()
    if name is not None:
        h.set_export_name(name)
    h.connect_unix(sock)
    return h

def sector(s, v):
    return struct.pack("<QQ", s, v) * (SECT // 16)

def region(cid, n):
    per = NSECT // n
    return cid * per, (cid + 1) * per

def client(sock, cid, n, rnd, seed, logname):
    rng = random.Random(seed * 1000 + cid)
    lo, hi = region(cid, n)
    # In a namespace of its own, the region starts at its offset 0.
    h = connect(sock, "n%d" % cid if NS else None)
    at = lo * SECT if NS else 0
    if NS:
        assert h.get_size() == (hi - lo) * SECT
    fua = h.can_fua()
    log = open(logname, "w")
    version = rnd * 10000000
    try:
        while True:
            k = rng.randrange(100)
            if k < 8:
                h.flush()
                log.write("F\n")
                log.flush()
                continue
            count = rng.randrange(1, 17)
            first = rng.randrange(lo, hi - count)
            if k >= 96:
                # Whole pages, 128 KiB or more: past the write cache.
                count = 256 + 8 * rng.randrange(0, 33)
                first = 8 * rng.randrange((lo + 7) // 8, (hi - count) // 8)
            version += 1
            if k < 14:
                log.write("W %d %d 0\n" % (first, count))
                log.flush()
                h.zero(count * SECT, first * SECT - at)
                log.write("A\n")
                continue
            flags = nbd.CMD_FLAG_FUA if fua and k < 20 else 0
            buf = b"".join(sector(first + i, version) for i in range(count))
            log.write("W %d %d %d\n" % (first, count, version))
            log.flush()
            h.pwrite(buf, first * SECT - at, flags)
            log.write("A\n")
            if flags:
                log.write("D %d %d %d\n" % (first, count, version))
    except nbd.Error as e:
        # The server is gone (killed), or it failed a request, which it
        # never may here: the disk is not full, the media do not fail.
        if e.errnum not in GONE:
            log.write("E %s %s\n" % (e.errno, e.string))
    finally:
        log.close()

def verify(sock, n, base_name, logs):
    base = [int(x) for x in open(base_name).read().split()] \
        if rnd > 0 else [0] * NSECT
    durable = list(base)
    later = [set() for _ in range(NSECT)]
    last = list(base)
    acked_last = list(base)     # the last acknowledged write's value
    pending = None
    acked = [0] * len(logs)
    flushed = [0] * len(logs)
    for cid, name in enumerate(logs):
        lo, hi = region(cid, n)
        for line in open(name):
            f = line.split()
            if f[0] == "E":
                sys.exit("round %d: client %d: a request failed: %s" %
                         (rnd, cid, line[2:].strip()))
            if f[0] == "A":
                acked[cid] += 1
                if pending:
                    pf, pc, pv = pending
                    for s in range(pf, pf + pc):
                        acked_last[s] = pv
                    pending = None
                continue
            if f[0] == "F":
                # Only a flush after an acknowledged write makes
                # something durable that was not before.
                if acked[cid]:
                    flushed[cid] += 1
                # What this client wrote before the flush; the others'
                # writes may not have completed yet.
                for s in range(lo, hi):
                    if later[s]:
                        durable[s] = last[s]
                        later[s] = set()
                continue
            first, count, v = int(f[1]), int(f[2]), int(f[3])
            if f[0] == "W":
                pending = (first, count, v)
            for s in range(first, first + count):
                if f[0] == "W":
                    later[s].add(v)
                    last[s] = v
                else:
                    durable[s] = v
                    later[s] = set()
    if NS:
        data = b"".join(connect(sock, "n%d" % c).pread(SIZE // n, 0)
                        for c in range(n))
    else:
        data = connect(sock, None).pread(SIZE, 0)
    got = []
    bad = 0
    kept = 0
    lost = 0
    for s in range(NSECT):
        d = data[s * SECT:(s + 1) * SECT]
        if d == bytes(SECT):
            v = 0
        else:
            s2, v = struct.unpack_from("<QQ", d)
            if s2 != s or d != sector(s, v):
                print("sector %d: another sector's data or garbage "
                      "(header %d, %d)" % (s, s2, v))
                bad += 1
                got.append(v)
                continue
        if v != durable[s] and v not in later[s]:
            print("sector %d reads version %d; durable %d, later %s" %
                  (s, v, durable[s], sorted(later[s])[:10]))
            bad += 1
        if later[s] and v == durable[s]:
            kept += 1
            # An acknowledged write that no flush covered is gone.
            # (Not a zero: whole pages are unmapped, and trim records
            # are durable only at a flush, cache or not.)
            if acked_last[s] != durable[s] and acked_last[s] != 0:
                lost += 1
        got.append(v)
    open(base_name, "w").write(" ".join(map(str, got)))
    writes = sum(1 for name in logs for line in open(name) if line[0] == "W")
    print("round %d: %d writes and zeros logged, %s acknowledged, %s "
          "flushes after them; %d sectors checked, %d unflushed sectors "
          "read as their flushed value, %d of them acknowledged later "
          "(lost)" %
          (rnd, writes, "+".join(map(str, acked)),
           "+".join(map(str, flushed)), NSECT, kept, lost))
    open(base_name + ".lost", "w").write("%d\n" % lost)
    if bad:
        sys.exit("round %d: %d sectors wrong" % (rnd, bad))
    # The server was killed under load, not before it: every client had
    # writes acknowledged and flushed.
    if min(acked) == 0 or min(flushed) == 0:
        sys.exit("round %d: a client had no write acknowledged and "
                 "flushed before the kill" % rnd)

mode, sock = sys.argv[1], sys.argv[2]
if mode == "client":
    cid, n, rnd, seed = map(int, sys.argv[3:7])
    client(sock, cid, n, rnd, seed, sys.argv[7])
else:
    n, rnd = int(sys.argv[3]), int(sys.argv[4])
    verify(sock, n, sys.argv[5], sys.argv[6:])
EOF_PY

# A small disk with small erase blocks, so that garbage collection and
# checkpoints run all the time.
args=(file="$disk" size=4M pages-per-block=16 op=40 wl-threshold=4)
# FTL_KILL_PAGED=1 (test-ftl-kill-paged.sh): a paged map of two groups
# whose cache holds one, so that every round evicts, reloads and writes
# translation pages while it is killed.
if [ -n "${FTL_KILL_PAGED:-}" ]; then
    args=(file="$disk" size=8M pages-per-block=16 op=40 wl-threshold=4
          map-cache=4K)
fi
# FTL_KILL_NS=1: three namespaces of 2 MiB, one per client.
if [ -n "${FTL_KILL_NS:-}" ]; then
    args=(file="$disk" namespaces=n0:2M,n1:2M,n2:2M pages-per-block=16
          op=40 wl-threshold=4)
fi

# diagnose: what the clients and the server were doing when they made
# no progress: each client's counts and last event, the server's syncs
# and the time they took (its statistics file), and its threads' stacks.
diagnose ()
{
    local c log
    for (( c = 0; c < clients; c++ )); do
        log="${logs[$c]}"
        [ -f "$log" ] || { echo "client $c: no log"; continue; }
        echo "client $c: $(grep -c '^W' "$log") writes sent," \
             "$(grep -c '^A' "$log") acknowledged," \
             "$(grep -c '^F' "$log") flushes; last event: $(tail -n 1 "$log")"
    done
    if [ -s "$tmp/stats.json" ]; then
        jq -c '{media: .media, gc: .gc, cache: .cache}' "$tmp/stats.json" || :
    fi
    server_stacks "$pid"
}

for (( round = 0; round < rounds; round++ )); do
    if [ $round -lt $cached_rounds ]; then
        cache=()
    else
        cache=(write-cache=0)
    fi
    sync=()
    if [ $(( round % 2 )) -eq 1 ]; then
        sync=(sync=false)
    fi
    rm -f "$tmp/stats.json"
    start_server "$sock" "$pid" "${args[@]}" "${cache[@]}" "${sync[@]}" \
        stats="$tmp/stats.json" stats-interval=1
    logs=()
    jobs_=()
    for (( c = 0; c < clients; c++ )); do
        log="$tmp/log.$round.$c"
        logs+=("$log")
        timeout -k 5 360 /usr/bin/python3 "$tmp/kill.py" client "$sock" \
            $c $clients $round $seed "$log" &
        jobs_+=($!)
    done
    # Once every client has had a flush acknowledged after a write
    # (the clients are connected and writing), kill at a random moment
    # within the next second: 0.000 to 0.999 seconds later.  The
    # clients go as fast as the host disk's syncs let them (on this
    # disk GC syncs before nearly every erase), and a host disk busy
    # with another writer can make each sync take tens of
    # milliseconds: what fails is 60 s without any client making
    # progress, or 300 s in all.
    last=-1
    still=0
    for (( i = 0; ; i++ )); do
        ready=0
        lines=0
        # (One awk, not a pipe: a grep -q that stops early would kill
        # the sed feeding it, and pipefail would then say no, the more
        # often the faster the clients go, as with sync=false.)
        for log in "${logs[@]}"; do
            [ -f "$log" ] || continue
            if awk '/^A/ { a = 1 } a && /^F/ { f = 1; exit }
                    END { exit !f }' "$log" 2>/dev/null; then
                ready=$(( ready + 1 ))
            fi
            lines=$(( lines + $(wc -l < "$log") ))
        done
        [ $ready -eq $clients ] && break
        if [ $lines -ne $last ]; then
            last=$lines
            still=0
        else
            still=$(( still + 1 ))
        fi
        if [ $still -ge 600 ] || [ $i -ge 3000 ]; then
            echo "$0: FAIL: round $round: $ready of $clients clients had" \
                 "a flush acknowledged after $(( i / 10 )) s; no progress" \
                 "for $(( still / 10 )) s"
            diagnose
            exit 1
        fi
        sleep 0.1
    done
    delay="$(printf '0.%03d' $(( RANDOM % 1000 )))"
    echo "round $round (${cache[*]:-write-cache} ${sync[*]:-sync=true}): kill" \
         "$delay s after every client had a flush acknowledged"
    sleep "$delay"
    kill_server "$pid"
    for j in "${jobs_[@]}"; do
        wait "$j" || { echo "$0: a client failed (status $?)"; exit 1; }
    done

    start_server "$sock" "$pid" "${args[@]}"
    timeout 60 /usr/bin/python3 "$tmp/kill.py" verify "$sock" $clients \
        $round "$tmp/base" "${logs[@]}"
    stop_server "$pid"
    lost=$(cat "$tmp/base.lost")
    if [ $round -lt $cached_rounds ]; then
        lost_cached=$(( ${lost_cached:-0} + lost ))
    elif [ "$lost" -ne 0 ]; then
        echo "$0: FAIL: round $round: write-cache=0, yet $lost sectors" \
             "lost acknowledged writes"
        exit 1
    fi
done
if [ "${lost_cached:-0}" -eq 0 ]; then
    echo "$0: FAIL: with the write cache, no acknowledged write was ever" \
         "lost: the cache is not volatile"
    exit 1
fi
echo "$0: $rounds rounds of kill -9 under load with $clients clients${FTL_KILL_NS:+ on 3 namespaces}: OK" \
     "($lost_cached acknowledged sectors lost with the cache, none without)"
