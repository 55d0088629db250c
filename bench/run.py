#!/usr/bin/env python3
"""`make bench`: fmx against its peers on one host, interleaved.

Rep 1 runs every configuration once (each of its kernels), rep 2 again, ...;
every run is on the same two cores with the same sizes. A run taken while
the machine carried foreign load above --busy is redone (at most
--max-reruns times) and marked busy if it stays so. Writes the raw runs and
the environment as JSON, then tables and plots (bench/report.py).

  python3 bench/run.py [--reps N] [--quick] [--check] [--only NAME,...]

Exit status: 0; 1 when a configuration that should have run produced no
numbers (with --check, also when one misses a kernel or a size); 2 usage.
"""
import argparse
import datetime
import json
import os
import platform
import shlex
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import machine  # noqa: E402
import peers    # noqa: E402
import report   # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
K, M = 1 << 10, 1 << 20
SIZES = {
    "full": {"pingpong": [0, 8, 64, K, 4 * K, 16 * K, 64 * K, 256 * K, M, 4 * M, 16 * M, 64 * M],
             "bw": [4 * K, 16 * K, 64 * K, 256 * K, M, 4 * M, 16 * M, 64 * M],
             "alltoall": [8, 64, K, 4 * K, 16 * K, 64 * K, 256 * K, M, 4 * M],
             "msgrate": [0, 8, 64, K],
             "alltoall-8": [4 * K, 64 * K, M], "alltoall-32": [4 * K, 64 * K, M]},
    "quick": {"pingpong": [0, 8, 64 * K, M], "bw": [64 * K, M], "alltoall": [8, 64 * K],
              "msgrate": [8], "alltoall-8": [4 * K], "alltoall-32": [4 * K]},
}


def log(msg):
    print("[bench] " + msg, file=sys.stderr, flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=int(os.environ.get("REPS", 3)))
    ap.add_argument("--quick", action="store_true", help="1 rep, few sizes and iterations, "
                    "output under BUILD/bench-quick, docs untouched, implies --check")
    ap.add_argument("--check", action="store_true",
                    help="fail unless every configuration gave every number or is skipped")
    ap.add_argument("--build", default=os.environ.get("BUILD", "build"))
    ap.add_argument("--impi", default=os.environ.get("IMPI_VENV", "/opt/fmx-bench/impi"))
    ap.add_argument("--ompi5", default=os.environ.get("OMPI5_VENV", "/opt/fmx-bench/ompi5"))
    ap.add_argument("--mpich", default=os.environ.get("MPICH_VENV", "/opt/fmx-bench/mpich"),
                    help="PyPI mpich's virtualenv (MPICH with libfabric, for the provider)")
    ap.add_argument("--busy", type=float, default=float(os.environ.get("BENCH_BUSY", 0.3)),
                    help="foreign load (cores) above which a run is redone (default 0.3)")
    ap.add_argument("--max-reruns", type=int, default=2)
    ap.add_argument("--iters", type=int, default=None,
                    help="iterations per size (default: each tool's own; quick: 200)")
    ap.add_argument("--only", default="", help="comma list of configuration names")
    ap.add_argument("--out", default=None, help="results directory")
    ap.add_argument("--docs", default=None,
                    help="Markdown file whose generated section to replace "
                    "(default: docs/performance.md for a full run, none for --quick)")
    args = ap.parse_args(argv)
    mode = "quick" if args.quick else "full"
    if args.quick:
        args.reps, args.check = 1, True
        args.max_reruns = min(args.max_reruns, 1)
        args.iters = args.iters or 200
    build = os.path.abspath(args.build)
    if not os.access(os.path.join(build, "fmx_perf"), os.X_OK):
        log("error: %s/fmx_perf not found: build fmx first (`make build`, or BUILD=DIR)" % build)
        return 1
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H%M")
    host = platform.node()
    if args.out:
        out_dir = os.path.abspath(args.out)
    else:
        out_dir = os.path.join(build, "bench-quick") if args.quick else os.path.join(ROOT, "bench", "results")
    docs = args.docs if args.docs is not None else (None if args.quick else os.path.join(ROOT, "docs", "performance.md"))
    img_dir = os.path.join(ROOT, "docs", "img") if docs else out_dir
    work = os.path.join(build, "bench")
    os.makedirs(work, exist_ok=True)
    os.makedirs(out_dir, exist_ok=True)

    cores = machine.bench_cores()
    ctx = {"build": build, "work": work, "cores": cores, "root": ROOT, "impi": args.impi,
           "ompi5": args.ompi5, "mpich_wheel": args.mpich, "quick": args.quick}
    env = machine.environment(build, args.impi)
    ctx["ucx_version"] = "UCX " + str(env["versions"].get("ucx"))
    ctx["impi_version"] = "Intel MPI " + str(env["versions"].get("impi_rt"))
    ctx["fi_version"] = "libfabric " + str(env["versions"].get("libfabric"))
    cfgs = peers.configurations(ctx)
    if args.only:
        keep = set(args.only.split(","))
        unknown = keep - {c.name for c in cfgs}
        if unknown:
            log("unknown configuration(s): %s (known: %s)" % (
                ",".join(sorted(unknown)), ",".join(c.name for c in cfgs)))
            return 2
        cfgs = [c for c in cfgs if c.name in keep]

    t_start = time.monotonic()
    state = {}
    for c in cfgs:
        st = c.prepare()
        state[c.name] = {"label": c.label, "note": c.note, "kernels": list(c.kernels),
                         "peer": c.peer, "status": "ok", "reason": None}
        if st:
            state[c.name]["status"], state[c.name]["reason"] = st
            log("%-18s %s: %s" % (c.name, st[0], st[1]))
    runs = []
    for rep in range(1, args.reps + 1):
        for c in cfgs:
            if state[c.name]["status"] != "ok":
                continue
            for kernel in c.kernels:
                if state[c.name]["status"] != "ok":
                    break
                sizes = SIZES[mode][kernel]
                for attempt in range(1 + args.max_reruns):
                    rec = {"config": c.name, "kernel": kernel, "rep": rep, "attempt": attempt,
                           "sizes": sizes, "iters": args.iters}
                    t0 = time.monotonic()
                    with machine.LoadMeter() as lm:
                        try:
                            rec["records"], cmd = c.run(kernel, sizes, args.iters,
                                                        60 if args.quick else 300)
                            rec["command"] = cmd if isinstance(cmd, str) else \
                                " ".join(shlex.quote(a) for a in cmd)
                            rec["error"] = None
                        except peers.RunError as e:
                            rec["records"], rec["error"] = [], str(e)
                    rec["wall_s"] = round(lm.wall, 3)
                    rec["load_cores"] = round(lm.load, 3)
                    rec["busy"] = lm.load > args.busy
                    runs.append(rec)
                    log("rep %d/%d %-16s %-8s %6.1f s  load %.2f core%s%s  [%.0f s]" % (
                        rep, args.reps, c.name, kernel, lm.wall, lm.load,
                        " (busy)" if rec["busy"] else "",
                        ("  ERROR " + rec["error"][:200]) if rec["error"] else "",
                        time.monotonic() - t_start))
                    if rec["error"] or not rec["busy"]:
                        break
                    if attempt < args.max_reruns:
                        time.sleep(1.0)     # let a burst of foreign load pass
                for r in runs:
                    if r["config"] == c.name and r["kernel"] == kernel and r["rep"] == rep:
                        r["final"] = r is runs[-1]
                if rec["error"]:
                    why = c.explain_failure()
                    st = state[c.name]
                    st["status"], st["reason"] = ("skipped", why) if why else \
                        ("failed", "%s: %s" % (kernel, rec["error"]))
                    log("%-18s %s: %s" % (c.name, st["status"], st["reason"]))

    problems = check(cfgs, state, runs, SIZES[mode], args.reps, strict=args.check)
    data = {"host": host, "date": stamp, "mode": mode, "reps": args.reps,
            "busy_threshold_cores": args.busy, "max_reruns": args.max_reruns,
            "cores": cores, "sizes": SIZES[mode], "iters": args.iters,
            "wall_s": round(time.monotonic() - t_start, 1),
            "environment": env, "configs": state, "runs": runs, "check_problems": problems}
    base = os.path.join(out_dir, "%s-%s" % (host, stamp))
    with open(base + ".json", "w") as f:
        json.dump(data, f, indent=1)
    md = report.write(data, base + ".md", img_dir, docs)
    log("results: %s.json, %s.md%s (%.0f s)" % (base, base, ", " + docs if docs else "",
                                                 time.monotonic() - t_start))
    if args.quick:
        print(md)
    for p in problems:
        log("CHECK: " + p)
    if problems:
        return 1
    log("check: every configuration ran or is skipped with a reason" if args.check else "done")
    return 0


def check(cfgs, state, runs, sizes, reps, strict):
    """Problems: configurations that should have run and did not (always), and
    with strict, any missing kernel/size/rep."""
    problems = []
    for c in cfgs:
        st = state[c.name]
        if st["status"] == "skipped":
            if not st["reason"]:
                problems.append("%s skipped without a reason" % c.name)
            continue
        if st["status"] == "failed":
            problems.append("%s failed: %s" % (c.name, st["reason"]))
            continue
        if not strict:
            continue
        for kernel in c.kernels:
            for rep in range(1, reps + 1):
                got = {r["size"] for run in runs if run["config"] == c.name and
                       run["kernel"] == kernel and run["rep"] == rep and run.get("final")
                       for r in run["records"] if r.get("kernel", kernel) == kernel}
                miss = [s for s in sizes[kernel] if s not in got]
                if miss:
                    problems.append("%s %s rep %d: no numbers for size(s) %s" % (
                        c.name, kernel, rep, ",".join(map(peers.fmt_size, miss))))
    return problems


if __name__ == "__main__":
    sys.exit(main())
