# SPDX-License-Identifier: MIT
"""Stand-in for spack_repo.builtin.build_systems.cmake: CMakePackage with
the variants and build dependency Spack's own declares, `cmake_args`, and
`define` / `define_from_variant` with Spack's spelling of -D arguments
(bool -> :BOOL=ON/OFF, anything else -> :STRING=, lists joined by ';')."""

from spack.package import PackageBase, depends_on, variant


def define(cmake_var, value):
    if isinstance(value, bool):
        return "-D%s:BOOL=%s" % (cmake_var, "ON" if value else "OFF")
    if isinstance(value, (list, tuple)):
        value = ";".join(str(v) for v in value)
    return "-D%s:STRING=%s" % (cmake_var, value)


class CMakePackage(PackageBase):
    build_system_class = "CMakePackage"

    variant("build_type", default="Release", description="CMake build type",
            values=("Debug", "Release", "RelWithDebInfo", "MinSizeRel"))
    variant("ipo", default=False, description="CMake interprocedural optimization")
    depends_on("cmake", type="build")

    def cmake_args(self):
        return []

    def define(self, cmake_var, value):
        return define(cmake_var, value)

    def define_from_variant(self, cmake_var, variant=None):
        if variant is None:
            variant = cmake_var.lower()
        if not self.has_variant(variant):
            raise KeyError('"%s" is not a variant of "%s"' % (variant, self.name))
        # A conditional variant whose condition does not hold gives nothing
        # (Spack returns "", which CMake ignores).
        if variant not in self.spec.variants:
            return ""
        value = self.spec.variants[variant].value
        if isinstance(value, (list, tuple)):
            value = sorted(value)
        return define(cmake_var, value)
