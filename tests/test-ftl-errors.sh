#!/usr/bin/env bash
# nbdkit-ftl: media that ages (errors=true).  With a fixed seed, aging
# a worn image (ftlctl age) raises the bits ECC corrects and the read
# retries run; old enough data reads as EIO, never as wrong data (every
# sector is checked against what was written), and a rewrite heals it.
# Read reclaim keeps a block that is read continuously readable where
# the same reads without it meet uncorrectable errors.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout

make_tmpdir
export tmp
disk="$tmp/disk.img"
stats="$tmp/stats.json"

# 2 MiB of data in blocks of 16 pages.
geometry="size=2M page-size=4096 pages-per-block=16 op=100"
# Every page: a pattern that differs in every sector.
export PATTERN='
P = 4096
def page(n):
    return b"".join(bytes([(n * 8 + s) % 251 + 1]) * 512 for s in range(8))
'
model="errors=true seed=7 scrub-interval=0 read-reclaim=false"

timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" $geometry \
    --run 'nbdsh -u "$uri" -c "$PATTERN
for n in range(512):
    h.pwrite(page(n), n * P)
h.flush()
"'
# A disk at its rated endurance.
$FTLCTL age --pe 3000 "$disk"

# read_all: read every page once; a page that fails is read sector by
# sector: each sector either fails or is what was written.  Prints the
# pages that failed.
export read_all='
failed = 0
for n in range(512):
    want = page(n)
    try:
        got = h.pread(P, n * P)
        assert got == want, "wrong data in page %d" % n
    except nbd.Error:
        failed += 1
        for s in range(8):
            try:
                got = h.pread(512, n * P + s * 512)
                assert got == want[s * 512:(s + 1) * 512], \
                    "wrong data in page %d sector %d" % (n, s)
            except nbd.Error as e:
                assert e.errno in ("EIO", 5), e.errno
print(failed)
'

prev_bits=0 prev_retries=0
last_bits=0 last_retries=0
for days in 0 90 275 365 365 365; do
    [ "$days" = 0 ] || $FTLCTL age --days "$days" "$disk"
    failed="$(timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" $model \
        stats="$stats" --run 'nbdsh -u "$uri" -c "$PATTERN$read_all"')"
    bits="$(jq '.media.corrected_bits' "$stats")"
    retries="$(jq '.media.read_retries' "$stats")"
    unc="$(jq '.media.uncorrectable' "$stats")"
    d_bits=$(( bits - last_bits )) d_retries=$(( retries - last_retries ))
    last_bits=$bits last_retries=$retries
    echo "aged $days more days: $d_bits bits corrected, $d_retries" \
         "retries, $unc uncorrectable reads, $failed pages failed"
    # More errors as the data ages (the same reads, the same seed):
    # more bits corrected, until pages are lost (their bits are not
    # corrected), and more retries.
    [ "$d_bits" -ge "$prev_bits" ] || [ "$failed" -gt 0 ] ||
        { echo "$0: FAIL: corrected bits fell: $d_bits < $prev_bits"; exit 1; }
    [ "$d_retries" -ge "$prev_retries" ] ||
        { echo "$0: FAIL: retries fell: $d_retries < $prev_retries"; exit 1; }
    prev_bits=$d_bits prev_retries=$d_retries
done
# Past the model's limit: some pages are lost (and counted).
[ "$failed" -gt 0 ] ||
    { echo "$0: FAIL: no uncorrectable page after $days days"; exit 1; }
[ "$prev_retries" -gt 0 ]
jq -e '.health.media_errors > 0 and .health.media_errors ==
       .health.num_err_log_entries and
       (.health.critical_warning / 4 | floor) % 2 == 1' "$stats"

# A rewrite heals: fresh data, read back whole.
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" $model stats="$stats" \
    --run 'nbdsh -u "$uri" -c "$PATTERN
for n in range(512):
    h.pwrite(page(n), n * P)
h.flush()
for n in range(512):
    assert h.pread(P, n * P) == page(n), n
"'
jq -e '.media.uncorrectable == 0' "$stats"

# Read reclaim.  A fresh disk whose reads disturb a block 1000 times as
# much as the default: 16 pages (one block) read 200 times over.
# reclaim_test RECLAIM: prints the reads that failed.
reclaim_test ()
{
    rm -f "$disk"
    timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" $geometry \
        errors=true seed=3 read-disturb-scale=1000 reclaim-reads=200 \
        scrub-interval=0 read-reclaim="$1" stats="$stats" \
        --run 'nbdsh -u "$uri" -c "$PATTERN
import time
for n in range(16):
    h.pwrite(page(n), n * P)
h.flush()
failed = 0
for k in range(200):
    for n in range(16):
        try:
            assert h.pread(P, n * P) == page(n), n
        except nbd.Error:
            failed += 1
    time.sleep(0.01)
print(failed)
"'
}
off="$(reclaim_test false)"
echo "read reclaim off: $off reads failed"
jq -c '{media, gc}' "$stats"
[ "$off" -gt 0 ]
on="$(reclaim_test true)"
echo "read reclaim on: $on reads failed"
jq -c '{media, gc}' "$stats"
[ "$on" -eq 0 ]
jq -e '.gc.reclaimed_blocks >= 1 and .gc.copied_pages >= 16' "$stats"

# time-scale: a running disk's media clock a year per second.  Data
# written at the rated endurance and read two seconds later needs read
# retries, and the clock's lead is kept in the image.
rm -f "$disk"
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" $geometry \
    --run 'nbdsh -u "$uri" -c "h.pwrite(b\"\\1\" * 4096, 0)"'
$FTLCTL age --pe 3000 "$disk"
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" $model \
    time-scale=31536000 stats="$stats" --run 'nbdsh -u "$uri" -c "$PATTERN
import time
for n in range(64):
    h.pwrite(page(n), n * P)
h.flush()
time.sleep(2)
for n in range(64):
    try:
        assert h.pread(P, n * P) == page(n), n
    except nbd.Error:
        pass
"'
jq -c .media "$stats"
jq -e '.media.clock_skew_seconds > 2 * 31536000 and .media.read_retries > 0' \
    "$stats"
$FTLCTL info --json "$disk" | jq -e '.media.clock_skew_seconds > 2 * 31536000'

# The idle scrub: on data that needs read retries (the rated endurance,
# a year old), the scrub reads blocks through the model and hands them
# to read reclaim, which rewrites them: afterwards the host reads them
# without a retry.
rm -f "$disk"
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" $geometry \
    --run 'nbdsh -u "$uri" -c "$PATTERN
for n in range(64):
    h.pwrite(page(n), n * P)
h.flush()
"'
$FTLCTL age --pe 3000 --days 365 "$disk"
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" errors=true seed=7 \
    scrub-interval=10ms stats="$stats" --run 'sleep 2'
jq -c '{media, gc, scrub}' "$stats"
jq -e '.scrub.blocks >= 4 and .scrub.pages >= 64 and
       .gc.reclaimed_blocks >= 4' "$stats"
retries="$(jq .media.read_retries "$stats")"
# (The relocations' reads took retries; the host's now need none.)
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" $model stats="$stats" \
    --run 'nbdsh -u "$uri" -c "$PATTERN
for n in range(64):
    assert h.pread(P, n * P) == page(n), n
"'
jq -e ".media.read_retries == $retries" "$stats"
