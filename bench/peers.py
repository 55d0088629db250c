"""The configurations `make bench` compares: how each is prepared (found,
built, or skipped with a reason) and how one kernel run of it is launched and
parsed into records {"kernel","size","latency_us","bandwidth_MBps",...}.

Every configuration runs on the same two cores (`cores`) with the same sizes.
"""
import json
import os
import re
import shutil
import subprocess
import time

KERNELS = ("pingpong", "bw", "alltoall")
# msgrate (a window of small messages, messages per second) runs only where
# a message layer's own small-message path differs: fmx as shipped and each
# MPI's default shared memory (IMB: Uniband).
MSGRATE = ("msgrate",)
# Alltoall with many ranks on this host's cores (oversubscribed), fmx as
# shipped against Open MPI vader, with the peak of shared memory (Shmem in
# /proc/meminfo, above its level before the run) beside each time.
MANY = ("alltoall-8", "alltoall-32")


def ranks_of(kernel):
    """2, or N for alltoall-N."""
    return int(kernel.split("-")[1]) if kernel in MANY else 2


def _shmem_bytes():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("Shmem:"):
                return int(line.split()[1]) * 1024
    return 0


class ShmemPeak:
    """Samples Shmem every 5 ms while the block runs: .peak_mb above the
    level before it."""

    def __enter__(self):
        import threading
        self.base = self.peak = _shmem_bytes()
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._loop, daemon=True)
        self._t.start()
        return self

    def _loop(self):
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, _shmem_bytes())

    def __exit__(self, *exc):
        self._stop.set()
        self._t.join()
        self.peak = max(self.peak, _shmem_bytes())
        self.peak_mb = (self.peak - self.base) / 1e6
        return False


class RunError(Exception):
    """A run that produced no usable numbers; str() is the reason."""


def _tail(text, n=4):
    lines = [ln for ln in (text or "").splitlines() if ln.strip()]
    return " | ".join(lines[-n:])[-600:]


def fmt_size(s):
    for unit, k in (("M", 1 << 20), ("K", 1 << 10)):
        if s >= k and s % k == 0:
            return "%d%s" % (s // k, unit)
    return str(s)


def parse_json_lines(text, kernel):
    """Records from fmx_perf / fmx_perf_mpi --json (lines starting with '{')."""
    recs = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            r = json.loads(line)
        except ValueError:
            continue
        r.setdefault("kernel", kernel)
        if "size" in r and "latency_us" in r:
            recs.append(r)
    return recs


class Config:
    """One configuration. Subclasses set name/label/kernels and implement
    prepare() (return None when runnable, else ("skipped"|"failed", reason))
    and command(kernel, sizes, iters) -> (argv, env_additions)."""
    name = ""
    label = ""
    kernels = KERNELS
    peer = True            # counts as a peer for the fmx/best-peer ratio
    note = ""

    def __init__(self, ctx):
        self.ctx = ctx     # dict: build, work, cores, quick, root

    def prepare(self):
        return None

    def run(self, kernel, sizes, iters, timeout):
        argv, env = self.command(kernel, sizes, iters)
        if kernel not in MANY:  # no sampler thread beside a latency run
            out = _execute(argv, env, timeout)
        else:
            with ShmemPeak() as shm:
                out = _execute(argv, env, timeout)
        recs = parse_json_lines(out, kernel)
        if not recs:
            raise RunError("no numbers from: %s" % _tail(out))
        if kernel in MANY:
            for r in recs:  # one peak for the run: every size of it
                r["kernel"], r["shmem_peak_MB"] = kernel, round(shm.peak_mb, 2)
        return recs, argv

    def explain_failure(self):
        """A legitimate reason this configuration cannot run here, or None."""
        return None


def _execute(argv, env_add, timeout, stdin=subprocess.DEVNULL):
    env = dict(os.environ)
    env.update(env_add or {})
    try:
        p = subprocess.run(argv, env=env, stdin=stdin, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=timeout,
                           start_new_session=True)
    except subprocess.TimeoutExpired as e:
        out = e.stdout or ""
        if isinstance(out, bytes):
            out = out.decode(errors="replace")
        raise RunError("timed out after %ds: %s" % (timeout, _tail(out)))
    except OSError as e:
        raise RunError("cannot start %s: %s" % (argv[0], e))
    if p.returncode != 0:
        raise RunError("exit %d: %s" % (p.returncode, _tail(p.stdout)))
    return p.stdout


def scaled_iters(size):
    """Iterations for tools without their own scaling: 10000 for small
    messages, down to 20 for 64 MiB (about 512 MiB moved per size)."""
    return max(20, min(10000, (512 << 20) // max(size, 1)))


def _iters_args(iters):
    return ["--iters", str(iters)] if iters else []


# ---------------------------------------------------------------- fmx native
class Fmx(Config):
    peer = False

    def __init__(self, ctx, engine=None):
        super().__init__(ctx)
        self.engine = engine
        self.name = "fmx" if engine is None else "fmx-" + engine
        self.label = "fmx (auto)" if engine is None else "fmx --engine %s" % engine
        if engine is None and type(self) is Fmx:
            self.kernels = KERNELS + MSGRATE + MANY

    def prepare(self):
        if not os.access(os.path.join(self.ctx["build"], "fmx_perf"), os.X_OK):
            return ("failed", "%s/fmx_perf missing: run `make build` first" % self.ctx["build"])
        return None

    def command(self, kernel, sizes, iters):
        np = ranks_of(kernel)
        argv = [os.path.join(self.ctx["build"], "fmx_perf"), kernel.split("-")[0], "--np", str(np),
                "--sizes", ",".join(map(str, sizes)), "--json", "--quiet"] + _iters_args(iters)
        if np == 2:  # many ranks: every allowed core, round robin (fmx_perf's default)
            argv += ["--cores", ",".join(map(str, self.ctx["cores"]))]
        if self.engine:
            argv += ["--engine", self.engine]
        # As shipped: no tuning file (an /etc/fmx/tuning.conf of this host
        # would otherwise change "auto"); FmxTuned measures its own.
        return argv, {"FMX_TUNING_FILE": self.ctx.get("fmx_tuning", "")}


class MxPingpong(Config):
    """fmx through its MX face: tests/mx/mx_pingpong (built against
    myriexpress.h alone) server and client, pinned like the others; the
    cost of the face over fmx_perf's own ping-pong."""
    name = "fmx-mx"
    label = "fmx through the MX API (mx_pingpong)"
    kernels = ("pingpong",)
    peer = False
    note = "libmyriexpress over libfmx; server endpoint 7, one client per size"

    def _exe(self):
        return os.path.join(self.ctx["build"], "tests", "mx", "mx_pingpong")

    def prepare(self):
        if not os.access(self._exe(), os.X_OK):
            return ("failed", "%s missing: run `make build` first" % self._exe())
        return None

    def run(self, kernel, sizes, iters, timeout):
        a, b = self.ctx["cores"][:2]
        pin = shutil.which("taskset")
        recs, cmds = [], []
        for s in sizes:
            n = iters or scaled_iters(s)
            srv = ([pin, "-c", str(a)] if pin else []) + [self._exe(), "-r", "7"]
            cli = ([pin, "-c", str(b)] if pin else []) + [self._exe(), "-d", "localhost", "-e", "7",
                                                          "-s", str(s), "-S", str(s), "-N", str(n)]
            cmds.append(" ".join(cli))
            out = _server_client(srv, cli, timeout, "mx_pingpong", lambda err: "Bad endpoint id" in err
                                 or "Remote Endpoint" in err or "Timeout" in err)
            rows = [l.split() for l in out.splitlines() if l.split() and l.split()[0].isdigit()]
            if not rows:
                raise RunError("no result line from mx_pingpong (size %d): %s" % (s, _tail(out)))
            size, it, lat, _ = rows[-1]
            recs.append({"kernel": kernel, "np": 2, "size": int(size), "iters": int(it),
                         "latency_us": float(lat), "bandwidth_MBps": int(size) / float(lat) if float(lat) > 0 else 0.0,
                         "engine": "mx", "library": "libmyriexpress"})
        return recs, "; ".join(cmds)


def _commit_of(build):
    """The commit a build directory was made from (its source is the
    directory above it, or CMake's cache says where), else the path."""
    src = os.path.dirname(os.path.abspath(build))
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("CMAKE_HOME_DIRECTORY:"):
                    src = line.split("=", 1)[1].strip()
    except OSError:
        pass
    try:
        out = subprocess.run(["git", "-C", src, "rev-parse", "--short", "HEAD"], capture_output=True,
                             text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        out = ""
    return out or build


class FmxBase(Fmx):
    """fmx as built elsewhere (BENCH_BASE: a build directory of an earlier
    commit), run in the same reps: the paired before/after table."""
    peer = False

    def __init__(self, ctx, base):
        super().__init__(ctx)
        self.base = base
        self.name, self.label = "fmx-base", "fmx before (%s)" % _commit_of(base)
        self.kernels = KERNELS + MSGRATE
        self.note = "BENCH_BASE=%s: the same kernels, for the paired before/after table" % base

    def prepare(self):
        exe = os.path.join(self.base, "fmx_perf")
        if not os.access(exe, os.X_OK):
            return ("failed", "BENCH_BASE=%s has no fmx_perf" % self.base)
        # An older build may lack a kernel (msgrate came later): it runs the
        # ones its usage line names, and the paired table leaves the rest out.
        try:
            usage = subprocess.run([exe, "--help"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            usage = ""
        m = re.search(r"\[([a-z|]+)\]", usage)
        if m:
            known = set(m.group(1).split("|"))
            missing = [k for k in self.kernels if k not in known]
            self.kernels = tuple(k for k in self.kernels if k in known)
            if missing:
                self.note += "; not in that build: " + ", ".join(missing)
        return None

    def command(self, kernel, sizes, iters):
        argv, env = super().command(kernel, sizes, iters)
        argv[0] = os.path.join(self.base, "fmx_perf")
        return argv, env


class FmxTuned(Fmx):
    """Auto selection after `fmx_tune` measured this host (the tuning file
    written under the bench's work directory, used only by this line)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.name = "fmx-tuned"
        self.label = "fmx (auto, after fmx_tune)"
        self.note = "fmx_tune --reps 2 (quick: --quick --reps 1) before the reps, FMX_TUNING_FILE set to its output"

    def prepare(self):
        st = super().prepare()
        if st:
            return st
        path = os.path.join(self.ctx["work"], "tuning.conf")
        if os.path.exists(path):
            os.unlink(path)
        argv = [os.path.join(self.ctx["build"], "fmx_tune"), "--output", path,
                "--cores", ",".join(map(str, self.ctx["cores"][:2]))]
        argv += ["--quick", "--reps", "1"] if self.ctx.get("quick") else ["--reps", "2"]
        try:
            _execute(argv, {}, 600)
        except RunError as e:
            return ("failed", "fmx_tune: %s" % e)
        self.tuning = path
        return None

    def command(self, kernel, sizes, iters):
        argv, env = super().command(kernel, sizes, iters)
        env["FMX_TUNING_FILE"] = self.tuning
        return argv, env


class FmxMem(Fmx):
    """Auto with the message buffers from fmx_mem_alloc (MPI_Alloc_mem's
    counterpart): peers map them, so large messages are copied once with
    plain loads and stores (coop through the mapping, shm/xmem.h)."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.name = "fmx-mem"
        self.label = "fmx (auto, fmx_mem_alloc buffers)"
        self.kernels = KERNELS + MANY
        self.note = "fmx_perf --mem fmx; compare with the MPI lines run with MPI_Alloc_mem buffers"

    def command(self, kernel, sizes, iters):
        argv, env = super().command(kernel, sizes, iters)
        return argv + ["--mem", "fmx"], env


class FmxRule(Fmx):
    """Auto without the receiver's own measurement (FMX_ADAPT=0): the
    topology's rule alone, what "auto" was before adapt."""

    def __init__(self, ctx):
        super().__init__(ctx)
        self.name = "fmx-rule"
        self.label = "fmx (auto, FMX_ADAPT=0)"
        self.note = "no tuning file, FMX_ADAPT=0: the topology's rule alone"

    def command(self, kernel, sizes, iters):
        argv, env = super().command(kernel, sizes, iters)
        env["FMX_ADAPT"] = "0"
        return argv, env


def fmx_engines(build):
    """Engine names from `fmx_info --json` (key "engines"), else cma and ring."""
    try:
        out = subprocess.run([os.path.join(build, "fmx_info"), "--json"], text=True,
                             capture_output=True, timeout=30).stdout
        eng = json.loads(out).get("engines")
        if isinstance(eng, dict) and eng:
            return list(eng)
        if isinstance(eng, list) and eng:
            return [e if isinstance(e, str) else e.get("name") for e in eng]
    except (OSError, ValueError, subprocess.SubprocessError, AttributeError):
        pass
    return ["cma", "ring"]


# ------------------------------------------------------------ fmx_perf_mpi
def build_perf_mpi(ctx, tag, cc, flags=()):
    """Build fmx_perf_mpi for one MPI into BUILD/bench/; cached per session."""
    out = os.path.join(ctx["build"], "bench", "fmx_perf_mpi-" + tag)
    cache = ctx.setdefault("built", {})
    if tag in cache:
        return cache[tag]
    script = os.path.join(ctx["root"], "scripts", "build-perf-mpi.sh")
    try:
        p = subprocess.run(["sh", script, cc, out] + list(flags), text=True,
                           capture_output=True, timeout=300)
        res = (out, None) if p.returncode == 0 else \
              (None, "building fmx_perf_mpi with %s failed: %s" % (cc, _tail(p.stdout + p.stderr)))
    except (OSError, subprocess.SubprocessError) as e:
        res = (None, "building fmx_perf_mpi with %s failed: %s" % (cc, e))
    cache[tag] = res
    return res


class OpenMPI(Config):
    mca = []          # extra mpirun arguments
    env = {}

    def __init__(self, ctx, name, label, args, note="", perf_args=(), kernels=KERNELS):
        super().__init__(ctx)
        self.name, self.label, self.mca, self.note = name, label, list(args), note
        self.perf_args = list(perf_args)
        self.kernels = kernels

    def prepare(self):
        if not shutil.which("mpirun.openmpi") or not shutil.which("mpicc.openmpi"):
            return ("skipped", "Open MPI not installed (openmpi-bin, libopenmpi-dev)")
        self.exe, err = build_perf_mpi(self.ctx, "openmpi", "mpicc.openmpi")
        return ("failed", err) if err else None

    def command(self, kernel, sizes, iters):
        np = ranks_of(kernel)
        argv = ["mpirun.openmpi", "-np", str(np)]
        argv += ["--bind-to", "core", "--map-by", "core"] if np == 2 else ["--oversubscribe", "--bind-to", "none"]
        if os.geteuid() == 0:
            argv.append("--allow-run-as-root")
        argv += self.mca + [self.exe, kernel.split("-")[0], "--sizes", ",".join(map(str, sizes)),
                            "--json", "--quiet"] + _iters_args(iters) + self.perf_args
        return argv, {}


class OpenMPIOfi(OpenMPI):
    """Open MPI through a libfabric provider (cm PML, ofi MTL)."""

    def __init__(self, ctx, name, label, provider, prov_path=None):
        args = ["--mca", "pml", "cm", "--mca", "mtl", "ofi",
                "--mca", "mtl_ofi_provider_include", provider]
        if prov_path:
            args += ["-x", "FI_PROVIDER_PATH=" + prov_path, "-x", "FI_PROVIDER=" + provider]
        super().__init__(ctx, name, label, args,
                         "mtl_ofi_provider_include alone: Open MPI 4.1 refuses it together "
                         "with mtl_ofi_provider_exclude (mutually exclusive), and an include "
                         "list overrides the default exclusion of shm")
        self.provider, self.prov_path = provider, prov_path

    def explain_failure(self):
        # The caps Open MPI 4.1's ofi MTL asks for (see shared OFI notes).
        caps = "FI_TAGGED|FI_LOCAL_COMM|FI_REMOTE_COMM|FI_DIRECTED_RECV"
        env = dict(os.environ)
        if self.prov_path:
            env["FI_PROVIDER_PATH"] = self.prov_path
        try:
            p = subprocess.run(["fi_info", "-p", self.provider, "-t", "FI_EP_RDM", "-c", caps],
                               env=env, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        if p.returncode != 0:
            ver = subprocess.run(["fi_info", "--version"], capture_output=True, text=True).stdout
            m = re.search(r"libfabric:\s*(\S+)", ver)
            ver = "libfabric " + (m.group(1) if m else "?")
            return ("libfabric's %s provider (%s) offers no FI_EP_RDM endpoint with the "
                    "capabilities Open MPI 4.1's ofi MTL asks for (%s): `fi_info -p %s -t "
                    "FI_EP_RDM -c '%s'` -> %s, so `PML cm cannot be selected`"
                    % (self.provider, ver, caps, self.provider, caps,
                       _tail(p.stdout + p.stderr, 1) or "exit %d" % p.returncode))
        return None


class FmxFi(OpenMPIOfi):
    def __init__(self, ctx, alloc_mem=False):
        super().__init__(ctx, "ompi-ofi-fmx" + ("-mem" if alloc_mem else ""),
                         "Open MPI, ofi MTL, fmx libfabric provider" +
                         (", MPI_Alloc_mem buffers through libfmx-mpi.so" if alloc_mem else ""),
                         "fmx", prov_path=os.path.join(ctx["build"], "ofi"))
        self.peer = False
        self.mpi_lib = os.path.join(ctx["build"], "libfmx-mpi.so")
        if alloc_mem:
            self.mca += ["-x", "LD_PRELOAD=" + self.mpi_lib]
            self.perf_args = ["--mem", "mpi"]
            self.note = "fmx_perf_mpi --mem mpi, libfmx-mpi.so preloaded: MPI_Alloc_mem is fmx_mem_alloc"

    def prepare(self):
        lib = os.path.join(self.prov_path, "libfmx-fi.so")
        if not os.path.exists(lib):
            return ("skipped", "fmx's libfabric provider is not built (%s missing: no libfabric-dev)" % lib)
        if self.perf_args and not os.path.exists(self.mpi_lib):
            return ("skipped", "libfmx-mpi.so is not built (%s missing)" % self.mpi_lib)
        return super().prepare()


class Mpich(Config):
    def __init__(self, ctx, name, label, genv, note="", kernels=KERNELS):
        super().__init__(ctx)
        self.name, self.label, self.genv, self.note = name, label, genv, note
        self.kernels = kernels

    def prepare(self):
        if not shutil.which("mpiexec.mpich") or not shutil.which("mpicc.mpich"):
            return ("skipped", "MPICH not installed (mpich, libmpich-dev)")
        self.exe, err = build_perf_mpi(self.ctx, "mpich", "mpicc.mpich")
        return ("failed", err) if err else None

    def command(self, kernel, sizes, iters):
        argv = ["mpiexec.mpich", "-n", "2", "-bind-to", "core:1", "-map-by", "core"]
        for k, v in self.genv.items():
            argv += ["-genv", k, v]
        argv += [self.exe, kernel, "--sizes", ",".join(map(str, sizes)),
                 "--json", "--quiet"] + _iters_args(iters)
        return argv, {}


def mpich_device():
    try:
        out = subprocess.run(["mpichversion"], capture_output=True, text=True, timeout=30).stdout
        m = re.search(r"MPICH Device:\s*(\S+)", out)
        return m.group(1) if m else "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


def _server_client(srv, cli, timeout, tool, refused=lambda err: True):
    """Start a benchmark's server, run its client until it connects (the
    server needs a moment to listen), reap the server; the client's output."""
    server = subprocess.Popen(srv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(50):
            try:
                return _execute(cli, {}, timeout)
            except RunError as e:
                if not refused(str(e)):
                    raise
                if server.poll() is not None:
                    raise RunError("%s server exited %d" % (tool, server.returncode))
                time.sleep(0.1)
        raise RunError("%s client could not connect" % tool)
    finally:
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


# ------------------------------------------------------------------- UCX
class UcxPerftest(Config):
    name = "ucx-perftest"
    label = "ucx_perftest (tag_lat / tag_bw)"
    kernels = ("pingpong", "bw")
    note = "UCP tag matching over UCX's shared memory transports, server and client pinned"

    def prepare(self):
        if not shutil.which("ucx_perftest"):
            return ("skipped", "ucx_perftest not installed (ucx-utils)")
        return None

    def _iters(self, size, iters):
        return iters or scaled_iters(size)

    def run(self, kernel, sizes, iters, timeout):
        test = "tag_lat" if kernel == "pingpong" else "tag_bw"
        a, b = self.ctx["cores"][:2]
        recs, cmds = [], []
        port = self.ctx.setdefault("ucx_port", 13400 + os.getpid() % 2000)
        for s in sizes:
            self.ctx["ucx_port"] = port = port + 1
            n = self._iters(s, iters)
            srv = ["ucx_perftest", "-c", str(a), "-p", str(port)]
            cli = ["ucx_perftest", "127.0.0.1", "-c", str(b), "-p", str(port), "-t", test,
                   "-s", str(s), "-n", str(n), "-w", str(max(10, n // 10)), "-f"]
            cmds.append(" ".join(cli))
            out = _server_client(srv, cli, timeout, "ucx_perftest",
                                 lambda err: "connection refused" in err.lower() or "connect" in err.lower())
            row = None
            for line in out.splitlines():
                f = line.replace("Final:", "").split()
                if len(f) == 8 and all(re.match(r"^[\d.]+$", x) for x in f):
                    row = f
            if row is None:
                raise RunError("no result line from ucx_perftest (size %d): %s" % (s, _tail(out)))
            lat = float(row[3])     # overall latency (lat) / overhead per message (bw), µs
            recs.append({"kernel": kernel, "np": 2, "size": s, "iters": int(row[0]),
                         "latency_us": lat,
                         "bandwidth_MBps": s / lat if lat > 0 else 0.0,
                         "engine": "ucx", "library": self.ctx.get("ucx_version", "UCX")})
        return recs, "; ".join(cmds)


# -------------------------------------------------------------- libfabric
class FiPingpong(Config):
    """libfabric's shm provider measured directly, with libfabric's own
    fi_pingpong (tagged messages over an RDM endpoint), since Open MPI 4.1's
    ofi MTL cannot select shm (see OpenMPIOfi.explain_failure)."""
    name = "fi-shm"
    label = "libfabric shm (fi_pingpong, tagged, RDM)"
    kernels = ("pingpong",)
    note = "fi_pingpong -p shm -e rdm -m tagged, server and client pinned; no warm-up of its own"

    def prepare(self):
        if not shutil.which("fi_pingpong"):
            return ("skipped", "fi_pingpong not installed (libfabric-bin)")
        return None

    def run(self, kernel, sizes, iters, timeout):
        a, b = self.ctx["cores"][:2]
        recs, cmds = [], []
        port = self.ctx.setdefault("fi_port", 15400 + os.getpid() % 2000)
        for s in sizes:
            self.ctx["fi_port"] = port = port + 1
            n = iters or scaled_iters(s)
            base = ["fi_pingpong", "-p", "shm", "-e", "rdm", "-m", "tagged", "-I", str(n),
                    "-S", str(s)]
            srv = ["taskset", "-c", str(a)] + base + ["-B", str(port)]
            cli = ["taskset", "-c", str(b)] + base + ["-P", str(port), "127.0.0.1"]
            cmds.append(" ".join(cli))
            out = _server_client(srv, cli, timeout, "fi_pingpong")
            row = None
            for line in out.splitlines():
                f = line.split()
                # bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec
                if len(f) == 8 and f[2].startswith("=") and re.match(r"^[\d.]+$", f[6]):
                    row = f
            if row is None:
                raise RunError("no result line from fi_pingpong (size %d): %s" % (s, _tail(out)))
            lat = float(row[6])     # usec/xfer: one transfer, half a round trip
            recs.append({"kernel": kernel, "np": 2, "size": s, "iters": n, "latency_us": lat,
                         "bandwidth_MBps": s / lat if lat > 0 else 0.0,
                         "engine": "ofi", "library": self.ctx.get("fi_version", "libfabric")})
        return recs, "; ".join(cmds)


# -------------------------------------------------------------- Intel MPI
def venv_missing(venv, what, launcher="mpiexec"):
    """Why a PyPI MPI in venv cannot run (VENV.skip: pip's reason), or None."""
    if os.access(os.path.join(venv, "bin", launcher), os.X_OK):
        return None
    why = "%s not installed in %s" % (what, venv)
    try:
        with open(venv + ".skip") as f:
            why += ": " + f.read().strip()
    except OSError:
        pass
    return why


def impi_env(venv):
    return {"I_MPI_ROOT": venv,
            "PATH": os.path.join(venv, "bin") + ":" + os.environ.get("PATH", ""),
            "LD_LIBRARY_PATH": os.path.join(venv, "lib") + (
                ":" + os.environ["LD_LIBRARY_PATH"] if os.environ.get("LD_LIBRARY_PATH") else "")}


def impi_missing(venv):
    return venv_missing(venv, "Intel MPI")


class ImpiImb(Config):
    name = "impi-imb"
    label = "Intel MPI, IMB-MPI1"
    kernels = ("pingpong", "alltoall", "msgrate")
    note = "Intel MPI's own shared memory; IMB-MPI1 PingPong, Alltoall and Uniband (window 64)"

    def prepare(self):
        why = impi_missing(self.ctx["impi"])
        if why:
            return ("skipped", why)
        if not os.access(os.path.join(self.ctx["impi"], "bin", "IMB-MPI1"), os.X_OK):
            return ("skipped", "IMB-MPI1 missing from %s" % self.ctx["impi"])
        return None

    def run(self, kernel, sizes, iters, timeout):
        # IMB's own repetition policies either run 1000+ repetitions of 64 MiB
        # or time out: one IMB run per group of sizes that share a count
        # (`-iter N -iter_policy off`), counts scaled as ucx_perftest's.
        groups = {}
        for s in sizes:
            groups.setdefault(iters or scaled_iters(s), []).append(s)
        recs, cmds = [], []
        for n, group in groups.items():
            r, argv = self._run_group(kernel, group, n, timeout)
            recs += r
            cmds.append(" ".join(argv))
        return recs, "; ".join(cmds)

    def _run_group(self, kernel, sizes, iters, timeout):
        venv = self.ctx["impi"]
        lens = os.path.join(self.ctx["work"], "imb-msglen")
        with open(lens, "w") as f:
            f.write("".join("%d\n" % s for s in sizes))
        bench = {"pingpong": "PingPong", "alltoall": "Alltoall", "msgrate": "Uniband"}[kernel]
        top = max(1, (max(sizes) - 1).bit_length())    # -msglog's top lifts IMB's 4 MiB cap
        argv = [os.path.join(venv, "bin", "mpiexec"), "-n", "2",
                "-genv", "I_MPI_PIN_PROCESSOR_LIST", ",".join(map(str, self.ctx["cores"][:2])),
                os.path.join(venv, "bin", "IMB-MPI1"), bench, "-msglog", "%d:%d" % (top, top),
                "-msglen", lens, "-iter", str(iters), "-iter_policy", "off", "-npmin", "2",
                "-time", "600"]
        out = _execute(argv, impi_env(venv), timeout)
        recs = []
        want = set(sizes)
        for line in out.splitlines():
            f = line.split()
            if not f or not re.match(r"^\d+$", f[0]) or int(f[0]) not in want:
                continue
            try:
                nums = [float(x) for x in f]
            except ValueError:
                continue
            s = int(f[0])
            if kernel == "pingpong" and len(nums) == 4:
                lat = nums[2]
                recs.append({"kernel": kernel, "np": 2, "size": s, "iters": int(nums[1]),
                             "latency_us": lat, "bandwidth_MBps": s / lat if lat > 0 else 0.0})
            elif kernel == "alltoall" and len(nums) == 5:
                lat = nums[3]      # t_max, as fmx_perf's "max over ranks"
                recs.append({"kernel": kernel, "np": 2, "size": s, "iters": int(nums[1]),
                             "latency_us": lat, "min_us": nums[2], "max_us": nums[3],
                             "avg_us": nums[4],
                             "bandwidth_MBps": s / lat if lat > 0 else 0.0})
            elif kernel == "msgrate" and len(nums) == 4 and nums[3] > 0:
                lat = 1e6 / nums[3]  # Msg/sec
                recs.append({"kernel": kernel, "np": 2, "size": s, "iters": int(nums[1]),
                             "latency_us": lat, "msgrate": nums[3],
                             "bandwidth_MBps": s / lat})
        for r in recs:
            r.update({"engine": "mpi", "library": self.ctx.get("impi_version", "Intel MPI")})
        if {r["size"] for r in recs} != set(sizes):
            raise RunError("IMB gave sizes %s of %s: %s" % (
                sorted({r["size"] for r in recs}), sizes, _tail(out)))
        return recs, argv


class ImpiPerf(Config):
    name = "impi"
    label = "Intel MPI (fmx_perf_mpi)"
    note = "Intel MPI's own shared memory, the fmx_perf kernels"
    kernels = KERNELS + MSGRATE

    def prepare(self):
        venv = self.ctx["impi"]
        why = impi_missing(venv)
        if why:
            return ("skipped", why)
        if not os.path.exists(os.path.join(venv, "include", "mpi.h")):
            return ("skipped", "Intel MPI headers missing (impi-devel not installed in %s)" % venv)
        lib = os.path.join(venv, "lib")
        self.exe, err = build_perf_mpi(self.ctx, "impi", "cc",
                                       ["-I" + os.path.join(venv, "include"), "-L" + lib,
                                        "-Wl,-rpath," + lib, "-lmpi"])
        return ("failed", err) if err else None

    def command(self, kernel, sizes, iters):
        venv = self.ctx["impi"]
        argv = [os.path.join(venv, "bin", "mpiexec"), "-n", "2",
                "-genv", "I_MPI_PIN_PROCESSOR_LIST", ",".join(map(str, self.ctx["cores"][:2])),
                self.exe, kernel, "--sizes", ",".join(map(str, sizes)), "--json",
                "--quiet"] + _iters_args(iters)
        return argv, impi_env(venv)


class ImpiPerfMem(ImpiPerf):
    kernels = KERNELS
    name = "impi-mem"
    label = "Intel MPI (fmx_perf_mpi, MPI_Alloc_mem buffers)"
    note = "Intel MPI's own shared memory, the fmx_perf kernels, buffers from MPI_Alloc_mem (--mem mpi)"

    def command(self, kernel, sizes, iters):
        argv, env = super().command(kernel, sizes, iters)
        return argv + ["--mem", "mpi"], env


# ------------------------------------------- PyPI MPIs over fmx's provider
class ProviderMixin:
    """An MPI through fmx's libfabric provider, malloc'd buffers or
    MPI_Alloc_mem ones through libfmx-mpi.so (preloaded, --mem mpi)."""
    peer = False
    kernels = KERNELS

    def setup_provider(self, alloc_mem):
        self.alloc_mem = alloc_mem
        self.prov_path = os.path.join(self.ctx["build"], "ofi")
        self.mpi_lib = os.path.join(self.ctx["build"], "libfmx-mpi.so")
        if alloc_mem:
            self.name += "-mem"
            self.label += ", MPI_Alloc_mem buffers through libfmx-mpi.so"
            self.note += "; fmx_perf_mpi --mem mpi, libfmx-mpi.so preloaded"

    def provider_missing(self):
        if not os.path.exists(os.path.join(self.prov_path, "libfmx-fi.so")):
            return "fmx's libfabric provider is not built (no libfabric-dev)"
        if self.alloc_mem and not os.path.exists(self.mpi_lib):
            return "libfmx-mpi.so is not built"
        return None

    def genv(self):
        g = {"FI_PROVIDER_PATH": self.prov_path, "FI_PROVIDER": "fmx"}
        if self.alloc_mem:
            g["LD_PRELOAD"] = self.mpi_lib
        return g

    def perf_tail(self, kernel, sizes, iters):
        return [self.exe, kernel, "--sizes", ",".join(map(str, sizes)), "--json", "--quiet"] + \
            _iters_args(iters) + (["--mem", "mpi"] if self.alloc_mem else [])


class ImpiFmx(ProviderMixin, ImpiPerf):
    def __init__(self, ctx, alloc_mem=False):
        super().__init__(ctx)
        self.name, self.label = "impi-ofi-fmx", "Intel MPI, fmx libfabric provider"
        self.note = "I_MPI_FABRICS=ofi, FI_PROVIDER=fmx (Intel MPI's libfabric 2.x loads it)"
        self.setup_provider(alloc_mem)

    def prepare(self):
        return ("skipped", self.provider_missing()) if self.provider_missing() else super().prepare()

    def command(self, kernel, sizes, iters):
        venv = self.ctx["impi"]
        argv = [os.path.join(venv, "bin", "mpiexec"), "-n", "2",
                "-genv", "I_MPI_PIN_PROCESSOR_LIST", ",".join(map(str, self.ctx["cores"][:2])),
                "-genv", "I_MPI_FABRICS", "ofi"]
        for k, v in self.genv().items():
            argv += ["-genv", k, v]
        return argv + self.perf_tail(kernel, sizes, iters), impi_env(venv)


class MpichFmx(ProviderMixin, Config):
    def __init__(self, ctx, alloc_mem=False):
        super().__init__(ctx)
        self.name, self.label = "mpich-ofi-fmx", "MPICH (PyPI, CH4 ofi), fmx libfabric provider"
        self.note = "PyPI mpich with its libfabric 2.x: MPICH_CH4_NETMOD=ofi, MPIR_CVAR_NOLOCAL=1, FI_PROVIDER=fmx"
        self.setup_provider(alloc_mem)

    def prepare(self):
        venv = self.ctx["mpich_wheel"]
        why = self.provider_missing() or venv_missing(venv, "MPICH (PyPI mpich)")
        if why:
            return ("skipped", why)
        self.exe, err = build_perf_mpi(self.ctx, "mpich-wheel", os.path.join(venv, "bin", "mpicc"))
        return ("failed", err) if err else None

    def command(self, kernel, sizes, iters):
        argv = [os.path.join(self.ctx["mpich_wheel"], "bin", "mpiexec"), "-n", "2", "-bind-to", "core:1",
                "-map-by", "core", "-genv", "MPICH_CH4_NETMOD", "ofi", "-genv", "MPIR_CVAR_NOLOCAL", "1"]
        for k, v in self.genv().items():
            argv += ["-genv", k, v]
        return argv + self.perf_tail(kernel, sizes, iters), {}


# ------------------------------------------------------- raw CMA (reference)
class CmaRaw(Config):
    """bench/cma_raw.c: back-to-back process_vm_readv between two pinned
    processes (cores 0 and 1), the kernel's single copy with nothing around
    it: the ceiling for the cma engine, not a peer."""
    name = "cma-raw"
    label = "raw process_vm_readv (reference)"
    kernels = ("bw",)
    peer = False
    note = "bench/cma_raw.c, one stream of process_vm_readv, cores 0 and 1; a ceiling, not a peer"

    def prepare(self):
        self.exe = os.path.join(self.ctx["build"], "bench", "cma_raw")
        try:
            p = subprocess.run(["cc", "-O2", "-o", self.exe,
                                os.path.join(self.ctx["root"], "bench", "cma_raw.c")],
                               capture_output=True, text=True, timeout=120)
        except (OSError, subprocess.SubprocessError) as e:
            return ("failed", "building cma_raw: %s" % e)
        if p.returncode != 0:
            return ("failed", "building cma_raw: %s" % _tail(p.stderr))
        return None

    def run(self, kernel, sizes, iters, timeout):
        argv = [self.exe] + [str(s) for s in sizes]
        out = _execute(argv, {}, timeout)
        recs = []
        for line in out.splitlines():
            f = line.split()
            if len(f) == 3 and f[0].isdigit():
                s, n, bw = int(f[0]), int(f[1]), float(f[2])
                recs.append({"kernel": kernel, "np": 2, "size": s, "iters": n,
                             "latency_us": s / bw if bw > 0 else 0.0, "bandwidth_MBps": bw,
                             "engine": "cma", "library": "kernel"})
        if not recs:
            raise RunError("no numbers from cma_raw: %s" % _tail(out))
        return recs, argv


# ------------------------------------------------------------------ list
def configurations(ctx):
    """Every configuration, in run order (fmx first)."""
    cfgs = [Fmx(ctx)]
    if os.environ.get("BENCH_BASE"):
        cfgs.append(FmxBase(ctx, os.path.abspath(os.environ["BENCH_BASE"])))
    cfgs += [FmxMem(ctx), FmxRule(ctx), FmxTuned(ctx), MxPingpong(ctx)] + \
        [Fmx(ctx, e) for e in fmx_engines(ctx["build"])]
    ucx_any = ["--mca", "pml", "ucx", "--mca", "pml_ucx_tls", "any",
               "--mca", "pml_ucx_devices", "any"]
    cfgs += [
        OpenMPI(ctx, "ompi-vader", "Open MPI vader (CMA single copy)", [],
                "default shared memory BTL", kernels=KERNELS + MSGRATE + MANY),
        OpenMPI(ctx, "ompi-vader-mem", "Open MPI vader (CMA), MPI_Alloc_mem buffers", [],
                "default shared memory BTL, fmx_perf_mpi --mem mpi", ["--mem", "mpi"], kernels=KERNELS + MANY),
        OpenMPI(ctx, "ompi-vader-2copy", "Open MPI vader two-copy",
                ["--mca", "btl_vader_single_copy_mechanism", "none"]),
        OpenMPI(ctx, "ompi-ucx", "Open MPI over UCX", ucx_any,
                "pml_ucx_tls/devices=any: Debian's Open MPI enables the UCX PML only on "
                "InfiniBand/RoCE devices otherwise"),
        OpenMPI(ctx, "ompi-ucx-posix", "Open MPI over UCX, UCX_TLS=posix,self",
                ucx_any + ["-x", "UCX_TLS=posix,self"]),
    ]
    dev = mpich_device()
    ctx["mpich_device"] = dev
    cfgs += [
        Mpich(ctx, "mpich", "MPICH (%s, intra-node CH4 shm)" % dev, {},
              "Debian's MPICH is built --with-device=%s; within a node CH4 uses its own "
              "POSIX shared memory module, not the netmod" % dev, kernels=KERNELS + MSGRATE),
        Mpich(ctx, "mpich-ucx", "MPICH over UCX (MPIR_CVAR_NOLOCAL=1)",
              {"MPIR_CVAR_NOLOCAL": "1"},
              "MPIR_CVAR_NOLOCAL=1 sends intra-node traffic through the %s netmod" % dev),
        UcxPerftest(ctx),
        CmaRaw(ctx),
        OpenMPIOfi(ctx, "ompi-ofi-shm", "Open MPI, ofi MTL, libfabric shm", "shm"),
        FiPingpong(ctx),
        ImpiImb(ctx),
        ImpiPerf(ctx),
        ImpiPerfMem(ctx),
        FmxFi(ctx),
        FmxFi(ctx, alloc_mem=True),
        ImpiFmx(ctx),
        ImpiFmx(ctx, alloc_mem=True),
        MpichFmx(ctx),
        MpichFmx(ctx, alloc_mem=True),
    ]
    return cfgs
