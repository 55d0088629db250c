/* SPDX-License-Identifier: MIT */
/*
 * kernels.c - the benchmark kernels over struct perf_comm: pingpong, bw
 * (and msgrate, the same stream counted in messages), alltoall and overlap, the configuration rank 0 hands out, and the output.
 * The same code runs over fmx (fmx_perf) and over any MPI (fmx_perf_mpi), so
 * their numbers differ only by the message layer.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels.h"
#include "util.h"

#define PERF_MAGIC 0x66706367u

static const char *const kernel_names[] = {
    [PERF_PINGPONG] = "pingpong", [PERF_BW] = "bw", [PERF_ALLTOALL] = "alltoall",
    [PERF_OVERLAP] = "overlap", [PERF_MSGRATE] = "msgrate", [PERF_COPYLIMIT] = "copylimit",
    [PERF_CACHEPOLLUTION] = "cachepollution"};

const char *perf_kernel_name(enum perf_kernel k)
{
  return k >= PERF_PINGPONG && k <= PERF_CACHEPOLLUTION ? kernel_names[k] : "?";
}

/* What rank 0 prints for one size. */
struct perf_result {
  double lat_us;                        /* the headline time, see the usage text */
  double min_us, max_us;                /* alltoall: per-rank means */
  double tc_us, tt_us, overlap;         /* overlap, receiving side */
  double copy_s_us, tt_s_us, overlap_s; /* overlap, sending side */
};

struct bufs {
  uint8_t **sbuf, **rbuf; /* window slots; all alias slot 0 unless verifying */
  uint8_t *a2a_s, *a2a_r; /* alltoall: np slots of the largest size */
  uint32_t sslots, rslots;
  perf_req_t *reqs; /* window or 2 * np */
};

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
static void progress(uint64_t size, uint64_t done, uint64_t total)
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

static void *alloc_buf(size_t len)
{
  void *p = NULL;
  if (g_comm && g_comm->alloc)
    p = g_comm->alloc(len ? len : 64);
  else if (posix_memalign(&p, 4096, len ? len : 64) != 0)
    p = NULL;
  if (!p)
    perf_die("cannot allocate %zu bytes", len);
  memset(p, 0, len ? len : 64); /* fault the pages in before timing */
  return p;
}

static void pat_check(const uint8_t *p, size_t len, uint64_t seed, uint64_t iter)
{
  size_t first = 0;
  uint8_t got = 0, want = 0;
  size_t bad = pat_errors(p, len, seed, &first, &got, &want);
  if (bad) {
    char hs[32];
    perf_die("verify FAILED: size %s, iteration %" PRIu64 ": %zu of %zu bytes wrong; first at "
             "offset %zu: got 0x%02x, expected 0x%02x",
             human_size(len, hs, sizeof hs), iter, bad, len, first, got, want);
  }
}

static void send_wait(struct perf_comm *c, const void *buf, uint64_t len, int peer,
                      enum perf_tag tag, const char *what)
{
  perf_req_t r;
  c->isend(c, buf, len, peer, tag, &r);
  c->wait(c, &r, what, UINT64_MAX);
}

static void recv_wait(struct perf_comm *c, void *buf, uint64_t len, int peer,
                      enum perf_tag tag, const char *what)
{
  perf_req_t r;
  c->irecv(c, buf, len, peer, tag, &r);
  c->wait(c, &r, what, len);
}

/* Every rank reports to rank 0, then rank 0 releases them all. */
static void barrier(struct perf_comm *c)
{
  char z[8] = {0};
  if (c->rank == 0) {
    for (int p = 1; p < c->size; p++)
      recv_wait(c, z, 0, p, PERF_TAG_BARRIER, "receive (barrier)");
    for (int p = 1; p < c->size; p++)
      send_wait(c, z, 0, p, PERF_TAG_BARRIER, "send (barrier)");
  } else {
    send_wait(c, z, 0, 0, PERF_TAG_BARRIER, "send (barrier)");
    recv_wait(c, z, 0, 0, PERF_TAG_BARRIER, "receive (barrier)");
  }
}

/* Computation that stays off the library and out of memory: a busy loop
 * until the deadline (a vDSO clock read per 64 rounds). */
static volatile uint64_t g_sink;
static void compute_for(double secs)
{
  double end = now() + secs;
  uint64_t x = 0x9e3779b97f4a7c15ull;
  do {
    for (int i = 0; i < 64; i++)
      x = x * 6364136223846793005ull + 1442695040888963407ull;
  } while (now() < end);
  g_sink = x;
}

/* ---- kernels ------------------------------------------------------------ */

static void pingpong_size(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                          struct bufs *b, struct perf_result *res)
{
  uint64_t size = cfg->sizes[k], warm = cfg->warmup[k];
  uint64_t n = warm + cfg->iters[k];
  uint8_t *sbuf = b->sbuf[0], *rbuf = b->rbuf[0];
  bool verify = cfg->verify;
  perf_req_t sreq, rreq;
  double t0 = now();

  if (c->rank == 0) {
    for (uint64_t i = 0; i < n; i++) {
      if (i == warm)
        t0 = now();
      if (verify)
        pat_fill(sbuf, size, pat_seed(size, i, 0));
      /* Send first: the pong cannot be matched before we next call into
       * the library, and by then its receive is posted. */
      c->isend(c, sbuf, size, 1, PERF_TAG_DATA, &sreq);
      c->irecv(c, rbuf, size, 1, PERF_TAG_DATA, &rreq);
      c->wait(c, &sreq, "send (ping)", UINT64_MAX);
      c->wait(c, &rreq, "receive (pong)", size);
      if (verify)
        pat_check(rbuf, size, pat_seed(size, i, 1), i);
      if (i >= warm && (size >= 65536 || (i & 255) == 0))
        progress(size, i + 1 - warm, n - warm);
    }
    res->lat_us = (now() - t0) * 1e6 / (double)cfg->iters[k] / 2;
    return;
  }
  if (c->rank != 1)
    return;
  c->irecv(c, rbuf, size, 0, PERF_TAG_DATA, &rreq);
  for (uint64_t i = 0; i < n; i++) {
    c->wait(c, &rreq, "receive (ping)", size);
    if (verify) {
      pat_check(rbuf, size, pat_seed(size, i, 0), i);
      pat_fill(sbuf, size, pat_seed(size, i, 1));
    }
    c->isend(c, sbuf, size, 0, PERF_TAG_DATA, &sreq);
    if (i + 1 < n) /* posted before we next progress: the ping finds it */
      c->irecv(c, rbuf, size, 0, PERF_TAG_DATA, &rreq);
    c->wait(c, &sreq, "send (pong)", UINT64_MAX);
    if ((i & 255) == 0 || size >= 65536)
      progress(size, i, n);
  }
}

static void bw_size(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                    struct bufs *b, struct perf_result *res)
{
  uint64_t size = cfg->sizes[k];
  uint32_t w = cfg->window;
  uint64_t warm = cfg->warmup[k] / w, n = warm + cfg->iters[k] / w;
  bool verify = cfg->verify;
  perf_req_t *reqs = b->reqs, ack;
  char ackbuf[8] = {0};
  double t0 = now();

  if (c->rank == 0) {
    for (uint64_t i = 0; i < n; i++) {
      if (i == warm)
        t0 = now();
      c->irecv(c, ackbuf, 0, 1, PERF_TAG_ACK, &ack);
      for (uint32_t j = 0; j < w; j++) {
        if (verify)
          pat_fill(b->sbuf[j], size, pat_seed(size, i * w + j, 0));
        c->isend(c, b->sbuf[j], size, 1, PERF_TAG_DATA, &reqs[j]);
      }
      for (uint32_t j = 0; j < w; j++)
        c->wait(c, &reqs[j], "send (stream)", UINT64_MAX);
      c->wait(c, &ack, "receive (window ack)", 0);
      if (i >= warm)
        progress(size, (i + 1 - warm) * w, (n - warm) * w);
    }
    res->lat_us = (now() - t0) * 1e6 / (double)cfg->iters[k];
    return;
  }
  if (c->rank != 1)
    return;
  for (uint32_t j = 0; j < w; j++)
    c->irecv(c, b->rbuf[j], size, 0, PERF_TAG_DATA, &reqs[j]);
  for (uint64_t i = 0; i < n; i++) {
    for (uint32_t j = 0; j < w; j++) {
      c->wait(c, &reqs[j], "receive (stream)", size);
      if (verify)
        pat_check(b->rbuf[j], size, pat_seed(size, i * w + j, 0), i * w + j);
    }
    if (i + 1 < n) /* post the next window before acking this one */
      for (uint32_t j = 0; j < w; j++)
        c->irecv(c, b->rbuf[j], size, 0, PERF_TAG_DATA, &reqs[j]);
    c->isend(c, ackbuf, 0, 0, PERF_TAG_ACK, &ack);
    c->wait(c, &ack, "send (window ack)", UINT64_MAX);
    progress(size, i, n);
  }
}

/* Direction tag of the verification pattern for src -> dst in alltoall. */
static int a2a_dir(const struct perf_config *cfg, int src, int dst)
{
  return 2 + src * (int)cfg->np + dst;
}

static void alltoall_size(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                          struct bufs *b, struct perf_result *res)
{
  uint64_t size = cfg->sizes[k], warm = cfg->warmup[k];
  uint64_t n = warm + cfg->iters[k];
  int np = c->size, me = c->rank;
  perf_req_t *reqs = b->reqs;
  double t0 = now();

  for (uint64_t i = 0; i < n; i++) {
    if (i == warm) {
      barrier(c); /* start the timed part together */
      t0 = now();
    }
    /* Receives first, then sends; start with the next rank so that not
     * everybody sends to rank 0 at once. */
    for (int s = 1; s < np; s++) {
      int p = (me + np - s) % np;
      c->irecv(c, b->a2a_r + (size_t)p * size, size, p, PERF_TAG_DATA, &reqs[s - 1]);
    }
    for (int s = 1; s < np; s++) {
      int p = (me + s) % np;
      uint8_t *src = b->a2a_s + (size_t)p * size;
      if (cfg->verify)
        pat_fill(src, size, pat_seed(size, i, a2a_dir(cfg, me, p)));
      c->isend(c, src, size, p, PERF_TAG_DATA, &reqs[np - 2 + s]);
    }
    for (int s = 1; s < np; s++) {
      int p = (me + np - s) % np;
      c->wait(c, &reqs[s - 1], "receive (alltoall)", size);
      if (cfg->verify)
        pat_check(b->a2a_r + (size_t)p * size, size, pat_seed(size, i, a2a_dir(cfg, p, me)),
                  i);
    }
    for (int s = 1; s < np; s++)
      c->wait(c, &reqs[np - 2 + s], "send (alltoall)", UINT64_MAX);
    if (i >= warm && (size >= 65536 || (i & 255) == 0))
      progress(size, i + 1 - warm, n - warm);
  }
  double mine = (now() - t0) * 1e6 / (double)cfg->iters[k];
  /* Rank 0 gathers every rank's mean: the exchange is done when the last
   * rank is done, so the headline is the slowest rank's mean. */
  if (me != 0) {
    send_wait(c, &mine, sizeof mine, 0, PERF_TAG_RESULT, "send (alltoall time)");
    return;
  }
  res->min_us = res->max_us = mine;
  for (int p = 1; p < np; p++) {
    double t;
    recv_wait(c, &t, sizeof t, p, PERF_TAG_RESULT, "receive (alltoall time)");
    res->min_us = t < res->min_us ? t : res->min_us;
    res->max_us = t > res->max_us ? t : res->max_us;
  }
  res->lat_us = res->max_us;
}

/* One overlap phase of n iterations; returns the mean time per iteration on
 * the computing side (`me` is 1 for the receiving side, 0 for the sending
 * side), computing `tc` seconds between post and wait (0: Tcopy alone). */
static double overlap_phase(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                            struct bufs *b, int me_side, double tc)
{
  uint64_t size = cfg->sizes[k], warm = cfg->warmup[k], n = warm + cfg->iters[k];
  perf_req_t data, ctl;
  char z[8] = {0};
  double t0 = now();

  for (uint64_t i = 0; i < n; i++) {
    if (i == warm)
      t0 = now();
    if (me_side == 1) {
      /* Receiving side computes: post the receive, tell the sender to go,
       * compute, then wait. The sender sends as soon as it hears "go". */
      if (c->rank == 1) {
        c->irecv(c, b->rbuf[0], size, 0, PERF_TAG_DATA, &data);
        c->isend(c, z, 0, 0, PERF_TAG_ACK, &ctl);
        if (tc > 0)
          compute_for(tc);
        c->wait(c, &ctl, "send (go)", UINT64_MAX);
        c->wait(c, &data, "receive (overlap)", size);
      } else {
        recv_wait(c, z, 0, 1, PERF_TAG_ACK, "receive (go)");
        send_wait(c, b->sbuf[0], size, 1, PERF_TAG_DATA, "send (overlap)");
      }
    } else {
      /* Sending side computes: post the send, compute, wait for it and for
       * the receiver's "got it". */
      if (c->rank == 0) {
        c->irecv(c, z, 0, 1, PERF_TAG_ACK, &ctl);
        c->isend(c, b->sbuf[0], size, 1, PERF_TAG_DATA, &data);
        if (tc > 0)
          compute_for(tc);
        c->wait(c, &data, "send (overlap)", UINT64_MAX);
        c->wait(c, &ctl, "receive (got it)", 0);
      } else {
        recv_wait(c, b->rbuf[0], size, 0, PERF_TAG_DATA, "receive (overlap)");
        send_wait(c, z, 0, 0, PERF_TAG_ACK, "send (got it)");
      }
    }
    progress(size, i, n);
  }
  return (now() - t0) / (double)cfg->iters[k];
}

static void overlap_size(struct perf_comm *c, const struct perf_config *cfg, uint32_t k,
                         struct bufs *b, struct perf_result *res)
{
  if (c->rank > 1)
    return;
  /* Receiving side: rank 1 measures, then tells rank 0. */
  double copy_r = overlap_phase(c, cfg, k, b, 1, 0);
  double bcast = copy_r;
  if (c->rank == 1)
    send_wait(c, &bcast, sizeof bcast, 0, PERF_TAG_RESULT, "send (Tcopy)");
  else
    recv_wait(c, &bcast, sizeof bcast, 1, PERF_TAG_RESULT, "receive (Tcopy)");
  double tc_r = 1.2 * bcast;
  double total_r = overlap_phase(c, cfg, k, b, 1, tc_r);
  double out[2] = {bcast, total_r};
  if (c->rank == 1)
    send_wait(c, out, sizeof out, 0, PERF_TAG_RESULT, "send (overlap times)");
  else
    recv_wait(c, out, sizeof out, 1, PERF_TAG_RESULT, "receive (overlap times)");

  /* Sending side: rank 0 measures. */
  double copy_s = overlap_phase(c, cfg, k, b, 0, 0);
  double total_s = overlap_phase(c, cfg, k, b, 0, 1.2 * copy_s);
  if (c->rank != 0)
    return;
  res->lat_us = out[0] * 1e6;
  res->tc_us = tc_r * 1e6;
  res->tt_us = out[1] * 1e6;
  res->overlap = out[0] > 0 ? (out[0] + tc_r - out[1]) / out[0] : 0;
  res->copy_s_us = copy_s * 1e6;
  res->tt_s_us = total_s * 1e6;
  res->overlap_s = copy_s > 0 ? (copy_s + 1.2 * copy_s - total_s) / copy_s : 0;
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
      send_wait(c, cfg, sizeof *cfg, p, PERF_TAG_CONFIG, "send (configuration)");
    return;
  }
  recv_wait(c, cfg, sizeof *cfg, 0, PERF_TAG_CONFIG, "receive (configuration)");
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

static void free_buf(void *p)
{
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
      [PERF_PINGPONG] = pingpong_size, [PERF_BW] = bw_size, [PERF_ALLTOALL] = alltoall_size,
      [PERF_OVERLAP] = overlap_size, [PERF_MSGRATE] = bw_size};

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
    barrier(c);
    kernels[cfg.kernel](c, &cfg, k, &b, &res);
    /* Rank 1 received data in every kernel: it names the engine. */
    if (c->rank == 1) {
      c->engine(c, cfg.sizes[k], engine, sizeof engine);
      send_wait(c, engine, sizeof engine, 0, PERF_TAG_RESULT, "send (engine name)");
    } else if (c->rank == 0) {
      recv_wait(c, engine, sizeof engine, 1, PERF_TAG_RESULT, "receive (engine name)");
      engine[sizeof engine - 1] = '\0';
      progress_done(cfg.sizes[k], cfg.iters[k]);
      print_row(c, &cfg, k, &res, engine);
    }
  }
  /* Nobody leaves before everybody is done with the last size. */
  barrier(c);
  alarm(0);
  free_bufs(&b);
  return 0;
}
