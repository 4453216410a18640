#!/usr/bin/env bash
# nbdkit-ftl: what qemu-io sends, as nbdkit's log filter records it, and
# what the FTL makes of it: FUA on every write without -t none and only
# on "write -f" with it, write zeroes with and without unmap, discards
# and flushes, all read back after a restart.  The ranges zeroed and
# discarded hold data first (0x55), so that reading zeros back shows
# that the request ran.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires qemu-io jq timeout
if ! nbdkit --filter=log null logfile=/dev/null --run true >/dev/null 2>&1; then
    missing "nbdkit's log filter"
fi

make_tmpdir
export tmp

# Each qemu-io run is one connection, one line "Connect" in the log.
timeout 300 nbdkit -U - --filter=log "$FTL_PLUGIN" \
    file="$tmp/disk.img" size=64M stats="$tmp/stats.json" \
    logfile="$tmp/log" \
    --run '
        set -e
        qemu-io -f raw "$uri" \
            -c "write -P 0x55 128k 192k" \
            -c "write -P 0x11 0 64k" \
            -c "write -f -P 0x22 64k 4k" \
            -c "write -z 128k 8k" \
            -c "write -z -u 192k 8k" \
            -c "discard 256k 64k" \
            -c "flush" \
            -c "read -P 0x11 0 64k" \
            -c "read -P 0x22 64k 4k" \
            -c "read -P 0 128k 8k" \
            -c "read -P 0x55 136k 56k" \
            -c "read -P 0 192k 8k" \
            -c "read -P 0 256k 64k"
        qemu-io -f raw -t none "$uri" \
            -c "write -P 0x55 1152k 192k" \
            -c "write -P 0x33 1M 64k" \
            -c "write -f -P 0x44 1088k 4k" \
            -c "write -z -f 1152k 8k" \
            -c "write -z -u 1216k 8k" \
            -c "discard 1280k 64k" \
            -c "flush" \
            -c "read -P 0x33 1M 64k" \
            -c "read -P 0x44 1088k 4k" \
            -c "read -P 0 1152k 8k" \
            -c "read -P 0x55 1160k 56k" \
            -c "read -P 0 1216k 8k" \
            -c "read -P 0 1280k 64k"
    '

# requests CONN KIND: the log lines of one kind of request, beginning
# "Write", "Zero", "Trim" or "Flush", on connection CONN.
requests ()
{
    grep "connection=$1 $2 id=" "$tmp/log" | sed 's/.* id=[0-9]* //; s/ \.\.\.$//'
}
for c in 1 2; do
    for k in Write Zero Trim Flush; do
        echo "connection $c: $k: $(requests $c $k | tr '\n' ';')"
    done
done

# Without -t none every write carries FUA (qemu's writethrough cache).
test "$(requests 1 Write)" = "offset=0x20000 count=0x30000 fua=1
offset=0x0 count=0x10000 fua=1
offset=0x10000 count=0x1000 fua=1"
test "$(requests 1 Zero)" = "offset=0x20000 count=0x2000 trim=0 fua=1 fast=0
offset=0x30000 count=0x2000 trim=1 fua=1 fast=0"
test "$(requests 1 Trim)" = "offset=0x40000 count=0x10000 fua=0"
# With -t none only "write -f" does.
test "$(requests 2 Write)" = "offset=0x120000 count=0x30000 fua=0
offset=0x100000 count=0x10000 fua=0
offset=0x110000 count=0x1000 fua=1"
test "$(requests 2 Zero)" = "offset=0x120000 count=0x2000 trim=0 fua=1 fast=0
offset=0x130000 count=0x2000 trim=1 fua=0 fast=0"
test "$(requests 2 Trim)" = "offset=0x140000 count=0x10000 fua=0"
test "$(requests 2 Flush | wc -l)" -ge 1
# Every request succeeded.
if grep -E 'return=-1|error' "$tmp/log"; then
    echo "$0: FAIL: a request failed"
    exit 1
fi

# The FTL counted what it was sent: 48 + 16 + 1 pages written, 2 + 2
# zeroed and 16 trimmed on each connection; of the 130 pages written,
# the 40 zeroed or trimmed are unmapped again.
cat "$tmp/stats.json"
jq -e '.host.write_pages == 130' "$tmp/stats.json"
jq -e '.host.trim_pages == 40' "$tmp/stats.json"
jq -e '.host.flushes >= 2' "$tmp/stats.json"
jq -e '.mapped_pages == 90' "$tmp/stats.json"

# After a restart everything reads back.
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" \
    --run '
        qemu-io -f raw -r "$uri" \
            -c "read -P 0x11 0 64k" \
            -c "read -P 0x22 64k 4k" \
            -c "read -P 0 128k 8k" \
            -c "read -P 0x55 136k 56k" \
            -c "read -P 0 192k 8k" \
            -c "read -P 0x55 200k 56k" \
            -c "read -P 0 256k 64k" \
            -c "read -P 0x33 1M 64k" \
            -c "read -P 0x44 1088k 4k" \
            -c "read -P 0 1152k 8k" \
            -c "read -P 0x55 1160k 56k" \
            -c "read -P 0 1216k 8k" \
            -c "read -P 0x55 1224k 56k" \
            -c "read -P 0 1280k 64k"
    '
