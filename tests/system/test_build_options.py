# SPDX-License-Identifier: MIT
"""CMake's options for the optional parts (FMX_WITH_OFI, _MX, _MPI, _MAN:
AUTO, ON or OFF) and where the provider is installed (FMX_FI_DIR), by
configuring the source tree for real into temporary build directories.
A part set ON whose dependency is missing fails configure with a message
that names it; AUTO says in one line what it leaves out."""
import os
import shutil
import subprocess

import pytest

from test_ofi import sanitized

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


pytestmark = [
    pytest.mark.skipif(shutil.which("cmake") is None or shutil.which("pkg-config") is None,
                       reason="needs cmake and pkg-config"),
    # Configure does not depend on the build under test: once is enough.
    pytest.mark.skipif(sanitized(), reason="configure is checked with the plain build"),
]


def configure(tmp_path, *args, env=None):
    e = dict(os.environ)
    e.update(env or {})
    p = subprocess.run(["cmake", "-S", SRC, "-B", str(tmp_path / "b"), "-DFMX_LTO=OFF"] + list(args),
                       capture_output=True, text=True, env=e, timeout=300)
    return p.returncode, p.stdout + p.stderr


def cache(tmp_path, name):
    with open(tmp_path / "b" / "CMakeCache.txt", encoding="utf-8") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split("=", 1)[1].strip()
    return None


def hwloc_only_pkgconfig(tmp_path):
    """A pkg-config search path where hwloc is found and libfabric is not."""
    d = tmp_path / "pc"
    d.mkdir()
    pc = subprocess.run(["pkg-config", "--path", "hwloc"], capture_output=True, text=True).stdout.strip()
    shutil.copy(pc, d / "hwloc.pc")
    return {"PKG_CONFIG_LIBDIR": str(d), "PKG_CONFIG_PATH": ""}


@pytest.mark.skipif(subprocess.run(["pkg-config", "--exists", "libfabric"]).returncode != 0,
                    reason="libfabric-dev not installed")
def test_provider_on_without_libfabric_fails_configure(tmp_path):
    env = hwloc_only_pkgconfig(tmp_path)
    rc, out = configure(tmp_path, "-DFMX_WITH_OFI=ON", env=env)
    assert rc != 0
    assert "FMX_WITH_OFI=ON, but pkg-config finds no libfabric" in out, out
    assert "-DFMX_WITH_OFI=OFF" in out


def test_auto_says_what_it_leaves_out(tmp_path):
    env = hwloc_only_pkgconfig(tmp_path)
    rc, out = configure(tmp_path, "-DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON", env=env)
    assert rc == 0, out
    assert "FMX_WITH_OFI=AUTO: not building the libfabric provider" in out, out
    assert "FMX_WITH_MPI=AUTO: not building fmx_perf_mpi" in out, out
    assert "FMX_WITH_MX=AUTO: building the MX face" in out, out


def test_mpi_on_without_an_mpi_fails_configure(tmp_path):
    rc, out = configure(tmp_path, "-DFMX_WITH_MPI=ON", "-DCMAKE_DISABLE_FIND_PACKAGE_MPI=ON")
    assert rc != 0
    assert "FMX_WITH_MPI=ON, but no MPI C compiler wrapper was found" in out, out


def test_man_on_without_scdoc_fails_configure(tmp_path):
    rc, out = configure(tmp_path, "-DFMX_WITH_MAN=ON", "-DFMX_SCDOC=/nonexistent/scdoc-NOTFOUND")
    assert rc != 0
    assert "FMX_WITH_MAN=ON, but scdoc is not found" in out, out


def test_a_value_that_is_not_auto_on_or_off_fails_configure(tmp_path):
    rc, out = configure(tmp_path, "-DFMX_WITH_MX=sometimes")
    assert rc != 0
    assert "FMX_WITH_MX=sometimes: give AUTO, ON or OFF" in out, out


def test_off_builds_none_of_it(tmp_path):
    rc, out = configure(tmp_path, "-DFMX_WITH_OFI=OFF", "-DFMX_WITH_MX=OFF", "-DFMX_WITH_MPI=OFF",
                        "-DFMX_WITH_MAN=OFF", "-DFMX_BUILD_TESTS=OFF")
    assert rc == 0, out
    for part in ("OFI", "MX", "MPI", "MAN"):
        assert "FMX_WITH_%s=OFF: not building" % part in out, out
    with open(tmp_path / "b" / "Makefile", encoding="utf-8") as f:
        targets = f.read()
    assert "fmx-fi" not in targets and "myriexpress" not in targets and "test_errors" not in targets


@pytest.mark.skipif(subprocess.run(["pkg-config", "--exists", "libfabric"]).returncode != 0,
                    reason="libfabric-dev not installed")
def test_provider_directory_follows_the_prefix(tmp_path):
    """<prefix>/lib/libfabric under any prefix but /usr, where it is the
    directory the host's libfabric scans by default."""
    rc, out = configure(tmp_path, "-DCMAKE_INSTALL_PREFIX=/opt/fmx")
    assert rc == 0, out
    assert cache(tmp_path, "FMX_FI_DIR") == "lib/libfabric"
    assert "installed into /opt/fmx/lib/libfabric" in out, out
    shutil.rmtree(tmp_path / "b")
    libdir = subprocess.run(["pkg-config", "--variable=libdir", "libfabric"], capture_output=True,
                            text=True).stdout.strip()
    rc, out = configure(tmp_path, "-DCMAKE_INSTALL_PREFIX=/usr")
    assert rc == 0, out
    assert cache(tmp_path, "FMX_FI_DIR") == libdir + "/libfabric"
    shutil.rmtree(tmp_path / "b")
    # A relative directory given on the command line stays under the prefix.
    rc, out = configure(tmp_path, "-DCMAKE_INSTALL_PREFIX=/opt/fmx", "-DFMX_FI_DIR=lib/fi")
    assert rc == 0, out
    assert cache(tmp_path, "FMX_FI_DIR") == "lib/fi" and "installed into /opt/fmx/lib/fi" in out, out


@pytest.mark.skipif(shutil.which("scdoc") is None, reason="scdoc not installed")
def test_man_pages_without_the_mx_face(tmp_path):
    """The pages build without the MX face, and the omx_* tools' page is
    left out with the tools."""
    rc, out = configure(tmp_path, "-DFMX_WITH_MX=OFF", "-DFMX_WITH_MAN=ON", "-DFMX_BUILD_TESTS=OFF")
    assert rc == 0, out
    p = subprocess.run(["cmake", "--build", str(tmp_path / "b"), "--target", "man"], capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    pages = sorted(os.listdir(tmp_path / "b" / "man"))
    assert "fmx_info.1" in pages and "libfmx.3" in pages and not any(p.startswith(("omx", "mx_")) for p in pages)
