#!/usr/bin/env bash
# nbdkit-ftl: the Linux kernel's NBD client on one namespace of an image
# of two, while the other is served to the host.
#
# The image holds namespaces "host" (8 MiB) and "vm" (12 MiB) with room
# to spare, each filled with its own random data over NBD.  A guest
# (as test-ftl-kernel-nbd.sh: qemu with TCG, no IP network, the server's
# socket on a virtio-serial port that socat bridges in the guest)
# attaches the export "vm" with nbd-client -N, and reports its size and
# the checksum of its data, which must be vm's.  While it is attached,
# the host reads "host" back over another connection and rewrites it.
# Then the guest writes "vm" whole with new data and reads it back past
# its page cache.  After a restart of the server, each namespace holds
# what was last written to it: nothing of one reads back in the other.

source "${srcdir:-.}/functions.sh"
source "${srcdir:-.}/guest/functions.sh"
requires_plugin
requires jq nbdinfo nbdcopy sha256sum cmp
guest_requires

make_tmpdir
start=$SECONDS
guest_build "${srcdir:-.}/guest/scenario-kernel-nbd.sh"

sock="$tmp/nbd.sock"
pidfile="$tmp/nbdkit.pid"
uri () { echo "nbd+unix:///${1:-}?socket=$sock"; }
sum () { sha256sum < "$1" | cut -d' ' -f1; }

start_server "$sock" "$pidfile" file="$tmp/disk.img" size=32M pages-per-block=16 \
    namespaces=host:8M,vm:12M
nbdinfo --list --json "$(uri)" |
    jq -e '[.exports[] | [."export-name", ."export-size"]] ==
           [["host", 8388608], ["vm", 12582912]]'
head -c 8M /dev/urandom > "$tmp/host.0"
head -c 12M /dev/urandom > "$tmp/vm.0"
nbdcopy "$tmp/host.0" "$(uri host)"
nbdcopy "$tmp/vm.0" "$(uri vm)"

nbd_port=(
    -chardev socket,id=nbd,path="$sock"
    -device virtserialport,bus=vser.0,chardev=nbd,name=nbd
)
guest_start ns "${nbd_port[@]}"
guest_wait_for "GUEST-WAIT other"

# The guest's disk is the namespace "vm": its size and its data.
size=$(guest_lines | sed -n 's/^GUEST-NS-SIZE //p')
echo "the guest's /dev/nbd0: $size bytes"
guest_check "the guest's disk is vm's size" test "$size" = $((12 << 20))
guest_check "the guest reads vm's data" \
    test "$(guest_lines | sed -n 's/^GUEST-NS-SUM //p')" = "$(sum "$tmp/vm.0")"

# Meanwhile the other namespace is served to the host, as it was.
nbdcopy "$(uri host)" "$tmp/host.r"
cmp "$tmp/host.0" "$tmp/host.r"
head -c 8M /dev/urandom > "$tmp/host.1"
nbdcopy "$tmp/host.1" "$(uri host)"
guest_answer other
guest_finish
new=$(guest_lines | sed -n 's/^GUEST-NS-NEW //p')
test -n "$new"
stop_server "$pidfile"

# After a restart, each as last written.
start_server "$sock" "$pidfile" file="$tmp/disk.img"
nbdcopy "$(uri vm)" "$tmp/vm.r"
nbdcopy "$(uri host)" "$tmp/host.r"
stop_server "$pidfile"
test "$(sum "$tmp/vm.r")" = "$new"
cmp "$tmp/host.1" "$tmp/host.r"
echo "total: $((SECONDS - start)) s"
