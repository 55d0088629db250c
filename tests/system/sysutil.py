# SPDX-License-Identifier: MIT
"""What the system tests share: where the build is, and running a program
from it (or any program) with extra environment and a timeout that turns a
hang into a failure."""
import os
import subprocess

BUILD = os.environ.get("FMX_BUILD_DIR", os.path.join(os.path.dirname(__file__), "..", "..", "build"))


def run(argv, env=None, timeout=300):
    """Run argv; a bare name of a program of the build (fmx_perf, ...) is
    taken from the build directory. Output captured as text."""
    if "/" not in argv[0] and os.path.exists(os.path.join(BUILD, argv[0])):
        argv = [os.path.join(BUILD, argv[0])] + list(argv[1:])
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(argv, env=e, timeout=timeout, capture_output=True, text=True)
