#!/usr/bin/env python3
"""The net protocol on the simulated switch (tests/sim, BUILD/tests/fmx_sim):
incasts at up to 10,000 hosts and alltoalls at up to 1,000, which no machine here can hold
as namespaces. Each run is virtual time and counts, the same on every
machine with the same seed: one run per configuration, no reps.

  python3 bench/sim.py [--build DIR] [--quick]

Prints each run's JSON line, then the markdown table of docs/performance.md
("Simulated"). --quick: the runs of at most 101 hosts (check-bench).
Exit status: 0; 1 when a run did not deliver every message intact; 2 usage.
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

RUNS = [
    "incast --hosts 1001 --msgs 4 --size 65536",
    "incast --hosts 1001 --msgs 4 --size 8",
    "incast --hosts 10001 --msgs 1 --size 65536",
    "incast --hosts 10001 --msgs 1 --size 8",
    "incast --hosts 101 --msgs 4 --size 65536 --loss-ppm 10000",
    "incast --hosts 4 --msgs 16 --size 1048576 --inflight 8 --rate-gbps 1 --buffer 65536",
    "incast --hosts 2 --msgs 16 --size 1048576 --inflight 8 --rate-gbps 1 --buffer 32768",
    "alltoall --hosts 16 --msgs 4 --size 65536",
    "alltoall --hosts 100 --msgs 1 --size 4096",
    "alltoall --hosts 1000 --msgs 1 --size 64",
]


def hosts_of(args):
    a = args.split()
    return int(a[a.index("--hosts") + 1])


def row(args, d):
    note = " (%.0f%% lost)" % (d["loss_ppm"] / 1e4) if d["loss_ppm"] else ""
    return "| `%s`%s | %s | %.2f | %s | %s / %s / %s | %s | %s / %s | %s / %s | %s | %.2g |" % (
        args, note, format(round(d["virtual_us"]), ","), d["port_share"], format(d["port_drops"], ","),
        format(d["queue_p50"], ","), format(d["queue_p99"], ","), format(d["max_queue"], ","), format(d["bdp"], ","),
        format(d["resent"] + d["gap_resent"], ","), format(d["pull_reasked"], ","),
        format(round(d["lat_p50_us"]), ","), format(round(d["lat_p99_us"]), ","), format(d["heap_per_partner"], ","),
        d["wall_s"])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reps", type=int, default=1, help="ignored: a simulated run is the same every time")
    a = ap.parse_args()
    prog = os.path.join(a.build, "tests", "fmx_sim")
    if not os.path.exists(prog):
        print("[sim] %s not built (FMX_BUILD_TESTS=OFF?): skipped" % prog, file=sys.stderr)
        return 0
    rows, bad = [], 0
    for args in RUNS:
        if a.quick and hosts_of(args) > 101:
            continue
        p = subprocess.run([prog] + args.split(), capture_output=True, text=True, timeout=900)
        if not p.stdout.strip():
            print("[sim] %s: no result (exit %d): %s" % (args, p.returncode, p.stderr[-500:]), file=sys.stderr)
            bad += 1
            continue
        print(p.stdout.strip(), flush=True)
        d = json.loads(p.stdout.strip().splitlines()[-1])
        if p.returncode != 0 or not d["complete"]:
            print("[sim] %s: not every message arrived intact" % args, file=sys.stderr)
            bad += 1
        rows.append(row(args, d))
    print("\n| run (`build/tests/fmx_sim ...`) | virtual time (us) | share | dropped at the port "
          "| queue found, p50 / p99 / most (B) | BDP measured (B) | resent / asked again | latency p50 / p99 (us) | heap per partner (B) "
          "| wall (s) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print("\n".join(rows))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
