# nbdkit-ftl: host side of the guest tests.  Source it after
# tests/functions.sh and make_tmpdir:
#
#   source "$srcdir/guest/functions.sh"
#   guest_requires
#   guest_build "$srcdir/guest/scenario-foo.sh"
#   guest_start PHASE [QEMU ARGS...]
#   guest_wait_for "GUEST-WAIT step" && ... && guest_answer step
#   guest_finish
#
# The guest is a Linux kernel from Debian's linux-image-cloud-amd64 and
# an initramfs built by build-initramfs.sh, run by qemu-system-x86_64
# with TCG (KVM is not used: it is not available or not reliable
# everywhere).  It has no network.  Besides the QEMU ARGS of the test it
# has a virtio-serial controller with a port named "ctl" by which the
# host answers host_wait (tests/guest/lib.sh), and its console (the
# first serial port) goes to $tmp/console-PHASE.log.

: "${GUEST_TIMEOUT:=300}"   # seconds one boot may take in all
_guest_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

# guest_requires: find qemu, the kernel and the tools the initramfs is
# made of; skip the test when one is absent (see missing in
# tests/functions.sh).
guest_requires ()
{
    local v
    requires qemu-system-x86_64 busybox nbd-client socat cpio gzip \
        modprobe ldd mke2fs e2fsck fstrim blkdiscard sqlite3 timeout
    # The newest cloud kernel installed, with its modules.
    kver=
    for v in $(ls /boot 2>/dev/null | sed -n 's/^vmlinuz-\(.*-cloud-amd64\)$/\1/p' |
               sort -V); do
        [ -d "/lib/modules/$v/kernel" ] && kver="$v"
    done
    if [ -z "$kver" ]; then
        missing "no cloud kernel in /boot (Debian package linux-image-cloud-amd64)"
    fi
    vmlinuz="/boot/vmlinuz-$kver"
    if [ ! -r "$vmlinuz" ]; then
        missing "$vmlinuz is not readable"
    fi
}

# guest_build SCENARIO: build $tmp/initrd.gz around the scenario.
guest_build ()
{
    local start=$SECONDS
    bash "$_guest_dir/build-initramfs.sh" "$kver" "$1" "$tmp/initrd.gz"
    echo "initramfs for kernel $kver: $(stat -c %s "$tmp/initrd.gz") bytes," \
        "built in $((SECONDS - start)) s"
}

# guest_start PHASE [QEMU ARGS...]: boot the guest in the background.
guest_start ()
{
    local phase="$1"
    shift
    _guest_phase="$phase"
    _guest_console="$tmp/console-$phase.log"
    _guest_start=$SECONDS
    rm -f "$tmp/ctl.in" "$tmp/ctl.out" "$tmp/qemu.pid" "$_guest_console"
    mkfifo "$tmp/ctl.in" "$tmp/ctl.out"
    : > "$_guest_console"
    cleanup_fn _kill_pidfile "$tmp/qemu.pid"
    # no_timer_check: under TCG on a loaded host the kernel's check
    # that the 8254 timer reaches the IO-APIC can miss its ticks, and
    # the guest panics at boot ("MP-BIOS bug: 8254 timer not connected
    # to IO-APIC"); the check is for real boards.
    timeout -s KILL "$GUEST_TIMEOUT" \
        qemu-system-x86_64 -machine pc,accel=tcg -m 512 -smp 1 \
            -nodefaults -no-user-config -display none -no-reboot \
            -pidfile "$tmp/qemu.pid" \
            -kernel "$vmlinuz" -initrd "$tmp/initrd.gz" \
            -append "console=ttyS0 quiet panic=-1 no_timer_check ftl.phase=$phase" \
            -serial "file:$_guest_console" \
            -device virtio-serial-pci,id=vser \
            -chardev pipe,id=ctl,path="$tmp/ctl" \
            -device virtserialport,bus=vser.0,chardev=ctl,name=ctl \
            "$@" > "$tmp/qemu-$phase.log" 2>&1 &
    _guest_job=$!
    # qemu's pid, for guest_kill, once qemu has written it (qemu removes
    # its pid file when it exits: a guest that panics after the server
    # went away leaves none to read later).  Empty if qemu ended first.
    _guest_pid=
    while [ ! -s "$tmp/qemu.pid" ] && kill -0 $_guest_job 2>/dev/null; do
        sleep 0.05
    done
    [ ! -s "$tmp/qemu.pid" ] || _guest_pid="$(cat "$tmp/qemu.pid")"
}

# guest_lines: the guest's own lines on its console so far.
guest_lines ()
{
    tr -d '\r' < "$_guest_console" | grep -a '^GUEST' || :
}

# guest_wait_for LINE: wait until the guest prints LINE (a whole line).
# Fails if the guest ends or the time is up first.
guest_wait_for ()
{
    while ! tr -d '\r' < "$_guest_console" | grep -aqxF -- "$1"; do
        if ! kill -0 $_guest_job 2>/dev/null; then
            echo "$0: guest ended before printing: $1"
            _guest_dump
            return 1
        fi
        sleep 0.2
    done
}

# guest_answer NAME: let the guest go on after GUEST-WAIT NAME.  (qemu
# holds the FIFO open; should it have gone, opening it would block.)
guest_answer ()
{
    timeout 10 bash -c 'echo "go $1" > "$2"' bash "$1" "$tmp/ctl.in"
}

# guest_finish: wait until the guest powers off; print its lines; fail
# unless the scenario passed.
guest_finish ()
{
    local r=0
    wait $_guest_job || r=$?
    rm -f "$tmp/qemu.pid"
    guest_lines
    echo "guest phase $_guest_phase: $((SECONDS - _guest_start)) s, qemu status $r"
    if ! tr -d '\r' < "$_guest_console" | grep -aqx 'GUEST-RESULT: pass'; then
        echo "$0: guest phase $_guest_phase failed"
        _guest_dump
        return 1
    fi
    if [ $r -ne 0 ]; then
        echo "$0: qemu exited with status $r"
        return 1
    fi
}

# guest_check DESCRIPTION TEST...: run the test command; if it fails,
# say what was expected, show what the guest printed so far, and fail.
guest_check ()
{
    local what="$1"
    shift
    if ! "$@"; then
        echo "$0: FAIL: $what"
        guest_lines
        return 1
    fi
}

# guest_kill: stop the guest dead (SIGKILL to qemu): a power cut for the
# guest, whose writes the NBD server has or has not received.  qemu may
# have ended by itself already (a guest that lost its disk may panic,
# and -no-reboot makes that an exit): then there is nothing to kill.
guest_kill ()
{
    if kill -0 $_guest_job 2>/dev/null && [ -n "$_guest_pid" ]; then
        kill -9 "$_guest_pid" 2>/dev/null || :
    fi
    wait $_guest_job 2>/dev/null || :
    rm -f "$tmp/qemu.pid"
    guest_lines
    echo "guest phase $_guest_phase: killed after $((SECONDS - _guest_start)) s"
}

_guest_dump ()
{
    echo "--- console (last 60 lines) ---"
    tr -d '\r' < "$_guest_console" | tail -n 60
    echo "--- qemu ---"
    tail -n 20 "$tmp/qemu-$_guest_phase.log"
    echo "---"
}

# guest_fill_and_trim: the host's side of the scenario both guests run
# (tests/guest/lib.sh): after the guest's mkfs.ext4 and writes, the
# whole-disk discard reached the FTL; after it deleted a 16 MiB file
# (4096 pages) and ran fstrim, at least as many pages were trimmed and
# most of them unmapped (ext4 wrote a few new metadata pages meanwhile).
# Reads the statistics file $stats; leaves mapped1, trim1, mapped2 and
# trim2 set.
guest_fill_and_trim ()
{
    local i
    # The guest synced (a flush, after which the file is rewritten); let
    # the last periodic update land.
    guest_wait_for "GUEST-WAIT filled"
    sleep 2.5
    mapped1=$(jq -e .mapped_pages "$stats")
    trim1=$(jq -e .host.trim_pages "$stats")
    echo "after the writes: mapped_pages $mapped1, host.trim_pages $trim1"
    guest_check "mkfs.ext4's discard of the whole disk reached the FTL" \
        test "$trim1" -ge $((128 * 256 - 64))
    guest_answer filled

    guest_wait_for "GUEST-WAIT trimmed"
    for (( i = 0; i < 100; i++ )); do
        mapped2=$(jq -e .mapped_pages "$stats")
        trim2=$(jq -e .host.trim_pages "$stats")
        if [ "$trim2" -ge $((trim1 + 4096)) ] &&
           [ "$mapped2" -le $((mapped1 - 3840)) ]; then
            break
        fi
        sleep 0.2
    done
    echo "after fstrim: mapped_pages $mapped2, host.trim_pages $trim2"
    guest_check "fstrim's trims reached the FTL" \
        test "$trim2" -ge $((trim1 + 4096))
    guest_check "the deleted file's pages were unmapped" \
        test "$mapped2" -le $((mapped1 - 3840))
    guest_answer trimmed
}
