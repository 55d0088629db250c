# SPDX-License-Identifier: MIT
"""What the net tests share: network namespaces joined by a veth pair
(Pair) or a bridge (Bridge), fmx_perf --server/--client across them, fmx_sys
ranks in them. Names are unique per test run; every run is bounded."""
import os
import re
import subprocess
import time

import pytest

from sysutil import BUILD
from hosts import veth  # (bench/, on the path by sysutil) the bench's beds make theirs the same way

PERF = os.path.join(BUILD, "fmx_perf")
SYS = os.path.join(BUILD, "tests", "fmx_sys")


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=30)


def cleaned_on_failure(bed, setup, *args):
    """setup(*args), and bed.close() should it fail: a bed left half made
    would keep its namespaces (and their veths) after the test."""
    try:
        setup(*args)
    except BaseException:
        bed.close()
        raise


class Pair:
    """Namespaces a and b, veth ends va (10.99.x.1) and vb (.2)."""

    def __init__(self, mtu):
        tag = "%d%d" % (os.getpid() % 10000, int(time.monotonic() * 1000) % 1000)
        self.a, self.b = "fxa" + tag, "fxb" + tag
        self.va, self.vb = "fva" + tag, "fvb" + tag
        cleaned_on_failure(self, self._setup, mtu)

    def _setup(self, mtu):
        sh("ip", "netns", "add", self.a)
        sh("ip", "netns", "add", self.b)
        veth(self.va, self.a, self.vb, self.b)
        for ns, dev, ip in ((self.a, self.va, "10.99.7.1/24"), (self.b, self.vb, "10.99.7.2/24")):
            sh("ip", "-n", ns, "addr", "add", ip, "brd", "+", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "mtu", str(mtu), "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        self.mac_a = self.mac(self.a, self.va)
        self.mac_b = self.mac(self.b, self.vb)
        self.ip_a, self.ip_b = "10.99.7.1", "10.99.7.2"

    @staticmethod
    def mac(ns, dev):
        return sh("ip", "netns", "exec", ns, "cat", "/sys/class/net/%s/address" % dev).stdout.strip()

    def close(self):
        for ns in (self.a, self.b):
            sh("ip", "netns", "del", ns, check=False)

    def popen(self, ns, argv, env):
        e = dict(os.environ)
        e.update(env)
        return subprocess.Popen(["ip", "netns", "exec", ns] + argv, env=e, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)


class Chain:
    """Namespaces a and b (va 10.99.9.1, vb .2), each joined by a veth to a
    namespace m in the middle (fa, fb) where a frame forwarder of ours
    (fwd.py) moves frames between fa and fb, with delay and reordering.
    Offloads are off on all four ends: GSO trains and checksums left to the
    device would reach the forwarder unsegmented and unfilled."""

    def __init__(self, mtu):
        tag = "%d%d" % (os.getpid() % 10000, int(time.monotonic() * 1000) % 1000)
        self.a, self.m, self.b = "fxa" + tag, "fxm" + tag, "fxb" + tag
        self.va, self.fa, self.fb, self.vb = "fva" + tag, "ffa" + tag, "ffb" + tag, "fvb" + tag
        cleaned_on_failure(self, self._setup, mtu)

    def _setup(self, mtu):
        for ns in (self.a, self.m, self.b):
            sh("ip", "netns", "add", ns)
            sh("ip", "-n", ns, "link", "set", "lo", "up")
        for ns, dev, peer in ((self.a, self.va, self.fa), (self.b, self.vb, self.fb)):
            veth(dev, ns, peer, self.m)
        for ns, dev, ip in ((self.a, self.va, "10.99.9.1/24"), (self.b, self.vb, "10.99.9.2/24"),
                            (self.m, self.fa, None), (self.m, self.fb, None)):
            if ip:
                sh("ip", "-n", ns, "addr", "add", ip, "brd", "+", "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "mtu", str(mtu), "up")
            for feature in ("tx", "tso", "gso", "gro", "tx-udp-segmentation"):
                sh("ip", "netns", "exec", ns, "ethtool", "-K", dev, feature, "off", check=False)
        self.mac_a = Pair.mac(self.a, self.va)
        self.mac_b = Pair.mac(self.b, self.vb)

    popen = Pair.popen

    def close(self):
        for ns in (self.a, self.m, self.b):
            sh("ip", "netns", "del", ns, check=False)


class Bridge:
    """Namespaces n0..n{k-1}, each with a veth to a bridge in a namespace of
    its own (10.99.8.i+1/24): hosts on one Ethernet segment."""

    def __init__(self, k, mtu=1500, brd=True):
        """brd=False: addresses given no broadcast (`ip addr add A/24`, as
        many sites write it)."""
        tag = "%d%d" % (os.getpid() % 10000, int(time.monotonic() * 1000) % 1000)
        self.br = "fxr" + tag
        self.ns = ["fx%d" % i + tag for i in range(k)]
        self.macs = []
        self.devs = ["fv%d" % i + tag for i in range(k)]
        self.ports = ["fp%d" % i + tag for i in range(k)]
        cleaned_on_failure(self, self._setup, mtu, brd)

    def _setup(self, mtu, brd):
        sh("ip", "netns", "add", self.br)
        sh("ip", "-n", self.br, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.br, "link", "set", "br0", "mtu", str(mtu), "up")
        for i, ns in enumerate(self.ns):
            dev, port = self.devs[i], self.ports[i]
            sh("ip", "netns", "add", ns)
            veth(dev, ns, port, self.br)
            sh("ip", "-n", self.br, "link", "set", port, "master", "br0")
            sh("ip", "-n", self.br, "link", "set", port, "mtu", str(mtu), "up")
            sh("ip", "-n", ns, "addr", "add", "10.99.8.%d/24" % (i + 1), *(("brd", "+") if brd else ()), "dev", dev)
            sh("ip", "-n", ns, "link", "set", dev, "mtu", str(mtu), "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")
            self.macs.append(Pair.mac(ns, dev))

    def shape(self, i, rate="1gbit", burst="32kb", limit="64kb"):
        """The bridge's port toward host i as a shallow switch port (a token
        bucket dropping what overflows `limit` bytes queued: CLUSTER-NOTES)."""
        sh("ip", "netns", "exec", self.br, "tc", "qdisc", "replace", "dev", self.ports[i], "root", "tbf", "rate",
           rate, "burst", burst, "limit", limit)

    def port_stats(self, i):
        """(frames sent, frames dropped) by the port toward host i."""
        out = sh("ip", "netns", "exec", self.br, "tc", "-s", "qdisc", "show", "dev", self.ports[i]).stdout
        m = re.search(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)

    def close(self):
        for ns in self.ns + [self.br]:
            sh("ip", "netns", "del", ns, check=False)


def run_ranks(places, argv, env, timeout=120):
    """fmx_sys ranks, rank i in namespace places[i]; FMX_SYS_NICS gives each
    rank's board (the MAC of its namespace). Their outputs; all exit 0."""
    procs = []
    for r, (ns, mac) in enumerate(places):
        e = dict(os.environ)
        e.update(env)
        e["FMX_SYS_NICS"] = ",".join(m for _, m in places)
        procs.append(subprocess.Popen(["ip", "netns", "exec", ns, SYS] + argv + ["--rank", str(r), "--nprocs",
                                                                            str(len(places))],
                                      env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            outs.append((p.returncode, out, err))
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
    for rc, out, err in outs:
        assert rc == 0, out + err
    return [o for _, o, _ in outs]


@pytest.fixture
def pair1500():
    p = Pair(1500)
    yield p
    p.close()


@pytest.fixture
def pair9000():
    p = Pair(9000)
    yield p
    p.close()


def perf(pair, kernel, sizes, env, iters=None, extra=(), want_err=False):
    """fmx_perf KERNEL --server in b, --client MAC(b) in a: the client's
    output (want_err: and both sides' stderr)."""
    common = [kernel, "--sizes", sizes, "--verify", "--timeout", "60"] + list(extra)
    if iters:
        common += ["--iters", str(iters)]
    srv = pair.popen(pair.b, [PERF] + common + ["--server"], env)
    time.sleep(0.2)
    cli = pair.popen(pair.a, [PERF] + common + ["--client", pair.mac_b], env)
    try:
        out, err = cli.communicate(timeout=240)
        sout, serr = srv.communicate(timeout=60)
    finally:
        for p in (cli, srv):
            if p.poll() is None:
                p.kill()
    assert cli.returncode == 0, err + out
    assert srv.returncode == 0, serr + sout
    return out + err + serr if want_err else out


def rows(out):
    return [l.split() for l in out.splitlines() if l.strip() and l.split()[0][0].isdigit()]


def nft(ns, *rule):
    sh("ip", "netns", "exec", ns, "nft", *rule)
