#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Foreign packets at fmx endpoints: raw frames with our EtherType to a
board's MAC, and UDP datagrams to its endpoint port, shaped like ours and
not (random bytes, a good magic with garbage after it, every type with
lengths that lie, data and pull answers for sessions and transfers that do
not exist, unasked connect replies, nacks and host replies). Seeded; runs
for --seconds. The endpoints must drop them all, count them, and keep
serving their real partners (tests/system/test_net_faults.py).

  inject.py --dev IF --mac MAC [--ip IP --port P] --seed S --seconds T"""
import argparse
import random
import socket
import struct
import sys
import time

ETHERTYPE = 0x86DF
HDR = struct.Struct(">HBBHHIIIIHH")  # magic, version, type, dst_ep, src_ep, dst_s, src_s, seq, ack, len, flags


def packet(rnd):
    kind = rnd.randrange(6)
    if kind == 0:  # noise
        return bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 200)))
    if kind == 1:  # our magic, then noise
        return b"FX" + bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 100)))
    t = rnd.randrange(0, 12)
    body = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(0, 120)))
    ln = len(body) if kind != 2 else rnd.randrange(0, 65536)  # kind 2: a length that lies
    ver = 7 if kind != 3 else rnd.randrange(0, 256)  # NET_VERSION
    flags = 0 if rnd.random() < 0.8 else rnd.randrange(0, 65536)
    h = HDR.pack(0x4658, ver, t, rnd.choice((0, 1, 0xffff, rnd.randrange(65536))), rnd.randrange(65536),
                 rnd.getrandbits(32), rnd.getrandbits(32), rnd.getrandbits(32), rnd.getrandbits(32), ln & 0xffff,
                 flags)
    return h + body


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dev", required=True)
    ap.add_argument("--mac", required=True)
    ap.add_argument("--ip")
    ap.add_argument("--port", type=int, default=18008)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--seconds", type=float, default=2.0)
    o = ap.parse_args()
    rnd = random.Random(o.seed)
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_DGRAM, socket.htons(ETHERTYPE))
    dst = bytes(int(x, 16) for x in o.mac.split(":"))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM) if o.ip else None
    sent = 0
    end = time.monotonic() + o.seconds
    while time.monotonic() < end:
        p = packet(rnd)
        try:
            raw.sendto(p if len(p) else b"\0", (o.dev, ETHERTYPE, 0, 0, dst))
            if udp:
                udp.sendto(p, (o.ip, o.port + rnd.randrange(2)))
            sent += 1
        except OSError:
            pass
        if sent % 64 == 0:
            time.sleep(0.001)  # a stream, not a flood: the real partners share the line
    print("inject: %d packets sent (seed %d)" % (sent, o.seed), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
