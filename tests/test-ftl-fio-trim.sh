#!/usr/bin/env bash
# nbdkit-ftl: fio through its nbd engine, six connections at once:
# random writes verified with crc32c beside random trims and a trim
# then write workload, then kill -9 after the last flush (a process
# killed, not a power cut: see kill_server in functions.sh) and a
# verify-only pass over what was written.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires fio jq qemu-io timeout

make_tmpdir
sock="$tmp/nbd.sock"
pidfile="$tmp/nbdkit.pid"
stats="$tmp/stats.json"
export uri="nbd+unix:///?socket=$sock"

# Regions of the 64 MiB disk (each job is one NBD connection):
#   0-16M   keep: 2 jobs, random writes, verified, kept for later
#   16-32M  mixed: 2 jobs, random writes verified, under --fsync
#   32-48M  trimwrite: trims each block then writes it, verified
#   48-64M  randtrim: trims every block of a region filled beforehand
# fio sends trimwrite's trim and write of a block without waiting for
# the first to complete; NBD does not order requests in flight, so that
# job runs at iodepth 1.
cat > "$tmp/jobs.fio" <<'EOF_FIO'
[global]
ioengine=nbd
uri=${uri}
bs=4k
iodepth=8
verify=crc32c
verify_fatal=1
verify_state_save=0

[keep]
rw=randwrite
offset=0
size=8M
numjobs=2
offset_increment=8M
do_verify=1
end_fsync=1

[mixed]
rw=randwrite
offset=16M
size=8M
numjobs=2
offset_increment=8M
fsync=32
do_verify=1

[trimwrite]
rw=trimwrite
offset=32M
size=16M
iodepth=1

[randtrim]
rw=randtrim
offset=48M
size=16M
EOF_FIO

cd "$tmp"
start_server "$sock" "$pidfile" file="$tmp/disk.img" size=64M \
    stats="$stats"
timeout 300 fio --name=fill --ioengine=nbd --uri="$uri" --rw=write --bs=1M \
    --offset=48M --size=16M --output="$tmp/fill.out"
timeout 600 fio "$tmp/jobs.fio" --output="$tmp/fio.out" 2>&1 ||
    { cat "$tmp/fio.out"; exit 1; }
grep -E '^[a-z]+: \(groupid|^ +(read|write|trim):' "$tmp/fio.out"
if grep -E 'err= *[1-9]|verify: bad' "$tmp/fio.out"; then
    echo "$0: FAIL: fio reported errors or bad blocks"
    exit 1
fi
# randtrim trimmed every block it was given: the region reads as zeros.
timeout 60 qemu-io -f raw -r "$uri" -c "read -P 0 48M 16M"
# The statistics file is rewritten after flushes and each second while
# counters change: wait until it shows every job's pages.  Written: 4096
# pages by the fill and by each of keep, mixed and trimwrite; trimmed:
# 4096 pages by randtrim and by trimwrite.  The first 48 MiB hold data,
# the randtrim region is unmapped.
stats_wait "$stats" '.host.write_pages == 4 * 4096 and
                     .host.trim_pages == 2 * 4096' || :
jq -c '{host, mapped_pages}' "$stats"
jq -e '.host.write_pages == 4 * 4096' "$stats"
jq -e '.host.trim_pages == 2 * 4096' "$stats"
jq -e '.mapped_pages == 3 * 4096' "$stats"
jq -e '.host.flushes > 0' "$stats"

# kill -9 after keep's final flush; then fio reads back and checks
# every block keep wrote.
kill_server "$pidfile"
start_server "$sock" "$pidfile" file="$tmp/disk.img" stats="$stats"
timeout 300 fio "$tmp/jobs.fio" --section=keep --verify_only \
    --output="$tmp/verify.out" || { cat "$tmp/verify.out"; exit 1; }
grep -E '^[a-z]+: \(groupid|^ +read:' "$tmp/verify.out"
grep -E '^ +read:.*\(8192KiB/' "$tmp/verify.out" | wc -l | grep -qx 2

# The verify-only pass does find damage: trim one block and it fails.
timeout 60 qemu-io -f raw "$uri" -c "discard 4M 4k" > /dev/null
if timeout 300 fio "$tmp/jobs.fio" --section=keep --verify_only \
       --output="$tmp/verify2.out" 2> "$tmp/verify2.err"; then
    echo "$0: verify-only pass missed a trimmed block"
    exit 1
fi
grep -m1 'verify: bad' "$tmp/verify2.err"
stop_server "$pidfile"
