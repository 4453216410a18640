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

    /usr/sbin/mkfs.ext4 -q -F -b 4096 /dev/vda
    say "mkfs.ext4 done"
    mount -t ext4 /dev/vda /mnt
    i=0
    while [ $i -lt 8 ]; do
        dd if=/dev/urandom of=/mnt/keep-$i bs=64k count=$((i + 1)) 2>/dev/null
        i=$((i + 1))
    done
    dd if=/dev/urandom of=/mnt/junk bs=1M count=16 2>/dev/null
    (cd /mnt && sha256sum keep-* > SUMS)
    sync
    say "wrote $(ls /mnt | wc -l) files, $(du -sk /mnt | cut -f1) KiB"
    host_wait filled

    rm /mnt/junk
    sync
    say "$(/usr/sbin/fstrim -v /mnt)"
    sync
    host_wait trimmed

    umount /mnt
    mount -t ext4 /dev/vda /mnt
    (cd /mnt && sha256sum -c SUMS > /tmp/verify.out)
    say "verified $(grep -c ': OK$' /tmp/verify.out) of $(wc -l < /mnt/SUMS) files"
    umount /mnt
    /usr/sbin/e2fsck -f -n /dev/vda > /tmp/fsck.out 2>&1 || {
        cat /tmp/fsck.out
        say "e2fsck -f -n found problems"
        exit 1
    }
    say "e2fsck -f -n: clean ($(tail -n 1 /tmp/fsck.out))"
    ;;
*)
    say "unknown phase '$1'"
    exit 1
    ;;
esac
