#!/usr/bin/env bash
# nbdkit-ftl: the "nbdkit ... --run" examples of the man page, run as
# they stand.  They are taken from the POD source, so the page and the
# test cannot drift apart.

source "${srcdir:-.}/functions.sh"
requires_plugin
requires nbdinfo nbdsh nbdcopy qemu-img qemu-io fio cmp timeout
pod="${srcdir:-.}/../man/nbdkit-ftl-plugin.pod"
test -f "$pod"

make_tmpdir

# The examples name the plugin "ftl", as an installed plugin is named.
# An nbdkit first in PATH puts the built plugin in its place.
real_nbdkit="$(command -v nbdkit)"
mkdir "$tmp/bin"
cat > "$tmp/bin/nbdkit" <<EOF_WRAP
#!/usr/bin/env bash
args=()
done=
for a in "\$@"; do
    if [ -z "\$done" ] && [ "\$a" = ftl ]; then
        args+=("$FTL_PLUGIN")
        done=1
    else
        args+=("\$a")
    fi
done
exec "$real_nbdkit" "\${args[@]}"
EOF_WRAP
chmod +x "$tmp/bin/nbdkit"

# Each example is a verbatim paragraph (lines indented by a space) of
# the EXAMPLES section whose first line starts "nbdkit" and which has
# --run; it is written without the indent to $tmp/example-N.sh.
perl -e '
    my ($pod, $dir) = @ARGV;
    open my $fh, "<", $pod or die "$pod: $!";
    local $/ = "";                 # paragraph mode
    my ($in, $n) = (0, 0);
    while (my $para = <$fh>) {
        if ($para =~ /^=head1 /) { $in = $para =~ /^=head1 EXAMPLES\b/; next; }
        next unless $in && $para =~ /^ nbdkit / && $para =~ /--run/;
        $para =~ s/^ //mg;
        $n++;
        open my $out, ">", "$dir/example-$n.sh" or die;
        print $out $para;
        close $out;
    }
    print "$n\n";
' "$pod" "$tmp" > "$tmp/count"
n=$(cat "$tmp/count")
cmds=$(cat "$tmp"/example-*.sh | grep -c '^nbdkit ')
echo "$n examples, $cmds nbdkit commands, in $pod"
# nbdinfo (2 examples), nbdsh, nbdcopy (2 commands), qemu-img (4
# commands), qemu-io, fio.
test "$n" -ge 7
test "$cmds" -ge 11

# The raw disk image the examples copy: data, zeros, data.
mkdir "$tmp/work"
cd "$tmp/work"
head -c 3M /dev/urandom > guest.raw
head -c 2M /dev/zero >> guest.raw
head -c 3M /dev/urandom >> guest.raw

for (( i = 1; i <= n; i++ )); do
    echo "--- example $i:"
    cat "$tmp/example-$i.sh"
    echo "---"
    PATH="$tmp/bin:$PATH" timeout 300 bash -e "$tmp/example-$i.sh" \
        > "$tmp/out-$i" 2>&1 || { cat "$tmp/out-$i"; exit 1; }
    head -n 20 "$tmp/out-$i"
done

# What the examples left: the copies hold the image, then zeros.
cmp -n 8M guest.raw copy.raw
cmp -i 8M:0 -n 16M copy.raw /dev/zero
test "$(stat -c %s copy.raw)" -eq $((1024 * 1024 * 1024))
