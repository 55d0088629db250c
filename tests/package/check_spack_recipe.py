#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Check packaging/spack/fmx/package.py without Spack (make check-package,
step 7): import the recipe with the stand-in of tests/package/spack_stub on
sys.path, and check its variants, dependencies, cmake arguments, run
environment, sanity checks and stand-alone test against what fmx's
CMakeLists.txt and libfabric expect. One line per check; exit 0 when all
pass, 1 at the first failure.

    python3 tests/package/check_spack_recipe.py           # the recipe alone, ~1 s
    python3 tests/package/check_spack_recipe.py --build   # and what `spack install
        # fmx+ofi+mx~mpi+man ^libfabric(external /usr)` would do with it: cmake with
        # the recipe's arguments, build, install into a temporary prefix, the
        # sanity checks, test_fmx_info and test_fi_info under setup_run_environment
        # (about a minute on 2 cores; needs cmake, gcc, hwloc, libfabric-dev, scdoc)
"""

import importlib.util
import os
import re
import stat
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# FMX_SPACK_RECIPE: another recipe file to check (to see this checker fail).
RECIPE = os.environ.get("FMX_SPACK_RECIPE") or os.path.join(ROOT, "packaging", "spack", "fmx", "package.py")
STUB = os.path.join(ROOT, "tests", "package", "spack_stub")

sys.path.insert(0, STUB)
sys.dont_write_bytecode = True  # leave no __pycache__ in the tree

from spack.package import EnvironmentModifications, Spec  # noqa: E402
from spack_repo.builtin.build_systems.cmake import CMakePackage  # noqa: E402
from stubtools import concretize  # noqa: E402

PREFIX = "/opt/spack/fmx-0.1.0"
FMX_FI_DIR = PREFIX + "/lib/libfabric"


class CheckFailed(Exception):
    pass


def ok(what):
    print("[spack] ok: %s" % what, flush=True)


def expect(cond, what):
    if not cond:
        raise CheckFailed(what)


def load_recipe():
    spec = importlib.util.spec_from_file_location("fmx_recipe", RECIPE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Fmx


def deps_default():
    return {
        "libfabric": Spec("libfabric", version="2.1.0", prefix="/opt/spack/libfabric-2.1.0"),
        "mpi": Spec("openmpi", version="5.0.8", prefix="/opt/spack/openmpi-5.0.8",
                    mpicc="/opt/spack/openmpi-5.0.8/bin/mpicc"),
    }


def cmake_args(Fmx, constraint, **kw):
    pkg = Fmx(concretize(Fmx, constraint, prefix=PREFIX, deps=deps_default(), **kw))
    return [a for a in pkg.cmake_args() if a]


def run_env(Fmx, constraint, deps=None):
    pkg = Fmx(concretize(Fmx, constraint, prefix=PREFIX, deps=deps or deps_default()))
    env = EnvironmentModifications()
    pkg.setup_run_environment(env)
    return env


def check_import(Fmx):
    expect(issubclass(Fmx, CMakePackage), "Fmx is not a CMakePackage")
    expect(Fmx.name == "fmx", "package name %r" % Fmx.name)
    ok("recipe imports with the stand-in; class Fmx(CMakePackage) from "
       "spack_repo.builtin.build_systems.cmake (Spack 1.x layout)")


def check_version(Fmx):
    expect(list(Fmx.versions) == ["0.1.0"], "versions %r" % list(Fmx.versions))
    sha = Fmx.versions["0.1.0"].get("sha256", "")
    expect(re.fullmatch(r"[0-9a-f]{64}", sha), "version 0.1.0 has no sha256 of 64 hex digits")
    project = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    m = re.search(r"project\(fmx\s+VERSION\s+([0-9.]+)", project)
    expect(m and m.group(1) == "0.1.0", "CMakeLists.txt's project() version is %s, recipe has 0.1.0"
           % (m.group(1) if m else "?"))
    ok("version 0.1.0 (sha256 placeholder, 64 hex digits) matches project() in CMakeLists.txt")


def check_variants(Fmx):
    own = {n: v for n, v in Fmx.variants.items() if n not in CMakePackage.variants}
    want = {"ofi": True, "mx": True, "mpi": False, "man": False}
    got = {n: v.default for n, v in own.items()}
    expect(got == want, "variants and defaults %r, want %r" % (got, want))
    expect(all(not v.when for v in own.values()), "a variant is conditional")
    ok("variants ofi=True mx=True mpi=False man=False (unconditional)")


def check_dependencies(Fmx):
    got = {}
    for d in Fmx.dependencies:
        got.setdefault(d.name, []).append((d.spec, d.type, d.when))
    want = {
        "c": [("c", ("build",), "")],
        "cmake": None,  # CMakePackage's own plus the recipe's version floor
        "pkgconfig": [("pkgconfig", ("build",), "")],
        "hwloc": [("hwloc@2:", ("build", "link"), "")],
        "libfabric": [("libfabric", ("build", "link"), "+ofi")],
        "mpi": [("mpi", ("build", "link"), "+mpi")],
        "scdoc": [("scdoc", ("build",), "+man")],
    }
    expect(set(got) == set(want), "dependencies %s, want %s" % (sorted(got), sorted(want)))
    for name, entries in want.items():
        if entries is not None:
            expect(got[name] == entries, "%s: %r, want %r" % (name, got[name], entries))
    cmake = got["cmake"]
    expect(all(t == ("build",) and w == "" for _, t, w in cmake), "cmake: %r" % cmake)
    expect(("cmake@3.18:", ("build",), "") in cmake, "cmake@3.18: missing: %r" % cmake)
    ok("dependencies: cmake@3.18: pkgconfig c (build), hwloc@2:, libfabric when +ofi, "
       "mpi when +mpi, scdoc (build) when +man")
    conflicts = {c[0] for c in Fmx.conflicts}
    expect({"platform=darwin", "platform=windows"} <= conflicts, "conflicts %r" % conflicts)
    ok("conflicts: platform=darwin, platform=windows (Linux only)")


def check_cmake_args(Fmx):
    a = cmake_args(Fmx, "+ofi~mx")
    want = ["-DFMX_WITH_OFI:BOOL=ON", "-DFMX_WITH_MX:BOOL=OFF", "-DFMX_WITH_MPI:BOOL=OFF",
            "-DFMX_WITH_MAN:BOOL=OFF", "-DFMX_BUILD_TESTS:BOOL=OFF",
            "-DCMAKE_INSTALL_LIBDIR:STRING=lib", "-DFMX_FI_DIR:STRING=" + FMX_FI_DIR]
    expect(sorted(a) == sorted(want), "+ofi~mx: %r, want %r" % (a, want))
    ok("cmake_args +ofi~mx: " + " ".join(a))

    a = cmake_args(Fmx, "~ofi+mx")
    want = ["-DFMX_WITH_OFI:BOOL=OFF", "-DFMX_WITH_MX:BOOL=ON", "-DFMX_WITH_MPI:BOOL=OFF",
            "-DFMX_WITH_MAN:BOOL=OFF", "-DFMX_BUILD_TESTS:BOOL=OFF",
            "-DCMAKE_INSTALL_LIBDIR:STRING=lib"]
    expect(sorted(a) == sorted(want), "~ofi+mx: %r, want %r" % (a, want))
    ok("cmake_args ~ofi+mx: " + " ".join(a) + " (no FMX_FI_DIR)")

    a = cmake_args(Fmx, "+mpi~man")
    expect("-DFMX_WITH_MPI:BOOL=ON" in a and "-DFMX_WITH_MAN:BOOL=OFF" in a, "+mpi~man: %r" % a)
    expect("-DMPI_C_COMPILER:STRING=/opt/spack/openmpi-5.0.8/bin/mpicc" in a,
           "+mpi: no MPI_C_COMPILER from spec['mpi'].mpicc: %r" % a)
    ok("cmake_args +mpi~man: FMX_WITH_MPI=ON FMX_WITH_MAN=OFF MPI_C_COMPILER=<mpi>/bin/mpicc")

    # The options the recipe sets must be the project's (a renamed option
    # would be ignored by CMake with a warning and the build would go AUTO).
    project = open(os.path.join(ROOT, "CMakeLists.txt")).read()
    names = sorted({re.match(r"-D([A-Za-z0-9_]+)", x).group(1)
                    for c in ("+ofi+mx+mpi+man", "~ofi~mx~mpi~man")
                    for x in cmake_args(Fmx, c)} - {"CMAKE_INSTALL_LIBDIR", "MPI_C_COMPILER"})
    missing = [n for n in names if not re.search(r"\b%s\b" % n, project)]
    expect(not missing, "CMakeLists.txt knows no %s" % ", ".join(missing))
    ok("CMakeLists.txt declares " + " ".join(names))


def check_run_env(Fmx):
    env = run_env(Fmx, "+ofi")
    ops = [(a, n, v) for a, n, v in env.env_modifications]
    fabric_dir = "/opt/spack/libfabric-2.1.0/lib/libfabric"
    want = [("prepend_path", "FI_PROVIDER_PATH", FMX_FI_DIR),
            ("append_path", "FI_PROVIDER_PATH", fabric_dir)]
    expect(ops == want, "+ofi run environment %r, want %r" % (ops, want))
    got = env.apply_modifications({})["FI_PROVIDER_PATH"]
    expect(got == FMX_FI_DIR + ":" + fabric_dir, "FI_PROVIDER_PATH unset before: %r" % got)
    got = env.apply_modifications({"FI_PROVIDER_PATH": "/site/prov"})["FI_PROVIDER_PATH"]
    expect(got == FMX_FI_DIR + ":/site/prov:" + fabric_dir, "FI_PROVIDER_PATH=/site/prov before: %r" % got)
    ok("+ofi: FI_PROVIDER_PATH = %s (fmx's, prepended) : ... : %s (libfabric's own, appended)"
       % (FMX_FI_DIR, fabric_dir))

    # An external libfabric (Debian's, prefix /usr): its providers are under
    # the directory libfabric.so is in, not under prefix/lib.
    debian = Spec("libfabric", version="1.17.0", prefix="/usr",
                  libs=["/usr/lib/x86_64-linux-gnu/libfabric.so"])
    env = run_env(Fmx, "+ofi", deps=dict(deps_default(), libfabric=debian))
    last = env.env_modifications[-1]
    expect(last == ("append_path", "FI_PROVIDER_PATH", "/usr/lib/x86_64-linux-gnu/libfabric"),
           "external libfabric at /usr: %r" % (last,))
    ok("+ofi with an external libfabric (prefix /usr, Debian multiarch): appends "
       "/usr/lib/x86_64-linux-gnu/libfabric")

    env = run_env(Fmx, "~ofi")
    expect(len(env) == 0, "~ofi sets %r" % env.env_modifications)
    ok("~ofi: setup_run_environment sets nothing (and never asks for spec['libfabric'])")


def check_sanity(Fmx):
    pkg = Fmx(concretize(Fmx, "+ofi+mx+mpi+man", prefix=PREFIX, deps=deps_default()))
    files, dirs = set(pkg.sanity_check_is_file), set(pkg.sanity_check_is_dir)
    for f in ("bin/fmx_info", "lib/libfmx.so", "include/fmx.h", "lib/libfabric/libfmx-fi.so",
              "lib/libmyriexpress.so", "bin/fmx_perf_mpi", "lib/cmake/fmx/fmxConfig.cmake",
              "share/man/man1/fmx_info.1"):
        expect(f in files, "sanity_check_is_file lacks %s: %r" % (f, sorted(files)))
    expect("lib/cmake/fmx" in dirs, "sanity_check_is_dir lacks lib/cmake/fmx: %r" % sorted(dirs))
    pkg = Fmx(concretize(Fmx, "~ofi~mx~mpi~man", prefix=PREFIX, deps=deps_default()))
    off = set(pkg.sanity_check_is_file) | set(pkg.sanity_check_is_dir)
    expect(not any(w in f for f in off for w in ("libfmx-fi", "myriexpress", "perf_mpi", "share/man")),
           "~ofi~mx~mpi~man still checks %r" % sorted(off))
    ok("sanity_check_is_file/_is_dir follow the variants (%d files, %d dirs with everything on)"
       % (len(files), len(dirs)))


def fake_fmx_info(prefix, text):
    os.makedirs(os.path.join(prefix, "bin"), exist_ok=True)
    path = os.path.join(prefix, "bin", "fmx_info")
    with open(path, "w") as f:
        f.write("#!/bin/sh\n[ \"$1\" = --version ] && echo '%s' && exit 0\nexit 2\n" % text)
    os.chmod(path, stat.S_IRWXU)


def check_test_method(Fmx):
    with tempfile.TemporaryDirectory(prefix="fmx-spack-check.") as tmp:
        good = os.path.join(tmp, "good")
        fake_fmx_info(good, "fmx 0.1.0")
        Fmx(concretize(Fmx, "", prefix=good, deps=deps_default())).test_fmx_info()
        bad = os.path.join(tmp, "bad")
        fake_fmx_info(bad, "fmx 0.0.9")
        try:
            Fmx(concretize(Fmx, "", prefix=bad, deps=deps_default())).test_fmx_info()
        except AssertionError:
            pass
        else:
            raise CheckFailed("test_fmx_info passed with fmx_info printing 'fmx 0.0.9'")
    ok("test_fmx_info runs <prefix>/bin/fmx_info --version: passes on 'fmx 0.1.0', fails on 'fmx 0.0.9'")


def run(cmd, log, timeout, env=None):
    with open(log, "a") as out:
        out.write("$ %s\n" % " ".join(cmd))
        out.flush()
        try:
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=timeout,
                                env=env).returncode
        except subprocess.TimeoutExpired:
            rc = "timeout after %d s" % timeout
    if rc != 0:
        with open(log) as f:
            sys.stderr.write("".join(f.readlines()[-30:]))
        raise CheckFailed("%s: %s" % (" ".join(cmd[:3]), rc))


def system_libfabric():
    """The host's libfabric as a Spack external (prefix /usr): libfabric.so
    where its pkg-config file says."""
    q = subprocess.run(["pkg-config", "--variable=libdir", "libfabric"], stdout=subprocess.PIPE,
                       universal_newlines=True)
    expect(q.returncode == 0 and q.stdout.strip(), "pkg-config finds no libfabric (libfabric-dev)")
    return Spec("libfabric", version="external", prefix="/usr",
                libs=[os.path.join(q.stdout.strip(), "libfabric.so")])


def check_build(Fmx):
    with tempfile.TemporaryDirectory(prefix="fmx-spack-build.") as tmp:
        prefix, build, log = (os.path.join(tmp, d) for d in ("prefix", "build", "build.log"))
        spec = concretize(Fmx, "+ofi+mx~mpi+man", prefix=prefix, deps={"libfabric": system_libfabric()})
        pkg = Fmx(spec)
        # Spack's own arguments that matter here, then the recipe's; the
        # compiler's temporary files stay in tmp.
        env = dict(os.environ, TMPDIR=tmp)
        args = ["-DCMAKE_INSTALL_PREFIX:STRING=" + prefix, "-DCMAKE_BUILD_TYPE:STRING=Release"]
        args += [a for a in pkg.cmake_args() if a]
        run(["cmake", "-S", ROOT, "-B", build] + args, log, 300, env)
        run(["cmake", "--build", build, "-j", str(os.cpu_count() or 2)], log, 1800, env)
        run(["cmake", "--install", build], log, 300, env)
        for f in pkg.sanity_check_is_file:
            expect(os.path.isfile(os.path.join(prefix, f)), "installed prefix lacks file %s" % f)
        for d in pkg.sanity_check_is_dir:
            expect(os.path.isdir(os.path.join(prefix, d)), "installed prefix lacks directory %s" % d)
        ok("--build: cmake with the recipe's arguments (+ofi+mx~mpi+man), build, install: "
           "the %d sanity files and %d directories are there"
           % (len(pkg.sanity_check_is_file), len(pkg.sanity_check_is_dir)))
        pkg.test_fmx_info()
        ok("--build: test_fmx_info passes on the installed fmx_info")
        mods = EnvironmentModifications()
        pkg.setup_run_environment(mods)
        saved = dict(os.environ)
        os.environ.clear()
        os.environ.update(mods.apply_modifications(saved))
        try:
            fipath = os.environ["FI_PROVIDER_PATH"]
            pkg.test_fi_info()
            # The provider libfabric loads first must be the prefix's.
            p = subprocess.run(["fi_info", "-p", "fmx"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               universal_newlines=True, timeout=60, env=dict(os.environ, LD_DEBUG="files"))
            loaded = re.findall(r"file=(\S*libfmx-fi\.so) \[0\];  dynamically loaded", p.stderr)
        finally:
            os.environ.clear()
            os.environ.update(saved)
        want = os.path.join(prefix, "lib", "libfabric", "libfmx-fi.so")
        expect(loaded and loaded[0] == want, "fi_info loaded the provider from %r, not %s" % (loaded, want))
        ok("--build: under setup_run_environment (FI_PROVIDER_PATH=%s) test_fi_info passes, "
           "the provider loaded from the prefix" % fipath.replace(tmp, "$TMP"))


def main():
    checks = [check_import, check_version, check_variants, check_dependencies,
              check_cmake_args, check_run_env, check_sanity, check_test_method]
    if "--build" in sys.argv[1:]:
        checks.append(check_build)
    try:
        Fmx = load_recipe()
        for check in checks:
            check(Fmx)
    except CheckFailed as e:
        print("[spack] FAILED: %s" % e, flush=True)
        return 1
    except Exception as e:  # the recipe itself raised: say where
        import traceback
        traceback.print_exc()
        print("[spack] FAILED: %s: %s" % (type(e).__name__, e), flush=True)
        return 1
    print("[spack] all %d checks of %s passed" % (len(checks), os.path.relpath(RECIPE, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
