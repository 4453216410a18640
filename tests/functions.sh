# nbdkit-ftl: helpers for the shell tests.  Source it with:
#
#   source "${srcdir:-.}/functions.sh"
#
# The Makefile exports FTL_PLUGIN (the built plugin) and puts /usr/bin
# first in PATH (nbdsh needs the system python3).

set -e
set -u
set -o pipefail

: "${FTL_PLUGIN:=../plugin/.libs/nbdkit-ftl-plugin.so}"

# skip REASON...: end the test as skipped (exit status 77).  Its log
# gets the line "SKIP: REASON", which .ci/run prints.
skip ()
{
    echo "SKIP: $*"
    exit 77
}

# missing REASON...: a prerequisite that scripts/build installs (or that
# the build makes) is not there: skip the test, except under CI=true
# (.ci/run sets it), where the build script has run and so the test
# fails instead.
missing ()
{
    if [ "${CI:-}" = true ]; then
        echo "FAIL: $*; scripts/build provides it, and under CI=true" \
             "a test must not skip for want of it"
        exit 1
    fi
    skip "$@"
}

# requires CMD...: skip the test unless every command exists (see
# missing: every command the tests require is installed by
# scripts/build).
requires ()
{
    local cmd
    for cmd in "$@"; do
        if ! command -v "$cmd" >/dev/null 2>&1; then
            missing "$cmd not found"
        fi
    done
}

# requires_plugin: skip unless the plugin has been built.
requires_plugin ()
{
    requires nbdkit
    if [ ! -f "$FTL_PLUGIN" ]; then
        missing "plugin $FTL_PLUGIN not built"
    fi
}

# cleanup_fn CMD [ARGS...]: run the command when the test exits, however
# it exits.  Commands run in reverse order of registration.
_cleanup_cmds=()

cleanup_fn ()
{
    local cmd
    printf -v cmd '%q ' "$@"
    _cleanup_cmds+=("$cmd")
}

_run_cleanup ()
{
    local status=$? i
    set +e
    for (( i = ${#_cleanup_cmds[@]} - 1; i >= 0; i-- )); do
        eval "${_cleanup_cmds[i]}"
    done
    exit $status
}
trap _run_cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A build with --enable-sanitizers: nbdkit is not built with the
# sanitizer, so its runtime must be preloaded into nbdkit, which loads
# the plugin.  An nbdkit wrapper first in PATH does that, and keeps the
# runtime from the commands that nbdkit --run starts (python, qemu, dd
# are not built for it either, and some fail under it).
if [ -n "${FTL_SANITIZER_PRELOAD:-}" ]; then
    _shim="$(mktemp -d "${TMPDIR:-/tmp}/ftl-shim.XXXXXX")"
    cleanup_fn rm -rf "$_shim"
    # Sourced by both shims below, with $d their private directory and
    # $server the server's pid.  The server's errors go to the shim's
    # stderr and to $d/err; finish waits for that copy.  A server that
    # failed to start may hang in exit under the runtime (p11-kit's
    # destructor waits for the locale lock after an error that used
    # %m; nbdkit's own file plugin does the same): start_failed says so
    # once it has printed an error for 5 s (call it every 0.1 s), and
    # give_up kills it and fails.
    cat > "$_shim/common.sh" <<'COMMON'
exec 3> >(tee "$d/err" >&2)
tee_pid=$!
errored=0
finish () { exec 3>&-; wait "$tee_pid" 2>/dev/null; exit "$1"; }
start_failed ()
{
    grep -q '^nbdkit: error:' "$d/err" 2>/dev/null && errored=$((errored + 1))
    [ "$errored" -ge 50 ]
}
give_up ()
{
    kill -9 "$server" 2>/dev/null
    { wait "$server"; } 2>/dev/null
    finish 1
}
COMMON
    case "$FTL_SANITIZER_PRELOAD" in
        *tsan*)
            # ThreadSanitizer's runtime in nbdkit kills the child that
            # nbdkit --run forks (SIGSEGV before it can exec): run the
            # server in the background instead and the command here,
            # with the variables --run would set.  Its lock-order
            # checker tracks at most 64 locks held at once, and a trim
            # of the whole disk holds all 64 stripe locks plus others:
            # it is off (data races are still reported).
            export TSAN_OPTIONS="detect_deadlocks=0 ${TSAN_OPTIONS:-}"
            cat > "$_shim/nbdkit" <<'SHIM'
#!/usr/bin/env bash
args=() run= have_run=false sock=
while [ $# -gt 0 ]; do
    case "$1" in
        --run) run="${2-}"; have_run=true; shift; [ $# -gt 0 ] && shift ;;
        --run=*) run="${1#--run=}"; have_run=true; shift ;;
        -U) sock="${2-}"; shift; [ $# -gt 0 ] && shift ;;
        *) args+=("$1"); shift ;;
    esac
done
if ! $have_run; then
    [ -n "$sock" ] && args=(-U "$sock" "${args[@]}")
    LD_PRELOAD="$FTL_SANITIZER_PRELOAD" exec "$FTL_REAL_NBDKIT" "${args[@]}"
fi
d="$(mktemp -d "${TMPDIR:-/tmp}/ftl-run.XXXXXX")"
trap 'rm -rf "$d"' EXIT
[ -z "$sock" ] || [ "$sock" = - ] && sock="$d/sock"
. "$(dirname "$0")/common.sh"
LD_PRELOAD="$FTL_SANITIZER_PRELOAD" "$FTL_REAL_NBDKIT" -f -U "$sock" \
    -P "$d/pid" "${args[@]}" 2>&3 &
server=$!
# Started once it serves; failed after an error (above), or with no
# socket after 60 s.
started=false
for _ in $(seq 600); do
    [ -S "$sock" ] && [ -s "$d/pid" ] && { started=true; break; }
    kill -0 "$server" 2>/dev/null || { wait "$server"; finish $?; }
    start_failed && break
    sleep 0.1
done
$started || give_up
export uri="nbd+unix:///?socket=$sock" unixsocket="$sock"
export nbd="nbd:unix:$sock"
sh -c "$run"
r=$?
kill "$server" 2>/dev/null
wait "$server"
finish $r
SHIM
            export FTL_REAL_NBDKIT="$(command -v nbdkit)"
            ;;
        *)
            # Keep the runtime from the commands that nbdkit --run
            # starts (python, qemu, dd are not built for it either, and
            # some fail under it).
            #
            # Debian 12's nbdkit (1.32) leaks one allocation of its own
            # (280 bytes) at exit in some runs, which LeakSanitizer then
            # reports and turns into exit status 1.  It is suppressed
            # only where nbdkit itself called malloc: allocation stacks
            # of the server keep two frames (the allocator and its
            # caller), so a leak of the plugin, whose caller is in the
            # plugin or a library, is still reported.
            echo 'leak:/usr/bin/nbdkit' > "$_shim/lsan.supp"
            #
            # A server that printed an error before its --run command
            # started has failed (common.sh).
            cat > "$_shim/nbdkit" <<'SHIM'
#!/usr/bin/env bash
d="$(mktemp -d "${TMPDIR:-/tmp}/ftl-run.XXXXXX")"
trap 'rm -rf "$d"' EXIT
mark="unset LD_PRELOAD; : > $(printf %q "$d/started");"
args=() have_run=false
while [ $# -gt 0 ]; do
    case "$1" in
        --run) args+=("$1" "$mark ${2-}"); have_run=true; shift
               [ $# -gt 0 ] && shift ;;
        --run=*) args+=("--run=$mark ${1#--run=}"); have_run=true; shift ;;
        *) args+=("$1"); shift ;;
    esac
done
export ASAN_OPTIONS="malloc_context_size=2 ${ASAN_OPTIONS:-}"
export LSAN_OPTIONS="suppressions=$FTL_LSAN_SUPP ${LSAN_OPTIONS:-}"
if ! $have_run; then
    rm -rf "$d"
    LD_PRELOAD="$FTL_SANITIZER_PRELOAD" exec "$FTL_REAL_NBDKIT" "${args[@]}"
fi
. "$(dirname "$0")/common.sh"
# In the background bash gives the server /dev/null for its stdin: keep
# the one its --run command reads (nbdsh -c - < script).
LD_PRELOAD="$FTL_SANITIZER_PRELOAD" "$FTL_REAL_NBDKIT" "${args[@]}" 2>&3 <&0 &
server=$!
trap 'kill -TERM "$server" 2>/dev/null' TERM INT HUP
while kill -0 "$server" 2>/dev/null; do
    [ -e "$d/started" ] || ! start_failed || give_up
    sleep 0.1
done
wait "$server"
finish $?
SHIM
            export FTL_REAL_NBDKIT="$(command -v nbdkit)"
            export FTL_LSAN_SUPP="$_shim/lsan.supp"
            ;;
    esac
    chmod +x "$_shim/nbdkit"
    PATH="$_shim:$PATH"
fi

# umount_fs DIR: unmount DIR (lazily if it is busy).
umount_fs ()
{
    umount "$1" 2>/dev/null || umount -l "$1"
}

# mount_tmpfs DIR SIZE: mount a tmpfs of SIZE on DIR (created), unmounted
# at exit; the test is missing its prerequisite where that is not
# possible (not root), which fails it under CI=true (CI runs as root).
mount_tmpfs ()
{
    mkdir -p "$1"
    if ! mount -t tmpfs -o size="$2" tmpfs "$1" 2>"$1.mount.err"; then
        cat "$1.mount.err"
        missing "cannot mount a tmpfs (not root?)"
    fi
    rm -f "$1.mount.err"
    cleanup_fn umount_fs "$1"
}

# make_tmpdir: create a private directory in $tmp, removed at exit.
make_tmpdir ()
{
    tmp="$(mktemp -d "${TMPDIR:-/tmp}/ftl-test.XXXXXX")"
    cleanup_fn rm -rf "$tmp"
}

# start_server SOCKET PIDFILE ARGS...: run the plugin with nbdkit in the
# background and wait until it serves SOCKET.  stop_server (clean
# shutdown) or kill_server (kill -9) ends it; in any case it is killed
# when the test exits, and it cannot outlive 10 minutes.
start_server ()
{
    local sock="$1" pidfile="$2" i
    shift 2
    rm -f "$sock" "$pidfile"
    timeout -k 10 600 nbdkit -f -U "$sock" -P "$pidfile" "$FTL_PLUGIN" "$@" &
    _server_job=$!
    cleanup_fn _kill_pidfile "$pidfile"
    for (( i = 0; i < 300; i++ )); do
        if [ -s "$pidfile" ] && [ -S "$sock" ]; then
            return 0
        fi
        if ! kill -0 $_server_job 2>/dev/null; then
            echo "$0: nbdkit exited before serving $sock"
            return 1
        fi
        sleep 0.1
    done
    echo "$0: nbdkit did not start within 30 seconds"
    return 1
}

_kill_pidfile ()
{
    if [ -s "$1" ]; then
        kill -9 "$(cat "$1")" 2>/dev/null
        rm -f "$1"
    fi
}

# stop_server PIDFILE: clean shutdown (SIGTERM); wait until it is over.
# A server that takes more than 30 seconds to stop is killed, and the
# test fails.
stop_server ()
{
    local r=0 pid watchdog
    pid="$(cat "$1")"
    kill -TERM "$pid"
    (
        trap 'kill $sleeper 2>/dev/null; exit 0' TERM
        sleep 30 & sleeper=$!
        wait $sleeper
        kill -9 "$pid"
    ) 2>/dev/null &
    watchdog=$!
    { wait $_server_job; } 2>/dev/null || r=$?
    kill $watchdog 2>/dev/null || :
    wait $watchdog 2>/dev/null || :
    rm -f "$1"
    if [ $r -ne 0 ]; then
        echo "$0: nbdkit exited with status $r after SIGTERM"
    fi
    return $r
}

# server_stacks PIDFILE: print the stacks of the server's threads (for a
# test that found the server making no progress), if gdb is here.
server_stacks ()
{
    local pid
    pid="$(cat "$1" 2>/dev/null)" || return 0
    if ! command -v gdb >/dev/null; then
        echo "server_stacks: no gdb, no stacks of process $pid"
        return 0
    fi
    echo "stacks of the server's threads (process $pid):"
    timeout 60 gdb -nx -batch -p "$pid" -ex 'thread apply all bt 30' \
        2>&1 | grep -E '^(Thread|#)' | head -n 400 || :
}

# kill_server PIDFILE: kill the server (SIGKILL); wait until it is over.
# Not a power cut: what the server wrote to the image is in the page
# cache and stays there, synced or not, so no shell test can see a
# missing fdatasync (tests/unit/test-crash.c cuts the power).
kill_server ()
{
    kill -9 "$(cat "$1")"
    { wait $_server_job; } 2>/dev/null || :
    rm -f "$1"
}

# stats_wait FILE JQ-EXPR: true once the statistics file FILE shows
# JQ-EXPR, false if it does not within 10 s.  After a flush the server's
# statistics thread rewrites the file at once, but outside the flush:
# a test that reads it while the server runs waits for it.
stats_wait ()
{
    local i
    for (( i = 0; i < 100; i++ )); do
        jq -e "$2" "$1" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    return 1
}
