#!/bin/sh
# SPDX-License-Identifier: MIT
# make check-package: fmx installed the ways HPC sites install it.
#   1. the Debian packages from debian/ (dpkg-buildpackage -us -uc -b, on a
#      copy of the working tree), and lintian with no error;
#   2. installed with apt-get;
#   3. used with nothing set: fi_info -p fmx, an Open MPI run over the
#      installed provider, man -w fi_fmx, compile lines through pkg-config
#      and find_package(fmx);
#   4. purged, and nothing of theirs left on the disk;
#   5-6. EasyBuild from PyPI, the easyconfig, its module under Lmod
#      (scripts/check-easybuild.sh);
#   7. the Spack recipe against a stand-in of Spack's API
#      (tests/package/check_spack_recipe.py).
# Needs root (it installs packages) and the packages of `make deps`.
# One `[package] ...` line per step; exit 1 with a FAILED line on failure.
# FMX_PKG_KEEP=1 keeps the temporary directory.
set -u
ROOT=$(cd "$(dirname "$0")/.." && pwd)
VERSION=$(sed -n 's/^project(fmx VERSION \([0-9.]*\).*/\1/p' "$ROOT/CMakeLists.txt")
PKGS="libfmx0 libfmx-dev fmx-tools libfabric-fmx libmyriexpress0 libmyriexpress-dev"
T=$(mktemp -d /tmp/fmx-package.XXXXXX)
installed=0

say() { echo "[package] $*"; }
fail() {
  echo "[package] FAILED: $*" >&2
  exit 1
}
# The names of ours that dpkg knows now (installed, or configuration left).
ours() {
  for p in $PKGS; do
    dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -qv "not-installed" && echo "$p"
  done
}
cleanup() {
  if [ "$installed" = 1 ]; then
    left=$(ours)
    [ -z "$left" ] || dpkg --purge $left >"$T/cleanup.log" 2>&1 ||
      { cat "$T/cleanup.log" >&2; echo "[package] could not purge:" $left >&2; }
  fi
  [ "${FMX_PKG_KEEP:-0}" = 1 ] && echo "[package] kept $T" || rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ "$(id -u)" != 0 ]; then
  say "skipped: it installs and purges packages, so it needs root"
  exit 0
fi
[ -z "$(ours)" ] || fail "$(ours | tr '\n' ' ')known to dpkg already: purge first (apt-get purge $PKGS)"

# 1. Build the packages from a copy of the tree (dpkg-buildpackage writes
# beside the source directory), then lintian.
src="$T/fmx-$VERSION"
mkdir -p "$src"
(cd "$ROOT" && git ls-files -co --exclude-standard -z | tar cf - --null -T -) | tar xf - -C "$src" ||
  fail "copying the working tree"
start=$(date +%s)
(cd "$src" && timeout 1200 dpkg-buildpackage -us -uc -b) >"$T/build.log" 2>&1 ||
  { tail -30 "$T/build.log" >&2; fail "dpkg-buildpackage (log above)"; }
debs=$(ls "$T"/*.deb | grep -v -- -dbgsym_)
n=$(echo "$debs" | wc -l)
[ "$n" = 6 ] || fail "dpkg-buildpackage made $n packages, not 6: $debs"
say "1. dpkg-buildpackage -us -uc -b: $n packages (and their -dbgsym) in $(($(date +%s) - start)) s"
timeout 600 lintian --fail-on error "$T"/*.changes >"$T/lintian.log" 2>&1 ||
  { cat "$T/lintian.log" >&2; fail "lintian reports errors (above)"; }
say "1. lintian: no error ($(grep -c '^W:' "$T/lintian.log") warnings, $(grep -c '^[IP]:' "$T/lintian.log") notes)"

# 2. Install them.
installed=1
DEBIAN_FRONTEND=noninteractive timeout 600 apt-get install -y -qq --no-install-recommends $debs \
  >"$T/install.log" 2>&1 || { cat "$T/install.log" >&2; fail "apt-get install of the packages"; }
say "2. installed: $PKGS"

# 3. Use them with nothing set: a clean environment (no FI_PROVIDER_PATH,
# no build tree on any path).
clean() { env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME="$T" FMX_NET_DISCOVER_MS=0 "$@"; }
clean fmx_info --version | grep -qx "fmx $VERSION" || fail "fmx_info --version"
clean timeout 60 fi_info -p fmx >"$T/fi_info.log" 2>&1 && grep -q "provider: fmx" "$T/fi_info.log" ||
  { cat "$T/fi_info.log" >&2; fail "fi_info -p fmx does not list the installed provider"; }
say "3. fi_info -p fmx: $(grep -c 'provider: fmx' "$T/fi_info.log") entries"
clean timeout 60 fi_info -e 2>/dev/null | grep -aq "FI_FMX_SPIN_US" || fail "fi_info -e lists no FI_FMX_ variable"
man -w fi_fmx >/dev/null 2>&1 || fail "man -w fi_fmx finds no page"
for page in fmx libfmx fmx_info fmx_perf fmx_counters fmx_tune omx_info; do
  man -w "$page" >/dev/null 2>&1 || fail "man -w $page finds no page"
done
say "3. man -w fi_fmx: $(man -w fi_fmx)"

cat >"$T/app.c" <<'EOF'
#include <fmx.h>
#include <stdio.h>
int main(void)
{
  if (fmx_init() != FMX_SUCCESS) return 1;
  puts(fmx_strerror(FMX_SUCCESS));
  return fmx_finalize() != FMX_SUCCESS;
}
EOF
# shellcheck disable=SC2046
clean cc "$T/app.c" -o "$T/app_pc" $(clean pkg-config --cflags --libs fmx) || fail "cc with pkg-config fmx"
[ "$(clean "$T/app_pc")" = Success ] || fail "the program built with pkg-config does not run"
mkdir -p "$T/cm"
cat >"$T/cm/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.18)
project(app C)
find_package(fmx REQUIRED COMPONENTS mx)
add_executable(app ../app.c)
target_link_libraries(app PRIVATE fmx::fmx)
add_executable(mxapp mxapp.c)
target_link_libraries(mxapp PRIVATE fmx::myriexpress)
EOF
printf '#include <myriexpress.h>\nint main(void) { return mx_init() != MX_SUCCESS || mx_finalize() != MX_SUCCESS; }\n' \
  >"$T/cm/mxapp.c"
(clean cmake -S "$T/cm" -B "$T/cm/b" && clean cmake --build "$T/cm/b") >"$T/cmake.log" 2>&1 ||
  { cat "$T/cmake.log" >&2; fail "find_package(fmx) project"; }
[ "$(clean "$T/cm/b/app")" = Success ] && clean "$T/cm/b/mxapp" || fail "the find_package(fmx) programs do not run"
say "3. compile lines: pkg-config fmx and find_package(fmx COMPONENTS mx) build and run"

# An MPI program through Open MPI's cm/ofi path, the provider found where
# the package put it (no FI_PROVIDER_PATH).
cat >"$T/ring.c" <<'EOF'
#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv)
{
  int rank, size, token = 0;
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int lap = 0; lap < 100; lap++) {
    if (rank == 0) {
      MPI_Send(&token, 1, MPI_INT, 1 % size, 7, MPI_COMM_WORLD);
      MPI_Recv(&token, 1, MPI_INT, size - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(&token, 1, MPI_INT, rank - 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      token++;
      MPI_Send(&token, 1, MPI_INT, (rank + 1) % size, 7, MPI_COMM_WORLD);
    }
  }
  if (rank == 0) printf("token %d\n", token);
  MPI_Finalize();
  return 0;
}
EOF
clean mpicc.openmpi "$T/ring.c" -o "$T/ring" 2>"$T/mpicc.log" || { cat "$T/mpicc.log" >&2; fail "mpicc.openmpi"; }
clean timeout 120 mpirun.openmpi --allow-run-as-root --oversubscribe -np 2 --mca pml cm --mca mtl ofi \
  --mca mtl_ofi_provider_include fmx --mca btl self "$T/ring" >"$T/mpi.log" 2>&1 ||
  { cat "$T/mpi.log" >&2; fail "Open MPI over the installed provider"; }
grep -qx "token 100" "$T/mpi.log" || { cat "$T/mpi.log" >&2; fail "Open MPI over fmx: wrong token"; }
say "3. Open MPI (pml cm, mtl ofi, provider fmx) over the installed provider: 2 ranks, 100 laps"

# 4. Purge, and nothing of theirs is left: every file the packages held.
for d in $debs; do dpkg-deb -c "$d"; done | awk '{print $6}' | sed 's/^\.//' |
  grep -v '/$' | sed 's/ -> .*//' >"$T/files"
DEBIAN_FRONTEND=noninteractive timeout 300 apt-get purge -y -qq $PKGS >"$T/purge.log" 2>&1 ||
  { cat "$T/purge.log" >&2; fail "apt-get purge"; }
installed=0
left=""
while read -r f; do
  [ -e "$f" ] || [ -L "$f" ] && left="$left $f"
done <"$T/files"
for p in $(ours); do left="$left (package $p)"; done
[ -z "$left" ] || fail "left behind after purge:$left"
say "4. purged: none of the $(wc -l <"$T/files") files is left"

# 5-6. EasyBuild and Lmod.
sh "$ROOT/scripts/check-easybuild.sh" || fail "EasyBuild (scripts/check-easybuild.sh)"
# 7. Spack's recipe.
python3 "$ROOT/tests/package/check_spack_recipe.py" || fail "the Spack recipe (tests/package/check_spack_recipe.py)"
say "all steps passed"
