#!/usr/bin/env bash
# nbdkit-ftl: build the initramfs of the test guest.
#
#   build-initramfs.sh KVER SCENARIO OUTPUT
#
# KVER is the version of an installed kernel (its modules are under
# /lib/modules/KVER), SCENARIO the guest side of a test (a busybox sh
# script, run as /scenario by tests/guest/init), OUTPUT the gzipped cpio
# archive to write.  The guest gets:
#
#   /bin/busybox          busybox-static, with its applets linked at boot
#   /init                 tests/guest/init
#   /scenario             SCENARIO
#   /lib/guest-lib.sh     tests/guest/lib.sh, helpers for the scenario
#   /lib/modules/*.ko     virtio (PCI, console, block) and nbd, with their
#                         dependencies, uncompressed, listed in load order
#                         in /lib/modules/load-order
#   /usr/sbin, /usr/bin   nbd-client, socat, mkfs.ext4, e2fsck, sqlite3, util-linux's
#                         blkdiscard and fstrim, with their shared libraries
set -euo pipefail

if [ $# -ne 3 ]; then
    echo "usage: $0 KVER SCENARIO OUTPUT" >&2
    exit 1
fi
kver="$1"
scenario="$2"
output="$3"
here="$(cd "$(dirname "$0")" && pwd)"
moddir="/lib/modules/$kver"

die () { echo "$0: $*" >&2; exit 1; }

[ -d "$moddir" ] || die "no modules for kernel $kver in $moddir"
[ -f "$scenario" ] || die "scenario $scenario not found"
busybox="$(command -v busybox || :)"
[ -n "$busybox" ] || die "busybox not found (Debian package busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then
    die "$busybox is dynamically linked; install busybox-static"
fi

root="$(mktemp -d "${TMPDIR:-/tmp}/ftl-initramfs.XXXXXX")"
trap 'rm -rf "$root"' EXIT

mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,lib/modules,lib64,etc,proc,sys,dev,run,tmp,mnt}
cp "$busybox" "$root/bin/busybox"
ln -s busybox "$root/bin/sh"
install -m 755 "$here/init" "$root/init"
install -m 755 "$scenario" "$root/scenario"
cp "$here/lib.sh" "$root/lib/guest-lib.sh"

# Kernel modules in load order, as modprobe would load them.  Only the
# file names are kept (not the options of the host's modprobe.d), and
# compressed modules are uncompressed: busybox's insmod reads plain ELF.
: > "$root/lib/modules/load-order"
for mod in virtio_pci virtio_console virtio_blk nbd; do
    modprobe -S "$kver" --show-depends "$mod" > "$root/deps" ||
        die "modprobe cannot resolve module $mod for kernel $kver"
    while read -r verb path _; do
        # Built-in modules show up as "builtin NAME".
        [ "$verb" = insmod ] || continue
        name="$(basename "$path")"
        name="${name%%.ko*}.ko"
        grep -qx "$name" "$root/lib/modules/load-order" && continue
        case "$path" in
            *.ko)     cp "$path" "$root/lib/modules/$name" ;;
            *.ko.xz)  xz -dc "$path" > "$root/lib/modules/$name" ;;
            *.ko.gz)  gzip -dc "$path" > "$root/lib/modules/$name" ;;
            *.ko.zst) zstd -qdc "$path" > "$root/lib/modules/$name" ;;
            *) die "unknown module format: $path" ;;
        esac
        echo "$name" >> "$root/lib/modules/load-order"
    done < "$root/deps"
done
rm "$root/deps"

# Dynamically linked programs and every library they load, at the same
# paths as on the host (the dynamic loader finds them there).
copy_file ()
{
    local src="$1" dst="$root$1"
    [ -e "$dst" ] && return 0
    mkdir -p "$(dirname "$dst")"
    cp -L "$src" "$dst"
}
copy_program ()
{
    local prog="$1" dst="$2" lib
    [ -x "$prog" ] || die "$prog not found"
    cp -L "$prog" "$root$dst"
    # ldd prints "name => /path (addr)" or "/path (addr)" for the loader.
    for lib in $(ldd "$prog" | sed -n 's,.*=> \(/[^ ]*\) .*,\1,p; s,^[[:space:]]*\(/[^ ]*\) .*,\1,p'); do
        copy_file "$lib"
    done
}
copy_program "$(command -v nbd-client || echo /usr/sbin/nbd-client)" /usr/sbin/nbd-client
copy_program "$(command -v socat || echo /usr/bin/socat)" /usr/bin/socat
copy_program /sbin/mke2fs /usr/sbin/mkfs.ext4
copy_program /sbin/e2fsck /usr/sbin/e2fsck
copy_program /sbin/blkdiscard /usr/sbin/blkdiscard
copy_program /sbin/fstrim /usr/sbin/fstrim
copy_program "$(command -v sqlite3 || echo /usr/bin/sqlite3)" /usr/bin/sqlite3
[ -f /etc/mke2fs.conf ] && cp /etc/mke2fs.conf "$root/etc/"
# libnl and nbd-client look up protocol and user names.
echo "root:x:0:0:root:/:/bin/sh" > "$root/etc/passwd"
echo "root:x:0:" > "$root/etc/group"

(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc --quiet) |
    gzip -1 > "$output"
