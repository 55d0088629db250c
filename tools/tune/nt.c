/* SPDX-License-Identifier: MIT */
/* fmx_tune's measurement of FMX_COPY_NT_THRESHOLD (docs/tools.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "fmx.h"
#include "tune/tune.h"

/* A size as fmx prints one ("120M", "8192"): bytes, 0 if it does not parse. */
static uint64_t size_value(const char *v) {
  char *end;
  uint64_t n = strtoull(v, &end, 10);
  switch (*end) {
    case 'K': return n << 10;
    case 'M': return n << 20;
    case 'G': return n << 30;
    case '\0': return n;
    default: return 0;
  }
}

/*
 * FMX_COPY_NT_THRESHOLD, measured: the derived one (half this core's L3
 * share) trusts the L3 the CPU reports, and a VM reports its host's (480
 * MiB "shared by" the 2 CPUs it sees on the Intel Xeon VM of 2026-11-27,
 * so NT only from 120 MiB, while regular stores fell from 32 MiB: 64 MiB
 * copied at 7.1 GB/s regular, 11.7-13.2 NT). fmx_perf copylimit times the
 * regular routine and the NT one auto would take, on 1 thread and on 2
 * (two ranks copying at once), at the powers of two from 2 x L2 up to
 * twice the threshold in force or this core's L3 share as the CPU reports
 * it, whichever is larger (a buffer at most 1/64 of the memory).
 * Messages above the threshold go NT: it is the size just below the
 * smallest from which NT won at both thread counts at every larger size
 * measured; 0 (nothing written) if regular stores still won at the
 * largest.
 */
uint64_t measure_nt(const char *perf) {
  fmx_topology_t topo;
  if (fmx_get_info(NULL, FMX_INFO_TOPOLOGY, NULL, 0, &topo, sizeof topo) != FMX_SUCCESS) die("cannot read the topology");
  uint64_t l2 = topo.l2.size ? topo.l2.size : 1u << 20, cur = size_value(config_value("FMX_COPY_NT_THRESHOLD"));
  uint64_t mem = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE) / 64;
  /* Up to the L3 share as the CPU reports it: in a VM the threshold in
   * force is the table's default, not the topology's, and the knee lies
   * between the two. */
  uint64_t share = topo.l3.size / (uint64_t)(topo.l3.nshare > 0 ? topo.l3.nshare : 1);
  uint64_t from = 2 * l2, top = 2 * (cur ? cur : 64 * l2);
  if (share > top) top = share;
  if (opt.quick) top = 8 * l2;
  if (top > mem) top = mem;
  uint64_t sizes[MAX_SIZES];
  int n = 0;
  for (uint64_t s = from; s <= top && n < MAX_SIZES; s *= 2) sizes[n++] = s;
  if (n < 2) return 0;
  char cmd[4096];
  int len = snprintf(cmd, sizeof cmd, "'%s' copylimit --json --quiet --cores %d,%d%s --sizes ", perf, opt.cores[0],
                     opt.cores[1], opt.quick ? " --iters 2" : "");
  for (int i = 0; i < n; i++) len += snprintf(cmd + len, sizeof cmd - (size_t)len, "%s%" PRIu64, i ? "," : "", sizes[i]);
  /* MB/s: [size][0 regular, 1 avx2_nt, 2 avx512_nt][threads - 1] */
  double bw[MAX_SIZES][3][2] = {{{0}}};
  for (int rep = 0; rep < opt.reps; rep++) {
    fprintf(stderr, "[fmx_tune] rep %d/%d: regular against non-temporal stores, %d sizes\n", rep + 1, opt.reps, n);
    FILE *f = popen(cmd, "r");
    if (!f) die("cannot run %s: %s", perf, strerror(errno));
    char line[1024];
    while (fgets(line, sizeof line, f)) {
      const char *pr = strstr(line, "\"routine\":\"");
      double sz, b, th;
      if (!pr || !json_num(line, "size", &sz) || !json_num(line, "bandwidth_MBps", &b) ||
          !json_num(line, "threads", &th) || (th != 1 && th != 2))
        continue;
      pr += 11;
      int r = strncmp(pr, "regular\"", 8) == 0 ? 0 : strncmp(pr, "avx2_nt\"", 8) == 0 ? 1
              : strncmp(pr, "avx512_nt\"", 10) == 0 ? 2 : -1;
      for (int i = 0; r >= 0 && i < n; i++)
        if (sizes[i] == (uint64_t)sz && b > bw[i][r][(int)th - 1]) bw[i][r][(int)th - 1] = b;
    }
    if (pclose(f) != 0) die("'%s' failed: see its message above", cmd);
  }
  /* The NT routine auto takes (copy.h: avx2_nt, else avx512_nt). */
  int nt = bw[0][1][0] > 0 ? 1 : bw[0][2][0] > 0 ? 2 : 0;
  if (!nt || bw[0][0][0] <= 0) {
    printf("# FMX_COPY_NT_THRESHOLD: no non-temporal routine measured here: kept\n");
    return 0;
  }
  printf("# regular against %s stores, best of %d, MB/s (1 thread | 2 threads)\n%10s %10s %10s | %10s %10s\n",
         nt == 1 ? "avx2_nt" : "avx512_nt", opt.reps, "size", "regular", "nt", "regular", "nt");
  uint64_t thr = 0;
  int won = 1;
  for (int i = n - 1; i >= 0; i--) {
    won = won && bw[i][nt][0] >= bw[i][0][0] && bw[i][nt][1] >= bw[i][0][1];
    if (won) thr = i ? sizes[i - 1] : sizes[0] / 2;
  }
  for (int i = 0; i < n; i++)
    printf("%10" PRIu64 " %10.0f %10.0f | %10.0f %10.0f\n", sizes[i], bw[i][0][0], bw[i][nt][0], bw[i][0][1],
           bw[i][nt][1]);
  if (!thr) printf("# FMX_COPY_NT_THRESHOLD: regular stores won at %" PRIu64 ": kept\n", sizes[n - 1]);
  else printf("# FMX_COPY_NT_THRESHOLD=%" PRIu64 "\n", thr);
  return thr;
}
