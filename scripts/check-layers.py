#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The layering check (make check runs it first): every #include "..." of
the library, the tools and the system-test programs must follow the arrows
below. This file is where the arrows are written; README's Layout points
here.

Layers, top to bottom. A folder may include its own headers and the headers
of every folder of a lower layer, never of its own layer's other folders
(shm and net know nothing of each other) nor of a higher one. Where a lower
layer must reach up, it does so through a callback the upper one gave it.

    faces       src/mx src/ofi        (MX face, libfabric provider)
    core        src/core              (endpoint, requests, completion, progress, the public API)
    proto       src/proto             (message classes, matching, rendezvous)
    transports  src/self src/shm src/net
    seam        src/transport         (the ops table every transport implements)
    bulk        src/bulk              (copy engines, selection)
    region      src/region            (fmx_mem_alloc, peers' regions mapped here)
    platform    src/platform          (topology, syscalls, copy routines)
    base        src/base              (config table, log, lists: used by all)

`include/fmx.h` (the public API, with `fmx_info.h`, the keys and types of
fmx_get_info that it includes) may be included anywhere; the MX headers
(`include/myriexpress.h`, `mx_extensions.h`) by the MX face and programs.

A header named *_int.h is its folder's own: no other folder includes it.

The libfabric provider (src/ofi) is a face over the public API only: it
includes fmx.h and its own headers, nothing else of the library.

Tools (tools/) and the system tests' programs (tests/system/progs/) use the
public API only: fmx.h and their own headers. Unit tests (tests/unit/) test
internals and may include anything.

DEBT lists the arrows known to be wrong, each still to be removed; it is
empty now (the last two, proto into the core, went with issue 13) and may
only shrink: a listed arrow that no longer exists fails the check too, so
the list stays true.
"""
import os
import re
import sys

ROOT = os.environ.get("FMX_LAYERS_ROOT", os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LAYERS = [
    ("faces", ["mx", "ofi", "mpi"]),
    ("core", ["core"]),
    ("proto", ["proto"]),
    ("transports", ["self", "shm", "net"]),
    ("seam", ["transport"]),
    ("bulk", ["bulk"]),
    ("region", ["region"]),
    ("platform", ["platform"]),
    ("base", ["base"]),
]
RANK = {folder: i for i, (_, folders) in enumerate(LAYERS) for folder in folders}
# Faces built as libraries of their own over libfmx.so: like the tools,
# they see fmx.h and nothing of the library's insides.
PUBLIC_FACES = {"ofi", "mpi"}

# (including file, included header): arrows still wrong, to be removed.
DEBT = set()

# A lower layer may still name a function that an upper one defines, when
# its own header declares it: the check below fails on that, except for
# these views. Each returns where the lower layer's part lies inside the
# upper layer's object (&ep->t, &p->pp): the object's layout, which only
# its owner knows, given by name so that link-time optimisation inlines it
# on the per-message path (transport_partner: the object a part lies in,
# the same layout read back). Everything that acts (complete, lock, fail a
# partner, watch) goes through a table of calls the upper layer gives
# (struct proto_core, struct transport_core).
VIEWS = {
    "transport_ep", "transport_peer", "transport_state", "transport_partner", "transport_ep_state",  # transport/transport.h
    "proto_ep", "proto_peer",  # proto/proto.h
}

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
# A prototype (or a definition's head) at file scope, column 0, not
# static, not a typedef.
DECL = re.compile(r"^(?!static\b|typedef\b|#)[A-Za-z_][^\n;{}()=]*?\b([A-Za-z_]\w*)\s*\(", re.M)
# A function defined at file scope, not static.
DEFN = re.compile(r"^(?!static\b|#)[A-Za-z_][^\n;{}()=]*?\b([A-Za-z_]\w*)\s*\([^;{}]*\)\s*\{", re.M)


def upcalls():
    """Functions a lower layer's header declares and an upper layer defines."""
    declared, defined = [], {}
    for path in sources("src"):
        folder = path.split("/")[1]
        if folder not in RANK:
            continue
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            text = COMMENT.sub("", f.read())
        # Declared in a header, or by a .c for itself (a prototype of its own).
        declared += [(name, path, folder) for name in DECL.findall(text)]
        if path.endswith(".c"):
            for name in DEFN.findall(text):
                defined.setdefault(name, (path, folder))
    bad = []
    for name, hpath, hfolder in sorted(set(declared)):
        if name not in defined or name in VIEWS:
            continue
        cpath, cfolder = defined[name]
        if RANK[cfolder] < RANK[hfolder]:
            bad.append("%s declares %s(), which %s (%s) defines: a call up by name; give it as a callback "
                       "(or, for a view of an object, list it in VIEWS)" % (hpath, name, cpath,
                                                                          LAYERS[RANK[cfolder]][0]))
    return bad


def sources(top):
    for d, _, files in os.walk(os.path.join(ROOT, top)):
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(d, f), ROOT)


def verdict(path, inc):
    """None if path may include inc, else why not."""
    if inc in ("fmx.h", "fmx_info.h"):
        return None
    if inc in ("myriexpress.h", "mx_extensions.h"):  # the MX face's public headers (include/)
        return None if path.startswith("src/mx/") or not path.startswith("src/") else \
            "only the MX face (src/mx) includes the MX headers"
    parts = path.split("/")
    there = inc.split("/")[0]
    if parts[0] != "src":  # tools/, tests/system/progs/: their own headers, not the library's
        return "a tool or test program includes the library's internals (public API only)" if there in RANK else None
    here = parts[1]
    if here in PUBLIC_FACES and there != here:
        return "src/%s is a face over the public API: fmx.h and its own headers only" % here
    if there not in RANK:
        return "includes %s, which is no layer's header" % inc
    if there == here:
        return None
    if inc.endswith("_int.h"):
        return "includes %s, internal to src/%s" % (inc, there)
    if RANK[there] < RANK[here]:
        return "goes up: src/%s (%s) includes %s (%s)" % (here, LAYERS[RANK[here]][0], inc, LAYERS[RANK[there]][0])
    if RANK[there] == RANK[here]:
        return "goes sideways: src/%s includes %s of the same layer" % (here, inc)
    return None


def main():
    if "--no-debt" in sys.argv:  # every wrong arrow, as on a tree with no list
        DEBT.clear()
    bad, seen = [], set()
    for top in ("src", "tools", "tests/system/progs"):
        for path in sources(top):
            with open(os.path.join(ROOT, path), encoding="utf-8") as f:
                text = f.read()
            for inc in INCLUDE.findall(text):
                why = verdict(path, inc)
                if why is None:
                    continue
                if (path, inc) in DEBT:
                    seen.add((path, inc))
                    continue
                bad.append("%s: %s" % (path, why))
    bad += upcalls()
    gone = sorted(DEBT - seen)
    for path, inc in gone:
        bad.append("%s: no longer includes %s: remove it from DEBT in scripts/check-layers.py" % (path, inc))
    if "-v" in sys.argv:
        for path, inc in sorted(seen):
            print("known: %s -> %s" % (path, inc))
    if bad:
        print("layering check failed (the arrows: scripts/check-layers.py):")
        for b in bad:
            print("  " + b)
        return 1
    print("layering check: ok (%d known wrong arrows left in DEBT)" % len(seen))
    return 0


if __name__ == "__main__":
    sys.exit(main())
