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


def planted(tmp_path, *edits):
    """The check's verdict on a copy of the tree with (file, text) appended."""
    tree = copy_tree(tmp_path)
    for path, text in edits:
        with open(tree / path, "a", encoding="utf-8") as f:
            f.write(text)
    p = check(tree)
    assert p.returncode == 1, p.stdout
    return p.stdout


def test_tree_passes(tmp_path):
    p = check(copy_tree(tmp_path))
    assert p.returncode == 0, p.stdout
    assert "ok (0 known wrong arrows" in p.stdout


def test_include_up_fails(tmp_path):
    out = planted(tmp_path, ("src/proto/send.c", '#include "core/transport.h"\n'))
    assert "src/proto/send.c: goes up: src/proto (proto) includes core/transport.h (core)" in out


def test_internal_header_fails(tmp_path):
    out = planted(tmp_path, ("src/core/api.c", '#include "proto/proto_int.h"\n'))
    assert "internal to src/proto" in out


def test_tool_internals_fail(tmp_path):
    out = planted(tmp_path, ("tools/fmx_info.c", '#include "bulk/engine.h"\n'))
    assert "tools/fmx_info.c: a tool or test program includes the library's internals" in out


def test_provider_internals_fail(tmp_path):
    out = planted(tmp_path, ("src/ofi/msg.c", '#include "core/fmx_int.h"\n'))
    assert "src/ofi/msg.c: src/ofi is a face over the public API" in out


def test_call_up_by_name_fails(tmp_path):
    # proto declares a function the core defines: the call goes up by name
    out = planted(tmp_path, ("src/proto/proto_int.h", "\nvoid core_thing(struct fmx_endpoint *ep);\n"),
                  ("src/core/api.c", "\nvoid core_thing(struct fmx_endpoint *ep) { (void)ep; }\n"))
    assert "src/proto/proto_int.h declares core_thing(), which src/core/api.c (core) defines" in out


def test_call_up_by_own_prototype_fails(tmp_path):
    # bulk writes its own prototype of a core function and calls it
    out = planted(tmp_path, ("src/bulk/offload.c", "\nvoid ep_progress_locked(struct fmx_endpoint *ep);\n"))
    assert "src/bulk/offload.c declares ep_progress_locked(), which src/core/endpoint.c (core) defines" in out
