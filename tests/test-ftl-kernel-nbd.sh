#!/usr/bin/env bash
# nbdkit-ftl: the Linux kernel's NBD client in a guest.
#
# A small guest (Debian's cloud kernel under qemu with TCG, an initramfs
# built here) reaches the server with no IP networking: qemu connects
# nbdkit's Unix socket to a virtio-serial port, socat in the guest
# bridges the port to a Unix socket there, and nbd-client -unix attaches
# it as /dev/nbd0.  The guest formats it with ext4, writes and trims;
# the statistics show the trims reached the FTL.  Then the guest and
# the server are killed (SIGKILL to qemu and nbdkit) after a sync, and
# a second boot finds the file system clean and every file intact.  The
# kill is not a power cut for the server's image: what nbdkit wrote is
# in the host's page cache, synced or not (see kill_server in
# functions.sh).

source "${srcdir:-.}/functions.sh"
source "${srcdir:-.}/guest/functions.sh"
requires_plugin
requires jq nbdinfo
guest_requires

make_tmpdir
start=$SECONDS
guest_build "${srcdir:-.}/guest/scenario-kernel-nbd.sh"

sock="$tmp/nbd.sock"
pidfile="$tmp/nbdkit.pid"
stats="$tmp/stats.json"
# nbdkit's log filter records the requests of the first boot.
start_server "$sock" "$pidfile" file="$tmp/disk.img" size=128M \
    stats="$stats" --filter=log logfile="$tmp/requests.log"

# What the kernel client will be told: 6.1 kernels mark every NBD disk
# non-rotational whatever the server says, so check the flag itself.
nbdinfo --json "nbd+unix:///?socket=$sock" > "$tmp/info.json"
jq -e '.exports[0].is_rotational == false' "$tmp/info.json"
jq -e '.exports[0].can_trim == true' "$tmp/info.json"

nbd_port=(
    -chardev socket,id=nbd,path="$sock"
    -device virtserialport,bus=vser.0,chardev=nbd,name=nbd
)

# stat KEY: a number from the statistics file.
stat () { jq -e "$1" "$stats"; }

guest_start fill "${nbd_port[@]}"

guest_fill_and_trim

# Killed after the sync: the guest and the server die at once.
guest_wait_for "GUEST-SYNCED"
guest_kill
kill_server "$pidfile"

# What the kernel client sent (on the last connection; nbdinfo's came
# first): flushes and trims, writes of at most 128 KiB, no write zeroes.
c=$(sed -n 's/.*connection=\([0-9]*\) Connect .*/\1/p' "$tmp/requests.log" |
    tail -n 1)
for k in Write Trim Flush Zero; do
    n=$(grep -c "connection=$c $k id=" "$tmp/requests.log" || :)
    echo "kernel client requests: $k $n"
done
largest=$(sed -n "s/.*connection=$c Write id=.* count=\(0x[0-9a-f]*\) .*/\1/p" \
          "$tmp/requests.log" | sort -u | while read -r x; do echo $((x)); done |
          sort -n | tail -n 1)
echo "kernel client requests: largest write $largest bytes"
test "$largest" -le $((128 * 1024))
grep -q "connection=$c Trim id=" "$tmp/requests.log"
grep -q "connection=$c Flush id=" "$tmp/requests.log"
if grep -q "connection=$c Zero id=" "$tmp/requests.log"; then
    echo "$0: FAIL: the kernel client sent write zeroes"
    exit 1
fi

start_server "$sock" "$pidfile" file="$tmp/disk.img" stats="$stats"
guest_start check "${nbd_port[@]}"
guest_finish
stop_server "$pidfile"

# The guest ended by discarding the whole disk.
cat "$stats"
stat '.mapped_pages == 0'
echo "total: $((SECONDS - start)) s"
