# SPDX-License-Identifier: MIT
"""The net transport between network namespaces joined by a veth pair (as
root; skipped otherwise): fmx_perf --server in one, --client in the other,
raw frames and UDP, MTU 1500 and 9000, every byte verified; loss and
duplication from nftables (this kernel has no netem); a wrong key; a peer
killed mid-transfer. Names are unique per test run; every run is bounded."""
import contextlib
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from test_counters import running
from netns import PERF, SYS, Bridge, nft, sh, pair1500, pair9000, perf, rows, run_ranks  # noqa: F401 (fixtures)

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"),
                                reason="network namespaces need root and iproute2")

EXCHANGE = ["exchange", "--base", "100", "--msgs", "12", "--max-size", str(4 << 20), "--segs", "1", "--trunc", "1",
            "--late-recv", "100"]


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_three_hosts_bridge(wire):
    """Three namespaces on a bridge, every rank to every other: segment
    lists on both sides, truncated receives, receives posted late
    (unexpected), synchronous sends, 0 B to 4 MiB (eager, medium and
    pulled), every byte checked."""
    b = Bridge(3)
    try:
        outs = run_ranks(list(zip(b.ns, b.macs)), EXCHANGE, {"FMX_NET_WIRE": wire})
        assert all('"received":24' in o for o in outs), outs
        assert any('"engine":"pull"' in o for o in outs), outs
    finally:
        b.close()


def test_mixed_job(pair1500):
    """Ranks 0 and 1 in one namespace, rank 2 in the other: shm between 0
    and 1, net to and from 2, in one job; every byte checked."""
    a, b = (pair1500.a, pair1500.mac_a), (pair1500.b, pair1500.mac_b)
    outs = run_ranks([a, a, b], EXCHANGE, {})
    assert all('"received":24' in o for o in outs), outs


def test_allocation_failures_across_hosts(pair1500):
    """FMX_FAULT_ALLOC=N fails the Nth allocation on a message path, walked
    over a job across hosts: a partner's pull state, taken at its first
    record either way (a record pushed then waits, one received is not
    taken and comes again), its medium slots and an unexpected message's
    buffer (the connection is given up, and a NACK tells the peer, whose
    requests with us fail at once instead of waiting for its probe).
    Every rank exits, every send and matched receive completes (an error
    completion allowed: --tolerate 1), no byte is wrong."""
    a, b = (pair1500.a, pair1500.mac_a), (pair1500.b, pair1500.mac_b)
    argv = ["exchange", "--base", "100", "--msgs", "12", "--max-size", str(256 << 10), "--segs", "1",
            "--tolerate", "1"]
    errors = 0
    for n in range(1, 9):
        outs = run_ranks([a, b], argv + ["--seed", str(n)], {"FMX_FAULT_ALLOC": str(n), "FMX_LOG": "error"})
        errors += sum(json.loads(line).get("errors", 0) for o in outs for line in o.splitlines()
                      if line.startswith("{"))
    assert errors > 0, "no injected failure reached a message path"


SIZES = "0,1,8,63,64,1K,1431,1432,1433,4K,64K,1M,4M"


@pytest.mark.parametrize("wire", ["raw", "udp", "raw-frames", "raw-noring"])
def test_pingpong_mtu1500(pair1500, wire):
    """raw-frames: the answers to pulls in raw frames too (FMX_NET_BULK=wire);
    raw-noring: frames read with recvmmsg, not from the receive ring."""
    env = {"FMX_NET_WIRE": wire.split("-")[0]}
    if wire == "raw-frames":
        env["FMX_NET_BULK"] = "wire"
    if wire == "raw-noring":
        env["FMX_NET_RING"] = "0"
    out = perf(pair1500, "pingpong", SIZES + ",16M", env, iters=3)
    assert len(rows(out)) == len(SIZES.split(",")) + 1, out


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_pingpong_mtu9000(pair9000, wire):
    out = perf(pair9000, "pingpong", SIZES + ",8903,8904,8905,64M", {"FMX_NET_WIRE": wire}, iters=2)
    assert len(rows(out)) == len(SIZES.split(",")) + 4, out


def test_udp_gro_only_while_pulling(pair1500):
    """The UDP wire's socket takes GSO trains whole (UDP_GRO) only while it
    pulls: GRO costs every datagram. Small messages, pulled ones, small
    ones again (GRO goes off after 64 packets with no pull), pulled again:
    every byte checked, and the client switched at least three times."""
    out = perf(pair1500, "pingpong", "8,1M,8,1M", {"FMX_NET_WIRE": "udp"}, iters=100, extra=("--counters",),
               want_err=True)
    assert len(rows(out)) == 4, out
    switches = [int(l.rsplit(None, 1)[1]) for l in out.splitlines()
                if "rank 0:" in l and "UDP receive GRO switched" in l]
    assert switches and switches[0] >= 3, out


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_stamps_only_while_pulling(pair1500, wire):
    """Arrivals are stamped by the kernel (SO_TIMESTAMPNS: the kernel then
    reads its clock for every packet the host receives) only while a
    transfer is pulled either way: the receiver times the network with
    them, the sender its hold of each PULL. Small messages, pulled ones,
    small ones again (stamps go off after 64 packets with no pull), pulled
    again: every byte checked, and each side switched its stamps on and
    off, then on again (the raw wire's receive ring stamps anyway: there
    the bulk socket switches)."""
    out = perf(pair1500, "pingpong", "8,1M,8,1M", {"FMX_NET_WIRE": wire}, iters=100, extra=("--counters",),
               want_err=True)
    assert len(rows(out)) == 4, out
    for rank in (0, 1):
        assert counter(out, rank, "net: arrival stamps switched on") >= 3, out


TRAINS = "net: GSO trains of an eager message's fragments"
TRAIN_READS = "net: reads of the bulk socket for the rest of a train"


def counter(out, rank, label):
    return sum(int(l.rsplit(None, 1)[1]) for l in out.splitlines() if "rank %d:" % rank in l and label in l)


@pytest.mark.parametrize("wire,window", [("udp", "256"), ("udp", "8"), ("raw", "256"), ("raw", "8")])
def test_eager_fragments_in_trains(pair1500, wire, window):
    """An eager message's fragments leave as one GSO send (a train) and the
    receiver's GRO takes it whole: on the UDP wire through its socket; on
    the raw wire the first in a frame (it tells the receiver to read its
    bulk socket) and the rest between the two bulk UDP sockets. Messages
    eager up to 60 KiB (FMX_NET_PULL_THRESHOLD), every byte checked; each
    side sent trains and pulled nothing. A window of 8 packets ends a train
    in the middle of a message (the rest leaves as the acks make room).
    With the answers to pulls in frames (FMX_NET_BULK=wire) the raw wire
    sends fragments one by one. On the raw wire the receiver reads its bulk
    socket after a train's head came; when crowded, only until the rest
    came (about once a train)."""
    env = {"FMX_NET_WIRE": wire, "FMX_NET_PULL_THRESHOLD": "61441", "FMX_NET_WINDOW": window}
    out = perf(pair1500, "pingpong", "8,4K,24K,60K,8", env, iters=30, extra=("--counters",), want_err=True)
    assert len(rows(out)) == 5, out
    for rank in (0, 1):
        assert counter(out, rank, TRAINS) >= 2 * 30, out
        assert counter(out, rank, "large messages pulled") == 0, out
        if wire == "udp":
            assert counter(out, rank, "UDP receive GRO switched") >= 1, out
        else:
            assert counter(out, rank, TRAIN_READS) > 0, out
    if wire == "raw":
        # Crowded, the rest of a train is read once its head came and until
        # it came: about once a train, not at every pass.
        out = perf(pair1500, "pingpong", "24K", dict(env, FMX_CROWDED="on"), iters=30, extra=("--counters",),
                   want_err=True)
        for rank in (0, 1):
            trains = counter(out, 1 - rank, TRAINS)
            assert trains >= 30 and counter(out, rank, TRAIN_READS) <= 8 * trains + 8, out
    if wire == "raw" and window == "256":
        env["FMX_NET_BULK"] = "wire"
        out = perf(pair1500, "pingpong", "24K", env, iters=10, extra=("--counters",), want_err=True)
        assert counter(out, 0, TRAINS) == 0 and counter(out, 0, "eager sends in fragments") >= 10, out


NAPS = "channel 0 naps on the net socket"


def naps(out, rank):
    """Channel 0's naps on the net socket of a rank (fmx_perf --counters)."""
    return sum(int(l.rsplit(None, 1)[1]) for l in out.splitlines() if "rank %d:" % rank in l and NAPS in l)


@pytest.mark.parametrize("mode", ["on", "off"])
def test_net_progress_while_computing(pair1500, mode):
    """A 1 MiB message pulled across hosts while both sides compute
    (fmx_perf overlap, 2 ms between post and wait): with FMX_NET_PROGRESS=on
    offload channel 0 sleeps on the socket and moves the pull for the
    receiver and the sender (its naps counted on both); off, nobody does.
    Every byte checked either way."""
    out = perf(pair1500, "overlap", "1M", {"FMX_NET_PROGRESS": mode}, iters=10,
               extra=("--compute", "2000", "--counters"), want_err=True)
    assert len(rows(out)) == 1, out
    if mode == "on":
        assert naps(out, 0) > 0 and naps(out, 1) > 0, out
    else:
        assert naps(out, 0) == 0 and naps(out, 1) == 0, out


def test_bw_window(pair1500):
    """Windows of messages in flight: the send window fills and drains."""
    out = perf(pair1500, "bw", "8,4K,256K", {}, iters=20)
    assert len(rows(out)) == 3, out


def test_ring_full(pair1500):
    """The smallest receive ring (two blocks, 82 frames at MTU 1500) under
    windows of messages and pulls answered in raw frames: the kernel drops
    what finds no free slot, and fmx sends or asks for it again; every byte
    checked. (The pulls' budget is capped at half the ring, so what
    overflows it is mostly the eager windows, resent.)"""
    env = {"FMX_NET_WIRE": "raw", "FMX_NET_RING": "1", "FMX_NET_BULK": "wire", "FMX_NET_RTO_US": "500"}
    out = perf(pair1500, "bw", "8,4K,64K,1M", env, iters=20, extra=["--counters"], want_err=True)
    assert len(rows(out)) == 4, out
    assert "pulled frames asked for again" in out or "net: packets resent" in out, out


@pytest.mark.skipif(not shutil.which("nft"), reason="nftables not installed")
@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_loss_and_duplication(pair1500, wire):
    """10% loss on b's ingress, 10% duplication on a's egress (NET-NOTES):
    every byte arrives exactly once (--verify), and the counters... the
    rules' own counters show packets were dropped and duplicated."""
    # The raw wire's pulls are answered over UDP: both lose and double.
    match = ["ether", "type", "!=", "arp"] if wire == "raw" else ["meta", "l4proto", "udp"]
    nft(pair1500.b, "add", "table", "netdev", "t")
    nft(pair1500.b, "add", "chain", "netdev", "t", "c",
        "{ type filter hook ingress device %s priority 0; }" % pair1500.vb)
    nft(pair1500.b, "add", "rule", "netdev", "t", "c", *match, "numgen", "random", "mod", "100", "<", "10",
        "counter", "drop")
    nft(pair1500.a, "add", "table", "netdev", "t")
    nft(pair1500.a, "add", "chain", "netdev", "t", "e",
        "{ type filter hook egress device %s priority 0; }" % pair1500.va)
    nft(pair1500.a, "add", "rule", "netdev", "t", "e", *match, "meta", "mark", "!=", "0x1", "numgen", "random",
        "mod", "100", "<", "10", "meta", "mark", "set", "0x1", "counter", "dup", "to", pair1500.va)
    out = perf(pair1500, "pingpong", "0,8,1K,4K,64K,1M,16M", {"FMX_NET_WIRE": wire, "FMX_NET_RTO_US": "500"},
               iters=10, extra=["--counters"], want_err=True)
    assert len(rows(out)) == 7, out
    assert "pulled frames asked for again" in out, out  # lost answers to pulls were asked again
    dropped = sh("ip", "netns", "exec", pair1500.b, "nft", "list", "ruleset").stdout
    dup = sh("ip", "netns", "exec", pair1500.a, "nft", "list", "ruleset").stdout
    assert "packets 0 " not in dropped and "counter packets" in dropped, dropped
    assert "packets 0 " not in dup and "counter packets" in dup, dup


@pytest.mark.skipif(not shutil.which("nft"), reason="nftables not installed")
def test_random_loss_keeps_pulls_on_the_bulk_socket(pair1500):
    """10% of the frames lost at both hosts' ingress (UDP and raw alike):
    a pull asked again twice with nothing heard asks once for an answer on
    the wire (a probe for a blocked bulk port), and the answer comes there.
    That alone moved every answer to the wire for the hold, 200 ms and
    more: 2 runs in 5 of this ping-pong moved all their answers there, at
    a sixth of the speed. Now, while on the wire, a run every two waits is
    asked at the bulk socket, and its answer there ends the hold: most
    answers stay on the bulk socket, and every hold begun but the last
    was ended so. Frames asked again stay fewer than half those sent
    (a pull whose CTS was lost asked its 4 MiB again at every wait while
    the stream's resend wait ran, 60 ms once: 357,000 frames asked again
    for 158,000 sent, in a version never committed)."""
    for ns, dev in ((pair1500.a, pair1500.va), (pair1500.b, pair1500.vb)):
        nft(ns, "add", "table", "netdev", "t")
        nft(ns, "add", "chain", "netdev", "t", "c", "{ type filter hook ingress device %s priority 0; }" % dev)
        nft(ns, "add", "rule", "netdev", "t", "c", "ether", "type", "!=", "arp", "numgen", "random", "mod", "100",
            "<", "10", "counter", "drop")
    out = perf(pair1500, "pingpong", "16M", {"FMX_NET_WIRE": "raw"}, iters=20, extra=("--counters",), want_err=True)
    assert len(rows(out)) == 1, out
    for rank in (0, 1):
        served = counter(out, 1 - rank, "net: frames sent for peers' pulls")
        on_wire = counter(out, 1 - rank, "net: frames sent on the wire for pulls that asked so")
        assert served > 0 and on_wire * 10 < served, out
        assert counter(out, rank, "net: pulled frames asked for again") * 2 < served, out
        holds = counter(out, rank, "net: partners asked to answer pulls on the wire")
        back = counter(out, rank, "net: partners whose pull answers came back to our bulk socket")
        assert back >= holds - 1, out


def test_wrong_key(pair1500):
    srv = pair1500.popen(pair1500.b, [PERF, "pingpong", "--sizes", "8", "--server", "--timeout", "10"], {})
    try:
        time.sleep(0.3)
        r = pair1500.popen(pair1500.a, [SYS, "connect", "--target", "0", "--key", "12345"],
                           {"FMX_SYS_NIC": pair1500.mac_b})
        out, err = r.communicate(timeout=30)
        assert out.strip() == "Remote endpoint bad connection key", out + err
    finally:
        srv.kill()
        srv.wait()


def dial(pair, wire, target, key, dial_ms=5000, race=0):
    """fmx_sys dial from a to endpoint `target` of b (sends posted before
    the handshake is done), while endpoint 7 of b serves: its JSON line."""
    env = {"FMX_NET_WIRE": wire}
    srv = subprocess.Popen(["ip", "netns", "exec", pair.b, SYS, "serve", "--base", "7"], env=dict(os.environ, **env),
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().strip() == "READY"
        cli = pair.popen(pair.a, [SYS, "dial", "--target", str(target), "--key", str(key), "--msgs", "16",
                                  "--dial-ms", str(dial_ms), "--race", str(race)],
                         dict(env, FMX_SYS_NIC=pair.mac_b))
        out, err = cli.communicate(timeout=60)
        assert cli.returncode == 0, out + err
    finally:
        srv.kill()
        srv.wait()
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_connect_without_waiting(pair1500, wire):
    """fmx_connect_async gives the address at once; 16 sends posted before
    the handshake is done wait for it and arrive; fmx_connect to the same
    peer afterwards gives the same address, and so does one by a thread
    at the same time as the first (either order). A wrong key fails the sends
    with the peer's answer (and fmx_connect, after, with its own); an
    endpoint that is not open answers nothing, and the sends fail once
    --dial-ms passes: the caller was not held in the connect."""
    r = dial(pair1500, wire, 7, 0x5eed)
    assert r == {"dial": "Success", "connect": "Success", "same": 1, "sent": 16, "error": "Success", "raced": 0}, r
    # a thread connecting, waiting, at the same time gets the same address
    for _ in range(3):
        r = dial(pair1500, wire, 7, 0x5eed, race=1)
        assert r["raced"] == 1 and r["same"] == 1 and r["sent"] == 16, r
    r = dial(pair1500, wire, 7, 12345)
    assert r["dial"] == "Success" and r["sent"] == 0, r
    assert r["error"] == r["connect"] == "Remote endpoint bad connection key", r
    r = dial(pair1500, wire, 9, 0x5eed, dial_ms=1500)
    assert r["dial"] == "Success" and r["sent"] == 0, r
    assert r["error"] == "Remote endpoint unreachable" and r["connect"] == "Timeout", r


PACED = "net: peers' pulls that waited for room in our socket (pacing)"
RESENT = "net: packets resent after a timeout (retransmits)"


def test_answers_paced_behind_a_slow_uplink(pair1500):
    """Each host's own uplink a 1 Gb/s token bucket with a deep queue (8
    MB: a NIC's, which drops nothing): the sender's answers to pulls would
    wait there, with its acks behind them. It paces them (they wait in fmx
    while its socket holds a block or more, SIOCOUTQ), every byte of 64
    messages of 1 MiB arrives, and the receiver's timer resends fewer
    than 5 records a message (14-180 in 9 runs; 1,391 with pacing and the
    backoff undone at every ack, 537 before pacing)."""
    for ns, dev in ((pair1500.a, pair1500.va), (pair1500.b, pair1500.vb)):
        sh("ip", "netns", "exec", ns, "tc", "qdisc", "replace", "dev", dev, "root", "tbf", "rate", "1gbit", "burst",
           "32kb", "limit", "8mb")
    out = perf(pair1500, "bw", "1M", {"FMX_NET_WIRE": "udp"}, iters=64, extra=("--counters",), want_err=True)
    assert len(rows(out)) == 1, out
    assert counter(out, 0, PACED) > 0, out
    assert counter(out, 1, RESENT) < 5 * 64, out


SERVED = "net: frames sent for peers' pulls"
WIRE_SERVED = "net: frames sent on the wire for pulls that asked so"
DUPLICATES = "net: duplicate packets dropped"


@pytest.mark.parametrize("wire", ["udp", "raw"])
def test_a_sender_away_answers_each_frame_once(pair1500, wire):
    """fmx_perf bw checks every byte: the sender fills each 16 MiB buffer
    between its sends, out of fmx for milliseconds while its receiver pulls
    the message before, and the receiver's timer asks again for all it
    misses. Those asks waited in the sender's socket behind the first ones
    and were answered too, twice the receiver's budget on its way at once:
    its socket overflowed, and its asks again overflowed the sender's (UDP
    570-730 MB/s, raw 130-155, against 5,200 without the checks; 0.5-1
    duplicate a frame). Now a PULL that came before the sender answered
    its frames gets none of them, the other pulls from a silent sender
    wait, and beside the raw wire the answers stay on the bulk socket:
    each frame comes about once."""
    out = perf(pair1500, "bw", "16M", {"FMX_NET_WIRE": wire}, iters=32, extra=("--counters",), want_err=True)
    assert len(rows(out)) == 1, out
    served = counter(out, 0, SERVED)
    assert served > 0, out
    assert counter(out, 1, DUPLICATES) < served // 20, out
    assert counter(out, 0, WIRE_SERVED) < served // 10, out


@contextlib.contextmanager
def late_server(pair, env, until):
    """fmx_sys serve on the pair's second host, endpoint 7, out of fmx for
    1.5 s after it opens (so nothing answers a connect meanwhile), until
    `until` messages came; killed if still there."""
    srv = subprocess.Popen(["ip", "netns", "exec", pair.b, SYS, "serve", "--base", "7", "--late-recv", "1500",
                            "--until", str(until)], env=dict(os.environ, **env),
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert srv.stdout.readline().strip() == "READY"
        yield srv
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def client_line(pair, env, args):
    """fmx_sys ARGS on the pair's first host, toward the second's board:
    its last line, as JSON (it must exit 0)."""
    cli = pair.popen(pair.a, [SYS] + args, dict(env, FMX_SYS_NIC=pair.mac_b))
    try:
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait()
    assert cli.returncode == 0, out + err
    return json.loads(out.strip().splitlines()[-1])


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_close_sends_what_waits_for_a_handshake(pair1500, wire):
    """A client dials (fmx_connect_async), posts 4 sends and closes its
    endpoint at once, while the server is out of fmx for 1.5 s and so
    answers no connect: the close waits for the handshake and the sends,
    and the server gets all 4 (fabtests' fi_msg_inject does this; it lost
    its message when the server answered late). A dial nobody answers ends
    the close once --dial-ms passes."""
    env = {"FMX_NET_WIRE": wire}
    with late_server(pair1500, env, 4) as srv:
        for target, dial_ms in ((7, 60000), (9, 1500)):
            assert client_line(pair1500, env, ["dial", "--target", str(target), "--key", str(0x5eed), "--msgs", "4",
                                               "--dial-ms", str(dial_ms), "--leave", "1"]) == \
                {"dial": "Success", "posted": 4}
        out, err = srv.communicate(timeout=60)
        assert json.loads(out.strip().splitlines()[-1]) == {"received": 4}, out + err


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_iconnect_does_not_wait_for_the_handshake(pair1500, wire):
    """fmx_iconnect to another host returns with its request pending while
    the server is out of fmx (1.5 s, so nothing answers its CONNECT), and
    progress completes it: with success once the server answers (the
    address then takes a message), with FMX_TIMEOUT at the endpoint's
    request timeout when nobody holds the id, and fmx_cancel takes a
    pending one back while its handshake goes on (a blocking connect then
    finds it)."""
    env = {"FMX_NET_WIRE": wire}
    cases = ((7, 60000, 0, {"pending": 1, "result": "Success", "cancelled": 0, "sent": 1}),
             (7, 60000, 1, {"pending": 1, "result": "Success", "cancelled": 1, "sent": 1}),
             (9, 1500, 0, {"pending": 1, "result": "Timeout", "cancelled": 0, "sent": 0}))
    with late_server(pair1500, env, 2) as srv:
        for target, ms, cancel, want in cases:
            assert client_line(pair1500, env, ["iconnect", "--target", str(target), "--key", str(0x5eed),
                                               "--dial-ms", str(ms), "--cancel", str(cancel)]) == want
        out, err = srv.communicate(timeout=60)
        assert json.loads(out.strip().splitlines()[-1]) == {"received": 2}, out + err


def test_peer_killed_mid_transfer(pair1500):
    """The server dies while 16 MiB messages stream: the client's requests
    fail within FMX_NET_TIMEOUT_MS; it exits with an error, never hangs.
    While it streams, fmx_counters --pid reads its counters, growing."""
    env = {"FMX_NET_TIMEOUT_MS": "1000"}
    srv = pair1500.popen(pair1500.b, [PERF, "bw", "--sizes", "16M", "--iters", "100000", "--server",
                                      "--timeout", "120"], env)
    time.sleep(0.2)
    cli = pair1500.popen(pair1500.a, [PERF, "bw", "--sizes", "16M", "--iters", "100000", "--client",
                                      pair1500.mac_b, "--timeout", "120"], env)
    time.sleep(1.5)
    # the client's counters, read while it streams (fmx_counters --pid)
    sent = []
    for _ in range(2):
        rc, eps, err = running(cli.pid)
        assert rc == 0 and len(eps) == 1, (eps, err)
        sent.append(list(eps.values())[0]["counters"].get("net: frames sent for peers' pulls", 0))
        time.sleep(0.2)
    assert 0 < sent[0] < sent[1], sent
    srv.send_signal(signal.SIGKILL)
    srv.wait()
    t0 = time.monotonic()
    out, err = cli.communicate(timeout=60)
    assert cli.returncode != 0, out
    assert "unreachable" in err.lower() or "closed" in err.lower() or "session" in err.lower(), err
    assert time.monotonic() - t0 < 30


def test_server_killed_while_client_waits_for_reply(pair1500):
    """A ping-pong of 8 B across hosts: the client's send completes at
    once, so when the server dies the client is waiting for a reply. Its
    receive names its one peer, and fails when that peer is found dead: the
    client exits with an error within FMX_NET_TIMEOUT_MS, not after
    --timeout (120 s; a receive from anyone would wait that out)."""
    env = {"FMX_NET_TIMEOUT_MS": "1000"}
    srv = pair1500.popen(pair1500.b, [PERF, "pingpong", "--sizes", "8", "--iters", "100000000", "--server",
                                      "--timeout", "120"], env)
    time.sleep(0.2)
    cli = pair1500.popen(pair1500.a, [PERF, "pingpong", "--sizes", "8", "--iters", "100000000", "--client",
                                      pair1500.mac_b, "--timeout", "120"], env)
    time.sleep(1.0)
    assert cli.poll() is None and srv.poll() is None
    srv.send_signal(signal.SIGKILL)
    srv.wait()
    t0 = time.monotonic()
    out, err = cli.communicate(timeout=60)
    assert cli.returncode != 0, out
    assert "unreachable" in err.lower() or "closed" in err.lower() or "session" in err.lower(), err
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_unmatched_send_receiver_killed(pair1500, wire):
    """A 4 MiB send (rendezvous) that the receiver has seen and acked but
    never matched, when the receiver dies: nothing is in flight, so only
    the probes of a partner we wait for find out. The send fails with an
    error (FMX_NET_TIMEOUT_MS 1 s: a probe after 250 ms of silence, failed
    1 s later); it does not wait forever."""
    places = [(pair1500.a, pair1500.mac_a), (pair1500.b, pair1500.mac_b)]
    env = dict(os.environ, FMX_NET_WIRE=wire, FMX_NET_TIMEOUT_MS="1000",
               FMX_SYS_NICS=",".join(m for _, m in places))
    argv = ["unmatched", "--base", "60", "--size", str(4 << 20), "--nprocs", "2"]
    procs = [subprocess.Popen(["ip", "netns", "exec", ns, SYS] + argv + ["--rank", str(r)], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for r, (ns, _) in enumerate(places)]
    try:
        assert procs[1].stdout.readline().strip() == "READY", procs[1].stderr.read()
        time.sleep(0.6)  # probes answered while it lives, unanswered once it is gone
        procs[1].send_signal(signal.SIGKILL)
        procs[1].wait()
        out, err = procs[0].communicate(timeout=60)
        assert procs[0].returncode == 3, out + err
        assert '"code":"Remote endpoint unreachable"' in out or "unreachable" in out.lower(), out + err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


@pytest.mark.parametrize("wire", ["raw", "udp"])
def test_mismatched_mtu(pair1500, wire):
    """a's interface at MTU 9000, b's at 1500 (a misconfigured host): each
    side tells its MTU when connecting and both send within the smaller,
    so eager messages and pulls arrive; before, a's jumbo frames were
    dropped by b's interface and the exchange timed out."""
    sh("ip", "-n", pair1500.a, "link", "set", pair1500.va, "mtu", "9000")
    out = perf(pair1500, "pingpong", "0,8,1433,4K,9000,64K,1M,16M",
               {"FMX_NET_WIRE": wire, "FMX_NET_TIMEOUT_MS": "2000"}, iters=3)
    assert len(rows(out)) == 8, out


def test_peers_on_two_subnets(pair1500):
    """a at 10.98.x, b at 10.99.x on one Ethernet (raw frames cross, IP
    does not): each refuses the other's UDP address for its pulls' answers
    (not a host of its subnet; a third party's address would be refused the
    same way) and sends them in raw frames. Before, 1 MiB and up stalled
    until the timeout: the answers went to an address b could not reach."""
    sh("ip", "-n", pair1500.a, "addr", "flush", "dev", pair1500.va)
    sh("ip", "-n", pair1500.a, "addr", "add", "10.98.7.1/24", "dev", pair1500.va)
    out = perf(pair1500, "pingpong", "0,8,64K,1M,4M", {"FMX_NET_WIRE": "raw", "FMX_NET_TIMEOUT_MS": "5000"}, iters=3,
               want_err=True)
    assert len(rows(out)) == 5, out
    assert out.count("FMX-NET-BULK-ADDR") == 2 and "10.98.7.1 for its pulls' answers" in out, out


@pytest.mark.skipif(not shutil.which("nft"), reason="needs nftables")
@pytest.mark.parametrize("where", ["in", "out", "reject"])
def test_pulls_when_the_bulk_port_is_blocked(pair1500, where):
    """A firewall stops every UDP packet, the bulk sockets' among them; raw
    frames pass. in: dropped at both hosts' ingress; each side, its pull
    asked three times with no answer at its bulk socket, asks the partner
    to answer on the wire. out: dropped in both hosts' output hook, so each
    sender's bulk socket refuses its answers (EPERM) and it sends them on
    the wire at once. reject: refused at the hosts' input with an ICMP
    error, which the sender's bulk socket reports (IP_RECVERR) at a later
    send: on the wire too. Each side then asks on the wire (logged, counted
    on both sides), and 64 KiB to 4 MiB arrive, every byte checked. Before,
    a pull waited for its answers until FMX_NET_TIMEOUT_MS failed the
    partner. (64 namespaced hosts in one kernel lose UDP sends the same
    way: their neighbour table is full.)"""
    for ns, dev in ((pair1500.a, pair1500.va), (pair1500.b, pair1500.vb)):
        if where == "in":
            nft(ns, "add", "table", "netdev", "t")
            nft(ns, "add", "chain", "netdev", "t", "c", "{ type filter hook ingress device %s priority 0; }" % dev)
            nft(ns, "add", "rule", "netdev", "t", "c", "meta", "l4proto", "udp", "counter", "drop")
        else:
            nft(ns, "add", "table", "inet", "t")
            nft(ns, "add", "chain", "inet", "t", "c",
                "{ type filter hook %s priority 0; }" % ("output" if where == "out" else "input"))
            nft(ns, "add", "rule", "inet", "t", "c", "meta", "l4proto", "udp", "counter",
                "drop" if where == "out" else "reject")
    out = perf(pair1500, "pingpong", "64K,1M,4M", {"FMX_NET_WIRE": "raw", "FMX_NET_TIMEOUT_MS": "5000"}, iters=5,
               extra=("--counters",), want_err=True)
    assert len(rows(out)) == 3, out
    assert "FMX-NET-BULK-SILENT" in out, out
    refused = "net: pulled frames our bulk socket refused, sent on the wire"
    for rank in (0, 1):
        assert counter(out, rank, "net: partners asked to answer pulls on the wire") >= 1, out
        assert counter(out, rank, "net: frames sent on the wire for pulls that asked so") >= 1, out
        assert (counter(out, rank, refused) > 0) == (where != "in"), out
