# SPDX-License-Identifier: MIT
"""fmx_counters --running / --pid: a running job's counters, read from each
endpoint's counters page through /proc while the job runs; not for another
user; forged pages skipped, not trusted; FMX_COUNTERS_PAGE=0 publishes none."""
import json
import os
import subprocess
import time

import pytest

from sysutil import BUILD, run, shared_prog
from test_trust import AS_NOBODY, Hostile, Server, needs_root

EAGER = "eager sends"


def children(pid):
    """The pids whose parent is pid."""
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(d))
            except (OSError, IndexError, ValueError):
                pass
    return out


def running(pid=None, env=None, user=None):
    """fmx_counters --running (or --pid) --json: its exit code, its endpoints
    by (pid, endpoint id), its stderr."""
    argv = ["--running"] if pid is None else ["--pid", str(pid)]
    if user:
        prog, e = shared_prog(os.path.join(BUILD, "fmx_counters"))
        e.update(env or {})
        p = subprocess.run(user + [prog, "--json"] + argv, capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **e))
    else:
        p = run(["fmx_counters", "--json"] + argv, env, timeout=60)
    eps = {}
    for line in p.stdout.splitlines():
        o = json.loads(line)
        eps[(o["pid"], o["endpoint"])] = o
    return p.returncode, eps, p.stderr


@pytest.fixture
def job():
    """A ping-pong between two processes, long enough to be looked at, then
    stopped."""
    p = subprocess.Popen([os.path.join(BUILD, "fmx_perf"), "pingpong", "--sizes", "8", "--iters", "200000000"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        yield p
    finally:
        os.killpg(p.pid, 9)
        p.wait()


def ranks_of(job):
    """The job's two endpoints, once both count sends (bounded wait)."""
    for _ in range(300):
        kids = set(children(job.pid)) | {job.pid}
        rc, eps, _ = running()
        mine = {k: v for k, v in eps.items() if k[0] in kids and v["counters"].get(EAGER, 0) > 0}
        if len(mine) == 2:
            return mine
        time.sleep(0.1)
    pytest.fail("the job's endpoints never showed up in fmx_counters --running: %r" % (eps,))


def test_running_job(job):
    first = ranks_of(job)
    (pid, eid), o = sorted(first.items())[0]
    time.sleep(0.3)
    rc, eps, err = running(pid)
    assert rc == 0, err
    assert (pid, eid) in eps and all(k[0] == pid for k in eps)
    assert eps[(pid, eid)]["counters"][EAGER] > o["counters"][EAGER]  # read live, not a copy at open
    assert eps[(pid, eid)]["uid"] == os.geteuid()
    text = run(["fmx_counters", "--pid", str(pid)])
    assert text.returncode == 0 and "# pid %d (uid %d) endpoint %d" % (pid, os.geteuid(), eid) in text.stdout


def test_not_published_when_off():
    s = Server(7, {"FMX_COUNTERS_PAGE": "0"})
    try:
        rc, eps, err = running(s.p.pid)
        assert rc == 1 and not eps
        assert "has no endpoint whose counters this user can read" in err
    finally:
        s.kill()
    s = Server(7)
    try:
        rc, eps, err = running(s.p.pid)
        assert rc == 0 and list(eps) == [(s.p.pid, 7)], err
    finally:
        assert s.stop() == 0, s.err


def test_bad_options():
    for argv in (["--pid", "x"], ["--pid", "0"], ["--pid", "1K"], ["--pid", "99999999999"],
                 ["--pid", "1", "--self-test", "8"], ["--running", "--engine", "cma"], ["--pid"]):
        assert run(["fmx_counters"] + argv).returncode == 2, argv
    # a process with no fmx in it (this test's own)
    rc, eps, err = running(os.getpid())
    assert rc == 1 and not eps


@needs_root
def test_other_user_cannot_read():
    """root's endpoint is invisible to nobody's fmx_counters, by pid or in the
    list; root sees nobody's."""
    s = Server(9)
    try:
        rc, eps, err = running(s.p.pid, user=AS_NOBODY)
        assert rc == 1 and not eps, err
        rc, eps, err = running(user=AS_NOBODY)
        assert not any(k[0] == s.p.pid for k in eps)
    finally:
        assert s.stop() == 0, s.err
    prog, e = shared_prog(os.path.join(BUILD, "tests", "fmx_sys"))
    p = subprocess.Popen(AS_NOBODY + [prog, "serve", "--base", "9"], env=dict(os.environ, **e),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "READY"
        rc, eps, err = running(p.pid)
        assert rc == 0 and eps[(p.pid, 9)]["uid"] != 0, err
    finally:
        p.communicate(input="", timeout=60)


# Pages named like ours: garbage; a valid header of another layout; the
# same unsealed (never opened by a reader: it could shrink under it); a
# FIFO would need a path, not a memfd. Made by a user that is not the
# reader when we are root.
FORGER = r'''
import fcntl, os, struct, sys
def page(data, seal=True):
    fd = os.memfd_create("fmx-counters", os.MFD_ALLOW_SEALING)
    os.write(fd, data)
    if seal:
        fcntl.fcntl(fd, 1033, 1 | 2 | 4)  # F_ADD_SEALS: SEAL, SHRINK, GROW
    return fd
good = lambda layout: struct.pack("<QIIQQIIIIQII", 0x31305443584d4621, 64, 4, layout, 0xabc, 0, 3, os.getpid(),
                                  os.getuid(), 1, 1, 0) + bytes(32)
fds = [page(os.urandom(200)), page(good(0x1234)), page(good(0x1234), seal=False),
       page(struct.pack("<QII", 0x31305443584d4621, 64, 100000) + bytes(100))]
print("READY", flush=True)
sys.stdin.read()
print("{}")
'''


@pytest.mark.parametrize("as_nobody", [False, pytest.param(True, marks=needs_root)])
def test_forged_pages(as_nobody):
    h = Hostile(FORGER, AS_NOBODY if as_nobody else None)
    try:
        rc, eps, err = running(h.p.pid)
        assert rc == 1 and not eps, (eps, err)
        assert err.count("named like a counters page but not one: skipped") == 2, err
        assert err.count("an endpoint of another fmx build") == 1, err
        h.finish()
    finally:
        h.kill()
