#!/bin/sh
# Install what `make bench` compares fmx with, when missing (idempotent, quick
# when everything is there):
#   - Debian: Open MPI, MPICH, UCX tools (ucx_perftest), libfabric tools,
#     matplotlib (apt-get update + install, only as root, only when missing);
#   - Intel MPI from PyPI (impi-rt: runtime, mpiexec, IMB-MPI1; impi-devel:
#     mpicc and headers) into a virtualenv, IMPI_VENV (default
#     /opt/fmx-bench/impi).
# A failure to get Intel MPI is not fatal: the bench driver reports it as
# skipped, with the reason written to $IMPI_VENV.skip.
set -u
IMPI_VENV=${IMPI_VENV:-/opt/fmx-bench/impi}
PKGS="openmpi-bin libopenmpi-dev mpich libmpich-dev ucx-utils libfabric-bin python3-matplotlib python3-venv"
sh "$(dirname "$0")/apt-install-missing.sh" bench-deps $PKGS ||
  echo "[bench-deps] those peers will be skipped" >&2

# Intel MPI: done when the venv has mpiexec and IMB-MPI1 and mpicc.
if [ -x "$IMPI_VENV/bin/mpiexec" ] && [ -x "$IMPI_VENV/bin/IMB-MPI1" ] && [ -e "$IMPI_VENV/include/mpi.h" ]; then
  rm -f "$IMPI_VENV.skip"
  exit 0
fi
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
mkdir -p "$(dirname "$IMPI_VENV")" 2>/dev/null
log=$(mktemp)
if { [ -x "$IMPI_VENV/bin/pip" ] || "$PY" -m venv "$IMPI_VENV"; } >"$log" 2>&1 &&
   echo "[bench-deps] installing Intel MPI (pip install impi-rt impi-devel) into $IMPI_VENV" >&2 &&
   "$IMPI_VENV/bin/pip" install -q impi-rt impi-devel >>"$log" 2>&1; then
  rm -f "$IMPI_VENV.skip"
else
  reason=$(grep -v '^\s*$' "$log" | tail -n 3 | tr '\n' ' ')
  echo "[bench-deps] Intel MPI not installed: $reason" >&2
  printf 'pip install impi-rt impi-devel failed: %s\n' "$reason" >"$IMPI_VENV.skip" 2>/dev/null
fi
rm -f "$log"
exit 0
