# SPDX-License-Identifier: MIT
"""What the system tests share: where the build is, and running a program
from it (or any program) with extra environment and a timeout that turns a
hang into a failure."""
import os
import subprocess
import sys

# No discovery broadcast on the host's own interfaces (test_net turns it on
# inside the namespaces it makes).
os.environ.setdefault("FMX_NET_DISCOVER_MS", "0")

BUILD = os.environ.get("FMX_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))
# The benches' modules (bench/hosts.py's beds, bench/crowd.py, ...), which tests import.
BENCH = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench")
sys.path.insert(0, BENCH)


def run(argv, env=None, timeout=300):
    """Run argv; a bare name of a program of the build (fmx_perf, ...) is
    taken from the build directory. Output captured as text."""
    if "/" not in argv[0] and os.path.exists(os.path.join(BUILD, argv[0])):
        argv = [os.path.join(BUILD, argv[0])] + list(argv[1:])
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(argv, env=e, timeout=timeout, capture_output=True, text=True)


_shared = None


def shared_prog(path):
    """A copy of the build's program `path`, with libfmx beside it, in a
    directory every user may read, and the environment that makes it load
    that libfmx: a second uid (nobody) cannot enter a checkout under a 0700
    home (root's), so it runs this copy instead. Returns (path, env)."""
    global _shared
    import atexit
    import glob
    import shutil
    import tempfile
    if _shared is None:
        _shared = tempfile.mkdtemp(prefix="fmx-shared-")
        os.chmod(_shared, 0o755)
        atexit.register(shutil.rmtree, _shared, True)
        for lib in glob.glob(os.path.join(BUILD, "libfmx.so*")):
            shutil.copy2(lib, _shared, follow_symlinks=False)
    dst = os.path.join(_shared, os.path.basename(path))
    if not os.path.exists(dst):
        shutil.copy2(path, dst)
        os.chmod(dst, 0o755)
    # The copy's RUNPATH still names the build; LD_LIBRARY_PATH comes first.
    return dst, {"LD_LIBRARY_PATH": _shared}


def read_line(p):
    """The next line of p's stdout, read byte by byte from its descriptor:
    a buffered readline() may take what follows too, and communicate()
    (which reads the descriptor) would then never see it."""
    fd = p.stdout.fileno()
    line = b""
    while not line.endswith(b"\n"):
        c = os.read(fd, 1)
        if not c:
            break
        line += c
    return line.decode()
