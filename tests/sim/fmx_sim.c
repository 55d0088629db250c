/* SPDX-License-Identifier: MIT */
/*
 * fmx_sim: fmx's net protocol on a simulated switch (simnet.h), at more
 * senders than any machine here can host.
 *
 *   fmx_sim incast [--senders N] [--size S] [--msgs M] [--inflight K]
 *                  [--rate-gbps G] [--buffer B] [--delay-us D] [--mtu U]
 *                  [--rcvbuf B] [--loss-ppm P] [--seed X] [--max-steps T]
 *
 * Hosts 1..N each send M messages of S bytes to host 0, K in flight each,
 * all from time 0; host 0 keeps up to 256 receives posted. Prints one JSON
 * line: the virtual time it took, the goodput and its share of host 0's
 * port, the frames the port dropped, the library's resends, each
 * message's completion time (from its post to its receive) at p50, p99
 * and max, the heap the connections took, and the wall time. Exit 0 when
 * every message arrived intact, 1 otherwise (or on a bad option: 2).
 */
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "base/counters.h"
#include "fmx.h"
#include "simnet.h"

#define KEY 0x51a
#define RX_POSTED 256

static struct opts {
  uint32_t senders, msgs, inflight;
  uint64_t size;
  uint64_t max_steps;
} O = {.senders = 100, .msgs = 4, .inflight = 0, .size = 65536, .max_steps = 50000000};

struct sender {
  fmx_endpoint_addr_t to;
  uint32_t posted, done, failed;
  fmx_request_t req[64];
  uint32_t slot_msg[64];
};

static struct run {
  fmx_endpoint_t *ep;
  struct sender *s;
  uint8_t *txbuf, *rxbuf;
  fmx_request_t rx[RX_POSTED];
  uint64_t *posted_at; /* [sender * msgs + msg] */
  uint64_t *lat;       /* completion times, in the order they came */
  uint64_t received, rx_posted, bad, failed;
} R;

static void fill(uint8_t *b, uint64_t n, uint64_t tag) {
  for (uint64_t i = 0; i < n; i++) b[i] = (uint8_t)(tag * 131 + i * 7);
}

static void post_send(uint32_t h, uint32_t slot) {
  struct sender *s = &R.s[h];
  uint32_t m = s->posted++;
  uint64_t tag = (uint64_t)h << 32 | m;
  fmx_seg_t seg = {R.txbuf + (uint64_t)(h - 1) * O.size, (uint32_t)O.size};
  R.posted_at[(uint64_t)(h - 1) * O.msgs + m] = sim_now();
  s->slot_msg[slot] = m;
  if (fmx_isend(R.ep[h], &seg, 1, s->to, tag, (void *)(uintptr_t)slot, &s->req[slot]) != FMX_SUCCESS) {
    s->req[slot] = NULL;
    s->failed++;
  }
}

static void post_recv(uint32_t slot) {
  fmx_seg_t seg = {R.rxbuf + (uint64_t)slot * O.size, (uint32_t)O.size};
  if (fmx_irecv(R.ep[0], &seg, 1, 0, 0, (void *)(uintptr_t)slot, &R.rx[slot]) != FMX_SUCCESS) R.rx[slot] = NULL;
  else R.rx_posted++;
}

/* What completed on host h (one pass and its finished requests, each
 * naming its slot in its context): check and count, post the next. */
static void on_progress(uint32_t h, void *arg) {
  (void)arg;
  fmx_status_t st[64];
  uint32_t n = 0;
  static uint8_t want[1 << 16];
  uint64_t total = (uint64_t)O.senders * O.msgs;
  if (fmx_test_some(R.ep[h], st, 64, &n) != FMX_SUCCESS) return;
  for (uint32_t j = 0; j < n; j++) {
    uint32_t slot = (uint32_t)(uintptr_t)st[j].context;
    if (h == 0) {
      R.rx[slot] = NULL;
      uint32_t from = (uint32_t)(st[j].match_info >> 32), m = (uint32_t)st[j].match_info;
      uint64_t len = O.size < sizeof want ? O.size : sizeof want;
      if (st[j].code != FMX_SUCCESS) {
        R.failed++;
      } else {
        fill(want, len, from);
        if (from < 1 || from > O.senders || m >= O.msgs || st[j].xfer_length != O.size ||
            memcmp(R.rxbuf + (uint64_t)slot * O.size, want, len))
          R.bad++;
        else
          R.lat[R.received++] = sim_now() - R.posted_at[(uint64_t)(from - 1) * O.msgs + m];
      }
      if (R.rx_posted < total) post_recv(slot);
      continue;
    }
    struct sender *s = &R.s[h];
    s->req[slot] = NULL;
    if (st[j].code == FMX_SUCCESS) s->done++;
    else s->failed++;
    if (s->posted < O.msgs) post_send(h, slot);
  }
  if (h == 0) sim_wait(0, R.received + R.failed + R.bad < total);
  else sim_wait(h, R.s[h].done + R.s[h].failed < O.msgs);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static double pct(uint64_t n, double p) { return n ? R.lat[(uint64_t)((double)(n - 1) * p)] / 1000.0 : 0; }

int main(int argc, char **argv) {
  struct sim_cfg c = {.rate_bps = 10000000000ull, .buffer = 128 * 1024, .delay_ns = 2000, .mtu = 1500,
                      .rcvbuf = 8u << 20, .seed = 1};
  if (argc < 2 || strcmp(argv[1], "incast") != 0) {
    fprintf(stderr, "usage: fmx_sim incast [--senders N] [--size S] [--msgs M] [--inflight K] [--rate-gbps G] "
                    "[--buffer B] [--delay-us D] [--mtu U] [--rcvbuf B] [--loss-ppm P] [--seed X] [--max-steps T]\n");
    return 2;
  }
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *o = argv[i];
    uint64_t v = strtoull(argv[i + 1], NULL, 0);
    if (!strcmp(o, "--senders")) O.senders = (uint32_t)v;
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
    else {
      fprintf(stderr, "fmx_sim: unknown option %s\n", o);
      return 2;
    }
  }
  if (!O.inflight || O.inflight > O.msgs) O.inflight = O.msgs;
  if (!O.senders || O.senders > 60000 || !O.msgs || O.inflight > 64 || !O.size || O.size > (64u << 20) ||
      !c.rate_bps || c.mtu < 576 || c.mtu > 9000 || !c.buffer || !c.rcvbuf) {
    fprintf(stderr, "fmx_sim: an option is out of range (senders 1-60000, inflight 1-64, size 1-64M, "
                    "mtu 576-9000, rate, buffer and rcvbuf above 0)\n");
    return 2;
  }
  c.hosts = O.senders + 1;
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  R.ep = calloc(c.hosts, sizeof *R.ep);
  R.s = calloc(c.hosts, sizeof *R.s);
  R.txbuf = malloc(O.senders * O.size);
  R.rxbuf = malloc(RX_POSTED * O.size);
  R.posted_at = calloc((uint64_t)O.senders * O.msgs, sizeof *R.posted_at);
  R.lat = calloc((uint64_t)O.senders * O.msgs, sizeof *R.lat);
  if (!R.ep || !R.s || !R.txbuf || !R.rxbuf || !R.posted_at || !R.lat || sim_init(&c) < 0 || fmx_init() != FMX_SUCCESS) {
    fprintf(stderr, "fmx_sim: setting up failed\n");
    return 1;
  }
  for (uint32_t h = 1; h <= O.senders; h++) fill(R.txbuf + (uint64_t)(h - 1) * O.size, O.size, h);
  for (uint32_t h = 0; h < c.hosts; h++) {
    fmx_return_t rc = sim_open(h, KEY, &R.ep[h]);
    if (rc != FMX_SUCCESS) {
      fprintf(stderr, "fmx_sim: host %u: %s\n", h, fmx_strerror(rc));
      return 1;
    }
  }
  struct timespec w0, w1;
  clock_gettime(CLOCK_MONOTONIC, &w0);
  size_t heap0 = mallinfo2().uordblks;
  uint64_t t0 = sim_now();
  sim_set_hook(on_progress, NULL);
  for (uint32_t i = 0; i < RX_POSTED && R.rx_posted < (uint64_t)O.senders * O.msgs; i++) post_recv(i);
  sim_kick(0);
  sim_wait(0, 1);
  for (uint32_t h = 1; h <= O.senders; h++) {
    if (fmx_connect_async(R.ep[h], sim_nic(), 0, KEY, 60000, &R.s[h].to) != FMX_SUCCESS) {
      fprintf(stderr, "fmx_sim: host %u: connect failed\n", h);
      return 1;
    }
    for (uint32_t k = 0; k < O.inflight; k++) post_send(h, k);
    sim_kick(h);
    sim_wait(h, 1);
  }
  uint64_t total = (uint64_t)O.senders * O.msgs, sent_failed = 0;
  while (R.received + R.failed + R.bad < total && sim_stats()->steps < O.max_steps && sim_step()) {
  }
  uint64_t t1 = sim_now();
  size_t heap1 = mallinfo2().uordblks;
  uint64_t resent = 0, gap = 0, reasked = 0, cuts = 0, tails = 0;
  for (uint32_t h = 0; h < c.hosts; h++) {
    uint64_t v[CNT_MAX];
    if (fmx_get_info(R.ep[h], FMX_INFO_COUNTER_VALUES, NULL, 0, v, sizeof v) != FMX_SUCCESS) continue;
    resent += v[CNT_NET_RESENT], gap += v[CNT_NET_GAP_RESENT], reasked += v[CNT_NET_PULL_REASKED];
    cuts += v[CNT_NET_GRANT_CUTS], tails += v[CNT_NET_GRANT_TAILS];
    if (h) sent_failed += R.s[h].failed;
  }
  clock_gettime(CLOCK_MONOTONIC, &w1);
  const struct sim_stats *st = sim_stats();
  qsort(R.lat, R.received, sizeof *R.lat, cmp_u64);
  double us = (double)(t1 - t0) / 1000.0, bits = (double)R.received * (double)O.size * 8;
  int ok = R.received == total && !R.bad && !R.failed && !sent_failed;
  printf("{\"mode\":\"incast\",\"senders\":%u,\"size\":%" PRIu64 ",\"msgs\":%u,\"inflight\":%u,"
         "\"rate_gbps\":%.1f,\"buffer\":%u,\"delay_us\":%.1f,\"mtu\":%u,\"loss_ppm\":%u,\"seed\":%" PRIu64 ","
         "\"complete\":%s,\"received\":%" PRIu64 ",\"bad\":%" PRIu64 ",\"failed\":%" PRIu64 ","
         "\"virtual_us\":%.1f,\"goodput_gbps\":%.3f,\"port_share\":%.3f,"
         "\"frames\":%" PRIu64 ",\"port_drops\":%" PRIu64 ",\"sock_drops\":%" PRIu64 ",\"lost\":%" PRIu64
         ",\"max_queue\":%" PRIu64 ",\"resent\":%" PRIu64 ",\"gap_resent\":%" PRIu64 ",\"pull_reasked\":%" PRIu64
         ",\"grant_cuts\":%" PRIu64 ",\"grant_tails\":%" PRIu64 ","
         "\"lat_p50_us\":%.1f,\"lat_p99_us\":%.1f,\"lat_max_us\":%.1f,"
         "\"heap_per_conn\":%.0f,\"sleeps_out\":%" PRIu64 ",\"steps\":%" PRIu64 ",\"progress_calls\":%" PRIu64 ",\"wall_s\":%.2f}\n",
         O.senders, O.size, O.msgs, O.inflight, (double)c.rate_bps / 1e9, c.buffer, c.delay_ns / 1000.0, c.mtu,
         c.loss_ppm, c.seed, ok ? "true" : "false", R.received, R.bad, R.failed + sent_failed, us,
         us > 0 ? bits / us / 1000.0 : 0, us > 0 ? bits / us / 1000.0 / ((double)c.rate_bps / 1e9) : 0, st->frames,
         st->port_drops, st->sock_drops, st->lost, st->max_queue, resent, gap, reasked, cuts, tails,
         pct(R.received, 0.5), pct(R.received, 0.99), pct(R.received, 1.0),
         ((double)heap1 - (double)heap0) / O.senders, st->sleeps_out, st->steps, st->progress_calls,
         (double)(w1.tv_sec - w0.tv_sec) + (double)(w1.tv_nsec - w0.tv_nsec) / 1e9);
  sim_fini();
  fmx_finalize();
  free(R.ep), free(R.s), free(R.txbuf), free(R.rxbuf), free(R.posted_at), free(R.lat);
  return ok ? 0 : 1;
}
