/* SPDX-License-Identifier: MIT */
/*
 * copylimit.c - fmx_perf copylimit (copymodes.h).
 *
 * copylimit: per usable routine and size, calibrate the copies per
 * repetition to ~50 ms (or --iters), then best of 3 repetitions on 1 thread,
 * then on 2 threads started together by a barrier, each pinned to its core
 * and copying its own src/dst pair. latency_us = wall time (first start to
 * last end) / copies per thread; bandwidth = threads x size / latency.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copymodes_int.h"
#include "util.h"

#define REPS 3           /* best of */
#define TARGET_S 0.05    /* one repetition's length */
#define SLACK 64         /* --verify: bytes after each destination that must stay 0 */
#define MAX_THREADS 2

struct worker {
  copy_fn fn;
  uint8_t *src, *dst;
  size_t size;
  uint64_t iters;
  int core;
  pthread_barrier_t *bar;
  double t0, t1;
  int err;
};

static void *worker_run(void *arg)
{
  struct worker *w = arg;
  w->err = w->core >= 0 ? pin_self(w->core) : 0;
  w->fn(w->dst, w->src, w->size); /* warm caches and TLB */
  pthread_barrier_wait(w->bar);
  w->t0 = now();
  for (uint64_t i = 0; i < w->iters; i++)
    w->fn(w->dst, w->src, w->size);
  w->t1 = now();
  return NULL;
}

/* nthreads copy `iters` times each, started together: the wall time from the
 * first start to the last end, or exit 1. */
static double timed_run(copy_fn fn, uint8_t **src, uint8_t **dst, int nthreads, size_t size,
                        uint64_t iters)
{
  pthread_t tid[MAX_THREADS];
  struct worker w[MAX_THREADS];
  pthread_barrier_t bar;
  int e = pthread_barrier_init(&bar, NULL, (unsigned)nthreads);
  if (e)
    perf_die("pthread_barrier_init: %s", strerror(e));
  for (int t = 0; t < nthreads; t++) {
    w[t] = (struct worker){.fn = fn, .src = src[t], .dst = dst[t], .size = size,
                           .iters = iters, .core = perf_opt.cores[t % perf_opt.ncores],
                           .bar = &bar};
    if ((e = pthread_create(&tid[t], NULL, worker_run, &w[t])) != 0)
      perf_die("pthread_create: %s", strerror(e)); /* t > 0 waits at the barrier: exit */
  }
  double t0 = 0, t1 = 0;
  int err = 0;
  for (int t = 0; t < nthreads; t++) {
    pthread_join(tid[t], NULL);
    t0 = t == 0 || w[t].t0 < t0 ? w[t].t0 : t0;
    t1 = w[t].t1 > t1 ? w[t].t1 : t1;
    err |= w[t].err;
  }
  pthread_barrier_destroy(&bar);
  if (err)
    exit(1);
  return t1 - t0;
}

/* Copies per repetition that last about TARGET_S on one thread. */
static uint64_t calibrate(copy_fn fn, uint8_t **src, uint8_t **dst, size_t size)
{
  uint64_t n = 1;
  for (;;) {
    double t = timed_run(fn, src, dst, 1, size, n);
    if (t >= TARGET_S / 5 || n >= (1ull << 32)) {
      double it = (double)n * TARGET_S / (t > 0 ? t : 1e-9);
      return it < 1 ? 1 : it > 1e9 ? 1000000000ull : (uint64_t)it;
    }
    double grow = t > 0 ? TARGET_S / 5 / t * 1.2 : 100;
    n = (uint64_t)((double)n * (grow < 2 ? 2 : grow > 100 ? 100 : grow));
  }
}

static int verify_dst(const char *routine, int nthreads, int t, const uint8_t *dst, size_t size,
                      uint64_t seed)
{
  size_t first = 0, bad;
  uint8_t got = 0, want = 0;
  char hs[32];
  bad = pat_errors(dst, size, seed, &first, &got, &want);
  for (size_t i = 0; i < SLACK && !bad; i++)
    if (dst[size + i]) {
      bad = 1, first = size + i, got = dst[size + i], want = 0;
    }
  if (!bad)
    return 0;
  perf_msg("--verify: %s, %d thread(s), size %s, thread %d: %zu bad bytes, first at offset "
           "%zu: got 0x%02x, want 0x%02x", routine, nthreads, human_size(size, hs, sizeof hs),
           t, bad, first, got, want);
  return 1;
}

int copylimit(const fmx_copy_routine_t *rt, size_t nrt)
{
  uint64_t maxsize = 0;
  for (uint32_t k = 0; k < perf_opt.nsizes; k++)
    maxsize = perf_opt.sizes[k] > maxsize ? perf_opt.sizes[k] : maxsize;
  int maxthreads = perf_opt.ncores >= 2 ? 2 : 1;
  uint8_t *src[MAX_THREADS], *dst[MAX_THREADS];
  for (int t = 0; t < maxthreads; t++) {
    src[t] = alloc_touched(maxsize + SLACK, 0xa5);
    dst[t] = alloc_touched(maxsize + SLACK, 0);
  }
  char cores[64] = "";
  for (int t = 0; t < maxthreads; t++)
    snprintf(cores + strlen(cores), sizeof cores - strlen(cores), "%s%d", t ? "," : "",
             perf_opt.cores[t]);
  note("%s copylimit: copy bandwidth per routine; threads pinned to cores %s; %s; best of %d"
       " repetitions%s", perf_opt.prog, cores, g_topo.cpu_model, REPS,
       perf_opt.verify ? "; verifying (outside the timings)" : "");
  note("latency = time per copy (each thread's, all at once); bandwidth = threads x size /"
       " latency");
  if (maxthreads < 2)
    note("one core allowed (or given): no 2-thread rows");
  for (size_t i = 0; i < nrt; i++)
    if (!rt[i].usable)
      note("%s: not usable on this CPU, skipped", rt[i].name);
  if (!perf_opt.json)
    printf("%-13s %7s %10s %10s %13s %15s\n", "routine", "threads", "size", "iters",
           "latency(us)", "bandwidth(MB/s)");

  double limit = 0;
  const char *limit_rt = NULL;
  int limit_threads = 0;
  for (size_t i = 0; i < nrt; i++) {
    if (!rt[i].usable)
      continue;
    for (uint32_t k = 0; k < perf_opt.nsizes; k++) {
      size_t size = (size_t)perf_opt.sizes[k];
      progress("copylimit", rt[i].name, size, 0, false);
      uint64_t iters = perf_opt.iters ? perf_opt.iters : calibrate(rt[i].copy, src, dst, size);
      for (int nt = 1; nt <= maxthreads; nt++) {
        uint64_t seed[MAX_THREADS] = {0};
        for (int t = 0; perf_opt.verify && t < nt; t++) {
          seed[t] = pat_seed(size, i, t);
          pat_fill(src[t], size, seed[t]);
          memset(dst[t], 0, size + SLACK);
        }
        double best = -1;
        for (int rep = 0; rep < REPS; rep++) {
          double s = timed_run(rt[i].copy, src, dst, nt, size, iters);
          best = best < 0 || s < best ? s : best;
        }
        for (int t = 0; perf_opt.verify && t < nt; t++)
          if (verify_dst(rt[i].name, nt, t, dst[t], size, seed[t]))
            return 1;
        double lat_us = best * 1e6 / (double)iters;
        double mbps = lat_us > 0 ? (double)nt * (double)size / lat_us : 0;
        if (size == maxsize && nt == maxthreads && mbps > limit)
          limit = mbps, limit_rt = rt[i].name, limit_threads = nt;
        char hs[32];
        if (perf_opt.json) {
          json_head("copylimit", nt, size, iters, lat_us, mbps, rt[i].name);
          printf(",\"threads\":%d,\"nontemporal\":%s}\n", nt, rt[i].nontemporal ? "true" : "false");
        } else {
          printf("%-13s %7d %10s %10" PRIu64 " %13.2f %15.2f\n", rt[i].name, nt,
                 human_size(size, hs, sizeof hs), iters, lat_us, mbps);
        }
        fflush(stdout);
      }
      progress("copylimit", rt[i].name, size, iters, true);
    }
  }
  char hs[32];
  note("copy limit of this machine: %.2f MB/s (%d thread%s, %s, %s)", limit, limit_threads,
       limit_threads > 1 ? "s" : "", limit_rt ? limit_rt : "-",
       human_size(maxsize, hs, sizeof hs));
  for (int t = 0; t < maxthreads; t++) {
    free(src[t]);
    free(dst[t]);
  }
  return 0;
}
