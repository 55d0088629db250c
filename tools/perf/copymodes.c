/* SPDX-License-Identifier: MIT */
/*
 * copymodes.c - fmx_perf copylimit and cachepollution (copymodes.h): the copy
 * routines of src/platform/copy.h timed in this process, no message layer.
 *
 * copylimit: per usable routine and size, calibrate the copies per
 * repetition to ~50 ms (or --iters), then best of 3 repetitions on 1 thread,
 * then on 2 threads started together by a barrier, each pinned to its core
 * and copying its own src/dst pair. latency_us = wall time (first start to
 * last end) / copies per thread; bandwidth = threads x size / latency.
 *
 * cachepollution: the probe is a quarter of this core's L2 (FMX_INFO_TOPOLOGY), read
 * as one load per 64-byte line in a fixed random order (so the hardware
 * prefetchers cannot hide a miss). Each sample: read the probe twice (warm),
 * copy SIZE bytes with the routine ("none": no copy), time one probe pass.
 * The routines take turns sample by sample, so a noisy neighbour hits them
 * all alike; each reports the median pass, and ratio = median / none's.
 * After each copy the same thread also idles (polls the clock) exactly as
 * long as that copy took, then probes again: ratio_idle = probe after the
 * copy / probe after idling as long. On a VM whose neighbours or hypervisor
 * evict this core's caches while it runs, time alone costs the probe too;
 * ratio_idle is the copy's own share.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels.h"
#include "copymodes.h"
#include "fmx.h"
#include "util.h"

typedef void (*copy_fn)(void *dst, const void *src, size_t len);

/* The library's copy routines and topology (fmx_get_info), read once. */
static fmx_copy_routine_t g_rt[16];
static fmx_topology_t g_topo;

#define REPS 3           /* copylimit: best of */
#define TARGET_S 0.05    /* copylimit: one repetition's length */
#define SLACK 64         /* --verify: bytes after each destination that must stay 0 */
#define MAX_THREADS 2
#define LINE 64
#ifndef WARM_PASSES
#define WARM_PASSES 8
#endif

#ifdef FMX_VERSION_STRING
#define LIBRARY "fmx " FMX_VERSION_STRING
#else
#define LIBRARY "fmx"
#endif

static bool g_tty;
static volatile uint64_t g_sink;

/* A comment line: in the table on stdout; beside JSON on stderr (not --quiet). */
static void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void note(const char *fmt, ...)
{
  va_list ap;
  FILE *f = perf_opt.json ? stderr : stdout;
  if (perf_opt.json && perf_opt.quiet)
    return;
  va_start(ap, fmt);
  fputs("# ", f);
  vfprintf(f, fmt, ap);
  fputc('\n', f);
  va_end(ap);
  fflush(f);
}

static void progress(const char *mode, const char *what, uint64_t size, uint64_t iters,
                     bool done)
{
  char hs[32];
  if (perf_opt.quiet)
    return;
  if (g_tty && done)
    fprintf(stderr, "\r\033[K");
  else if (g_tty)
    fprintf(stderr, "\r\033[K[%s] %s %s%s%s", perf_opt.prog, mode, what, *what ? " " : "",
            human_size(size, hs, sizeof hs));
  else if (done)
    fprintf(stderr, "[%s] %s %s%s%s: %" PRIu64 " iterations done\n", perf_opt.prog, mode, what,
            *what ? " " : "", human_size(size, hs, sizeof hs), iters);
}

static void json_head(const char *kernel, int np, uint64_t size, uint64_t iters, double lat_us,
                      double mbps, const char *routine)
{
  printf("{\"kernel\":\"%s\",\"np\":%d,\"size\":%" PRIu64 ",\"iters\":%" PRIu64
         ",\"latency_us\":%.3f,\"bandwidth_MBps\":%.2f,\"engine\":\"copy\",\"library\":\"%s\""
         ",\"routine\":\"%s\"",
         kernel, np, size, iters, lat_us, mbps, LIBRARY, routine);
}

static uint8_t *alloc_touched(size_t bytes, int fill)
{
  size_t len = (bytes + 4095) / 4096 * 4096;
  uint8_t *p = aligned_alloc(4096, len);
  if (!p)
    perf_die("out of memory (%zu bytes)", len);
  memset(p, fill, len); /* page faults now, not in the timings */
  return p;
}

static int pin_self(int core)
{
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (e)
    perf_msg("cannot pin to core %d: %s", core, strerror(e));
  return e;
}

/* ---- copylimit ------------------------------------------------------------ */

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

static int copylimit(const fmx_copy_routine_t *rt, size_t nrt)
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

/* ---- cachepollution --------------------------------------------------------- */

static void warm(const uint8_t *p, size_t bytes)
{
  uint64_t sum = 0;
  for (int pass = 0; pass < WARM_PASSES; pass++)
    for (size_t o = 0; o < bytes; o += LINE)
      sum += *(const volatile uint8_t *)(p + o);
  g_sink = sum;
}

static double probe_pass(const uint8_t *p, const uint32_t *order, size_t nlines)
{
  uint64_t sum = 0;
  double t0 = now();
  for (size_t i = 0; i < nlines; i++)
    sum += *(const volatile uint8_t *)(p + (size_t)order[i] * LINE);
  double t1 = now();
  g_sink = sum;
  return t1 - t0;
}

/* Poll the clock for `s` seconds: no memory traffic of our own. */
static void idle_for(double s)
{
  double end = now() + s;
  while (now() < end)
    ;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The "offload" participant: the copy done by a helper thread on the second
 * core (what an fmx offload channel does), the probing thread waiting. */
struct helper {
  pthread_t th;
  int core;
  uint8_t *src, *dst;
  size_t size;
  uint64_t go, done; /* requests and completions, counted */
  int quit;
};

static void *helper_run(void *arg)
{
  struct helper *h = arg;
  pin_self(h->core);
  for (uint64_t seen = 0;;) {
    uint64_t go;
    while ((go = __atomic_load_n(&h->go, __ATOMIC_ACQUIRE)) == seen && !__atomic_load_n(&h->quit, __ATOMIC_ACQUIRE))
      sched_yield();
    if (go == seen)
      return NULL;
    memcpy(h->dst, h->src, h->size);
    seen = go;
    __atomic_store_n(&h->done, go, __ATOMIC_RELEASE);
  }
}

static void helper_copy(struct helper *h, uint8_t *dst, const uint8_t *src, size_t size)
{
  h->dst = dst, h->src = (uint8_t *)src, h->size = size;
  uint64_t go = __atomic_add_fetch(&h->go, 1, __ATOMIC_ACQ_REL);
  while (__atomic_load_n(&h->done, __ATOMIC_ACQUIRE) != go)
    ;
}

static int cachepollution(const fmx_copy_routine_t *rt, size_t nrt)
{
  const fmx_topology_t *topo = &g_topo;
  size_t probe = topo->l2.size ? (size_t)topo->l2.size / 4 / LINE * LINE : 64 << 10;
  probe = probe < 64 * LINE ? 64 * LINE : probe;
  size_t nlines = probe / LINE;
  uint64_t maxsize = 0;
  for (uint32_t k = 0; k < perf_opt.nsizes; k++)
    maxsize = perf_opt.sizes[k] > maxsize ? perf_opt.sizes[k] : maxsize;

  /* Participants: "none" (index 0), then each usable routine, then
   * "offload" (memcpy on the second core) when two cores are given. */
  const fmx_copy_routine_t *who[16] = {NULL};
  size_t nwho = 1;
  for (size_t i = 0; i < nrt && nwho < 15; i++)
    if (rt[i].usable)
      who[nwho++] = &rt[i];
  struct helper h = {.core = perf_opt.ncores >= 2 ? perf_opt.cores[1] : -1};
  size_t offl = 0;
  if (h.core >= 0 && h.core != perf_opt.cores[0] &&
      pthread_create(&h.th, NULL, helper_run, &h) == 0)
    offl = nwho++;

  if (pin_self(perf_opt.cores[0]))
    return 1;
  uint8_t *src = alloc_touched(maxsize, 0xa5), *dst = alloc_touched(maxsize, 0);
  uint8_t *pb = alloc_touched(probe, 1);
  uint32_t *order = malloc(nlines * sizeof *order);
  double *samples = NULL;
  if (!order)
    perf_die("out of memory");
  uint64_t x = 0x9e3779b97f4a7c15ull; /* fixed xorshift: the same order every run */
  for (size_t i = 0; i < nlines; i++)
    order[i] = (uint32_t)i;
  for (size_t i = nlines - 1; i > 0; i--) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    size_t j = (size_t)(x % (i + 1));
    uint32_t tmp = order[i];
    order[i] = order[j], order[j] = tmp;
  }

  char hs[32];
  note("%s cachepollution: probe %s (%s), %zu lines read once each in random order; core %d;"
       " %s", perf_opt.prog, human_size(probe, hs, sizeof hs),
       topo->l2.size ? "L2 / 4" : "L2 unknown: 64K", nlines, perf_opt.cores[0],
       topo->cpu_model);
  note("probe(us) = median pass after one copy of SIZE (none: no copy); ratio = probe / none's;"
       " issue 4's target: nontemporal within 1.05");
  note("idle(us) = median pass after idling as long as that copy took; vs_idle = probe / idle:"
       " the copy's own share where time alone evicts the probe (a VM's neighbours)");
  for (size_t i = 0; i < nrt; i++)
    if (!rt[i].usable)
      note("%s: not usable on this CPU, skipped", rt[i].name);
  if (!perf_opt.json)
    printf("%10s %-13s %-8s %8s %11s %9s %7s %11s %7s\n", "size", "routine", "stores", "iters",
           "probe(us)", "ns/line", "ratio", "idle(us)", "vs_idle");

  for (uint32_t k = 0; k < perf_opt.nsizes; k++) {
    size_t size = (size_t)perf_opt.sizes[k];
    uint64_t n = perf_opt.iters ? perf_opt.iters : (1ull << 30) / size;
    n = perf_opt.iters ? n : n < 15 ? 15 : n > 501 ? 501 : n;
    free(samples);
    samples = malloc(2 * n * nwho * sizeof *samples);
    if (!samples)
      perf_die("out of memory");
    progress("cachepollution", "", size, 0, false);
    for (size_t w = 1; w < nwho; w++) /* first touch of dst by each routine */
      if (who[w])
        who[w]->copy(dst, src, size);
    double *idle = samples + n * nwho; /* per participant, after idling */
    for (uint64_t s = 0; s < n; s++)
      for (size_t w = 0; w < nwho; w++) {
        warm(pb, probe);
        double t0 = now();
        if (who[w])
          who[w]->copy(dst, src, size);
        else if (w && w == offl)
          helper_copy(&h, dst, src, size);
        double took = now() - t0;
        samples[w * n + s] = probe_pass(pb, order, nlines);
        warm(pb, probe);
        idle_for(w ? took : 0);
        idle[w * n + s] = probe_pass(pb, order, nlines);
      }
    double base = median(samples, n) * 1e6;
    for (size_t w = 0; w < nwho; w++) {
      double us = w ? median(samples + w * n, n) * 1e6 : base;
      double ratio = base > 0 ? us / base : 0;
      double ius = median(idle + w * n, n) * 1e6;
      double ratio_idle = ius > 0 ? us / ius : 0;
      const char *name = who[w] ? who[w]->name : w && w == offl ? "offload" : "none";
      const char *stores = !who[w] ? (w && w == offl ? "core2" : "-") : who[w]->nontemporal ? "nt" : "regular";
      if (perf_opt.json) {
        json_head("cachepollution", 1, size, n, us, 0, name);
        printf(",\"stores\":\"%s\",\"baseline_us\":%.3f,\"ratio\":%.4f,\"ns_per_line\":%.3f"
               ",\"probe_bytes\":%zu,\"idle_us\":%.3f,\"ratio_idle\":%.4f}\n", stores, base, ratio,
               us * 1e3 / (double)nlines, probe, ius, ratio_idle);
      } else {
        printf("%10s %-13s %-8s %8" PRIu64 " %11.3f %9.3f %7.3f %11.3f %7.3f\n",
               human_size(size, hs, sizeof hs), name, stores, n, us,
               us * 1e3 / (double)nlines, ratio, ius, ratio_idle);
      }
    }
    fflush(stdout);
    progress("cachepollution", "", size, n, true);
  }
  if (offl) {
    __atomic_store_n(&h.quit, 1, __ATOMIC_RELEASE);
    pthread_join(h.th, NULL);
  }
  free(samples);
  free(order);
  free(pb);
  free(src);
  free(dst);
  return 0;
}

int copymodes_run(void)
{
  fmx_return_t rc = fmx_init();
  if (rc != FMX_SUCCESS && rc != FMX_ALREADY_INITIALIZED)
    perf_die("fmx_init failed: %s (%d)", fmx_strerror(rc), (int)rc);
  uint32_t n = 0;
  size_t nrt = 0;
  fmx_get_info(NULL, FMX_INFO_COPY_ROUTINE_COUNT, NULL, 0, &n, sizeof n);
  for (uint32_t i = 0; i < n && nrt < sizeof g_rt / sizeof g_rt[0]; i++)
    if (fmx_get_info(NULL, FMX_INFO_COPY_ROUTINE, &i, sizeof i, &g_rt[nrt], sizeof g_rt[nrt]) == FMX_SUCCESS) nrt++;
  if (fmx_get_info(NULL, FMX_INFO_TOPOLOGY, NULL, 0, &g_topo, sizeof g_topo) != FMX_SUCCESS)
    memset(&g_topo, 0, sizeof g_topo);
  g_tty = isatty(STDERR_FILENO);
  return perf_opt.kernel == PERF_COPYLIMIT ? copylimit(g_rt, nrt) : cachepollution(g_rt, nrt);
}
