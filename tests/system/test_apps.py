# SPDX-License-Identifier: MIT
"""Application patterns with more ranks than cores, through the provider
under every MPI: the mini-app (tests/mpi/miniapp.c: a halo exchange with
computation between steps, an allreduce, an alltoall) with twice as many
ranks as the host has cores, on one host, and across namespaced hosts on a
bridge with one rank each. Each run completes; its checksum is the one
Open MPI's own shared memory gives; no alltoall byte is wrong; and the
ranks' counters show that their polls gave the core away (yields), which
is what keeps a crowded machine moving (docs/progress.md): without them,
LAMMPS took 3-7x longer on such runs (Open MPI's blocking send polls
fi_cq_read and never yields by itself)."""
import json
import os
import shutil
import subprocess
import tempfile
import threading

import pytest

from sysutil import BUILD, read_line, run
from test_mpis import VENVS, compile_cmd, env_of, launch_cmd, missing
from test_ofi import FI_ENV, MPIRUN, PROV_DIR, sanitized

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
MINIAPP = os.path.join(BUILD, "tests", "miniapp")
COUNTERS = os.path.join(BUILD, "fmx_counters")
YIELDS = "polls that gave the core away (sched_yield)"
# Twice the cores, at least 4, at most 8: ranks outnumber cores where the
# host has at most 4 hardware threads (fmx counts the host's, not this
# process's affinity).
CPUS = os.cpu_count() or 1
NP = max(4, min(8, 2 * CPUS))
# Long enough (0.1-0.2 s on 2 cores) for several of the 10 ms looks at the
# kernel's runnable tasks that tell namespaced hosts they share cores.
ARGS = ["--steps", "100", "--rows", "128", "--cols", "1024", "--a2a", "4096", "--a2a-every", "5"]

pytestmark = [
    pytest.mark.skipif(NP <= CPUS, reason="%d ranks would not outnumber this host's %d hardware threads" % (NP, CPUS)),
    pytest.mark.skipif(not os.path.exists(os.path.join(PROV_DIR, "libfmx-fi.so")),
                       reason="libfmx-fi.so not built (no libfabric-dev)"),
    pytest.mark.skipif(not (MPIRUN and os.path.exists(MINIAPP)), reason="Open MPI or the mini-app not built"),
]

_reference = {}


def reference(np_):
    """The checksum of np_ ranks under Open MPI's own shared memory (vader)."""
    if np_ not in _reference:
        p = run([MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(np_), "--mca", "pml", "ob1",
                 "--mca", "btl", "self,vader", MINIAPP] + ARGS, {"ASAN_OPTIONS": "detect_leaks=0"}, timeout=300)
        assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
        _reference[np_] = json.loads(p.stdout.strip().splitlines()[-1])["checksum"]
    return _reference[np_]


def descendants(pid):
    """pid's processes below it (its children, theirs, ...), from /proc."""
    parent = {}
    for d in os.listdir("/proc"):
        try:
            with open("/proc/%s/stat" % d, encoding="utf-8", errors="replace") as f:
                stat = f.read()
            parent[int(d)] = int(stat[stat.rindex(")") + 2:].split()[1])
        except (ValueError, OSError):
            continue
    found, todo = set(), [pid]
    while todo:
        p = todo.pop()
        for child in (c for c, pp in parent.items() if pp == p and c not in found):
            found.add(child)
            todo.append(child)
    return found


def run_held(cmd, env, hold, timeout=300):
    """Run an MPI job of the mini-app started with --hold: once rank 0
    printed its line, read the counters of the job's endpoints (not those
    of other fmx processes running meanwhile), then let the ranks finish. Killed past timeout (a hang is a failure). Returns (the
    line as a dict, the counters read)."""
    e = dict(os.environ)
    e.update(env)
    errf = tempfile.TemporaryFile()  # not a pipe: nobody reads it while the job runs
    p = subprocess.Popen(cmd, env=e, stdout=subprocess.PIPE, stderr=errf)
    watchdog = threading.Timer(timeout, p.kill)
    watchdog.start()
    try:
        line = ""
        for _ in range(200):  # mpirun's own lines come first
            line = read_line(p)
            if not line or line.startswith("{"):
                break
        counters = []
        if line.startswith("{"):
            c = run([COUNTERS, "--running", "--json"], timeout=60)
            ranks = descendants(p.pid)
            counters = [e["counters"] for e in (json.loads(x) for x in c.stdout.splitlines() if x.startswith("{"))
                        if e["pid"] in ranks]
        with open(hold, "w", encoding="utf-8"):
            pass
        out, _ = p.communicate(timeout=timeout)
    finally:
        watchdog.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
        errf.seek(0)
        err = errf.read()
        errf.close()
    assert p.returncode == 0, line + out.decode(errors="replace")[-2000:] + err.decode(errors="replace")[-2000:]
    assert line.startswith("{"), "no result line: " + err.decode(errors="replace")[-2000:]
    return json.loads(line), counters


def check(res, counters, np_):
    assert res["ranks"] == np_
    assert res["wrong_bytes"] == 0
    assert res["checksum"] == reference(np_)
    assert counters, "no endpoint's counters could be read"
    assert sum(c.get(YIELDS, 0) for c in counters) > 0, counters


def ompi4_cmd(np_, argv):
    return [MPIRUN, "--allow-run-as-root", "--oversubscribe", "-np", str(np_), "--mca", "pml", "cm",
            "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "fmx",
            "-x", "FI_PROVIDER_PATH", "-x", "FI_PROVIDER"] + argv


def test_openmpi_ranks_outnumber_cores(tmp_path):
    hold = str(tmp_path / "hold")
    res, counters = run_held(ompi4_cmd(NP, [MINIAPP] + ARGS + ["--hold", hold]),
                             dict(FI_ENV, ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"), hold)
    check(res, counters, NP)


def test_openmpi_crowded_off_still_completes(tmp_path):
    """FMX_CROWDED=off: fmx_idle never yields (Open MPI never waits in fmx,
    so nothing does), and the job still completes, slower."""
    hold = str(tmp_path / "hold")
    res, counters = run_held(ompi4_cmd(NP, ["-x", "FMX_CROWDED", MINIAPP] + ARGS + ["--hold", hold]),
                             dict(FI_ENV, FMX_CROWDED="off", ASAN_OPTIONS="detect_leaks=0:abort_on_error=1"), hold)
    assert res["wrong_bytes"] == 0 and res["checksum"] == reference(NP)
    assert counters and sum(c.get(YIELDS, 0) for c in counters) == 0, counters


_built = {}


def miniapp_of(name):
    if name not in _built:
        out = os.path.join(BUILD, "mpi-" + name)
        os.makedirs(out, exist_ok=True)
        exe = os.path.join(out, "miniapp")
        p = run(compile_cmd(name, [os.path.join(ROOT, "tests", "mpi", "miniapp.c")], exe), env_of(name), timeout=300)
        assert p.returncode == 0, "building with %s failed: %s" % (name, p.stderr[-2000:])
        _built[name] = exe
    return _built[name]


@pytest.mark.skipif(sanitized(), reason="these MPIs' programs are not built with the sanitizer the provider of "
                    "this build needs")
@pytest.mark.parametrize("name", ["impi", "ompi5", "mpich"])
def test_pypi_mpis_ranks_outnumber_cores(tmp_path, name):
    why = missing(name)
    if why:
        pytest.skip(why)
    hold = str(tmp_path / "hold")
    res, counters = run_held(launch_cmd(name, NP, [miniapp_of(name)] + ARGS + ["--hold", hold]), env_of(name),
                             hold)
    check(res, counters, NP)


def wrapper(tmp_path, hosts, rank_var):
    """A script that starts "$@" in the namespace of rank $rank_var."""
    wrap = tmp_path / "wrap.sh"
    wrap.write_text("#!/bin/sh\ncase $%s in\n" % rank_var + "".join(
        "%d) exec ip netns exec %s \"$@\";;\n" % (i, ns) for i, ns in enumerate(hosts.ns)) + "esac\nexit 9\n")
    wrap.chmod(0o755)
    return str(wrap)


namespaces = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("ip"), reason="namespaces need root and iproute2")


@namespaces
@pytest.mark.parametrize("wire", ["auto", "udp"])
def test_openmpi_namespaced_hosts_outnumber_cores(tmp_path, wire):
    """NP namespaced hosts on one bridge, one rank each: every rank's peers
    are on other hosts (the net transport), and all of them share this
    machine's cores; the kernel's runnable tasks tell the ranks so. udp:
    the UDP wire, on addresses given no broadcast (a CONNECT to a board
    whose address is not known yet goes to the subnet's broadcast, which
    fmx then derives from the mask: getifaddrs gave the address itself, and
    every rank connected to itself, MPI_ERR_OTHER at the first barrier)."""
    from netns import Bridge
    hosts = Bridge(NP, brd=wire != "udp")
    try:
        wrap = wrapper(tmp_path, hosts, "OMPI_COMM_WORLD_RANK")
        dev = "fv0" + hosts.ns[0][3:]
        hold = str(tmp_path / "hold")
        cmd = ["ip", "netns", "exec", hosts.ns[0]] + ompi4_cmd(NP, [
            "--bind-to", "none", "--mca", "oob_tcp_if_include", "10.99.8.0/24", wrap, MINIAPP] + ARGS +
            ["--hold", hold])
        env = dict(FI_ENV, PMIX_MCA_ptl_tcp_remote_connections="1", PMIX_MCA_ptl_tcp_if_include=dev,
                   ASAN_OPTIONS="detect_leaks=0:abort_on_error=1", FMX_NET_WIRE=wire)
        res, counters = run_held(cmd, env, hold)
        check(res, counters, NP)
    finally:
        hosts.close()


@namespaces
@pytest.mark.skipif(sanitized(), reason="these MPIs' programs are not built with the sanitizer the provider of "
                    "this build needs")
@pytest.mark.parametrize("name", ["impi", "mpich"])
def test_hydra_mpis_namespaced_hosts_outnumber_cores(tmp_path, name):
    """Intel MPI and MPICH across NP namespaced hosts: hydra starts every
    rank here and each enters its namespace itself (its PMI connection is
    a descriptor it inherits)."""
    why = missing(name)
    if why:
        pytest.skip(why)
    from netns import Bridge
    hosts = Bridge(NP)
    try:
        hold = str(tmp_path / "hold")
        cmd = launch_cmd(name, NP, [wrapper(tmp_path, hosts, "PMI_RANK"), miniapp_of(name)] + ARGS + ["--hold", hold])
        res, counters = run_held(cmd, env_of(name), hold)
        check(res, counters, NP)
    finally:
        hosts.close()
