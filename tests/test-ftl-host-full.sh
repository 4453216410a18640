#!/usr/bin/env bash
# nbdkit-ftl: a sparse image on a filesystem that fills under it.
# Writes fail with ENOSPC and nothing flushed is lost; the close cannot
# write its checkpoint; the next open serves the image read-only (every
# flushed byte intact, writes refused), says why in the log, and sets
# the health log's read-only bit (critical_warning bit 3, value 8).
# Once space is freed, the image opens read-write again.
#
# Needs a small filesystem of its own: a tmpfs, mounted here (root).

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout mount umount

make_tmpdir
mnt="$tmp/mnt"
disk="$mnt/disk.img"
stats="$tmp/stats.json"
mount_tmpfs "$mnt" 48m

# Space that is freed later.
dd if=/dev/zero of="$mnt/ballast" bs=1M count=8 status=none

# nbdsh_run SCRIPT ARGS...: run the nbdsh code in file SCRIPT against
# the plugin with ARGS, with the server's messages in the output.
nbdsh_run ()
{
    local script="$1"
    shift
    rm -f "$tmp/sock"
    timeout 120 nbdkit -U "$tmp/sock" "$FTL_PLUGIN" "$@" \
        --run "nbdsh -u \"\$uri\" -c \"exec(open('$script').read())\""
}

# A 512 MiB disk (a checkpoint is due only after 64 MiB of writes, so
# none is written before the filesystem is full): fill it, 1 MiB at a
# time, each flushed, until a write fails.  $tmp/acked is the bytes
# acknowledged by a flush.
cat > "$tmp/fill.py" <<EOF
import errno
n = 0
try:
    for i in range(512):
        h.pwrite(bytes([i % 251 + 1]) * (1 << 20), i << 20)
        h.flush()
        n = (i + 1) << 20
except nbd.Error as e:
    print("stopped after", n, "bytes:", e.string)
    assert e.errno in (errno.ENOSPC, "ENOSPC"), e.errno
open("$tmp/acked", "w").write(str(n))
EOF
nbdsh_run "$tmp/fill.py" file="$disk" size=512M > "$tmp/fill.log" 2>&1 || :
cat "$tmp/fill.log"
acked="$(cat "$tmp/acked")"
if [ "$acked" -lt $((16 << 20)) ] || [ "$acked" -ge $((48 << 20)) ]; then
    echo "$0: FAIL: $acked bytes written into a 48 MiB tmpfs"
    exit 1
fi
# The close could not write its checkpoint (else this tests nothing).
if ! grep -q 'close: No space left on device' "$tmp/fill.log"; then
    echo "$0: FAIL: the close did not fail: the filesystem was not full"
    exit 1
fi

# The first $acked bytes, as written.
check_data="
for i in range($acked >> 20):
    b = h.pread(1 << 20, i << 20)
    assert b == bytes([i % 251 + 1]) * (1 << 20), 'MiB %d differs' % i
print('$acked bytes intact')
"

# Full: read-only, data intact, writes refused, the reason logged, the
# read-only bit set.
cat > "$tmp/ro.py" <<EOF
import errno
assert h.is_read_only()
$check_data
try:
    h.pwrite(b'x' * 4096, 0)
    assert False, 'a write succeeded'
except nbd.Error as e:
    print('write refused:', e.string)
    # nbdkit refuses writes itself (EPERM): the export is read-only.
    assert e.errno in (errno.EPERM, errno.EROFS, errno.ENOSPC,
                       "EPERM", "EROFS", "ENOSPC"), e.errno
EOF
nbdsh_run "$tmp/ro.py" file="$disk" stats="$stats" > "$tmp/ro.log" 2>&1 ||
    { cat "$tmp/ro.log"; echo "$0: FAIL: the full image did not open"; exit 1; }
cat "$tmp/ro.log"
grep -q 'the filesystem that holds the image is full' "$tmp/ro.log"
jq "{readonly, health}" "$stats"
jq -e '.readonly == true' "$stats" >/dev/null
jq -e '.health.critical_warning == 8' "$stats" >/dev/null

# Space freed: read-write again, the data still there.
rm "$mnt/ballast"
rm -f "$stats"
cat > "$tmp/rw.py" <<EOF
assert not h.is_read_only()
$check_data
h.pwrite(b'y' * 4096, 0)
h.flush()
assert h.pread(4096, 0) == b'y' * 4096
EOF
nbdsh_run "$tmp/rw.py" file="$disk" stats="$stats" > "$tmp/rw.log" 2>&1 ||
    { cat "$tmp/rw.log"; echo "$0: FAIL: the image did not open"; exit 1; }
cat "$tmp/rw.log"
if grep -q 'is full' "$tmp/rw.log"; then
    echo "$0: FAIL: still full after space was freed"
    exit 1
fi
jq -e '.readonly == false and .health.critical_warning == 0' "$stats" \
    >/dev/null
echo "$0: OK"
