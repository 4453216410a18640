#!/usr/bin/env bash
# nbdkit-ftl: trim and zero read back as zeros; partial pages keep their
# data; unaligned writes read back exactly.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh timeout

make_tmpdir

timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=64M \
    --run 'nbdsh -u "$uri" -c -' <<'EOF_PY'
P = 4096
zeros = lambda n: bytearray(n)

def pattern(seed, n):
    return bytearray((seed * 31 + i * 7) % 251 + 1 for i in range(n))

# Write eight pages, trim the middle four, read zeros there.
h.pwrite(pattern(1, 8 * P), 0)
h.trim(4 * P, 2 * P)
assert h.pread(2 * P, 0) == pattern(1, 8 * P)[:2 * P]
assert h.pread(4 * P, 2 * P) == zeros(4 * P)
assert h.pread(2 * P, 6 * P) == pattern(1, 8 * P)[6 * P:]

# A trim that covers no whole page changes nothing; a trim with ragged
# ends unmaps only the whole pages inside it (rounds inward).
h.pwrite(pattern(2, 4 * P), 16 * P)
h.trim(1000, 16 * P + 100)
assert h.pread(4 * P, 16 * P) == pattern(2, 4 * P)
h.trim(2 * P, 16 * P + 100)
got = h.pread(4 * P, 16 * P)
want = pattern(2, 4 * P)
assert got[:P] == want[:P], "head page must keep its data"
assert got[P:2 * P] == zeros(P), "whole page inside the trim must be zero"
assert got[2 * P:] == want[2 * P:], "tail must keep its data"

# Trim with FUA.
h.pwrite(pattern(3, P), 24 * P)
h.trim(P, 24 * P, nbd.CMD_FLAG_FUA)
assert h.pread(P, 24 * P) == zeros(P)

# Zero without may_trim (NO_HOLE), with may_trim (the default), and
# unaligned: always zeros, and the bytes around an unaligned zero are
# untouched.
h.pwrite(pattern(4, 8 * P), 32 * P)
h.zero(2 * P, 32 * P, nbd.CMD_FLAG_NO_HOLE)
assert h.pread(2 * P, 32 * P) == zeros(2 * P)
h.zero(2 * P, 34 * P)
assert h.pread(2 * P, 34 * P) == zeros(2 * P)
h.zero(3000, 36 * P + 500, nbd.CMD_FLAG_FUA)
got = h.pread(4 * P, 36 * P)
want = pattern(4, 8 * P)[4 * P:]
want[500:3500] = zeros(3000)
assert got == want
if h.can_fast_zero():
    h.zero(P, 38 * P, nbd.CMD_FLAG_FAST_ZERO)
    assert h.pread(P, 38 * P) == zeros(P)
assert h.pread(P, 39 * P) == pattern(4, 8 * P)[7 * P:]

# Never-written space reads as zeros.
assert h.pread(P, 60 * P) == zeros(P)

# Unaligned writes across page boundaries, of odd sizes, read back
# exactly, and leave their neighbours alone.
base = 100 * P
model = bytearray(16 * P)
h.pwrite(model, base)
import random
rng = random.Random(7)
for i in range(200):
    n = rng.randint(1, 3 * P)
    off = rng.randint(0, len(model) - n)
    data = bytearray(rng.getrandbits(8) for _ in range(n))
    h.pwrite(data, base + off, nbd.CMD_FLAG_FUA if i % 3 == 0 else 0)
    model[off:off + n] = data
    if i % 20 == 0:
        assert h.pread(len(model), base) == model
assert h.pread(len(model), base) == model
# Unaligned reads too.
for i in range(50):
    n = rng.randint(1, 2 * P)
    off = rng.randint(0, len(model) - n)
    assert h.pread(n, base + off) == model[off:off + n]

# The end of the disk.
size = h.get_size()
h.pwrite(pattern(5, 1000), size - 1000)
assert h.pread(1000, size - 1000) == pattern(5, 1000)
h.trim(P, size - P)
assert h.pread(P, size - P) == zeros(P)

h.flush()
EOF_PY
