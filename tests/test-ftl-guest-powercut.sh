#!/usr/bin/env bash
# nbdkit-ftl: a power cut under a file system and a database, with the
# write cache on (the default).
#
# A guest (tests/guest/scenario-powercut.sh) puts ext4 on the disk,
# writes and syncs a file, then runs a stream of SQLite transactions in
# rollback-journal mode with synchronous=EXTRA (the mode in which SQLite
# makes a commit durable, journal deletion included, before it
# returns).  Once 60 commits have returned, the server and the guest are
# killed at once: the server's write cache is lost, as a drive's DRAM
# is when the power goes.  A second boot must find the synced file
# intact, every transaction reported committed present, none half
# applied, PRAGMA integrity_check ok and e2fsck -f -n clean.  The image
# counts the unsafe shutdown.

source "${srcdir:-.}/functions.sh"
source "${srcdir:-.}/guest/functions.sh"
requires_plugin
requires jq
guest_requires

make_tmpdir
start=$SECONDS
guest_build "${srcdir:-.}/guest/scenario-powercut.sh"

sock="$tmp/nbd.sock"
pidfile="$tmp/nbdkit.pid"
stats="$tmp/stats.json"
disk=(
    -drive if=virtio,format=raw,cache=writeback,file.driver=nbd,file.server.type=unix,file.server.path="$sock"
)

start_server "$sock" "$pidfile" file="$tmp/disk.img" size=128M \
    stats="$stats"
jq -e '.cache.size_bytes > 0' "$stats"
guest_start work "${disk[@]}"
guest_wait_for "GUEST: committed 60"
# The power goes: the drive and the machine at once.
kill_server "$pidfile"
guest_kill
committed=$(tr -d '\r' < "$tmp/console-work.log" |
            sed -n 's/^GUEST: committed \([0-9]*\)$/\1/p' | tail -n 1)
echo "the power went after $committed commits had returned"
test "$committed" -ge 60

start_server "$sock" "$pidfile" file="$tmp/disk.img" stats="$stats"
guest_start check "${disk[@]}"
guest_finish
stop_server "$pidfile"
last=$(tr -d '\r' < "$tmp/console-check.log" |
       sed -n 's/^GUEST-LAST \([0-9]*\)$/\1/p')
echo "after the restart the database holds transactions 1..$last"
if [ "$last" -lt "$committed" ]; then
    echo "$0: FAIL: transaction $committed was reported committed, but" \
         "the database ends at $last"
    exit 1
fi
jq -c .health "$stats"
jq -e '.health.unsafe_shutdowns == 1' "$stats"
echo "total: $((SECONDS - start)) s"
