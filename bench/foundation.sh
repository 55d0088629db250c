#!/bin/sh
# Side-by-side numbers for the foundation issue: fmx (auto), Open MPI's
# default shared memory (vader, CMA), Intel MPI (IMB PingPong) and raw CMA,
# interleaved, REPS times. Needs: a built fmx (BUILD), mpicc/mpirun (Open
# MPI), and optionally Intel MPI in IMPI (a venv with impi-rt).
# Usage: sh bench/foundation.sh [REPS]
set -u
REPS=${1:-3}
BUILD=${BUILD:-build}
IMPI=${IMPI:-/opt/impi}
SIZES="0 8 4096 65536 1048576 16777216 67108864"
T=$(mktemp -d)
mpicc -O2 -o "$T/mpi_pingpong" bench/mpi_pingpong.c 2>/dev/null || echo "# no mpicc: Open MPI skipped"
cc -O2 -o "$T/cma_raw" bench/cma_raw.c
for r in $(seq "$REPS"); do
  echo "## rep $r: fmx"
  "$BUILD/fmx_perf" pingpong --quiet --sizes "$(echo $SIZES | tr ' ' ,)"
  if [ -x "$T/mpi_pingpong" ]; then
    echo "## rep $r: Open MPI default (vader)"
    mpirun --allow-run-as-root --oversubscribe -np 2 --bind-to core "$T/mpi_pingpong" $SIZES 2>/dev/null
  fi
  if [ -x "$IMPI/bin/IMB-MPI1" ]; then
    echo "## rep $r: Intel MPI IMB-MPI1 PingPong"
    I_MPI_ROOT=$IMPI PATH=$IMPI/bin:$PATH LD_LIBRARY_PATH=$IMPI/lib \
      "$IMPI/bin/mpiexec" -n 2 -genv I_MPI_PIN_PROCESSOR_LIST 0,1 \
      "$IMPI/bin/IMB-MPI1" PingPong -msglog 0:26 -iter_policy off 2>/dev/null |
      awk -v s="$SIZES" 'BEGIN{split(s,a," "); for(i in a) want[a[i]]=1} $1 in want && NF==4'
  fi
  echo "## rep $r: raw process_vm_readv, one stream"
  "$T/cma_raw" 65536 1048576 16777216 67108864
done
rm -rf "$T"
