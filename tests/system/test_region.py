"""Regions between processes (fmx_region_*, docs/regions.md): a peer reads
and writes another process's region through its cookie, from malloc'd
memory (CMA) and from fmx_mem_alloc memory (mapped); another user cannot
reach it; an owner killed during reads fails them, and nothing hangs."""
import os
import signal
import subprocess
import time

import pytest

from sysutil import BUILD, shared_prog
from test_trust import AS_NOBODY, needs_root

PROG = os.path.join(BUILD, "tests", "fmx_region")


def start(*args, env=None, user=None, prog=PROG):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.Popen((user or []) + [prog] + [str(a) for a in args], env=e, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def finish(p, timeout=120):
    try:
        out, err = p.communicate(timeout=timeout)
    finally:
        if p.poll() is None:
            p.kill()
    return p.returncode, out, err


@pytest.mark.parametrize("mem", ["malloc", "fmx"])
@pytest.mark.parametrize("size", [4096, 8 << 20])
def test_read_and_write_between_processes(mem, size):
    base = 200 if mem == "fmx" else 204
    o = start("owner", "--base", base, "--size", size, "--mem", mem)
    p = start("peer", "--base", base, "--size", size)
    rp, outp, errp = finish(p)
    ro, outo, erro = finish(o)
    assert (rp, ro) == (0, 0), (outp, errp, outo, erro)
    assert "peer ok" in outp and "owner ok" in outo


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for a second user")
@needs_root
def test_another_user_cannot_use_the_cookie():
    """nobody, holding root's cookie, cannot even reach root's endpoint:
    endpoints of different users live in different name spaces."""
    base = 208
    o = start("owner", "--base", base)
    try:
        line = o.stdout.readline()
        assert line.startswith("cookie "), line
        prog, env = shared_prog(PROG)
        g = subprocess.run(AS_NOBODY + [prog, "guess", "--base", str(base), "--cookie", line.split()[1]],
                           capture_output=True, text=True, timeout=120, env=dict(os.environ, **env))
        assert g.returncode == 0, g.stderr
        assert g.stdout.strip() in ("Remote endpoint bad id", "Timeout"), g.stdout
    finally:
        o.kill()
        o.wait()


def test_guessed_cookie_is_refused():
    """Our own user with a wrong cookie: refused, nothing read."""
    base = 212
    o = start("owner", "--base", base)
    try:
        line = o.stdout.readline()
        wrong = "%x" % (int(line.split()[1], 16) ^ 0x10)
        g = subprocess.run([PROG, "guess", "--base", str(base), "--cookie", wrong], capture_output=True, text=True,
                           timeout=120)
        assert g.returncode == 0, g.stderr
        assert g.stdout.strip() == "Region not found", g.stdout
    finally:
        o.kill()
        o.wait()


def test_owner_killed_during_reads():
    base = 216
    o = start("owner", "--base", base, "--size", 16 << 20)
    p = start("peer", "--base", base, "--size", 16 << 20, "--loops", 100000)
    try:
        assert o.stdout.readline().startswith("cookie ")
        time.sleep(1.0)
        o.send_signal(signal.SIGKILL)
        rc, out, err = finish(p, timeout=60)
        assert rc == 3, (out, err)
        assert out.strip() in ("read: Remote endpoint unreachable", "read: Remote endpoint closed",
                               "read: Message aborted"), out
    finally:
        for x in (o, p):
            if x.poll() is None:
                x.kill()
