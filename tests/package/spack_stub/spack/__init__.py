# SPDX-License-Identifier: MIT
"""A stand-in for the part of Spack that packaging/spack/fmx/package.py uses.

Spack cannot be installed on the check machines, so this package and its
sibling spack_repo/ give the recipe the names it imports, with Spack's
meaning, and tests/package/check_spack_recipe.py drives the recipe through
them. It is no Spack: directives record what they are given, specs hold
variants, a prefix and dependencies; nothing is concretized or built.
"""
