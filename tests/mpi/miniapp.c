/* SPDX-License-Identifier: MIT */
/*
 * miniapp: the communication patterns of MPI applications, with real
 * computation between them, timed by phase. A 2-D Jacobi stencil on a grid
 * cut into row strips, one per rank:
 *   - halo: both neighbours' edge rows exchanged every step as LAMMPS and
 *     many codes do (Irecv, a blocking Send, the interior computed while
 *     the receives are in flight, Waitall, then the edge rows);
 *   - allreduce: the residual summed over all ranks every step;
 *   - alltoall: every --a2a-every steps, --a2a bytes to every rank, each
 *     byte checked.
 * Deterministic: rank 0 prints a checksum (the ranks' sums added in rank
 * order) that is the same over every transport and every MPI.
 *
 *   miniapp [--steps N] [--rows N] [--cols N] [--a2a BYTES] [--a2a-every N]
 *           [--hold PATH]
 *
 * --hold PATH: once the line is printed, every rank waits (sleeping, at
 * most 60 s) until PATH exists before it finalizes: a test reads the
 * ranks' endpoint counters meanwhile (fmx_counters --running).
 *
 * Prints one JSON line from rank 0: times in seconds (each the slowest
 * rank's), the checksum, and the alltoall bytes that came wrong (0).
 * Exit status: 0 ok, 1 wrong data, 2 usage.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct opts {
  int steps, rows, cols, a2a_every;
  long a2a;
  const char *hold;
};

static int parse(int argc, char **argv, struct opts *o) {
  *o = (struct opts){.steps = 100, .rows = 256, .cols = 2048, .a2a_every = 10, .a2a = 4096};
  for (int i = 1; i < argc; i++) {
    if (i + 1 >= argc) return -1;
    if (strcmp(argv[i], "--hold") == 0) {
      o->hold = argv[++i];
      continue;
    }
    long v = strtol(argv[i + 1], NULL, 0);
    if (strcmp(argv[i], "--steps") == 0 && v > 0 && v <= 1000000) o->steps = (int)v;
    else if (strcmp(argv[i], "--rows") == 0 && v >= 2 && v <= 65536) o->rows = (int)v;
    else if (strcmp(argv[i], "--cols") == 0 && v >= 3 && v <= 1 << 20) o->cols = (int)v;
    else if (strcmp(argv[i], "--a2a") == 0 && v >= 0 && v <= 64L << 20) o->a2a = v;
    else if (strcmp(argv[i], "--a2a-every") == 0 && v >= 0 && v <= 1000000) o->a2a_every = (int)v;
    else return -1;
    i++;
  }
  return 0;
}

/* One Jacobi sweep of rows [r0, r1) of the strip (rows 0 and n+1 are the
 * halo): new = mean of the four neighbours; returns the squared change. */
static double sweep(const double *g, double *out, int cols, int r0, int r1) {
  double res = 0;
  for (int r = r0; r < r1; r++)
    for (int c = 1; c < cols - 1; c++) {
      const double *p = g + (size_t)r * cols + c;
      double v = 0.25 * (p[-1] + p[1] + p[-cols] + p[cols]);
      double d = v - *p;
      res += d * d;
      out[(size_t)r * cols + c] = v;
    }
  return res;
}

static unsigned char pattern(int from, int to, int step, long i) {
  return (unsigned char)(from * 31 + to * 7 + step * 3 + i);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, np;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &np);
  struct opts o;
  if (parse(argc, argv, &o)) {
    if (rank == 0)
      fprintf(stderr, "usage: miniapp [--steps N] [--rows N] [--cols N] [--a2a BYTES] [--a2a-every N] "
                      "[--hold PATH]\n");
    MPI_Finalize();
    return 2;
  }
  size_t cells = (size_t)(o.rows + 2) * o.cols;
  double *g = calloc(cells, sizeof *g), *h = calloc(cells, sizeof *h);
  unsigned char *sb = malloc((size_t)o.a2a * np + 1), *rb = malloc((size_t)o.a2a * np + 1);
  if (!g || !h || !sb || !rb) {
    fprintf(stderr, "miniapp: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  /* A hot left edge on every rank and a source in rank 0's strip: heat
   * flows across the strips' boundaries, so the halos carry it. */
  for (int r = 0; r < o.rows + 2; r++) g[(size_t)r * o.cols] = h[(size_t)r * o.cols] = 1.0;
  if (rank == 0) g[(size_t)(o.rows / 2) * o.cols + o.cols / 2] = 1000.0;
  int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < np - 1 ? rank + 1 : MPI_PROC_NULL;
  double t_halo = 0, t_red = 0, t_a2a = 0, t_comp = 0;
  long wrong = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  for (int s = 0; s < o.steps; s++) {
    MPI_Request rq[2];
    double a = MPI_Wtime();
    MPI_Irecv(g, o.cols, MPI_DOUBLE, up, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(g + (size_t)(o.rows + 1) * o.cols, o.cols, MPI_DOUBLE, down, 0, MPI_COMM_WORLD, &rq[1]);
    /* Down first, then up: the last rank's send down goes nowhere, so a
     * chain of blocking sends always ends, whatever the order ranks run
     * in (each rank posts both receives before either send). */
    MPI_Send(g + (size_t)o.rows * o.cols, o.cols, MPI_DOUBLE, down, 1, MPI_COMM_WORLD);
    MPI_Send(g + (size_t)o.cols, o.cols, MPI_DOUBLE, up, 0, MPI_COMM_WORLD);
    double b = MPI_Wtime();
    double res = sweep(g, h, o.cols, 2, o.rows); /* the interior, halos in flight */
    double c = MPI_Wtime();
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    double d = MPI_Wtime();
    res += sweep(g, h, o.cols, 1, 2) + (o.rows > 1 ? sweep(g, h, o.cols, o.rows, o.rows + 1) : 0);
    double *t = g;
    g = h;
    h = t;
    if (rank == 0) g[(size_t)(o.rows / 2) * o.cols + o.cols / 2] = 1000.0;
    double e = MPI_Wtime();
    double sum;
    MPI_Allreduce(&res, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double f = MPI_Wtime();
    t_halo += (b - a) + (d - c);
    t_comp += (c - b) + (e - d);
    t_red += f - e;
    if (o.a2a && o.a2a_every && s % o.a2a_every == 0) {
      for (int p = 0; p < np; p++)
        for (long i = 0; i < o.a2a; i++) sb[(size_t)p * o.a2a + i] = pattern(rank, p, s, i);
      double x = MPI_Wtime();
      MPI_Alltoall(sb, (int)o.a2a, MPI_BYTE, rb, (int)o.a2a, MPI_BYTE, MPI_COMM_WORLD);
      t_a2a += MPI_Wtime() - x;
      for (int p = 0; p < np; p++)
        for (long i = 0; i < o.a2a; i++) wrong += rb[(size_t)p * o.a2a + i] != pattern(p, rank, s, i);
    }
  }
  double total = MPI_Wtime() - t0;
  /* The checksum: each strip's own rows summed here, added in rank order
   * by rank 0 (no reduction whose order an MPI chooses). */
  double local = 0, *sums = rank == 0 ? malloc(sizeof(double) * np) : NULL;
  for (int r = 1; r <= o.rows; r++)
    for (int c = 0; c < o.cols; c++) local += g[(size_t)r * o.cols + c];
  MPI_Gather(&local, 1, MPI_DOUBLE, sums, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
  double mine[5] = {total, t_halo, t_red, t_a2a, t_comp}, most[5];
  MPI_Reduce(mine, most, 5, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  long bad;
  MPI_Reduce(&wrong, &bad, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    double check = 0;
    for (int p = 0; p < np; p++) check += sums[p];
    printf("{\"app\":\"miniapp\",\"ranks\":%d,\"steps\":%d,\"time_s\":%.6f,\"halo_s\":%.6f,\"allreduce_s\":%.6f,"
           "\"alltoall_s\":%.6f,\"compute_s\":%.6f,\"checksum\":\"%.17g\",\"wrong_bytes\":%ld}\n",
           np, o.steps, most[0], most[1], most[2], most[3], most[4], check, bad);
    fflush(stdout);
    free(sums);
  }
  for (int i = 0; o.hold && i < 6000 && access(o.hold, F_OK) != 0; i++) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  free(g);
  free(h);
  free(sb);
  free(rb);
  MPI_Finalize();
  return rank == 0 && bad ? 1 : 0;
}
