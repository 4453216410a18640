#!/usr/bin/env bash
# nbdkit-ftl: what the plugin advertises, as nbdinfo sees it.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdinfo jq timeout

make_tmpdir

# A new 64 MiB disk: non-rotational, every capability on.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" size=64M \
    --run 'nbdinfo --json "$uri"' > "$tmp/info.json"
cat "$tmp/info.json"

jq -e '.exports[0]."export-size" == 67108864' "$tmp/info.json"
jq -e '.exports[0].is_rotational == false' "$tmp/info.json"
jq -e '.exports[0].is_read_only == false' "$tmp/info.json"
for cap in can_flush can_fua can_trim can_zero can_fast_zero can_multi_conn; do
    jq -e ".exports[0].$cap == true" "$tmp/info.json"
done
# Extents: the server offers the base:allocation context.
jq -e '.exports[0].contexts | index("base:allocation") != null' "$tmp/info.json"
# Block sizes: any alignment, whole pages preferred.
jq -e '.exports[0].block_size_minimum == 1' "$tmp/info.json"
jq -e '.exports[0].block_size_preferred == 4096' "$tmp/info.json"

# The same image again, size= now optional, page size from the image.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" \
    --run 'nbdinfo --size "$uri"' > "$tmp/size"
test "$(cat "$tmp/size")" = 67108864

# rotational=true only changes what clients are told.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" rotational=true \
    --run 'nbdinfo --is rotational "$uri"'
# nbdinfo --is exits 0 for true, 2 for false, anything else on error.
r=0
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/disk.img" \
    --run 'nbdinfo --is rotational "$uri"' || r=$?
if [ $r -ne 2 ]; then
    echo "$0: FAIL: nbdinfo --is rotational exited $r, not 2 (false)"
    exit 1
fi

# A different page size shows up as the preferred block size.
timeout 60 nbdkit -U - "$FTL_PLUGIN" file="$tmp/small.img" size=16M \
    page-size=512 pages-per-block=64 \
    --run 'nbdinfo --json "$uri"' > "$tmp/info512.json"
jq -e '.exports[0].block_size_preferred == 512' "$tmp/info512.json"
jq -e '.exports[0]."export-size" == 16777216' "$tmp/info512.json"

# The library's and the plugin's threads carry their names (top -H, perf).
# nbdkit may start the --run command before it has written its pid file,
# and a thread gets its name from the thread that created it, just after
# it started: the command waits for the pid file, then until every name
# is there (at most 10 s each), and lists the names.
names="ftl-background ftl-destager ftl-watchdog ftl-stats ftl-slow-log"
timeout 60 nbdkit -U - -P "$tmp/pid" "$FTL_PLUGIN" file="$tmp/disk.img" \
    stats="$tmp/stats.json" slow-log="$tmp/slow.log" \
    --run "for i in \$(seq 100); do [ -s '$tmp/pid' ] && break; sleep 0.1; done
           end=\$((\$(date +%s) + 10))
           while [ \$(date +%s) -lt \$end ]; do
               all=yes
               for n in $names; do
                   grep -qsx \"\$n\" /proc/\$(cat '$tmp/pid')/task/*/comm || all=no
               done
               [ \$all = yes ] && break
               sleep 0.1
           done
           cat /proc/\$(cat '$tmp/pid')/task/*/comm" > "$tmp/threads"
sort "$tmp/threads" | uniq -c
for name in $names; do
    if ! grep -qx "$name" "$tmp/threads"; then
        echo "$0: FAIL: no thread named $name"
        exit 1
    fi
done
