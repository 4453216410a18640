#!/usr/bin/env bash
# nbdkit-ftl: qemu-img copies a disk image in and out unchanged.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires qemu-img cmp head timeout

make_tmpdir

# 16 MiB: random data, a run of zeros, and random data again.
head -c 6M /dev/urandom > "$tmp/in.raw"
head -c 4M /dev/zero >> "$tmp/in.raw"
head -c 6M /dev/urandom >> "$tmp/in.raw"

# The disk is exactly as large as the file.  256 KiB erase blocks give a
# disk this small enough spare blocks.
export tmp
timeout 300 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=16M \
    pages-per-block=64 \
    --run '
        set -e
        qemu-img convert -n -f raw -O raw "$tmp/in.raw" "$uri"
        qemu-img compare -f raw -F raw "$tmp/in.raw" "$uri"
        qemu-img convert -f raw -O raw "$uri" "$tmp/out.raw"
    '
cmp "$tmp/in.raw" "$tmp/out.raw"

# And again after a restart, from what the image holds.
rm "$tmp/out.raw"
timeout 300 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" \
    --run 'qemu-img convert -f raw -O raw "$uri" "$tmp/out.raw"'
cmp "$tmp/in.raw" "$tmp/out.raw"
