# SPDX-License-Identifier: MIT
"""The test beds themselves (netns.py here, bench/hosts.py and bench/net.py)
on a machine that has been up for days: its namespace has made so many
devices that the next one takes an interface index past 32767, and Debian's
PMIx (Open MPI 4.1's mpirun) cannot start its listener on such an interface
("The PMIx server's listener thread failed to start": every Open MPI run
across namespaces failed so on a CI machine). The beds give their veths
small indexes of their own; this test makes the condition in a namespace of
its own, builds every bed there, and starts mpirun on one of them."""
import json
import os
import shutil
import sys

import pytest

from sysutil import BENCH, run

HERE = os.path.dirname(os.path.abspath(__file__))
MPIRUN = shutil.which("mpirun.openmpi")
PAST = 32800  # devices made (and deleted) first: the namespace's count of indexes passes 32767

# Run inside the crowded namespace: every bed, the indexes of its veth ends
# (read in their namespaces), and mpirun started on a Pair's end.
CHILD = r"""
import json, os, subprocess, sys
sys.path[:0] = [%r, %r]
from netns import Bridge, Chain, Pair
import hosts, net

def index(ns, dev):
    return int(subprocess.run(["ip", "netns", "exec", ns, "cat", "/sys/class/net/%%s/ifindex" %% dev],
                              capture_output=True, text=True, check=True).stdout)

out = {}
p = Pair(1500)
try:
    out["pair"] = [index(p.a, p.va), index(p.b, p.vb)]
    if %r:
        e = dict(os.environ, PMIX_MCA_ptl_tcp_if_include=p.va)
        r = subprocess.run(["ip", "netns", "exec", p.a, %r, "--allow-run-as-root", "-np", "1", "true"], env=e,
                           capture_output=True, text=True, timeout=120)
        out["mpirun"] = [r.returncode, (r.stdout + r.stderr)[-800:]]
finally:
    p.close()
c = Chain(1500)
try:
    out["chain"] = [index(c.a, c.va), index(c.b, c.vb), index(c.m, c.fa), index(c.m, c.fb)]
finally:
    c.close()
b = Bridge(3)
try:
    out["bridge"] = [index(ns, d) for ns, d in zip(b.ns, b.devs)] + [index(b.br, d) for d in b.ports]
finally:
    b.close()
h = hosts.Hosts(3, "bd%%d" %% (os.getpid() %% 10000), split=1)
try:
    out["hosts"] = [index(ns, hosts.DEV) for ns in h.ns] + [index(h.br, h.up + "a"), index(h.br2, h.up + "b")]
finally:
    h.close()
n = net.Hosts(1500)
try:
    out["net"] = [index(n.a, n.va), index(n.b, n.vb)]
finally:
    n.close()
print(json.dumps(out))
"""


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="namespaces need root and iproute2")
def test_beds_keep_interface_indexes_small(tmp_path):
    """In a namespace whose next index is past 32767 (PAST ifb devices made
    there first, the cheapest kind this kernel has, all in one group, then
    deleted as the group: at once, where one by one takes 35 ms each), every
    bed's veth ends have indexes below 32768, and mpirun starts with PMIx on
    one of them."""
    outer = "fxbig%d" % (os.getpid() % 100000)
    run(["ip", "netns", "del", outer])
    assert run(["ip", "netns", "add", outer]).returncode == 0
    try:
        batch = tmp_path / "batch"
        batch.write_text("".join("link add q%d group 77 type ifb\n" % i for i in range(PAST)))
        made = run(["ip", "-n", outer, "-batch", str(batch)], timeout=300)
        if made.returncode != 0 and ("ifb" in made.stderr or "Unknown device type" in made.stderr):
            pytest.skip("this kernel makes no ifb device: " + made.stderr[-200:])
        assert made.returncode == 0, made.stderr[-500:]
        assert run(["ip", "-n", outer, "link", "del", "group", "77"], timeout=300).returncode == 0
        # The condition holds: a veth made the plain way there takes a big index.
        assert run(["ip", "-n", outer, "link", "add", "plain0", "type", "veth", "peer", "name", "plain1"]).returncode == 0
        plain = run(["ip", "-n", outer, "-j", "link", "show", "plain0"])
        assert json.loads(plain.stdout)[0]["ifindex"] >= 32768
        child = CHILD % (HERE, BENCH, bool(MPIRUN), MPIRUN)
        res = run(["ip", "netns", "exec", outer, sys.executable, "-c", child], timeout=600)
        assert res.returncode == 0, res.stdout[-1000:] + res.stderr[-2000:]
        got = json.loads(res.stdout.splitlines()[-1])
        if MPIRUN:
            assert got["mpirun"][0] == 0, got["mpirun"][1]
        for bed, indexes in got.items():
            if bed != "mpirun":
                assert indexes and all(0 < i < 32768 for i in indexes), (bed, indexes)
    finally:
        run(["ip", "netns", "del", outer])


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="network namespaces need root and iproute2")
@pytest.mark.parametrize("bed", ["pair", "chain", "bridge"])
def test_bed_that_fails_leaves_nothing(bed):
    """A bed whose setup fails (an MTU no veth takes) raises, and leaves no
    namespace of its own behind."""
    sys.path.insert(0, HERE)
    import netns
    before = set(run(["ip", "netns", "list"]).stdout.split())
    with pytest.raises(Exception):
        {"pair": lambda: netns.Pair(1 << 20), "chain": lambda: netns.Chain(1 << 20),
         "bridge": lambda: netns.Bridge(3, mtu=1 << 20)}[bed]()
    assert set(run(["ip", "netns", "list"]).stdout.split()) <= before
