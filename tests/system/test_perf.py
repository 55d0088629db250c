# SPDX-License-Identifier: MIT
"""fmx_perf's kernels (pingpong, bw, msgrate, alltoall, overlap) over fmx, and the same
kernels over a real MPI (fmx_perf_mpi under mpirun): every byte verified,
same JSON either way. Behaviour only: no timing is asserted."""
import json
import os
import shutil
import signal
import subprocess
import time

import pytest

from sysutil import BUILD, run

KEYS = {"kernel", "np", "size", "iters", "latency_us", "bandwidth_MBps", "engine", "library"}


def rows_of(p):
    assert p.returncode == 0, p.stdout + p.stderr
    rows = [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]
    for r in rows:
        assert KEYS <= set(r), r
    return rows


def perf(*args, env=None):
    return run([os.path.join(BUILD, "fmx_perf")] + list(args) + ["--json", "--quiet"], env)


def test_bw_window_verify():
    rows = rows_of(perf("bw", "--sizes", "0,1K,64K,3M", "--iters", "32", "--window", "8", "--verify"))
    assert [r["size"] for r in rows] == [0, 1024, 65536, 3 << 20]
    assert all(r["kernel"] == "bw" and r["np"] == 2 and r["library"].startswith("fmx") for r in rows)
    assert rows[-1]["engine"] in ("cma", "ring", "coop", "vmsplice")  # auto: FMX_ADAPT tries them all


def test_msgrate_window_verify():
    """msgrate is bw counted in messages: window 64 unless given, a rate per
    size, every message checked."""
    rows = rows_of(perf("msgrate", "--sizes", "0,8,1K", "--iters", "640", "--verify"))
    assert [r["size"] for r in rows] == [0, 8, 1024]
    for r in rows:
        assert r["kernel"] == "msgrate" and r["iters"] == 640 and r["engine"] == "eager"
        assert r["msgrate"] == pytest.approx(1e6 / r["latency_us"], rel=0.01)
    p = run([os.path.join(BUILD, "fmx_perf"), "msgrate", "--sizes", "8", "--iters", "64"])
    assert p.returncode == 0 and "window 64" in p.stdout and "rate(msg/s)" in p.stdout, p.stdout


@pytest.mark.parametrize("np_", [2, 3, 5])
def test_alltoall_verify(np_):
    rows = rows_of(perf("alltoall", "--np", str(np_), "--sizes", "0,8,100K,1M", "--iters", "6",
                        "--verify"))
    assert [r["size"] for r in rows] == [0, 8, 100 << 10, 1 << 20]
    for r in rows:
        assert r["np"] == np_ and r["min_us"] <= r["max_us"] and r["latency_us"] == r["max_us"]
        assert r["latency_us"] > 0


def test_alltoall_ring_engine():
    rows = rows_of(perf("alltoall", "--np", "3", "--sizes", "2M", "--iters", "4", "--verify",
                        "--engine", "ring"))
    assert rows[0]["engine"] == "ring"


TRIED = "large receives moved by an engine FMX_ADAPT tried beside the one in use"
BY_CMA, BY_RING = "large messages moved by cma", "large messages moved by ring"


def test_exchange_takes_one_copy():
    """Both ranks send 3 MiB to each other at once (alltoall of 2): each
    receive is half an exchange, taken by cma (the receiver's one copy)
    and timed by nobody. Only the very first may be matched before its
    receiver sent (the RTS waited unexpected): that one takes the
    topology's rule. A ping-pong of the same size is no exchange: FMX_ADAPT
    tries the engines there (and shows whether cma runs here at all).
    FMX_BULK still forces an engine. Every byte is verified."""
    iters = 30
    p = perf("pingpong", "--sizes", "3M", "--iters", str(iters), "--verify", "--counters")
    rows_of(p)
    if not any(counters_of(p.stderr, rank).get(BY_CMA) for rank in (0, 1)):
        pytest.skip("cma is refused here: %s" % p.stderr[-400:])
    assert all(counters_of(p.stderr, rank).get(TRIED, 0) > 0 for rank in (0, 1)), p.stderr
    p = perf("alltoall", "--sizes", "3M", "--iters", str(iters), "--verify", "--counters")
    rows_of(p)
    for rank in (0, 1):
        c = counters_of(p.stderr, rank)
        assert c.get(BY_RING, 0) <= 1 and TRIED not in c, p.stderr
        assert c[BY_CMA] + c.get(BY_RING, 0) == c["rendezvous messages received"] >= iters, p.stderr
    p = perf("alltoall", "--sizes", "3M", "--iters", "6", "--verify", "--counters", env={"FMX_BULK": "ring"})
    rows_of(p)
    assert all(BY_CMA not in counters_of(p.stderr, rank) for rank in (0, 1)), p.stderr


@pytest.mark.parametrize("kernel", [["pingpong"], ["bw", "--window", "8"], ["alltoall", "--np", "3"]])
@pytest.mark.parametrize("env", [{}, {"FMX_CMA": "0"}], ids=["cma-on", "cma-off"])
def test_vmsplice_engine(kernel, env):
    # vmsplice needs no ptrace rights: FMX_CMA=0 must not change the engine
    rows = rows_of(perf(*kernel, "--sizes", "1M,3M", "--iters", "6", "--verify", "--engine", "vmsplice", env=env))
    assert [r["size"] for r in rows] == [1 << 20, 3 << 20]
    # bw and alltoall have several transfers per peer in flight: the others go ring
    assert all(r["engine"] in ({"vmsplice"} if kernel[0] == "pingpong" else {"vmsplice", "ring"}) for r in rows)


@pytest.mark.parametrize("kernel", [["pingpong"], ["bw", "--window", "4"], ["alltoall", "--np", "3"]])
@pytest.mark.parametrize("engine", ["auto", "cma", "coop", "ring", "offload"])
def test_fmx_mem_buffers_every_engine(kernel, engine):
    """Buffers from fmx_mem_alloc (--mem fmx): every byte arrives with every
    engine; auto takes coop, which copies through the peer's mapped memory
    (cma, through the mapping too, while another coop transfer holds the
    channel: in a window of sends)."""
    args = kernel + ["--mem", "fmx", "--sizes", "0,100K,1000001,5M", "--iters", "4", "--verify"]
    if engine != "auto":
        args += ["--engine", engine]
    rows = rows_of(perf(*args))
    assert [r["size"] for r in rows] == [0, 102400, 1000001, 5 << 20]
    if engine == "auto" and kernel[0] == "pingpong":
        assert rows[-1]["engine"] == "coop"
    elif engine == "auto" and kernel[0] == "bw":
        assert rows[-1]["engine"] in ("coop", "cma")


def test_overlap_reports_both_sides():
    rows = rows_of(perf("overlap", "--sizes", "4K,1M", "--iters", "10"))
    for r in rows:
        assert r["kernel"] == "overlap"
        for k in ("t_compute_us", "t_total_us", "overlap", "t_copy_send_us", "t_total_send_us",
                  "overlap_send"):
            assert k in r, r
        # Ttotal covers at least the computation it contains.
        assert r["t_total_us"] >= r["t_compute_us"] * 0.99
        assert r["t_compute_us"] >= r["latency_us"]


def test_overlap_fixed_compute():
    """--compute US: both sides compute that long, whatever their Tcopy
    (two builds then compute alike); refused by the other kernels and the
    single-process modes, and 0 is no length."""
    rows = rows_of(perf("overlap", "--sizes", "64K", "--iters", "5", "--compute", "300"))
    assert rows[0]["t_compute_us"] == pytest.approx(300.0)
    assert rows[0]["t_total_us"] >= 300 * 0.99 and rows[0]["t_total_send_us"] >= 300 * 0.99
    for bad in (["pingpong", "--compute", "5"], ["copylimit", "--compute", "5"], ["overlap", "--compute", "0"]):
        p = run([os.path.join(BUILD, "fmx_perf")] + bad)
        assert p.returncode == 2 and "--compute" in p.stderr, (bad, p.stderr)


OFFLOADED = "large transfers (receives, ring sends) handed to an offload channel"


def test_ping_pong_keeps_its_transfers():
    """A ping-pong of messages past FMX_OFFLOAD_THRESHOLD (no --verify: its
    checks are time away from fmx): each rank is in a wait or about to
    enter one, so channel 0 takes none of its transfers. It took 8-18 of 44
    per run when a rank preempted before its wait's first poll, or one
    whose last wait ended its watch, looked away (progress.c, app_away);
    a few stay allowed for a rank preempted between two calls. Nor is
    channel 0 woken at every post and wait's end to find the rank back in
    a wait: most of those wakes are skipped (progress.c, progress_kick;
    each rank sent 2 per round trip before, 7-9 of 84 now; on a loaded VM
    one run skipped 39 and sent 22, and main's build failed the old bound
    of twice as many 1 run in 10)."""
    for _ in range(3):
        p = perf("pingpong", "--sizes", "6M", "--iters", "40", "--counters", env={"FMX_OFFLOAD_THRESHOLD": "4M"})
        rows_of(p)
        assert sum(counters_of(p.stderr, rank).get(OFFLOADED, 0) for rank in (0, 1)) <= 2, p.stderr
        for rank in (0, 1):
            c = counters_of(p.stderr, rank)
            assert c.get(KICKS_SKIPPED, 0) > c.get(KICKS, 0), p.stderr


KICKS = "wakes of offload channel 0 to look at this endpoint (a large transfer watched)"
KICKS_SKIPPED = "wakes of offload channel 0 skipped: its last looks found the application back in a wait"


def test_table_output_and_progress_line():
    p = run([os.path.join(BUILD, "fmx_perf"), "alltoall", "--sizes", "64K", "--iters", "5"])
    assert p.returncode == 0, p.stderr
    assert "# fmx_perf alltoall: 2 ranks" in p.stdout
    assert "min(us)" in p.stdout and "64K" in p.stdout
    assert "[fmx_perf] alltoall 64K: 5 iterations done" in p.stderr


def counters_of(stderr, rank):
    """--counters lines of one rank: label -> value."""
    out, tag = {}, "fmx_perf: rank %d: " % rank
    for line in stderr.splitlines():
        if line.startswith(tag):
            label, _, value = line[len(tag):].rstrip().rpartition(" ")
            out[label.strip()] = int(value)
    return out


ALIASED = "large receives moved by ring, not a kernel copy, for 4K aliasing"
REFUSED = "connections refused (key, uid, malformed)"


def test_ranks_started_at_once_connect_cleanly():
    """fmx_perf's ranks open any endpoint id and connect to each other at
    the same moment. The one that found an id taken asked its holder who
    it is (a connection that sends nothing): the holder neither counts that
    as a refused connect nor logs it as malformed. Both ends connecting at
    once (two links) loses no byte of any class."""
    p = perf("pingpong", "--sizes", "0,8,33K,300K,3M", "--iters", "40", "--verify", "--counters",
             env={"FMX_LOG": "info"})
    rows_of(p)
    assert "FMX-CONN-MALFORMED" not in p.stderr, p.stderr
    for rank in (0, 1):
        c = counters_of(p.stderr, rank)
        assert c.get("connections accepted or made", 0) >= 1, p.stderr
        assert REFUSED not in c, p.stderr


HANDED = "records handed to the cache all cores share (CLDEMOTE): replies a peer waits for"


def cpu_has(flag):
    with open("/proc/cpuinfo") as f:
        return any(line.startswith("flags") and flag in line.split() for line in f)


def need_cores_and(flag, what):
    """Skip unless the CPU has `flag` and each of two ranks has a core."""
    if not cpu_has(flag):
        pytest.skip("this CPU has no " + what)
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: the ranks share a core")


def rank_counts(label, *args, env=None):
    """fmx_perf ARGS with every byte verified: the counter `label` of ranks
    0 and 1 (None where a rank has none), and the stderr to show."""
    p = perf(*args, "--verify", "--counters", env=env)
    rows_of(p)
    return [counters_of(p.stderr, rank).get(label) for rank in (0, 1)], p.stderr


def test_replies_handed_to_the_shared_cache():
    """Where the CPU has CLDEMOTE and each rank has a core, a ping-pong's
    replies go to the cache all cores share: both ranks count them, and
    every byte of every class arrives. A stream's messages do not go, only
    its acks (replies). FMX_HANDOVER=0 hands nothing over."""
    need_cores_and("cldemote", "CLDEMOTE")
    iters = 400
    got, err = rank_counts(HANDED, "pingpong", "--sizes", "8,1K,4K,40K", "--iters", str(iters))
    assert all((c or 0) >= iters for c in got), err
    got, err = rank_counts(HANDED, "bw", "--sizes", "1K", "--iters", str(iters), "--window", "16")
    assert (got[0] or 0) < iters // 16, err  # at most the few exchanges around the windows
    got, err = rank_counts(HANDED, "pingpong", "--sizes", "8,1K", "--iters", str(iters), env={"FMX_HANDOVER": "0"})
    assert got == [None, None], err


OWNED = "ring cells taken for writing before the record that fills them (PREFETCHW)"


def test_ring_cells_taken_ahead():
    """Where the CPU has PREFETCHW and each rank has a core, a ping-pong's
    replies of more than one cell have the cells of the next taken for
    writing once the peer has read them, a stream's at once; one-cell
    replies plan nothing; every byte arrives; FMX_OWN_AHEAD=0 takes none."""
    need_cores_and("3dnowprefetch", "PREFETCHW")
    iters = 400
    got, err = rank_counts(OWNED, "pingpong", "--sizes", "1K,4K,40K", "--iters", str(iters))
    assert all((c or 0) >= iters for c in got), err
    got, err = rank_counts(OWNED, "pingpong", "--sizes", "0,8", "--iters", str(iters))
    assert all((c or 0) < iters for c in got), err
    got, err = rank_counts(OWNED, "bw", "--sizes", "1K", "--iters", str(iters), "--window", "16")
    assert (got[0] or 0) >= iters, err
    got, err = rank_counts(OWNED, "pingpong", "--sizes", "1K,4K", "--iters", str(iters), env={"FMX_OWN_AHEAD": "0"})
    assert got == [None, None], err


BOXED = "tiny records sent through a link's duplex box (the line both directions share by turns)"


def test_tiny_ping_pong_through_the_box():
    """A ping-pong of tiny messages goes through the link's duplex box,
    each rank's sends nearly all of them (every byte verified); longer
    messages do not; FMX_DUPLEX_BOX=0 sends none there."""
    iters = 400
    got, err = rank_counts(BOXED, "pingpong", "--sizes", "0,8,16", "--iters", str(iters))
    assert all((c or 0) >= 3 * iters - 16 for c in got), err
    got, err = rank_counts(BOXED, "pingpong", "--sizes", "17,1K", "--iters", str(iters))
    assert all((c or 0) < iters for c in got), err  # only the tiny control records around them
    got, err = rank_counts(BOXED, "pingpong", "--sizes", "8", "--iters", str(iters), env={"FMX_DUPLEX_BOX": "0"})
    assert got == [None, None], err


def offsets_0_16(alias):
    """Ping-pong with rank 0's buffers on a page and rank 1's 16 bytes in,
    every byte verified, measured costs that make cma the cheapest, and
    FMX_COPY_ALIAS as given: the environment and both ranks' counters, or
    a skip where cma is refused."""
    env = {"FMX_RNDV_THRESHOLD": "64K", "FMX_COST_CMA": "L2:1:90000", "FMX_COST_RING": "L2:1:1000",
           "FMX_COPY_ALIAS": alias}
    p = perf("pingpong", "--sizes", "100001,1M", "--iters", "4", "--buf-offset", "0,16", "--verify",
             "--counters", env=env)
    rows_of(p)
    r0, r1 = counters_of(p.stderr, 0), counters_of(p.stderr, 1)
    if not r0.get(BY_CMA):
        pytest.skip("cma is refused here: %s" % p.stderr[-400:])
    return env, p, r0, r1


def test_buf_offset_steers_off_the_kernel_copy():
    """--buf-offset 0,16: rank 1's buffers sit 16 bytes into their pages,
    rank 0's on page boundaries. Every byte arrives; rank 1's receives (16
    bytes past the sender's buffer modulo 4 KiB: 4K aliasing) go ring even
    though measured costs make cma the cheapest, rank 0's (4080 past) stay
    cma; pointers on either side of the window are this rule's only input.
    FMX_COPY_ALIAS=1 steps around the stall whatever this CPU measured."""
    env, p, r0, r1 = offsets_0_16("1")
    assert r1.get(ALIASED, 0) == r1["rendezvous messages received"] > 0, p.stderr
    assert BY_CMA not in r1 and ALIASED not in r0, p.stderr
    # The same offsets on both sides: nothing to step around.
    p = perf("pingpong", "--sizes", "100001", "--iters", "4", "--buf-offset", "16", "--verify", "--counters",
             env=env)
    rows_of(p)
    assert ALIASED not in counters_of(p.stderr, 1), p.stderr


def test_buf_offset_without_the_aliasing_rule():
    """FMX_COPY_ALIAS=0 (a CPU whose rep movsb does not stall on 4K
    aliasing): the same offsets steer nothing, every receive stays cma and
    every byte arrives."""
    _, p, r0, r1 = offsets_0_16("0")
    assert ALIASED not in r0 and ALIASED not in r1, p.stderr
    assert r1[BY_CMA] == r1["rendezvous messages received"] > 0, p.stderr


def test_aliasing_rule_is_measured():
    """Unset, FMX_COPY_ALIAS is measured on this CPU at start: fmx_info
    --config shows 0 or 1 with the source 'measured'; set, the user's value
    stands."""
    p = run([os.path.join(BUILD, "fmx_info"), "--config"])
    line = [l for l in p.stdout.splitlines() if l.startswith("FMX_COPY_ALIAS ")]
    assert len(line) == 1 and line[0].split()[1] in ("0", "1") and line[0].split()[2] == "measured", p.stdout
    p = run([os.path.join(BUILD, "fmx_info"), "--config"], env={"FMX_COPY_ALIAS": "1"})
    line = [l for l in p.stdout.splitlines() if l.startswith("FMX_COPY_ALIAS ")]
    assert line[0].split()[1:3] == ["1", "environment"], p.stdout


TRIALS = "medium or rendezvous: trials of the other for a size class (receiver)"
TO_RNDV = "medium or rendezvous: size classes moved to rendezvous by measurement"
TO_MEDIUM = "medium or rendezvous: size classes moved back to the medium class by measurement"


def config_size(name):
    """A size tunable's value in force here (fmx_info --config), in bytes."""
    out = run([os.path.join(BUILD, "fmx_info"), "--config"]).stdout
    text = [l.split()[1] for l in out.splitlines() if l.startswith(name + " ")][0]
    shift = {"K": 10, "M": 20, "G": 30}.get(text[-1], 0)
    return int(text.rstrip("KMG")) << shift


def medium_sizes():
    """Two sizes of the medium class here (above one fragment, below the
    rendezvous threshold), or a skip."""
    frag, thr = config_size("FMX_EAGER_FRAG"), config_size("FMX_RNDV_THRESHOLD")
    sizes = [n for n in (frag + 1000, 2 * frag + 5000, 4 * frag + 3) if n < thr]
    if len(sizes) < 2:
        pytest.skip("no medium sizes here: fragment %d, rendezvous from %d" % (frag, thr))
    return sizes[:2]


@pytest.mark.parametrize("kernel", ["pingpong", "bw"])
def test_class_choice_measured(kernel):
    """Messages of the medium class: each receiver times them, tries
    rendezvous for their size class after 8 (the sender switches on its
    HINT) and keeps the faster. Every byte arrives, in order, whichever
    class each message took; both receivers ran trials."""
    sizes = medium_sizes()
    p = perf(kernel, "--sizes", ",".join(map(str, sizes)), "--iters", "300", "--verify", "--counters")
    rows_of(p)
    for rank in (0, 1) if kernel == "pingpong" else (1,):
        c = counters_of(p.stderr, rank)
        assert c.get(TRIALS, 0) >= 2, p.stderr
        assert c.get(TO_RNDV, 0) + c.get(TO_MEDIUM, 0) <= c[TRIALS], p.stderr


@pytest.mark.parametrize("env", [{"FMX_ADAPT": "0"}, {"FMX_RNDV_THRESHOLD": "1M"}, {"FMX_BULK": "cma"}])
def test_class_choice_off(env):
    """The topology's rule alone (FMX_ADAPT=0), a threshold or an engine
    set: the receiver asks nothing, the medium class stays."""
    sizes = medium_sizes()
    p = perf("pingpong", "--sizes", ",".join(map(str, sizes)), "--iters", "100", "--verify", "--counters",
             env=env)
    rows = rows_of(p)
    assert all(r["engine"] == "eager" for r in rows), rows
    for rank in (0, 1):
        assert TRIALS not in counters_of(p.stderr, rank), p.stderr


@pytest.mark.parametrize("args", [
    ["alltoall", "--np", "1"],
    ["msgrate", "--np", "3"],
    ["pingpong", "--np", "3"],
    ["alltoall", "--np", "9999"],
    ["bw", "--window", "0"],
    ["overlap", "--cores", ""],
    ["bogus"],
    ["pingpong", "--sizes", "1,,x"],
    ["pingpong", "--rank", "0"],
    ["pingpong", "--no-spawn", "--rank", "2"],
    ["pingpong", "--mem", "huge"],
    ["pingpong", "--buf-offset", "4096"],
    ["pingpong", "--buf-offset", "16,"],
    ["pingpong", "--buf-offset", ",16"],
    ["pingpong", "--buf-offset", "x"],
    ["copylimit", "--buf-offset", "16"],
])
def test_bad_input_is_a_usage_error(args):
    p = run([os.path.join(BUILD, "fmx_perf")] + args)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Try 'fmx_perf --help'" in p.stderr


def test_rank_killed_mid_alltoall_fails_fast():
    """A rank that dies ends the run with an error, never a hang."""
    p = subprocess.Popen([os.path.join(BUILD, "fmx_perf"), "alltoall", "--np", "3", "--sizes",
                          "1M", "--iters", "100000", "--quiet", "--timeout", "20"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        ranks = []
        deadline = time.time() + 20
        while len(ranks) < 3 and time.time() < deadline:
            out = subprocess.run(["pgrep", "-P", str(p.pid)], capture_output=True, text=True)
            ranks = out.stdout.split()
            time.sleep(0.1)
        assert len(ranks) == 3
        time.sleep(0.5)
        os.kill(int(ranks[1]), signal.SIGKILL)
        t0 = time.time()
        _, err = p.communicate(timeout=25)
        assert p.returncode == 1
        # The parent reports the first failure it reaps: the killed rank, or a
        # survivor that saw the death first (its pidfd) and gave up.
        assert "killed by signal 9" in err or "Remote endpoint unreachable" in err, err
        assert time.time() - t0 < 20  # ended by the death, not by the watchdog
    finally:
        if p.poll() is None:
            p.kill()


MPIRUN = shutil.which("mpirun.openmpi")
PERF_MPI = os.path.join(BUILD, "fmx_perf_mpi")
mpi = pytest.mark.skipif(not (MPIRUN and os.path.exists(PERF_MPI)),
                         reason="Open MPI or fmx_perf_mpi not installed/built")
# Open MPI's own allocations are not ours to leak-check under ASan.
MPI_ENV = {"ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def mpirun(np_, *args):
    return run([MPIRUN, "--allow-run-as-root", "-np", str(np_), PERF_MPI] + list(args)
               + ["--json", "--quiet"], MPI_ENV)


@mpi
def test_mpi_same_kernels_same_json():
    sizes = "0,8,64K,1M"
    ours = rows_of(perf("pingpong", "--sizes", sizes, "--iters", "20", "--verify"))
    theirs = rows_of(mpirun(2, "pingpong", "--sizes", sizes, "--iters", "20", "--verify"))
    assert [r["size"] for r in theirs] == [r["size"] for r in ours]
    assert [r["iters"] for r in theirs] == [r["iters"] for r in ours]
    assert all(r["engine"] == "mpi" and r["library"].startswith("Open MPI") for r in theirs)
    assert all(set(a) == set(b) for a, b in zip(ours, theirs))


@mpi
@pytest.mark.parametrize("kernel,np_", [("bw", 2), ("msgrate", 2), ("alltoall", 3), ("overlap", 2)])
def test_mpi_kernels_verify(kernel, np_):
    extra = ["--verify"] if kernel != "overlap" else []
    rows = rows_of(mpirun(np_, kernel, "--sizes", "0,4K,2M", "--iters", "8", *extra))
    assert [r["size"] for r in rows] == [0, 4096, 2 << 20]
    assert all(r["np"] == np_ and r["kernel"] == kernel for r in rows)


@mpi
def test_mpi_rejects_native_options():
    p = run([MPIRUN, "--allow-run-as-root", "-np", "2", PERF_MPI, "--engine", "cma"], MPI_ENV)
    assert p.returncode != 0
    assert "mpirun sets ranks and binding" in p.stderr


@pytest.mark.parametrize("routine", ["auto", "memcpy", "regular", "movsb", "avx2", "avx2_nt",
                                     "avx512_nt", "avx2_nt_clean", "bogus"])
def test_ring_engine_every_copy_routine(routine):
    """The ring engine's copy-out with each routine (forced, or auto with a
    low non-temporal threshold) delivers every byte, odd sizes included; an
    unknown or unusable routine is a warning and the automatic choice."""
    # rendezvous from 64K: the default is one L2, 1M on some hosts
    env = {"FMX_COPY": routine, "FMX_COPY_NT_THRESHOLD": "1M", "FMX_RNDV_THRESHOLD": "64K"}
    p = run([os.path.join(BUILD, "fmx_perf"), "pingpong", "--engine", "ring", "--sizes",
             "100001,1000001,3M", "--iters", "3", "--verify", "--json", "--quiet"], env)
    rows = rows_of(p)
    assert all(r["engine"] == "ring" for r in rows if r["size"] > 200000)
    if routine == "bogus":  # refused by the table of tunables, which names it
        assert "FMX-CFG-VALUE: FMX_COPY='bogus'" in p.stderr
