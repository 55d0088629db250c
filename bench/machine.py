"""What the benchmark ran on (CPU, caches, kernel, library versions) and how
busy the machine was meanwhile (foreign load)."""
import glob
import json
import os
import platform
import re
import resource
import subprocess
import time


def _cmd(argv, env=None):
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env)
        return (p.stdout + p.stderr).strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def bench_cores():
    """The first two cores this process may run on."""
    cores = sorted(os.sched_getaffinity(0))
    return cores[:2] if len(cores) >= 2 else cores * 2


def caches():
    out = []
    for d in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index*")):
        out.append({"level": _read(d + "/level"), "type": _read(d + "/type"),
                    "size": _read(d + "/size"), "shared_cpu_list": _read(d + "/shared_cpu_list")})
    return out


def versions(build, impi):
    v = {}
    try:
        v["fmx"] = json.loads(_cmd([os.path.join(build, "fmx_info"), "--json"])).get("version")
    except ValueError:
        v["fmx"] = None
    m = re.search(r"\(Open(?: MPI|RTE)\) (\S+)", _cmd(["mpirun.openmpi", "--version"]))
    v["openmpi"] = m.group(1) if m else None
    m = re.search(r"MPICH Version:\s*(\S+)", _cmd(["mpichversion"]))
    v["mpich"] = m.group(1) if m else None
    m = re.search(r"MPICH Device:\s*(\S+)", _cmd(["mpichversion"]))
    v["mpich_device"] = m.group(1) if m else None
    m = re.search(r"Version\s+(\S+)", _cmd(["ucx_info", "-v"]))
    v["ucx"] = m.group(1) if m else None
    m = re.search(r"libfabric:\s*(\S+)", _cmd(["fi_info", "--version"]))
    v["libfabric"] = m.group(1) if m else None
    dist = glob.glob(os.path.join(impi, "lib", "python3*", "site-packages", "impi_rt-*.dist-info"))
    v["impi_rt"] = re.sub(r".*impi_rt-(.*)\.dist-info", r"\1", dist[0]) if dist else None
    v["gcc"] = (_cmd(["gcc", "--version"]).splitlines() or [None])[0]
    return v


def environment(build, impi):
    lscpu = {}
    for line in _cmd(["lscpu"]).splitlines():
        if ":" in line:
            k, val = line.split(":", 1)
            lscpu[k.strip()] = val.strip()
    env = {
        "host": platform.node(),
        "cpu_model": lscpu.get("Model name"),
        "cpus": os.cpu_count(),
        "allowed_cpus": sorted(os.sched_getaffinity(0)),
        "bench_cores": bench_cores(),
        "caches_lscpu": {k: lscpu[k] for k in ("L1d cache", "L1i cache", "L2 cache", "L3 cache")
                         if k in lscpu},
        "caches_cpu0": caches(),
        "hypervisor": lscpu.get("Hypervisor vendor"),
        "kernel": platform.release(),
        "os": _read("/etc/debian_version") and "Debian " + _read("/etc/debian_version"),
        "versions": versions(build, impi),
    }
    try:
        env["fmx_info"] = json.loads(_cmd([os.path.join(build, "fmx_info"), "--json"]))
    except ValueError:
        pass
    return env


class LoadMeter:
    """Foreign load over an interval, in cores: busy CPU time of the whole
    machine (from /proc/stat, steal included) minus the CPU time of this
    process and its reaped children, divided by the wall time."""
    HZ = os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _busy():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + (v[4] if len(v) > 4 else 0)
        return (sum(v[:8]) - idle) / LoadMeter.HZ     # guest time is already in user

    @staticmethod
    def _ours():
        c = resource.getrusage(resource.RUSAGE_CHILDREN)
        s = resource.getrusage(resource.RUSAGE_SELF)
        return c.ru_utime + c.ru_stime + s.ru_utime + s.ru_stime

    def __enter__(self):
        self.t0, self.b0, self.o0 = time.monotonic(), self._busy(), self._ours()
        return self

    MIN_WINDOW = 0.4   # s: /proc/stat counts in ticks; short runs get a quiet tail

    def __exit__(self, *exc):
        self.wall = time.monotonic() - self.t0
        if self.wall < self.MIN_WINDOW:
            time.sleep(self.MIN_WINDOW - self.wall)
        window = time.monotonic() - self.t0
        busy = self._busy() - self.b0
        ours = self._ours() - self.o0
        self.load = max(0.0, (busy - ours) / window)
        return False
