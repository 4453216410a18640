#!/usr/bin/env bash
# nbdkit-ftl: namespaces, each an export by name, on one image.  An
# image of three is made with namespaces=; nbdinfo --list shows them
# with their sizes; two clients write to two namespaces at once (nbdsh
# to "a" and "bb", every sector naming its namespace and itself), and
# qemu-io to "c"; each reads back its own data, the sectors at the
# edges (the last of one, the first of the next) included, and nothing
# of another's; the same after a restart.  An unknown export name is
# refused, the default export is the first namespace, and every bad
# namespaces= is refused with its one-line reason, an existing image
# untouched; ftlctl info lists the namespaces.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdinfo nbdsh jq timeout qemu-io md5sum

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
export tmp

# 1. Made with three namespaces; listed with their sizes.
nbdkit -U - "$FTL_PLUGIN" file="$disk" namespaces=a:4M,bb:2M,c:4M \
    pages-per-block=16 --run 'nbdinfo --list --json "$uri"' > "$tmp/list.json"
jq -c '[.exports[] | [."export-name", ."export-size", .description]]' \
    "$tmp/list.json" | tee "$tmp/list"
test "$(cat "$tmp/list")" = '[["a",4194304,"namespace '"'a'"': 4 MiB (4194304 bytes)"],["bb",2097152,"namespace '"'bb'"': 2 MiB (2097152 bytes)"],["c",4194304,"namespace '"'c'"': 4 MiB (4194304 bytes)"]]'

# Sector s of namespace n holds its name and number; check reads a
# whole namespace and says which sectors are not as expected.
cat > "$tmp/ns.py" <<'EOF_PY'
import struct
S = 512
def sector(ns, s):
    return (struct.pack("<8sQ", ns.encode(), s)) * (S // 16)
def fill(h, ns, size):
    for off in range(0, size, 256 * 1024):
        h.pwrite(b"".join(sector(ns, off // S + i) for i in range(256 * 1024 // S)), off)
def check(h, ns, size):
    data = h.pread(size, 0)
    bad = [s for s in range(size // S)
           if data[s * S:(s + 1) * S] != sector(ns, s)]
    assert not bad, "%s: %d sectors wrong, first %d: %r" % (
        ns, len(bad), bad[0], bytes(data[bad[0] * S:bad[0] * S + 16]))
EOF_PY

# 2. Two clients at once, one per namespace, and qemu-io on the third.
start_server "$sock" "$pid" file="$disk"
writers=()
for ns in a bb; do
    timeout 120 nbdsh -u "nbd+unix:///$ns?socket=$sock" \
        -c "exec(open('$tmp/ns.py').read())" \
        -c "fill(h, '$ns', h.get_size()); h.flush()" &
    writers+=($!)
done
for w in "${writers[@]}"; do
    wait "$w"
done
timeout 60 qemu-io -f raw "nbd+unix:///c?socket=$sock" \
    -c 'write -P 0xc5 0 4M' -c flush > /dev/null

checks ()
{
    local ns
    for ns in a bb; do
        timeout 120 nbdsh -u "nbd+unix:///$ns?socket=$sock" \
            -c "exec(open('$tmp/ns.py').read())" \
            -c "check(h, '$ns', h.get_size())"
    done
    timeout 60 qemu-io -f raw "nbd+unix:///c?socket=$sock" \
        -c 'read -P 0xc5 0 4M' | grep -q 'read 4194304/4194304'
    # The edges, one sector each side of each boundary.
    timeout 60 nbdsh -u "nbd+unix:///bb?socket=$sock" \
        -c "exec(open('$tmp/ns.py').read())" -c '
assert h.get_size() == 2 * 1024 * 1024
assert h.pread(S, 0) == sector("bb", 0)
assert h.pread(S, h.get_size() - S) == sector("bb", h.get_size() // S - 1)
try:
    h.pread(S, h.get_size())
    assert False, "read past the end of bb"
except nbd.Error:
    pass
'
    timeout 60 nbdsh -u "nbd+unix:///a?socket=$sock" \
        -c "exec(open('$tmp/ns.py').read())" -c '
assert h.pread(S, 4 * 1024 * 1024 - S) == sector("a", 8191)
'
}
checks

# The default export is the first namespace.
timeout 60 nbdsh -u "nbd+unix:///?socket=$sock" \
    -c "exec(open('$tmp/ns.py').read())" \
    -c 'assert h.get_size() == 4 * 1024 * 1024' \
    -c 'assert h.pread(S, 0) == sector("a", 0)'

# An unknown export name is refused.
if timeout 60 nbdsh -u "nbd+unix:///d?socket=$sock" -c 'print(h.get_size())' \
       2> "$tmp/err"; then
    echo "$0: FAIL: export 'd' was served"
    exit 1
fi
cat "$tmp/err"
grep -q "no export named 'd'" "$tmp/err"

# 3. After a restart, each as it was; namespaces= the same is welcome.
stop_server "$pid"
start_server "$sock" "$pid" file="$disk" namespaces=a:4M,bb:2M,c:4M
checks
stop_server "$pid"

# ftlctl info lists them, in order, where each starts.
"${FTLCTL:-../tools/ftlctl}" info "$disk" | tee "$tmp/info" | sed -n '/^namespaces:/,/^$/p'
grep -Eq '^  a +4194304 bytes, from logical byte 0 \(the default export\)$' "$tmp/info"
grep -Eq '^  bb +2097152 bytes, from logical byte 4194304$' "$tmp/info"
grep -Eq '^  c +4194304 bytes, from logical byte 6291456$' "$tmp/info"

# 4. Bad input, one line each naming the problem and the limit.
refused ()
{
    local want="$1" out
    shift
    if out="$(nbdkit -U - "$FTL_PLUGIN" "$@" --run true 2>&1)"; then
        echo "$0: FAIL: accepted: $*"
        exit 1
    fi
    echo "$out"
    test "$(echo "$out" | wc -l)" -eq 1
    if [[ "$out" != *"$want"* ]]; then
        echo "$0: FAIL: '$*' did not say: $want"
        exit 1
    fi
}
new="$tmp/new.img"
refused "namespaces: 'a' given twice (names are unique)" \
    file="$new" namespaces=a:1M,a:1M
refused "namespaces: bad name 'a/b' (1 to 63 characters of A-Z a-z 0-9 . _ -)" \
    file="$new" namespaces=a/b:1M
refused "bad name '$(printf 'n%.0s' {1..64})' (1 to 63 characters" \
    file="$new" namespaces="$(printf 'n%.0s' {1..64})":1M
refused "namespaces: 'a' has size 0" file="$new" namespaces=a:0
refused "namespaces: 'a' has size 1000, not a positive multiple of the page size (4096)" \
    file="$new" namespaces=a:1000
refused "namespaces: 'a' is not NAME:SIZE" file="$new" namespaces=a
refused "namespaces: they take 3145728 bytes (3 MiB), more than the image's size holds: 2097152 bytes (2 MiB) available" \
    file="$new" size=2M namespaces=a:1M,b:2M
refused "namespaces: more than 16" file="$new" \
    namespaces="$(for i in {0..16}; do printf 'n%d:1M,' $i; done | sed 's/,$//')"
test ! -e "$new"
# An existing image: another size, another name or order, or one of
# them left out, is refused, and nothing of the image changes.
sum="$(md5sum < "$disk")"
for spec in a:4M,bb:4M,c:4M a:4M,bb:2M bb:2M,a:4M,c:4M a:4M,bx:2M,c:4M; do
    refused "namespaces=$spec differs from the image's namespaces a:4M,bb:2M,c:4M" \
        file="$disk" namespaces=$spec
done
test "$(md5sum < "$disk")" = "$sum"
# An image made without namespaces has one, "": namespaces= is refused.
nbdkit -U - "$FTL_PLUGIN" file="$tmp/one.img" size=4M pages-per-block=16 --run \
    'nbdinfo --list --json "$uri"' | jq -e '[.exports[]."export-name"] == [""]'
refused "namespaces=a:4M differs from the image's namespaces '':4M" \
    file="$tmp/one.img" namespaces=a:4M
echo "$0: OK"
