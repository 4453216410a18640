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

# checksum_of FILE: checksum FILE into $sum_now, hashing the file again
# only if it may have changed since it was last hashed here: a write
# changes its change time (ctime), which is kept with the hash.  A
# hash is only kept for a file whose ctime was over a second old
# (a write in the same tick of the clock would leave the ctime as it
# was), so hashing the 64 MiB image twice for each of the 50 refusals
# below becomes hashing it once.
declare -A sum_sig=() sum_of=()
checksum_of ()
{
    local sig now ctime
    if [ "$1" = - ] || [ ! -e "$1" ]; then
        sum_now="$(checksum "$1")"
        return
    fi
    sig="$(stat -c '%d %i %s %.9Y %.9Z' "$1")"
    if [ "${sum_sig[$1]:-}" = "$sig" ]; then
        sum_now="${sum_of[$1]}"
        return
    fi
    now="$(date +%s)"
    sum_now="$(checksum "$1")"
    unset "sum_sig[$1]"
    ctime="${sig##* }"
    if [ "${ctime%.*}" -lt $(( now - 1 )) ] &&
       [ "$sig" = "$(stat -c '%d %i %s %.9Y %.9Z' "$1")" ]; then
        sum_sig[$1]="$sig"
        sum_of[$1]="$sum_now"
    fi
}

# A good image with some data in it.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$disk" size=64M \
    --run 'nbdsh -u "$uri" -c "h.pwrite(b\"x\" * 65536, 0); h.flush()"'
sum="$(checksum "$disk")"

# A command that runs nbdkit, before "nbdkit" (none: run it directly).
run_as=()

# refuse FILE PATTERN ARGS...: nbdkit must fail, print an error line
# "nbdkit: error: ..." whose text after "error: " matches PATTERN (grep
# -E, anchored at both ends), and leave FILE as it was (or absent if it
# was; use "-" for FILE when the caller checks it).
refuse ()
{
    local file="$1" pattern="$2" before after r=0
    shift 2
    checksum_of "$file"
    before="$sum_now"
    # An explicit socket: nbdkit -U - leaves its temporary directory in
    # /tmp behind when it fails to start.
    timeout 60 "${run_as[@]}" nbdkit -U "$tmp/sock" "$FTL_PLUGIN" "$@" \
        --run 'exit 0' \
        > "$tmp/out" 2>&1 || r=$?
    cat "$tmp/out"
    if [ $r -eq 0 ]; then
        echo "$0: FAIL: nbdkit accepted: $*"
        exit 1
    fi
    if ! grep -qE "^nbdkit: error: ($pattern)\$" "$tmp/out"; then
        echo "$0: FAIL: no error matching '$pattern' for: $*"
        exit 1
    fi
    checksum_of "$file"
    after="$sum_now"
    if [ "$before" != "$after" ]; then
        echo "$0: FAIL: $file changed after: $*"
        exit 1
    fi
    echo "refused as expected: $*"
}

# No file= at all.
refuse "$disk" 'you must supply the file=<FILENAME> parameter' size=64M

# A file that does not exist, without size= to create it.
refuse "$tmp/missing.img" "$tmp/missing.img: no such file \\(give a size to create a new image\\)" \
    file="$tmp/missing.img"
test ! -e "$tmp/missing.img"

# Parameters out of range or malformed.  Each names the parameter.
refuse "$disk" "unknown parameter 'foo'" file="$disk" foo=bar
ps_range='page-size must be a power of 2 from 512 to 65536'
refuse "$disk" "$ps_range: 3000" file="$disk" page-size=3000
refuse "$tmp/new.img" "$ps_range: 256" file="$tmp/new.img" size=64M page-size=256
ppb_range='pages-per-block must be a power of 2 from 8 to 65536'
refuse "$disk" "$ppb_range: 3" file="$disk" pages-per-block=3
refuse "$disk" "$ppb_range: 4" file="$disk" pages-per-block=4
op_range='op must be a percentage from 1 to 400'
refuse "$disk" "$op_range: 0" file="$disk" op=0
refuse "$disk" "$op_range: 1000" file="$disk" op=1000
refuse "$disk" "$op_range: ten" file="$disk" op=ten
refuse "$disk" 'streams must be from 1 to 16: 0' file="$disk" streams=0
refuse "$disk" 'streams must be from 1 to 16: 1000' file="$disk" streams=1000
refuse "$disk" 'size must be greater than 0' file="$disk" size=0
refuse "$disk" "size: not a size \\(a number with an optional suffix K, M, G, T, P or E\\): 'lots'" file="$disk" size=lots
refuse "$disk" "rotational: not a boolean \\(true or false\\): 'maybe'" file="$disk" rotational=maybe
refuse "$disk" "hot-cold must be auto, true or false: 'maybe'" file="$disk" hot-cold=maybe
refuse "$disk" "streams: not a non-negative integer: '-1'" file="$disk" streams=-1
refuse "$disk" 'channels x dies must be at most 4096: 64 x 128' file="$disk" channels=64 dies=128
refuse "$disk" "read-latency: duration '5' has no unit \\(us, ms or s\\)" file="$disk" read-latency=5
refuse "$disk" 'ecc-bits must be from 1 to 8192: 0' file="$disk" ecc-bits=0
refuse "$disk" 'cell-bits must be 2 \(MLC\), 3 \(TLC\) or 4 \(QLC\): 5' file="$disk" cell-bits=5
refuse "$disk" 'slc-dynamic must be a size, auto or false: lots' file="$disk" slc-dynamic=lots
refuse "$disk" "slc-fold-idle: 'soon' is not a duration \(a number with a unit: us, ms or s\)" \
    file="$disk" slc-fold-idle=soon
refuse "$disk" "$disk: slc-static of 67108864 bytes needs [0-9]+ SLC erase blocks; the spare allows at most [0-9]+ .*" \
    file="$disk" slc-static=64M
refuse "$disk" 'gc-mode must be deadline or watermark: lazy' file="$disk" gc-mode=lazy
refuse "$disk" 'stats-interval must be at least 1 second: 0' file="$disk" stats-interval=0
refuse "$disk" "stats: cannot write a file next to $tmp/no/such/dir/stats.json: No such file or directory" \
    file="$disk" stats="$tmp/no/such/dir/stats.json"
test ! -e "$tmp/new.img"

# Parameters that contradict the image.
refuse "$disk" "$disk: size 33554432 differs from the image's size 67108864" \
    file="$disk" size=32M
refuse "$disk" "$disk: page size 8192 differs from the image's 4096" \
    file="$disk" page-size=8192
refuse "$disk" "$disk: pages per block 64 differs from the image's 256" \
    file="$disk" pages-per-block=64
refuse "$disk" "$disk: op=50% differs from the image's 28%" file="$disk" op=50
refuse "$disk" "$disk: write-cache-bypass must be 0 or at least one page \(4096 bytes\): 100" \
    file="$disk" write-cache-bypass=100

# A file that cannot be read (mode 000).  Root reads any file with its
# capabilities CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH: as root nbdkit
# runs without them (setpriv drops them from the bounding set, and so
# from what nbdkit gets when it is executed).
cp "$disk" "$tmp/locked.img"
chmod 000 "$tmp/locked.img"
if [ "$(id -u)" -eq 0 ]; then
    requires setpriv
    if ! setpriv --bounding-set=-dac_override,-dac_read_search \
             true 2>/dev/null; then
        skip "running as root, and setpriv cannot drop CAP_DAC_OVERRIDE"
    fi
    run_as=(setpriv --bounding-set=-dac_override,-dac_read_search)
fi
refuse - "$tmp/locked.img: Permission denied" file="$tmp/locked.img"
run_as=()
chmod 600 "$tmp/locked.img"
test "$(checksum "$tmp/locked.img")" = "$sum"

# A file that is not an image.
head -c 1M /dev/urandom > "$tmp/random.img"
not_image="$tmp/random.img: not an nbdkit-ftl image \\(no superblock found\\)"
refuse "$tmp/random.img" "$not_image" file="$tmp/random.img"
refuse "$tmp/random.img" "$not_image" file="$tmp/random.img" size=1M

# An image written by a newer version of the format: both superblock
# copies (at 0 and 4 KiB) say version 9.  (So does a program that
# reads up to version 4 refuse a version 5 image, which may carry the
# mark of a sync=false session, one that reads up to 5 a version 6
# image, whose map may be paged, one that reads up to 6 a version 7
# image, whose data checksums may be seeded with the logical page, and
# one that reads up to 7 a version 8 image, which may hold namespaces.)
# Layout, little-endian: magic
# "NBDKFTL\0" at 0, version (uint32) at 8.
cp "$disk" "$tmp/newer.img"
patched=0
for sb in 0 4096; do
    magic="$(od -An -c -j $sb -N 7 "$tmp/newer.img" | tr -d ' ')"
    if [ "$magic" = NBDKFTL ]; then
        printf '\x09\x00\x00\x00' |
            dd of="$tmp/newer.img" bs=1 seek=$((sb + 8)) conv=notrunc status=none
        patched=$((patched + 1))
    fi
done
test $patched -ge 1
refuse "$tmp/newer.img" "$tmp/newer.img: the image has a newer format \\(format version 9, this program reads up to 8\\)" \
    file="$tmp/newer.img"

# Version 0 is not a newer format: no version writes it.  Both copies
# patched to version 0 are damaged copies (their checksums no longer
# match).
cp "$disk" "$tmp/zero-version.img"
for sb in 0 4096; do
    printf '\x00\x00\x00\x00' |
        dd of="$tmp/zero-version.img" bs=1 seek=$((sb + 8)) conv=notrunc status=none
done
refuse "$tmp/zero-version.img" "$tmp/zero-version.img: both superblock copies are damaged \(copy A: checksum mismatch; copy B: checksum mismatch\)" \
    file="$tmp/zero-version.img"

# A power cut while an image was being created.  Creation writes the
# file's size, an empty checkpoint, superblock copy A, then copy B,
# each synced before the next.  Cut before anything but the size
# reached the file, the file holds only zeros: without size= it is
# refused; with size= the image is created in it (it holds nothing to
# lose).
truncate -s 1M "$tmp/zeros.img"
refuse "$tmp/zeros.img" "$tmp/zeros.img: the file holds only zeros: give a size to create a new image" \
    file="$tmp/zeros.img"
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/zeros.img" size=64M \
    --run 'nbdsh -u "$uri" -c "h.pwrite(b\"z\" * 4096, 0); h.flush()"'
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/zeros.img" \
    --run 'nbdsh -u "$uri" -c "assert h.pread(4096, 0) == b\"z\" * 4096"'

# Zeros where the superblocks go do not make a file ours (a ZFS vdev
# leaves its first 8 KiB empty too): with data after them, it is not
# an image, and it is not formatted.
{ head -c 8192 /dev/zero; seq -f 'user data %06g' 4000; } > "$tmp/other.img"
refuse "$tmp/other.img" "$tmp/other.img: not an nbdkit-ftl image \\(no superblock found\\)" \
    file="$tmp/other.img" size=64M

# Cut after the checkpoint, before superblock copy A: zeros where both
# copies go (the first 8 KiB), the checkpoint after them.  And cut
# while copy A was written: only its first 100 bytes, or 3 (inside its
# magic), copy B zeros.  Each is refused, with or without size=, and
# left as it is.
incomplete='an incomplete image \(creation was cut short\): remove the file to create the image again'
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/cut.img" size=64M --run 'exit 0'
dd if=/dev/zero of="$tmp/cut.img" bs=4096 count=2 conv=notrunc status=none
refuse "$tmp/cut.img" "$tmp/cut.img: $incomplete" file="$tmp/cut.img"
refuse "$tmp/cut.img" "$tmp/cut.img: $incomplete" file="$tmp/cut.img" size=64M
rm "$tmp/cut.img"
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/cut.img" size=64M --run 'exit 0'
dd if=/dev/zero of="$tmp/cut.img" bs=1 seek=100 count=$((8192 - 100)) \
    conv=notrunc status=none
refuse "$tmp/cut.img" "$tmp/cut.img: $incomplete" file="$tmp/cut.img" size=64M
dd if=/dev/zero of="$tmp/cut.img" bs=1 seek=3 count=97 conv=notrunc status=none
refuse "$tmp/cut.img" "$tmp/cut.img: $incomplete" file="$tmp/cut.img"
# As the message says: remove the file, and the image is created again.
rm "$tmp/cut.img"
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/cut.img" size=64M \
    --run 'nbdsh -u "$uri" -c "assert h.pread(4096, 0) == bytes(4096)"'

# A geometry too small to hold the metadata and the spare blocks.
refuse "$tmp/tiny.img" "$tmp/tiny.img: impossible geometry: size 65536 with op=28% and 256 pages per block gives 0 spare erase blocks, but at least 10 are needed .*" \
    file="$tmp/tiny.img" size=64K pages-per-block=256
test ! -e "$tmp/tiny.img"

# preallocate= is a boolean.
refuse "$tmp/new.img" "preallocate: not a boolean \\(true or false\\): 'maybe'" \
    file="$tmp/new.img" size=64M preallocate=maybe
test ! -e "$tmp/new.img"

# So is sync=, for a new image and an existing one (left as it was).
refuse "$tmp/new.img" "sync: not a boolean \\(true or false\\): 'maybe'" \
    file="$tmp/new.img" size=64M sync=maybe
test ! -e "$tmp/new.img"
refuse "$disk" "sync: not a boolean \\(true or false\\): ''" \
    file="$disk" sync=

# A size whose map needs more memory than the process may use: named,
# never a bare "Cannot allocate memory", and nothing written.  A map
# that is not paged (up to 256 GiB): 200 GiB in 4 KiB pages needs about
# 613 MiB (the map, its checkpoint, and the checks, which ulimit -v
# counts); ulimit -v allows 512 MiB.  Under 1 GiB, a paged map (2 TiB)
# with the default cache opens and holds its data (a default cache that
# does not fit shrinks: unit/test-pmap); with a map-cache= of 1G it
# does not fit, and is refused.  (A sanitizer reserves terabytes of
# address space: not under one.)
if [ -n "${FTL_SANITIZER_PRELOAD:-}" ]; then
    echo "SKIP (this case only): ulimit -v under a sanitizer"
else
    run_as=(bash -c 'ulimit -v 524288 && exec "$@"' ulimit)
    refuse "$tmp/huge.img" "$tmp/huge.img: size 200 GiB in 4096-byte pages needs [0-9.]+ MiB of memory \\(8 bytes per page for the map, and a checkpoint of [0-9.]+ MiB\\), but ulimit -v allows 512 MiB \\(raise page-size, or lower size\\)" \
        file="$tmp/huge.img" size=200G
    test ! -e "$tmp/huge.img"
    run_as=(bash -c 'ulimit -v 1048576 && exec "$@"' ulimit)
    refuse "$tmp/huge.img" "$tmp/huge.img: size 2 TiB with a map cache of 1 GiB needs [0-9.]+ GiB of memory, but ulimit -v allows 1 GiB \\(lower map-cache, or raise page-size or pages-per-block\\)" \
        file="$tmp/huge.img" size=2T map-cache=1G
    test ! -e "$tmp/huge.img"
    # nbdkit's worker threads each take a stack and may take a malloc
    # arena of 64 MiB of address space: 4 of them, 2 arenas.
    MALLOC_ARENA_MAX=2 "${run_as[@]}" timeout 120 \
        nbdkit -v -t 4 -U - "$FTL_PLUGIN" file="$tmp/huge.img" \
        size=2T stats="$tmp/huge.json" --run 'nbdsh -u "$uri" -c "
h.pwrite(b\"y\" * 4096, (1 << 40) + 4096)
assert h.pread(4096, (1 << 40) + 4096) == b\"y\" * 4096"' 2>"$tmp/huge.err" ||
        { grep -v ': debug: ' "$tmp/huge.err" | tail -20
          echo "$0: FAIL: 2 TiB under ulimit -v"; exit 1; }
    jq -e '.map.paged' "$tmp/huge.json"
    run_as=()
    rm -f "$tmp/huge.img" "$tmp/huge.json"
fi

# mount_fs DIR ARGS...: mount a filesystem for the cases below, or say
# that they are skipped (not root); under CI=true (root) never skip.
mount_fs ()
{
    local dir="$1"
    shift
    mkdir -p "$dir"
    if mount "$@" "$dir" 2>"$tmp/mount.err"; then
        cleanup_fn umount_fs "$dir"
        return 0
    fi
    cat "$tmp/mount.err"
    if [ "${CI:-}" = true ]; then
        echo "$0: FAIL: cannot mount ($*) under CI=true"
        exit 1
    fi
    echo "SKIP (these cases only): cannot mount $* (not root?)"
    return 1
}
# A size the filesystem cannot hold: ext4 with 4 KiB blocks holds files
# of at most 16 TiB.  Refused with the limit named, before anything is
# written, and no file left.
requires mkfs.ext4
truncate -s 64M "$tmp/ext4.fs"
mkfs.ext4 -q -F -b 4096 "$tmp/ext4.fs"
if mount_fs "$tmp/ext4" -o loop "$tmp/ext4.fs"; then
    refuse "$tmp/ext4/big.img" "$tmp/ext4/big.img: size 20 TiB is larger than the largest file this filesystem can hold \\(16 TiB on ext4\\): the image would be a file of [0-9.]+ TiB" \
        file="$tmp/ext4/big.img" size=20T page-size=16K
    test ! -e "$tmp/ext4/big.img"
    test "$(df --output=used -B1 "$tmp/ext4" | tail -1)" -lt $((8 << 20))
fi

# A size that needs more memory than this host has (in a tmpfs, which
# holds such a file): 200 TiB in 64 KiB pages, 8 pages per erase
# block, needs about 28 GiB, most of it for the 424 million erase
# blocks (the map is paged: its cache shrinks to what memory allows,
# but the blocks' arrays do not).
mem_kib="$(awk '/^MemTotal:/ { print $2 }' /proc/meminfo)"
if [ "$((mem_kib << 10))" -ge $((28 << 30)) ]; then
    echo "SKIP (this case only): the host has 28 GiB or more"
elif mount_fs "$tmp/tmpfs" -t tmpfs -o size=16m tmpfs; then
    refuse "$tmp/tmpfs/huge.img" "$tmp/tmpfs/huge.img: size 200 TiB with a map cache of [0-9.]+ [KMG]iB needs [0-9.]+ GiB of memory, but (this host has|its control group allows) [0-9.]+ GiB \\(lower map-cache, or raise page-size or pages-per-block\\)" \
        file="$tmp/tmpfs/huge.img" size=200T page-size=64K pages-per-block=8 op=1
    test ! -e "$tmp/tmpfs/huge.img"
fi

# After all that, the good image still opens and holds its data.
test "$(checksum "$disk")" = "$sum"
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$disk" \
    --run 'nbdsh -u "$uri" -c "assert h.pread(65536, 0) == b\"x\" * 65536"'
