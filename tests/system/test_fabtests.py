# SPDX-License-Identifier: MIT
"""libfabric's own tests (fabtests 1.17, ../shared/third_party, built once
into BUILD/fabtests by scripts/build-fabtests.sh) against the fmx provider:
the tagged-RDM list of that README. Our own runner: runfabtests.sh's cleanup
kills every fi_* process of the machine.

The client-server tests run with -E (the address exchanged out of band on a
socket): fmx names carry each endpoint's random key, so fi_getinfo cannot
turn a node and a service into a peer's address. Left out, with the reason:
  - fi_poll: it has no -E (it never opens the out-of-band socket) and so
    needs fi_getinfo(node, service) to resolve the server's address; poll
    sets are checked in fi_provider_check instead;
  - fi_av_test: it needs -g, a good address in textual form, which fmx's
    binary names with keys do not have;
  - in fi_getinfo_test, getinfo_no_hints5 and getinfo_src_dest1 ask for a
    destination address from a node and a service, as above; the run must
    fail those two and nothing else."""
import os
import shutil
import socket
import subprocess
import time

import pytest

from sysutil import BUILD, run
from test_ofi import PROV_DIR, sanitized

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
FT_DIR = os.path.join(BUILD, "fabtests")
FT_BIN = os.path.join(FT_DIR, "install", "bin")
ENV = {"FI_PROVIDER_PATH": PROV_DIR}


def tarball():
    for d in (os.environ.get("FMX_SHARED", ""), os.path.join(ROOT, "..", "shared"), "/work/shared"):
        t = os.path.join(d, "third_party", "fabtests-1.17.0.tar.gz")
        if d and os.path.exists(t):
            return t
    return None


pytestmark = [
    pytest.mark.skipif(not os.path.exists(os.path.join(PROV_DIR, "libfmx-fi.so")),
                       reason="libfmx-fi.so not built (no libfabric-dev)"),
    pytest.mark.skipif(sanitized(), reason="fabtests are not built with the sanitizer this build's provider needs"),
    pytest.mark.skipif(tarball() is None, reason="fabtests-1.17.0.tar.gz not found in ../shared/third_party"),
]

_built = []


def fabtests():
    if not _built:
        p = run(["sh", os.path.join(ROOT, "scripts", "build-fabtests.sh"), tarball(), FT_DIR], timeout=1200)
        assert p.returncode == 0, "building fabtests failed (%s/build.log): %s" % (FT_DIR, p.stderr[-1000:])
        _built.append(True)
    return FT_BIN


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pair(test, args, timeout=120, hosts=None):
    """Server, then client, on an out-of-band port of their own; with
    hosts (a netns.Pair), the server in its namespace b and the client in
    a: fmx's net transport between them."""
    b = fabtests()
    port = "-E=%d" % free_port()
    argv = [os.path.join(b, test), "-p", "fmx"] + args + [port]
    srv_argv, cli_argv = argv + ["-s", "127.0.0.1"], argv + ["-s", "127.0.0.1", "127.0.0.1"]
    if hosts:
        srv_argv = ["ip", "netns", "exec", hosts.b] + argv + ["-s", hosts.ip_b]
        cli_argv = ["ip", "netns", "exec", hosts.a] + argv + ["-s", hosts.ip_a, hosts.ip_b]
    env = dict(os.environ, **ENV)
    srv = subprocess.Popen(srv_argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           start_new_session=True)
    try:
        time.sleep(0.3)
        cli = None
        for _ in range(20):  # the server may not listen yet
            cli = subprocess.run(cli_argv, env=env, capture_output=True, text=True, timeout=timeout)
            if cli.returncode == 0 or "Connection refused" not in cli.stdout + cli.stderr:
                break
            time.sleep(0.3)
        out, _ = srv.communicate(timeout=timeout)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    return srv.returncode, out, cli


PAIRS = [
    ("fi_rdm_tagged_pingpong", []), ("fi_rdm_tagged_bw", ["-v"]), ("fi_rdm_tagged_peek", []),
    ("fi_unexpected_msg", ["-e", "rdm"]), ("fi_recv_cancel", ["-e", "rdm"]), ("fi_msg_inject", []),
    ("fi_av_xfer", ["-e", "rdm"]), ("fi_rdm", []), ("fi_rdm_pingpong", []), ("fi_multi_recv", ["-e", "rdm"]),
    ("fi_cq_data", ["-e", "rdm"]), ("fi_bw", ["-e", "rdm"]), ("fi_rdm_multi_client", []),
]


@pytest.mark.parametrize("test,args", PAIRS, ids=[t for t, _ in PAIRS])
def test_client_server(test, args):
    srv_rc, srv_out, cli = pair(test, args)
    assert srv_rc == 0 and cli.returncode == 0, \
        "server %d: %s\nclient %d: %s" % (srv_rc, srv_out[-1500:], cli.returncode, (cli.stdout + cli.stderr)[-1500:])


@pytest.fixture(scope="module")
def hosts():
    """Two network namespaces joined by a veth pair (as root)."""
    if os.geteuid() != 0 or not shutil.which("ip"):
        pytest.skip("network namespaces need root and iproute2")
    from netns import Pair
    p = Pair(1500)
    yield p
    p.close()


@pytest.mark.parametrize("test,args", PAIRS, ids=[t for t, _ in PAIRS])
def test_client_server_across_hosts(hosts, test, args):
    """The same list between two namespaces: the provider over fmx's net
    transport (raw frames, the answers to pulls over UDP)."""
    srv_rc, srv_out, cli = pair(test, args, hosts=hosts)
    assert srv_rc == 0 and cli.returncode == 0, \
        "server %d: %s\nclient %d: %s" % (srv_rc, srv_out[-1500:], cli.returncode, (cli.stdout + cli.stderr)[-1500:])


@pytest.mark.parametrize("test", ["fi_dom_test", "fi_eq_test", "fi_cq_test", "fi_mr_test", "fi_cntr_test"])
def test_unit(test):
    p = run([os.path.join(fabtests(), test), "-p", "fmx"], ENV, timeout=300)
    assert p.returncode == 0, (p.stdout + p.stderr)[-2000:]


def test_getinfo_fails_only_the_node_service_cases():
    p = run([os.path.join(fabtests(), "fi_getinfo_test"), "-p", "fmx"], ENV, timeout=300)
    failed = sorted(line.split()[1] for line in p.stdout.splitlines()
                    if line.startswith("Running") and "FAIL" in line)
    assert failed == ["getinfo_no_hints5", "getinfo_src_dest1"], p.stdout[-3000:]
    assert "FAIL: fi_getinfo returned" not in p.stdout
