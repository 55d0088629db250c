# SPDX-License-Identifier: MIT
"""The tools run for real: two pinned processes, every byte verified."""
import json
import os
import re

import pytest

from sysutil import BUILD, run


def perf_json(extra_env=None, sizes="0,8,4K,64K,1M,5M"):
    p = run(["fmx_perf", "pingpong", "--sizes", sizes, "--iters", "20", "--verify", "--json"], extra_env)
    assert p.returncode == 0, p.stderr
    return [json.loads(line) for line in p.stdout.splitlines() if line.startswith("{")]


def caches():
    p = run(["fmx_info", "--json"])
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)["caches"]


def test_pingpong_verify_auto():
    # as shipped (FMX_ADAPT): whichever engine the receiver measured fastest,
    # every byte checked
    rows = perf_json()
    assert [r["size"] for r in rows] == [0, 8, 4096, 65536, 1 << 20, 5 << 20]
    assert all(r["engine"] in ("cma", "ring", "coop", "vmsplice") for r in rows if r["size"] >= (1 << 20))
    # the topology's rule alone: ring from one L2's size when the two cores
    # (0, 1) share the L3, else cma; the ping-pong waits, so nothing is
    # offloaded
    rows = perf_json({"FMX_ADAPT": "0"})
    c = caches()
    l2 = c.get("l2", {}).get("size", 0)
    shared = c.get("l3", {}).get("nshare", 0) >= 2
    for r in rows:
        if r["size"] >= (1 << 20):
            assert r["engine"] == ("ring" if shared and l2 and r["size"] >= l2 else "cma"), rows
    assert all(r["latency_us"] > 0 for r in rows)


def test_pingpong_cma_forbidden_uses_ring():
    rows = perf_json({"FMX_CMA": "0"})
    big = [r for r in rows if r["size"] >= (1 << 20)]
    assert all(r["engine"] == "ring" for r in big), rows


def test_pingpong_forced_ring():
    rows = perf_json({"FMX_BULK": "ring"})
    assert all(r["engine"] == "ring" for r in rows if r["size"] >= (1 << 20))


def test_fmx_info_reports_engines_and_config():
    p = run(["fmx_info", "--config"])
    assert p.returncode == 0, p.stderr
    assert "cma" in p.stdout and "ring" in p.stdout
    assert "FMX_RNDV_THRESHOLD" in p.stdout
    p = run(["fmx_info"], {"FMX_CMA": "0"})
    assert "disabled by FMX_CMA=0" in p.stdout


def test_fmx_info_sections_in_the_manner_of_ucx_info():
    """-v the version alone; -d, -c and -b one section each (devices,
    configuration, build), combinable; none of them: everything but the
    tunables; --config: everything and the tunables."""
    version = run(["fmx_info", "--version"])
    assert version.returncode == 0 and re.fullmatch(r"fmx \d+\.\d+\.\d+\n", version.stdout), version.stdout
    assert run(["fmx_info", "-v"]).stdout == version.stdout
    d = run(["fmx_info", "-d", "--no-discover"]).stdout
    assert "engines:" in d and "interfaces:" in d and "peer table:" in d
    assert "L1d" not in d and "config:" not in d and "build:" not in d
    c = run(["fmx_info", "-c"]).stdout
    assert "config:" in c and "FMX_SPIN_US" in c and "engines:" not in c and "L1d" not in c
    b = run(["fmx_info", "-b"])
    assert b.returncode == 0 and "build:" in b.stdout and "engines:" not in b.stdout
    assert re.search(r"^  provider +(libfmx-fi.so for libfabric|not built)", b.stdout, re.M), b.stdout
    both = run(["fmx_info", "-d", "-c", "--no-discover"]).stdout
    assert "engines:" in both and "config:" in both and "L1d" not in both
    everything = run(["fmx_info", "--no-discover"]).stdout
    assert "L1d" in everything and "engines:" in everything and "config:" not in everything
    assert "config:" in run(["fmx_info", "--config", "--no-discover"]).stdout
    d_config = run(["fmx_info", "-d", "--config", "--no-discover"]).stdout  # --config adds to a section too
    assert "engines:" in d_config and "config:" in d_config and "L1d" not in d_config
    j = json.loads(run(["fmx_info", "-b", "--json"]).stdout)
    assert set(j) == {"version", "build"} and {"prefix", "provider_dir", "mx", "mpi", "man"} <= set(j["build"])
    j = json.loads(run(["fmx_info", "-c", "-d", "--json", "--no-discover"]).stdout)
    assert {"config", "engines", "interfaces"} <= set(j) and "caches" not in j
    bad = run(["fmx_info", "-x"])
    assert bad.returncode == 2 and "unknown option '-x'" in bad.stderr


@pytest.mark.skipif(not os.path.exists(os.path.join(BUILD, "ofi", "libfmx-fi.so")),
                    reason="libfmx-fi.so not built (no libfabric-dev)")
def test_fmx_info_says_where_the_provider_is(tmp_path):
    prov = os.path.join(BUILD, "ofi")
    p = run(["fmx_info", "--json"], {"FI_PROVIDER_PATH": str(tmp_path) + ":" + prov})
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["ofi_provider"] == os.path.join(prov, "libfmx-fi.so")
    p = run(["fmx_info"], {"FI_PROVIDER_PATH": str(tmp_path)})  # only there: libfabric would not find it
    assert "provider not found (make install puts libfmx-fi.so into" in p.stdout, p.stdout
    assert json.loads(run(["fmx_info", "--json"], {"FI_PROVIDER_PATH": str(tmp_path)}).stdout)["ofi_provider"] is None


def test_fmx_info_says_when_a_hypervisor_runs_us():
    # The CPU's own word (CPUID), as /proc/cpuinfo lists it; in a VM the L3
    # figure is the host's, and neither the NT threshold nor the offload
    # switch is derived from it.
    with open("/proc/cpuinfo") as f:
        flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
    info = json.loads(run(["fmx_info", "--json"]).stdout)
    assert info["virtualized"] == ("hypervisor" in flags)
    cfg = run(["fmx_info", "--config"], {"FMX_TUNING_FILE": ""}).stdout
    for name in ("FMX_COPY_NT_THRESHOLD", "FMX_OFFLOAD_THRESHOLD"):
        row = [l for l in cfg.splitlines() if l.startswith(name + " ")][0].split()
        if info["virtualized"]:
            assert row[1:3] == ["8M", "default"], row
        elif info["caches"]["l3"]["size"] or info["caches"]["l2"]["size"]:
            assert row[2] == "topology", row


def test_fmx_info_bad_option():
    assert run(["fmx_info", "--bogus"]).returncode == 2


def test_fmx_counters_self_test():
    p = run(["fmx_counters", "--self-test", "1M"])
    assert p.returncode == 0, p.stderr
    assert "rendezvous" in p.stdout


def test_fmx_counters_labels_whole():
    """Every label comes whole, the longest too (they were cut at 63
    bytes, and a label that outgrew them no longer matched)."""
    p = run(["fmx_counters", "--json", "--all"])
    assert p.returncode == 0, p.stderr
    labels = json.loads(p.stdout)["counters"]
    assert "channel 0 naps on the net socket for an application away (FMX_NET_PROGRESS), each then a progress " \
           "pass" in labels, sorted(labels)
    assert "net: congestion windows halved on a hole a peer reported or a resend on the timer" in labels


def test_fmx_perf_bad_input():
    assert run(["fmx_perf", "pingpong", "--sizes", "12Q"]).returncode == 2
    assert run(["fmx_perf", "nonsense"]).returncode == 2
