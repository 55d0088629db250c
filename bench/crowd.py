#!/usr/bin/env python3
"""Many peers on one endpoint: what each costs the endpoint they all talk
to, and how long they take to connect. K+1 namespaced hosts on one bridge
(bench/hosts.py); host 0 runs one endpoint (tests/system/progs/fmx_crowd.c
serve); hosts 1..K run --procs processes each, which open --peers
endpoints in all and connect every one of them to host 0's, all at once.

Two stages, each with fresh processes:
  idle    each endpoint connects (fmx_connect) and sends nothing;
  active  each connects without waiting (fmx_connect_async) and sends
          --msgs messages of --size bytes at once.
Host 0's resident set (VmRSS) is read once its endpoint is open and again
once every peer is done; the growth over the partners it counted is the
cost of a peer. The connect time is the slowest client process's, from
its first connect to its last send completed.

  python3 bench/crowd.py [--build DIR] [--peers 1000] [--hosts 4] [--procs 2]
                         [--msgs 4] [--size 64] [--wire raw|udp] [--reps 1] [--quick]
Each stage prints a JSON line: the partners host 0 counted, its resident
set before and after, the bytes per partner, the messages received and
sent, the mean time of an idle fmx_progress call (pass_ns) and the slowest
client's time.
Exit status: 0; 1 when a stage failed; 2 usage.
"""
import argparse
import json
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hosts import Hosts  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("FMX_NET_DISCOVER_MS", "0")
TIMEOUT = 300


def log(msg):
    print("[crowd] " + msg, file=sys.stderr, flush=True)


def mac(ns):
    return subprocess.run(["ip", "netns", "exec", ns, "cat", "/sys/class/net/fxeth0/address"], check=True,
                          capture_output=True, text=True).stdout.strip()


def stage(hosts, prog, env, peers, procs, msgs, size, wait, kill=None):
    """One stage: host 0's RSS before and its line after, and the clients'
    lines. kill=K (with msgs): then K client processes are killed and host 0
    calls every sender back with a synchronous send; its line about that is
    the fourth value (None without kill)."""
    nclient = (len(hosts.ns) - 1) * procs
    srv = subprocess.Popen(["ip", "netns", "exec", hosts.ns[0], prog, "serve", "--base", "7"], env=env,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    clients = []
    try:
        rss0 = json.loads(srv.stdout.readline())["rss_kib"]
        cenv = dict(env, FMX_SYS_NIC=mac(hosts.ns[0]))
        for c in range(nclient):
            eps = peers // nclient + (1 if c < peers % nclient else 0)
            ns = hosts.ns[1 + c // procs]
            clients.append(subprocess.Popen(
                ["ip", "netns", "exec", ns, prog, "dial", "--target", "7", "--eps", str(eps), "--msgs", str(msgs),
                 "--size", str(size), "--wait", str(int(wait))], env=cenv, stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        outs = []
        for c in clients:
            line = c.stdout.readline()
            if not line:
                raise RuntimeError("a client failed: " + c.stderr.read()[-2000:])
            outs.append(json.loads(line))
        # Sends complete once acked; the last may still wait to be received.
        want = sum(o["sent"] for o in outs)
        for _ in range(100):
            srv.stdin.write("m\n")
            srv.stdin.flush()
            after = json.loads(srv.stdout.readline())
            if after["received"] >= want:
                break
            time.sleep(0.1)
        called = None
        if kill is not None:
            for c in clients[:kill]:
                c.kill()
                c.wait()
            srv.stdin.write("s\n")
            srv.stdin.flush()
            called = json.loads(srv.stdout.readline())
        return rss0, after, outs, called
    finally:
        for c in clients:
            if c.poll() is None:
                c.stdin.close()
        for c in clients:
            try:
                c.wait(timeout=60)
            except subprocess.TimeoutExpired:
                c.kill()
                c.wait()
        srv.stdin.close()
        try:
            srv.wait(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--peers", type=int, default=1000)
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--msgs", type=int, default=4)
    ap.add_argument("--size", type=int, default=64)
    ap.add_argument("--wire", default="raw")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="200 peers on 2 hosts, 1 rep (make check)")
    a = ap.parse_args()
    if a.quick:
        a.peers, a.hosts, a.reps = 200, 2, 1
    if a.peers < 1 or a.hosts < 1 or a.procs < 1:
        ap.error("--peers, --hosts and --procs must be at least 1")
    prog = os.path.join(a.build, "tests", "fmx_crowd")
    per_proc = -(-a.peers // (a.hosts * a.procs))
    env = dict(os.environ, FMX_NET_WIRE=a.wire, FMX_ENDPOINT_MAX=str(max(256, per_proc + 16)))
    hosts = Hosts(a.hosts + 1, "c%d" % (os.getpid() % 1000))
    bad = 0
    try:
        for rep in range(a.reps):
            for name, msgs, wait in (("idle", 0, True), ("active", a.msgs, False)):
                try:
                    rss0, after, outs, _ = stage(hosts, prog, env, a.peers, a.procs, msgs, a.size, wait)
                except (RuntimeError, ValueError, subprocess.SubprocessError) as e:
                    log("%s: %s" % (name, e))
                    bad = 1
                    continue
                n = after["partners"]
                grow = after["rss_kib"] - rss0
                sent = sum(o["sent"] for o in outs)
                failed = sum(o["failed"] for o in outs)
                print(json.dumps({"rep": rep, "stage": name, "peers": n, "rss0_kib": rss0, "rss_kib": after["rss_kib"],
                                  "bytes_per_peer": round(grow * 1024 / n) if n else None, "received": after["received"], "pass_ns": after["pass_ns"],
                                  "sent": sent, "failed": failed, "slowest_ms": max(o["ms"] for o in outs)}),
                      flush=True)
                if failed or n < a.peers:
                    bad = 1
    finally:
        hosts.close()
    return bad


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # a timeout's TERM still tears the hosts down
    sys.exit(main())
