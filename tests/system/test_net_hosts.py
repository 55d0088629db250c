# SPDX-License-Identifier: MIT
"""Hosts by name (as root, in network namespaces; skipped otherwise): each
namespace gets a hostname of its own (a UTS namespace), the peer table is
filled by discovery on the wire where no FMX_PEERS file is given, fmx_info
prints it, and fmx_perf --client takes a hostname."""
import json
import os
import shutil
import time

import pytest

from netns import PERF, pair1500  # noqa: F401 (fixture)
from sysutil import BUILD

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip") or not shutil.which("unshare"),
                                reason="network namespaces need root, iproute2 and unshare")

INFO = os.path.join(BUILD, "fmx_info")


def named(host, argv):
    """argv run under hostname `host` (a UTS namespace of its own)."""
    return ["unshare", "-u", "sh", "-c", 'hostname "$0" && exec "$@"', host] + argv


def communicate(p, timeout=60):
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out, err


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_discovery(pair1500, wire):
    """A server in b named fxhost-b; in a, without a peer file, fmx_info
    finds it by a query on the wire, and fmx_perf --client fxhost-b runs.
    A name nobody answers fails at once with a clear error."""
    env = {"FMX_NET_WIRE": wire, "FMX_NET_DISCOVER_MS": "300", "FMX_PEERS": ""}
    srv = pair1500.popen(pair1500.b, named("fxhost-b", [PERF, "pingpong", "--sizes", "8,64K", "--verify", "--server",
                                                        "--timeout", "60"]), env)
    try:
        time.sleep(0.3)
        rc, out, err = communicate(pair1500.popen(pair1500.a, named("fxhost-a", [INFO, "--json"]), env))
        assert rc == 0, out + err
        info = json.loads(out)
        peers = {p["name"]: p for p in info["peers"]}
        assert peers["fxhost-a:0"]["source"] == "this host", peers
        assert peers["fxhost-a:0"]["mac"] == pair1500.mac_a, peers
        assert peers["fxhost-b:0"]["source"] == "discovered", peers
        assert peers["fxhost-b:0"]["mac"] == pair1500.mac_b, peers
        assert info["discovered"] >= 1, info
        board = [f for f in info["interfaces"] if f["board"]]
        assert len(board) == 1 and board[0]["mac"] == pair1500.mac_a and board[0]["mtu"] == 1500, info
        assert board[0]["udp"] and board[0]["raw"], board

        rc, out, err = communicate(pair1500.popen(pair1500.a, [PERF, "pingpong", "--sizes", "8,64K", "--verify",
                                                               "--client", "fxhost-b", "--timeout", "60"], env))
        assert rc == 0, out + err
        assert len([l for l in out.splitlines() if l.split() and l.split()[0] in ("8", "64K")]) == 2, out
        rc, sout, serr = communicate(srv)
        assert rc == 0, sout + serr

        t0 = time.monotonic()
        rc, out, err = communicate(pair1500.popen(pair1500.a, [PERF, "pingpong", "--sizes", "8", "--client",
                                                               "no-such-host", "--timeout", "10"], env))
        assert rc != 0 and "no-such-host" in err, out + err
        assert time.monotonic() - t0 < 10
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def test_peer_file_wins(pair1500, tmp_path):
    """With FMX_PEERS, the file is the table: nothing is asked on the wire,
    its names resolve, its bad lines are skipped and said."""
    peers = tmp_path / "peers"
    peers.write_text("# two hosts\n%s filehost:0\nnot-a-mac bad:0\n" % pair1500.mac_b)
    env = {"FMX_PEERS": str(peers), "FMX_NET_DISCOVER_MS": "300"}
    srv = pair1500.popen(pair1500.b, named("fxhost-b", [PERF, "pingpong", "--sizes", "8", "--server",
                                                        "--timeout", "60"]), env)
    try:
        time.sleep(0.3)
        rc, out, err = communicate(pair1500.popen(pair1500.a, [INFO, "--json"], env))
        assert rc == 0, out + err
        info = json.loads(out)
        names = {p["name"]: p for p in info["peers"]}
        assert names["filehost:0"] == {"mac": pair1500.mac_b, "name": "filehost:0", "source": "file"}, names
        assert "fxhost-b:0" not in names and info["discovered"] == 0, info
        assert "1 line(s) skipped" in err, err
        rc, out, err = communicate(pair1500.popen(pair1500.a, [PERF, "pingpong", "--sizes", "8", "--client",
                                                               "filehost", "--timeout", "60"], env))
        assert rc == 0, out + err
    finally:
        communicate(srv)
