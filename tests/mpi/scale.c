/* SPDX-License-Identifier: MIT */
/*
 * scale: what a job across many hosts meets first (bench/scale.py).
 *   - startup: from just before MPI_Init to the end of the first 8-byte
 *     MPI_Alltoall, the slowest rank's (every rank connects to every
 *     other there, on demand or at init);
 *   - alltoall: then, per size in --sizes, --iters MPI_Alltoall of that
 *     many bytes to every rank after 2 to warm up; the mean time of one,
 *     the slowest rank's. Every byte received is checked.
 *
 *   scale [--sizes 4096,65536] [--iters N] [--hold PATH]
 *
 * --hold PATH: once the line is printed, every rank waits (sleeping, at
 * most 60 s) until PATH exists before it finalizes: the bench reads the
 * ranks' endpoint counters meanwhile (fmx_counters --running).
 *
 * Prints one JSON line from rank 0: {"ranks":N,"startup_s":T,
 * "alltoall_us":{"SIZE":T,...},"wrong":W}. Exit status: 0 ok, 1 wrong
 * data, 2 usage.
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t); /* across the ranks' processes on one machine */
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static uint8_t pattern(int from, int to, long i) { return (uint8_t)(from * 31 + to * 7 + i); }

int main(int argc, char **argv) {
  double t0 = now();
  MPI_Init(&argc, &argv);
  int n, me;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  char s8[8 * 1024] = {0}, d8[8 * 1024];
  if (n > 1024) MPI_Abort(MPI_COMM_WORLD, 2);
  MPI_Alltoall(s8, 8, MPI_BYTE, d8, 8, MPI_BYTE, MPI_COMM_WORLD);
  double startup = now() - t0, worst;
  MPI_Reduce(&startup, &worst, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);

  const char *sizes = "4096,65536", *hold = NULL;
  int iters = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--sizes")) sizes = argv[i + 1];
    else if (!strcmp(argv[i], "--iters")) iters = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--hold")) hold = argv[i + 1];
    else {
      if (!me) fprintf(stderr, "scale: unknown option %s\n", argv[i]);
      MPI_Finalize();
      return 2;
    }
  }
  if (iters < 1 || iters > 100000) iters = 20;
  if (!me) printf("{\"ranks\":%d,\"startup_s\":%.4f,\"alltoall_us\":{", n, worst);
  long wrong = 0;
  int first = 1;
  for (const char *p = sizes; *p;) {
    char *end;
    long sz = strtol(p, &end, 10);
    if (end == p || sz < 1 || sz > (64L << 20) / n) break;
    p = *end == ',' ? end + 1 : end;
    uint8_t *sb = malloc((size_t)sz * n), *rb = malloc((size_t)sz * n);
    if (!sb || !rb) MPI_Abort(MPI_COMM_WORLD, 2);
    for (int to = 0; to < n; to++)
      for (long i = 0; i < sz; i++) sb[(size_t)to * sz + i] = pattern(me, to, i);
    double t = 0;
    for (int it = 0; it < iters + 2; it++) {
      memset(rb, 0, (size_t)sz * n);
      MPI_Barrier(MPI_COMM_WORLD);
      double a = now();
      MPI_Alltoall(sb, (int)sz, MPI_BYTE, rb, (int)sz, MPI_BYTE, MPI_COMM_WORLD);
      if (it >= 2) t += now() - a;
    }
    for (int from = 0; from < n; from++)
      for (long i = 0; i < sz; i++) wrong += rb[(size_t)from * sz + i] != pattern(from, me, i);
    double mean = t / iters * 1e6, slow;
    MPI_Reduce(&mean, &slow, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    if (!me) printf("%s\"%ld\":%.1f", first ? "" : ",", sz, slow);
    first = 0;
    free(sb);
    free(rb);
  }
  long all;
  MPI_Reduce(&wrong, &all, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (!me) printf("},\"wrong\":%ld}\n", all);
  fflush(stdout);
  for (int i = 0; hold && i < 6000 && access(hold, F_OK) != 0; i++) {
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  MPI_Finalize();
  return !me && all ? 1 : 0;
}
