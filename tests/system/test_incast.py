# SPDX-License-Identifier: MIT
"""Many hosts into one through a shallow switch port (issue 47's test bed):
namespaced hosts on one bridge whose port toward host 0 is a token bucket
of 1 Gb/s holding 64 KB (tbf). Open MPI + fmx's provider runs
tests/mpi/incast.c across them: every sender's messages arrive whole and
checked although the port drops what overflows it."""
import json
import os
import shutil
import subprocess

import pytest

from netns import Bridge
from sysutil import BUILD
from test_apps import run_held, wrapper

MPIRUN = shutil.which("mpirun.openmpi")
INCAST = os.path.join(BUILD, "tests", "incast")
FI_ENV = {"FI_PROVIDER_PATH": os.path.join(BUILD, "ofi"), "FI_PROVIDER": "fmx", "FMX_NET_DISCOVER_MS": "0"}

pytestmark = [
    pytest.mark.skipif(os.geteuid() != 0, reason="needs root (network namespaces)"),
    pytest.mark.skipif(not (MPIRUN and os.path.exists(INCAST) and shutil.which("tc")),
                       reason="needs Debian's Open MPI, build/tests/incast and tc"),
]


PULLED = "large messages pulled from another host"
GRANTS = "net: blocks granted: asked by the receiver for the first time"
TAILS = "net: tail drops read from one partner (the end of a run lost)"
REASKED = "net: pulled frames asked for again (lost or late)"
QDELAY = "net: queue's delay in front of us, ns: the network's wait beyond its shortest (most)"
MSGS = 8  # per pair across the uplink: enough for budgets that read no loss to reach their caps


def incast(tmp_path, hosts, env, args, subnet="10.99.8.0/24", dev=None):
    """incast with rank i in hosts.ns[i] (mpirun inside the first): its line
    and the ranks' endpoint counters, read while they wait at the end."""
    wrap = wrapper(tmp_path, hosts, "OMPI_COMM_WORLD_RANK")
    cmd = ["ip", "netns", "exec", hosts.ns[0], MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to", "none",
           "-np", str(len(hosts.ns)), "--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include",
           "fmx", "--mca", "oob_tcp_if_include", subnet] + \
          sum((["-x", k] for k in sorted(env)), []) + [wrap, INCAST] + args + ["--hold", str(tmp_path / "hold")]
    e = dict(env, PMIX_MCA_ptl_tcp_remote_connections="1", PMIX_MCA_ptl_tcp_if_include=dev or hosts.devs[0],
             ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
    return run_held(cmd, e, str(tmp_path / "hold"))


def through_port(tmp_path, hosts, args):
    """incast with the port toward host 0 shaped: its line, the ranks'
    counters, and the frames the port sent and dropped meanwhile."""
    hosts.shape(0)
    sent0, dropped0 = hosts.port_stats(0)
    res, counters = incast(tmp_path, hosts, FI_ENV, args)
    sent1, dropped1 = hosts.port_stats(0)
    return res, counters, sent1 - sent0, dropped1 - dropped0


def test_incast_through_shallow_port(tmp_path):
    """3 senders x 6 messages of 1 MiB, 4 in flight each, into host 0
    through the shaped port: all 18 MiB arrive and check, each message
    pulled by host 0 (its counters) in runs of a block at most, granted by
    its budget, the port forwarded at least that many bytes' frames (the
    traffic went through the shaped port, not around it), and dropped at
    most 1 in 16 of them (the budget keeps the port's queue near what it
    holds: 0.6-3.4% across runs on a noisy 2-core VM; each sender asking
    its 4 messages at once dropped 0.77 frames per frame sent). Host 0
    measured the network's wait: both ends stamped (the PULL's arrival at
    the senders, carried back as their hold, and the answers' at host 0),
    and a queue's delay came of it."""
    hosts = Bridge(4)
    try:
        res, counters, sent, dropped = through_port(tmp_path, hosts,
                                                    ["--size", "1048576", "--msgs", "6", "--window", "4"])
        assert sum(c.get(PULLED, 0) for c in counters) == 18, counters
        assert sum(c.get(GRANTS, 0) for c in counters) >= 18 * (1 << 20) // (64 << 10), counters
        assert res["senders"] == 3 and res["wrong_bytes"] == 0, res
        assert res["bytes"] == 3 * 6 * (1 << 20), res
        assert sent * 1500 >= res["bytes"], (sent, dropped, res)
        assert dropped * 16 <= sent, (sent, dropped, counters)
        assert max(c.get(QDELAY, 0) for c in counters) > 0, counters
    finally:
        hosts.close()


def test_eager_incast_halves_the_senders_windows(tmp_path):
    """3 senders x 64 messages of 32 KiB (eager: under the pull threshold),
    8 in flight each, through the shaped port: nothing schedules them at
    the receiver, so each sender's stream keeps a congestion window, halved
    on the holes host 0 reports and on resends by the timer (counted by
    every sender whose traffic the port dropped); all 6 MiB arrive and
    check. With the window fixed at FMX_NET_WINDOW, 7 such senders moved
    29-41 MB/s against the TCP BTL's 51-60 (bench/incast.py --size 32768),
    71-77 with it, 114-116 with it cut on the timer too and grown back by
    a packet a round trip (docs/protocol.md, "Congestion window")."""
    hosts = Bridge(4)
    try:
        res, counters, sent, dropped = through_port(tmp_path, hosts,
                                                    ["--size", "32768", "--msgs", "64", "--window", "8"])
        assert res["senders"] == 3 and res["wrong_bytes"] == 0, res
        assert res["bytes"] == 3 * 64 * 32768, res
        assert sum(c.get(PULLED, 0) for c in counters) == 0, counters  # eager, all of it
        assert sent * 1500 >= res["bytes"], (sent, dropped, res)
        cuts = sum(c.get("net: congestion windows halved on a hole a peer reported or a resend on the timer", 0)
                   for c in counters)
        assert dropped == 0 or cuts >= 1, (dropped, counters)
    finally:
        hosts.close()


def test_incast_probe_times_pings_through_the_port(tmp_path):
    """--probe: one more host pings host 0 through the shaped port before
    and while 2 senders load it; rank 0 answers every ping between its
    receives. Both lines come: the senders' bytes all arrive and check, and
    the prober timed every unloaded ping (no time is asserted)."""
    hosts = Bridge(4)
    try:
        hosts.shape(0)
        wrap = wrapper(tmp_path, hosts, "OMPI_COMM_WORLD_RANK")
        cmd = ["ip", "netns", "exec", hosts.ns[0], MPIRUN, "--allow-run-as-root", "--oversubscribe", "--bind-to",
               "none", "-np", "4", "--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include",
               "fmx", "--mca", "oob_tcp_if_include", "10.99.8.0/24"] + sum((["-x", k] for k in sorted(FI_ENV)), []) + \
            [wrap, INCAST, "--size", "1048576", "--msgs", "4", "--window", "2", "--probe", "50"]
        env = dict(os.environ, **FI_ENV, PMIX_MCA_ptl_tcp_remote_connections="1",
                   PMIX_MCA_ptl_tcp_if_include=hosts.devs[0], ASAN_OPTIONS="detect_leaks=0:abort_on_error=1")
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        lines = [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]
        res = [x for x in lines if x["app"] == "incast"]
        probe = [x for x in lines if x["app"] == "incast-probe"]
        assert len(res) == 1 and len(probe) == 1, p.stdout
        assert res[0]["senders"] == 2 and res[0]["bytes"] == 2 * 4 * (1 << 20) and res[0]["wrong_bytes"] == 0, res
        assert probe[0]["idle_n"] == 50 and probe[0]["loaded_n"] >= 0, probe
        assert 0 < probe[0]["idle_p50_us"] <= probe[0]["idle_p99_us"] <= probe[0]["idle_max_us"], probe
    finally:
        hosts.close()


def test_pairs_across_a_shaped_uplink(tmp_path):
    """The second bed of issue 47 (bench/hosts.py, split): hosts 0-1 on one
    bridge, hosts 2-3 on another, the two joined by one veth shaped as the
    port above in the senders' direction; host 2+i sends to host i
    (incast --pairs), both pairs at once, 8 messages of 1 MiB each, 4 in
    flight. All bytes arrive and check, every message is pulled by its
    receiver, and the uplink forwarded at least
    their frames (the pairs' traffic crossed it) and dropped fewer than
    it sent: when it dropped, the receivers asked again, most runs reading
    their partner's tail drops as the link's queue overflowing
    (net_grant_tail; counted): 0.19-0.23 dropped per frame sent. Read by no receiver, the budgets grew to their caps and
    the link dropped 1.41-1.55.
    Torn down after: no namespace of the bed is left."""
    from hosts import DEV, SUBNET, Hosts
    tag = "t%d" % (os.getpid() % 10000)
    hosts = Hosts(4, tag, split=2)
    try:
        hosts.shape_uplink()
        sent0, _ = hosts.port_stats(None)
        res, counters = incast(tmp_path, hosts, FI_ENV,
                               ["--size", "1048576", "--msgs", str(MSGS), "--window", str(MSGS // 2), "--pairs"],
                               subnet=SUBNET + ".0/24", dev=DEV)
        sent1, dropped = hosts.port_stats(None)
        assert res["senders"] == 2 and res["wrong_bytes"] == 0, res
        assert res["bytes"] == 2 * MSGS * (1 << 20), res
        assert sum(c.get(PULLED, 0) for c in counters) == 2 * MSGS, counters
        assert (sent1 - sent0) * 1500 >= res["bytes"], (sent1 - sent0, dropped, res)
        assert dropped <= sent1 - sent0, (sent1 - sent0, dropped, counters)
        # Where the link's queue overflowed, the receivers asked again for
        # what it dropped, most runs reading it as a tail drop; in about one
        # run of twelve here (410 dropped) no loss was tail-shaped and none
        # was read so: the timers asked again.
        assert dropped == 0 or sum(c.get(TAILS, 0) + c.get(REASKED, 0) for c in counters) >= 1, (dropped, counters)
    finally:
        hosts.close()
    left = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert tag not in left, left
