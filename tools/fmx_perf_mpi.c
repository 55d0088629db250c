/* SPDX-License-Identifier: MIT */
/*
 * fmx_perf_mpi - the fmx_perf kernels (tools/perf/kernels.c) over MPI, so an
 * MPI and fmx are measured by the same code: same kernels, sizes, iteration
 * counts and output (table or JSON). Run it under mpirun/mpiexec; it does
 * not bind ranks itself. Built when an MPI is installed (CMake finds mpicc),
 * or against any MPI with scripts/build-perf-mpi.sh.
 */
#include <stdlib.h>

#include "perf/comm_mpi.h"
#include "perf/kernels.h"

int main(int argc, char **argv)
{
  struct perf_comm c;
  /* MPI first: some MPIs add their own arguments to argv. */
  comm_mpi_open(&c, &argc, &argv);
  perf_rank = c.rank;
  perf_parse_args(argc, argv, "fmx_perf_mpi", false);
  comm_mpi_options(&c); /* --mem mpi: before this, every run used posix_memalign */
  if (perf_rank != 0)
    perf_opt.quiet = true;
  int rc = perf_run(&c);
  comm_mpi_close(&c);
  return rc;
}
