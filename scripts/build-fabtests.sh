#!/bin/sh
# Build libfabric's fabtests (../shared/third_party/fabtests-1.17.0.tar.gz,
# the version of Debian's libfabric-dev; not fmx's code) into OUT, once:
# done when OUT/install/bin/fi_rdm_tagged_pingpong exists.
# Usage: sh scripts/build-fabtests.sh TARBALL OUT
set -eu
tarball=$1 out=$2
[ -x "$out/install/bin/fi_rdm_tagged_pingpong" ] && exit 0
rm -rf "$out"
mkdir -p "$out"
tar xzf "$tarball" -C "$out"
cd "$out/fabtests"
./autogen.sh >"$out/build.log" 2>&1
./configure --prefix="$out/install" --with-libfabric=/usr >>"$out/build.log" 2>&1
make -j"$(nproc)" install >>"$out/build.log" 2>&1
