/* SPDX-License-Identifier: MIT */
/*
 * run.c - what fmx_perf and fmx_perf_mpi do around the kernels (kernels.c):
 * the configuration rank 0 hands out, the buffers, the watchdog and the
 * progress line, and the output (a table or JSON lines).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run.h"
#include "util.h"

#define PERF_MAGIC 0x66706367u

static const char *const kernel_names[] = {
    [PERF_PINGPONG] = "pingpong", [PERF_BW] = "bw", [PERF_ALLTOALL] = "alltoall",
    [PERF_OVERLAP] = "overlap", [PERF_MSGRATE] = "msgrate", [PERF_COPYLIMIT] = "copylimit",
    [PERF_CACHEPOLLUTION] = "cachepollution", [PERF_COPY_OVERLAP] = "copy-overlap",
    [PERF_COPY_POLLUTION] = "copy-pollution"};

const char *perf_kernel_name(enum perf_kernel k)
{
  return k >= PERF_PINGPONG && k <= PERF_COPY_POLLUTION ? kernel_names[k] : "?";
}

static bool g_tty;
static double g_last_progress, g_last_arm;

/* ---- watchdog and progress ---------------------------------------------- */

static void watchdog_fired(int sig)
{
  (void)sig;
  static const char m[] = ": no progress within the timeout (peer dead or stuck?)\n";
  const char *p = perf_opt.prog ? perf_opt.prog : "fmx_perf";
  (void)!write(STDERR_FILENO, p, strlen(p));
  (void)!write(STDERR_FILENO, m, sizeof m - 1);
  _exit(1);
}

void perf_watchdog(void)
{
  static bool installed;
  if (!installed) {
    signal(SIGALRM, watchdog_fired);
    installed = true;
  }
  alarm((perf_opt.timeout_ms + 999) / 1000);
  g_last_arm = now();
}

/* Called by every rank once per iteration or so: re-arms the watchdog about
 * once a second, and rank 0 draws the progress line. */
void perf_progress(uint64_t size, uint64_t done, uint64_t total)
{
  double t = now();
  if (t - g_last_arm > 1.0)
    perf_watchdog();
  if (perf_rank != 0 || perf_opt.quiet || !g_tty)
    return;
  if (done < total && t - g_last_progress < 0.1)
    return;
  g_last_progress = t;
  char hs[32];
  fprintf(stderr, "\r\033[K[%s] %s %s %" PRIu64 "/%" PRIu64, perf_opt.prog,
          kernel_names[perf_opt.kernel], human_size(size, hs, sizeof hs), done, total);
}

static void progress_done(uint64_t size, uint64_t iters)
{
  char hs[32];
  if (perf_opt.quiet)
    return;
  if (g_tty)
    fprintf(stderr, "\r\033[K");
  else
    fprintf(stderr, "[%s] %s %s: %" PRIu64 " iterations done\n", perf_opt.prog,
            kernel_names[perf_opt.kernel], human_size(size, hs, sizeof hs), iters);
}

/* ---- helpers ------------------------------------------------------------ */

/* Iterations that make one size last ~0.1-0.3 s on a current machine. */
static uint64_t default_iters(uint64_t size)
{
  uint64_t it = (1ull << 29) / (size ? size : 1);
  return it < 20 ? 20 : it > 10000 ? 10000 : it;
}

static struct perf_comm *g_comm; /* whose alloc/release the buffers use */

/* Where this rank's message buffers start in their first page
 * (--buf-offset; the library's allocators and posix_memalign give
 * page-aligned ones). */
static size_t buf_offset(void)
{
  return perf_opt.buf_offset[g_comm && g_comm->rank != 0];
}

static void *alloc_buf(size_t len)
{
  void *p = NULL;
  size_t off = buf_offset(), n = (len ? len : 64) + off;
  if (g_comm && g_comm->alloc)
    p = g_comm->alloc(n);
  else if (posix_memalign(&p, 4096, n) != 0)
    p = NULL;
  if (!p)
    perf_die("cannot allocate %zu bytes", n);
  memset(p, 0, n); /* fault the pages in before timing */
  return (char *)p + off;
}

/* ---- configuration, buffers, output --------------------------------------- */

static void build_config(struct perf_config *cfg, int np)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->magic = PERF_MAGIC;
  cfg->kernel = (uint32_t)perf_opt.kernel;
  cfg->nsizes = perf_opt.nsizes;
  bool stream = perf_opt.kernel == PERF_BW || perf_opt.kernel == PERF_MSGRATE;
  cfg->window = stream ? perf_opt.window : 1;
  cfg->verify = perf_opt.verify;
  cfg->compute_us = perf_opt.compute_us;
  cfg->np = (uint32_t)np;
  for (uint32_t k = 0; k < perf_opt.nsizes; k++) {
    uint64_t size = perf_opt.sizes[k];
    uint64_t it = perf_opt.iters ? perf_opt.iters : default_iters(size);
    /* alltoall moves np-1 messages per rank per iteration; overlap runs
     * four phases, two of them with computation: keep their time in line. */
    if (!perf_opt.iters && cfg->kernel == PERF_ALLTOALL && np > 2)
      it = it / (uint64_t)(np - 1) < 10 ? 10 : it / (uint64_t)(np - 1);
    if (!perf_opt.iters && cfg->kernel == PERF_OVERLAP)
      it = it / 4 < 10 ? 10 : it / 4;
    /* a message rate needs many messages: small ones take ~50 ns each */
    if (!perf_opt.iters && cfg->kernel == PERF_MSGRATE)
      it *= 20;
    uint64_t warm = it / 10 < 2 ? 2 : it / 10 > 100 ? 100 : it / 10;
    if (stream) { /* whole windows */
      it = (it + cfg->window - 1) / cfg->window * cfg->window;
      warm = (warm + cfg->window - 1) / cfg->window * cfg->window;
    }
    cfg->sizes[k] = size;
    cfg->iters[k] = it;
    cfg->warmup[k] = warm;
  }
}

static void share_config(struct perf_comm *c, struct perf_config *cfg)
{
  if (c->rank == 0) {
    build_config(cfg, c->size);
    for (int p = 1; p < c->size; p++)
      perf_send_wait(c, cfg, sizeof *cfg, p, PERF_TAG_CONFIG, "send (configuration)");
    return;
  }
  perf_recv_wait(c, cfg, sizeof *cfg, 0, PERF_TAG_CONFIG, "receive (configuration)");
  if (cfg->magic != PERF_MAGIC || cfg->nsizes > PERF_MAX_SIZES || !cfg->window ||
      cfg->window > PERF_MAX_WINDOW || cfg->np != (uint32_t)c->size || !cfg->kernel ||
      cfg->kernel > PERF_MSGRATE)
    perf_die("bad configuration from rank 0 (another %s version?)", perf_opt.prog);
}

static void alloc_bufs(struct perf_comm *c, const struct perf_config *cfg, struct bufs *b)
{
  uint64_t maxsize = 0;
  for (uint32_t k = 0; k < cfg->nsizes; k++)
    maxsize = cfg->sizes[k] > maxsize ? cfg->sizes[k] : maxsize;
  memset(b, 0, sizeof *b);
  b->reqs = calloc(cfg->window + 2 * (size_t)c->size, sizeof *b->reqs);
  if (!b->reqs)
    perf_die("out of memory");
  if (cfg->kernel == PERF_ALLTOALL) {
    if (maxsize > SIZE_MAX / (size_t)c->size)
      perf_die("alltoall: %" PRIu64 " bytes x %d ranks does not fit in memory", maxsize,
               c->size);
    b->a2a_s = alloc_buf((size_t)maxsize * (size_t)c->size);
    b->a2a_r = alloc_buf((size_t)maxsize * (size_t)c->size);
    return;
  }
  /* Without --verify a window shares one buffer each way, as OSU does; with
   * it the streaming side needs one buffer per message in flight. */
  b->sslots = cfg->verify && c->rank == 0 ? cfg->window : 1;
  b->rslots = cfg->verify && c->rank == 1 ? cfg->window : 1;
  b->sbuf = calloc(cfg->window, sizeof *b->sbuf);
  b->rbuf = calloc(cfg->window, sizeof *b->rbuf);
  if (!b->sbuf || !b->rbuf)
    perf_die("out of memory");
  for (uint32_t j = 0; j < cfg->window; j++) {
    b->sbuf[j] = j < b->sslots ? alloc_buf(maxsize) : b->sbuf[0];
    b->rbuf[j] = j < b->rslots ? alloc_buf(maxsize) : b->rbuf[0];
  }
}

static void free_buf(void *buf)
{
  if (!buf)
    return;
  void *p = (char *)buf - buf_offset();
  if (g_comm && g_comm->release)
    g_comm->release(p);
  else
    free(p);
}

static void free_bufs(struct bufs *b)
{
  for (uint32_t j = 0; j < b->sslots; j++)
    free_buf(b->sbuf[j]);
  for (uint32_t j = 0; j < b->rslots; j++)
    free_buf(b->rbuf[j]);
  free(b->sbuf);
  free(b->rbuf);
  free_buf(b->a2a_s);
  free_buf(b->a2a_r);
  free(b->reqs);
}

static void json_str(const char *key, const char *s)
{
  printf(",\"%s\":\"", key);
  for (const char *p = s; *p; p++) {
    if (*p == '"' || *p == '\\')
      putchar('\\');
    putchar((unsigned char)*p < 0x20 ? '?' : *p);
  }
  putchar('"');
}

static void print_header(struct perf_comm *c, const struct perf_config *cfg)
{
  if (perf_opt.json)
    return;
  printf("# %s %s: %d ranks; %s%s\n", perf_opt.prog, kernel_names[cfg->kernel], c->size,
         c->desc, cfg->verify ? "; verifying (timings include checks)" : "");
  if (cfg->kernel == PERF_BW || cfg->kernel == PERF_MSGRATE)
    printf("# window %u; latency = time per message\n", cfg->window);
  if (cfg->kernel == PERF_ALLTOALL)
    printf("# latency = one exchange (slowest rank's mean); bandwidth = bytes sent per rank\n");
  if (cfg->kernel == PERF_OVERLAP)
    printf("# latency = Tcopy (receiving side); overlap = (Tcopy + Tcompute - Ttotal) / Tcopy\n");
  printf("%10s %10s %13s %15s  %-8s", "size", "iters", "latency(us)", "bandwidth(MB/s)",
         "engine");
  if (cfg->kernel == PERF_ALLTOALL)
    printf(" %12s %12s", "min(us)", "max(us)");
  if (cfg->kernel == PERF_OVERLAP)
    printf(" %12s %12s %8s %8s", "Tcompute(us)", "Ttotal(us)", "overlap", "send-side");
  if (cfg->kernel == PERF_MSGRATE)
    printf(" %14s", "rate(msg/s)");
  printf("\n");
  fflush(stdout);
}

static void print_row(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                      const struct perf_result *r, const char *engine)
{
  uint64_t size = cfg->sizes[k], iters = cfg->iters[k];
  double moved = cfg->kernel == PERF_ALLTOALL ? (double)size * (c->size - 1) : (double)size;
  double bw = r->lat_us > 0 ? moved / r->lat_us : 0;
  double rate = r->lat_us > 0 ? 1e6 / r->lat_us : 0; /* msgrate: messages per second */
  char hs[32];
  if (perf_opt.json) {
    printf("{\"kernel\":\"%s\",\"np\":%d,\"size\":%" PRIu64 ",\"iters\":%" PRIu64
           ",\"latency_us\":%.3f,\"bandwidth_MBps\":%.2f",
           kernel_names[cfg->kernel], c->size, size, iters, r->lat_us, bw);
    json_str("engine", engine);
    json_str("library", c->library);
    if (cfg->kernel == PERF_ALLTOALL)
      printf(",\"min_us\":%.3f,\"max_us\":%.3f", r->min_us, r->max_us);
    if (cfg->kernel == PERF_MSGRATE)
      printf(",\"msgrate\":%.0f", rate);
    if (cfg->kernel == PERF_OVERLAP)
      printf(",\"t_compute_us\":%.3f,\"t_total_us\":%.3f,\"overlap\":%.4f,"
             "\"t_copy_send_us\":%.3f,\"t_total_send_us\":%.3f,\"overlap_send\":%.4f",
             r->tc_us, r->tt_us, r->overlap, r->copy_s_us, r->tt_s_us, r->overlap_s);
    printf("}\n");
  } else {
    printf("%10s %10" PRIu64 " %13.2f %15.2f  %-8s", human_size(size, hs, sizeof hs), iters,
           r->lat_us, bw, engine);
    if (cfg->kernel == PERF_ALLTOALL)
      printf(" %12.2f %12.2f", r->min_us, r->max_us);
    if (cfg->kernel == PERF_OVERLAP)
      printf(" %12.2f %12.2f %8.3f %8.3f", r->tc_us, r->tt_us, r->overlap, r->overlap_s);
    if (cfg->kernel == PERF_MSGRATE)
      printf(" %14.0f", rate);
    printf("\n");
  }
  fflush(stdout);
}

int perf_run(struct perf_comm *c)
{
  struct perf_config cfg;
  struct bufs b;
  char engine[64];
  static void (*const kernels[])(struct perf_comm *, const struct perf_config *, uint32_t,
                                 struct bufs *, struct perf_result *) = {
      [PERF_PINGPONG] = perf_pingpong_size, [PERF_BW] = perf_bw_size, [PERF_ALLTOALL] = perf_alltoall_size,
      [PERF_OVERLAP] = perf_overlap_size, [PERF_MSGRATE] = perf_bw_size};

  g_tty = isatty(STDERR_FILENO);
  perf_watchdog();
  if (c->size < 2)
    perf_die("needs at least 2 ranks (got %d)", c->size);
  share_config(c, &cfg);
  g_comm = c;
  alloc_bufs(c, &cfg, &b);
  if (c->rank == 0)
    print_header(c, &cfg);

  for (uint32_t k = 0; k < cfg.nsizes; k++) {
    struct perf_result res = {0};
    perf_watchdog();
    perf_barrier(c);
    kernels[cfg.kernel](c, &cfg, k, &b, &res);
    /* Rank 1 received data in every kernel: it names the engine. */
    if (c->rank == 1) {
      c->engine(c, cfg.sizes[k], engine, sizeof engine);
      perf_send_wait(c, engine, sizeof engine, 0, PERF_TAG_RESULT, "send (engine name)");
    } else if (c->rank == 0) {
      perf_recv_wait(c, engine, sizeof engine, 1, PERF_TAG_RESULT, "receive (engine name)");
      engine[sizeof engine - 1] = '\0';
      progress_done(cfg.sizes[k], cfg.iters[k]);
      print_row(c, &cfg, k, &res, engine);
    }
  }
  /* Nobody leaves before everybody is done with the last size. */
  perf_barrier(c);
  alarm(0);
  free_bufs(&b);
  return 0;
}
