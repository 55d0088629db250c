#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-package, steps 5 and 6: build fmx with EasyBuild the way an HPC
# site does, then use it through the module EasyBuild wrote.
#
#   5. EasyBuild from PyPI into a virtualenv, a tarball of the working tree
#      (tracked and untracked-but-not-ignored files, top directory
#      fmx-VERSION/), `eb packaging/easybuild/fmx-VERSION.eb` with Lmod;
#   6. in a bash that sourced Lmod's init: `module load fmx/VERSION`, then
#      fmx_info --version, fi_info -p fmx (the provider must come from the
#      module's prefix), a short fmx_perf pingpong, pkg-config, and unload.
# Step 7 (the Spack recipe) is `python3 tests/package/check_spack_recipe.py`.
#
# Everything (virtualenv, EasyBuild's install, build, source and temporary
# paths, HOME for pip and Lmod caches) lives in one temporary directory,
# removed at the end. Every step runs under `timeout`. One `[easybuild] ...`
# line per step; on failure a FAILED line says what, and the exit status is 1.
#
# Environment: FMX_EB_PYTHON (interpreter for the virtualenv; default: the
# first of python3, /usr/bin/python3 that can make one with pip),
# FMX_EB_PIP_SPEC (default 'easybuild>=5,<6'), FMX_EB_TIMEOUT (seconds for
# eb, default 1800), FMX_EB_KEEP=1 (keep the temporary directory),
# LMOD_CMD, LMOD_INIT (Debian's lmod paths by default).
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
LMOD_CMD=${LMOD_CMD:-/usr/share/lmod/lmod/libexec/lmod}
LMOD_INIT=${LMOD_INIT:-/usr/share/lmod/lmod/init/bash}
EB_TIMEOUT=${FMX_EB_TIMEOUT:-1800}
PIP_SPEC=${FMX_EB_PIP_SPEC:-easybuild>=5,<6}
WORK=

say() { printf '[easybuild] %s\n' "$*"; }
fail() {
  printf '[easybuild] FAILED: %s\n' "$*" >&2
  exit 1
}
# Seconds since the step began, for the step's line.
now() { date +%s; }
took() { echo "$(( $(now) - $1 )) s"; }

cleanup() {
  [ -n "$WORK" ] && [ -d "$WORK" ] || return 0
  if [ "${FMX_EB_KEEP:-0}" = 1 ]; then
    say "kept $WORK (FMX_EB_KEEP=1)"
  else
    rm -rf "$WORK"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# The last lines of a step's output, on its failure (the directory that
# holds the whole of it is removed unless FMX_EB_KEEP=1).
show_tail() {
  [ -f "$1" ] || return 0
  echo "----- last lines of $(basename "$1") -----" >&2
  tail -n "${2:-40}" "$1" >&2
  echo "----- (FMX_EB_KEEP=1 keeps $WORK) -----" >&2
}

VERSION=$(sed -n 's/^project(fmx VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
[ -n "$VERSION" ] || fail "no version in CMakeLists.txt's project()"
EC="$ROOT/packaging/easybuild/fmx-$VERSION.eb"
[ -f "$EC" ] || fail "no easyconfig $EC for fmx $VERSION (project() in CMakeLists.txt)"

# ---- step 0: what the steps need -------------------------------------------
t=$(now)
for tool in git tar gzip cmake pkg-config fi_info bash timeout; do
  command -v "$tool" >/dev/null 2>&1 || fail "needs $tool (Debian: make deps; fi_info is in libfabric-bin)"
done
[ -x "$LMOD_CMD" ] || fail "no Lmod at LMOD_CMD=$LMOD_CMD (apt-get install lmod)"
[ -f "$LMOD_INIT" ] || fail "no Lmod init script at LMOD_INIT=$LMOD_INIT"
FI_LIBDIR=$(pkg-config --variable=libdir libfabric 2>/dev/null) ||
  fail "pkg-config finds no libfabric (apt-get install libfabric-dev)"
FI_SYSDIR="$FI_LIBDIR/libfabric"
# The module appends libfabric's own provider directory (the easyconfig says
# why). A libfmx-fi.so there is loaded too, after the module's; one built
# with a sanitizer (an install of a build-asan tree with a CMakeLists.txt
# older than FMX_FI_DIR, which put the provider there whatever the prefix)
# aborts every program that loads libfabric once libfmx.so is found.
if [ -e "$FI_SYSDIR/libfmx-fi.so" ]; then
  if command -v readelf >/dev/null 2>&1 &&
     readelf -d "$FI_SYSDIR/libfmx-fi.so" 2>/dev/null | grep -q 'lib[at]san'; then
    fail "$FI_SYSDIR/libfmx-fi.so is a sanitizer build left by an earlier install (owner:" \
         "$(dpkg -S "$FI_SYSDIR/libfmx-fi.so" 2>/dev/null || echo none)); it aborts fi_info" \
         "under the module: remove it"
  fi
  say "note: $FI_SYSDIR/libfmx-fi.so exists; the module's provider must still be the one loaded"
fi
say "step 0: tools found; fmx $VERSION; libfabric's own provider directory $FI_SYSDIR ($(took "$t"))"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/fmx-easybuild.XXXXXX") || fail "mktemp -d"
mkdir -p "$WORK/home" "$WORK/src" "$WORK/eb" "$WORK/tmp" "$WORK/xdg" || fail "mkdir in $WORK"
# Nothing of the caller's configuration, nothing written outside $WORK: pip's
# and Lmod's caches go under HOME, compilers' temporary files under TMPDIR;
# EasyBuild reads config files from HOME and XDG_CONFIG_DIRS
# (/etc/easybuild.d) and EASYBUILD_* variables.
CALLER_HOME=${HOME:-/}
export HOME="$WORK/home" XDG_CONFIG_DIRS="$WORK/xdg" XDG_CACHE_HOME="$WORK/home/.cache" TMPDIR="$WORK/tmp"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1
for v in $(env | sed -n 's/^\(EASYBUILD_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset PYTHONPATH PYTHONHOME VIRTUAL_ENV
export LMOD_CMD
# fmx programs run here ask nothing of the host's network (the Makefile's tests do the same).
export FMX_NET_DISCOVER_MS=0

# ---- step 5a: EasyBuild from PyPI into a virtualenv ------------------------
t=$(now)
VENV="$WORK/venv"
PY=
# Debian's /usr/bin/python3 makes no virtualenv without python3-venv
# (ensurepip); pyenv's python3 has it. Take the first one that works.
for cand in ${FMX_EB_PYTHON:-} python3 /usr/bin/python3; do
  command -v "$cand" >/dev/null 2>&1 || continue
  rm -rf "$VENV"
  if timeout 120 "$cand" -m venv "$VENV" >"$WORK/venv.out" 2>&1 &&
     timeout 60 "$VENV/bin/python" -m pip --version >>"$WORK/venv.out" 2>&1; then
    PY=$cand
    break
  fi
done
[ -n "$PY" ] || { show_tail "$WORK/venv.out"; fail "no python3 here can make a virtualenv with pip (apt-get install python3-venv)"; }
PYVER=$("$VENV/bin/python" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
say "step 5a: virtualenv from $(command -v "$PY") (Python $PYVER) ($(took "$t"))"

t=$(now)
timeout 900 "$VENV/bin/python" -m pip install --no-cache-dir -q "$PIP_SPEC" >"$WORK/pip.out" 2>&1 ||
  { rc=$?; show_tail "$WORK/pip.out"; fail "pip install '$PIP_SPEC' (status $rc)"; }
# eb finds its Python through EB_PYTHON, else a python on PATH.
export EB_PYTHON="$VENV/bin/python"
EBVER=$(timeout 120 "$VENV/bin/eb" --version 2>&1) || { echo "$EBVER" >&2; fail "eb --version"; }
say "step 5b: pip install '$PIP_SPEC': $EBVER ($(took "$t"))"

# ---- step 5c: the source tarball of the working tree ------------------------
t=$(now)
TARBALL="$WORK/src/fmx-$VERSION.tar.gz"
# Tracked files (as they are now, not as committed) and untracked ones that
# .gitignore does not exclude; tracked files deleted in the tree are skipped.
# --no-recursion: a submodule's gitlink would otherwise pull in its directory.
# git reads the caller's configuration (safe.directory), hence their HOME.
( cd "$ROOT" &&
  HOME="$CALLER_HOME" timeout 60 git ls-files -z -co --exclude-standard |
    xargs -0 sh -c 'for f; do if [ -e "$f" ] || [ -L "$f" ]; then printf "%s\0" "$f"; fi; done' sh |
    timeout 300 tar --null --no-recursion -T - --sort=name --owner=0 --group=0 --numeric-owner \
      --transform "s,^,fmx-$VERSION/," -czf "$TARBALL" ) >"$WORK/tar.out" 2>&1 ||
  { show_tail "$WORK/tar.out"; fail "tarball of the working tree"; }
NFILES=$(tar -tzf "$TARBALL" | wc -l)
tar -tzf "$TARBALL" "fmx-$VERSION/CMakeLists.txt" >/dev/null 2>&1 || fail "the tarball has no fmx-$VERSION/CMakeLists.txt"
say "step 5c: $(basename "$TARBALL"): $NFILES files, $(du -k "$TARBALL" | cut -f1) KiB ($(took "$t"))"

# ---- step 5d: eb --------------------------------------------------------------
t=$(now)
ASROOT=
[ "$(id -u)" = 0 ] && ASROOT=--allow-use-as-root-and-accept-consequences
INSTALL="$WORK/eb/install"
# shellcheck disable=SC2086 # ASROOT is one word or none
timeout "$EB_TIMEOUT" "$VENV/bin/eb" "$EC" $ASROOT \
  --prefix="$WORK/eb" --installpath="$INSTALL" --buildpath="$WORK/eb/build" \
  --sourcepath="$WORK/src" --repositorypath="$WORK/eb/ebfiles_repo" \
  --containerpath="$WORK/eb/containers" --packagepath="$WORK/eb/packages" \
  --tmpdir="$WORK/tmp" --tmp-logdir="$WORK/tmp" \
  --modules-tool=Lmod --module-syntax=Lua --color=never \
  >"$WORK/eb.out" 2>&1
rc=$?
if [ $rc -ne 0 ]; then
  show_tail "$WORK/eb.out"
  # eb keeps its log when a build fails; the error is near its end.
  for log in "$WORK"/tmp/eb-*/easybuild-fmx-*.log; do [ -f "$log" ] && show_tail "$log" 60; done
  [ $rc -eq 124 ] && fail "eb ran past ${EB_TIMEOUT} s (FMX_EB_TIMEOUT)"
  fail "eb $(basename "$EC") (status $rc)"
fi
MODFILE="$INSTALL/modules/all/fmx/$VERSION.lua"
[ -f "$MODFILE" ] || fail "eb succeeded but wrote no $MODFILE"
say "step 5d: eb $(basename "$EC"): built, installed into $INSTALL/software/fmx/$VERSION, sanity check passed ($(took "$t"))"

# ---- step 6: the module, in a bash that sourced Lmod's init -----------------
t=$(now)
cat >"$WORK/step6.sh" <<'EOF'
# Runs under bash --noprofile --norc; arguments: LMOD_INIT MODULEPATH VERSION FI_SYSDIR
set -u
LMOD_INIT=$1 MODS=$2 VERSION=$3 FI_SYSDIR=$4
say() { printf '[easybuild] %s\n' "$*"; }
fail() { printf '[easybuild] FAILED: %s\n' "$*" >&2; exit 1; }
unset MODULEPATH LOADEDMODULES _LMFILES_
. "$LMOD_INIT" || fail "source $LMOD_INIT"
BEFORE=${FI_PROVIDER_PATH-}
module use "$MODS"
module load "fmx/$VERSION" || fail "module load fmx/$VERSION"
[ -n "${EBROOTFMX:-}" ] && [ -d "$EBROOTFMX" ] || fail "module load fmx/$VERSION set no EBROOTFMX"
say "step 6a: module load fmx/$VERSION: EBROOTFMX=$EBROOTFMX"

# fmx's directory first, libfabric's own last (packaging/easybuild/fmx-*.eb).
[ -n "${FI_PROVIDER_PATH:-}" ] || fail "module load fmx/$VERSION set no FI_PROVIDER_PATH"
first=${FI_PROVIDER_PATH%%:*} last=${FI_PROVIDER_PATH##*:}
[ "$first" = "$EBROOTFMX/lib/libfabric" ] || fail "FI_PROVIDER_PATH=$FI_PROVIDER_PATH does not start with $EBROOTFMX/lib/libfabric"
[ "$last" = "$FI_SYSDIR" ] || fail "FI_PROVIDER_PATH=$FI_PROVIDER_PATH does not end with libfabric's own $FI_SYSDIR"
say "step 6b: FI_PROVIDER_PATH=$FI_PROVIDER_PATH"

out=$(timeout 30 fmx_info --version 2>&1) || fail "fmx_info --version: $out"
[ "$out" = "fmx $VERSION" ] || fail "fmx_info --version printed '$out', not 'fmx $VERSION'"
[ "$(command -v fmx_info)" = "$EBROOTFMX/bin/fmx_info" ] || fail "fmx_info is $(command -v fmx_info), not the module's"
say "step 6c: fmx_info --version: $out"

# LD_DEBUG=files names each library as the dynamic linker loads it: the first
# libfmx-fi.so libfabric dlopens must be the module's.
timeout 60 env LD_DEBUG=files fi_info -p fmx >"$HOME/fi_info.out" 2>"$HOME/fi_info.err" ||
  { rc=$?; tail -n 20 "$HOME/fi_info.err" >&2; fail "fi_info -p fmx (status $rc)"; }
grep -q '^provider: fmx$' "$HOME/fi_info.out" || { cat "$HOME/fi_info.out" >&2; fail "fi_info -p fmx lists no provider fmx"; }
loaded=$(sed -n 's/.*file=\(.*libfmx-fi\.so\) \[0\];  dynamically loaded.*/\1/p' "$HOME/fi_info.err" | head -n 1)
[ "$loaded" = "$EBROOTFMX/lib/libfabric/libfmx-fi.so" ] || fail "fi_info loaded the provider from '$loaded', not the module's"
say "step 6d: fi_info -p fmx: $(grep -c '^provider: fmx$' "$HOME/fi_info.out") fmx entries, provider loaded from $loaded"

out=$(timeout 120 fmx_perf pingpong --sizes 8 --iters 100 --timeout 30 --quiet 2>&1) || { echo "$out" >&2; fail "fmx_perf pingpong"; }
row=$(printf '%s\n' "$out" | awk '$1 == 8 && $2 == 100 { print }')
[ -n "$row" ] || { echo "$out" >&2; fail "fmx_perf pingpong printed no row for 8 bytes"; }
say "step 6e: fmx_perf pingpong --sizes 8 --iters 100:$(printf '%s' "$row" | tr -s ' ' ' ')"

pc=$(pkg-config --modversion fmx 2>&1) && [ "$pc" = "$VERSION" ] || fail "pkg-config --modversion fmx: '$pc'"
case ":${MANPATH:-}:" in *":$EBROOTFMX/share/man:"*) ;; *) fail "MANPATH lacks $EBROOTFMX/share/man";; esac
[ -f "$EBROOTFMX/share/man/man1/fmx_info.1" ] || fail "no man page fmx_info.1 under the module"
say "step 6f: pkg-config --modversion fmx: $pc; MANPATH has the man pages"

module unload "fmx/$VERSION" || fail "module unload fmx/$VERSION"
[ "${FI_PROVIDER_PATH-}" = "$BEFORE" ] || fail "module unload left FI_PROVIDER_PATH=${FI_PROVIDER_PATH-}"
say "step 6g: module unload fmx/$VERSION restores FI_PROVIDER_PATH"
EOF
timeout 600 bash --noprofile --norc "$WORK/step6.sh" "$LMOD_INIT" "$INSTALL/modules/all" "$VERSION" "$FI_SYSDIR" ||
  fail "step 6 (the module): see the line above"
say "step 6: the module works ($(took "$t"))"
say "passed"
