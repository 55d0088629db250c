# SPDX-License-Identifier: MIT
"""Spack recipe for fmx.

Use it from a checkout without a release tarball:

    spack repo add packaging/spack          # repo.yaml there: namespace fmx
    spack develop --path $PWD fmx@0.1.0     # in an environment; or
    spack dev-build fmx@0.1.0 +ofi +mx      # from the top of the checkout

Checked without Spack by tests/package/check_spack_recipe.py (a stand-in for
the part of Spack's API used here: tests/package/spack_stub).
"""

try:
    # Spack 1.0 on: the build systems live in the builtin package repository.
    from spack_repo.builtin.build_systems.cmake import CMakePackage
except ImportError:
    # Spack 0.x exported them from spack.package.
    from spack.package import CMakePackage

from spack.package import *


class Fmx(CMakePackage):
    """fmx: tagged message passing with Myrinet Express semantics between
    the processes of a host (shared memory, single-copy large messages) and
    across hosts over Ethernet, with a libfabric provider (libfmx-fi.so) for
    MPIs and an MX-compatible libmyriexpress."""

    # Placeholders until fmx is published: point them at the real project.
    homepage = "https://fmx.example.org"
    url = "https://fmx.example.org/releases/fmx-0.1.0.tar.gz"
    git = "https://fmx.example.org/fmx.git"

    license("MIT")

    # The sha256 is a placeholder and must be filled in at release with the
    # checksum of the published tarball (`spack checksum fmx 0.1.0`); until
    # then fetching fails on purpose, and `spack develop` / `spack dev-build`
    # build the local tree, which needs no checksum.
    version("0.1.0", sha256="0000000000000000000000000000000000000000000000000000000000000000")

    variant("ofi", default=True, description="Build the libfabric provider libfmx-fi.so")
    variant("mx", default=True, description="Build libmyriexpress, the MX-compatible library")
    variant("mpi", default=False,
            description="Build fmx_perf_mpi, the benchmark kernels over an MPI "
            "(libfmx-mpi.so, MPI_Alloc_mem over fmx, is built either way: it needs no MPI)")
    # Off by default: Spack's builtin repository has no scdoc recipe.
    variant("man", default=False, description="Build and install the man pages (needs scdoc)")

    # fmx is Linux only: memfd, process_vm_readv, pidfd, futex, SO_PEERCRED.
    conflicts("platform=darwin", msg="fmx needs Linux (memfd, process_vm_readv, pidfd)")
    conflicts("platform=windows", msg="fmx needs Linux (memfd, process_vm_readv, pidfd)")

    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build")
    # hwloc 2 API: cache filters, hwloc_obj_type_is_dcache, NUMANODE objects.
    depends_on("hwloc@2:")
    depends_on("libfabric", when="+ofi")
    depends_on("mpi", when="+mpi")
    # Spack's builtin repository has no scdoc recipe (2026): declare the
    # system's as an external in packages.yaml, or build with ~man.
    depends_on("scdoc", type="build", when="+man")

    @property
    def sanity_check_is_file(self):
        files = ["bin/fmx_info", "bin/fmx_perf", "lib/libfmx.so", "lib/libfmx-mpi.so",
                 "include/fmx.h", "lib/pkgconfig/fmx.pc", "lib/cmake/fmx/fmxConfig.cmake"]
        if self.spec.satisfies("+ofi"):
            files.append("lib/libfabric/libfmx-fi.so")
        if self.spec.satisfies("+mx"):
            files += ["lib/libmyriexpress.so", "include/myriexpress.h"]
        if self.spec.satisfies("+mpi"):
            files.append("bin/fmx_perf_mpi")
        if self.spec.satisfies("+man"):
            files.append("share/man/man1/fmx_info.1")
        return files

    @property
    def sanity_check_is_dir(self):
        dirs = ["lib/cmake/fmx"]
        if self.spec.satisfies("+man"):
            dirs += ["share/man/man3", "share/man/man7"]
        return dirs

    def cmake_args(self):
        args = [
            # Each face is ON or OFF, never the project's AUTO: what a spec
            # says is built or the build fails, whatever the host has.
            self.define_from_variant("FMX_WITH_OFI", "ofi"),
            self.define_from_variant("FMX_WITH_MX", "mx"),
            self.define_from_variant("FMX_WITH_MPI", "mpi"),
            self.define_from_variant("FMX_WITH_MAN", "man"),
            self.define("FMX_BUILD_TESTS", False),
            # GNUInstallDirs picks lib64 on some distributions; the paths
            # below and the sanity checks expect lib (EasyBuild does the same).
            self.define("CMAKE_INSTALL_LIBDIR", "lib"),
        ]
        if self.spec.satisfies("+ofi"):
            # The provider goes into the prefix, never into libfabric's own
            # directory (which may be another package's prefix, or /usr).
            args.append(self.define("FMX_FI_DIR", self.prefix.lib.libfabric))
        if self.spec.satisfies("+mpi"):
            args.append(self.define("MPI_C_COMPILER", self.spec["mpi"].mpicc))
        return args

    def _libfabric_provider_dir(self):
        """Where libfabric looks for providers when FI_PROVIDER_PATH is unset:
        <its libdir>/libfabric. Its libdir is where libfabric.so lies, which
        for an external libfabric is not always prefix/lib (Debian:
        /usr/lib/x86_64-linux-gnu; Cray and RHEL: lib64)."""
        fabric = self.spec["libfabric"]
        try:
            libdirs = fabric.libs.directories
        except Exception:  # Spack's NoLibrariesError: not found under the prefix
            libdirs = []
        return join_path(libdirs[0] if libdirs else fabric.prefix.lib, "libfabric")

    def setup_run_environment(self, env: EnvironmentModifications) -> None:
        if not self.spec.satisfies("+ofi"):
            return
        # libfabric dlopens every *-fi.so of FI_PROVIDER_PATH. Like Spack's
        # libpsm3 (a provider packaged alone), fmx puts its directory first;
        # but a set FI_PROVIDER_PATH replaces libfabric's default directory
        # instead of adding to it, so that one is appended, or loading fmx
        # would hide the providers libfabric was built with as plugins.
        env.prepend_path("FI_PROVIDER_PATH", self.prefix.lib.libfabric)
        env.append_path("FI_PROVIDER_PATH", self._libfabric_provider_dir())

    def test_fmx_info(self):
        """fmx_info --version names this version"""
        fmx_info = which(self.prefix.bin.fmx_info, required=True)
        out = fmx_info("--version", output=str.split, error=str.split)
        assert "fmx %s" % self.spec.version in out, out

    def test_fi_info(self):
        """libfabric lists the fmx provider"""
        if not self.spec.satisfies("+ofi"):
            raise SkipTest("built without the libfabric provider (~ofi)")
        fi_info = which("fi_info", path=[self.spec["libfabric"].prefix.bin])
        if fi_info is None:
            raise SkipTest("no fi_info in %s" % self.spec["libfabric"].prefix.bin)
        out = fi_info("-p", "fmx", output=str.split, error=str.split)
        assert "provider: fmx" in out, out
