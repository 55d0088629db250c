# SPDX-License-Identifier: MIT
"""fmx_tune measures the engines for real and writes the tuning file; the
selector follows the costs in the tuning file (checked with costs written by
hand, so the expected engine does not depend on this machine's speed)."""
import json

from sysutil import run


def engines_by_size(tuning, sizes="256K,2M"):
    p = run(["fmx_perf", "pingpong", "--sizes", sizes, "--iters", "5", "--verify", "--json", "--quiet"],
            {"FMX_TUNING_FILE": str(tuning), "FMX_RNDV_THRESHOLD": "64K"})  # 256K rendezvous on any L2
    assert p.returncode == 0, p.stderr
    return {r["size"]: r["engine"] for r in map(json.loads, p.stdout.splitlines())}


def test_fmx_tune_writes_costs_and_keeps_other_lines(tmp_path):
    f = tmp_path / "tuning.conf"
    f.write_text("# mine\nFMX_SPIN_US=500\nFMX_COST_CMA=NUMA:9:999\nFMX_RNDV_THRESHOLD=1\n"
                 "FMX_COPY_NT_THRESHOLD=7M\n")
    p = run(["fmx_tune", "--quick", "--reps", "1", "--output", str(f)])
    assert p.returncode == 0, p.stderr
    assert "[fmx_tune] rep 1/1: cma" in p.stderr and "loss vs best" in p.stdout
    assert "eager against rendezvous" in p.stdout
    text = f.read_text()
    lines = text.splitlines()
    assert "# mine" in lines and "FMX_SPIN_US=500" in lines
    cma = [l for l in lines if l.startswith("FMX_COST_CMA=")]
    ring = [l for l in lines if l.startswith("FMX_COST_RING=")]
    # an engine the model never picks is not written; cma keeps its NUMA entry
    assert len(cma) == 1 and len(ring) <= 1
    thr = [l for l in lines if l.startswith("FMX_RNDV_THRESHOLD=")]
    assert len(thr) == 1 and int(thr[0].split("=")[1]) >= 4096  # measured, replaced
    assert "NUMA:9:999" in cma[0]          # another level's measurement stays
    # Regular against non-temporal stores: a threshold written, or the old line kept, as it says.
    nt = [l for l in lines if l.startswith("FMX_COPY_NT_THRESHOLD=")]
    said = [l[2:] for l in p.stdout.splitlines() if l.startswith("# FMX_COPY_NT_THRESHOLD")]
    assert "regular against" in p.stdout and len(said) == 1, p.stdout
    if "kept" in said[0]:
        assert nt == ["FMX_COPY_NT_THRESHOLD=7M"], nt
    else:
        assert nt == [said[0]] and int(said[0].split("=")[1]) > 0, (nt, said)
    # the engines the model picks got this level's entries (the cheapest at some size: at least one)
    level = [l for l in lines if l.startswith("# fmx_tune")][0].split("(")[1].rstrip(")")
    costs = [l for l in lines if l.startswith("FMX_COST_")]
    assert any(level + ":" in l or level + "@" in l for l in costs), costs
    # A second run replaces its level's entries, adds no duplicate lines.
    p = run(["fmx_tune", "--quick", "--reps", "1", "--output", str(f), "--engines", "ring", "--no-threshold",
             "--no-nt"])
    assert p.returncode == 0, p.stderr
    assert "regular against" not in p.stdout
    lines2 = f.read_text().splitlines()
    assert sum(l.startswith("FMX_COST_RING=") for l in lines2) == 1  # alone, ring is always picked
    assert sum(l.startswith("# fmx_tune") for l in lines2) == 1
    assert [l for l in lines2 if l.startswith("FMX_COST_CMA=")] == cma
    assert [l for l in lines2 if l.startswith("FMX_RNDV_THRESHOLD=")] == thr  # --no-threshold keeps it
    assert [l for l in lines2 if l.startswith("FMX_COPY_NT_THRESHOLD=")] == nt  # --no-nt keeps it
    # The library reads what fmx_tune wrote: fmx_info shows where it came from.
    p = run(["fmx_info", "--config"], {"FMX_TUNING_FILE": str(f)})
    assert any(l.startswith("FMX_COST_RING") and "tuning file" in l for l in p.stdout.splitlines())


def test_fmx_tune_dry_run_writes_nothing(tmp_path):
    f = tmp_path / "none.conf"
    p = run(["fmx_tune", "--quick", "--reps", "1", "--engines", "cma", "--dry-run", "--output", str(f)])
    assert p.returncode == 0, p.stderr
    assert "FMX_COST_CMA=" in p.stdout and not f.exists()


def test_fmx_tune_bad_input(tmp_path):
    for args in (["--reps", "0"], ["--cores", "1"], ["--bogus"], ["extra"], ["--engines", "nope", "--quick"]):
        p = run(["fmx_tune"] + args + ["--output", str(tmp_path / "x.conf")])
        assert p.returncode in (1, 2), args
        assert p.returncode == 2 or "no usable engine" in p.stderr
    p = run(["fmx_tune", "--output", "/proc/nope/tuning.conf", "--quick", "--reps", "1", "--engines", "cma"])
    assert p.returncode == 1 and "cannot" in p.stderr


def test_selection_follows_tuning_file(tmp_path):
    f = tmp_path / "t.conf"
    levels = ["CPU", "L1", "L2", "L3", "NUMA", "SYS"]
    # ring cheap everywhere: auto takes ring
    f.write_text("".join("FMX_COST_CMA=%s:100:100\nFMX_COST_RING=%s:1:100000\n" % (l, l) for l in levels))
    assert set(engines_by_size(f).values()) == {"ring"}
    # segments: cma until 1 MiB, ring from there (the nearest level is used)
    f.write_text("FMX_COST_CMA=L3:1:100000;L3@1048576:1:10\nFMX_COST_RING=L3:5:5000\n")
    assert engines_by_size(f) == {256 << 10: "cma", 2 << 20: "ring"}
    # malformed: ignored with a warning, the untuned choice used (the
    # topology's rule, FMX_ADAPT off: cma below one L2's size)
    f.write_text("FMX_COST_RING=L3:fast\n")
    p = run(["fmx_perf", "pingpong", "--sizes", "64K", "--iters", "3", "--json", "--quiet"],
            {"FMX_TUNING_FILE": str(f), "FMX_RNDV_THRESHOLD": "16K", "FMX_ADAPT": "0"})
    assert p.returncode == 0 and json.loads(p.stdout)["engine"] == "cma"
    assert "FMX-COST-BAD" in p.stderr
    # FMX_BULK still forces
    f.write_text("FMX_COST_RING=L3:1:100000\n")
    p = run(["fmx_perf", "pingpong", "--sizes", "1M", "--iters", "3", "--json", "--quiet", "--engine", "cma"],
            {"FMX_TUNING_FILE": str(f)})
    assert json.loads(p.stdout)["engine"] == "cma"
