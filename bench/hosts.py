# SPDX-License-Identifier: MIT
"""Namespaced hosts for the benches across hosts (bench/apps.py,
bench/incast.py): k network namespaces, each with a veth into one Linux
bridge living in a namespace of its own, named DEV (the same on every
host: one name for PMIx and libfabric to take) and 10.97.0.(i+1)/24; the bridge's
port toward a host may be shaped like a shallow switch port (tbf). With
split=S, hosts S.. sit on a second bridge (its own namespace) joined to the
first by one veth, the uplink, which may be shaped the same way in the
direction from the second bridge to the first: two switches whose hosts
share one link (oversubscription). Torn down by close(), which a failed
setup calls too."""
import os
import random
import re
import subprocess

SUBNET = "10.97.0"
DEV = "fxeth0"


def sh(*argv, check=True):
    return subprocess.run(argv, check=check, capture_output=True, text=True, timeout=60)


def veth(a, ns_a, b, ns_b):
    """A veth pair, end a moved into namespace ns_a and end b into ns_b,
    each end keeping a kernel interface index below 32768. Made in this
    namespace, a device takes this namespace's next index, which only grows:
    on a machine up for days it passes 32768, and Debian's PMIx (Open MPI
    4.1's mpirun) then fails with "The PMIx server's listener thread failed
    to start" on that interface. So each end is given a free small index;
    a move keeps it, unless the namespace moved to has it already, which
    then gives one of its own (small: its count starts at 1)."""
    used = {int(x.split(":", 1)[0]) for x in sh("ip", "-o", "link").stdout.splitlines() if x[:1].isdigit()}
    free = [i for i in range(1000, 32000) if i not in used]
    for _ in range(20):
        ia, ib = random.sample(free, 2)
        made = sh("ip", "link", "add", a, "index", str(ia), "type", "veth", "peer", "name", b, "index", str(ib),
                  check=False)
        if made.returncode == 0:
            break
        # "exists" for a name that is free: another caller took an index meanwhile, draw again; any other
        # error is the answer.
        if "exists" not in made.stderr or sh("ip", "link", "show", a, check=False).returncode == 0:
            break
    if made.returncode != 0:
        raise subprocess.CalledProcessError(made.returncode, made.args, made.stdout, made.stderr)
    try:
        sh("ip", "link", "set", a, "netns", ns_a)
        sh("ip", "link", "set", b, "netns", ns_b)
    except subprocess.SubprocessError:
        sh("ip", "link", "del", a, check=False)  # the pair with it, where it still is here
        sh("ip", "-n", ns_a, "link", "del", a, check=False)
        raise


class Hosts:
    """k namespaces (fxa0-TAG..) on the bridge br0 of namespace fxabrTAG."""

    def __init__(self, k, tag, split=0):
        self.br = "fxabr" + tag
        self.br2 = "fxabs" + tag if 0 < split < k else None
        self.split = split if self.br2 else k
        self.up = "fxup" + tag
        self.bottleneck = None if self.br2 else 0  # what port_stats reads where the bench shapes one port
        self.ns = ["fxa%d-%s" % (i, tag) for i in range(k)]
        self.ports = ["fxp%d%s" % (i, tag) for i in range(k)]
        self.dev0 = DEV
        try:
            self._make(tag)
        except (subprocess.SubprocessError, OSError):
            self.close()
            raise

    def _make(self, tag):
        sh("ip", "netns", "add", self.br)
        sh("ip", "-n", self.br, "link", "add", "br0", "type", "bridge")
        sh("ip", "-n", self.br, "link", "set", "br0", "up")
        if self.br2:
            sh("ip", "netns", "add", self.br2)
            sh("ip", "-n", self.br2, "link", "add", "br0", "type", "bridge")
            sh("ip", "-n", self.br2, "link", "set", "br0", "up")
            veth(self.up + "a", self.br, self.up + "b", self.br2)
            for br, end in ((self.br, "a"), (self.br2, "b")):
                sh("ip", "-n", br, "link", "set", self.up + end, "master", "br0", "up")
        for i, ns in enumerate(self.ns):
            br = self.br if i < self.split else self.br2
            dev, port = "fxv%d%s" % (i, tag), self.ports[i]
            sh("ip", "netns", "add", ns)
            veth(dev, ns, port, br)
            sh("ip", "-n", ns, "link", "set", "dev", dev, "name", DEV)
            sh("ip", "-n", br, "link", "set", port, "master", "br0", "up")
            sh("ip", "-n", ns, "addr", "add", "%s.%d/24" % (SUBNET, i + 1), "dev", DEV)
            sh("ip", "-n", ns, "link", "set", DEV, "up")
            sh("ip", "-n", ns, "link", "set", "lo", "up")

    def shape(self, i, rate="1gbit", burst="32kb", limit="64kb"):
        """The bridge's port toward host i as a shallow switch port: a token
        bucket of `rate`, dropping what overflows `limit` bytes queued."""
        sh("ip", "netns", "exec", self.br, "tc", "qdisc", "replace", "dev", self.ports[i], "root", "tbf", "rate", rate,
           "burst", burst, "limit", limit)

    def shape_uplink(self, rate="1gbit", burst="32kb", limit="64kb"):
        """The uplink, from the second bridge toward the first, as shape()."""
        sh("ip", "netns", "exec", self.br2, "tc", "qdisc", "replace", "dev", self.up + "b", "root", "tbf", "rate", rate,
           "burst", burst, "limit", limit)

    def port_stats(self, i):
        """(frames sent, frames dropped) by the shaped port toward host i
        (None: the uplink)."""
        ns, dev = (self.br2, self.up + "b") if i is None else (self.br if i < self.split else self.br2, self.ports[i])
        out = sh("ip", "netns", "exec", ns, "tc", "-s", "qdisc", "show", "dev", dev).stdout
        m = re.search(r"Sent \d+ bytes (\d+) pkt \(dropped (\d+)", out)
        return (int(m.group(1)), int(m.group(2))) if m else (0, 0)

    def wrapper(self, path, rank_var):
        """A script that starts "$@" in the namespace of rank $rank_var."""
        with open(path, "w") as f:
            f.write("#!/bin/sh\ncase $%s in\n" % rank_var)
            for i, ns in enumerate(self.ns):
                f.write('%d) exec ip netns exec %s "$@";;\n' % (i, ns))
            f.write("esac\nexit 9\n")
        os.chmod(path, 0o755)
        return path

    def close(self):
        """Kill what still runs in the namespaces, then delete them. A run
        given up on (a timeout kills mpirun alone) leaves its ranks behind,
        and a namespace deleted under them lives on with them: 64 ranks of
        a 600 s timeout kept spinning for half an hour before this."""
        names = self.ns + [self.br] + ([self.br2] if self.br2 else [])
        for ns in names:
            for pid in sh("ip", "netns", "pids", ns, check=False).stdout.split():
                try:
                    os.kill(int(pid), 9)
                except (ValueError, OSError):
                    pass
        for ns in names:
            sh("ip", "netns", "del", ns, check=False)
