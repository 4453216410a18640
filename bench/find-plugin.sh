# nbdkit-ftl: sourced by the benchmark scripts.  find_plugin sets
# plugin (absolute) and builddir from --plugin's value (plugin, if set)
# or the build tree: $FTL_PLUGIN, then ../plugin/.libs from the script
# (here), then from the current directory when it is the build
# directory of bench/.  The caller defines die.

find_plugin ()
{
    local cand

    if [ -z "$plugin" ]; then
        for cand in "${FTL_PLUGIN:-}" \
                    "$here/../plugin/.libs/nbdkit-ftl-plugin.so" \
                    "$PWD/../plugin/.libs/nbdkit-ftl-plugin.so"; do
            if [ -n "$cand" ] && [ -f "$cand" ]; then
                plugin="$cand"
                break
            fi
        done
        [ -n "$plugin" ] ||
            die "plugin not built: run make first, or give --plugin"
    fi
    [ -f "$plugin" ] || die "--plugin $plugin: no such file"
    plugin="$(cd "$(dirname "$plugin")" && pwd)/$(basename "$plugin")"
    builddir="$(cd "$(dirname "$plugin")/../.." && pwd)"
}
