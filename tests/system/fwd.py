#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A frame forwarder between two interfaces (this kernel has no netem):
every frame that arrives on one leaves on the other after a delay, and a
share of them later still, so that they overtake each other. Seeded, so a
failure can be replayed. Run in a namespace of its own between two others
(tests/system/test_net_faults.py); it stops after --seconds or on SIGTERM.

  fwd.py IF_A IF_B --delay-us 1000 --reorder 5 --seed 7 [--seconds 120]
         [--desync-after N]

Every frame waits delay-us; reorder percent of them wait up to 2 x
delay-us more (so later frames pass them). The interfaces' offloads must be
off (GSO trains would arrive whole; checksums left to hardware would arrive
unfilled): the test does that with ethtool.

--desync-after N: from the (N+1)th fmx DATA frame (raw wire) that comes
from IF_A on, its seq goes 2^20 further, and the seq of every fmx NACK
from IF_B comes back by as much: B then sees A's stream start elsewhere
than its own record of it (two ends of one connection out of step), and
A sees B's NACKs name A's own packets."""
import argparse
import heapq
import random
import select
import signal
import socket
import sys
import time

ETH_P_ALL = 0x0003
PACKET_OUTGOING = 4
ETHERTYPE = 0x86DF
DATA, NACK = 3, 5
SEQ_AT = 14 + 16  # an fmx header's seq, behind the Ethernet header
SHIFT = 1 << 20


def shifted(frame, by):
    """frame with its fmx header's seq moved by `by`."""
    seq = (int.from_bytes(frame[SEQ_AT:SEQ_AT + 4], "big") + by) % (1 << 32)
    return frame[:SEQ_AT] + seq.to_bytes(4, "big") + frame[SEQ_AT + 4:]


def fmx_type(frame):
    if len(frame) < SEQ_AT + 4 or int.from_bytes(frame[12:14], "big") != ETHERTYPE:
        return None
    return frame[17]


def open_if(name):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((name, 0))
    s.setsockopt(socket.SOL_SOCKET, 33, 8 << 20)  # SO_RCVBUFFORCE (root): bursts of a pull
    s.setsockopt(socket.SOL_SOCKET, 32, 8 << 20)  # SO_SNDBUFFORCE
    s.setblocking(False)
    return s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--delay-us", type=int, default=1000)
    ap.add_argument("--reorder", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=120.0)
    ap.add_argument("--desync-after", type=int, default=-1)
    o = ap.parse_args()
    rnd = random.Random(o.seed)
    socks = {o.a: open_if(o.a), o.b: open_if(o.b)}
    other = {socks[o.a]: socks[o.b], socks[o.b]: socks[o.a]}
    stop = [False]
    signal.signal(signal.SIGTERM, lambda *_: stop.__setitem__(0, True))
    held = []  # (due, n, out socket, frame)
    n = moved = late = data = shifts = 0
    end = time.monotonic() + o.seconds
    delay = o.delay_us / 1e6
    print("fwd: %s <-> %s delay %d us reorder %.1f%% seed %d" % (o.a, o.b, o.delay_us, o.reorder, o.seed),
          flush=True)
    while not stop[0] and time.monotonic() < end:
        wait = max(0.0, held[0][0] - time.monotonic()) if held else 0.05
        r, _, _ = select.select(list(other), [], [], min(wait, 0.05))
        now = time.monotonic()
        for s in r:
            for _ in range(256):
                try:
                    frame, addr = s.recvfrom(65536)
                except BlockingIOError:
                    break
                if addr[2] == PACKET_OUTGOING:
                    continue  # our own sends, seen again
                if o.desync_after >= 0:
                    t = fmx_type(frame)
                    if s is socks[o.a] and t == DATA:
                        data += 1
                        if data > o.desync_after:
                            frame = shifted(frame, SHIFT)
                            shifts += 1
                    elif s is socks[o.b] and t == NACK:
                        frame = shifted(frame, -SHIFT)
                due = now + delay
                if rnd.random() * 100 < o.reorder:
                    due += rnd.random() * 2 * delay
                    late += 1
                n += 1
                heapq.heappush(held, (due, n, other[s], frame))
        now = time.monotonic()
        while held and held[0][0] <= now:
            _, _, out, frame = heapq.heappop(held)
            try:
                out.send(frame)
                moved += 1
            except OSError:
                pass  # a frame the other side cannot take is lost, as on a wire
    print("fwd: %d frames forwarded, %d held back, %d put out of step" % (moved, late, shifts), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
