/* SPDX-License-Identifier: MIT */
/* Offload channels (run under TSan too): two endpoints of one process, a
 * sending thread and a receiving thread, many rendezvous receives in flight
 * on few channels, for cma, ring and coop run (or helped) by channels; a
 * receive matched and moved by channels while the application computes; an
 * endpoint closed while channels are still copying into it; finalize and
 * init again. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "base/config.h"
#include "eps.h"
#include "fmx.h"

#define MSGS 24
#define OFFLOADED "large transfers (receives, ring sends) handed to an offload channel"

static fmx_endpoint_t a, b;
static fmx_endpoint_addr_t a_to_b;
static uint64_t sizes[MSGS];
static uint8_t *out[MSGS];

static uint8_t pat(int m, uint64_t k) { return (uint8_t)(m * 131 + k * 7 + (k >> 12)); }

/* Wait until r completes, successfully. */
static void wait_ok(fmx_endpoint_t e, fmx_request_t *r) {
  fmx_status_t st;
  uint32_t res = 0;
  while (!res) CHECK_EQ(fmx_wait(e, r, 10000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(st.code, FMX_SUCCESS);
}

static void *sender(void *arg) {
  (void)arg;
  fmx_request_t r[MSGS];
  for (int m = 0; m < MSGS; m++) {
    fmx_seg_t s = {out[m], sizes[m]};
    CHECK_EQ(fmx_isend(a, &s, 1, a_to_b, (uint64_t)m, NULL, &r[m]), FMX_SUCCESS);
  }
  for (int m = 0; m < MSGS; m++) wait_ok(a, &r[m]);
  return NULL;
}

/* Every receive posted first (so all are in flight at once), two segments
 * each, the odd ones half as long as the message (truncated). */
static void round_trip(const char *want_engine) {
  uint8_t *in[MSGS];
  fmx_request_t r[MSGS];
  for (int m = 0; m < MSGS; m++) {
    sizes[m] = (64u << 10) + (uint64_t)m * 177000;
    out[m] = malloc(sizes[m]);
    for (uint64_t k = 0; k < sizes[m]; k++) out[m][k] = pat(m, k);
    uint64_t room = m % 2 ? sizes[m] / 2 : sizes[m];
    in[m] = malloc(room + 64);
    memset(in[m], 0xee, room + 64);
    fmx_seg_t segs[2] = {{in[m], room / 3}, {in[m] + room / 3, room - room / 3}};
    CHECK_EQ(fmx_irecv(b, segs, 2, (uint64_t)m, ~0ull, NULL, &r[m]), FMX_SUCCESS);
  }
  pthread_t t;
  pthread_create(&t, NULL, sender, NULL);
  for (int m = 0; m < MSGS; m++) {
    fmx_status_t st;
    uint32_t res = 0;
    while (!res) CHECK_EQ(fmx_wait(b, &r[m], 10000, &st, &res), FMX_SUCCESS);
    uint64_t room = m % 2 ? sizes[m] / 2 : sizes[m];
    CHECK_EQ(st.code, m % 2 ? FMX_MESSAGE_TRUNCATED : FMX_SUCCESS);
    CHECK_EQ(st.xfer_length, room);
    uint64_t bad = 0;
    for (uint64_t k = 0; k < room; k++) bad += in[m][k] != pat(m, k);
    for (uint64_t k = room; k < room + 64; k++) bad += in[m][k] != 0xee;
    CHECK_EQ(bad, 0);
    free(in[m]);
  }
  pthread_join(t, NULL);
  for (int m = 0; m < MSGS; m++) free(out[m]);
  char engine[32] = "";
  CHECK_EQ(fmx_get_info(b, FMX_INFO_LAST_BULK_ENGINE, NULL, 0, engine, sizeof engine), FMX_SUCCESS);
  int ok = want_engine ? strcmp(engine, want_engine) == 0 : strstr(engine, "+offload") != NULL;
  if (!ok) fprintf(stderr, "engine %s, expected %s\n", engine, want_engine ? want_engine : "*+offload");
  CHECK(ok);
}

static void open_pair(void) {
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 42, NULL, 0, &a), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 43, NULL, 0, &b), FMX_SUCCESS);
  uint32_t eb;
  fmx_get_info(b, FMX_INFO_ENDPOINT_ID, NULL, 0, &eb, sizeof eb);
  CHECK_EQ(fmx_connect(a, FMX_ANY_NIC, eb, 43, 5000, &a_to_b), FMX_SUCCESS);
}

static void close_pair(void) {
  CHECK_EQ(fmx_close_endpoint(a), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(b), FMX_SUCCESS);
}

/* A 16 MiB message: the sender's bytes (pattern `seed`), the receiver's
 * zeroed buffer. */
struct big {
  uint64_t len;
  int seed;
  uint8_t *s, *d;
  fmx_seg_t ss, ds;
};

static void big_init(struct big *m, int seed) {
  m->len = 16u << 20;
  m->seed = seed;
  m->s = malloc(m->len);
  m->d = calloc(1, m->len);
  for (uint64_t k = 0; k < m->len; k++) m->s[k] = pat(seed, k);
  m->ss = (fmx_seg_t){m->s, m->len};
  m->ds = (fmx_seg_t){m->d, m->len};
}

/* Every byte arrived; frees the buffers. */
static void big_check_free(struct big *m) {
  uint64_t bad = 0;
  for (uint64_t k = 0; k < m->len; k++) bad += m->d[k] != pat(m->seed, k);
  CHECK_EQ(bad, 0);
  free(m->s);
  free(m->d);
}

/* "Compute" for a second (no call into fmx), then find r complete at the
 * first look: a channel moved it meanwhile. */
static void compute_then_find_done(fmx_endpoint_t e, fmx_request_t *r) {
  struct timespec ts = {1, 0};
  nanosleep(&ts, NULL);
  fmx_status_t st;
  uint32_t res = 0;
  CHECK_EQ(fmx_test(e, r, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_SUCCESS);
}

static void *send_one(void *arg) {
  fmx_seg_t *s = arg;
  fmx_request_t r;
  CHECK_EQ(fmx_isend(a, s, 1, a_to_b, 5, NULL, &r), FMX_SUCCESS);
  wait_ok(a, &r);
  return NULL;
}

/* Automatic selection, a large receive posted, then the application
 * "computes" (sleeps, no fmx call): channel 0 matches the RTS and a channel
 * moves the whole message meanwhile, so the first call afterwards finds it
 * complete. */
static void channel_matches_while_computing(void) {
  config_set("FMX_BULK", "auto", "environment");
  config_set("FMX_OFFLOAD", "auto", "environment");
  config_set("FMX_OFFLOAD_THRESHOLD", "1M", "environment");
  config_set("FMX_CHUNK_MAX", "1M", "environment");
  open_pair();
  struct big m;
  big_init(&m, 3);
  fmx_request_t rr;
  CHECK_EQ(fmx_irecv(b, &m.ds, 1, 5, ~0ull, NULL, &rr), FMX_SUCCESS);
  pthread_t t;
  pthread_create(&t, NULL, send_one, &m.ss);
  compute_then_find_done(b, &rr);
  CHECK_EQ(counter_of(b, OFFLOADED), 1);
  CHECK_EQ(counter_of(b, "bytes offload channels copied"), m.len);
  pthread_join(t, NULL);
  big_check_free(&m);
  close_pair();
}

static void *send_then_compute(void *arg) {
  fmx_seg_t *s = arg;
  fmx_request_t r;
  CHECK_EQ(fmx_isend(a, s, 1, a_to_b, 6, NULL, &r), FMX_SUCCESS);
  compute_then_find_done(a, &r); /* a channel filled the ring for us */
  return NULL;
}

/* The receiver polls with fmx_test: a waiter would make progress on the
 * sending endpoint of its own process itself (wait.c), as a receiver in
 * another process cannot. */
static void test_until_done(fmx_endpoint_t e, fmx_request_t *r) {
  fmx_status_t st;
  uint32_t res = 0;
  time_t t0 = time(NULL);
  while (!res && time(NULL) - t0 < 20) {
    CHECK_EQ(fmx_test(e, r, &st, &res), FMX_SUCCESS);
    sched_yield();
  }
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_SUCCESS);
}

/* The sending side: ring (CMA off), the receiver polls, the sender computes
 * right after fmx_isend: channel 0 takes the CTS and a channel fills the
 * slots, so the receive completes while the sender is away. */
static void channel_sends_while_computing(void) {
  config_set("FMX_BULK", "auto", "environment");
  config_set("FMX_CMA", "0", "environment");
  config_set("FMX_OFFLOAD_THRESHOLD", "1M", "environment");
  open_pair();
  struct big m;
  big_init(&m, 4);
  fmx_request_t rr;
  CHECK_EQ(fmx_irecv(b, &m.ds, 1, 6, ~0ull, NULL, &rr), FMX_SUCCESS);
  pthread_t t;
  pthread_create(&t, NULL, send_then_compute, &m.ss);
  test_until_done(b, &rr);
  pthread_join(t, NULL);
  big_check_free(&m);
  CHECK_EQ(counter_of(a, OFFLOADED), 1);
  CHECK(counter_of(a, "bytes offload channels copied") > 0);
  close_pair();
  config_set("FMX_CMA", "1", "environment");
}

/* The receiver closes while a channel copies 64 MiB into it in 4 KiB steps:
 * the close waits for the channel to let go (ASan/TSan see no access to
 * freed memory), the sender then fails instead of hanging. */
static void close_mid_transfer(void) {
  config_set("FMX_BULK", "offload", "environment");
  config_set("FMX_CHUNK_MAX", "4K", "environment");
  open_pair();
  uint64_t len = 64u << 20;
  uint8_t *s = calloc(1, len), *d = malloc(len);
  fmx_seg_t ss = {s, len}, ds = {d, len};
  fmx_request_t rr, sr;
  CHECK_EQ(fmx_irecv(b, &ds, 1, 9, ~0ull, NULL, &rr), FMX_SUCCESS);
  CHECK_EQ(fmx_isend(a, &ss, 1, a_to_b, 9, NULL, &sr), FMX_SUCCESS);
  uint32_t res = 0;
  fmx_status_t st;
  /* Until the RTS is matched and handed to a channel. */
  uint64_t off = 0;
  for (int i = 0; i < 2000 && !off; i++) {
    CHECK_EQ(fmx_test(b, &rr, &st, &res), FMX_SUCCESS);
    off = counter_of(b, OFFLOADED);
  }
  CHECK_EQ(off, 1);
  CHECK_EQ(res, 0); /* 64 MiB in 4 KiB steps: still moving */
  CHECK_EQ(fmx_close_endpoint(b), FMX_SUCCESS);
  free(d);
  res = 0;
  for (int i = 0; i < 100 && !res; i++) CHECK_EQ(fmx_wait(a, &sr, 100, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK(st.code != FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(a), FMX_SUCCESS);
  free(s);
}

int main(void) {
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  config_set("FMX_OFFLOAD_CHANNELS", "2", "environment");
  config_set("FMX_CHUNK_MAX", "64K", "environment");
  struct {
    const char *bulk, *offload, *cma, *engine;
  } cases[] = {
      {"offload", "auto", "1", "cma+offload"},
      {"offload", "auto", "0", "ring+offload"},
      {"ring", "on", "1", "ring+offload"},
      {"coop", "on", "1", NULL}, /* coop+offload, or cma+offload when the area was busy */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    config_set("FMX_BULK", cases[i].bulk, "environment");
    config_set("FMX_OFFLOAD", cases[i].offload, "environment");
    config_set("FMX_CMA", cases[i].cma, "environment");
    open_pair();
    round_trip(cases[i].engine);
    close_pair();
  }
  config_set("FMX_OFFLOAD", "auto", "environment");
  config_set("FMX_CMA", "1", "environment");
  channel_matches_while_computing();
  channel_sends_while_computing();
  close_mid_transfer();
  /* finalize joins the channels; after a new init they start again */
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  config_set("FMX_BULK", "offload", "environment");
  config_set("FMX_CHUNK_MAX", "64K", "environment");
  open_pair();
  round_trip("cma+offload");
  close_pair();
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_offload");
  return 0;
}
