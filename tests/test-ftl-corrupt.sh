#!/usr/bin/env bash
# nbdkit-ftl: damaged and truncated images.  An image with known data is
# damaged in one place at a time (a superblock copy, both, each
# checkpoint slot, a block header, an OOB entry, a data page) or cut
# short; then ftlctl check must report it with the exit status of fsck,
# and the plugin must either serve every page as written (a damaged page
# failing with EIO, never garbage) or refuse to open with an error naming
# the problem.  (Check comes first: the plugin writes a damaged
# superblock copy or checkpoint slot again when it closes the image.)

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq dd awk timeout cmp

export FTLCTL="${FTLCTL:-../tools/ftlctl}"
if [ ! -x "$FTLCTL" ]; then
    missing "$FTLCTL not built"
fi

make_tmpdir
good="$tmp/good.img"
img="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
uri="nbd+unix:///?socket=$sock"
N=100                           # logical pages written

fail ()
{
    echo "$0: FAIL: $*"
    exit 1
}

# The data: page n holds the text "page n version v", repeated, where v
# is 2 for the first 50 pages (written twice) and 1 for the others: no
# page is zeros (an unmapped page's content), and a page that comes
# back with another page's data or an older version is told apart.
cat > "$tmp/page.py" <<'EOF'
P = 4096
def page(n, v):
    text = b"page %d version %d\n" % (n, v)
    return (text * (P // len(text) + 1))[:P]
EOF
cat > "$tmp/verify.py" <<'EOF'
import os
exec(open(os.environ["TMP"] + "/page.py").read())
N = int(os.environ["N"])
eio = set(int(x) for x in os.environ.get("EIO", "").split())
for n in range(N):
    try:
        got = h.pread(P, n * P)
    except nbd.Error as e:
        assert n in eio, "page %d: unexpected error %s" % (n, e.string)
        assert e.errno in ("EIO", 5), "page %d: %s, not EIO" % (n, e.errno)
        continue
    assert n not in eio, "page %d: read, but its data is damaged" % n
    want = page(n, 2 if n < 50 else 1)
    assert got == want, "page %d: %r..., not %r..." % (n, bytes(got[:24]),
                                                      want[:24])
# Beyond the pages written: zeros.
assert h.pread(P, N * P) == bytearray(P)
EOF

# 1. An image with data, shut down cleanly.
$FTLCTL format --size 4M --pages-per-block 16 "$good"
start_server "$sock" "$pid" file="$good"
TMP="$tmp" timeout 120 nbdsh -u "$uri" -c '
import os
exec(open(os.environ["TMP"] + "/page.py").read())
for v in (1, 2):
    for n in range(100 if v == 1 else 50):
        h.pwrite(page(n, v), n * P)
h.flush()
'
stop_server "$pid"
$FTLCTL check "$good"
$FTLCTL info --json "$good" > "$tmp/info.json"
meta_offset="$(jq .geometry.meta_offset "$tmp/info.json")"
data_offset="$(jq .geometry.data_offset "$tmp/info.json")"
image_bytes="$(jq .geometry.image_bytes "$tmp/info.json")"
block_data="$(jq '.geometry | .page_size * .pages_per_block' "$tmp/info.json")"
[ "$meta_offset" -gt 0 ] && [ $(( data_offset % block_data )) -eq 0 ] ||
    fail "regions: metadata at $meta_offset, data at $data_offset"
ckpt[0]=8192                                # after both superblock slots
ckpt[1]=$(( (8192 + meta_offset) / 2 ))     # two slots of equal size

# where LPN: the data and OOB offsets of a logical page (from dump).
where ()
{
    $FTLCTL dump --lpn "$1" "$good" > "$tmp/dump"
    data_at="$(awk '/data offset:/ { print $3 }' "$tmp/dump")"
    oob_at="$(awk '/OOB offset:/ { print $3 }' "$tmp/dump")"
    read -r page_in_block < <(sed -En \
        's/^physical page [0-9]+: erase block [0-9]+, page ([0-9]+)$/\1/p' \
        "$tmp/dump")
}

# flip OFFSET...: invert one byte at each offset of $img.
flip ()
{
    local off b
    for off in "$@"; do
        b="$(od -A n -t u1 -j "$off" -N 1 "$img" | tr -d ' ')"
        printf "$(printf '\\%03o' $(( b ^ 0xff )))" |
            dd of="$img" bs=1 seek="$off" conv=notrunc status=none
    done
}

# served [EIO-PAGES]: the plugin opens $img (read-only) and every page
# reads as written, except the listed ones, which fail with EIO.
served ()
{
    EIO="${1-}" N=$N TMP="$tmp" timeout 120 nbdkit -r -U - "$FTL_PLUGIN" file="$img" \
        --run 'nbdsh -u "$uri" -c "exec(open(\"'"$tmp"'/verify.py\").read())"' \
        > "$tmp/served" 2>&1 || { cat "$tmp/served"; fail "$case: not served"; }
}

# refused REGEX: the plugin refuses to open $img, saying why.  (A
# socket in $tmp, not -U -: nbdkit leaves the directory it makes for
# that behind when the plugin fails to open.)
refused ()
{
    local r=0
    rm -f "$tmp/refused.sock"
    timeout 120 nbdkit -r -U "$tmp/refused.sock" "$FTL_PLUGIN" file="$img" \
        --run 'true' > "$tmp/refused" 2>&1 || r=$?
    cat "$tmp/refused"
    [ $r -ne 0 ] || fail "$case: the plugin opened the image"
    grep -Eq "$1" "$tmp/refused" || fail "$case: no message matching '$1'"
    ! grep -Eqi 'sanitizer|assert|segmentation|core dumped' "$tmp/refused" ||
        fail "$case: the plugin crashed"
}

# checked STATUS REGEX: ftlctl check exits with STATUS and says REGEX.
# (4: errors left; 12: errors, and the image cannot be opened.)
checked ()
{
    local r=0
    $FTLCTL check "$img" > "$tmp/check" 2>&1 || r=$?
    cat "$tmp/check"
    [ $r -eq "$1" ] || fail "$case: ftlctl check exit status $r, not $1"
    grep -Eq "$2" "$tmp/check" || fail "$case: check said nothing matching '$2'"
}

# begin NAME: a fresh copy of the good image.
begin ()
{
    case="$1"
    echo "=== $case"
    cp "$good" "$img"
}

# 2. Superblock copy A damaged (its block count): copy B serves.
begin "superblock copy A"
flip 40
checked 4 'error: superblock copy A: checksum mismatch'
served

# 3. Both copies damaged: refused.
begin "both superblock copies"
flip 40 $(( 4096 + 40 ))
checked 12 'superblock copy B: checksum mismatch'
refused 'both superblock copies are damaged'

# 4. Each checkpoint slot, in its header and in its body: the other
# slot (and the log after it) serves.
for s in 0 1; do
    begin "checkpoint slot $s header"
    flip $(( ckpt[s] + 30 ))
    checked 4 "error: checkpoint slot $s: checksum mismatch"
    served

    begin "checkpoint slot $s body"
    flip $(( ckpt[s] + 256 + 4 * 42 ))
    checked 4 "error: checkpoint slot $s .*body fails its checksum"
    served
done

# 5. Both checkpoint slots: refused.
begin "both checkpoint slots"
flip $(( ckpt[0] + 30 )) $(( ckpt[1] + 30 ))
checked 12 'no valid checkpoint'
refused 'no valid checkpoint'

# 6. The OOB entry of logical page 42: that page fails, the others read.
begin "OOB entry"
where 42
flip $(( oob_at + 8 ))
checked 4 'error: logical page 42 '
served 42

# 7. The header of the erase block holding logical page 42: recovery
# does not need it after a clean shutdown; check reports it.
begin "block header"
flip $(( oob_at - 32 * page_in_block - 32 + 8 ))
checked 4 'block header'
served

# 8. A data page: logical page 7 fails with EIO, never garbage.
begin "data page"
where 7
flip $(( data_at + 1000 ))
checked 4 'error: logical page 7 .*data checksum mismatch'
served 7

# 9. The file cut short: in superblock copy A, in copy B, in a
# checkpoint slot, in the metadata region, in the data region, one byte
# short.
for size in 100 6000 $(( ckpt[1] + 100 )) $(( meta_offset + 5000 )) \
            $(( data_offset + 5000 )) \
            $(( image_bytes - 1 )); do
    begin "truncated to $size bytes"
    truncate -s "$size" "$img"
    checked 12 'truncated'
    refused 'truncated'
done

# 10. Never stale.  Page 3 rewritten and flushed, the server killed (the
# next start rolls the log forward), then the new version's data page
# damaged: page 3 fails with EIO, never reads as the version it
# replaced, and check names it.  Rewritten without a flush (and without
# a write cache, so that the page reaches the image) and damaged the
# same way, it is a write cut short: page 3 reads as before.
rewrite_kill_damage ()
{
    start_server "$sock" "$pid" file="$img" "$@"
    timeout 60 nbdsh -u "$uri" -c "$flush_or_not"
    kill_server "$pid"
    $FTLCTL dump --lpn 3 "$img" > "$tmp/dump"
    data_at="$(awk '/data offset:/ { print $3 }' "$tmp/dump")"
    # The new version is in the image, in the log after the checkpoint.
    [ "$data_at" != "$good_data_at" ] || fail "$case: page 3 did not move"
    flip $(( data_at + 100 ))
}
$FTLCTL dump --lpn 3 "$good" > "$tmp/dump"
good_data_at="$(awk '/data offset:/ { print $3 }' "$tmp/dump")"

begin "flushed, killed, damaged"
flush_or_not='h.pwrite(b"new version of page 3;" * 186 + b"\1" * 4, 3 * 4096)
h.flush()'
rewrite_kill_damage
checked 4 'error: logical page 3 \(physical page [0-9]+: erase block [0-9]+, page [0-9]+\): data checksum mismatch'
served 3

begin "not flushed, killed, damaged"
flush_or_not='h.pwrite(b"new version of page 3;" * 186 + b"\1" * 4, 3 * 4096)'
rewrite_kill_damage write-cache=0
checked 0 'clean'
served

echo "$0: all cases passed"
