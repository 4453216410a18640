#!/usr/bin/env bash
# nbdkit-ftl: qemu serves the export to a guest as a virtio disk.
#
# The guest (the same kernel and kind of initramfs as the kernel NBD
# client test) sees the export as /dev/vda through qemu's nbd block
# driver on the Unix socket, with discard=unmap: its fstrim must reach
# the FTL as trims that unmap the pages of a deleted file.

source "${srcdir:-.}/functions.sh"
source "${srcdir:-.}/guest/functions.sh"
requires_plugin
requires jq
guest_requires

make_tmpdir
start=$SECONDS
guest_build "${srcdir:-.}/guest/scenario-virtio-disk.sh"

sock="$tmp/nbd.sock"
pidfile="$tmp/nbdkit.pid"
stats="$tmp/stats.json"
start_server "$sock" "$pidfile" file="$tmp/disk.img" size=128M \
    stats="$stats"

# stat KEY: a number (or test) from the statistics file.
stat () { jq -e "$1" "$stats"; }

guest_start run \
    -drive if=virtio,format=raw,discard=unmap,file.driver=nbd,file.server.type=unix,file.server.path="$sock"

guest_fill_and_trim

guest_finish
stop_server "$pidfile"
cat "$stats"
# The guest's syncs reached the server as flushes.
stat '.host.flushes > 0'
echo "total: $((SECONDS - start)) s"
