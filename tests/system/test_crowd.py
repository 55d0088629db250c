# SPDX-License-Identifier: MIT
"""Many peers on one endpoint (bench/crowd.py's bed, smaller): 300
endpoints on two namespaced hosts connect at once to one endpoint on a
third, some waiting in fmx_connect and some not, and send to it; every
connection is made, every message arrives, nothing fails, on both wires
(as root; skipped otherwise)."""
import os
import shutil
import sys

import pytest

from sysutil import BUILD

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))
import crowd  # noqa: E402
from hosts import Hosts  # noqa: E402

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                reason="network namespaces need root and iproute2")

PEERS = 300
MSGS = 3


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_three_hundred_peers(wire):
    prog = os.path.join(BUILD, "tests", "fmx_crowd")
    env = dict(os.environ, FMX_NET_WIRE=wire, FMX_ENDPOINT_MAX="256")
    hosts = Hosts(3, "t%d" % (os.getpid() % 1000))
    try:
        _, idle, outs = crowd.stage(hosts, prog, env, PEERS, 2, 0, 64, True)
        assert idle["partners"] == PEERS, idle
        assert all(o["failed"] == 0 for o in outs), outs
        _, active, outs = crowd.stage(hosts, prog, env, PEERS, 2, MSGS, 64, False)
        assert active["partners"] == PEERS, active
        assert sum(o["sent"] for o in outs) == PEERS * MSGS and all(o["failed"] == 0 for o in outs), outs
        assert active["received"] == PEERS * MSGS, active
    finally:
        hosts.close()
