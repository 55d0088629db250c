# SPDX-License-Identifier: MIT
"""The net transport where the line misbehaves (as root, in network
namespaces; skipped otherwise): a link set down and up under traffic,
frames delayed by 1 ms and reordered by a forwarder of ours (fwd.py) with
10% loss and 5% duplication from nftables on top, foreign frames and
datagrams (inject.py), and a user without CAP_NET_RAW (UDP). Every byte is
verified (--verify); every run is bounded."""
import os
import random
import shutil
import subprocess
import sys
import threading
import time

import pytest

from netns import PERF, Chain, nft, pair1500, perf, rows, sh  # noqa: F401 (fixture)
from sysutil import shared_prog

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                reason="network namespaces need root and iproute2")

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = int(os.environ.get("FMX_TEST_SEED", "7"))


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_link_down_up(pair1500, wire):
    """a's link goes down and up (seeded, irregular: up 0.2-0.6 s, down
    0.1-0.4 s, six times at most) while messages of 8 B to 16 MiB stream:
    what was lost is sent again once it is back. The times are irregular
    on purpose: on UDP the kernel resolves the peer's MAC again after each
    flap, and ARP asks once a second; flaps at a period dividing 1 s met
    every ARP probe with the link down, for longer than any timeout."""
    stop = threading.Event()
    flaps = [0]
    rnd = random.Random(SEED)

    def flap():
        while flaps[0] < 6 and not stop.wait(rnd.uniform(0.2, 0.6)):
            sh("ip", "-n", pair1500.a, "link", "set", pair1500.va, "down")
            flaps[0] += 1
            stop.wait(rnd.uniform(0.1, 0.4))
            sh("ip", "-n", pair1500.a, "link", "set", pair1500.va, "up")

    t = threading.Thread(target=flap)
    t.start()
    try:
        out = perf(pair1500, "bw", "8,64K,1M,16M", {"FMX_NET_WIRE": wire}, iters=40)
    finally:
        stop.set()
        t.join()
        sh("ip", "-n", pair1500.a, "link", "set", pair1500.va, "up")
    assert len(rows(out)) == 4, out
    assert flaps[0] >= 1


@pytest.mark.skipif(not shutil.which("nft") or not shutil.which("ethtool"), reason="needs nftables and ethtool")
@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_reorder_delay_loss_dup(wire):
    """Through the forwarder: 1 ms each way, 5% of frames held up to 2 ms
    more (overtaken), 10% lost on b's ingress and 5% doubled on a's egress:
    0 B to 16 MiB, every byte once."""
    c = Chain(1500)
    fwd = subprocess.Popen(["ip", "netns", "exec", c.m, sys.executable, os.path.join(HERE, "fwd.py"), c.fa, c.fb,
                            "--delay-us", "1000", "--reorder", "5", "--seed", str(SEED), "--seconds", "240"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        match = ["ether", "type", "!=", "arp"]
        nft(c.b, "add", "table", "netdev", "t")
        nft(c.b, "add", "chain", "netdev", "t", "c", "{ type filter hook ingress device %s priority 0; }" % c.vb)
        nft(c.b, "add", "rule", "netdev", "t", "c", *match, "numgen", "random", "mod", "100", "<", "10",
            "counter", "drop")
        nft(c.a, "add", "table", "netdev", "t")
        nft(c.a, "add", "chain", "netdev", "t", "e", "{ type filter hook egress device %s priority 0; }" % c.va)
        nft(c.a, "add", "rule", "netdev", "t", "e", *match, "meta", "mark", "!=", "0x1", "numgen", "random", "mod",
            "100", "<", "5", "meta", "mark", "set", "0x1", "counter", "dup", "to", c.va)
        time.sleep(0.3)  # the forwarder's sockets are open
        out = perf(c, "pingpong", "0,8,1K,4K,64K,1M,16M", {"FMX_NET_WIRE": wire}, iters=4, extra=["--counters"],
                   want_err=True)
        assert len(rows(out)) == 7, out
        ruleset = sh("ip", "netns", "exec", c.b, "nft", "list", "ruleset").stdout
        assert "packets 0 " not in ruleset, ruleset
    finally:
        fwd.terminate()
        fout, _ = fwd.communicate(timeout=30)
        c.close()
    held = [l for l in fout.splitlines() if "held back" in l]
    assert held and " 0 held back" not in held[0], fout


@pytest.mark.skipif(not shutil.which("ethtool"), reason="needs ethtool")
def test_out_of_step_connection_fails():
    """The two ends of a connection out of step (the forwarder moves the seq
    of A's DATA 2^20 on from its 50th, and of B's NACKs back): B's stream
    from A expects A's packets elsewhere, A's acks never come. B says so
    (NACK out of step) and A's partner fails with its requests
    (FMX_REMOTE_ENDPOINT_BAD_SESSION), with FMX_NET_TIMEOUT_MS at 10
    minutes: before, both waited on each other that long."""
    c = Chain(1500)
    fwd = subprocess.Popen(["ip", "netns", "exec", c.m, sys.executable, os.path.join(HERE, "fwd.py"), c.fa, c.fb,
                            "--delay-us", "0", "--desync-after", "50", "--seconds", "150"],
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    env = {"FMX_NET_WIRE": "raw", "FMX_NET_TIMEOUT_MS": "600000"}
    common = [PERF, "pingpong", "--sizes", "8", "--iters", "1000", "--timeout", "100"]
    try:
        time.sleep(0.3)  # the forwarder's sockets are open
        srv = c.popen(c.b, common + ["--server"], env)
        time.sleep(0.2)
        cli = c.popen(c.a, common + ["--client", c.mac_b], env)
        out, err = cli.communicate(timeout=120)
    finally:
        for p in ("srv", "cli"):
            if p in locals() and locals()[p].poll() is None:
                locals()[p].kill()
        fwd.terminate()
        fout, _ = fwd.communicate(timeout=30)
        c.close()
    assert cli.returncode != 0, out + err
    assert "FMX-NET-OUT-OF-STEP" in err and "bad session" in (out + err).lower(), out + err
    assert " 0 put out of step" not in fout, fout


@pytest.mark.skipif(not shutil.which("nft"), reason="needs nftables")
@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_close_when_acks_are_lost(pair1500, wire):
    """Every ACK packet is lost both ways (data still carries its ack): the
    side whose CLOSE comes first acks it once, lost, and leaves; the other
    is not left waiting FMX_NET_TIMEOUT_MS (longer than this test waits)
    for that ack: the closing side stays to answer its CLOSE sent again."""
    # The packet's type byte: byte 3 of our header, after Ethernet's 14 B
    # (raw) or after IPv4 (20 B, no options) and UDP (8 B).
    match = ["ether", "type", "0x86df", "@ll,136,8", "4"] if wire == "raw" else \
        ["ip", "protocol", "udp", "@ll,336,16", "0x4658", "@ll,360,8", "4"]
    for ns, dev in ((pair1500.a, pair1500.va), (pair1500.b, pair1500.vb)):
        nft(ns, "add", "table", "netdev", "t")
        nft(ns, "add", "chain", "netdev", "t", "c", "{ type filter hook ingress device %s priority 0; }" % dev)
        nft(ns, "add", "rule", "netdev", "t", "c", *match, "counter", "drop")
    for _ in range(3):
        out = perf(pair1500, "pingpong", "0,8,4K", {"FMX_NET_WIRE": wire, "FMX_NET_TIMEOUT_MS": "100000"}, iters=20)
        assert len(rows(out)) == 3, out
    drops = [sh("ip", "netns", "exec", ns, "nft", "list", "chain", "netdev", "t", "c").stdout
             for ns in (pair1500.a, pair1500.b)]
    assert any("counter packets 0 " not in d for d in drops), drops


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_foreign_packets(pair1500, wire):
    """Foreign frames and datagrams (our EtherType, our port, our magic)
    rain on b's endpoints while a and b exchange: all dropped and counted,
    the exchange unharmed."""
    inj = subprocess.Popen(["ip", "netns", "exec", pair1500.a, sys.executable, os.path.join(HERE, "inject.py"),
                            "--dev", pair1500.va, "--mac", pair1500.mac_b, "--ip", "10.99.7.2", "--seed", str(SEED),
                            "--seconds", "3"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(0.2)
        out = perf(pair1500, "pingpong", "0,8,4K,64K,1M,4M", {"FMX_NET_WIRE": wire}, iters=50,
                   extra=["--counters"], want_err=True)
    finally:
        iout, _ = inj.communicate(timeout=60)
    assert len(rows(out)) == 6, out
    assert "packets sent" in iout, iout
    dropped = [l for l in out.splitlines() if "rank 1" in l and "packets dropped" in l]
    assert dropped and int(dropped[0].split()[-1]) > 0, out
    # Well-formed ones to b's endpoint with a session of nobody's: strangers.
    strangers = [l for l in out.splitlines() if "rank 1" in l and "packets from no partner" in l]
    assert strangers and int(strangers[0].split()[-1]) > 0, out


def test_nonroot_udp(pair1500):
    """A user without CAP_NET_RAW: auto picks UDP at both ends, and 0 B to
    16 MiB pass."""
    perf_copy, env = shared_prog(PERF)
    nobody = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    common = ["pingpong", "--sizes", "0,8,1432,4K,64K,1M,16M", "--verify", "--iters", "5", "--timeout", "60"]
    srv = pair1500.popen(pair1500.b, nobody + [perf_copy] + common + ["--server"], env)
    try:
        time.sleep(0.3)
        cli = pair1500.popen(pair1500.a, nobody + [perf_copy] + common + ["--client", pair1500.mac_b], env)
        out, err = cli.communicate(timeout=120)
        assert cli.returncode == 0, out + err
        assert len(rows(out)) == 7, out
        sout, serr = srv.communicate(timeout=60)
        assert srv.returncode == 0, sout + serr
    finally:
        for p in (srv,):
            if p.poll() is None:
                p.kill()
                p.wait()
    info, ienv = shared_prog(os.path.join(os.path.dirname(PERF), "fmx_info"))
    r = subprocess.run(["ip", "netns", "exec", pair1500.a] + nobody + [info, "--json", "--no-discover"],
                       env=dict(os.environ, **ienv), capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stdout + r.stderr
    assert '"board": true, "raw": false, "udp": true' in r.stdout, r.stdout
