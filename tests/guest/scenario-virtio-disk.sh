# nbdkit-ftl: guest side of test-ftl-qemu-guest.sh (busybox sh, run by
# tests/guest/init with "sh -e").
#
# qemu serves the export to the guest as a virtio disk (/dev/vda) with
# discard=unmap.  The guest formats it with ext4, writes files, deletes
# one and runs fstrim (the host checks the FTL saw the trims), then
# remounts, verifies and checks the file system.
. /lib/guest-lib.sh

case "$1" in
run)
    wait_for test -b /dev/vda
    rot=$(cat /sys/block/vda/queue/rotational)
    dmax=$(cat /sys/block/vda/queue/discard_max_bytes)
    say "vda: $(($(cat /sys/block/vda/size) / 2048)) MiB, rotational $rot," \
        "discard_max_bytes $dmax," \
        "write cache: $(cat /sys/block/vda/queue/write_cache)"
    [ "$dmax" -gt 0 ]

    fill_and_trim /dev/vda
    umount /mnt
    fsck_clean /dev/vda
    ;;
*)
    say "unknown phase '$1'"
    exit 1
    ;;
esac
