#!/usr/bin/env bash
# nbdkit-ftl: ftlctl creates an image, describes it and checks it; a
# corrupted data page is found and named by check, --repair unmaps it,
# and the image is clean again with every other page intact.  info
# --json and the plugin's statistics file agree on every member that
# both show.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq dd awk timeout

export FTLCTL="${FTLCTL:-../tools/ftlctl}"
if [ ! -x "$FTLCTL" ]; then
    missing "$FTLCTL not built"
fi

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
uri="nbd+unix:///?socket=$sock"

# fail MESSAGE: end the test.
fail ()
{
    echo "$0: FAIL: $*"
    exit 1
}

# expect_status N CMD...: run CMD, which must exit with status N; its
# output goes to $tmp/out (and to the log).
expect_status ()
{
    local want="$1" r=0
    shift
    "$@" > "$tmp/out" 2>&1 || r=$?
    cat "$tmp/out"
    [ $r -eq "$want" ] || fail "exit status $r, not $want: $*"
}

# 1. Create an image; an existing one is not overwritten without --force.
$FTLCTL format --size 64M --pages-per-block 64 "$disk"
expect_status 1 $FTLCTL format --size 64M "$disk"
grep -q 'not empty' "$tmp/out"

# 2. Write 100 pages, page n full of the byte n + 1.  While the server
# has the image, check refuses it.
start_server "$sock" "$pid" file="$disk"
timeout 120 nbdsh -u "$uri" -c '
for n in range(100):
    h.pwrite(bytes([n + 1]) * 4096, n * 4096)
h.flush()
'
expect_status 8 $FTLCTL check "$disk"
grep -q 'in use' "$tmp/out"
stop_server "$pid"

# 3. info shows the geometry and the mapped pages.
$FTLCTL info "$disk"
$FTLCTL info --json "$disk" > "$tmp/info.json"
jq -e '.geometry.page_size == 4096 and
       .geometry.pages_per_block == 64 and
       .geometry.logical_bytes == 67108864 and
       .capacity.mapped_pages == 100 and
       .capacity.logical_pages == 16384 and
       .superblock.clean and
       .blocks.total == .geometry.blocks and
       (.wear.histogram.counts | add) == .geometry.blocks' \
   "$tmp/info.json" > /dev/null ||
    { cat "$tmp/info.json"; fail "info --json"; }

# 4. The image is clean.
expect_status 0 $FTLCTL check "$disk"
grep -q 'clean, 100/16384 logical pages mapped' "$tmp/out"

# 5. Corrupt the data of logical page 42 in the file.  dump says where
# it is; the superblock's layout must agree.
$FTLCTL dump --lpn 42 "$disk" | tee "$tmp/dump"
offset="$(awk '/data offset:/ { print $3 }' "$tmp/dump")"
read -r block page < <(sed -En \
    's/^physical page [0-9]+: erase block ([0-9]+), page ([0-9]+)$/\1 \2/p' \
    "$tmp/dump")
expected="$(jq --argjson b "$block" --argjson p "$page" \
    '.geometry as $g | $g.data_offset
       + ($b * $g.pages_per_block + $p) * $g.page_size' "$tmp/info.json")"
[ "$offset" = "$expected" ] || fail "data offset $offset, expected $expected"
printf 'not the data' | dd of="$disk" bs=1 seek="$offset" conv=notrunc \
                           status=none

# 6. check finds it and names the logical page.
expect_status 4 $FTLCTL check "$disk"
grep -q 'error: logical page 42 .*data checksum mismatch' "$tmp/out"
grep -q '1 error found' "$tmp/out"

# 7. --repair unmaps it (the data was lost already) and checks again.
expect_status 1 $FTLCTL check --repair "$disk"
grep -q 'repair: logical page 42 unmapped' "$tmp/out"
grep -q '1 error corrected, 0 left' "$tmp/out"
expect_status 0 $FTLCTL check "$disk"
grep -q 'clean, 99/16384 logical pages mapped' "$tmp/out"

# Page 42 reads as zeros; every other page is intact.
timeout 120 nbdkit -r -U - "$FTL_PLUGIN" file="$disk" \
    --run 'nbdsh -u "$uri" -c "
assert h.pread(4096, 42 * 4096) == bytearray(4096)
for n in range(100):
    if n != 42:
        assert h.pread(4096, n * 4096) == bytes([n + 1]) * 4096, n
"'

# 8. dump shows an erase block, a page by number and an unmapped page.
expect_status 0 $FTLCTL dump --block 0 "$disk"
grep -q '^erase block 0: full, erase count 0' "$tmp/out"
grep -Eq '^  page +0  data  lpn [0-9]+ +seq [0-9]+ +valid' "$tmp/out"
expect_status 0 $FTLCTL dump --page 0 --hex "$disk"
grep -q 'data checksum: .*(matches)' "$tmp/out"
grep -q '^00001000$' "$tmp/out"
expect_status 0 $FTLCTL dump --lpn 42 "$disk"
grep -q 'not mapped' "$tmp/out"

# 9. After the disk is written over four times, most erase blocks have
# been erased several times, an even count in the header copy at the
# end of the metadata area, an odd one in the copy at its start: check
# takes the newer copy and finds the image clean.
start_server "$sock" "$pid" file="$disk"
timeout 300 nbdsh -u "$uri" -c '
size = h.get_size()
for r in range(4):
    for off in range(0, size, 1 << 20):
        h.pwrite(bytes([r + 1]) * (1 << 20), off)
h.flush()
'
stop_server "$pid"
$FTLCTL info --json "$disk" > "$tmp/info.json"
jq -e '.wear.erase_max >= 3' "$tmp/info.json" > /dev/null ||
    { jq .wear "$tmp/info.json"; fail "blocks were not erased enough"; }
expect_status 0 $FTLCTL check "$disk"
grep -q 'clean, 16384/16384 logical pages mapped' "$tmp/out"

# 10. info --json and the plugin's statistics file come from one
# renderer: after a clean shutdown, every member that both show has the
# same value, but for what closing the image changes after the file's
# last write: one more checkpoint, and no erase block left open (each
# is full, or free if nothing was written to it); and the namespaces'
# counters, which count since the open.  A member only one
# of them shows is one of the image's (info) or of the server's (the
# statistics file), as the man pages say.
stats="$tmp/stats.json"
start_server "$sock" "$pid" file="$disk" stats="$stats"
timeout 300 nbdsh -u "$uri" -c '
import random
random.seed(11)
for n in range(3000):
    h.pwrite(bytes([n % 251 + 1]) * 4096, random.randrange(16384) * 4096)
    if n % 100 == 0:
        h.trim(8 * 4096, random.randrange(16376) * 4096)
h.flush()
'
stop_server "$pid"
$FTLCTL info --json "$disk" > "$tmp/info.json"
jq -n --slurpfile info "$tmp/info.json" --slurpfile stats "$stats" '
# Members (not objects), as paths; an array is one member.
def members: [paths(type != "object") | select(all(.[]; type == "string"))];
def name: join(".");
def only(prefixes): [.[] | name | select(. as $n |
    any(prefixes[]; . as $p | $n == $p or ($n | startswith($p + "."))))];
$info[0] as $i | $stats[0] as $s | ($i | members) as $mi |
($s | members) as $ms | [$mi[] | select(. as $m | any($ms[]; . == $m))] as $both |
[ ($mi - $ms | map(name)) - ($mi - $ms | only(["file", "uuid", "created",
      "superblock", "checkpoint", "namespaces"])),
  ($ms - $mi | map(name)) - ($ms - $mi | only(["gc.policy", "gc.mode",
      "gc.slices", "gc.yields", "gc.syncs", "gc.erases_unsynced",
      "wl.threshold", "wear.endurance", "wear.last_cycle_blocks", "readonly",
      "deadline", "cache", "media.syncs", "media.sync_ns",
      "media.syncs_skipped", "media.lost_pages", "media.uncorrectable",
      "gc.reclaimed_blocks", "scrub", "hot_cold", "errors", "latency_us", "slow",
      "slc.size_pages", "slc.folded_pages", "slc.exhausted"])) ] as [$stray_info, $stray_stats] |
[ $both[] | . as $p | select(name | IN("checkpoints", "blocks.open",
      "blocks.full", "blocks.free", "namespaces") | not) |
  select(($i | getpath($p)) != ($s | getpath($p))) |
  "\(name): info \($i | getpath($p)), stats \($s | getpath($p))" ] +
[ if $i.checkpoints != $s.checkpoints + 1 then
    "checkpoints: info \($i.checkpoints), stats \($s.checkpoints)"
  else empty end,
  if $i.blocks.open != 0 or
     $i.blocks.full + $i.blocks.free !=
       $s.blocks.full + $s.blocks.open + $s.blocks.free or
     $i.blocks.full < $s.blocks.full or $i.blocks.free < $s.blocks.free
  then "blocks: info \($i.blocks), stats \($s.blocks)" else empty end ] +
[ $stray_info[] | "\(.): only in info" ] +
[ $stray_stats[] | "\(.): only in the statistics file" ] +
(if ($both | length) < 30 then ["only \($both | length) members in both"]
 else [] end)
' > "$tmp/differ.json"
if [ "$(jq length "$tmp/differ.json")" != 0 ]; then
    jq -r '.[]' "$tmp/differ.json"
    fail "info --json and the statistics file disagree"
fi

# 11. Bad command lines: usage on stderr, status 2 (8 for check).
expect_status 2 $FTLCTL no-such-subcommand "$disk"
expect_status 2 $FTLCTL info --no-such-option "$disk"
expect_status 2 $FTLCTL dump --block 0 --lpn 1 "$disk"
expect_status 8 $FTLCTL check --no-such-option "$disk"
expect_status 1 $FTLCTL dump --block 999999 "$disk"
grep -q 'beyond the last' "$tmp/out"
