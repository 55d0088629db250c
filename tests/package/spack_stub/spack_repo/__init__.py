# SPDX-License-Identifier: MIT
"""Stand-in for Spack 1.x's `spack_repo` namespace: only
spack_repo.builtin.build_systems.cmake, where CMakePackage lives since
Spack 1.0 (the build systems moved out of spack.package into the builtin
package repository)."""
