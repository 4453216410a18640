#!/usr/bin/env bash
# nbdkit-ftl: qemu-io writes, discards and zeroes, with and without FUA.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires qemu-io timeout

make_tmpdir

# qemu-io exits non-zero when any command, a read -P check included,
# fails.  Without -t none every write carries FUA; with it, none does.
timeout 300 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=64M \
    --run '
        set -e
        qemu-io -f raw "$uri" \
            -c "write -P 0x11 0 1M" \
            -c "write -P 0x22 4196 5000" \
            -c "read -P 0x11 0 4196" \
            -c "read -P 0x22 4196 5000" \
            -c "read -P 0x11 9196 1039380" \
            -c "discard 64k 128k" \
            -c "read -P 0x11 9196 56340" \
            -c "read -P 0 64k 128k" \
            -c "read -P 0x11 192k 64k" \
            -c "discard 12345 1000" \
            -c "read -P 0x11 9196 3149" \
            -c "read -P 0x11 12345 1000" \
            -c "write -z 256k 64k" \
            -c "read -P 0 256k 64k" \
            -c "write -z -u 320k 64k" \
            -c "read -P 0 320k 64k" \
            -c "write -z 400000 10000" \
            -c "read -P 0x11 384k 6784" \
            -c "read -P 0 400000 10000" \
            -c "read -P 0x11 410000 2000"

        qemu-io -f raw -t none "$uri" \
            -c "write -P 0x33 2M 1M" \
            -c "write -P 0x44 3M 3333" \
            -c "flush" \
            -c "read -P 0x33 2M 1M" \
            -c "read -P 0x44 3M 3333" \
            -c "read -P 0 3149061 763" \
            -c "discard 2M 512k" \
            -c "write -z -u 2560k 512k" \
            -c "read -P 0 2M 1M" \
            -c "aio_write -P 0x55 8M 64k" \
            -c "aio_write -P 0x66 9M 64k" \
            -c "aio_flush" \
            -c "read -P 0x55 8M 64k" \
            -c "read -P 0x66 9M 64k"
    '

# After a restart the image holds what was written.
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" \
    --run '
        qemu-io -f raw -r "$uri" \
            -c "read -P 0x11 0 4196" \
            -c "read -P 0 64k 128k" \
            -c "read -P 0 256k 128k" \
            -c "read -P 0 2M 1M" \
            -c "read -P 0x44 3M 3333" \
            -c "read -P 0x55 8M 64k"
    '
