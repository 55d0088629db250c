/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
/* Raw single-stream process_vm_readv bandwidth between two processes: the
 * kernel's single copy with nothing around it, the baseline fmx's cma engine
 * is judged against. Usage: cma_raw [size ...] (bytes). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <sched.h>
#include <signal.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
  size_t max = 64 << 20;
  char *src = malloc(max), *dst = malloc(max);
  memset(src, 7, max);
  memset(dst, 0, max);
  int p[2];
  if (pipe(p)) return 1;
  pid_t child = fork();
  if (child == 0) {
    cpu_set_t s;
    CPU_ZERO(&s);
    CPU_SET(1, &s);
    sched_setaffinity(0, sizeof s, &s);
    char c;
    close(p[1]);
    if (read(p[0], &c, 1) < 0) {}
    _exit(0);
  }
  cpu_set_t s;
  CPU_ZERO(&s);
  CPU_SET(0, &s);
  sched_setaffinity(0, sizeof s, &s);
  long def[] = {65536, 1 << 20, 4 << 20, 16 << 20, 64 << 20};
  int n = argc > 1 ? argc - 1 : 5;
  printf("%12s %8s %14s\n", "size", "iters", "bandwidth(MB/s)");
  for (int k = 0; k < n; k++) {
    size_t size = argc > 1 ? (size_t)atol(argv[k + 1]) : (size_t)def[k];
    long iters = (long)((1L << 30) / size);
    if (iters < 10) iters = 10;
    struct iovec l = {dst, size}, r = {src, size};
    process_vm_readv(child, &l, 1, &r, 1, 0);
    double t0 = now();
    for (long i = 0; i < iters; i++)
      if (process_vm_readv(child, &l, 1, &r, 1, 0) != (ssize_t)size) { perror("process_vm_readv"); return 1; }
    double t = (now() - t0) / iters;
    printf("%12zu %8ld %14.2f\n", size, iters, size / t / 1e6);
  }
  close(p[1]);
  waitpid(child, NULL, 0);
  return 0;
}
