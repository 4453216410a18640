#!/usr/bin/env bash
# nbdkit-ftl: every kind of bad input is refused with a clear error and
# a non-zero exit status, and never changes the image.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh sha256sum timeout head

make_tmpdir
disk="$tmp/disk.img"

# checksum FILE: its SHA-256, or "absent" ("-": nothing to check).
checksum ()
{
    if [ "$1" = - ]; then echo -
    elif [ -e "$1" ]; then sha256sum < "$1"
    else echo absent
    fi
}

# A good image with some data in it.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$disk" size=64M \
    --run 'nbdsh -u "$uri" -c "h.pwrite(b\"x\" * 65536, 0); h.flush()"'
sum="$(checksum "$disk")"

# refuse FILE PATTERN ARGS...: nbdkit must fail, print an error matching
# PATTERN (grep -E), and leave FILE as it was (or absent if it was; use
# "-" for FILE when the caller checks it).
refuse ()
{
    local file="$1" pattern="$2" before after r=0
    shift 2
    before="$(checksum "$file")"
    # An explicit socket: nbdkit -U - leaves its temporary directory in
    # /tmp behind when it fails to start.
    timeout 60 nbdkit -U "$tmp/sock" "$FTL_PLUGIN" "$@" --run 'exit 0' \
        > "$tmp/out" 2>&1 || r=$?
    cat "$tmp/out"
    if [ $r -eq 0 ]; then
        echo "$0: FAIL: nbdkit accepted: $*"
        exit 1
    fi
    if ! grep -qE "$pattern" "$tmp/out"; then
        echo "$0: FAIL: no error matching '$pattern' for: $*"
        exit 1
    fi
    after="$(checksum "$file")"
    if [ "$before" != "$after" ]; then
        echo "$0: FAIL: $file changed after: $*"
        exit 1
    fi
    echo "refused as expected: $*"
}

# No file= at all.
refuse "$disk" 'file=' size=64M

# A file that does not exist, without size= to create it.
refuse "$tmp/missing.img" 'missing.img' file="$tmp/missing.img"
test ! -e "$tmp/missing.img"

# Parameters out of range or malformed.  Each names the parameter.
refuse "$disk" 'unknown parameter .foo.' file="$disk" foo=bar
refuse "$disk" 'page-size' file="$disk" page-size=3000
refuse "$tmp/new.img" 'page-size' file="$tmp/new.img" size=64M page-size=256
refuse "$disk" 'pages-per-block' file="$disk" pages-per-block=3
refuse "$disk" 'pages-per-block' file="$disk" pages-per-block=4
refuse "$disk" 'op' file="$disk" op=0
refuse "$disk" 'op' file="$disk" op=1000
refuse "$disk" 'op' file="$disk" op=ten
refuse "$disk" 'streams' file="$disk" streams=0
refuse "$disk" 'streams' file="$disk" streams=1000
refuse "$disk" 'size' file="$disk" size=0
refuse "$disk" 'size|parse' file="$disk" size=lots
refuse "$disk" 'rotational|bool' file="$disk" rotational=maybe
refuse "$disk" 'gc-mode' file="$disk" gc-mode=lazy
refuse "$disk" 'stats-interval' file="$disk" stats-interval=0
refuse "$disk" 'stats' file="$disk" stats="$tmp/no/such/dir/stats.json"
test ! -e "$tmp/new.img"

# Parameters that contradict the image.
refuse "$disk" 'size|bytes' file="$disk" size=32M
refuse "$disk" 'page|size' file="$disk" page-size=8192
refuse "$disk" 'block' file="$disk" pages-per-block=64
refuse "$disk" 'op|over' file="$disk" op=50

# A file that cannot be read.  Root reads it anyway, so as root this
# case cannot be tested.
if [ "$(id -u)" -ne 0 ]; then
    cp "$disk" "$tmp/locked.img"
    chmod 000 "$tmp/locked.img"
    refuse - 'locked.img' file="$tmp/locked.img"
    chmod 600 "$tmp/locked.img"
    test "$(checksum "$tmp/locked.img")" = "$sum"
else
    echo "skipping the unreadable file case: running as root"
fi

# A file that is not an image.
head -c 1M /dev/urandom > "$tmp/random.img"
refuse "$tmp/random.img" 'random.img' file="$tmp/random.img"
refuse "$tmp/random.img" 'random.img' file="$tmp/random.img" size=1M

# An image written by a newer version of the format: both superblock
# copies (at 0 and 4 KiB) say version 2.  Layout, little-endian: magic
# "NBDKFTL\0" at 0, version (uint32) at 8.
cp "$disk" "$tmp/newer.img"
patched=0
for sb in 0 4096; do
    magic="$(od -An -c -j $sb -N 7 "$tmp/newer.img" | tr -d ' ')"
    if [ "$magic" = NBDKFTL ]; then
        printf '\x02\x00\x00\x00' |
            dd of="$tmp/newer.img" bs=1 seek=$((sb + 8)) conv=notrunc status=none
        patched=$((patched + 1))
    fi
done
test $patched -ge 1
refuse "$tmp/newer.img" 'version' file="$tmp/newer.img"

# A geometry too small to hold the metadata and the spare blocks.
refuse "$tmp/tiny.img" 'tiny.img' file="$tmp/tiny.img" size=64K pages-per-block=256
test ! -e "$tmp/tiny.img"

# After all that, the good image still opens and holds its data.
test "$(checksum "$disk")" = "$sum"
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$disk" \
    --run 'nbdsh -u "$uri" -c "assert h.pread(65536, 0) == b\"x\" * 65536"'
