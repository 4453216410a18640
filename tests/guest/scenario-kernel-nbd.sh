# nbdkit-ftl: guest side of test-ftl-kernel-nbd.sh (busybox sh, run by
# tests/guest/init with "sh -e").
#
# The host's nbdkit socket is the virtio-serial port named "nbd"; socat
# bridges it to a Unix socket here, which the kernel's NBD client
# (nbd-client -unix) attaches as /dev/nbd0.
#
#   fill   check the queue limits, mkfs.ext4, mount, write files, trim a
#          deleted file with fstrim (the host checks the FTL saw it),
#          remount and verify, write more, sync, then wait to be killed
#   check  after the guest and the server were killed: mount, verify
#          every file, e2fsck -f -n
#   ns     (test-ftl-kernel-nbd-ns.sh) attach the export named "vm", one
#          namespace of an image of two, with nbd-client -N; report its
#          size and the checksum of its data; wait while the host uses
#          the other namespace; write it whole with new data, read it
#          back past the page cache, report the new checksum, detach
. /lib/guest-lib.sh

phase="$1"

# attach [NBD-CLIENT OPTIONS]: /dev/nbd0 from the host's server.
attach ()
{
    socat UNIX-LISTEN:/run/nbd.sock "OPEN:$(port nbd)" &
    wait_for test -S /run/nbd.sock
    nbd-client "$@" -unix /run/nbd.sock /dev/nbd0 -b 4096
    wait_for test "$(cat /sys/block/nbd0/size)" -gt 0
    say "nbd0: $(($(cat /sys/block/nbd0/size) / 2048)) MiB," \
        "logical_block_size $(cat /sys/block/nbd0/queue/logical_block_size)"
}

case "$phase" in
fill)
    attach
    rot=$(cat /sys/block/nbd0/queue/rotational)
    dmax=$(cat /sys/block/nbd0/queue/discard_max_bytes)
    dgran=$(cat /sys/block/nbd0/queue/discard_granularity)
    say "rotational $rot, discard_max_bytes $dmax, discard_granularity $dgran"
    [ "$rot" = 0 ]
    [ "$dmax" -gt 0 ]

    fill_and_trim /dev/nbd0
    write_files late 4
    sums
    sync
    say "synced $(wc -l < /mnt/SUMS) files; waiting to be killed"
    echo "GUEST-SYNCED"
    # The host kills the guest here.
    sleep 600
    exit 1
    ;;
check)
    attach
    mount -t ext4 /dev/nbd0 /mnt
    verify
    umount /mnt
    fsck_clean /dev/nbd0
    # A clean discard of the whole disk with util-linux's blkdiscard
    # (busybox's has no options).
    /usr/sbin/blkdiscard -f -v /dev/nbd0 > /tmp/discard.out
    say "$(cat /tmp/discard.out)"
    nbd-client -d /dev/nbd0
    say "detached"
    ;;
ns)
    attach -N vm
    bytes=$(($(cat /sys/block/nbd0/size) * 512))
    echo "GUEST-NS-SIZE $bytes"
    sum=$(sha256sum < /dev/nbd0)
    echo "GUEST-NS-SUM ${sum%% *}"
    host_wait other
    dd if=/dev/urandom of=/tmp/new bs=64k count=$((bytes / 65536)) 2>/dev/null
    dd if=/tmp/new of=/dev/nbd0 bs=64k conv=fsync 2>/dev/null
    echo 3 > /proc/sys/vm/drop_caches
    sum=$(sha256sum < /tmp/new)
    [ "$(sha256sum < /dev/nbd0)" = "$sum" ]
    echo "GUEST-NS-NEW ${sum%% *}"
    say "export vm: $bytes bytes written whole and read back"
    nbd-client -d /dev/nbd0
    say "detached"
    ;;
*)
    say "unknown phase '$phase'"
    exit 1
    ;;
esac
