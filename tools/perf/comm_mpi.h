/* SPDX-License-Identifier: MIT */
/* comm_mpi.h - struct perf_comm over MPI (see comm.h). */
#ifndef FMX_PERF_COMM_MPI_H
#define FMX_PERF_COMM_MPI_H

#include "comm.h"

/* MPI_Init and fill c for this rank of MPI_COMM_WORLD. */
void comm_mpi_open(struct perf_comm *c, int *argc, char ***argv);
/* What the options (parsed after MPI_Init, which may rewrite argv) change
 * in c: --mem mpi's allocator, the description. */
void comm_mpi_options(struct perf_comm *c);
void comm_mpi_close(struct perf_comm *c);

#endif /* FMX_PERF_COMM_MPI_H */
