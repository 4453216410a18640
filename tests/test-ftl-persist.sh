#!/usr/bin/env bash
# nbdkit-ftl: data survives a clean restart, and flushed data survives
# kill -9.  After the kill every page reads back as one of the versions
# written to it, never as another page's data.  (A kill, not a power
# cut: see kill_server in functions.sh.)

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh timeout

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
uri="nbd+unix:///?socket=$sock"

# Page n of version v is filled with a header naming both, so a page that
# comes back with another page's data (or another version) is caught.
cat > "$tmp/pages.py" <<'EOF_PY'
import struct
P = 4096
PAGES = 512

def page(n, v):
    head = struct.pack("<QQ", n, v)
    return (head * (P // len(head)))

def version_of(n, data):
    if data == bytearray(P):
        return 0
    n2, v = struct.unpack_from("<QQ", data)
    assert n2 == n, "page %d holds page %d's data" % (n, n2)
    assert data == page(n, v), "page %d: torn or mixed data" % n
    return v

def write_all(v):
    for n in range(PAGES):
        h.pwrite(page(n, v), n * P)

def versions():
    return [version_of(n, h.pread(P, n * P)) for n in range(PAGES)]
EOF_PY
export tmp

# 1. Write, stop cleanly, start again: the data is there.
start_server "$sock" "$pid" file="$disk" size=64M
timeout 120 nbdsh -u "$uri" -c "exec(open('$tmp/pages.py').read())" -c '
write_all(1)
assert versions() == [1] * PAGES
'
stop_server "$pid"

start_server "$sock" "$pid" file="$disk"
timeout 120 nbdsh -u "$uri" -c "exec(open('$tmp/pages.py').read())" -c '
assert versions() == [1] * PAGES
'

# 2. Write version 2 and flush; then write version 3 to some pages
# without a flush, and kill the server.
timeout 120 nbdsh -u "$uri" -c "exec(open('$tmp/pages.py').read())" -c '
write_all(2)
h.flush()
for n in range(0, PAGES, 3):
    h.pwrite(page(n, 3), n * P)
# A trim after the flush: may or may not survive.
h.trim(16 * P, 64 * P)
'
kill_server "$pid"

start_server "$sock" "$pid" file="$disk"
timeout 120 nbdsh -u "$uri" -c "exec(open('$tmp/pages.py').read())" -c '
v = versions()
for n in range(PAGES):
    allowed = {2}
    if n % 3 == 0:
        allowed.add(3)
    if 64 <= n < 80:
        allowed.add(0)
    assert v[n] in allowed, "page %d: version %d, allowed %s" % (n, v[n], allowed)
print("after the kill: %d pages of version 3, %d trimmed" %
      (v.count(3), v.count(0)))
'

# 3. FUA writes are durable without a flush.
timeout 120 nbdsh -u "$uri" -c "exec(open('$tmp/pages.py').read())" -c '
for n in range(100, 200):
    h.pwrite(page(n, 4), n * P, nbd.CMD_FLAG_FUA)
h.trim(8 * P, 300 * P, nbd.CMD_FLAG_FUA)
'
kill_server "$pid"

start_server "$sock" "$pid" file="$disk"
timeout 120 nbdsh -u "$uri" -c "exec(open('$tmp/pages.py').read())" -c '
v = versions()
assert v[100:200] == [4] * 100, v[100:200]
assert v[300:308] == [0] * 8, v[300:308]
'

# 4. Killed again straight after recovery, with nothing new written: the
# image still opens with the same contents.
timeout 120 nbdsh -u "$uri" -c "exec(open('$tmp/pages.py').read())" \
    -c 'print(versions(), file=open("'"$tmp"'/before", "w"))'
kill_server "$pid"
start_server "$sock" "$pid" file="$disk"
timeout 120 nbdsh -u "$uri" -c "exec(open('$tmp/pages.py').read())" \
    -c 'print(versions(), file=open("'"$tmp"'/after", "w"))'
stop_server "$pid"
cmp "$tmp/before" "$tmp/after"
