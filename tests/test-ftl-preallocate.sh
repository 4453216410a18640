#!/usr/bin/env bash
# nbdkit-ftl: preallocate=true reserves a new image's whole file
# (fallocate); the default is a sparse file.  A preallocation the
# filesystem has no room for is refused, naming the space, and leaves
# no file behind.  The refusal needs a small filesystem of its own: a
# tmpfs, mounted here (root).

source "${srcdir:-.}/functions.sh"
requires_plugin
requires timeout stat mount umount

make_tmpdir

# blocks FILE: the bytes allocated to FILE.
blocks ()
{
    echo $(( $(stat -c '%b * %B' "$1") ))
}

# A new image, sparse and preallocated: its file's size, and the
# bytes allocated to it.
for p in false true; do
    timeout 60 nbdkit -U "$tmp/sock" "$FTL_PLUGIN" file="$tmp/$p.img" \
        size=64M preallocate=$p --run 'exit 0'
    rm -f "$tmp/sock"
    echo "preallocate=$p: $(stat -c %s "$tmp/$p.img") bytes," \
         "$(blocks "$tmp/$p.img") allocated"
done
size="$(stat -c %s "$tmp/true.img")"
if [ "$(blocks "$tmp/true.img")" -lt "$size" ]; then
    echo "$0: FAIL: preallocate=true left the image sparse"
    exit 1
fi
if [ "$(blocks "$tmp/false.img")" -ge $((size / 4)) ]; then
    echo "$0: FAIL: the default image is not sparse"
    exit 1
fi
# Preallocation does not change the image: it opens without the key.
timeout 60 nbdkit -U "$tmp/sock" "$FTL_PLUGIN" file="$tmp/true.img" \
    --run 'nbdsh -u "$uri" -c "h.pwrite(b\"p\" * 4096, 0); h.flush()"'
rm -f "$tmp/sock"

mnt="$tmp/mnt"
mount_tmpfs "$mnt" 32m

# 64M needs a file of 84 MiB: more than the tmpfs holds.  A sparse
# image is created; a preallocated one is refused, and no file is left.
r=0
timeout 60 nbdkit -U "$tmp/sock" "$FTL_PLUGIN" file="$mnt/big.img" \
    size=64M preallocate=true --run 'exit 0' > "$tmp/out" 2>&1 || r=$?
rm -f "$tmp/sock"
cat "$tmp/out"
if [ $r -eq 0 ]; then
    echo "$0: FAIL: a preallocation larger than the filesystem succeeded"
    exit 1
fi
pattern="^nbdkit: error: $mnt/big.img: preallocating $size bytes \\(84 MiB\\): No space left on device \\(the filesystem has 32 MiB free\\)\$"
if ! grep -qE "$pattern" "$tmp/out"; then
    echo "$0: FAIL: no error matching '$pattern'"
    exit 1
fi
if [ -e "$mnt/big.img" ]; then
    echo "$0: FAIL: a half image was left behind"
    exit 1
fi
used="$(df --output=used -B1 "$mnt" | tail -1)"
if [ "$used" -ne 0 ]; then
    echo "$0: FAIL: $used bytes of the tmpfs still in use"
    exit 1
fi
timeout 60 nbdkit -U "$tmp/sock" "$FTL_PLUGIN" file="$mnt/big.img" \
    size=64M --run 'exit 0'
rm -f "$tmp/sock"
echo "$0: OK"
