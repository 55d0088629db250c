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

from sysutil import BUILD, read_line

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
PINGPONG = os.path.join(BUILD, "tests", "mx", "mx_pingpong")
LIB = os.path.join(BUILD, "libmyriexpress.so")
ENV = dict(os.environ, FMX_NET="off")
VERSIONED = {"mx_open_endpoint": "MX_0.9", "mx_decompose_endpoint_addr": "MX_0.9", "mx_get_info": "MX_0.91",
             "mx_test": "MX_0.91", "mx_wait": "MX_0.91", "mx_iprobe": "MX_0.91", "mx__init_api": "MX_0.92"}


def pingpong(client_args, server_args=()):
    srv = subprocess.Popen([PINGPONG] + list(server_args), env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert read_line(srv).startswith("ready endpoint 0"), srv.stderr.read()
        cli = subprocess.run([PINGPONG] + client_args, env=ENV, capture_output=True, text=True, timeout=120)
        assert cli.returncode == 0, cli.stderr
        assert srv.wait(timeout=60) == 0, srv.stderr.read()
        return [l.split() for l in cli.stdout.splitlines()[1:]]
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()


def test_pingpong_localhost_every_byte():
    """0 B to 4 MiB (eager, medium, rendezvous), every byte checked, the
    peer named "localhost" (the loopback board's MX name)."""
    rows = pingpong(["-d", "localhost", "-e", "0", "-N", "20", "-V", "-S", str(4 << 20)], ["-S", str(4 << 20)])
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
def test_builds_like_mtl_mx(tmp_path):
    """What Open MPI's mtl mx configure did: include myriexpress.h, link
    -lmyriexpress, call mx_init; then the program runs."""
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
    subprocess.run(["cc"] + san + [str(src), "-I", os.path.join(ROOT, "include"), "-L", BUILD, "-lmyriexpress",
                    "-Wl,-rpath," + os.path.abspath(BUILD), "-o", str(exe)], check=True)
    p = subprocess.run([str(exe)], env=ENV, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Command Timeout" in p.stdout, p.stdout + p.stderr
