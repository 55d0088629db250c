#!/usr/bin/env python3
"""`make bench`, scale: K namespaced hosts on one bridge (bench/hosts.py), one
rank each, running tests/mpi/scale.c: the time from MPI_Init to the end of
the first 8-byte alltoall (startup: every rank meets every other), then
alltoall of each --sizes, the mean time of one over --iters (the slowest
rank's), every byte checked.

Peers, all through Debian's Open MPI 4.1 (bench/incast.py's command lines):
  fmx        pml cm, mtl ofi, fmx's provider
  TCP BTL    pml ob1, btl tcp,self
  ofi tcp    pml cm, mtl ofi, libfabric's own tcp provider (tcp;ofi_rxm)
Reps interleave the peers; the table gives the median (range) and fmx's
time over the TCP BTL's, paired per rep (below 1: fmx faster).

  python3 bench/scale.py [--build DIR] [--hosts 16,32] [--reps 2] [--peers fmx,tcp,ofitcp]
                         [--sizes 4096,65536] [--iters 20] [--quick]
Exit status: 0; 1 when a run failed; 2 usage.
"""
import argparse
import json
import os
import signal
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import incast  # noqa: E402
from hosts import Hosts  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("FMX_NET_DISCOVER_MS", "0")
LABEL = dict(incast.PEERS)
TIMEOUT = 600


def log(msg):
    print("[scale] " + msg, file=sys.stderr, flush=True)


def run(build, how, hosts, work, argv):
    """rank 0's JSON line, or None (the failure logged)."""
    cmd, env = incast.mpirun(build, how, hosts, work, argv)
    t = time.monotonic()
    try:
        p = subprocess.run(cmd, env=dict(os.environ, **env), capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        log("%s: no end after %d s" % (how, TIMEOUT))
        return None
    line = next((x for x in p.stdout.splitlines() if x.startswith("{")), None)
    if p.returncode or not line:
        log("%s: exit %d: %s" % (how, p.returncode, (p.stderr or p.stdout)[-1500:]))
        return None
    r = json.loads(line)
    r["wall_s"] = round(time.monotonic() - t, 2)
    return r


def table(runs, ks, peers, sizes):
    cols = ["startup (s)"] + ["alltoall %s B (us)" % s for s in sizes]
    out = ["| hosts | peer | " + " | ".join(cols) + " |", "|---:|---|" + "---:|" * len(cols)]
    for k in ks:
        for how in peers:
            rs = [r for r in runs if r["k"] == k and r["peer"] == how and r["res"]]
            if not rs:
                continue
            vals = [incast.med([r["res"]["startup_s"] for r in rs])]
            vals += [incast.med([r["res"]["alltoall_us"][s] for r in rs], "%.0f") for s in sizes]
            out.append("| %d | %s | %s |" % (k, LABEL[how], " | ".join(vals)))
    if "fmx" in peers and "tcp" in peers:
        out += ["", "fmx over the TCP BTL, paired per rep (below 1: fmx faster)", "",
                "| hosts | " + " | ".join(cols) + " |", "|---:|" + "---:|" * len(cols)]
        for k in ks:
            pairs = [(a["res"], b["res"]) for a in runs for b in runs if a["k"] == b["k"] == k and
                     a["rep"] == b["rep"] and a["peer"] == "fmx" and b["peer"] == "tcp" and a["res"] and b["res"]]
            if pairs:
                vals = [incast.med([a["startup_s"] / b["startup_s"] for a, b in pairs], "%.2f")]
                vals += [incast.med([a["alltoall_us"][s] / b["alltoall_us"][s] for a, b in pairs], "%.2f")
                         for s in sizes]
                out.append("| %d | %s |" % (k, " | ".join(vals)))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--hosts", default="16,32")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--peers", default="fmx,tcp,ofitcp")
    ap.add_argument("--sizes", default="4096,65536")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--quick", action="store_true", help="4 hosts, 1 rep, 4 KiB, 3 iterations (make check)")
    a = ap.parse_args()
    if a.quick:
        a.hosts, a.reps, a.sizes, a.iters, a.peers = "4", 1, "4096", 3, "fmx,tcp"
    try:
        ks = [int(x) for x in a.hosts.split(",")]
        sizes = [str(int(x)) for x in a.sizes.split(",")]
    except ValueError:
        ap.error("--hosts and --sizes are lists of numbers")
    peers = [p for p, _ in incast.PEERS if p in a.peers.split(",")]
    if any(k < 2 or k > 250 for k in ks) or not peers or a.reps < 1:
        ap.error("--hosts in 2..250, a known peer, --reps >= 1")
    exe = os.path.join(a.build, "tests", "scale")
    if not shutil.which("mpirun.openmpi") or not os.path.exists(exe):
        log("no Open MPI or no %s: skipped" % exe)
        return 0
    work = tempfile.mkdtemp(prefix="fmx-scale-")
    runs, bad = [], 0
    try:
        for k in ks:
            hosts = Hosts(k, "s%d" % (os.getpid() % 1000))
            try:
                for rep in range(a.reps):
                    for how in peers:
                        res = run(a.build, how, hosts, work, [exe, "--sizes", ",".join(sizes), "--iters", str(a.iters)])
                        bad |= res is None or res.get("wrong", 1) != 0
                        runs.append({"k": k, "rep": rep, "peer": how, "res": res})
                        log("%d hosts, rep %d, %s: %s" % (k, rep, how, json.dumps(res)))
            finally:
                hosts.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(table(runs, ks, peers, sizes))
    return 1 if bad else 0


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout's TERM still tears the hosts down
    sys.exit(main())
