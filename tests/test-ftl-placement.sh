#!/usr/bin/env bash
# nbdkit-ftl: placement= and the statistics of each namespace.  An
# image of two namespaces is made with placement=isolated; nbdinfo
# --list says the placement; nbdsh writes to both; the statistics file
# has the placement, each namespace's counters under "namespaces" and
# the device's NVMe FDP totals under "fdp"; the Prometheus file has a
# sample per namespace with a namespace label.  A restart with another
# placement, a placement without namespaces and an unknown one are
# refused with their one-line reasons.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdinfo nbdsh jq timeout

make_tmpdir
disk="$tmp/disk.img"
sock="$tmp/sock"
pid="$tmp/pid"
stats="$tmp/stats.json"
prom="$tmp/metrics.prom"

# Refused before anything is made.
refuse ()
{
    local want="$1"
    shift
    if nbdkit -U "$tmp/bad.sock" "$FTL_PLUGIN" "$@" --run true \
              2>"$tmp/err"; then
        echo "$0: FAIL: $* accepted"; exit 1
    fi
    grep -F -q -- "$want" "$tmp/err" ||
        { echo "$0: FAIL: '$want' not in:"; cat "$tmp/err"; exit 1; }
}
refuse 'placement must be shared, isolated or initially-isolated: apart' \
    file="$disk" size=8M placement=apart
refuse 'placement=isolated needs namespaces=' \
    file="$disk" size=8M placement=isolated
rm -f "$disk"

nbdkit -U - "$FTL_PLUGIN" file="$disk" namespaces=a:4M,b:4M \
    placement=isolated pages-per-block=16 op=60 \
    --run 'nbdinfo --list --json "$uri"' > "$tmp/list.json"
jq -r '.exports[].description' "$tmp/list.json" | tee "$tmp/list"
test "$(cat "$tmp/list")" = "namespace 'a': 4 MiB (4194304 bytes), placement isolated
namespace 'b': 4 MiB (4194304 bytes), placement isolated"

start_server "$sock" "$pid" file="$disk" stats="$stats" metrics="$prom"
timeout 60 nbdsh -u "nbd+unix:///a?socket=$sock" \
    -c 'h.pwrite(b"\x11" * (1024 * 1024), 0); h.flush()'
timeout 60 nbdsh -u "nbd+unix:///b?socket=$sock" \
    -c 'h.pwrite(b"\x22" * 65536, 4096); h.pread(8192, 0)
h.trim(4096, 1024 * 1024); h.flush()'
stats_wait "$stats" '.host.flushes >= 2' ||
    { echo "$0: FAIL: the flushes are not in $stats"; exit 1; }
jq '{placement, namespaces, fdp}' "$stats"
jq -e '.placement == "isolated"
       and ([.namespaces[].name] == ["a", "b"])
       and .namespaces[0].bytes == 4194304
       and .namespaces[0].host_write_bytes == 1048576
       and .namespaces[0].host_write_commands >= 1
       and .namespaces[0].host_read_bytes == 0
       and .namespaces[1].host_write_bytes == 65536
       and .namespaces[1].host_read_bytes == 8192
       and .namespaces[1].host_trim_bytes == 4096
       and .fdp.host_bytes_with_metadata_written == 1048576 + 65536
       and (.fdp | has("media_bytes_written") and has("media_bytes_erased")
            and has("waf"))' "$stats" >/dev/null ||
    { echo "$0: FAIL: the statistics are not as written"; exit 1; }
stop_server "$pid"
# At shutdown everything is destaged: each namespace's pages are
# programmed, once each (nothing was overwritten).
jq -e '.namespaces[0].media_write_bytes == 1048576
       and .namespaces[0].mapped_pages == 256
       and .namespaces[0].waf == 1
       and .namespaces[1].media_write_bytes == 65536' "$stats" >/dev/null ||
    { echo "$0: FAIL: media bytes"; jq .namespaces "$stats"; exit 1; }
grep -E '^nbdkit_ftl_(namespace|fdp)_' "$prom" | sort | head -n 40
grep -q '^# TYPE nbdkit_ftl_namespace_host_write_bytes_total counter$' "$prom"
grep -q '^nbdkit_ftl_namespace_host_write_bytes_total{namespace="a"} 1048576$' "$prom"
grep -q '^nbdkit_ftl_namespace_host_write_bytes_total{namespace="b"} 65536$' "$prom"
grep -q '^nbdkit_ftl_namespace_write_amplification_ratio{namespace="a"} 1$' "$prom"
grep -q '^nbdkit_ftl_fdp_host_bytes_with_metadata_written_total 1114112$' "$prom"
grep -q '^nbdkit_ftl_fdp_media_bytes_erased_total ' "$prom"
# One HELP per family, not one per namespace.
[ "$(grep -c '^# HELP nbdkit_ftl_namespace_host_write_bytes_total ' "$prom")" -eq 1 ]

# Placement is the image's: another is refused, the same or none is not.
refuse "placement=shared differs from the image's placement=isolated" \
    file="$disk" placement=shared
nbdkit -U - "$FTL_PLUGIN" file="$disk" placement=isolated --run \
    'nbdsh -u "nbd+unix:///b?socket=$unixsocket" -c "assert h.pread(4096, 4096) == b\"\\x22\" * 4096"'
