#!/usr/bin/python3
# nbdkit-ftl: the torture bench's configurations, clients and checks
# (bench/torture.sh runs the servers and calls this).
#
#   torture.py config SEED           the round's configuration (below)
#   torture.py client SOCK CID NCLIENTS SIZE PAGE CYCLE SEED BASE LOG
#   torture.py fill SOCK SIZE PERCENT BASE
#   torture.py verify SOCK NCLIENTS SIZE PAGE BASE WCACHE LOG...
#   torture.py tally FILE            counts per key value of the rounds
#
# The same seed gives the same configuration and the same requests of
# each client (not the same interleaving of the clients, nor the same
# moment of the kill).
#
# The disk's sectors of 512 bytes each name themselves and a version:
# the pair (sector, version) repeated; version 0 is zeros.  Each client
# owns a contiguous share of the sectors (not page aligned, so that two
# clients share a page at each boundary) and logs, one line per event:
#   W FIRST COUNT VERSION   before a write, write zeroes or trim is sent
#                           (for a trim, the whole pages it unmaps)
#   A                       the last request sent was acknowledged
#   D FIRST COUNT VERSION   a FUA write was acknowledged (durable)
#   F                       a flush was acknowledged
#   R FIRST COUNT           a read matched what the client wrote last
#   C MESSAGE               the client could not connect (the server
#                           had stopped at a power cut)
#   E ERRNO MESSAGE         a request failed while the server was up, or
#                           a read did not match (the round fails)
# While the server runs, each client knows every sector of its share
# exactly (it is the only writer, one request at a time), so every read
# must return just that.  After the server was killed or lost its power
# a sector must read its last durable version (its base at the start
# of the cycle, then what a flush or FUA made durable) or a version
# written to it after that.  verify writes the versions read to BASE
# for the next cycle.

import errno
import json
import os
import random
import struct
import sys

SECT = 512

# What a request gets when the server is gone under it (killed, or
# stopping after a power cut, which fails requests with EIO first); a
# read whose reply the kill cut short has no errno ("server
# disconnected unexpectedly").
GONE = (None, 0, errno.ENOTCONN, errno.ECONNRESET, errno.EPIPE,
        errno.ESHUTDOWN, errno.ECONNABORTED)

KB = 1024
FILL_STEP = 2048                # sectors per write of the fill
MB = 1024 * KB


def size_str(n):
    if n % MB == 0:
        return "%dM" % (n // MB)
    return "%dK" % (n // KB)


def config(seed):
    """The configuration of round SEED, as a dict: 'keys' (the plugin's
    keys at every start), 'end' (kill or powercut), 'powercut' (the
    request the power goes at), 'cycles', 'delays' (seconds from the
    moment every client had a flush acknowledged to the kill, per
    cycle), and 'summary' (key=value words for the tally)."""
    rng = random.Random(seed)
    ps, ppb = 4096, 16
    block = ps * ppb
    keys = []
    summary = []

    def key(k, v, tally=None):
        keys.append("%s=%s" % (k, v))
        summary.append("%s=%s" % (k, tally if tally is not None else v))

    streams = rng.choice([None, 1, 2, 3, 4])
    smin = (streams or 1) + 9          # FTL_MIN_SPARE_BLOCKS
    op = rng.randint(7, 40)
    sizes = []
    for mb in (4, 8, 16, 32, 64):
        lpages = mb * MB // ps
        blocks = int(lpages * (1 + op / 100.0) / ppb + 0.999999)
        spare = blocks - lpages // ppb
        if spare >= smin + 2:
            sizes.append((mb, spare))
    mb, spare = rng.choice(sizes)
    extra = spare - smin                 # beyond what the FTL needs
    key("size", "%dM" % mb)
    key("pages-per-block", ppb)
    key("op", op)
    if streams:
        key("streams", streams)
    else:
        summary.append("streams=default")
    key("wl-threshold", rng.randint(2, 16))
    key("gc", rng.choice(["cost-benefit", "greedy"]))
    key("gc-mode", rng.choice(["watermark", "deadline"]))
    key("hot-cold", rng.choice(["auto", "true", "false"]))
    if rng.random() < 0.5:
        key("sync", "false")
    else:
        summary.append("sync=true")
    timing = rng.random() < 0.25
    if timing:
        key("model", rng.choice(["sata-tlc", "nvme-tlc", "sata-qlc",
                                 "enterprise-tlc"]))
    else:
        summary.append("model=none")
    # The write cache: one spare block per ppb pages it holds and one
    # more; keep it within a third of the spare beyond the minimum.
    budget = extra // 3
    c = rng.choice(["default", "0", "small", "large"])
    cache_blocks = 1
    if c == "0":
        key("write-cache", 0)
        cache_blocks = 0
    elif c != "default" and budget >= 2:
        most = (budget - 1) * ppb * ps
        n = ps * rng.randint(1, 8) if c == "small" else \
            min(most, ps * ppb * rng.randint(1, 16))
        n = min(n, most)
        key("write-cache", size_str(n), c)
        cache_blocks = (n // block) + 1
    else:
        summary.append("write-cache=default")
    if c != "0":
        key("write-cache-bypass",
            rng.choice(["0", "4K", "16K", "64K", "128K"]))
    if rng.random() < 0.3:
        key("map-cache", "4K")
    else:
        summary.append("map-cache=whole")
    if rng.random() < 0.3:
        key("errors", "true")
        key("time-scale", rng.choice([3600, 86400, 864000]))
        key("reclaim-reads", rng.choice([200, 2000, 100000]))
        key("scrub-interval", rng.choice(["100ms", "1s"]))
    else:
        summary.append("errors=false")
    slc = rng.random() < 0.3
    if slc:
        left = extra - cache_blocks
        cb = rng.choice([2, 3, 4])
        key("cell-bits", cb)
        nblk = max(0, min(left // 2 - 1, rng.randint(1, 6)))
        key("slc-static", size_str(nblk * (ppb // cb) * ps) if nblk else 0,
            "%dblk" % nblk)
        key("slc-dynamic", rng.choice(["false", "auto", "256K", "1M"]))
        key("slc-fold-idle", rng.choice(["50ms", "200ms", "never"]))
    elif not timing:
        summary.append("slc=none")
    fill = rng.choice([0, 50, 90, 100])
    summary.append("fill=%d%%" % fill)
    fill_reqs = -(-(mb * MB * fill // 100 // SECT) // FILL_STEP)
    end = rng.choice(["kill", "powercut"])
    summary.append("end=%s" % end)
    cycles = rng.randint(1, 3)
    summary.append("cycles=%d" % cycles)
    return {
        "seed": seed,
        "keys": keys,
        "size": mb * MB,
        "page": ps,
        "end": end,
        # Write requests since the server started: the fill's first.
        "powercut": [rng.randint(30, 3000) + (fill_reqs if i == 0 else 0)
                     for i in range(cycles)],
        "cycles": cycles,
        "fill": fill,
        "delays": ["%.3f" % (rng.random() * 3) for _ in range(cycles)],
        "wcache": 0 if c == "0" else 1,
        "summary": summary,
    }


def sector(s, v):
    return struct.pack("<QQ", s, v) * (SECT // 16)


def region(cid, n, nsect):
    per = nsect // n
    return cid * per, (cid + 1) * per


def read_base(name, nsect):
    if os.path.exists(name):
        return [int(x) for x in open(name).read().split()]
    return [0] * nsect


def decode(data, first, count):
    """The versions of COUNT sectors read from FIRST; -1 for a sector
    that holds another sector's data or garbage."""
    got = []
    for i in range(count):
        s = first + i
        d = data[i * SECT:(i + 1) * SECT]
        if d == bytes(SECT):
            got.append(0)
            continue
        s2, v = struct.unpack_from("<QQ", d)
        got.append(v if s2 == s and d == sector(s, v) else -1)
    return got


def client(sock, cid, n, size, page, cycle, seed, base_name, logname):
    import nbd
    nsect = size // SECT
    spp = page // SECT                 # sectors per page
    rng = random.Random(seed * 1000 + cycle * 10 + cid)
    lo, hi = region(cid, n, nsect)
    cur = read_base(base_name, nsect)
    log = open(logname, "w")
    h = nbd.NBD()
    try:
        h.connect_unix(sock)
    except nbd.Error as e:
        # A power cut early in the cycle stopped the server before this
        # client could connect: it sent nothing.
        if e.errnum in GONE + (errno.ECONNREFUSED, errno.ENOENT):
            log.write("C %s\n" % e.string)
            log.close()
            return
        raise
    fua = h.can_fua()
    trim = h.can_trim()
    version = (cycle + 1) * 100000000 + cid * 10000000

    def note(line):
        log.write(line + "\n")
        log.flush()

    try:
        while True:
            k = rng.randrange(100)
            if k < 6:
                h.flush()
                note("F")
                continue
            count = rng.randrange(1, 17)
            if rng.randrange(8) == 0:
                count = rng.randrange(1, 129)
            count = min(count, hi - lo - 1)
            first = rng.randrange(lo, hi - count)
            if k < 20:
                # Reads that verify.
                data = h.pread(count * SECT, first * SECT)
                got = decode(data, first, count)
                for i, v in enumerate(got):
                    if v != cur[first + i]:
                        note("E read sector %d: version %d, expected %d "
                             "(read of %d sectors from %d)" %
                             (first + i, v, cur[first + i], count, first))
                        return
                note("R %d %d" % (first, count))
                continue
            if k < 27:
                note("W %d %d 0" % (first, count))
                h.zero(count * SECT, first * SECT)
                note("A")
                for s in range(first, first + count):
                    cur[s] = 0
                continue
            if k < 32 and trim:
                # A trim unmaps the whole pages in its range; the
                # partial pages at its ends keep their data.
                a = (first + spp - 1) // spp * spp
                b = (first + count) // spp * spp
                if b > a:
                    note("W %d %d 0" % (a, b - a))
                h.trim(count * SECT, first * SECT)
                note("A")
                for s in range(a, b):
                    cur[s] = 0
                continue
            if k >= 96:
                # Whole pages, 16 to 256 KiB: past the write cache when
                # write-cache-bypass allows.
                np_ = rng.choice([4, 8, 16, 32, 64])
                count = min(np_ * spp, (hi - lo) // spp * spp - spp)
                first = spp * rng.randrange((lo + spp - 1) // spp,
                                            (hi - count) // spp)
            version += 1
            flags = nbd.CMD_FLAG_FUA if fua and rng.randrange(7) == 0 else 0
            buf = b"".join(sector(first + i, version) for i in range(count))
            note("W %d %d %d" % (first, count, version))
            h.pwrite(buf, first * SECT, flags)
            note("A")
            if flags:
                note("D %d %d %d" % (first, count, version))
            for s in range(first, first + count):
                cur[s] = version
    except nbd.Error as e:
        if e.errnum not in GONE and e.errnum != errno.EIO:
            note("E %s %s" % (e.errno, e.string))
        elif e.errnum == errno.EIO:
            # A power cut fails requests with EIO, then the server
            # stops; so may a media error with errors=true: verify
            # tells them apart by whether the server stopped.
            note("X %s %s" % (e.errno, e.string))
    finally:
        log.close()


def fill(sock, size, percent, base_name):
    """Write version 1 to the first PERCENT of the disk's sectors, in
    whole MiB, and flush: the base of the first cycle."""
    import nbd
    nsect = size // SECT
    h = nbd.NBD()
    h.connect_unix(sock)
    n = size * percent // 100 // SECT
    step = FILL_STEP
    for first in range(0, n, step):
        c = min(step, n - first)
        h.pwrite(b"".join(sector(first + i, 1) for i in range(c)),
                 first * SECT)
    h.flush()
    h.shutdown()
    open(base_name, "w").write(" ".join("1" if s < n else "0"
                                        for s in range(nsect)))


def verify(sock, n, size, page, base_name, wcache, logs):
    import nbd
    nsect = size // SECT
    base = read_base(base_name, nsect)
    durable = list(base)
    later = [set() for _ in range(nsect)]
    last = list(base)
    acked_last = list(base)
    pending = None
    failed = []
    for cid, name in enumerate(logs):
        lo, hi = region(cid, n, nsect)
        for line in open(name):
            f = line.split()
            if f[0] == "E":
                failed.append("client %d: %s" % (cid, line[2:].strip()))
                continue
            if f[0] in ("R", "X", "C"):
                continue
            if f[0] == "A":
                if pending:
                    pf, pc, pv = pending
                    for s in range(pf, pf + pc):
                        acked_last[s] = pv
                    pending = None
                continue
            if f[0] == "F":
                for s in range(lo, hi):
                    if later[s]:
                        durable[s] = last[s]
                        later[s] = set()
                continue
            first, count, v = int(f[1]), int(f[2]), int(f[3])
            if f[0] == "W":
                pending = (first, count, v)
            for s in range(first, first + count):
                if f[0] == "W":
                    later[s].add(v)
                    last[s] = v
                else:
                    durable[s] = v
                    later[s] = set()
        pending = None
    for m in failed:
        print("verify: %s" % m)
    h = nbd.NBD()
    h.connect_unix(sock)
    got = []
    step = 1024 * 1024
    for off in range(0, size, step):
        ln = min(step, size - off)
        got += decode(h.pread(ln, off), off // SECT, ln // SECT)
    h.shutdown()
    bad = 0
    lost = 0
    kept = 0
    for s in range(nsect):
        v = got[s]
        if v == -1:
            if bad < 20:
                print("verify: sector %d holds another sector's data or "
                      "garbage" % s)
            bad += 1
            continue
        if v != durable[s] and v not in later[s]:
            if bad < 20:
                print("verify: sector %d reads version %d; durable %d, "
                      "written since %s" %
                      (s, v, durable[s], sorted(later[s])[:6]))
            bad += 1
        if later[s] and v == durable[s]:
            kept += 1
            if acked_last[s] != durable[s] and acked_last[s] != 0:
                lost += 1
    open(base_name, "w").write(" ".join(str(max(v, 0)) for v in got))
    print("verify: %d sectors checked, %d wrong; %d read their durable "
          "version over a later one, %d of them lost an acknowledged "
          "write" % (nsect, bad, kept, lost))
    if lost and not wcache:
        print("verify: write-cache=0, yet %d sectors lost acknowledged "
              "writes" % lost)
        bad += 1
    return 1 if bad or failed else 0


def tally(name):
    counts = {}
    rounds = 0
    for line in open(name):
        words = line.split()
        if not words:
            continue
        rounds += 1
        for w in words:
            k, _, v = w.partition("=")
            counts.setdefault(k, {}).setdefault(v, 0)
            counts[k][v] += 1
    print("configurations of %d rounds (rounds per key value):" % rounds)
    for k in sorted(counts):
        vals = sorted(counts[k].items(),
                      key=lambda kv: (not kv[0][:1].isdigit(),
                                      int(''.join(ch for ch in kv[0]
                                                  if ch.isdigit()) or 0),
                                      kv[0]))
        print("  %s: %s" % (k, ", ".join("%s %d" % kv for kv in vals)))


def main():
    mode = sys.argv[1]
    a = sys.argv[2:]
    if mode == "config":
        print(json.dumps(config(int(a[0]))))
    elif mode == "client":
        client(a[0], int(a[1]), int(a[2]), int(a[3]), int(a[4]),
               int(a[5]), int(a[6]), a[7], a[8])
    elif mode == "fill":
        fill(a[0], int(a[1]), int(a[2]), a[3])
    elif mode == "verify":
        sys.exit(verify(a[0], int(a[1]), int(a[2]), int(a[3]), a[4],
                        int(a[5]), a[6:]))
    elif mode == "tally":
        tally(a[0])
    else:
        sys.exit("torture.py: unknown mode %s" % mode)


if __name__ == "__main__":
    main()
