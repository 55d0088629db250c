/* SPDX-License-Identifier: MIT */
/*
 * copymodes.c - fmx_perf copylimit and cachepollution (copymodes.h): the
 * library's copy routines (FMX_INFO_COPY_ROUTINE) timed in this process, no
 * message layer. The kernels are copylimit.c and cachepollution.c; here,
 * what they share: the routines and topology read once, the notes, the
 * progress line, the JSON head, buffers, pinning.
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "copymodes_int.h"
#include "util.h"

static fmx_copy_routine_t g_rt[16];
fmx_topology_t g_topo;

#ifdef FMX_VERSION_STRING
#define LIBRARY "fmx " FMX_VERSION_STRING
#else
#define LIBRARY "fmx"
#endif

static bool g_tty;

/* A comment line: in the table on stdout; beside JSON on stderr (not --quiet). */
void note(const char *fmt, ...)
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

void progress(const char *mode, const char *what, uint64_t size, uint64_t iters,
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

void json_head(const char *kernel, int np, uint64_t size, uint64_t iters, double lat_us,
                      double mbps, const char *routine)
{
  printf("{\"kernel\":\"%s\",\"np\":%d,\"size\":%" PRIu64 ",\"iters\":%" PRIu64
         ",\"latency_us\":%.3f,\"bandwidth_MBps\":%.2f,\"engine\":\"copy\",\"library\":\"%s\""
         ",\"routine\":\"%s\"",
         kernel, np, size, iters, lat_us, mbps, LIBRARY, routine);
}

uint8_t *alloc_touched(size_t bytes, int fill)
{
  size_t len = (bytes + 4095) / 4096 * 4096;
  uint8_t *p = aligned_alloc(4096, len);
  if (!p)
    perf_die("out of memory (%zu bytes)", len);
  memset(p, fill, len); /* page faults now, not in the timings */
  return p;
}

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double median(double *v, size_t n)
{
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void async_copy(uint8_t *dst, const uint8_t *src, size_t size)
{
  fmx_copy_t c;
  uint32_t done = 0;
  if (fmx_copy_async(dst, src, size, &c) != FMX_SUCCESS ||
      fmx_copy_wait(&c, FMX_TIMEOUT_INFINITE, &done) != FMX_SUCCESS || !done)
    perf_die("fmx_copy_async of %zu bytes failed", size);
}

int pin_self(int core)
{
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  int e = pthread_setaffinity_np(pthread_self(), sizeof set, &set);
  if (e)
    perf_msg("cannot pin to core %d: %s", core, strerror(e));
  return e;
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
  if (perf_opt.kernel == PERF_COPY_OVERLAP) return copyoverlap();
  /* copy-pollution is cachepollution, whose participants include
   * fmx_copy_async (a channel's copy, waited for). */
  return perf_opt.kernel == PERF_COPYLIMIT ? copylimit(g_rt, nrt) : cachepollution(g_rt, nrt);
}
