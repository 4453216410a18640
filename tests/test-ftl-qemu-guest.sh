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

guest_wait_for "GUEST-WAIT filled"
sleep 2.5
mapped1=$(stat .mapped_pages)
trim1=$(stat .host.trim_pages)
echo "after the writes: mapped_pages $mapped1, host.trim_pages $trim1"
# mkfs.ext4 discarded the whole disk first.
guest_check "mkfs.ext4's discard of the whole disk reached the FTL" \
    test "$trim1" -ge $((128 * 256 - 64))
guest_answer filled

# The guest deleted a 16 MiB file (4096 pages) and ran fstrim: at least
# as many pages were trimmed, and most of them were unmapped (ext4 wrote
# a few new metadata pages meanwhile).
guest_wait_for "GUEST-WAIT trimmed"
for (( i = 0; i < 100; i++ )); do
    mapped2=$(stat .mapped_pages)
    trim2=$(stat .host.trim_pages)
    if [ "$trim2" -ge $((trim1 + 4096)) ] &&
       [ "$mapped2" -le $((mapped1 - 3840)) ]; then
        break
    fi
    sleep 0.2
done
echo "after fstrim: mapped_pages $mapped2, host.trim_pages $trim2"
guest_check "fstrim's trims reached the FTL" \
    test "$trim2" -ge $((trim1 + 4096))
guest_check "the deleted file's pages were unmapped" \
    test "$mapped2" -le $((mapped1 - 3840))
guest_answer trimmed

guest_finish
stop_server "$pidfile"
cat "$stats"
# The guest's syncs reached the server as flushes.
stat '.host.flushes > 0'
echo "total: $((SECONDS - start)) s"
