/* SPDX-License-Identifier: MIT */
/*
 * fmx_sim: fmx's net protocol on a simulated switch (simnet.h), at more
 * hosts than any machine here can hold.
 *
 *   fmx_sim incast|alltoall [--hosts N] [--size S] [--msgs M] [--inflight K]
 *           [--rate-gbps G] [--buffer B] [--delay-us D] [--mtu U]
 *           [--rcvbuf B] [--loss-ppm P] [--seed X] [--max-steps T] [--close 1]
 *
 * incast: hosts 1..N-1 each send M messages of S bytes to host 0.
 * alltoall: every host sends M messages of S bytes to every other one,
 * host h to h+1, h+2, ... in turn (MPI's pairwise order).
 * Each host keeps K sends in flight (1-64, default 64) and up to 256
 * receives posted; all start at time 0. A run stops when every message is
 * in, after --max-steps steps, or once waiters slept 100 s of virtual
 * time with nothing due (a stall: "sleeps_out"). Prints one JSON line: the
 * virtual time it took, the goodput and its share of the ports that
 * received, the frames the ports dropped, the most bytes a port held and
 * the bytes queued ahead that half and 99% of the frames a port took
 * found at most (queue_p50, queue_p99), the library's resends, each
 * message's completion time (from its post to its receive) at p50, p99
 * and max, the heap the run grew by per host and per partner (less what
 * the packet pools grew by: heap_per_partner), the wall time. Exit 0 when
 * every message arrived intact, 1 otherwise, 2 on a bad option. --close 1
 * closes every endpoint before exiting (the close path, run on virtual
 * time: simnet.c); by default the process exits with them open.
 */
#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include "base/counters.h"
#include "fmx.h"
#include "simnet.h"

#define KEY 0x51a
#define RX_POSTED 256
#define TX_MAX 64
#define MAX_SLEEPS 10000 /* 100 s of virtual time */
/* Descriptors an endpoint holds here: the socket that holds its id
 * (with FMX_SHM=0 no memfds, watcher or pool; the wire's stand-in is one
 * descriptor for all, simnet). */
#define SIM_FDS_PER_HOST 1

static struct opts {
  int alltoall, close;
  uint32_t hosts, msgs, inflight;
  uint64_t size, max_steps;
} O = {.hosts = 101, .msgs = 4, .inflight = TX_MAX, .size = 65536, .max_steps = 50000000};

struct host {
  uint64_t next, sends;   /* the next of its sends to post, how many it makes */
  uint64_t base;          /* where its sends' post times start in R.posted_at */
  uint64_t done, failed;  /* its sends */
  uint64_t expect, got;   /* messages it receives */
  uint64_t rx_posted;
  fmx_request_t tx[TX_MAX], rx[RX_POSTED];
  uint8_t *rxbuf;
};

static struct run {
  fmx_endpoint_t *ep;
  struct host *h;
  fmx_endpoint_addr_t *addr; /* [src * hosts + dst] (incast: [src]), once connected */
  uint8_t *connected;
  uint8_t *txbuf;
  uint64_t *posted_at; /* [host's base + its send number] */
  uint64_t *lat;
  uint64_t nlat, bad, failed, total;
} R;

/* Send j of host h: to whom (its message j / (hosts - 1) to that peer). */
static uint32_t dst_of(uint32_t h, uint64_t j) { return O.alltoall ? (uint32_t)((h + 1 + j % (O.hosts - 1)) % O.hosts) : 0; }

/* Sender h's bytes: each 8-byte word a mix of h and its offset, so that a
 * block placed at a wrong offset, or another sender's, shows. */
static uint64_t word(uint64_t h, uint64_t i) {
  uint64_t z = (h << 40) ^ i ^ 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 31)) * 0xbf58476d1ce4e5b9ull;
  return z ^ (z >> 29);
}

static void fill(uint8_t *b, uint64_t n, uint64_t h) {
  for (uint64_t i = 0; i < n; i += 8) {
    uint64_t w = word(h, i / 8);
    memcpy(b + i, &w, n - i < 8 ? n - i : 8);
  }
}

static int same(const uint8_t *b, uint64_t n, uint64_t h) {
  for (uint64_t i = 0; i < n; i += 8) {
    uint64_t w = word(h, i / 8);
    if (memcmp(b + i, &w, n - i < 8 ? n - i : 8)) return 0;
  }
  return 1;
}

static int post_send(uint32_t h, uint32_t slot) {
  struct host *x = &R.h[h];
  uint64_t j = x->next++;
  uint32_t d = dst_of(h, j);
  uint64_t k = O.alltoall ? (uint64_t)h * O.hosts + d : h; /* incast: one peer each */
  if (!R.connected[k]) {
    if (fmx_connect_async(R.ep[h], sim_nic(), d, KEY, 60000, &R.addr[k]) != FMX_SUCCESS) return -1;
    R.connected[k] = 1;
  }
  fmx_seg_t seg = {R.txbuf + (uint64_t)h * O.size, (uint32_t)O.size};
  R.posted_at[x->base + j] = sim_now();
  /* match: sender, its send number */
  if (fmx_isend(R.ep[h], &seg, 1, R.addr[k], (uint64_t)h << 40 | j, (void *)(uintptr_t)slot, &x->tx[slot]) !=
      FMX_SUCCESS)
    return -1;
  return 0;
}

static void post_recv(uint32_t h, uint32_t slot) {
  struct host *x = &R.h[h];
  fmx_seg_t seg = {x->rxbuf + (uint64_t)slot * O.size, (uint32_t)O.size};
  if (fmx_irecv(R.ep[h], &seg, 1, 0, 0, (void *)(uintptr_t)(RX_POSTED + slot), &x->rx[slot]) == FMX_SUCCESS)
    x->rx_posted++;
}

static void received(uint32_t h, const fmx_status_t *st, uint32_t slot) {
  struct host *x = &R.h[h];
  uint32_t from = (uint32_t)(st->match_info >> 40);
  uint64_t j = st->match_info & ((1ull << 40) - 1);
  x->got++;
  if (st->code != FMX_SUCCESS) {
    R.failed++;
  } else {
    if (from >= O.hosts || j >= R.h[from].sends || dst_of(from, j) != h || st->xfer_length != O.size ||
        !same(x->rxbuf + (uint64_t)slot * O.size, O.size, from))
      R.bad++;
    else
      R.lat[R.nlat++] = sim_now() - R.posted_at[R.h[from].base + j];
  }
  if (x->rx_posted < x->expect) post_recv(h, slot);
}

/* What completed on host h (one pass and its finished requests, each
 * naming its slot in its context): check and count, post the next. */
static void on_progress(uint32_t h, void *arg) {
  (void)arg;
  struct host *x = &R.h[h];
  fmx_status_t st[64];
  uint32_t n = 0;
  if (fmx_test_some(R.ep[h], st, 64, &n) != FMX_SUCCESS) return;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t slot = (uint32_t)(uintptr_t)st[i].context;
    if (slot >= RX_POSTED) {
      received(h, &st[i], slot - RX_POSTED);
      continue;
    }
    if (st[i].code == FMX_SUCCESS) x->done++;
    else x->failed++, R.failed++;
    if (x->next < x->sends && post_send(h, slot) < 0) x->failed++, R.failed++;
  }
  sim_wait(h, x->done + x->failed < x->sends || x->got < x->expect);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(double p) { return R.nlat ? R.lat[(uint64_t)((double)(R.nlat - 1) * p)] / 1000.0 : 0; }

static int usage(void) {
  fprintf(stderr, "usage: fmx_sim incast|alltoall [--hosts N] [--size S] [--msgs M] [--inflight K] [--rate-gbps G] "
                  "[--buffer B] [--delay-us D] [--mtu U] [--rcvbuf B] [--loss-ppm P] [--seed X] [--max-steps T] "
                  "[--close 1]\n"
                  "  hosts 2-60000 (alltoall: 20000), size 1-64M, inflight 1-64 (64), mtu 576-9000, loss-ppm "
                  "0-999999, seed not 0\n");
  return 2;
}

static int setup(struct sim_cfg *c) {
  uint32_t n = O.hosts;
  R.ep = calloc(n, sizeof *R.ep);
  R.h = calloc(n, sizeof *R.h);
  uint64_t pairs = O.alltoall ? (uint64_t)n * n : n;
  R.addr = calloc(pairs, sizeof *R.addr);
  R.connected = calloc(pairs, 1);
  R.txbuf = malloc((uint64_t)n * O.size);
  if (!R.ep || !R.h || !R.addr || !R.connected || !R.txbuf) return -1;
  for (uint32_t h = 0; h < n; h++) {
    struct host *x = &R.h[h];
    x->sends = O.alltoall ? (uint64_t)(n - 1) * O.msgs : h ? O.msgs : 0;
    x->expect = O.alltoall ? (uint64_t)(n - 1) * O.msgs : h ? 0 : (uint64_t)(n - 1) * O.msgs;
    x->base = h ? R.h[h - 1].base + R.h[h - 1].sends : 0;
    R.total += x->expect; /* as many as are sent */
    if (x->expect && !(x->rxbuf = malloc(RX_POSTED * O.size))) return -1;
    fill(R.txbuf + (uint64_t)h * O.size, O.size, h);
  }
  R.posted_at = calloc(R.total, sizeof *R.posted_at);
  R.lat = calloc(R.total, sizeof *R.lat);
  if (!R.posted_at || !R.lat || sim_init(c) < 0 || fmx_init() != FMX_SUCCESS) return -1;
  for (uint32_t h = 0; h < n; h++) {
    fmx_return_t rc = sim_open(h, KEY, &R.ep[h]);
    if (rc != FMX_SUCCESS) {
      fprintf(stderr, "fmx_sim: host %u: %s\n", h, fmx_strerror(rc));
      return -1;
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  struct sim_cfg c = {.rate_bps = 10000000000ull, .buffer = 128 * 1024, .delay_ns = 2000, .mtu = 1500,
                      .rcvbuf = 8u << 20, .seed = 1};
  if (argc < 2 || (strcmp(argv[1], "incast") != 0 && strcmp(argv[1], "alltoall") != 0)) return usage();
  O.alltoall = !strcmp(argv[1], "alltoall");
  for (int i = 2; i < argc; i += 2) {
    const char *o = argv[i];
    char *end = NULL;
    uint64_t v = i + 1 < argc ? strtoull(argv[i + 1], &end, 0) : 0;
    if (!end || *end || end == argv[i + 1]) {
      fprintf(stderr, "fmx_sim: %s wants a number\n", o);
      return usage();
    }
    int wide = !strcmp(o, "--size") || !strcmp(o, "--seed") || !strcmp(o, "--max-steps");
    if (!wide && v > 1000000000ull) {
      fprintf(stderr, "fmx_sim: %s %s is out of range\n", o, argv[i + 1]);
      return usage();
    }
    if (!strcmp(o, "--hosts")) O.hosts = (uint32_t)v;
    else if (!strcmp(o, "--size")) O.size = v;
    else if (!strcmp(o, "--msgs")) O.msgs = (uint32_t)v;
    else if (!strcmp(o, "--inflight")) O.inflight = (uint32_t)v;
    else if (!strcmp(o, "--rate-gbps")) c.rate_bps = v * 1000000000ull;
    else if (!strcmp(o, "--buffer")) c.buffer = (uint32_t)v;
    else if (!strcmp(o, "--delay-us")) c.delay_ns = v * 1000;
    else if (!strcmp(o, "--mtu")) c.mtu = (uint32_t)v;
    else if (!strcmp(o, "--rcvbuf")) c.rcvbuf = (uint32_t)v;
    else if (!strcmp(o, "--loss-ppm")) c.loss_ppm = (uint32_t)v;
    else if (!strcmp(o, "--seed")) c.seed = v;
    else if (!strcmp(o, "--max-steps")) O.max_steps = v;
    else if (!strcmp(o, "--close")) O.close = v != 0;
    else {
      fprintf(stderr, "fmx_sim: unknown option %s\n", o);
      return usage();
    }
  }
  if (O.hosts < 2 || O.hosts > 60000 || !O.msgs || O.msgs > 1000000 || !O.inflight || O.inflight > TX_MAX || !O.size ||
      O.size > (64u << 20) || !c.rate_bps || c.rate_bps > 1000000000000ull || c.mtu < 576 || c.mtu > 9000 ||
      !c.buffer || !c.rcvbuf || c.loss_ppm >= 1000000 || !O.max_steps || !c.seed)
    return usage();
  uint64_t rx = (O.alltoall ? O.hosts : 1ull) * RX_POSTED * O.size, tx = (uint64_t)O.hosts * O.size;
  if ((O.alltoall && O.hosts > 20000) || rx + tx > (8ull << 30)) {
    fprintf(stderr, "fmx_sim: too big a run for this tool (an alltoall of more than 20000 hosts, or more than 8 GiB "
                    "of buffers)\n");
    return 2;
  }
  c.hosts = O.hosts;
  /* A network namespace of our own (as root, or in a user namespace where
   * the kernel allows it): each endpoint still claims its id with an
   * abstract socket (the shm listener), and those are per namespace, so
   * that the hosts here take no id from fmx jobs or other runs. */
  if (unshare(CLONE_NEWNET) != 0 && unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0)
    fprintf(stderr, "fmx_sim: no network namespace of our own (%s): endpoint ids 0-%u must be free here\n",
            strerror(errno), O.hosts - 1);
  /* Each endpoint holds a descriptor (SIM_FDS_PER_HOST): raise the
   * soft limit to the hard one, and the hard one too where we may (root:
   * up to fs.nr_open). */
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rlim_t need = (rlim_t)O.hosts * SIM_FDS_PER_HOST + 64;
    if (rl.rlim_max < need) {
      struct rlimit up = {need, need};
      if (setrlimit(RLIMIT_NOFILE, &up) == 0) rl = up;
    }
    if (rl.rlim_cur < rl.rlim_max) {
      rl.rlim_cur = rl.rlim_max;
      setrlimit(RLIMIT_NOFILE, &rl);
    }
  }
  if (setup(&c) < 0) {
    fprintf(stderr, "fmx_sim: setting up failed\n");
    return 1;
  }
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  size_t heap0 = mallinfo2().uordblks;
  uint64_t pool0 = 0, pool1 = 0, pb;
  uint32_t np, partners = 0;
  for (uint32_t h = 0; h < O.hosts; h++) sim_memory(h, &pb, &np), pool0 += pb;
  uint64_t t0 = sim_now();
  sim_set_hook(on_progress, NULL);
  for (uint32_t h = 0; h < O.hosts; h++) {
    struct host *x = &R.h[h];
    for (uint32_t i = 0; i < RX_POSTED && x->rx_posted < x->expect; i++) post_recv(h, i);
    for (uint32_t i = 0; i < O.inflight && x->next < x->sends; i++)
      if (post_send(h, i) < 0) x->failed++, R.failed++;
    sim_kick(h);
    sim_wait(h, x->sends || x->expect);
  }
  while (R.nlat + R.bad + R.failed < R.total && sim_stats()->steps < O.max_steps &&
         sim_stats()->sleeps_out < MAX_SLEEPS && sim_step()) {
  }
  uint64_t t1 = sim_now();
  size_t heap1 = mallinfo2().uordblks;
  for (uint32_t h = 0; h < O.hosts; h++) sim_memory(h, &pb, &np), pool1 += pb, partners += np;
  uint64_t v[CNT_MAX], sum[CNT_MAX] = {0}, bdp = 0;
  for (uint32_t h = 0; h < O.hosts; h++)
    if (fmx_get_info(R.ep[h], FMX_INFO_COUNTER_VALUES, NULL, 0, v, sizeof v) == FMX_SUCCESS) {
      for (int i = 0; i < CNT_MAX; i++) sum[i] += v[i];
      if (v[CNT_NET_GRANT_BDP] > bdp) bdp = v[CNT_NET_GRANT_BDP]; /* the receivers' own measure, at the end */
    }
  clock_gettime(CLOCK_MONOTONIC, &w1);
  const struct sim_stats *st = sim_stats();
  qsort(R.lat, R.nlat, sizeof *R.lat, cmp_u64);
  uint32_t ports = O.alltoall ? O.hosts : 1;
  double us = (double)(t1 - t0) / 1000.0, gbps = us > 0 ? (double)R.nlat * (double)O.size * 8 / us / 1000.0 : 0;
  int ok = R.nlat == R.total && !R.bad && !R.failed;
  setvbuf(stdout, NULL, _IOLBF, 0);
  printf("{\"mode\":\"%s\",\"hosts\":%u,\"size\":%" PRIu64 ",\"msgs\":%u,\"inflight\":%u,\"rate_gbps\":%.1f,"
         "\"buffer\":%u,\"delay_us\":%.1f,\"mtu\":%u,\"loss_ppm\":%u,\"seed\":%" PRIu64 ",\"complete\":%s,"
         "\"messages\":%" PRIu64 ",\"received\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"failed\":%" PRIu64 ","
         "\"virtual_us\":%.1f,\"goodput_gbps\":%.3f,\"port_share\":%.3f,\"frames\":%" PRIu64
         ",\"port_drops\":%" PRIu64 ",\"sock_drops\":%" PRIu64 ",\"lost\":%" PRIu64 ",\"max_queue\":%" PRIu64
         ",\"bdp\":%" PRIu64 ",\"queue_p50\":%" PRIu64 ",\"queue_p99\":%" PRIu64 ",\"resent\":%" PRIu64 ",\"gap_resent\":%" PRIu64 ",\"pull_reasked\":%" PRIu64 ",\"grant_cuts\":%" PRIu64
         ",\"grant_tails\":%" PRIu64 ",\"paced\":%" PRIu64 ",\"early_resent\":%" PRIu64 ",\"cts_reasked\":%" PRIu64 ",\"pulls_early\":%" PRIu64 ",\"duplicates\":%" PRIu64 ",\"lat_p50_us\":%.1f,\"lat_p99_us\":%.1f,\"lat_max_us\":%.1f,"
         "\"heap_per_host\":%.0f,\"partners\":%u,\"pool_bytes\":%" PRIu64 ",\"heap_per_partner\":%.0f,\"sleeps_out\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"progress_calls\":%" PRIu64
         ",\"wall_s\":%.2f}\n",
         argv[1], O.hosts, O.size, O.msgs, O.inflight, (double)c.rate_bps / 1e9, c.buffer, c.delay_ns / 1000.0,
         c.mtu, c.loss_ppm, c.seed, ok ? "true" : "false", R.total, R.nlat, R.bad, R.failed, us, gbps,
         gbps / ports / ((double)c.rate_bps / 1e9), st->frames, st->port_drops, st->sock_drops, st->lost,
         st->max_queue, bdp, sim_queue_pct(0.5), sim_queue_pct(0.99), sum[CNT_NET_RESENT], sum[CNT_NET_GAP_RESENT], sum[CNT_NET_PULL_REASKED],
         sum[CNT_NET_GRANT_CUTS], sum[CNT_NET_GRANT_TAILS], sum[CNT_NET_PULL_PACED], sum[CNT_NET_EARLY_RESENT],
         sum[CNT_NET_PULL_CTS_ACKED], sum[CNT_NET_PULL_EARLY], sum[CNT_NET_DUPLICATES], pct(0.5), pct(0.99), pct(1.0),
         ((double)heap1 - (double)heap0) / O.hosts, partners, pool1,
         partners ? ((double)heap1 - (double)heap0 - ((double)pool1 - (double)pool0)) / partners : 0, st->sleeps_out, st->steps, st->progress_calls,
         (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9);
  if (O.close) { /* 1,000 endpoints take seconds to close, in virtual time that runs on */
    sim_fini();
    fmx_finalize();
  }
  for (uint32_t h = 0; h < O.hosts; h++) free(R.h[h].rxbuf);
  free(R.ep), free(R.h), free(R.addr), free(R.connected), free(R.txbuf), free(R.posted_at), free(R.lat);
  return ok ? 0 : 1;
}
