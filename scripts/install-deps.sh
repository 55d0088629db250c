#!/bin/sh
# Install the Debian packages fmx needs to build and test, when missing.
# Runs apt-get only as root and only if something is missing.
set -e
# Open MPI: fmx_perf_mpi is built and tested against it (the same kernels as fmx_perf).
# clang: the libFuzzer targets (make check-fuzz, make fuzz).
# libfabric-dev: the provider (libfmx-fi.so); libfabric-bin: fi_info, used by its tests.
# scdoc: the man pages (man/*.scd).
PKGS="cmake gcc make pkg-config libhwloc-dev hwloc util-linux iproute2 nftables ethtool procps openmpi-bin libopenmpi-dev clang libfabric-dev libfabric-bin autoconf automake libtool scdoc"
sh "$(dirname "$0")/apt-install-missing.sh" deps $PKGS
if ! python3 -m pytest --version >/dev/null 2>&1; then
  echo "[deps] installing pytest"
  python3 -m pip install -q pytest 2>/dev/null || {
    [ "$(id -u)" = 0 ] && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-pytest >/dev/null; }
fi
