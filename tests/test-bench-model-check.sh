#!/usr/bin/env bash
# nbdkit-ftl: bench/model-check.sh still runs, with its in-cache QLC
# write and the host's columns.  A tiny run of sata-qlc: speed is not
# checked here (see bench/README.md), only that the table has every
# row and column it promises, that the in-cache write is compared with
# the published figure, and that a run is flagged as spoiled by the
# host when the host's work passes the limit (--host-limit 0: any sync
# at all).  make check-long runs it on a larger disk.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires fio jq numfmt timeout

make_tmpdir
mc="${srcdir:-.}/../bench/model-check.sh"

# make check: the smallest disk the script takes (the random writes
# before GC write a sixteenth and an eighth of it, at the model's
# pace), with the over-provisioning that its 1 MiB erase blocks need
# there, and a 16M in-cache write; make check-long (FTL_CHECK_LONG=1):
# twice both, with the drive's over-provisioning.  The same rows and
# columns are checked.
if [ -n "${FTL_CHECK_LONG:-}" ]; then
    size=128M op=10 cache_size=2G cache_write=32M
else
    size=64M op=16 cache_size=1G cache_write=16M
fi
timeout 600 "$mc" --plugin "$FTL_PLUGIN" --dir "$tmp" --presets sata-qlc \
    --size "$size" --op "$op" --runtime 1 --no-steady \
    --cache-size "$cache_size" --cache-write "$cache_write" \
    --host-limit 0 >"$tmp/out.md"
cat "$tmp/out.md"

# The columns, in order.
grep -q '^| preset | corner | unit | measured | range (max/min) | model only | published | ratio | untimed | bound | die util | host util | host stall us | sync ms/s | destage stall ms/s | cache+sync % | host | note |$' \
    "$tmp/out.md"
# Every corner has a positive figure; the in-cache write is compared
# with the published figure (530 MB/s) and says what it wrote.
for c in seq-read seq-write seq-write-cache rand-read-qd1 rand-read-qd32 \
         rand-write-qd1 rand-write-qd32 rand-write-qd32-cache; do
    grep -q "^| sata-qlc | $c | [A-Z/a-z]* | [0-9.]*[1-9][0-9.]* |" "$tmp/out.md"
done
grep -q "^| sata-qlc | seq-write-cache | MB/s | [0-9.]* |  |  | 530 | [0-9]\\.[0-9][0-9] | [0-9.]* |  | .* | $cache_write into the SLC cache of a fresh $cache_size disk" \
    "$tmp/out.md"
# So is the random write into the cache (88,000 IOPS), and the random
# write on the small disk says that the published figure is the
# cache's.
grep -q "^| sata-qlc | rand-write-qd32-cache | IOPS | [0-9]* |  | [0-9]* | 88000 | [0-9]\\.[0-9][0-9] | [0-9]* | [a-z]* | .* | $cache_write into the SLC cache of a fresh $cache_size disk" \
    "$tmp/out.md"
grep -q "^| sata-qlc | rand-write-qd32 | .* | published figure is the SLC cache's (rand-write-qd32-cache)" \
    "$tmp/out.md"
# The untimed plugin ran them too (the transport's ceiling).
grep -q '^    seq-write-cache [0-9.]*[1-9]' "$tmp/out.md"
grep -q '^    rand-write-qd32-cache [0-9]*[1-9]' "$tmp/out.md"
# Numbers in the host's columns (sync ms/s, destage stall ms/s) of
# every timed corner.
awk -F' *[|] *' '$2 == "sata-qlc" && $3 != "deadline aborts" {
        if ($15 !~ /^[0-9]+$/ || $16 !~ /^[0-9]+$/) { print "bad: " $0; bad = 1 } }
     END { exit bad }' "$tmp/out.md"
# With a limit of 0, the write over the full disk (garbage collection
# syncs before its erases) is flagged, and says by what.
grep -q '^| sata-qlc | seq-write | .*| SPOILED 1/1: sync 1' "$tmp/out.md"
grep -q '^| sata-qlc | deadline aborts | | 0 |' "$tmp/out.md"
# The QD32 corners: the model-only figure, the untimed figure of the
# same run, and what bound the figure.
for c in rand-read-qd32 rand-write-qd32 rand-write-qd32-cache; do
    awk -F' *[|] *' -v c="$c" '$2 == "sata-qlc" && $3 == c {
            found = 1
            if ($7 !~ /^[0-9]+$/ || $10 !~ /^[0-9]+$/ ||
                $11 !~ /^(model|transport|host)$/) { print "bad: " $0; bad = 1 } }
         END { exit bad || !found }' "$tmp/out.md"
done
