#!/bin/sh
# Build fmx_perf_mpi (the fmx_perf kernels over MPI) with one MPI's compiler.
# Usage: sh scripts/build-perf-mpi.sh CC OUT [extra compiler/linker flags...]
#   CC   an MPI compiler wrapper (mpicc, mpicc.openmpi, mpicc.mpich) or a plain
#        compiler when the flags name the MPI's headers and library
#        (e.g. cc OUT -I$IMPI/include -L$IMPI/lib -lmpi)
#   OUT  the executable to write
# The kernels are the same source as fmx_perf's (tools/perf/).
set -eu
[ $# -ge 2 ] || { echo "usage: $0 CC OUT [flags...]" >&2; exit 2; }
CC=$1 OUT=$2
shift 2
top=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$(dirname "$OUT")"
exec $CC -O2 -g -std=gnu11 -D_GNU_SOURCE -I"$top/tools" \
  "$top/tools/fmx_perf_mpi.c" "$top/tools/perf/kernels.c" "$top/tools/perf/run.c" "$top/tools/perf/options.c" \
  "$top/tools/perf/comm_mpi.c" \
  -o "$OUT" "$@" -lm
