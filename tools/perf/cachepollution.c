/* SPDX-License-Identifier: MIT */
/*
 * cachepollution.c - fmx_perf cachepollution (copymodes.h).
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
 * ratio_idle is the copy's own share. Participants: none, each usable
 * routine, "offload" (memcpy by a thread on the second of --cores) and
 * "copy_async" (fmx_copy_async waited for: an offload channel's copy).
 * fmx_perf copy-pollution is this mode under the ADCE paper's name.
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

#define LINE 64
#ifndef WARM_PASSES
#define WARM_PASSES 8
#endif

static volatile uint64_t g_sink;

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

int cachepollution(const fmx_copy_routine_t *rt, size_t nrt)
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
  size_t async = nwho++; /* fmx_copy_async, waited for: an offload channel's copy */

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
        else if (w == async)
          async_copy(dst, src, size);
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
      const char *name = who[w] ? who[w]->name : w && w == offl ? "offload" : w == async ? "copy_async" : "none";
      const char *stores = !who[w] ? (w && w == offl ? "core2" : w == async ? "channel" : "-")
                           : who[w]->nontemporal ? "nt" : "regular";
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
