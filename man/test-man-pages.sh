#!/usr/bin/env bash
# nbdkit-ftl: the manual pages are well-formed POD, and every key the
# plugin's help lists (nbdkit PLUGIN --help, which --dump-plugin's
# users see too) is documented under PARAMETERS in
# nbdkit-ftl-plugin(1), as an item "=item B<KEY=>..." (or
# "=item [B<file=>]..." for the magic key).

set -eu
set -o pipefail

srcdir="${srcdir:-.}"
plugin="${FTL_PLUGIN:-../plugin/.libs/nbdkit-ftl-plugin.so}"
pages=(nbdkit-ftl-plugin.pod nbdkit-ftl-stats.pod ftlctl.pod)

# missing WHAT: skip (77), but fail under CI=true, where scripts/build
# has installed every prerequisite.
missing ()
{
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $*; scripts/build provides it"
        exit 1
    fi
    echo "SKIP: $*"
    exit 77
}

command -v podchecker >/dev/null || missing "podchecker not found"
command -v nbdkit >/dev/null || missing "nbdkit not found"
[ -f "$plugin" ] || missing "plugin $plugin not built"

status=0
for p in "${pages[@]}"; do
    # podchecker exits 1 on errors, 2 when the file has no POD.
    if ! podchecker "$srcdir/$p"; then
        echo "FAIL: $p: podchecker reports errors"
        status=1
    fi
done

# The keys, from the help text: lines "KEY=<...>  description".
help="$(LD_PRELOAD="${FTL_SANITIZER_PRELOAD:-}" ASAN_OPTIONS=detect_leaks=0 \
          nbdkit "$plugin" --help 2>&1)"
keys=($(sed -n 's/^\([a-z][a-z0-9-]*\)=.*/\1/p' <<< "$help"))
echo "${#keys[@]} keys in nbdkit ftl --help"
# A help text that lists none (or few) would make the check vacuous.
if [ "${#keys[@]}" -lt 50 ]; then
    echo "FAIL: expected at least 50 keys in the plugin's help:"
    echo "$help"
    exit 1
fi

pod="$srcdir/nbdkit-ftl-plugin.pod"
for k in "${keys[@]}"; do
    if ! grep -q -E "^=item \[?B<$k=" "$pod"; then
        echo "FAIL: key $k= is not documented in $pod (=item B<$k=>...)"
        status=1
    fi
done

exit $status
