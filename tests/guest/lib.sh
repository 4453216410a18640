# nbdkit-ftl: helpers for the guest side of the tests (busybox sh),
# installed as /lib/guest-lib.sh; scenarios source it.

# say TEXT...: a line for the host.
say () { echo "GUEST: $*"; }

# port NAME: the device of the virtio-serial port called NAME.  There is
# no udev here: the names are in sysfs.
port ()
{
    local p i=0
    while [ $i -lt 100 ]; do
        for p in /sys/class/virtio-ports/*; do
            if [ -r "$p/name" ] && [ "$(cat "$p/name")" = "$1" ]; then
                echo "/dev/${p##*/}"
                return 0
            fi
        done
        sleep 0.1
        i=$((i + 1))
    done
    echo "GUEST: no virtio port named $1" >&2
    return 1
}

# host_wait NAME: tell the host we reached NAME and wait until it
# answers on the port called "ctl".
host_wait ()
{
    local line
    echo "GUEST-WAIT $1"
    read -r line < "$(port ctl)"
    [ "$line" = "go $1" ] || { echo "GUEST: host answered '$line'"; return 1; }
}

# wait_for TEST...: wait up to 10 s until the test command succeeds.
wait_for ()
{
    local i=0
    while ! "$@"; do
        [ $i -lt 100 ] || { echo "GUEST: timed out waiting for: $*"; return 1; }
        sleep 0.1
        i=$((i + 1))
    done
}
