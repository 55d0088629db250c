# SPDX-License-Identifier: MIT
"""The man pages (man/*.scd) say what the code does: each one turns into roff
with scdoc without a word of complaint, fmx(7) names every tunable the
library's table has, each tool's page names every long option its --help
prints, the omx page names every script of tools/omx/, and libfmx(3) holds
every prototype of fmx.h."""
import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from sysutil import BUILD, run

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAN = os.path.join(ROOT, "man")
PAGES = sorted(glob.glob(os.path.join(MAN, "*.scd")))
# Each tool and the page that documents it.
TOOL_PAGES = {
    "fmx_info": "fmx_info.1.scd",
    "fmx_perf": "fmx_perf.1.scd",
    "fmx_perf_mpi": "fmx_perf.1.scd",
    "fmx_counters": "fmx_counters.1.scd",
    "fmx_tune": "fmx_tune.1.scd",
}
REQUIRED_TOOLS = ("fmx_info", "fmx_perf", "fmx_counters", "fmx_tune")


def page(name):
    with open(os.path.join(MAN, name), encoding="utf-8") as f:
        return f.read()


def named(text, word):
    """Whether `word` stands in `text` as a whole word: FMX_NET is not named
    by FMX_NET_RING, nor --no-nt by --no-nt-foo."""
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def tool(name):
    path = os.path.join(BUILD, name)
    if not os.access(path, os.X_OK):
        if name in REQUIRED_TOOLS:
            pytest.fail(f"{path} is not built")
        pytest.skip(f"{name} is not built here")
    return path


def test_pages_exist():
    names = {os.path.basename(p) for p in PAGES}
    for want in ("fmx.7.scd", "fi_fmx.7.scd", "libfmx.3.scd", "omx_tools.1.scd", *TOOL_PAGES.values()):
        assert want in names, f"man/{want} is missing"


@pytest.mark.parametrize("path", PAGES, ids=os.path.basename)
def test_page_layout(path):
    # The preamble names the page as its file does (NAME.SECTION.scd), and
    # the sections a reader looks for are there; tools say how they exit.
    name, section = os.path.basename(path)[: -len(".scd")].rsplit(".", 1)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    assert text.splitlines()[0].split()[0] == f"{name}({section})", path
    for head in ("NAME", "SYNOPSIS", "DESCRIPTION", "SEE ALSO"):
        assert re.search(rf"^# {head}$", text, re.M), f"{path}: no '# {head}' section"
    if section == "1":
        assert re.search(r"^# EXIT STATUS$", text, re.M), f"{path}: no '# EXIT STATUS' section"


@pytest.mark.parametrize("path", PAGES, ids=os.path.basename)
def test_scdoc_clean(path):
    scdoc = shutil.which("scdoc")
    if not scdoc:
        pytest.skip("scdoc is not installed (apt-get install scdoc)")
    with open(path, "rb") as src:
        p = subprocess.run([scdoc], stdin=src, capture_output=True, timeout=60)
    assert p.returncode == 0, f"{path}: scdoc exit {p.returncode}: {p.stderr.decode(errors='replace')}"
    assert p.stderr == b"", f"{path}: scdoc said: {p.stderr.decode(errors='replace')}"
    assert b".TH" in p.stdout, path


def tunables():
    """The tunables fmx_info --config prints: the first word of each line of
    its config: section (the lines under a tunable that say what was refused
    start with blanks), and the names of its JSON's config list."""
    env = {"FMX_NET_DISCOVER_MS": "0"}
    p = run([tool("fmx_info"), "--config", "--no-discover"], env, timeout=120)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert "config:" in lines, "fmx_info --config printed no config: section"
    names = set()
    for line in lines[lines.index("config:") + 1:]:
        m = re.match(r"(FMX_[A-Z0-9_]+)\s", line + " ")
        if m:
            names.add(m.group(1))
    p = run([tool("fmx_info"), "--config", "--json", "--no-discover"], env, timeout=120)
    assert p.returncode == 0, p.stderr
    js = {item["name"] for item in json.loads(p.stdout).get("config", [])}
    assert names == js, f"text and JSON disagree: {sorted(names ^ js)}"
    assert len(names) > 40, sorted(names)
    return names


def test_every_tunable_in_fmx7():
    text = page("fmx.7.scd")
    missing = sorted(n for n in tunables() if not named(text, n))
    assert not missing, f"man/fmx.7.scd does not name: {missing}"


def long_options(help_text):
    return sorted(set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", help_text)))


@pytest.mark.parametrize("name", sorted(TOOL_PAGES))
def test_every_long_option_in_its_page(name):
    # fmx_perf_mpi starts the MPI, whose own allocations are not ours to
    # leak-check under ASan.
    p = run([tool(name), "--help"], {"ASAN_OPTIONS": "detect_leaks=0"} if name.endswith("_mpi") else None, timeout=60)
    assert p.returncode == 0, p.stderr
    opts = long_options(p.stdout)
    assert "--help" in opts, p.stdout
    text = page(TOOL_PAGES[name])
    missing = [o for o in opts if not named(text, o)]
    assert not missing, f"man/{TOOL_PAGES[name]} does not name {name}'s {missing}"


def test_omx_page_names_every_script():
    scripts = sorted(os.path.basename(p) for p in glob.glob(os.path.join(ROOT, "tools", "omx", "*"))
                     if os.path.isfile(p))
    assert scripts, "tools/omx/ is empty"
    text = page("omx_tools.1.scd")
    name_section = text.split("# NAME", 1)[1].split("\n# ", 1)[0]
    for script in scripts + ["mx_info"]:  # mx_info: the link to omx_info
        assert named(name_section, script), f"omx_tools(1)'s NAME does not list {script}"
        assert re.search(rf"^\*{script}\*", text, re.M), f"omx_tools(1)'s SYNOPSIS has no line for {script}"


def prototypes(header):
    """The declarations of fmx.h's calls (and the handler type), comments
    left out, each as one line with single blanks."""
    with open(header, encoding="utf-8") as f:
        code = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    decls = re.findall(r"^((?:fmx_return_t|const char \*|void|typedef)[^;{}#]*?\bfmx_\w+\s*\([^;]*?\);)",
                       code, re.M)
    return [" ".join(d.split()) for d in decls]


def test_libfmx3_holds_every_prototype():
    protos = prototypes(os.path.join(ROOT, "include", "fmx.h"))
    assert len(protos) > 50, protos
    text = " ".join(page("libfmx.3.scd").split())
    missing = [p for p in protos if p not in text]
    assert not missing, f"man/libfmx.3.scd lacks: {missing}"
