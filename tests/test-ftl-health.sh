#!/usr/bin/env bash
# nbdkit-ftl: the health log (stats health.*, ftlctl health), with
# NVMe's names and units: commands and data units (thousands of
# 512-byte units, rounded up) counted as the host sent them, kept in the
# image across restarts, and the same in the statistics file and in
# ftlctl health.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdsh jq timeout

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"

fields="critical_warning available_spare available_spare_threshold
        percentage_used data_units_read data_units_written
        host_read_commands host_write_commands power_cycles
        unsafe_shutdowns media_errors num_err_log_entries"

check ()
{
    if ! stats_wait "$2" "$1"; then
        echo "$0: FAIL: $1"
        cat "$2"
        exit 1
    fi
}

start_server "$sock" "$pid" file="$disk" size=64M stats="$stats"
for f in $fields; do
    check ".health.$f | type == \"number\"" "$stats"
done
check '.health.available_spare == 100 and .health.critical_warning == 0' \
      "$stats"
check '.health.available_spare_threshold == 10' "$stats"
check '.health.percentage_used == 0 and .health.power_cycles == 1' "$stats"

# 300 writes of 4 KiB and 7 of 1000 bytes, 2 zeroes, a trim (not a
# write command) and 50 reads of 64 KiB.
timeout 120 nbdsh -u "nbd+unix:///?socket=$sock" -c '
for n in range(300):
    h.pwrite(bytes([n % 251 + 1]) * 4096, n * 4096)
for n in range(7):
    h.pwrite(b"x" * 1000, 4096 * 400 + n * 1000)
h.zero(8192, 0)
h.zero(100, 4096 * 500)
h.trim(4096, 4096 * 600)
for n in range(50):
    h.pread(65536, n * 65536)
h.flush()
'
cat "$stats"
# 300 * 4096 + 7000 = 1235800 bytes = 2413.7 units -> 3 thousand;
# 50 * 65536 = 3276800 bytes = 6400 units -> 7 thousand.
check '.health.host_write_commands == 309' "$stats"
check '.health.host_read_commands == 50' "$stats"
check '.health.data_units_written == 3' "$stats"
check '.health.data_units_read == 7' "$stats"
check '.health.media_errors == 0 and .health.num_err_log_entries == 0' \
      "$stats"
stop_server "$pid"

# At rest, ftlctl health says the same as the statistics written at
# shutdown.
$FTLCTL health --json "$disk" > "$tmp/health.json"
cat "$tmp/health.json"
for f in $fields; do
    a="$(jq ".health.$f" "$tmp/health.json")"
    b="$(jq ".health.$f" "$stats")"
    [ "$a" = "$b" ] ||
        { echo "$0: FAIL: health.$f: ftlctl says $a, the statistics $b"; exit 1; }
done
$FTLCTL health "$disk" > "$tmp/health.txt"
cat "$tmp/health.txt"
grep -E '^host_write_commands +: 309$' "$tmp/health.txt"
grep -E '^data_units_read +: 7 \(3\.58 MB\)$' "$tmp/health.txt"
grep -E '^available_spare +: 100%$' "$tmp/health.txt"

# Kept across a restart; the restart is a power cycle.
start_server "$sock" "$pid" file="$disk" stats="$stats"
timeout 120 nbdsh -u "nbd+unix:///?socket=$sock" -c 'h.pread(512, 0)'
stop_server "$pid"
check '.health.power_cycles == 2 and .health.unsafe_shutdowns == 0' "$stats"
check '.health.host_write_commands == 309' "$stats"
check '.health.host_read_commands == 51' "$stats"
check '.health.data_units_read == 7' "$stats"
