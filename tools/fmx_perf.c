/* SPDX-License-Identifier: MIT */
/*
 * fmx_perf - two-process benchmark over fmx.
 *
 *   pingpong: rank 0 sends, rank 1 answers; latency = half the round trip.
 *   bw:       rank 0 streams windows of W isends, rank 1 acks each window.
 *
 * By default the parent forks both ranks, pins them to two cores and
 * supervises them: a rank that fails makes the whole run fail, and the ranks
 * die with the parent (PR_SET_PDEATHSIG). Every wait has a finite timeout so
 * a dead peer gives an error, never a hang. Rank 0 owns the configuration and
 * sends it to rank 1, so with --no-spawn only rank 0 needs the full options.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fmx.h"
#include "perf_util.h"

#define PERF_KEY 0x666d7870u /* "fmxp" */
#define PERF_MAGIC 0x66706366u
#define MAX_SIZES 128
#define MAX_WINDOW 1024
/* Match infos: one exact tag per message kind. */
#define TAG_DATA 0xf0f0000000000001ull
#define TAG_ACK 0xf0f0000000000002ull
#define TAG_CONFIG 0xf0f0000000000003ull
#define TAG_ENGINE 0xf0f0000000000004ull
#define TAG_BYE 0xf0f0000000000005ull

enum { MODE_PINGPONG = 1, MODE_BW = 2 };

/* Sent from rank 0 to rank 1 (same binary, same host: raw struct is fine). */
struct perf_config {
  uint32_t magic, mode, nsizes, window, verify, pad;
  uint64_t sizes[MAX_SIZES];
  uint64_t iters[MAX_SIZES];  /* measured messages (pingpong: round trips) */
  uint64_t warmup[MAX_SIZES]; /* same unit as iters */
};

static struct {
  int mode;
  uint64_t sizes[MAX_SIZES];
  uint32_t nsizes;
  uint64_t iters; /* 0: scaled to size */
  const char *engine;
  bool verify, json, quiet, no_spawn;
  int cores[2];
  int rank;
  long endpoint_id;
  uint32_t window;
  uint32_t timeout_ms;
} opt = {.mode = MODE_PINGPONG, .cores = {-1, -1}, .rank = -1, .endpoint_id = -1,
         .window = 16, .timeout_ms = 30000};

static int g_rank = -1; /* -1: the supervising parent */
static bool g_tty;
static double g_last_progress;

static void msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void msg(const char *fmt, ...)
{
  /* One write per line: two ranks share stderr. */
  char line[1024];
  int n = g_rank >= 0 ? snprintf(line, sizeof line, "fmx_perf: rank %d: ", g_rank)
                      : snprintf(line, sizeof line, "fmx_perf: ");
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
  va_end(ap);
  strcat(line, "\n");
  fputs(line, stderr);
}

#define die(...) (msg(__VA_ARGS__), exit(1))
#define usage_error(...) (msg(__VA_ARGS__), fprintf(stderr, "Try 'fmx_perf --help'.\n"), exit(2))

static void check(fmx_return_t rc, const char *what)
{
  if (rc != FMX_SUCCESS)
    die("%s failed: %s (%d)", what, fmx_strerror(rc), (int)rc);
}

static void usage(FILE *f)
{
  fprintf(f,
          "Usage: fmx_perf [pingpong|bw] [options]\n"
          "Two-process benchmark over fmx (default mode: pingpong).\n\n"
          "  pingpong         rank 0 sends, rank 1 answers; latency = round trip / 2\n"
          "  bw               rank 0 streams windows of messages, rank 1 acks each window\n\n"
          "Options:\n"
          "  --sizes LIST     comma list of sizes, suffixes K/M/G (powers of 1024),\n"
          "                   e.g. 0,8,4K,1M (default 0,1,2,4,...,64M)\n"
          "  --iters N        measured iterations per size (default: scaled to the size,\n"
          "                   10000 for small messages down to 20 at 64M)\n"
          "  --window W       bw: messages in flight (default 16)\n"
          "  --engine NAME    force the bulk engine (sets FMX_BULK=NAME in both ranks)\n"
          "  --verify         check every received byte (timings then include the checks)\n"
          "  --json           one JSON object per size per line\n"
          "  --cores A,B      pin rank 0 to core A and rank 1 to core B\n"
          "                   (default: the first two allowed cores)\n"
          "  --timeout SEC    give up when the peer is silent this long (default 30)\n"
          "  --quiet          no progress line on stderr\n"
          "  --no-spawn       run one rank by hand; needs --rank; rank 0 opens endpoint\n"
          "                   N and rank 1 endpoint N+1 (--endpoint-id N, default 0);\n"
          "                   rank 1 takes sizes, iterations and mode from rank 0\n"
          "  --rank 0|1       with --no-spawn\n"
          "  --endpoint-id N  with --no-spawn\n"
          "  --help           this text\n\n"
          "Columns: latency_us is half the round trip (bw: time per message);\n"
          "bandwidth is size / latency in MB/s (10^6 bytes/s). engine is the bulk\n"
          "engine of the last large receive, or \"eager\" below the rendezvous threshold.\n"
          "Exit status: 0 ok, 1 error, 2 usage error.\n");
}

/* ---- parsing ------------------------------------------------------------ */

static void parse_sizes(const char *arg)
{
  char *copy = strdup(arg), *save = NULL, *tok;
  opt.nsizes = 0;
  for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (opt.nsizes == MAX_SIZES)
      usage_error("--sizes: at most %d sizes", MAX_SIZES);
    if (!parse_u64(tok, &opt.sizes[opt.nsizes], true))
      usage_error("--sizes: bad size '%s' (want a number with an optional K, M or G)", tok);
    opt.nsizes++;
  }
  if (opt.nsizes == 0)
    usage_error("--sizes: empty list");
  free(copy);
}

static long parse_int(const char *what, const char *s, long lo, long hi)
{
  uint64_t v;
  if (!parse_u64(s, &v, false) || v < (uint64_t)lo || v > (uint64_t)hi)
    usage_error("%s: bad value '%s' (want an integer in %ld..%ld)", what, s, lo, hi);
  return (long)v;
}

static void default_cores(void)
{
  cpu_set_t set;
  int found = 0;
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    die("sched_getaffinity: %s", strerror(errno));
  for (int c = 0; c < CPU_SETSIZE && found < 2; c++)
    if (CPU_ISSET(c, &set))
      opt.cores[found++] = c;
  if (found == 1) {
    opt.cores[1] = opt.cores[0];
    msg("warning: only one core allowed (%d); both ranks share it", opt.cores[0]);
  }
}

static void parse_args(int argc, char **argv)
{
  enum { O_SIZES = 256, O_ITERS, O_WINDOW, O_ENGINE, O_VERIFY, O_JSON, O_CORES,
         O_TIMEOUT, O_QUIET, O_NOSPAWN, O_RANK, O_EID, O_HELP };
  static const struct option lopts[] = {
      {"sizes", required_argument, 0, O_SIZES},   {"iters", required_argument, 0, O_ITERS},
      {"window", required_argument, 0, O_WINDOW}, {"engine", required_argument, 0, O_ENGINE},
      {"verify", no_argument, 0, O_VERIFY},       {"json", no_argument, 0, O_JSON},
      {"cores", required_argument, 0, O_CORES},   {"timeout", required_argument, 0, O_TIMEOUT},
      {"quiet", no_argument, 0, O_QUIET},         {"no-spawn", no_argument, 0, O_NOSPAWN},
      {"rank", required_argument, 0, O_RANK},     {"endpoint-id", required_argument, 0, O_EID},
      {"help", no_argument, 0, O_HELP},           {0, 0, 0, 0}};
  int first = 1;
  if (argc > 1 && argv[1][0] != '-') {
    if (!strcmp(argv[1], "pingpong"))
      opt.mode = MODE_PINGPONG;
    else if (!strcmp(argv[1], "bw"))
      opt.mode = MODE_BW;
    else
      usage_error("unknown mode '%s' (want pingpong or bw)", argv[1]);
    first = 2;
  }
  optind = first;
  opterr = 0;
  int c;
  while ((c = getopt_long(argc, argv, ":h", lopts, NULL)) != -1) {
    switch (c) {
    case O_SIZES: parse_sizes(optarg); break;
    case O_ITERS: opt.iters = (uint64_t)parse_int("--iters", optarg, 1, 1000000000L); break;
    case O_WINDOW: opt.window = (uint32_t)parse_int("--window", optarg, 1, MAX_WINDOW); break;
    case O_ENGINE:
      if (!*optarg || strlen(optarg) > 63)
        usage_error("--engine: bad engine name '%s'", optarg);
      opt.engine = optarg;
      break;
    case O_VERIFY: opt.verify = true; break;
    case O_JSON: opt.json = true; break;
    case O_CORES: {
      char *comma = strchr(optarg, ',');
      if (!comma)
        usage_error("--cores: want A,B (two core numbers), got '%s'", optarg);
      *comma = '\0';
      opt.cores[0] = (int)parse_int("--cores", optarg, 0, CPU_SETSIZE - 1);
      opt.cores[1] = (int)parse_int("--cores", comma + 1, 0, CPU_SETSIZE - 1);
      break;
    }
    case O_TIMEOUT:
      opt.timeout_ms = (uint32_t)parse_int("--timeout", optarg, 1, 86400) * 1000u;
      break;
    case O_QUIET: opt.quiet = true; break;
    case O_NOSPAWN: opt.no_spawn = true; break;
    case O_RANK: opt.rank = (int)parse_int("--rank", optarg, 0, 1); break;
    case O_EID: opt.endpoint_id = parse_int("--endpoint-id", optarg, 0, 0x7ffffffe); break;
    case 'h':
    case O_HELP: usage(stdout); exit(0);
    case ':': usage_error("option '%s' needs a value", argv[optind - 1]);
    default: usage_error("unknown option '%s'", argv[optind - 1]);
    }
  }
  if (optind < argc)
    usage_error("unexpected argument '%s'", argv[optind]);
  if (opt.no_spawn && opt.rank < 0)
    usage_error("--no-spawn needs --rank 0 or --rank 1");
  if (!opt.no_spawn && (opt.rank >= 0 || opt.endpoint_id >= 0))
    usage_error("--rank and --endpoint-id only make sense with --no-spawn");
  if (opt.nsizes == 0) {
    opt.sizes[opt.nsizes++] = 0;
    for (uint64_t s = 1; s <= (64u << 20); s <<= 1)
      opt.sizes[opt.nsizes++] = s;
  }
  if (opt.cores[0] >= 0) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0)
      for (int i = 0; i < 2; i++)
        if (!CPU_ISSET(opt.cores[i], &set))
          usage_error("--cores: core %d is not in this process's allowed CPU set",
                      opt.cores[i]);
  } else if (!opt.no_spawn) {
    default_cores();
  }
}

/* ---- helpers ------------------------------------------------------------ */

/* Iterations that make one size last ~0.1-0.3 s on a current machine. */
static uint64_t default_iters(uint64_t size)
{
  uint64_t it = (1ull << 29) / (size ? size : 1);
  return it < 20 ? 20 : it > 10000 ? 10000 : it;
}

static void *alloc_buf(size_t len)
{
  void *p = NULL;
  if (posix_memalign(&p, 4096, len ? len : 64) != 0)
    die("cannot allocate %zu bytes", len);
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
    die("verify FAILED: size %s, iteration %" PRIu64 ": %zu of %zu bytes wrong; first at "
        "offset %zu: got 0x%02x, expected 0x%02x",
        human_size(len, hs, sizeof hs), iter, bad, len, first, got, want);
  }
}

static void post_recv(fmx_endpoint_t ep, void *buf, uint64_t len, uint64_t tag,
                      fmx_request_t *req)
{
  fmx_seg_t seg = {buf, len};
  check(fmx_irecv(ep, &seg, 1, tag, FMX_MATCH_MASK_NONE, NULL, req), "fmx_irecv");
}

static void post_send(fmx_endpoint_t ep, const void *buf, uint64_t len,
                      fmx_endpoint_addr_t dest, uint64_t tag, fmx_request_t *req)
{
  fmx_seg_t seg = {(void *)buf, len};
  check(fmx_isend(ep, &seg, 1, dest, tag, NULL, req), "fmx_isend");
}

/* Wait for one request with the run's timeout. `tolerant`: a peer that has
 * already gone is not an error (used for the final good-bye). */
static bool wait_req(fmx_endpoint_t ep, fmx_request_t *req, const char *what,
                     uint64_t expect_len, bool tolerant)
{
  fmx_status_t st;
  uint32_t done = 0;
  /* One wait with the whole timeout: no clock read on the measured path. */
  check(fmx_wait(ep, req, opt.timeout_ms, &st, &done), "fmx_wait");
  if (!done)
    die("%s: nothing from the peer for %u s (peer dead or stuck?)", what,
        opt.timeout_ms / 1000);
  if (st.code != FMX_SUCCESS) {
    if (tolerant)
      return false;
    die("%s completed with error: %s (%d)", what, fmx_strerror(st.code), (int)st.code);
  }
  if (expect_len != UINT64_MAX && st.xfer_length != expect_len)
    die("%s: %" PRIu64 " bytes delivered, expected %" PRIu64, what, st.xfer_length,
        expect_len);
  return true;
}

static void progress(uint64_t size, uint64_t done, uint64_t total)
{
  if (opt.quiet || !g_tty)
    return;
  double t = now();
  if (done < total && t - g_last_progress < 0.1)
    return;
  g_last_progress = t;
  char hs[32];
  fprintf(stderr, "\r\033[K[fmx_perf] %s %" PRIu64 "/%" PRIu64, human_size(size, hs, sizeof hs),
          done, total);
}

static void progress_done(uint64_t size, uint64_t iters)
{
  char hs[32];
  if (opt.quiet)
    return;
  if (g_tty)
    fprintf(stderr, "\r\033[K");
  else
    fprintf(stderr, "[fmx_perf] %s: %" PRIu64 " iterations done\n",
            human_size(size, hs, sizeof hs), iters);
}

/* ---- the two ranks ------------------------------------------------------ */

struct run {
  fmx_endpoint_t ep;
  fmx_endpoint_addr_t peer;
  const struct perf_config *cfg;
  uint8_t **sbuf, **rbuf; /* window slots; all alias slot 0 unless verifying */
};

static double pingpong_size(struct run *r, uint32_t k)
{
  uint64_t size = r->cfg->sizes[k], warm = r->cfg->warmup[k];
  uint64_t n = warm + r->cfg->iters[k];
  uint8_t *sbuf = r->sbuf[0], *rbuf = r->rbuf[0];
  bool verify = r->cfg->verify;
  fmx_request_t sreq, rreq;
  double t0 = now();

  if (g_rank == 0) {
    for (uint64_t i = 0; i < n; i++) {
      if (i == warm)
        t0 = now();
      if (verify)
        pat_fill(sbuf, size, pat_seed(size, i, 0));
      /* Send first: the pong cannot be matched before we next call into
       * fmx, and by then its receive is posted. */
      post_send(r->ep, sbuf, size, r->peer, TAG_DATA, &sreq);
      post_recv(r->ep, rbuf, size, TAG_DATA, &rreq);
      wait_req(r->ep, &sreq, "send (ping)", UINT64_MAX, false);
      wait_req(r->ep, &rreq, "receive (pong)", size, false);
      if (verify)
        pat_check(rbuf, size, pat_seed(size, i, 1), i);
      if (i >= warm && (size >= 65536 || (i & 255) == 0))
        progress(size, i + 1 - warm, n - warm);
    }
    return now() - t0;
  }
  post_recv(r->ep, rbuf, size, TAG_DATA, &rreq);
  for (uint64_t i = 0; i < n; i++) {
    wait_req(r->ep, &rreq, "receive (ping)", size, false);
    if (verify)
      pat_check(rbuf, size, pat_seed(size, i, 0), i);
    if (verify)
      pat_fill(sbuf, size, pat_seed(size, i, 1));
    post_send(r->ep, sbuf, size, r->peer, TAG_DATA, &sreq);
    if (i + 1 < n) /* posted before we next progress: the ping finds it */
      post_recv(r->ep, rbuf, size, TAG_DATA, &rreq);
    wait_req(r->ep, &sreq, "send (pong)", UINT64_MAX, false);
  }
  return 0;
}

static double bw_size(struct run *r, uint32_t k)
{
  uint64_t size = r->cfg->sizes[k];
  uint32_t w = r->cfg->window;
  uint64_t warm = r->cfg->warmup[k] / w, n = warm + r->cfg->iters[k] / w;
  bool verify = r->cfg->verify;
  fmx_request_t reqs[MAX_WINDOW], ack;
  char ackbuf[8];
  double t0 = now();

  if (g_rank == 0) {
    for (uint64_t i = 0; i < n; i++) {
      if (i == warm)
        t0 = now();
      post_recv(r->ep, ackbuf, 0, TAG_ACK, &ack);
      for (uint32_t j = 0; j < w; j++) {
        if (verify)
          pat_fill(r->sbuf[j], size, pat_seed(size, i * w + j, 0));
        post_send(r->ep, r->sbuf[j], size, r->peer, TAG_DATA, &reqs[j]);
      }
      for (uint32_t j = 0; j < w; j++)
        wait_req(r->ep, &reqs[j], "send (stream)", UINT64_MAX, false);
      wait_req(r->ep, &ack, "receive (window ack)", 0, false);
      if (i >= warm)
        progress(size, (i + 1 - warm) * w, (n - warm) * w);
    }
    return now() - t0;
  }
  for (uint32_t j = 0; j < w; j++)
    post_recv(r->ep, r->rbuf[j], size, TAG_DATA, &reqs[j]);
  for (uint64_t i = 0; i < n; i++) {
    for (uint32_t j = 0; j < w; j++) {
      wait_req(r->ep, &reqs[j], "receive (stream)", size, false);
      if (verify)
        pat_check(r->rbuf[j], size, pat_seed(size, i * w + j, 0), i * w + j);
    }
    if (i + 1 < n) /* post the next window before acking this one */
      for (uint32_t j = 0; j < w; j++)
        post_recv(r->ep, r->rbuf[j], size, TAG_DATA, &reqs[j]);
    post_send(r->ep, ackbuf, 0, r->peer, TAG_ACK, &ack);
    wait_req(r->ep, &ack, "send (window ack)", UINT64_MAX, false);
  }
  return 0;
}

static void last_engine(fmx_endpoint_t ep, uint64_t size, uint64_t rndv, char *out,
                        size_t len)
{
  memset(out, 0, len);
  if (size < rndv)
    snprintf(out, len, "eager");
  else if (fmx_get_info(ep, FMX_INFO_LAST_BULK_ENGINE, NULL, 0, out, (uint32_t)len) !=
               FMX_SUCCESS ||
           !out[0])
    snprintf(out, len, "?");
  out[len - 1] = '\0';
}

static void print_row(const struct perf_config *cfg, uint32_t k, double secs,
                      const char *engine)
{
  uint64_t size = cfg->sizes[k], iters = cfg->iters[k];
  double lat = cfg->mode == MODE_PINGPONG ? secs * 1e6 / (double)iters / 2
                                          : secs * 1e6 / (double)iters;
  double bw = lat > 0 ? (double)size / lat : 0;
  char hs[32];
  if (opt.json) {
    printf("{\"size\":%" PRIu64 ",\"iters\":%" PRIu64 ",\"latency_us\":%.3f,"
           "\"bandwidth_MBps\":%.2f,\"engine\":\"",
           size, iters, lat, bw);
    for (const char *p = engine; *p; p++) {
      if (*p == '"' || *p == '\\')
        putchar('\\');
      putchar((unsigned char)*p < 0x20 ? '?' : *p);
    }
    printf("\"}\n");
  } else {
    printf("%10s %10" PRIu64 " %13.2f %15.2f  %s\n", human_size(size, hs, sizeof hs), iters,
           lat, bw, engine);
  }
  fflush(stdout);
}

static void build_config(struct perf_config *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->magic = PERF_MAGIC;
  cfg->mode = (uint32_t)opt.mode;
  cfg->nsizes = opt.nsizes;
  cfg->window = opt.mode == MODE_BW ? opt.window : 1;
  cfg->verify = opt.verify;
  for (uint32_t k = 0; k < opt.nsizes; k++) {
    uint64_t it = opt.iters ? opt.iters : default_iters(opt.sizes[k]);
    uint64_t warm = it / 10 < 2 ? 2 : it / 10 > 100 ? 100 : it / 10;
    if (cfg->mode == MODE_BW) { /* whole windows */
      it = (it + cfg->window - 1) / cfg->window * cfg->window;
      warm = (warm + cfg->window - 1) / cfg->window * cfg->window;
    }
    cfg->sizes[k] = opt.sizes[k];
    cfg->iters[k] = it;
    cfg->warmup[k] = warm;
  }
}

static void connect_peer(fmx_endpoint_t ep, uint32_t peer_eid, fmx_endpoint_addr_t *addr)
{
  double deadline = now() + opt.timeout_ms / 1000.0;
  for (;;) {
    fmx_return_t rc = fmx_connect(ep, FMX_ANY_NIC, peer_eid, PERF_KEY, 5000, addr);
    if (rc == FMX_SUCCESS)
      return;
    /* By hand, the other rank may not be up yet: keep trying. */
    bool retry = rc == FMX_REMOTE_ENDPOINT_BAD_ID || rc == FMX_TIMEOUT ||
                 rc == FMX_REMOTE_ENDPOINT_CLOSED;
    if (!retry || now() > deadline)
      die("fmx_connect to endpoint %u failed: %s (%d)", peer_eid, fmx_strerror(rc), (int)rc);
    usleep(50000);
  }
}

/* Spawned ranks learn each other's endpoint id over a socketpair. */
static uint32_t exchange_eid(int fd, uint32_t mine)
{
  uint32_t peer;
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  if (write(fd, &mine, sizeof mine) != (ssize_t)sizeof mine)
    die("cannot send endpoint id to peer: %s", strerror(errno));
  int pr;
  while ((pr = poll(&pfd, 1, (int)opt.timeout_ms)) < 0 && errno == EINTR)
    ;
  if (pr == 0)
    die("peer did not send its endpoint id within %u s", opt.timeout_ms / 1000);
  if (read(fd, &peer, sizeof peer) != (ssize_t)sizeof peer)
    die("peer exited before sending its endpoint id");
  return peer;
}

static int run_rank(int sock)
{
  fmx_endpoint_t ep;
  struct perf_config cfg;
  struct run r = {.cfg = &cfg};
  uint64_t rndv = 0;
  uint32_t my_eid = 0, peer_eid;
  char engine[64];

  check(fmx_init(), "fmx_init");
  uint32_t want = opt.no_spawn ? (uint32_t)(opt.endpoint_id < 0 ? 0 : opt.endpoint_id) +
                                     (uint32_t)g_rank
                               : FMX_ANY_ENDPOINT;
  check(fmx_open_endpoint(0, want, PERF_KEY, NULL, 0, &ep), "fmx_open_endpoint");
  r.ep = ep;
  check(fmx_get_info(ep, FMX_INFO_ENDPOINT_ID, NULL, 0, &my_eid, sizeof my_eid),
        "fmx_get_info(ENDPOINT_ID)");
  if (sock >= 0)
    peer_eid = exchange_eid(sock, my_eid);
  else
    peer_eid = g_rank == 0 ? my_eid + 1 : my_eid - 1;
  connect_peer(ep, peer_eid, &r.peer);
  if (fmx_get_info(NULL, FMX_INFO_RNDV_THRESHOLD, NULL, 0, &rndv, sizeof rndv) != FMX_SUCCESS)
    rndv = 0;

  fmx_request_t req;
  if (g_rank == 0) {
    build_config(&cfg);
    post_send(ep, &cfg, sizeof cfg, r.peer, TAG_CONFIG, &req);
    wait_req(ep, &req, "send (configuration)", UINT64_MAX, false);
  } else {
    post_recv(ep, &cfg, sizeof cfg, TAG_CONFIG, &req);
    wait_req(ep, &req, "receive (configuration)", sizeof cfg, false);
    if (cfg.magic != PERF_MAGIC || cfg.nsizes > MAX_SIZES || !cfg.window ||
        cfg.window > MAX_WINDOW)
      die("bad configuration from rank 0 (another fmx_perf version?)");
  }

  if (g_rank == 0 && opt.engine) {
    char status[128] = "";
    fmx_return_t rc = fmx_get_info(NULL, FMX_INFO_ENGINE_STATUS, opt.engine,
                                   (uint32_t)strlen(opt.engine) + 1, status, sizeof status);
    status[sizeof status - 1] = '\0';
    if (rc != FMX_SUCCESS)
      msg("warning: engine '%s' is unknown to this library (%s); FMX_BULK is ignored",
          opt.engine, fmx_strerror(rc));
    else if (strcmp(status, "available") != 0)
      msg("warning: engine '%s' not available here: %s", opt.engine, status);
  }

  uint64_t maxsize = 0;
  for (uint32_t k = 0; k < cfg.nsizes; k++)
    maxsize = cfg.sizes[k] > maxsize ? cfg.sizes[k] : maxsize;
  /* Without --verify a window shares one buffer each way, as OSU does; with
   * it the streaming side needs one buffer per message in flight. */
  uint32_t sslots = cfg.verify && g_rank == 0 ? cfg.window : 1;
  uint32_t rslots = cfg.verify && g_rank == 1 ? cfg.window : 1;
  r.sbuf = calloc(cfg.window, sizeof *r.sbuf);
  r.rbuf = calloc(cfg.window, sizeof *r.rbuf);
  if (!r.sbuf || !r.rbuf)
    die("out of memory");
  for (uint32_t j = 0; j < cfg.window; j++) {
    r.sbuf[j] = j < sslots ? alloc_buf(maxsize) : r.sbuf[0];
    r.rbuf[j] = j < rslots ? alloc_buf(maxsize) : r.rbuf[0];
  }

  if (g_rank == 0 && !opt.json) {
    char hs[32], cores[32] = "not pinned";
    if (opt.cores[0] >= 0 && opt.no_spawn)
      snprintf(cores, sizeof cores, "rank 0 on core %d", opt.cores[0]);
    else if (opt.cores[0] >= 0)
      snprintf(cores, sizeof cores, "cores %d,%d", opt.cores[0], opt.cores[1]);
    printf("# fmx_perf %s: %s; rendezvous from %s; FMX_BULK=%s%s\n",
           cfg.mode == MODE_PINGPONG ? "pingpong" : "bw", cores,
           human_size(rndv, hs, sizeof hs), opt.engine ? opt.engine : "(auto)",
           cfg.verify ? "; verifying (timings include checks)" : "");
    if (cfg.mode == MODE_BW)
      printf("# window %u; latency = time per message\n", cfg.window);
    printf("%10s %10s %13s %15s  %s\n", "size", "iters", "latency(us)", "bandwidth(MB/s)",
           "engine");
    fflush(stdout);
  }

  for (uint32_t k = 0; k < cfg.nsizes; k++) {
    uint64_t size = cfg.sizes[k];
    if (cfg.mode == MODE_PINGPONG) {
      double t = pingpong_size(&r, k);
      if (g_rank == 0) {
        last_engine(ep, size, rndv, engine, sizeof engine);
        progress_done(size, cfg.iters[k]);
        print_row(&cfg, k, t, engine);
      }
    } else {
      double t = bw_size(&r, k);
      /* Rank 1 received the data: it names the engine. */
      if (g_rank == 1) {
        last_engine(ep, size, rndv, engine, sizeof engine);
        post_send(ep, engine, sizeof engine, r.peer, TAG_ENGINE, &req);
        wait_req(ep, &req, "send (engine name)", UINT64_MAX, false);
      } else {
        post_recv(ep, engine, sizeof engine, TAG_ENGINE, &req);
        wait_req(ep, &req, "receive (engine name)", sizeof engine, false);
        engine[sizeof engine - 1] = '\0';
        progress_done(size, cfg.iters[k]);
        print_row(&cfg, k, t, engine);
      }
    }
  }

  /* Good-bye: rank 1 leaves only once rank 0 has everything it needs. Rank 0
   * may close before its good-bye is read; rank 1 accepts that. */
  char bye[8];
  if (g_rank == 0) {
    post_send(ep, bye, 0, r.peer, TAG_BYE, &req);
    wait_req(ep, &req, "send (good-bye)", UINT64_MAX, false);
  } else {
    post_recv(ep, bye, 0, TAG_BYE, &req);
    wait_req(ep, &req, "receive (good-bye)", UINT64_MAX, true);
  }
  check(fmx_close_endpoint(ep), "fmx_close_endpoint");
  check(fmx_finalize(), "fmx_finalize");
  for (uint32_t j = 0; j < sslots; j++)
    free(r.sbuf[j]);
  for (uint32_t j = 0; j < rslots; j++)
    free(r.rbuf[j]);
  free(r.sbuf);
  free(r.rbuf);
  return 0;
}

static void pin(int core)
{
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0)
    die("cannot pin to core %d: %s", core, strerror(errno));
}

/* ---- the supervising parent --------------------------------------------- */

static int spawn_and_wait(void)
{
  int sv[2];
  pid_t pid[2] = {-1, -1}, parent = getpid();
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    die("socketpair: %s", strerror(errno));
  fflush(NULL);
  for (int r = 0; r < 2; r++) {
    pid[r] = fork();
    if (pid[r] < 0) {
      msg("fork: %s", strerror(errno));
      if (r == 1)
        kill(pid[0], SIGKILL);
      return 1;
    }
    if (pid[r] == 0) {
      g_rank = r;
      /* Die with the parent; check the parent did not already die. */
      if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(1);
      close(sv[1 - r]);
      pin(opt.cores[r]);
      exit(run_rank(sv[r]));
    }
  }
  close(sv[0]);
  close(sv[1]);

  int rc = 0, left = 2;
  while (left > 0) {
    int st;
    pid_t w = waitpid(-1, &st, 0);
    if (w < 0) {
      if (errno == EINTR)
        continue;
      msg("waitpid: %s", strerror(errno));
      return 1;
    }
    int r = w == pid[0] ? 0 : w == pid[1] ? 1 : -1;
    if (r < 0)
      continue;
    left--;
    pid[r] = -1;
    bool ok = WIFEXITED(st) && WEXITSTATUS(st) == 0;
    if (ok)
      continue;
    if (rc != 0)
      continue; /* a consequence of the first failure, already reported */
    if (WIFSIGNALED(st))
      msg("rank %d (pid %d) killed by signal %d (%s)", r, (int)w, WTERMSIG(st),
          strsignal(WTERMSIG(st)));
    else
      msg("rank %d (pid %d) exited with status %d", r, (int)w, WEXITSTATUS(st));
    rc = 1;
    if (pid[1 - r] > 0)
      kill(pid[1 - r], SIGKILL); /* no point in letting it time out */
  }
  return rc;
}

int main(int argc, char **argv)
{
  parse_args(argc, argv);
  g_tty = isatty(STDERR_FILENO);
  if (opt.engine && setenv("FMX_BULK", opt.engine, 1) != 0)
    die("setenv: %s", strerror(errno));
  if (opt.no_spawn) {
    g_rank = opt.rank;
    if (opt.cores[0] >= 0)
      pin(opt.cores[g_rank]);
    return run_rank(-1);
  }
  return spawn_and_wait();
}
