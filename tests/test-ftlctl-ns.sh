#!/usr/bin/env bash
# nbdkit-ftl: namespaces managed at rest with ftlctl, as nvme list-ns,
# create-ns and delete-ns manage a drive's.  An image of two namespaces
# with room to spare, each filled (every sector naming its namespace and
# itself): ns-list shows them and the free space, as text and JSON, and
# info --json has them too; ns-add puts a third after the last, which
# the server then exports and which reads as zeros; ns-delete refuses
# while a server has the image, then trims one at rest and the export is
# gone; a namespace added after takes its range and reads zeros, not
# the deleted one's data; every other namespace keeps its data
# throughout.  Bad input is refused with one line naming the problem,
# and the image file is left exactly as it was.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdinfo nbdsh jq timeout md5sum

FTLCTL="${FTLCTL:-../tools/ftlctl}"
if [ ! -x "$FTLCTL" ]; then
    missing "$FTLCTL not built"
fi

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"

fail () { echo "$0: FAIL: $*"; exit 1; }

# Sector s of namespace n holds its name and number; zeros() a zero one.
cat > "$tmp/ns.py" <<'EOF_PY'
import struct
S = 512
def sector(ns, s):
    return (struct.pack("<8sQ", ns.encode(), s)) * (S // 16)
def fill(h, ns):
    size = h.get_size()
    for off in range(0, size, 256 * 1024):
        h.pwrite(b"".join(sector(ns, off // S + i)
                          for i in range(256 * 1024 // S)), off)
    h.flush()
def check(h, ns, size):
    assert h.get_size() == size, "%s: size %d, not %d" % (ns, h.get_size(), size)
    data = h.pread(size, 0)
    want = (lambda s: bytes(S)) if ns == "" else (lambda s: sector(ns, s))
    bad = [s for s in range(size // S) if data[s * S:(s + 1) * S] != want(s)]
    assert not bad, "%s: %d sectors wrong, first %d: %r" % (
        ns or "zeros", len(bad), bad[0], bytes(data[bad[0] * S:bad[0] * S + 16]))
EOF_PY

# nsdo NAME CODE...: nbdsh on export NAME of the server on $sock, each
# CODE a -c.
nsdo ()
{
    local ns="$1" args=() c
    shift
    for c in "$@"; do args+=(-c "$c"); done
    timeout 120 nbdsh -u "nbd+unix:///$ns?socket=$sock" \
        -c "exec(open('$tmp/ns.py').read())" "${args[@]}"
}

# 1. Two namespaces in 16M, each filled.
start_server "$sock" "$pid" file="$disk" size=16M \
    namespaces=a:4M,bb:2M pages-per-block=16
nsdo a 'fill(h, "a")'
nsdo bb 'fill(h, "bb")'

# ns-delete while the server has the image: refused, one line.
r=0
"$FTLCTL" ns-delete "$disk" bb > "$tmp/out" 2>&1 || r=$?
cat "$tmp/out"
[ $r -eq 1 ] || fail "ns-delete of an image in use: status $r"
[ "$(wc -l < "$tmp/out")" -eq 1 ] || fail "more than one line"
grep -q "^ftlctl: $disk: the image is in use by another process$" "$tmp/out"
nsdo bb 'check(h, "bb", 2 << 20)'
stop_server "$pid"

# 2. ns-list, text and JSON; info --json has the namespaces too.
"$FTLCTL" ns-list "$disk" | tee "$tmp/list"
grep -Eq '^NAME +BYTES +SIZE +BASE$' "$tmp/list"
grep -Eq '^a +4194304 +4 MiB +0  \(the default export\)$' "$tmp/list"
grep -Eq '^bb +2097152 +2 MiB +4194304$' "$tmp/list"
grep -q '^free: 10485760 bytes (10 MiB) of 16777216, in 1 range, the largest 10485760 bytes from logical byte 6291456$' "$tmp/list"
"$FTLCTL" ns-list --json "$disk" | tee "$tmp/list.json"
jq -e '.logical_bytes == 16777216 and .free_bytes == 10485760 and
       .largest_free_bytes == 10485760 and .max_namespaces == 16 and
       ([.namespaces[] | [.name, .bytes, .base, .default]] ==
        [["a", 4194304, 0, true], ["bb", 2097152, 4194304, false]])' \
    "$tmp/list.json"
"$FTLCTL" info --json "$disk" > "$tmp/info.json"
jq -e '[.namespaces[].name] == ["a", "bb"] and .geometry.page_size == 4096' \
    "$tmp/info.json"

# 3. ns-add: after the last one, reading zeros; exported.
"$FTLCTL" ns-add "$disk" d 4M | tee "$tmp/out"
grep -q "^$disk: namespace 'd' added, 4194304 bytes (4 MiB)$" "$tmp/out"
"$FTLCTL" ns-list --json "$disk" |
    jq -e '[.namespaces[] | [.name, .base]] == [["a", 0], ["bb", 4194304], ["d", 6291456]]'
start_server "$sock" "$pid" file="$disk"
nbdinfo --list --json "nbd+unix:///?socket=$sock" |
    jq -e '[.exports[] | [."export-name", ."export-size"]] ==
           [["a", 4194304], ["bb", 2097152], ["d", 4194304]]'
nsdo d 'check(h, "", 4 << 20)' 'fill(h, "d")'
nsdo a 'check(h, "a", 4 << 20)'
nsdo bb 'check(h, "bb", 2 << 20)'
stop_server "$pid"

# 4. ns-delete at rest; the export is gone; e takes bb's range and reads
# zeros, not bb's sectors.
"$FTLCTL" ns-delete "$disk" bb | tee "$tmp/out"
grep -q "^$disk: namespace 'bb' deleted$" "$tmp/out"
"$FTLCTL" ns-add "$disk" e 2M
"$FTLCTL" ns-list --json "$disk" |
    jq -e '[.namespaces[] | [.name, .base]] == [["a", 0], ["d", 6291456], ["e", 4194304]]'
start_server "$sock" "$pid" file="$disk"
if nsdo bb 'print(h.get_size())' 2> "$tmp/err"; then
    fail "the deleted namespace bb was served"
fi
grep -q "no export named 'bb'" "$tmp/err"
nsdo e 'check(h, "", 2 << 20)'
nsdo a 'check(h, "a", 4 << 20)'
nsdo d 'check(h, "d", 4 << 20)'
stop_server "$pid"

# 5. Bad input: one line each, naming the problem; the file untouched.
sum="$(md5sum < "$disk")"
refused ()
{
    local want="$1" r=0
    shift
    "$FTLCTL" "$@" > "$tmp/out" 2>&1 || r=$?
    cat "$tmp/out"
    [ $r -eq 1 ] || fail "status $r, not 1: ftlctl $*"
    [ "$(wc -l < "$tmp/out")" -eq 1 ] || fail "not one line: ftlctl $*"
    grep -qF -- "ftlctl: $disk: $want" "$tmp/out" ||
        fail "ftlctl $* did not say: $want"
}
refused "a namespace named 'a' exists, of that size (4 MiB)" ns-add "$disk" a 4M
refused "a namespace named 'a' exists, of 4 MiB: the size of a namespace does not change (8 MiB asked; delete it first, which trims its data)" \
    ns-add "$disk" a 8M
refused "bad namespace name 'x/y' (1 to 63 characters of A-Z a-z 0-9 . _ -)" \
    ns-add "$disk" x/y 1M
refused "namespace 'f': size 1000 is not a positive multiple of the page size (4096)" \
    ns-add "$disk" f 1000
refused "namespace 'f' of 8 MiB does not fit: the image's logical capacity is 16 MiB, its namespaces take 10 MiB, the largest free range is 6 MiB" \
    ns-add "$disk" f 8M
refused "no namespace named 'bb' (the image's namespaces: a, d, e)" \
    ns-delete "$disk" bb
test "$(md5sum < "$disk")" = "$sum" || fail "a refused change wrote to the image"
# The most namespaces an image holds.
for i in $(seq 4 16); do
    "$FTLCTL" ns-add "$disk" "n$i" 4K > /dev/null
done
sum="$(md5sum < "$disk")"
refused "the image has 16 namespaces, the most it can hold" ns-add "$disk" n17 4K
test "$(md5sum < "$disk")" = "$sum" || fail "a refused change wrote to the image"
# The last one stays; an image made without namespaces has no room.
one="$tmp/one.img"
"$FTLCTL" format --size 4M --pages-per-block 16 "$one" > /dev/null
disk="$one" refused "namespace '' is the image's only one: an image keeps at least one" \
    ns-delete "$one" ""
disk="$one" refused "namespace 'a' of 4 KiB does not fit: the image's logical capacity is 4 MiB, its namespaces take 4 MiB, the largest free range is 0 bytes (made without namespaces=, the image has one, '', of its whole size)" \
    ns-add "$one" a 4K
# Usage errors.
r=0
"$FTLCTL" ns-add "$disk" a > "$tmp/out" 2>&1 || r=$?
[ $r -eq 2 ] || fail "ns-add without a size: status $r"
grep -q "^ftlctl: ns-add: give FILE NAME SIZE$" "$tmp/out"
r=0
"$FTLCTL" ns-add "$disk" a 1X > "$tmp/out" 2>&1 || r=$?
[ $r -eq 2 ] || fail "ns-add with a bad size: status $r"
cat "$tmp/out"
echo "$0: OK"
