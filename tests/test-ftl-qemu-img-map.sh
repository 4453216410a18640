#!/usr/bin/env bash
# nbdkit-ftl: qemu-img map shows written pages as data and trimmed,
# zeroed and never written pages as zero holes, before and after a
# restart; qemu-img convert and compare follow the same extents.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires qemu-img qemu-io jq timeout

make_tmpdir
export tmp

# The same requests on the FTL and on a plain raw file.  Layout (KiB):
#   0-256 data, 256-512 discarded, 512-1024 data, 1024-4096 never
#   written, 4096-4224 data, 4224-4288 zeroed with unmap, 4288-4352
#   data, 4352-4480 zeroed, 4480-4608 data, the rest never written.
cat > "$tmp/requests" <<'EOF_REQ'
write -P 0x11 0 1M
write -P 0x22 4M 512k
discard 256k 256k
write -z -u 4224k 64k
write -z 4352k 128k
EOF_REQ
# qemu-io reads its commands from standard input.
truncate -s 64M "$tmp/ref.raw"
qemu-io -f raw "$tmp/ref.raw" < "$tmp/requests" > /dev/null

# The extents expected, as [start, length, data] in bytes.
cat > "$tmp/expected.json" <<'EOF_EXP'
[[0, 262144, true],
 [262144, 262144, false],
 [524288, 524288, true],
 [1048576, 3145728, false],
 [4194304, 131072, true],
 [4325376, 65536, false],
 [4390912, 65536, true],
 [4456448, 131072, false],
 [4587520, 131072, true],
 [4718592, 62390272, false]]
EOF_EXP

# check_map FILE: qemu-img map's JSON in FILE has the expected extents,
# and every hole reads as zeros.
check_map ()
{
    jq -c '[.[] | [.start, .length, .data]]' "$1" > "$1.short"
    cat "$1.short"
    jq -e --slurpfile want "$tmp/expected.json" '. == $want[0]' "$1.short"
    jq -e 'all(.[]; .data or .zero)' "$1"
}

timeout 300 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=64M \
    --run '
        set -e
        qemu-io -f raw "$uri" < "$tmp/requests" > /dev/null
        qemu-img map -f raw --output=json "$uri" > "$tmp/map1.json"
        qemu-img compare -f raw -F raw "$tmp/ref.raw" "$uri"
    '
check_map "$tmp/map1.json"

# After a restart: the same extents; a copy to qcow2 allocates only the
# data extents, and its contents match.
timeout 300 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" \
    --run '
        set -e
        qemu-img map -f raw --output=json "$uri" > "$tmp/map2.json"
        qemu-img convert -f raw -O qcow2 "$uri" "$tmp/copy.qcow2"
        qemu-img compare -f raw -F qcow2 "$uri" "$tmp/copy.qcow2"
    '
check_map "$tmp/map2.json"
qemu-img compare -f raw -F qcow2 "$tmp/ref.raw" "$tmp/copy.qcow2"
qemu-img map -f qcow2 --output=json "$tmp/copy.qcow2" > "$tmp/map3.json"
# The copy allocated exactly the data extents of the FTL.
jq -c '[.[] | select(.data) | [.start, .length]]' "$tmp/map3.json" > "$tmp/data3"
jq -c '[.[] | select(.[2]) | [.[0], .[1]]]' "$tmp/expected.json" > "$tmp/data-want"
cat "$tmp/data3"
cmp "$tmp/data3" "$tmp/data-want"
