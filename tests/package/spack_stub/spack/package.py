# SPDX-License-Identifier: MIT
"""Stand-in for `spack.package`, the one module of Spack that recipes import.

What a recipe calls here behaves as in Spack (1.x) as far as the fmx recipe
can tell: directives in a class body record versions, variants,
dependencies and conflicts on that class (and `with when(...)` adds its
condition to those inside it); `Prefix` builds paths from attribute names;
`EnvironmentModifications` records prepend/append/set in order and can
replay them on a dictionary; `which` and `Executable` run programs and give
back their output. Specs are built by tests/package/spack_stub/stubtools.py.

Like Spack 1.x, this module does not export the build-system classes:
CMakePackage comes from spack_repo.builtin.build_systems.cmake.
"""

import contextlib
import os
import re
import subprocess

__all__ = [
    "PackageBase",
    "Prefix",
    "Spec",
    "EnvironmentModifications",
    "Executable",
    "which",
    "join_path",
    "version",
    "variant",
    "depends_on",
    "conflicts",
    "when",
    "maintainers",
    "license",
    "SkipTest",
    "InstallError",
    "ProcessError",
    "CommandNotFoundError",
]


def join_path(prefix, *args):
    return os.path.join(str(prefix), *(str(a) for a in args))


class Prefix(str):
    """A path whose attributes name its subdirectories, as Spack's
    spack.util.prefix.Prefix: Prefix("/p").lib.libfabric == "/p/lib/libfabric"."""

    def __getattr__(self, name):
        # Dunder look-ups (copy, pickle) must not turn into paths.
        if name.startswith("__"):
            raise AttributeError(name)
        return Prefix(os.path.join(self, name))

    def join(self, name):
        return Prefix(os.path.join(self, name))


# ---------------------------------------------------------------- directives
#
# Spack runs directives while the class body executes, before the class
# exists; it queues them and a metaclass hands them to the new class. The
# stub does the same: class bodies do not nest, so one queue is enough.

_pending = []
_when_stack = []


def _condition(when):
    parts = list(_when_stack)
    if when:
        parts.append(when)
    return " ".join(parts)


class Variant:
    def __init__(self, name, default, description, values, multi, when):
        self.name = name
        self.default = default
        self.description = description
        self.values = values
        self.multi = multi
        self.when = when

    def __repr__(self):
        return "Variant(%r, default=%r, when=%r)" % (self.name, self.default, self.when)


class Dependency:
    def __init__(self, name, spec, type, when):
        self.name = name
        self.spec = spec
        self.type = type
        self.when = when

    def __repr__(self):
        return "Dependency(%r, type=%r, when=%r)" % (self.spec, self.type, self.when)


_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*")


def _spec_name(spec):
    m = _NAME.match(spec)
    if not m:
        raise ValueError("depends_on: no package name in %r" % spec)
    return m.group(0)


def version(ver, checksum=None, **kwargs):
    if checksum is not None:
        kwargs["sha256"] = checksum
    sha = kwargs.get("sha256")
    if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
        raise ValueError("version(%r): sha256 must be 64 hex digits" % ver)
    _pending.append(("version", str(ver), kwargs))


def variant(name, default=None, description="", values=None, multi=None, when=None, **kwargs):
    if values is None:
        # Spack: a variant without values is boolean.
        values = (True, False)
        if not isinstance(default, bool):
            raise ValueError("variant(%r): a boolean variant needs default True or False" % name)
    _pending.append(("variant", name, Variant(name, default, description, values, multi,
                                                 _condition(when))))


def depends_on(spec, when=None, type=("build", "link"), **kwargs):
    if isinstance(type, str):
        type = (type,)
    dep = Dependency(_spec_name(spec), spec, tuple(sorted(type)), _condition(when))
    _pending.append(("depends_on", dep.name, dep))


def conflicts(spec, when=None, msg=None):
    _pending.append(("conflicts", spec, (_condition(when), msg)))


def maintainers(*names):
    _pending.append(("maintainers", None, names))


def license(license_identifier, when=None, **kwargs):
    _pending.append(("license", license_identifier, _condition(when)))


@contextlib.contextmanager
def when(condition):
    """`with when("+x"):` puts its condition on every directive inside."""
    _when_stack.append(condition)
    try:
        yield
    finally:
        _when_stack.pop()


class _PackageMeta(type):
    def __init__(cls, name, bases, attrs):
        super().__init__(name, bases, attrs)
        # Each class starts from copies of its bases' records, then adds its own.
        cls.versions = {}
        cls.variants = {}
        cls.dependencies = []
        cls.conflicts = []
        cls.maintainers = []
        cls.licenses = []
        for base in reversed(cls.__mro__[1:]):
            if isinstance(base, _PackageMeta):
                cls.versions.update(base.versions)
                cls.variants.update(base.variants)
                cls.dependencies.extend(base.dependencies)
                cls.conflicts.extend(base.conflicts)
        for kind, key, value in _pending:
            if kind == "version":
                cls.versions[key] = value
            elif kind == "variant":
                cls.variants[key] = value
            elif kind == "depends_on":
                cls.dependencies.append(value)
            elif kind == "conflicts":
                cls.conflicts.append((key,) + value)
            elif kind == "maintainers":
                cls.maintainers.extend(value)
            elif kind == "license":
                cls.licenses.append((key, value))
        del _pending[:]
        # Spack names a package after its module directory; here, after the class.
        cls.name = name.lower()


class PackageBase(metaclass=_PackageMeta):
    """What the recipe gets from Spack's PackageBase: spec, prefix, the
    sanity-check lists and `has_variant`."""

    sanity_check_is_file = []
    sanity_check_is_dir = []

    def __init__(self, spec):
        self.spec = spec

    @property
    def prefix(self):
        return self.spec.prefix

    @classmethod
    def has_variant(cls, name):
        return name in cls.variants


# --------------------------------------------------------------------- specs

class VariantValue:
    def __init__(self, name, value):
        self.name = name
        self.value = value

    def __repr__(self):
        return "%s=%r" % (self.name, self.value)


def _version_tuple(text):
    return tuple(int(p) if p.isdigit() else p for p in re.split(r"[.-]", text) if p)


def _version_satisfies(ver, constraint):
    v = _version_tuple(ver)
    if ":" not in constraint:
        c = _version_tuple(constraint)
        return v[: len(c)] == c
    lo, hi = constraint.split(":", 1)
    if lo and v < _version_tuple(lo):
        return False
    if hi:
        h = _version_tuple(hi)
        if v[: len(h)] > h:
            return False
    return True


class LibraryList(list):
    @property
    def directories(self):
        seen = []
        for path in self:
            d = os.path.dirname(path)
            if d not in seen:
                seen.append(d)
        return seen


class Spec:
    """A concrete spec as a recipe sees it: name, version, variants, prefix,
    platform, dependencies (spec["name"]), and `libs` where given.

    `satisfies` understands the constraints recipes write on themselves:
    +v, ~v, v=value, platform=..., @version ranges and ^dependency names,
    several separated by spaces or run together ("+ofi~mx"). Anything else
    raises ValueError, so a recipe that needs more of Spack is noticed.
    """

    _TOKEN = re.compile(
        r"\s*(?:(?P<flag>[+~])(?P<vname>[A-Za-z0-9_]+)"
        r"|(?P<key>[A-Za-z0-9_]+)=(?P<value>[^\s+~^@]+)"
        r"|@(?P<version>[^\s+~^]+)"
        r"|\^(?P<dep>[A-Za-z0-9_.-]+))"
    )

    def __init__(self, name, version="0", variants=None, prefix=None, dependencies=None,
                 platform="linux", libs=None, **attrs):
        self.name = name
        self.version = version
        self.variants = {k: VariantValue(k, v) for k, v in (variants or {}).items()}
        self.prefix = Prefix(prefix or "/opt/spack/%s" % name)
        self.platform = platform
        self._dependencies = dict(dependencies or {})
        self._libs = libs
        for key, value in attrs.items():
            setattr(self, key, value)

    def __repr__(self):
        flags = "".join(("+" if v.value else "~") + k if isinstance(v.value, bool)
                        else " %s=%s" % (k, v.value) for k, v in sorted(self.variants.items()))
        return "%s@%s%s" % (self.name, self.version, flags)

    def satisfies(self, constraint):
        pos = 0
        text = constraint.strip()
        if not text:
            return True
        while pos < len(text):
            m = self._TOKEN.match(text, pos)
            if not m or m.end() == pos:
                raise ValueError("stub Spec.satisfies: cannot read %r" % text[pos:])
            pos = m.end()
            if m.group("flag"):
                v = self.variants.get(m.group("vname"))
                if v is None or v.value is not (m.group("flag") == "+"):
                    return False
            elif m.group("key"):
                key, value = m.group("key"), m.group("value")
                if key == "platform":
                    if self.platform != value:
                        return False
                else:
                    v = self.variants.get(key)
                    if v is None or str(v.value) != value:
                        return False
            elif m.group("version"):
                if not _version_satisfies(str(self.version), m.group("version")):
                    return False
            elif m.group("dep"):
                if m.group("dep") not in self._dependencies:
                    return False
        return True

    def __contains__(self, constraint):
        return self.satisfies(constraint)

    def __getitem__(self, name):
        if name == self.name:
            return self
        try:
            return self._dependencies[name]
        except KeyError:
            # Spack raises KeyError too when the spec has no such dependency.
            raise KeyError("No spec with name %s in %r" % (name, self))

    @property
    def libs(self):
        if self._libs is None:
            # Spack's default: lib<name>.so found under the prefix.
            return LibraryList([os.path.join(self.prefix, "lib", "lib%s.so" % self.name)])
        return LibraryList(self._libs)


# ------------------------------------------------------------- environments

class EnvironmentModifications:
    """Records modifications in call order, as Spack's class does;
    `apply_modifications(env)` replays them on a copy of a dictionary."""

    def __init__(self):
        self.env_modifications = []

    def set(self, name, value, **kwargs):
        self.env_modifications.append(("set", name, str(value)))

    def unset(self, name, **kwargs):
        self.env_modifications.append(("unset", name, None))

    def prepend_path(self, name, path, separator=os.pathsep, **kwargs):
        self.env_modifications.append(("prepend_path", name, str(path)))

    def append_path(self, name, path, separator=os.pathsep, **kwargs):
        self.env_modifications.append(("append_path", name, str(path)))

    def remove_path(self, name, path, separator=os.pathsep, **kwargs):
        self.env_modifications.append(("remove_path", name, str(path)))

    def __len__(self):
        return len(self.env_modifications)

    def apply_modifications(self, env):
        env = dict(env)
        for action, name, value in self.env_modifications:
            old = [p for p in env.get(name, "").split(os.pathsep) if p]
            if action == "set":
                env[name] = value
            elif action == "unset":
                env.pop(name, None)
            elif action == "prepend_path":
                env[name] = os.pathsep.join([value] + old)
            elif action == "append_path":
                env[name] = os.pathsep.join(old + [value])
            elif action == "remove_path":
                env[name] = os.pathsep.join(p for p in old if p != value)
        return env


# --------------------------------------------------------------- executables

class SkipTest(Exception):
    pass


class InstallError(Exception):
    pass


class ProcessError(Exception):
    pass


class CommandNotFoundError(Exception):
    pass


class Executable:
    def __init__(self, name):
        self.path = str(name)

    def __call__(self, *args, output=None, error=None, fail_on_error=True, timeout=60, **kwargs):
        # Spack: output=str (or str.split) returns what the program printed.
        capture_out = output in (str, str.split)
        capture_err = error in (str, str.split)
        proc = subprocess.run([self.path] + [str(a) for a in args],
                              stdout=subprocess.PIPE if capture_out else None,
                              stderr=subprocess.PIPE if capture_err else None,
                              universal_newlines=True, timeout=timeout)
        if fail_on_error and proc.returncode != 0:
            raise ProcessError("%s exited with status %d" % (self.path, proc.returncode))
        result = ""
        if capture_out:
            result += proc.stdout
        if capture_err:
            result += proc.stderr
        return result if (capture_out or capture_err) else None


def which(*names, path=None, required=False):
    if path is None:
        dirs = os.environ.get("PATH", "").split(os.pathsep)
    elif isinstance(path, str):
        dirs = path.split(os.pathsep)
    else:
        dirs = [str(p) for p in path]
    for name in names:
        name = str(name)
        candidates = [name] if os.sep in name else [os.path.join(d, name) for d in dirs if d]
        for c in candidates:
            if os.path.isfile(c) and os.access(c, os.X_OK):
                return Executable(c)
    if required:
        raise CommandNotFoundError("none of %s found" % (names,))
    return None
