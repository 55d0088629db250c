/* SPDX-License-Identifier: MIT */
/* The fmx_perf pingpong kernel over MPI, so an MPI's shared memory is
 * measured by the same loop as fmx (half round trip, 10^6 B/s).
 * Build: mpicc -O2 -o mpi_pingpong mpi_pingpong.c
 * Run:   mpirun -np 2 --bind-to core ./mpi_pingpong [size ...] */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long iters_for(long size) {
  long it = (1L << 28) / (size > 4096 ? size : 4096);
  return it < 20 ? 20 : (it > 10000 ? 10000 : it);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  long def[] = {0, 8, 64, 1024, 4096, 65536, 1 << 20, 16 << 20, 64 << 20};
  int n = argc > 1 ? argc - 1 : (int)(sizeof def / sizeof *def);
  char *buf = malloc(64 << 20);
  memset(buf, 1, 64 << 20);
  if (rank == 0) printf("%12s %8s %12s %14s\n", "size", "iters", "latency(us)", "bandwidth(MB/s)");
  for (int k = 0; k < n; k++) {
    long size = argc > 1 ? atol(argv[k + 1]) : def[k];
    long iters = iters_for(size), warm = iters / 10 + 2;
    double t0 = 0;
    for (long i = 0; i < iters + warm; i++) {
      if (i == warm) {
        MPI_Barrier(MPI_COMM_WORLD);
        t0 = MPI_Wtime();
      }
      if (rank == 0) {
        MPI_Send(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
        MPI_Recv(buf, (int)size, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(buf, (int)size, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
      }
    }
    double half = (MPI_Wtime() - t0) / iters / 2 * 1e6;
    if (rank == 0) printf("%12ld %8ld %12.2f %14.2f\n", size, iters, half, size / half);
  }
  free(buf);
  MPI_Finalize();
  return 0;
}
