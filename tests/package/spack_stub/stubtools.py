# SPDX-License-Identifier: MIT
"""Helpers of the Spack stand-in that are not Spack's API: make a concrete
spec for a recipe class from a constraint such as "+ofi~mx"."""

import re

from spack.package import Prefix, Spec, VariantValue

_TOKEN = re.compile(r"\s*(?:(?P<flag>[+~])(?P<name>[A-Za-z0-9_]+)|(?P<key>[A-Za-z0-9_]+)=(?P<value>\S+))")


def concretize(pkg_cls, constraint="", prefix=None, deps=None, platform="linux"):
    """A concrete Spec of pkg_cls: variant defaults overridden by
    `constraint`, the newest declared version, and one dependency spec for
    each depends_on whose condition holds (taken from `deps` by name, else
    a plain spec under /opt/spack/<name>). Raises KeyError for a variant the
    recipe does not declare."""
    values = {name: v.default for name, v in pkg_cls.variants.items() if not v.when}
    pos = 0
    while pos < len(constraint):
        m = _TOKEN.match(constraint, pos)
        if not m or m.end() == pos:
            if constraint[pos:].strip():
                raise ValueError("concretize: cannot read %r" % constraint[pos:])
            break
        pos = m.end()
        name = m.group("name") or m.group("key")
        if name not in pkg_cls.variants:
            raise KeyError("%s has no variant %r" % (pkg_cls.name, name))
        if m.group("flag"):
            values[name] = m.group("flag") == "+"
        else:
            values[name] = m.group("value")
    ver = max(pkg_cls.versions, key=lambda v: tuple(int(p) for p in v.split(".") if p.isdigit()))
    prefix = Prefix(prefix or "/opt/spack/%s-%s" % (pkg_cls.name, ver))
    spec = Spec(pkg_cls.name, version=ver, variants=values, prefix=prefix, platform=platform)
    # Conditional variants exist only where their condition holds.
    for name, v in pkg_cls.variants.items():
        if v.when and spec.satisfies(v.when):
            spec.variants[name] = VariantValue(name, v.default)
    deps = dict(deps or {})
    chosen = {}
    for dep in pkg_cls.dependencies:
        if spec.satisfies(dep.when):
            chosen[dep.name] = deps.get(dep.name) or Spec(dep.name)
    spec._dependencies = chosen
    return spec
