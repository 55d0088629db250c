/* SPDX-License-Identifier: MIT */
/*
 * copyoverlap.c - fmx_perf copy-overlap (copymodes.h): the I/OAT ADCE
 * paper's overlap benchmark for fmx_copy_async. Per size and rep, in this
 * order (paired per rep, the machine being noisy):
 *   Tcopy     fmx_copy_async + fmx_copy_wait alone;
 *   Tcompute  a computation calibrated to last as long as the copy (a
 *             dependent floating-point chain: no memory traffic of its own);
 *   Ttotal    fmx_copy_async, the computation, fmx_copy_wait;
 * and the same with memcpy in the caller (its Ttotal is copy then compute:
 * nothing can overlap). overlap = (Tcopy + Tcompute - Ttotal) /
 * min(Tcopy, Tcompute): 1 when the copy hid entirely behind the
 * computation, 0 when they ran one after the other. Rows give medians of
 * the per-rep values. The caller is pinned to the first of --cores; the
 * offload channels then run on the other CPUs (FMX_OFFLOAD_CPUS).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copymodes_int.h"
#include "util.h"

static volatile double g_out;

static double compute(uint64_t n) {
  double x = 1.0;
  for (uint64_t i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
  g_out = x;
  return x;
}

/* A hardware copy engine (Intel DSA through idxd's work queues), if any. */
static const char *hw_engine(void) {
  if (access("/dev/dsa", F_OK) == 0) return "Intel DSA work queues under /dev/dsa (not used by fmx yet)";
  if (access("/sys/bus/dsa/devices", F_OK) == 0) return "idxd bus present but no /dev/dsa work queue";
  return "none (no idxd driver, no /dev/dsa work queue)";
}

int copyoverlap(void) {
  if (pin_self(perf_opt.cores[0])) return 1;
  uint64_t maxsize = 0;
  for (uint32_t k = 0; k < perf_opt.nsizes; k++)
    maxsize = perf_opt.sizes[k] > maxsize ? perf_opt.sizes[k] : maxsize;
  uint8_t *src = alloc_touched(maxsize, 0xa5), *dst = alloc_touched(maxsize, 0);
  /* Calibrate the computation: ns per step. */
  double t0 = now();
  compute(20000000);
  double ns_step = (now() - t0) * 1e9 / 20000000;
  char thr[64] = "?", hs[32];
  fmx_config_get("FMX_COPY_ASYNC_THRESHOLD", thr, sizeof thr);
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  note("%s copy-overlap: caller on core %d, %ld CPUs online; FMX_COPY_ASYNC_THRESHOLD %s (shorter copies are done "
       "at once: no overlap); hardware copy engine: %s",
       perf_opt.prog, perf_opt.cores[0], cpus, thr, hw_engine());
  note("overlap = (Tcopy + Tcompute - Ttotal) / min(Tcopy, Tcompute), median of per-rep values; the computation "
       "is calibrated to last as long as the copy");
  if (!perf_opt.json)
    printf("%10s %-15s %6s %11s %12s %11s %8s\n", "size", "copy", "reps", "Tcopy(us)", "Tcompute(us)", "Ttotal(us)",
           "overlap");
  double *v = NULL;
  for (uint32_t k = 0; k < perf_opt.nsizes; k++) {
    size_t size = (size_t)perf_opt.sizes[k];
    uint64_t reps = perf_opt.iters ? perf_opt.iters : 21;
    free(v);
    v = malloc(8 * reps * sizeof *v);
    if (!v) perf_die("out of memory");
    progress("copy-overlap", "", size, 0, false);
    async_copy(dst, src, size); /* first touch, channels up */
    memcpy(dst, src, size);
    t0 = now();
    async_copy(dst, src, size);
    uint64_t steps = (uint64_t)((now() - t0) * 1e9 / ns_step);
    double *ac = v, *mc = v + reps, *cp = v + 2 * reps, *at = v + 3 * reps, *mt = v + 4 * reps, *ao = v + 5 * reps,
           *mo = v + 6 * reps;
    for (uint64_t r = 0; r < reps; r++) {
      double a = now();
      async_copy(dst, src, size);
      double b = now();
      memcpy(dst, src, size);
      double c = now();
      compute(steps);
      double d = now();
      fmx_copy_t h;
      uint32_t done = 0;
      if (fmx_copy_async(dst, src, size, &h) != FMX_SUCCESS) perf_die("fmx_copy_async failed");
      compute(steps);
      if (fmx_copy_wait(&h, FMX_TIMEOUT_INFINITE, &done) != FMX_SUCCESS || !done) perf_die("fmx_copy_wait failed");
      double e = now();
      memcpy(dst, src, size);
      compute(steps);
      double f = now();
      ac[r] = b - a, mc[r] = c - b, cp[r] = d - c, at[r] = e - d, mt[r] = f - e;
      double m1 = ac[r] < cp[r] ? ac[r] : cp[r], m2 = mc[r] < cp[r] ? mc[r] : cp[r];
      ao[r] = m1 > 0 ? (ac[r] + cp[r] - at[r]) / m1 : 0;
      mo[r] = m2 > 0 ? (mc[r] + cp[r] - mt[r]) / m2 : 0;
    }
    double tcomp = median(cp, reps) * 1e6;
    struct { const char *name; double *copy, *total, *ov; } rows[] = {{"memcpy", mc, mt, mo},
                                                                     {"fmx_copy_async", ac, at, ao}};
    for (int i = 0; i < 2; i++) {
      double tc = median(rows[i].copy, reps) * 1e6, tt = median(rows[i].total, reps) * 1e6,
             ov = median(rows[i].ov, reps);
      if (perf_opt.json) {
        json_head("copy-overlap", 1, size, reps, tc, tc > 0 ? size / tc : 0, rows[i].name);
        printf(",\"tcopy_us\":%.3f,\"tcompute_us\":%.3f,\"ttotal_us\":%.3f,\"overlap\":%.4f,\"cpus\":%ld}\n", tc,
               tcomp, tt, ov, cpus);
      } else {
        printf("%10s %-15s %6" PRIu64 " %11.1f %12.1f %11.1f %8.3f\n", human_size(size, hs, sizeof hs), rows[i].name,
               reps, tc, tcomp, tt, ov);
      }
    }
    fflush(stdout);
    progress("copy-overlap", "", size, reps, true);
  }
  free(v);
  free(src);
  free(dst);
  return 0;
}
