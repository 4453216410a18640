#!/usr/bin/env bash
# nbdkit-ftl: a 2 TiB disk on a small machine.  Memory, checkpoints and
# recovery follow the data written, not the capacity (format version
# 5): the image is created, written at random offsets across its whole
# span, killed after a flush, reopened (recovery), verified, shut down
# cleanly, reopened and verified again, and ftlctl check finds it
# consistent; it stays small on the host's disk and the server's memory
# stays far below the 4 GiB a fully mapped map of this size would take.  (How fast: bench/, not here.)

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh timeout
[ -x "${FTLCTL:-../tools/ftlctl}" ] || missing "ftlctl (tools/) not built"

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
uri="nbd+unix:///?socket=$sock"

# write.py SEED N: write N pages at offsets spread over the disk (their
# list in $tmp/written), with a flush every 16 and one at the end.
# check.py: every page in the list reads back; pages beside them read
# as zeros.
cat > "$tmp/pages.py" <<'EOF_PY'
import random, struct
P = 4096

def page(n):
    head = struct.pack("<QQ", n, 0x4c41524745)
    return head * (P // len(head))

def write(h, seed, count, listname):
    r = random.Random(seed)
    pages = h.get_size() // P
    chosen = set()
    while len(chosen) < count:
        chosen.add(r.randrange(pages))
    # The first and the last page too: the ends of the map.
    chosen |= {0, pages - 1}
    for i, n in enumerate(sorted(chosen, key=lambda n: r.random())):
        h.pwrite(page(n), n * P)
        if i % 16 == 15:
            h.flush()
    h.flush()
    open(listname, "w").write(" ".join(map(str, sorted(chosen))))

def check(h, listname, what):
    chosen = [int(x) for x in open(listname).read().split()]
    pages = h.get_size() // P
    for n in chosen:
        assert h.pread(P, n * P) == page(n), "%s: page %d lost" % (what, n)
    zeros = bytearray(P)
    for n in chosen:
        for m in (n - 1, n + 1):
            if 0 <= m < pages and m not in chosen:
                assert h.pread(P, m * P) == zeros, \
                    "%s: page %d, never written, holds data" % (what, m)
    print("%s: %d pages verified across %d GiB" %
          (what, len(chosen), h.get_size() >> 30))
EOF_PY

rss_kib () { awk '/^VmHWM/ { print $2 }' "/proc/$(cat "$pid")/status"; }

start_server "$sock" "$pid" file="$disk" size=2T
nbdsh -u "$uri" -c "
import sys; sys.path.insert(0, '$tmp'); import pages
pages.write(h, 20261206, 300, '$tmp/written')"
peak=$(rss_kib)
kill_server "$pid"

start_server "$sock" "$pid" file="$disk"
nbdsh -u "$uri" -c "
import sys; sys.path.insert(0, '$tmp'); import pages
pages.check(h, '$tmp/written', 'after a kill')"
peak=$(( $(rss_kib) > peak ? $(rss_kib) : peak ))
stop_server "$pid"

start_server "$sock" "$pid" file="$disk"
nbdsh -u "$uri" -c "
import sys; sys.path.insert(0, '$tmp'); import pages
pages.check(h, '$tmp/written', 'after a clean shutdown')"
peak=$(( $(rss_kib) > peak ? $(rss_kib) : peak ))
stop_server "$pid"

# ftlctl check reads what the map holds, not the capacity either.
"${FTLCTL:-../tools/ftlctl}" check "$disk"

# Small on the host: 302 data pages, their blocks' metadata, the block
# tables; far below the 4 GiB of two checkpoints of a full map.
alloc_kib=$(du -k "$disk" | cut -f1)
echo "image: $(( $(stat -c %s "$disk") >> 30 )) GiB apparent, $(( alloc_kib >> 10 )) MiB allocated;" \
     "server peak RSS $(( peak >> 10 )) MiB"
if [ "$alloc_kib" -gt $(( 256 * 1024 )) ]; then
    echo "$0: FAIL: the image holds $(( alloc_kib >> 10 )) MiB (at most 256 MiB expected)"
    exit 1
fi
if [ "$peak" -gt $(( 512 * 1024 )) ]; then
    echo "$0: FAIL: the server's peak RSS was $(( peak >> 10 )) MiB (at most 512 MiB expected)"
    exit 1
fi
