#!/usr/bin/env bash
# nbdkit-ftl: block status shows unmapped pages as holes and mapped pages
# as data.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh nbdinfo jq timeout

make_tmpdir

# Layout of the first 64 pages (4 KiB each) after the script below:
#   0-7 data, 8-15 trimmed, 16-31 never written, 32-35 data,
#   36-39 zeroed (may trim), 40-63 never written.
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=64M \
    --run 'nbdsh --base-allocation -u "$uri" -c -' <<'EOF_PY'
P = 4096
h.pwrite(b"\x55" * (16 * P), 0)
h.trim(8 * P, 8 * P)
h.pwrite(b"\xaa" * (8 * P), 32 * P)
h.zero(4 * P, 36 * P)

def runs(count, offset, flags=0):
    out = []
    def cb(metacontext, off, entries, err):
        assert metacontext == nbd.CONTEXT_BASE_ALLOCATION
        pos = off
        for i in range(0, len(entries), 2):
            out.append((pos, entries[i], entries[i + 1]))
            pos += entries[i]
    h.block_status(count, offset, cb, flags)
    return out

def state_at(layout, offset):
    for (off, length, flags) in layout:
        if off <= offset < off + length:
            return flags
    raise AssertionError("offset %d not reported" % offset)

HOLE = nbd.STATE_HOLE | nbd.STATE_ZERO

# The server may answer a block status request with fewer bytes than
# asked for: ask again from where it stopped.
layout = []
pos = 0
while pos < 64 * P:
    got = runs(64 * P - pos, pos)
    assert got and got[0][0] == pos
    layout += got
    pos = got[-1][0] + got[-1][1]
print(layout)

for page in range(64):
    flags = state_at(layout, page * P)
    mapped = page < 8 or 32 <= page < 36
    if mapped:
        assert flags == 0, "page %d: expected data, got %d" % (page, flags)
    else:
        assert flags == HOLE, "page %d: expected hole, got %d" % (page, flags)

# REQ_ONE: a single run, starting where asked.
one = runs(64 * P, 2 * P, nbd.CMD_FLAG_REQ_ONE)
assert len(one) == 1 and one[0][0] == 2 * P and one[0][2] == 0, one
one = runs(8 * P, 20 * P, nbd.CMD_FLAG_REQ_ONE)
assert len(one) == 1 and one[0][2] == HOLE, one

# An unaligned request.
odd = runs(3 * P, 7 * P + 100)
assert odd[0][0] == 7 * P + 100 and odd[0][2] == 0, odd
EOF_PY

# nbdinfo --map says the same, as a user would see it.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" \
    --run 'nbdinfo --map --json "$uri"' > "$tmp/map.json"
cat "$tmp/map.json"
# Data is reported exactly for pages 0-7 and 32-35 (once adjacent runs of
# the same type are merged).
jq -e 'reduce .[] as $e ([];
         if length > 0 and .[-1].type == $e.type and
            .[-1].offset + .[-1].length == $e.offset
         then .[-1].length += $e.length
         else . + [$e] end)
       | [.[] | select(.type == 0) | [.offset, .length]]
       == [[0, 32768], [131072, 16384]]' "$tmp/map.json"
# Everything else is a hole that reads as zeros, and the map covers the disk.
jq -e '[.[] | select(.type != 0) | .type] | all(. == 3)' "$tmp/map.json"
jq -e '(map(.length) | add) == 67108864' "$tmp/map.json"
