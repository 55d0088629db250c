# SPDX-License-Identifier: MIT
"""The layering check (scripts/check-layers.py) catches what it claims to:
an include that goes up a layer, and a lower layer calling an upper one by
name. It runs on a copy of the tree with one wrong thing planted."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "check-layers.py")


def check(tree):
    return subprocess.run([sys.executable, SCRIPT], env=dict(os.environ, FMX_LAYERS_ROOT=str(tree)),
                          capture_output=True, text=True, timeout=60)


def copy_tree(tmp_path):
    for top in ("src", "tools", "tests/system/progs"):
        shutil.copytree(os.path.join(ROOT, top), tmp_path / top)
    return tmp_path


def append(path, text):
    with open(path, "a", encoding="utf-8") as f:
        f.write(text)


def test_tree_passes(tmp_path):
    p = check(copy_tree(tmp_path))
    assert p.returncode == 0, p.stdout
    assert "ok (0 known wrong arrows" in p.stdout


def test_include_up_fails(tmp_path):
    tree = copy_tree(tmp_path)
    append(tree / "src/proto/send.c", "#include \"core/transport.h\"\n")
    p = check(tree)
    assert p.returncode == 1
    assert "src/proto/send.c: goes up: src/proto (proto) includes core/transport.h (core)" in p.stdout


def test_internal_header_fails(tmp_path):
    tree = copy_tree(tmp_path)
    append(tree / "src/core/api.c", '#include "proto/proto_int.h"\n')
    p = check(tree)
    assert p.returncode == 1
    assert "internal to src/proto" in p.stdout


def test_tool_internals_fail(tmp_path):
    tree = copy_tree(tmp_path)
    append(tree / "tools/fmx_info.c", '#include "bulk/engine.h"\n')
    p = check(tree)
    assert p.returncode == 1
    assert "tools/fmx_info.c: a tool or test program includes the library's internals" in p.stdout


def test_call_up_by_name_fails(tmp_path):
    # proto declares a function the core defines: the call goes up by name
    tree = copy_tree(tmp_path)
    append(tree / "src/proto/proto_int.h", "\nvoid core_thing(struct fmx_endpoint *ep);\n")
    append(tree / "src/core/api.c", "\nvoid core_thing(struct fmx_endpoint *ep) { (void)ep; }\n")
    p = check(tree)
    assert p.returncode == 1
    assert "src/proto/proto_int.h declares core_thing(), which src/core/api.c (core) defines" in p.stdout


def test_call_up_by_own_prototype_fails(tmp_path):
    # bulk writes its own prototype of a core function and calls it
    tree = copy_tree(tmp_path)
    append(tree / "src/bulk/offload.c", "\nvoid ep_progress_locked(struct fmx_endpoint *ep);\n")
    p = check(tree)
    assert p.returncode == 1
    assert "src/bulk/offload.c declares ep_progress_locked(), which src/core/endpoint.c (core) defines" in p.stdout
