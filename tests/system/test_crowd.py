# SPDX-License-Identifier: MIT
"""Many peers on one endpoint (bench/crowd.py's bed, smaller): 300
endpoints on two namespaced hosts connect at once to one endpoint on a
third, some waiting in fmx_connect and some not, and send to it; every
connection is made, every message arrives, nothing fails, on both wires;
and a quarter of them vanishing (their process killed) fails only what
was sent to them (as root; skipped otherwise)."""
import os
import shutil

import pytest

from sysutil import BUILD
from test_ofi import sanitized
import crowd  # bench/, on the path by sysutil
from hosts import Hosts

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                reason="network namespaces need root and iproute2")

PEERS = 300
MSGS = 3
# An idle peer's bytes on the endpoint they all connect to (438 with 1,000
# peers, bench/crowd.py; here 410 raw, 492-546 UDP; 549 and more while its
# stream was taken at connect). The sanitizer's allocator adds its own.
IDLE_MAX = 800


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_three_hundred_peers(wire):
    prog = os.path.join(BUILD, "tests", "fmx_crowd")
    env = dict(os.environ, FMX_NET_WIRE=wire, FMX_ENDPOINT_MAX="256")
    hosts = Hosts(3, "t%d" % (os.getpid() % 1000))
    try:
        rss0, idle, outs, _ = crowd.stage(hosts, prog, env, PEERS, 2, 0, 64, True)
        assert idle["partners"] == PEERS, idle
        assert all(o["failed"] == 0 for o in outs), outs
        assert sanitized() or (idle["rss_kib"] - rss0) * 1024 <= IDLE_MAX * PEERS, (rss0, idle)
        _, active, outs, _ = crowd.stage(hosts, prog, env, PEERS, 2, MSGS, 64, False)
        assert active["partners"] == PEERS, active
        assert sum(o["sent"] for o in outs) == PEERS * MSGS and all(o["failed"] == 0 for o in outs), outs
        assert active["received"] == PEERS * MSGS, active
    finally:
        hosts.close()


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_peers_vanish_in_a_crowd(wire):
    """300 peers sent to one endpoint; a process holding 75 of them is
    killed; the endpoint then calls every peer back (synchronous sends): the
    75 fail as unreachable once FMX_NET_TIMEOUT_MS passes (no hang), the
    other 225 are answered."""
    prog = os.path.join(BUILD, "tests", "fmx_crowd")
    env = dict(os.environ, FMX_NET_WIRE=wire, FMX_ENDPOINT_MAX="256", FMX_NET_TIMEOUT_MS="3000")
    hosts = Hosts(3, "v%d" % (os.getpid() % 1000))
    try:
        _, active, outs, called = crowd.stage(hosts, prog, env, PEERS, 2, 1, 64, False, kill=1)
        assert active["received"] == PEERS, active
        assert called["called"] == PEERS, called
        assert called["answered"] == PEERS - PEERS // 4 and called["failed"] == PEERS // 4, called
        assert called["error"] == "Remote endpoint unreachable", called
    finally:
        hosts.close()
