#!/usr/bin/env bash
# nbdkit-ftl: a paged map through NBD.  A 256 MiB disk made with
# map-cache=64K keeps 16 of its 64 groups of the map in memory; random
# writes and trims over the whole disk, with the write cache, go
# through misses, evictions and checkpoints that write translation
# pages, and GC moves them.  After a flush the server is killed; the
# reopened image holds every flushed page (and the trims), a clean
# shutdown and reopen hold them again, ftlctl check finds it consistent
# (the checkpoints' directories against the OOB entries), and the
# statistics show the misses, the evictions and the map's programs in
# waf but not in waf_data.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh timeout jq
[ -x "${FTLCTL:-../tools/ftlctl}" ] || missing "ftlctl (tools/) not built"

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"
uri="nbd+unix:///?socket=$sock"

# model.py: pages named by their number and a version; the expected
# version of every page written or trimmed is kept in $tmp/model.
cat > "$tmp/model.py" <<'EOF_PY'
import json, os, random, struct
P = 4096

def page(n, v):
    head = struct.pack("<QQ", n, v)
    return head * (P // len(head))

def run(h, seed, count, name):
    model = json.load(open(name)) if os.path.exists(name) else {}
    r = random.Random(seed)
    pages = h.get_size() // P
    v = seed * 1000000
    for i in range(count):
        n = r.randrange(pages)
        if r.random() < 0.1:
            k = min(r.randrange(1, 9), pages - n)
            h.trim(k * P, n * P)
            for m in range(n, n + k):
                model[str(m)] = 0
        else:
            v += 1
            h.pwrite(page(n, v), n * P)
            model[str(n)] = v
    h.flush()
    json.dump(model, open(name, "w"))

def check(h, name, what):
    model = json.load(open(name))
    zeros = bytes(P)
    for n, v in model.items():
        got = h.pread(P, int(n) * P)
        want = page(int(n), v) if v else zeros
        assert got == want, "%s: page %s is not version %d" % (what, n, v)
    print("%s: %d pages verified" % (what, len(model)))
EOF_PY

keys=(file="$disk" map-cache=64K stats="$stats")
start_server "$sock" "$pid" "${keys[@]}" size=256M
nbdsh -u "$uri" -c "
import sys; sys.path.insert(0, '$tmp'); import model
model.run(h, 1, 6000, '$tmp/model')
model.check(h, '$tmp/model', 'while serving')
model.run(h, 2, 6000, '$tmp/model')"
kill_server "$pid"

start_server "$sock" "$pid" "${keys[@]}"
nbdsh -u "$uri" -c "
import sys; sys.path.insert(0, '$tmp'); import model
model.check(h, '$tmp/model', 'after a kill')
model.run(h, 3, 4000, '$tmp/model')"
stop_server "$pid"
jq -c '{map, waf, waf_data}' "$stats"
jq -e '.map.paged and .map.cache_bytes == 65536 and .map.misses > 1000
       and .map.evictions > 1000 and .map.writebacks > 0
       and .map.program_pages > 0 and .waf > .waf_data' "$stats" >/dev/null ||
    { echo "$0: FAIL: the statistics do not show the paged map at work"; exit 1; }

start_server "$sock" "$pid" "${keys[@]}"
nbdsh -u "$uri" -c "
import sys; sys.path.insert(0, '$tmp'); import model
model.check(h, '$tmp/model', 'after a clean shutdown')"
stop_server "$pid"

"${FTLCTL:-../tools/ftlctl}" check "$disk"
"${FTLCTL:-../tools/ftlctl}" info "$disk" | grep -q "paged: *yes"
