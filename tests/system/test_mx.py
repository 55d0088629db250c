# SPDX-License-Identifier: MIT
"""The MX face: programs built against myriexpress.h alone (tests/mx) run
on libmyriexpress.so between processes of one host; every mx_* function of
the headers is exported, with Open-MX's symbol versions; errors are fatal
unless the program or the environment says otherwise; an MX program builds
the way Open MPI's mtl mx configure built one (headers + -lmyriexpress)."""
import os
import re
import shutil
import socket
import subprocess
import time

import pytest

from netns import pair1500  # noqa: F401 (fixture)
from sysutil import BUILD, read_line

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PINGPONG = os.path.join(BUILD, "tests", "mx", "mx_pingpong")
LIB = os.path.join(BUILD, "libmyriexpress.so")
ENV = dict(os.environ, FMX_NET="off")
VERSIONED = {"mx_open_endpoint": "MX_0.9", "mx_decompose_endpoint_addr": "MX_0.9", "mx_get_info": "MX_0.91",
             "mx_test": "MX_0.91", "mx_wait": "MX_0.91", "mx_iprobe": "MX_0.91", "mx__init_api": "MX_0.92"}


def pingpong(client_args, server_args=(), env=None, ready="ready endpoint 0"):
    env = dict(ENV, **(env or {}))
    srv = subprocess.Popen([PINGPONG] + list(server_args), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert read_line(srv).startswith(ready), srv.stderr.read()
        cli = subprocess.run([PINGPONG] + client_args, env=env, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        assert srv.wait(timeout=60) == 0, srv.stderr.read()
        return [l.split() for l in cli.stdout.splitlines()[1:]]
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def test_pingpong_localhost_every_byte():
    """0 B to 4 MiB (eager, medium, rendezvous), every byte checked, the
    peer named "localhost" (the loopback board's MX name). The server is
    given no size: its buffers (1 MiB) grow to what the client's hello
    announces, as `make bench` runs it up to 64 MiB."""
    rows = pingpong(["-d", "localhost", "-e", "0", "-N", "20", "-V", "-S", str(4 << 20)], [])
    assert [int(r[0]) for r in rows] == [0] + [1 << i for i in range(23)], rows


def test_pingpong_by_board_name():
    """This host's board 0 is "<nodename>:0", as MX names local boards."""
    rows = pingpong(["-d", socket.gethostname() + ":0", "-N", "10", "-s", "8", "-S", "64"])
    assert len(rows) == 4, rows


def test_errors_fatal_by_default():
    """An unknown host: fatal by default (MX's handler prints and exits
    with -1), returned with MX_ERRORS_RETURN, MX_ERRORS_ARE_FATAL=0 or
    OMX_FATAL_ERRORS=0."""
    p = subprocess.run([PINGPONG, "-d", "nosuch:0", "-F"], env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 255, p.stderr
    assert "MX: mx_hostname_to_nic_id: 'nosuch:0' is not in the peer table: Peer Not Found in the Table" in p.stderr
    for extra, argv in (({}, []), ({"MX_ERRORS_ARE_FATAL": "0"}, ["-F"]), ({"OMX_FATAL_ERRORS": "0"}, ["-F"])):
        p = subprocess.run([PINGPONG, "-d", "nosuch:0"] + argv, env=dict(ENV, **extra), capture_output=True,
                           text=True, timeout=60)
        assert p.returncode == 1 and "Peer Not Found in the Table" in p.stderr, (extra, p.stderr)


def header_functions():
    names = set()
    for h in ("myriexpress.h", "mx_extensions.h"):
        text = open(os.path.join(ROOT, "include", h)).read()
        names |= set(re.findall(r"^extern [^;(]*?\b(mx_\w+)\s*\(", text, re.M | re.S))
    return names


@pytest.mark.skipif(not shutil.which("nm"), reason="nm (binutils) not found")
def test_every_function_exported():
    want = header_functions()
    assert len(want) == 45, sorted(want)  # 36 in myriexpress.h, 9 in mx_extensions.h
    out = subprocess.run(["nm", "-D", "--defined-only", "--with-symbol-versions", LIB], capture_output=True,
                         text=True, check=True).stdout
    have = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "TD":
            name, _, ver = f[2].partition("@@")
            have[name] = ver
    assert not want - set(have), "declared in the headers, not exported: %s" % sorted(want - set(have))
    for name, ver in VERSIONED.items():
        assert have[name] == ver, (name, have[name])
    assert "MX_ERRORS_ARE_FATAL" in have and "MX_ERRORS_RETURN" in have


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler")
@pytest.mark.parametrize("link", ["shared", "static"])
def test_builds_like_mtl_mx(tmp_path, link):
    """What Open MPI's mtl mx configure did: include myriexpress.h, link
    -lmyriexpress (libmyriexpress.so, or libmyriexpress.a with hwloc and
    pthread), call mx_init; then the program runs."""
    src = tmp_path / "conftest.c"
    src.write_text(r'''
#include <myriexpress.h>
#include <stdio.h>
int main(void) {
  mx_endpoint_t ep; uint32_t n = 0; uint64_t ids[2];
  if (mx_init() != MX_SUCCESS) return 1;
  if (mx_get_info(NULL, MX_NIC_COUNT, NULL, 0, &n, sizeof n) != MX_SUCCESS || n != 1) return 2;
  if (mx_get_info(NULL, MX_NIC_IDS, NULL, 0, ids, sizeof ids) != MX_SUCCESS || ids[1] != 0) return 3;
  if (mx_open_endpoint(MX_ANY_NIC, MX_ANY_ENDPOINT, 7, NULL, 0, &ep) != MX_SUCCESS) return 4;
  printf("nic %012" PRIx64 " %s\n", ids[0], mx_strerror(MX_TIMEOUT));
  mx_close_endpoint(ep);
  return mx_finalize() == MX_SUCCESS ? 0 : 5;
}
''')
    exe = tmp_path / "conftest"
    # a sanitizer build's library needs its runtime first in the program
    deps = subprocess.run(["ldd", LIB], capture_output=True, text=True).stdout
    san = ["-fsanitize=address,undefined"] if "libasan" in deps else ["-fsanitize=thread"] if "libtsan" in deps else []
    lib = ["-lmyriexpress", "-Wl,-rpath," + os.path.abspath(BUILD)] if link == "shared" else \
        ["-Wl,-Bstatic", "-lmyriexpress", "-Wl,-Bdynamic", "-lhwloc", "-lpthread"]
    subprocess.run(["cc"] + san + [str(src), "-I", os.path.join(ROOT, "include"), "-L", BUILD] + lib +
                   ["-o", str(exe)], check=True)
    deps = subprocess.run(["ldd", str(exe)], capture_output=True, text=True).stdout
    assert ("libmyriexpress" in deps) == (link == "shared") and ("libfmx" in deps) == (link == "shared"), deps
    p = subprocess.run([str(exe)], env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Command Timeout" in p.stdout, p.stdout + p.stderr


def test_static_archive_names():
    """libmyriexpress.a defines every function of the headers and no other
    global name than MX's and fmx's calls; mx_loop_static, which defines
    functions named as the library's internal ones, links and runs (self
    path and shared memory)."""
    out = subprocess.run(["nm", "-g", "--defined-only", os.path.join(BUILD, "libmyriexpress.a")],
                         capture_output=True, text=True, check=True).stdout
    names = {f[2] for f in (l.split() for l in out.splitlines()) if len(f) == 3}
    assert not header_functions() - names, sorted(header_functions() - names)
    # (ASan marks each global variable it instruments with __odr_asan.NAME)
    stray = sorted(n for n in names if not re.match(r"(__odr_asan\.)?(mx_|fmx_|MX_ERRORS_)", n))
    assert not stray, stray
    for env, conns in (({}, "connections 0"), ({"FMX_SELF": "0"}, "connections 1")):
        out = mx_prog("mx_loop_static", "-S", "1048576", env=env)
        assert conns in out, (env, out)


def mx_prog(name, *args, env=None, timeout=300):
    """Run one of tests/mx's programs (each checks itself and prints
    "<name>: ok"); return its stdout."""
    p = subprocess.run([os.path.join(BUILD, "tests", "mx", name)] + list(args), env=dict(ENV, **(env or {})),
                       capture_output=True, text=True, timeout=timeout)
    ok = name.removesuffix("_static") + ": ok"  # a program linked statically says its source's name
    assert p.returncode == 0 and ok in p.stdout, (p.returncode, p.stdout[-2000:], p.stderr[-4000:])
    return p.stdout


def test_stream_every_byte():
    """One-way streams 0 B to 4 MiB, 8 receives posted ahead, every byte
    checked."""
    out = mx_prog("mx_stream", "-V", "-N", "50")
    rows = [l.split() for l in out.splitlines()[1:] if not l.startswith("mx_stream:")]
    assert [int(r[0]) for r in rows] == [0, 8, 100, 4000, 16384, 65536, 300000, 1 << 20, 4 << 20], rows


def test_loop_to_self():
    """0 B to 4 MiB to one's own endpoint, expected and unexpected, send
    and ssend, gathered and scattered; a burst of 32 in flight. On the self
    path (no connection), and through shared memory with MX's and
    Open-MX's names for FMX_SELF=0."""
    out = mx_prog("mx_loop")
    assert "24 sizes x 4 ways" in out and "connections 0" in out, out
    for env in ({"MX_DISABLE_SELF": "1"}, {"OMX_DISABLE_SELF": "1"}, {"FMX_SELF": "0"}):
        out = mx_prog("mx_loop", "-S", "65536", env=env)
        assert "connections 1" in out, (env, out)
    out = mx_prog("mx_loop", "-S", "64", env={"MX_DISABLE_SELF": "1", "OMX_IGNORE_MX_ENV": "1"})
    assert "connections 0" in out, out


def test_session_of_an_address():
    """mx_decompose_endpoint_addr2 gives the session of the endpoint an
    address names: from mx_get_endpoint_addr, mx_connect or a message's
    source alike; a new one once that endpoint reopens under its id; 0 when
    no open endpoint of the process knows the address."""
    out = mx_prog("mx_session")
    assert "sessions: a " in out, out


def test_disable_self_bad_value():
    """A value that is not a boolean is refused with a warning naming the
    variable; the default stands."""
    p = subprocess.run([os.path.join(BUILD, "tests", "mx", "mx_loop"), "-S", "8"], capture_output=True, text=True,
                       env=dict(ENV, OMX_DISABLE_SELF="maybe"), timeout=60)
    assert p.returncode == 0 and "connections 0" in p.stdout, p.stdout + p.stderr
    assert "OMX_DISABLE_SELF" in p.stderr and "not a boolean" in p.stderr, p.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root for network namespaces")
def test_disable_shmem_goes_through_the_net(pair1500):
    """MX_DISABLE_SHMEM=1 (OMX_DISABLE_SHARED=1, FMX_SHM=0): two processes
    of one host talk through the net transport's UDP wire, every byte
    checked; by default the same stream sends no packet."""
    stream = os.path.join(BUILD, "tests", "mx", "mx_stream")
    base = {"FMX_NET_WIRE": "udp", "FMX_NET_DISCOVER_MS": "0"}
    for extra, net in (({}, False), ({"MX_DISABLE_SHMEM": "1"}, True), ({"OMX_DISABLE_SHARED": "1"}, True)):
        p = pair1500.popen(pair1500.a, [stream, "-V", "-N", "20"], dict(base, **extra))
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and "mx_stream: ok" in out, (extra, out, err)
        sent = int(re.search(r"net packets sent (\d+)", out).group(1))
        assert (sent > 0) == net, (extra, out)


def test_disable_shmem_takes_no_shared_memory_resources():
    """FMX_SHM=0: an endpoint holds none of shared memory's resources (no
    watcher thread, no memfd but its counters page); its id is held by a
    socket that takes no connection: a second such endpoint is told the id
    is busy, and a process of this host with shared memory on that
    connects to it is refused (no such endpoint, after
    FMX_CONNECT_WAIT_MS), not left waiting for a handshake."""
    seen = {}
    for shm in ("1", "0"):
        srv = subprocess.Popen([PINGPONG], env=dict(ENV, FMX_SHM=shm), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
        try:
            assert read_line(srv).startswith("ready endpoint 0"), srv.stderr.read()
            fd_dir = "/proc/%d/fd" % srv.pid
            links = [os.readlink(os.path.join(fd_dir, f)) for f in os.listdir(fd_dir)]
            seen[shm] = (len(os.listdir("/proc/%d/task" % srv.pid)),
                         sorted(l for l in links if "memfd:fmx" in l))
            if shm == "0":
                twin = subprocess.run([PINGPONG], env=dict(ENV, FMX_SHM="0"), capture_output=True, text=True,
                                      timeout=60)
                assert twin.returncode != 0 and "Busy" in twin.stderr, twin.stderr
                cli = subprocess.run([PINGPONG, "-d", "localhost", "-N", "1", "-S", "8"], env=ENV,
                                     capture_output=True, text=True, timeout=60)
                assert cli.returncode != 0 and "Bad endpoint id" in cli.stderr, cli.stderr
                # its own open took the next id, warned (not an error) of the one held
                assert "error FMX-EP-SQUATTED" not in cli.stderr, cli.stderr
        finally:
            srv.kill()
            srv.wait()
    threads_on, memfds_on = seen["1"]
    threads_off, memfds_off = seen["0"]
    assert threads_off == threads_on - 1, seen  # the watcher
    assert memfds_off == ["/memfd:fmx-counters (deleted)"], seen
    assert any("fmx-endpoint" in l for l in memfds_on) and any("fmx-pool" in l for l in memfds_on), seen


def test_context_ids_forced():
    """OMX_CTXIDS=bits,shift (FMX_CONTEXT_IDS) splits the matching space of
    every endpoint opened without context ids of its own: mx_loop (whose
    masks are full) runs unchanged; mx_pingpong's server, whose receive
    takes any match (mask 0), is refused as MX has it. A malformed value
    keeps endpoints from opening, with a warning."""
    out = mx_prog("mx_loop", "-S", "65536", env={"OMX_CTXIDS": "8,56"})
    assert "connections 0" in out, out
    srv = subprocess.Popen([PINGPONG], env=dict(ENV, OMX_CTXIDS="8,56"), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    cli = srv
    try:
        assert read_line(srv).startswith("ready endpoint 0")
        # the client waits for an answer that never comes (a receive from
        # anyone outlives a dead peer, as in MX): it is killed below
        cli = subprocess.Popen([PINGPONG, "-d", "localhost", "-N", "1", "-S", "8"], env=ENV,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert srv.wait(timeout=60) == 1
        assert "Matching info does not respect context id mask" in srv.stderr.read()
    finally:
        for p in (srv, cli):
            if p.poll() is None:
                p.kill()
                p.wait()
    p = subprocess.run([os.path.join(BUILD, "tests", "mx", "mx_loop"), "-S", "8"], capture_output=True, text=True,
                       env=dict(ENV, OMX_CTXIDS="20,50"), timeout=60)
    assert p.returncode == 1 and "FMX_CONTEXT_IDS='20,50'" in p.stderr, p.stderr


def test_any_endpoint_from():
    """OMX_ANY_ENDPOINT=n: MX_ANY_ENDPOINT takes endpoint n (the first free
    from n on)."""
    rows = pingpong(["-d", "localhost", "-e", "5", "-N", "5", "-S", "8"], ["-r", str(0xffffffff)],
                    env={"OMX_ANY_ENDPOINT": "5"}, ready="ready endpoint 5")
    assert len(rows) == 5, rows


def test_wait_any_with_context_ids():
    assert mx_prog("mx_wait_any")


def test_wakeup_blocked_wait_and_connect():
    """mx_wakeup ends mx_wait (two threads), mx_wait_any, mx_peek,
    mx_probe (result 0) and mx_connect (MX_TIMEOUT). The connect waits for
    an endpoint nobody opens, with fmx's wait for it longer than the test,
    so only the wakeup can end it."""
    out = mx_prog("mx_wakeup", env={"FMX_CONNECT_WAIT_MS": "600000"})
    assert out.count(": woken") == 5, out


def test_unexpected_and_forgotten():
    assert "8 unexpected messages" in mx_prog("mx_unexp")


def test_cancel():
    assert mx_prog("mx_cancel")


def test_truncation_both_sides():
    """The receiver sees TRUNCATED for every class; the sender for a
    rendezvous and for every mx_issend, as MX has it."""
    out = mx_prog("mx_truncate")
    assert "isend   4194304 into  2097152: sender Message Truncated" in out, out
    assert "isend        16 into        0: sender Success" in out, out
    assert out.count("issend") == 4 and out.count("Message Truncated") == 5, out


@pytest.mark.parametrize("env", [{}, {"FMX_SELF": "0"}], ids=["self", "shm"])
def test_unexp_handler(env):
    """mx_register_unexp_handler: once per message, 0 B to 4 MiB, isend
    and issend, its bytes when it came eagerly; a forgotten receive posted
    inside it, MX_RECV_FINISHED, or queued; the sender sees truncation of
    what was dropped as MX has it."""
    out = mx_prog("mx_unexp_handler", env=env)
    assert "handler calls 48" in out and "handler\" 48," in out, out


def test_vectors_up_to_256_segments():
    assert "5 vector sizes x 6 totals" in mx_prog("mx_vect")


def test_omx_tools(tmp_path):
    """Open-MX's tool names over fmx's tools: omx_info (and mx_info),
    omx_hostname, omx_endpoint_info and omx_counters (a running MX server
    is seen with its pid), omx_init_peers (a good file is printed with the
    FMX_PEERS line; a malformed line fails); what fmx cannot do (clear
    counters, rename a board, another board) fails with a reason."""
    def tool(*argv, rc=0, env=None):
        p = subprocess.run([os.path.join(BUILD, argv[0])] + list(argv[1:]), capture_output=True, text=True,
                           env=dict(ENV, **(env or {})), timeout=60)
        assert p.returncode == rc, (argv, p.returncode, p.stdout, p.stderr)
        return p.stdout + p.stderr

    assert "peer table" in tool("omx_info", "-q") and "peer table" in tool("mx_info", "-q")
    assert "FMX_SELF" in tool("omx_info", "-q", "-v")
    assert socket.gethostname() + ":0" in tool("omx_hostname")
    assert "this host has board 0 only" in tool("omx_info", "-b", "1", rc=1)
    assert "cannot be cleared" in tool("omx_counters", "-c", rc=1)
    assert "no board names in a driver" in tool("omx_hostname", "-n", "x", rc=1)
    srv = subprocess.Popen([PINGPONG], env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert read_line(srv).startswith("ready endpoint 0")
        out = tool("omx_endpoint_info")
        assert "endpoint 0: pid %d, uid %d" % (srv.pid, os.getuid()) in out, out
        assert "# pid %d" % srv.pid in tool("omx_counters", "-v")
    finally:
        srv.kill()
        srv.wait()
    good, bad = tmp_path / "peers", tmp_path / "bad"
    good.write_text("# two hosts\n02:aa:bb:cc:dd:ee node7:0\n02:aa:bb:cc:dd:ef node8:0\n")
    bad.write_text("02:aa:bb:cc:dd:ee node7:0\nnot a mac line\n")
    out = tool("omx_init_peers", str(good))
    assert "node8:0 (file)" in out and "export FMX_PEERS=%s" % good in out, out
    assert "1 line(s) skipped" in tool("omx_init_peers", str(bad), rc=1)
    assert "cannot be read" in tool("omx_init_peers", str(tmp_path / "none"), rc=1)
