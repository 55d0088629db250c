# SPDX-License-Identifier: MIT
"""The trust boundary, tried for real as a hostile or careless local user
(issue 12): a second uid squatting names and holding connections, a same-uid
peer passing memfds it truncates later, short-lived clients by the thousand,
a process out of file descriptors, and connects to endpoints not open yet.

The second uid is `nobody` (tests run as root in CI); its programs are
/usr/bin/python3 scripts and the build's fmx_sys, which it can read.
"""
import json
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import time

import pytest

from sysutil import BUILD, shared_prog, read_line
PROG = os.path.join(BUILD, "tests", "fmx_sys")
HELLO = "<8I3QiI"  # struct shm_hello (src/shm/connect.h)
HELLO_MAGIC, DESC_MAGIC = 0x464D5848, 0x464D5844
KEY = 0x5EED


def _nobody():
    try:
        import pwd
        return pwd.getpwnam("nobody")
    except KeyError:
        return None


AS_NOBODY = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else "python3"
needs_root = pytest.mark.skipif(os.geteuid() != 0 or _nobody() is None or shutil.which("setpriv") is None,
                                reason="needs root, a nobody user and setpriv")


def name(eid, uid=None):
    return b"\0fmx/%d/0/%d" % (os.getuid() if uid is None else uid, eid)


def fmx_sys(*args, env=None, timeout=60, user=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run((user or []) + [PROG] + [str(a) for a in args], capture_output=True, text=True, env=e,
                          timeout=timeout)


class Server:
    """`fmx_sys serve`: endpoint `eid` receiving whatever comes until stop()."""

    def __init__(self, eid, env=None, *extra):
        e = dict(os.environ)
        e.update(env or {})
        self.p = subprocess.Popen([PROG, "serve", "--base", str(eid)] + [str(a) for a in extra], env=e,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert read_line(self.p).strip() == "READY"

    def stop(self):
        out, err = self.p.communicate(input="", timeout=60)
        self.out, self.err = out, err
        return self.p.returncode

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


class Hostile:
    """A Python script run as another user (or ours): prints READY when set,
    then its JSON result once its stdin closes."""

    def __init__(self, code, user=None):
        self.p = subprocess.Popen((user or []) + [PY, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        line = read_line(self.p).strip()
        assert line == "READY", self.p.stderr.read()

    def finish(self):
        out, err = self.p.communicate(input="", timeout=60)
        assert self.p.returncode == 0, err
        return json.loads(out.strip().splitlines()[-1])

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


SQUATTER = r'''
import json, os, select, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(%r)
if %r:
    s.listen(64)
print("READY", flush=True)
conns = nbytes = nfds = 0
while %r:
    r, _, _ = select.select([s, sys.stdin], [], [], 10)
    if sys.stdin in r or not r:
        break
    c, _ = s.accept()
    conns += 1
    c.settimeout(1)
    try:
        msg, fds, _, _ = socket.recv_fds(c, 4096, 8)
        nbytes += len(msg)
        nfds += len(fds)
    except (socket.timeout, OSError):
        pass
    c.close()
if not %r:
    sys.stdin.read()
print(json.dumps({"conns": conns, "bytes": nbytes, "fds": nfds}))
'''


@needs_root
@pytest.mark.parametrize("listening", [True, False], ids=["listening", "bare-bind"])
def test_squatted_name(listening):
    """User nobody binds root's endpoint name first. Opening it fails with
    Access denied and a log line naming the cause; a connect to it checks
    the listener's uid first and sends nothing: no key, no memfd."""
    eid = 220 if listening else 221
    sq = Hostile(SQUATTER % (name(eid), listening, listening, listening), AS_NOBODY)
    try:
        p = fmx_sys("open", "--target", eid)
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == "Access denied"
        assert "FMX-EP-SQUATTED" in p.stderr
        if listening:
            assert "uid 65534" in p.stderr or "uid %d" % _nobody().pw_uid in p.stderr
        else:
            assert "accepts no connection" in p.stderr
        p = fmx_sys("connect", "--target", eid, "--key", KEY)
        assert p.returncode == 0, p.stderr
        if listening:
            assert p.stdout.strip() == "Access denied"
            assert "FMX-CONN-SQUAT" in p.stderr
        else:
            assert p.stdout.strip() == "Remote endpoint bad id"
        res = sq.finish()
        assert res["bytes"] == 0 and res["fds"] == 0, res
    finally:
        sq.kill()


@needs_root
@pytest.mark.parametrize("listening", [True, False], ids=["listening", "bare-bind"])
def test_squatted_name_without_shared_memory(listening):
    """With FMX_SHM=0 an endpoint's id is still claimed by its socket's
    name. User nobody holds root's name first: a listening squatter is
    named (Access denied, its uid in the log line, as with shared memory);
    one that only bound the name takes no connection that would tell its
    uid, and the id is Busy. Either way nothing is sent to it."""
    eid = 222 if listening else 223
    sq = Hostile(SQUATTER % (name(eid), listening, listening, listening), AS_NOBODY)
    try:
        p = fmx_sys("open", "--target", eid, env={"FMX_SHM": "0"})
        assert p.returncode == 0, p.stderr
        if listening:
            assert p.stdout.strip() == "Access denied", p.stdout + p.stderr
            assert "FMX-EP-SQUATTED" in p.stderr and "uid %d" % _nobody().pw_uid in p.stderr, p.stderr
        else:
            assert p.stdout.strip() == "Busy", p.stdout + p.stderr
        res = sq.finish()
        assert res["bytes"] == 0 and res["fds"] == 0, res
    finally:
        sq.kill()


@needs_root
def test_any_endpoint_skips_squatted_ids():
    """FMX_ANY_ENDPOINT takes the next free id past a squatted one."""
    sq = Hostile(SQUATTER % (name(0), True, True, True), AS_NOBODY)
    try:
        p = fmx_sys("connect", "--target", 9999, "--key", KEY, env={"FMX_CONNECT_WAIT_MS": "0"})
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == "Remote endpoint bad id"
        assert "FMX-EP-SQUATTED" in p.stderr
    finally:
        sq.kill()


HOLDER = r'''
import json, os, socket, struct, sys
socks, replies = [], []
for i in range(%d):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(%r)
    socks.append(s)
print("READY", flush=True)
sys.stdin.read()
for s in socks:
    s.setblocking(False)
    try:
        m = s.recv(64)
        replies.append(struct.unpack("<8I3QiI", m)[3] if len(m) == 64 else (-1 if not m else -2))
    except BlockingIOError:
        replies.append(None)
print(json.dumps({"replies": replies}))
'''


@needs_root
def test_foreign_idle_connections_do_not_stall_connects():
    """nobody holds 60 connections to root's endpoint and never sends a
    HELLO. Each is refused at accept (a status reply, nothing read); root's
    own connects succeed; the refusals log one line, then a count."""
    srv = Server(230)
    holder = None
    try:
        holder = Hostile(HOLDER % (60, name(230, 0)), AS_NOBODY)
        for _ in range(3):
            p = fmx_sys("connect", "--target", 230, "--key", KEY)
            assert p.returncode == 0, p.stderr
            assert p.stdout.strip() == "Success"
        res = holder.finish()
        assert res["replies"] == [7] * 60  # FMX_ACCESS_DENIED, to every one
        assert srv.stop() == 0, srv.err
        assert srv.err.count("FMX-CONN-UID") <= 2, srv.err  # the first line, and the held count at the end
        assert re.search(r"FMX-LOG-HELD: \d+ more FMX-CONN-UID", srv.err) or srv.err.count("FMX-CONN-UID") == 1
    finally:
        srv.kill()
        if holder:
            holder.kill()


@needs_root
def test_peer_death_seen_while_another_user_holds_connections():
    """nobody holds 60 idle connections to a receiving endpoint whose sender
    is then killed mid-transfer: the receiver completes with an error at
    once, its watcher never waits on a silent client (1.5 s before)."""
    import signal
    # The ring engine through one 4 KiB slot: 1 GiB still moves while the
    # holder starts and connects (a whole cma transfer once ended first).
    env = dict(os.environ, FMX_BULK="ring", FMX_BULK_SLOTS="1", FMX_BULK_SLOT_SIZE="4K")
    procs = [subprocess.Popen([PROG, "bigsend", "--rank", str(r), "--nprocs", "2", "--base", "246", "--size",
                               str(1 << 30)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for r in range(2)]
    holder = None
    try:
        for p in procs:
            assert read_line(p).strip() == "READY"
        holder = Hostile(HOLDER % (60, name(247, 0)), AS_NOBODY)
        t_kill = time.monotonic_ns()
        procs[0].send_signal(signal.SIGKILL)
        out, err = procs[1].communicate(timeout=30)
        assert procs[1].returncode == 3, err  # an error completion, not a hang
        res = json.loads([l for l in out.splitlines() if l.startswith("{")][0])
        assert res["code"] in ("Remote endpoint unreachable", "Message aborted")
        print(f"death seen {(res['t_ns'] - t_kill) / 1e6:.1f} ms after the kill")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        if holder:
            holder.kill()


def test_idle_connections_of_our_uid_are_capped_and_time_out():
    """40 idle connections of our own uid: FMX_HANDSHAKES_PER_UID (16) wait
    for a HELLO until FMX_HANDSHAKE_MS, the rest are refused Busy at once;
    a real connect meanwhile gets through (it retries on Busy)."""
    srv = Server(232)
    holder = None
    try:
        holder = Hostile(HOLDER % (40, name(232)))
        p = fmx_sys("connect", "--target", 232, "--key", KEY)
        assert p.returncode == 0, p.stderr
        assert p.stdout.strip() == "Success"
        time.sleep(1.5)  # past FMX_HANDSHAKE_MS: the 16 idle ones are dropped
        res = holder.finish()["replies"]
        assert res.count(20) == 40 - 16, res  # FMX_BUSY
        assert res.count(-1) == 16, res  # closed without a reply
        assert srv.stop() == 0, srv.err
    finally:
        srv.kill()
        if holder:
            holder.kill()


def _memfd(size, sealed, magic=0):
    fd = os.memfd_create("forged", os.MFD_ALLOW_SEALING if sealed else 0)
    os.ftruncate(fd, size)
    if magic:
        os.pwrite(fd, struct.pack("<2I", magic, 1), 0)
    if sealed:
        import fcntl
        fcntl.fcntl(fd, 1033, 2 | 4)  # F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW
    return fd


@pytest.mark.parametrize("what", ["both-unsealed", "link-unsealed", "link-too-small", "desc-not-memfd"])
def test_forged_memfds_refused_before_mapping(what):
    """A same-uid peer passes memfds it could truncate later (once: SIGBUS
    in the endpoint's process). Unsealed or undersized, they are refused
    before anything is mapped; truncating them afterwards harms nothing."""
    srv = Server(234)
    try:
        desc = _memfd(4096, what != "both-unsealed", DESC_MAGIC)
        if what == "desc-not-memfd":
            os.close(desc)
            desc = os.open("/dev/null", os.O_RDWR)
        chan = _memfd(1 << 20 if what != "link-too-small" else 1024, what not in ("both-unsealed",
                                                                                   "link-unsealed"))
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect(name(234))
        pool = _memfd(1 << 16, True)  # never looked at: the link or the descriptor fails first
        hello = struct.pack(HELLO, HELLO_MAGIC, 3, 1, 0, KEY, 99, 1, 0, 1, 0, 0, -1, 0)
        socket.send_fds(s, [hello], [desc, pool, chan])
        os.close(pool)
        s.settimeout(10)
        rep = s.recv(64)
        assert struct.unpack(HELLO, rep)[3] != 0  # refused
        for fd in (desc, chan):
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass  # sealed: cannot shrink
            os.close(fd)
        s.close()
        p = fmx_sys("connect", "--target", 234, "--key", KEY)
        assert p.stdout.strip() == "Success", p.stderr
        assert srv.stop() == 0, srv.err
        assert "FMX-CONN-LINK" in srv.err
        if what != "desc-not-memfd":
            assert "sealed" in srv.err or "wrong size" in srv.err, srv.err
    finally:
        srv.kill()


FAKE_LISTENER = r'''
import json, os, socket, struct, sys, fcntl
what = %r
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.bind(%r)
s.listen(4)
print("READY", flush=True)
c, _ = s.accept()
msg, fds, _, _ = socket.recv_fds(c, 64, 8)
def memfd(size, sealed, head=b""):
    fd = os.memfd_create("forged", os.MFD_ALLOW_SEALING if sealed else 0)
    os.ftruncate(fd, size)
    os.pwrite(fd, head, 0)
    if sealed:
        fcntl.fcntl(fd, 1033, 2 | 4)  # F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW
    return fd
desc_head = struct.pack("<2I", 0x464D5844, 1)
d = memfd(4096, what != "desc-unsealed", desc_head)
# struct pool_hdr (src/region/pool.h): magic, version, size, state_off, then per class n, size, off
pool_head = struct.pack("<2I8Q", 0x464D5850, 1, 1 << 20, 4096, 4, 4096, 8192, 64, 1 << 16, 8192 + 4 * 4096)  # past its end
p = memfd(1 << 20, what != "pool-unsealed", pool_head)
rep = struct.pack("<8I3QiI", 0x464D5848, 3, 2, 0, 0, 236, 7, 0, 1, 0, 0, -1, 0)
socket.send_fds(c, [rep], [d, p])
for fd in (d, p):
    try:
        os.ftruncate(fd, 0)
    except OSError:
        pass  # sealed
sys.stdin.read()
print(json.dumps({"got_fds": len(fds)}))
'''


@pytest.mark.parametrize("what", ["desc-unsealed", "pool-unsealed", "pool-malformed"])
def test_fake_listener_with_forged_memfds(what):
    """A same-uid listener answers with an unsealed descriptor or pool
    memfd and truncates it, or with a pool whose header names buffers past
    its end: the connector refuses it (no mapping, no SIGBUS)."""
    fake = Hostile(FAKE_LISTENER % (what, name(236)))
    try:
        p = fmx_sys("connect", "--target", 236, "--key", KEY)
        assert p.returncode == 0, p.stderr  # not killed by SIGBUS
        assert p.stdout.strip() == "Remote endpoint closed"
        assert "FMX-CONN-DESC" in p.stderr
        fake.finish()
    finally:
        fake.kill()


def _mem(pid):
    with open(f"/proc/{pid}/status") as f:
        rss = int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1))
    with open(f"/proc/{pid}/maps") as f:
        maps = f.read()
    return rss, maps.count("fmx-link"), maps.count("fmx-endpoint")


def test_short_lived_clients_leave_nothing_behind():
    """1000 clients connect, send, close: the server unmaps what each left
    (links, descriptors) and its RSS stays flat (before: 600 clients
    left 600 link and 601 descriptor mappings, 4.7 -> 87 MB)."""
    srv = Server(238)
    try:
        p = fmx_sys("churn", "--target", 238, "--rounds", 50)
        assert p.returncode == 0, p.stderr
        rss0, chan0, desc0 = _mem(srv.p.pid)
        p = fmx_sys("churn", "--target", 238, "--rounds", 1000, timeout=600)
        assert p.returncode == 0, p.stderr
        rss1, chan1, desc1 = _mem(srv.p.pid)
        print(f"server RSS {rss0} -> {rss1} kB, link mappings {chan0} -> {chan1}, "
              f"descriptor mappings {desc0} -> {desc1}")
        assert chan1 <= 2 and desc1 <= 3, (chan1, desc1)
        assert rss1 - rss0 < 16 * 1024, (rss0, rss1)  # was about 140 kB per client
        assert srv.stop() == 0, srv.err
        assert json.loads(srv.out.splitlines()[-1])["received"] == 1050
    finally:
        srv.kill()


def test_connect_waits_for_an_endpoint_not_open_yet():
    """fmx_connect to an id nobody has opened yet waits for it (up to
    FMX_CONNECT_WAIT_MS within its timeout), as MX's mx_connect does."""
    c = subprocess.Popen([PROG, "connect", "--target", "240", "--key", str(KEY)], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    srv = None
    try:
        time.sleep(0.3)
        srv = Server(240)
        out, err = c.communicate(timeout=30)
        assert out.strip() == "Success", err
        p = fmx_sys("connect", "--target", 241, "--key", KEY, env={"FMX_CONNECT_WAIT_MS": "0"})
        assert p.stdout.strip() == "Remote endpoint bad id"
    finally:
        if c.poll() is None:
            c.kill()
        if srv:
            srv.stop()
            srv.kill()


def test_out_of_file_descriptors_is_named():
    """An acceptor whose fd table is full cannot take a peer's memfds: it
    says so (FMX-FDS, with RLIMIT_NOFILE), not 'malformed', and the peer
    gets No system resources; a connector out of fds says so too."""
    srv = Server(242, None, "--eat-fds", 1)
    try:
        p = fmx_sys("connect", "--target", 242, "--key", KEY)
        assert p.stdout.strip() == "No system resources", p.stderr
        p = fmx_sys("connect", "--target", 242, "--key", KEY, "--eat-fds", 0)
        assert p.stdout.strip() == "No system resources", p.stderr
        assert "FMX-FDS" in p.stderr and "RLIMIT_NOFILE" in p.stderr
        assert srv.stop() == 0, srv.err
        assert "FMX-FDS" in srv.err and "RLIMIT_NOFILE" in srv.err, srv.err
        assert "FMX-CONN-MALFORMED" not in srv.err
    finally:
        srv.kill()


@needs_root
def test_cma_refused_warning_is_whole():
    """Between two processes of nobody, one not dumpable: the peer's CMA
    probe fails with EPERM and the warning gives the whole reason."""
    prog, env = shared_prog(PROG)  # nobody may not enter our checkout
    procs = [subprocess.Popen(AS_NOBODY + [prog, "issend", "--rank", str(r), "--nprocs", "2", "--base", "244",
                                           "--nodump", str(1 - r)], env=dict(os.environ, **env),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for r in range(2)]
    try:
        outs = [p.communicate(timeout=60) for p in procs]
        assert [p.returncode for p in procs] == [0, 0], outs
        err = outs[1][1]
        assert "FMX-CMA-PROBE" in err, err
        assert "(ptrace rights: Yama ptrace_scope, container or uid); ring engine used" in err, err
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


# ---- a careless user's bad input: refused with one message form, nothing hangs ----

def _tool(*argv, env=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([os.path.join(BUILD, argv[0])] + list(argv[1:]), capture_output=True, text=True, env=e,
                          timeout=timeout)


@pytest.mark.parametrize("var,value,why", [
    ("FMX_RNDV_THRESHOLD", "-5", "not a size"),
    ("FMX_RING_SIZE", "1", "out of range [4K, 1G]"),
    ("FMX_BULK_SLOTS", "0", "out of range [1, 1024]"),
    ("FMX_CHUNK_MAX", "0", "out of range [4K, 1G]"),
    ("FMX_LOG", "verbose", "not one of: none error warn info debug"),
    ("FMX_BULK", "nosuch", "not one of"),
])
def test_bad_tunable_refused_and_endpoints_work(var, value, why):
    """The table refuses the value where it reads it and names the value in
    force (once 'default 256K kept' while 512K was); fmx_info --config shows
    the refusal; a large message still moves (FMX_CHUNK_MAX=0 once stopped
    cma for ever, FMX_BULK_SLOTS=0 and FMX_RING_SIZE=1 failed every open or
    connect)."""
    env = {var: value}
    p = _tool("fmx_info", "--config", env=env)
    assert p.returncode == 0, p.stderr
    line = [l for l in p.stderr.splitlines() if "FMX-CFG-VALUE" in l and var in l]
    assert len(line) == 1, p.stderr
    assert f"{var}='{value}' from the environment: {why}" in line[0]
    force = re.search(rf"; {var}=(\S+) \((\w+[ \w]*)\) in force", line[0])
    assert force, line[0]
    row = [l for l in p.stdout.splitlines() if l.startswith(var + " ")][0]
    assert row.split()[1] == force.group(1)  # the message names the value fmx_info shows
    assert "refused: '%s'" % value in p.stdout
    engine = "ring" if var == "FMX_BULK_SLOTS" else "cma"
    p = _tool("fmx_perf", "pingpong", "--engine", engine, "--sizes", "4M", "--iters", "3", "--verify", "--quiet",
              env=env)
    assert p.returncode == 0, p.stderr


def test_tuning_file_not_regular_does_not_hang():
    p = _tool("fmx_info", "--config", env={"FMX_TUNING_FILE": "/dev/zero"}, timeout=30)
    assert p.returncode == 0
    assert "FMX-CFG-FILE: /dev/zero is not a regular file" in p.stderr


@pytest.mark.parametrize("args,msg", [
    (["--engine", "nosuch"], "unknown engine 'nosuch'"),
    (["--sizes", "1K,,2K"], "bad size ''"),
    (["--sizes", "1K,"], "bad size ''"),
])
def test_fmx_perf_refuses_bad_options(args, msg):
    p = _tool("fmx_perf", "pingpong", *args, timeout=30)
    assert p.returncode == 2
    assert msg in p.stderr


# ---- packaging ----

@pytest.mark.skipif(shutil.which("pkg-config") is None or shutil.which("cmake") is None,
                    reason="needs pkg-config and cmake")
def test_install_prefix_pkg_config_compile_line(tmp_path):
    """README's compile line works against `cmake --install --prefix P`
    (fmx.pc said prefix=/usr/local whatever P was); the program finds
    libfmx.so by LD_LIBRARY_PATH or by an rpath, as the README says."""
    prefix = tmp_path / "prefix"
    p = subprocess.run(["cmake", "--install", BUILD, "--prefix", str(prefix)], capture_output=True, text=True,
                       timeout=120)
    assert p.returncode == 0, p.stderr
    assert list(prefix.rglob("libmyriexpress.a")) and list(prefix.rglob("libmyriexpress.so.0")), p.stdout
    pcdir = [str(d) for d in prefix.rglob("pkgconfig")][0]
    src = tmp_path / "app.c"
    src.write_text('#include <fmx.h>\n#include <stdio.h>\n'
                   'int main(void) { if (fmx_init()) return 1; puts(fmx_strerror(FMX_SUCCESS)); '
                   'return fmx_finalize(); }\n')
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "fmx"], capture_output=True, text=True,
                           env=dict(os.environ, PKG_CONFIG_PATH=pcdir)).stdout.split()
    assert any(f.startswith("-I" + str(prefix)) or f.startswith("-I" + pcdir) for f in flags), flags
    libdir = [f[2:] for f in flags if f.startswith("-L")][0]
    cc = os.environ.get("CC", "cc")
    ldd = subprocess.run(["ldd", os.path.join(libdir, "libfmx.so")], capture_output=True, text=True).stdout
    if "libasan" in ldd:  # the sanitizer build: its runtime must come first
        flags = ["-fsanitize=address,undefined"] + flags
    p = subprocess.run([cc, str(src), "-o", str(tmp_path / "app")] + flags, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    env = {k: v for k, v in os.environ.items() if k != "LD_LIBRARY_PATH"}
    p = subprocess.run([str(tmp_path / "app")], capture_output=True, text=True, env=dict(env, LD_LIBRARY_PATH=libdir))
    assert p.stdout.strip() == "Success", p.stderr
    p = subprocess.run([cc, str(src), "-o", str(tmp_path / "app2"), "-Wl,-rpath," + libdir] + flags,
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    p = subprocess.run([str(tmp_path / "app2")], capture_output=True, text=True, env=env)
    assert p.stdout.strip() == "Success", p.stderr
    p = subprocess.run([str(prefix / "bin" / "fmx_info")], capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    # The provider went under P too (not into the system's libfabric
    # directory), and the installed fmx_info finds it there.
    prov = prefix / "lib" / "libfabric" / "libfmx-fi.so"
    if os.path.exists(os.path.join(BUILD, "ofi", "libfmx-fi.so")):
        assert prov.exists(), sorted(str(f) for f in prefix.rglob("*fi.so"))
        env_nofi = {k: v for k, v in env.items() if k != "FI_PROVIDER_PATH"}
        p = subprocess.run([str(prefix / "bin" / "fmx_info"), "--json", "--no-discover"], capture_output=True,
                           text=True, env=env_nofi)
        assert json.loads(p.stdout)["ofi_provider"] == str(prov), p.stdout
