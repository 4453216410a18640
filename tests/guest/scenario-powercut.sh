# nbdkit-ftl: guest side of test-ftl-guest-powercut.sh (busybox sh, run
# by tests/guest/init with "sh -e").
#
# The export is the virtio disk /dev/vda (qemu's nbd driver on the Unix
# socket; the guest's fsyncs reach the server as flushes).
#
#   work   ext4 on vda; a 1 MiB file written and synced, its checksum
#          beside it; then an SQLite database in rollback-journal mode
#          with synchronous=EXTRA, and a stream of transactions, each
#          moving 7 units between two of ten accounts (the sum stays
#          10000) and adding row N to a log table, reported as
#          "GUEST: committed N" once COMMIT has returned.  The host cuts
#          the power (kills the server and qemu) in the middle of the
#          stream.
#   check  mount (the ext4 journal is replayed), the synced file is
#          intact, PRAGMA integrity_check says ok, the accounts still
#          sum to 10000, the log has rows 1..N with no gap; then
#          e2fsck -f -n is clean.
. /lib/guest-lib.sh

db=/mnt/bank.db

case "$1" in
work)
    wait_for test -b /dev/vda
    /usr/sbin/mkfs.ext4 -q -F -b 4096 /dev/vda
    mount -t ext4 /dev/vda /mnt
    dd if=/dev/urandom of=/mnt/durable bs=64k count=16 2>/dev/null
    sync
    (cd /mnt && sha256sum durable > durable.sum)
    sync
    say "durable file synced: $(cut -c1-16 /mnt/durable.sum)"
    sqlite3 "$db" <<'EOF_SQL'
PRAGMA journal_mode=DELETE;
PRAGMA synchronous=EXTRA;
CREATE TABLE acct (id INTEGER PRIMARY KEY, bal INTEGER NOT NULL);
CREATE TABLE log (n INTEGER PRIMARY KEY, pad BLOB NOT NULL);
WITH RECURSIVE k(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM k WHERE i < 9)
INSERT INTO acct SELECT i, 1000 FROM k;
EOF_SQL
    sync
    say "database created"
    echo "GUEST-STREAM"
    # One sqlite3 process for the whole stream: each COMMIT returns
    # before the line that reports it is printed.
    n=1
    while [ $n -le 100000 ]; do
        echo "BEGIN;"
        echo "UPDATE acct SET bal = bal - 7 WHERE id = $((n % 10));"
        echo "UPDATE acct SET bal = bal + 7 WHERE id = $(((n + 3) % 10));"
        echo "INSERT INTO log VALUES ($n, randomblob(3000));"
        echo "COMMIT;"
        echo ".print GUEST: committed $n"
        n=$((n + 1))
    done | sqlite3 -bail -cmd 'PRAGMA synchronous=EXTRA;' "$db"
    say "the stream ended without a power cut"
    exit 1
    ;;
check)
    wait_for test -b /dev/vda
    mount -t ext4 /dev/vda /mnt
    (cd /mnt && sha256sum -c durable.sum > /tmp/sum.out)
    say "durable file: $(cat /tmp/sum.out)"
    ic=$(sqlite3 "$db" 'PRAGMA integrity_check;')
    sum=$(sqlite3 "$db" 'SELECT sum(bal) FROM acct;')
    rows=$(sqlite3 "$db" 'SELECT count(*) FROM log;')
    last=$(sqlite3 "$db" 'SELECT coalesce(max(n), 0) FROM log;')
    mode=$(sqlite3 "$db" 'PRAGMA journal_mode;')
    say "integrity_check $ic; accounts sum to $sum; log rows $rows, last $last; journal mode $mode"
    echo "GUEST-LAST $last"
    [ "$ic" = ok ]
    [ "$sum" = 10000 ]
    [ "$rows" = "$last" ]
    umount /mnt
    fsck_clean /dev/vda
    ;;
*)
    say "unknown phase '$1'"
    exit 1
    ;;
esac
