# nbdkit-ftl: helpers for the guest side of the tests (busybox sh),
# installed as /lib/guest-lib.sh; scenarios source it.

# say TEXT...: a line for the host.
say () { echo "GUEST: $*"; }

# port NAME: the device of the virtio-serial port called NAME.  There is
# no udev here: the names are in sysfs.
port ()
{
    local p i=0
    while [ $i -lt 100 ]; do
        for p in /sys/class/virtio-ports/*; do
            if [ -r "$p/name" ] && [ "$(cat "$p/name")" = "$1" ]; then
                echo "/dev/${p##*/}"
                return 0
            fi
        done
        sleep 0.1
        i=$((i + 1))
    done
    echo "GUEST: no virtio port named $1" >&2
    return 1
}

# host_wait NAME: tell the host we reached NAME and wait until it
# answers on the port called "ctl".
host_wait ()
{
    local line
    echo "GUEST-WAIT $1"
    read -r line < "$(port ctl)"
    [ "$line" = "go $1" ] || { echo "GUEST: host answered '$line'"; return 1; }
}

# wait_for TEST...: wait up to 10 s until the test command succeeds.
wait_for ()
{
    local i=0
    while ! "$@"; do
        [ $i -lt 100 ] || { echo "GUEST: timed out waiting for: $*"; return 1; }
        sleep 0.1
        i=$((i + 1))
    done
}

# write_files PREFIX N: N files of random data, /mnt/PREFIX-0 (64 KiB)
# to /mnt/PREFIX-(N-1) (N * 64 KiB).
write_files ()
{
    local prefix="$1" n="$2" i=0
    while [ $i -lt "$n" ]; do
        dd if=/dev/urandom of="/mnt/$prefix-$i" bs=64k count=$((i + 1)) 2>/dev/null
        i=$((i + 1))
    done
}

# sums: the checksums of the keep-* and late-* files, in /mnt/SUMS.
sums ()
{
    (cd /mnt && sha256sum $(ls | grep -E '^(keep|late)-') > SUMS.new &&
        mv SUMS.new SUMS)
}

# verify: check the files against /mnt/SUMS (fails on a mismatch).
verify ()
{
    (cd /mnt && sha256sum -c SUMS > /tmp/verify.out)
    say "verified $(grep -c ': OK$' /tmp/verify.out) of $(wc -l < /mnt/SUMS) files"
}

# fill_and_trim DEV: ext4 on DEV, mounted on /mnt, with 8 files kept and
# a 16 MiB one deleted and trimmed with fstrim; the host looks at the
# FTL at "filled" and at "trimmed".  Then mounted again and verified.
fill_and_trim ()
{
    # Inode tables written now, not by the kernel in the background
    # (which would change the mapped pages under the host's checks).
    /usr/sbin/mkfs.ext4 -q -F -b 4096 -E lazy_itable_init=0 "$1"
    say "mkfs.ext4 done"
    mount -t ext4 "$1" /mnt
    write_files keep 8
    dd if=/dev/urandom of=/mnt/junk bs=1M count=16 2>/dev/null
    sums
    sync
    say "wrote $(ls /mnt | wc -l) files, $(du -sk /mnt | cut -f1) KiB"
    host_wait filled

    rm /mnt/junk
    sync
    say "$(/usr/sbin/fstrim -v /mnt)"
    sync
    host_wait trimmed

    umount /mnt
    mount -t ext4 "$1" /mnt
    verify
}

# fsck_clean DEV: e2fsck -f -n finds nothing wrong on DEV (unmounted).
fsck_clean ()
{
    /usr/sbin/e2fsck -f -n "$1" > /tmp/fsck.out 2>&1 || {
        cat /tmp/fsck.out
        say "e2fsck -f -n found problems"
        exit 1
    }
    say "e2fsck -f -n: clean ($(tail -n 1 /tmp/fsck.out))"
}
