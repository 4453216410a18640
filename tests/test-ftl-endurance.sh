#!/usr/bin/env bash
# nbdkit-ftl: end of life.  With endurance=5, a small disk overwritten
# again and again wears its erase blocks until too few of them can
# still be reclaimed (those retired and those on their last cycle do
# not count) to sustain writes; then writes fail with EPERM, reads
# still return the last data written, the statistics say so, and after
# a restart the disk is read-only for new clients too.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh nbdinfo jq timeout

make_tmpdir
export tmp
disk="$tmp/disk.img"
stats="$tmp/stats.json"

# 1 MiB of 64 KiB erase blocks, doubled by op=100: 32 erase blocks.
timeout 300 nbdkit -U - "$FTL_PLUGIN" file="$disk" size=1M page-size=4096 \
    pages-per-block=16 op=100 streams=1 endurance=5 stats="$stats" \
    --run 'nbdsh -u "$uri" -c "
import errno
P = 4096
def page(n, v):
    return bytes([(n * 7 + v) % 251 + 1]) * P
last = {}
failed = None
for v in range(1, 400):
    try:
        for n in range(256):
            h.pwrite(page(n, v), n * P)
            last[n] = v
    except nbd.Error as e:
        failed = e
        break
assert failed is not None, \"the disk never wore out\"
print(\"worn out after\", v, \"passes:\", failed.string)
assert failed.errno in (errno.EPERM, errno.errorcode[errno.EPERM]), failed.errno
# Every page still reads as the last version written to it.
for n in range(256):
    assert h.pread(P, n * P) == page(n, last[n]), n
# Trims and zeros are refused too; flush still works.
for f in (lambda: h.trim(P, 0), lambda: h.zero(P, 0)):
    try:
        f()
        assert False, \"allowed on a worn-out disk\"
    except nbd.Error as e:
        assert e.errno in (errno.EPERM, errno.errorcode[errno.EPERM]), e.errno
h.flush()
"'

cat "$stats"
jq -e '.readonly == true' "$stats"
# 32 blocks, 16 for the data, one stream (10 spare needed) and a write
# cache of 16 pages (2 more blocks to destage it): at least
# 16 - 10 - 2 + 1 worn.
jq -e '.cache.size_bytes == 16 * 4096' "$stats"
jq -e '.wear.retired_blocks + .wear.last_cycle_blocks >= 5 and
       .wear.endurance == 5' "$stats"
jq -e '.wear.erase_max <= 5' "$stats"

# After a restart: read-only for new clients, data still there.
timeout 120 nbdkit -U - "$FTL_PLUGIN" file="$disk" endurance=5 \
    --run 'nbdinfo --json "$uri"' > "$tmp/info.json"
cat "$tmp/info.json"
jq -e '.exports[0].is_read_only == true' "$tmp/info.json"

# The health log: every erase of the endurance used, the spare used up,
# and the critical warning's read-only and reliability bits set.
jq -c .health "$stats"
jq -e '.health.percentage_used >= 100 and .health.available_spare == 0 and
       .health.critical_warning == (1 + 4 + 8)' "$stats"
# At rest, without the write cache's blocks to keep, the disk may have
# just enough blocks left to take writes: then it is not read-only, but
# most of its life is used and little or no spare is left.
$FTLCTL health --endurance 5 --json "$disk" > "$tmp/health.json"
cat "$tmp/health.json"
jq -e '.health.percentage_used >= 50 and .health.available_spare < 50 and
       .health.host_write_commands == '"$(jq .health.host_write_commands "$stats")" \
   "$tmp/health.json"
$FTLCTL health --endurance 5 "$disk" | grep -E '^percentage_used +: [0-9]+%$'
