/* SPDX-License-Identifier: MIT */
/* The public API on one endpoint talking to itself: classes, truncation,
 * cancel, forget, probe, test_any, peek, bad arguments, wakeup. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fmx.h"

static fmx_endpoint_t ep;
static fmx_endpoint_addr_t me;
static uint32_t my_eid;

static void fill(uint8_t *b, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(i * 31 + seed);
}

/* Send n bytes to self, receive into a buffer of m bytes; check status. */
static void roundtrip(size_t n, size_t m, int sync) {
  uint8_t *s = malloc(n + 1), *r = malloc(m + 64);
  fill(s, n, (unsigned)n);
  memset(r, 0xee, m + 64);
  fmx_seg_t ss = {s, n}, rs = {r, m};
  fmx_request_t sr, rr;
  CHECK_EQ(fmx_irecv(ep, &rs, 1, 0x77, ~0ull, (void *)0x1234, &rr), FMX_SUCCESS);
  CHECK_EQ((sync ? fmx_issend : fmx_isend)(ep, &ss, 1, me, 0x77, NULL, &sr), FMX_SUCCESS);
  fmx_status_t st;
  uint32_t res;
  CHECK_EQ(fmx_wait(ep, &rr, 10000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK(rr == NULL);
  size_t x = n < m ? n : m;
  CHECK_EQ(st.code, n > m ? FMX_MESSAGE_TRUNCATED : FMX_SUCCESS);
  CHECK_EQ(st.msg_length, n);
  CHECK_EQ(st.xfer_length, x);
  CHECK_EQ(st.match_info, 0x77);
  CHECK(st.context == (void *)0x1234);
  for (size_t i = 0; i < x; i++) CHECK_EQ(r[i], (uint8_t)(i * 31 + n));
  for (size_t i = x; i < m + 64; i++) CHECK_EQ(r[i], 0xee); /* nothing past what fits */
  CHECK_EQ(fmx_wait(ep, &sr, 10000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_SUCCESS);
  free(s);
  free(r);
}

static void test_classes_and_truncation(void) {
  size_t sizes[] = {0, 1, 24, 25, 128, 4096, 16383, 16384, 100000, 5u << 20};
  for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
    roundtrip(sizes[i], sizes[i], 0);
    roundtrip(sizes[i], sizes[i] / 2, 0);
    roundtrip(sizes[i], sizes[i] + 10, 1);
  }
}

static void test_segments(void) {
  enum { N = 256 };
  static uint8_t src[N * 37], dst[N * 37 + 5];
  fmx_seg_t ss[N], rs[3];
  fill(src, sizeof src, 9);
  for (int i = 0; i < N; i++) ss[i] = (fmx_seg_t){src + i * 37, 37};
  rs[0] = (fmx_seg_t){dst, 1000};
  rs[1] = (fmx_seg_t){NULL, 0};
  rs[2] = (fmx_seg_t){dst + 1000, sizeof dst - 1000};
  for (int big = 0; big < 2; big++) {
    memset(dst, 0, sizeof dst);
    fmx_request_t sr, rr;
    CHECK_EQ(fmx_irecv(ep, rs, 3, 5, ~0ull, NULL, &rr), FMX_SUCCESS);
    CHECK_EQ((big ? fmx_issend : fmx_isend)(ep, ss, N, me, 5, NULL, &sr), FMX_SUCCESS);
    fmx_status_t st;
    uint32_t res;
    CHECK_EQ(fmx_wait(ep, &rr, 10000, &st, &res), FMX_SUCCESS);
    CHECK_EQ(res, 1);
    CHECK_EQ(st.xfer_length, sizeof src);
    CHECK(memcmp(src, dst, sizeof src) == 0);
    CHECK_EQ(fmx_wait(ep, &sr, 10000, &st, &res), FMX_SUCCESS);
  }
  fmx_request_t r;
  fmx_seg_t many[FMX_MAX_SEGMENTS + 1];
  memset(many, 0, sizeof many);
  CHECK_EQ(fmx_isend(ep, many, FMX_MAX_SEGMENTS + 1, me, 0, NULL, &r), FMX_SEGMENTS_BAD_COUNT);
  /* Memory that cannot exist is a bad address, refused before anything
   * is queued (issue 12: a NULL segment gave "Bad segment count"; two of
   * 2^63 bytes wrapped to a 0-byte message delivered as a success). */
  CHECK_EQ(fmx_irecv(ep, NULL, 2, 0, 0, NULL, &r), FMX_BAD_ADDRESS);
  fmx_seg_t nullseg = {NULL, 10};
  CHECK_EQ(fmx_isend(ep, &nullseg, 1, me, 0, NULL, &r), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_irecv(ep, &nullseg, 1, 0, 0, NULL, &r), FMX_BAD_ADDRESS);
  static char buf[16];
  fmx_seg_t wrap[2] = {{buf, (size_t)1 << 63}, {buf, (size_t)1 << 63}};
  CHECK_EQ(fmx_isend(ep, wrap, 2, me, 0, NULL, &r), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_irecv(ep, wrap, 2, 0, 0, NULL, &r), FMX_BAD_ADDRESS);
  fmx_seg_t third[3] = {{buf, (size_t)3 << 61}, {buf, (size_t)3 << 61}, {buf, (size_t)3 << 61}};
  CHECK_EQ(fmx_isend(ep, third, 3, me, 0, NULL, &r), FMX_BAD_ADDRESS);
  fmx_seg_t past_end = {(void *)(UINTPTR_MAX - 8), 64};
  CHECK_EQ(fmx_isend(ep, &past_end, 1, me, 0, NULL, &r), FMX_BAD_ADDRESS);
  fmx_seg_t empty_null = {NULL, 0}; /* a zero-length segment may point anywhere */
  CHECK_EQ(fmx_isend(ep, &empty_null, 1, me, 0x77, NULL, &r), FMX_SUCCESS);
  fmx_request_t rr;
  CHECK_EQ(fmx_irecv(ep, NULL, 0, 0x77, FMX_MATCH_MASK_NONE, NULL, &rr), FMX_SUCCESS);
  fmx_status_t st;
  uint32_t res;
  CHECK_EQ(fmx_wait(ep, &rr, 10000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(st.code, FMX_SUCCESS);
  CHECK_EQ(fmx_wait(ep, &r, 10000, &st, &res), FMX_SUCCESS);
}

static void test_unexpected_probe_order(void) {
  /* Three messages arrive before any receive: probe, then receive in order. */
  uint32_t vals[3] = {10, 20, 30};
  fmx_request_t sr[3];
  for (int i = 0; i < 3; i++) {
    fmx_seg_t s = {&vals[i], sizeof vals[i]};
    CHECK_EQ(fmx_isend(ep, &s, 1, me, 0xab00 + (uint64_t)(i == 1), NULL, &sr[i]), FMX_SUCCESS);
  }
  fmx_status_t st;
  uint32_t res;
  CHECK_EQ(fmx_iprobe(ep, 0xab01, ~0ull, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.match_info, 0xab01);
  CHECK_EQ(st.msg_length, 4);
  CHECK_EQ(fmx_iprobe(ep, 0xcd00, ~0ull, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  CHECK_EQ(fmx_probe(ep, 10, 0xcd00, ~0ull, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0); /* timed out */
  CHECK_EQ(fmx_iprobe(ep, 1, 0, &st, &res), FMX_BAD_MATCH_MASK);
  uint32_t got[3];
  for (int i = 0; i < 3; i++) {
    fmx_seg_t r = {&got[i], 4};
    fmx_request_t rr;
    CHECK_EQ(fmx_irecv(ep, &r, 1, 0xab00, 0xff00, NULL, &rr), FMX_SUCCESS);
    CHECK_EQ(fmx_wait(ep, &rr, 1000, &st, &res), FMX_SUCCESS);
    CHECK_EQ(res, 1);
  }
  CHECK_EQ(got[0], 10);
  CHECK_EQ(got[1], 20);
  CHECK_EQ(got[2], 30);
  for (int i = 0; i < 3; i++) CHECK_EQ(fmx_wait(ep, &sr[i], 1000, &st, &res), FMX_SUCCESS);
}

static void test_cancel_forget_any_peek(void) {
  char b[8];
  fmx_seg_t s = {b, sizeof b};
  fmx_request_t r, r2;
  uint32_t res;
  fmx_status_t st;
  CHECK_EQ(fmx_irecv(ep, &s, 1, 0x55, ~0ull, NULL, &r), FMX_SUCCESS);
  CHECK_EQ(fmx_cancel(ep, &r, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK(r == NULL);
  /* the cancelled receive must not take this message */
  CHECK_EQ(fmx_isend(ep, &s, 1, me, 0x55, NULL, &r2), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(ep, &r2, 1000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(fmx_iprobe(ep, 0x55, ~0ull, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  /* a send cannot be cancelled */
  CHECK_EQ(fmx_issend(ep, &s, 1, me, 0x66, NULL, &r2), FMX_SUCCESS);
  CHECK_EQ(fmx_cancel(ep, &r2, &res), FMX_BAD_REQUEST);
  /* forget it, then receive both messages: nothing is reported for it */
  CHECK_EQ(fmx_forget(ep, &r2), FMX_SUCCESS);
  CHECK(r2 == NULL);
  CHECK_EQ(fmx_irecv(ep, &s, 1, 0x66, ~0ull, (void *)7, &r), FMX_SUCCESS);
  void *ctx = NULL;
  CHECK_EQ(fmx_context(&r, &ctx), FMX_SUCCESS);
  CHECK(ctx == (void *)7);
  CHECK_EQ(fmx_wait_any(ep, 1000, 0x66, ~0ull, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.match_info, 0x66);
  CHECK(st.context == (void *)7);
  CHECK_EQ(fmx_test_any(ep, 0x66, ~0ull, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0); /* the forgotten send never shows */
  CHECK_EQ(fmx_irecv(ep, &s, 1, 0x55, ~0ull, NULL, &r), FMX_SUCCESS);
  fmx_request_t pk = NULL;
  CHECK_EQ(fmx_peek(ep, 1000, &pk, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK(pk == r);
  CHECK_EQ(fmx_test(ep, &pk, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(fmx_ipeek(ep, &pk, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  /* a freed request is refused, not dereferenced blindly */
  fmx_request_t stale = r;
  CHECK_EQ(fmx_test(ep, &stale, &st, &res), FMX_BAD_REQUEST);
}

static void *waker(void *arg) {
  struct timespec ts = {0, 50 * 1000 * 1000};
  nanosleep(&ts, NULL);
  fmx_wakeup(ep);
  return arg;
}

static void test_wakeup_and_bad_args(void) {
  char b[4];
  fmx_seg_t s = {b, 4};
  fmx_request_t r;
  fmx_status_t st;
  uint32_t res = 9;
  CHECK_EQ(fmx_irecv(ep, &s, 1, 0x999, ~0ull, NULL, &r), FMX_SUCCESS);
  pthread_t t;
  pthread_create(&t, NULL, waker, NULL);
  CHECK_EQ(fmx_wait(ep, &r, FMX_TIMEOUT_INFINITE, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0); /* woken, not completed */
  pthread_join(t, NULL);
  CHECK_EQ(fmx_cancel(ep, &r, &res), FMX_SUCCESS);
  CHECK_EQ(fmx_irecv(ep, &s, 1, 0x1, 0x0, NULL, &r), FMX_BAD_MATCH_MASK);
  fmx_endpoint_addr_t bogus = {{0xdeadbeefull << 32, 0}};
  CHECK_EQ(fmx_isend(ep, &s, 1, bogus, 0, NULL, &r), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_isend(NULL, &s, 1, me, 0, NULL, &r), FMX_BAD_ENDPOINT);
  fmx_endpoint_addr_t a;
  CHECK_EQ(fmx_connect(ep, FMX_ANY_NIC, my_eid, 0xbad, 100, &a), FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY);
  /* Another host's board: nobody answers for it (FMX_TIMEOUT), or this
   * endpoint has no net transport (no Ethernet interface, FMX_NET=off). */
  fmx_return_t nrc = fmx_connect(ep, 0x123456, 1, 1, 100, &a);
  CHECK(nrc == FMX_TIMEOUT || nrc == FMX_NIC_ID_NOT_FOUND);
  CHECK_EQ(fmx_connect(ep, 1ull << 48, 1, 1, 100, &a), FMX_NIC_ID_NOT_FOUND); /* beyond 48 bits */
  CHECK_EQ(fmx_get_info(ep, 9999, NULL, 0, b, 4), FMX_BAD_INFO_KEY);
  uint64_t thr = 0;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_RNDV_THRESHOLD, NULL, 0, &thr, 4), FMX_BAD_INFO_LENGTH);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_RNDV_THRESHOLD, NULL, 0, &thr, 8), FMX_SUCCESS);
  CHECK(thr > 0);
  CHECK(strcmp(fmx_strerror(FMX_MESSAGE_TRUNCATED), "Message truncated") == 0);
  CHECK(fmx_strerror((fmx_return_t)12345) != NULL);
  uint64_t nic, host;
  uint32_t eid;
  fmx_decompose_endpoint_addr(me, &nic, &eid);
  CHECK_EQ(eid, my_eid);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_NIC_ID, NULL, 0, &host, sizeof host), FMX_SUCCESS);
  CHECK_EQ(nic, host);
}

/* The self transport's queue holds what an shm pool lends (64 x 16K here):
 * 600 unexpected sends of 4K to ourselves fill it; the rest wait in order
 * and arrive as receives drain it. */
static void test_self_queue_full(void) {
  enum { N = 600, L = 4096 };
  static uint8_t src[N][L], dst[N][L];
  fmx_request_t sr[N], rr;
  fmx_status_t st;
  uint32_t res;
  for (int i = 0; i < N; i++) {
    fill(src[i], L, (unsigned)i);
    fmx_seg_t s = {src[i], L};
    CHECK_EQ(fmx_isend(ep, &s, 1, me, 0x5e1f, NULL, &sr[i]), FMX_SUCCESS);
  }
  for (int i = 0; i < N; i++) {
    fmx_seg_t d = {dst[i], L};
    CHECK_EQ(fmx_irecv(ep, &d, 1, 0x5e1f, ~0ull, NULL, &rr), FMX_SUCCESS);
    CHECK_EQ(fmx_wait(ep, &rr, 10000, &st, &res), FMX_SUCCESS);
    CHECK_EQ(res, 1);
    CHECK_EQ(st.code, FMX_SUCCESS);
    CHECK(memcmp(src[i], dst[i], L) == 0); /* in send order */
  }
  for (int i = 0; i < N; i++) {
    CHECK_EQ(fmx_wait(ep, &sr[i], 10000, &st, &res), FMX_SUCCESS);
    CHECK_EQ(res, 1);
  }
}

/* A thread asleep in fmx_wait on a rendezvous to ourselves that another
 * thread sends: it completes (the copy is one plain copy by whoever
 * progresses, the sleeper is woken). */
static uint8_t *big_dst;
static void *self_big_receiver(void *arg) {
  (void)arg;
  fmx_seg_t d = {big_dst, 6u << 20};
  fmx_request_t rr;
  fmx_status_t st;
  uint32_t res = 0;
  CHECK_EQ(fmx_irecv(ep, &d, 1, 0xb16, ~0ull, NULL, &rr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(ep, &rr, 20000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_SUCCESS);
  CHECK_EQ(st.xfer_length, 6u << 20);
  return NULL;
}

static void test_self_rendezvous_between_threads(void) {
  uint8_t *src = malloc(6u << 20);
  big_dst = calloc(1, 6u << 20);
  fill(src, 6u << 20, 3);
  pthread_t t;
  pthread_create(&t, NULL, self_big_receiver, NULL);
  struct timespec nap = {0, 50 * 1000 * 1000}; /* the receiver goes to sleep */
  nanosleep(&nap, NULL);
  fmx_seg_t s = {src, 6u << 20};
  fmx_request_t sr;
  fmx_status_t st;
  uint32_t res = 0;
  CHECK_EQ(fmx_isend(ep, &s, 1, me, 0xb16, NULL, &sr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(ep, &sr, 20000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  pthread_join(t, NULL);
  CHECK(memcmp(src, big_dst, 6u << 20) == 0);
  free(src);
  free(big_dst);
}

static void test_context_ids(void) {
  fmx_endpoint_t e2;
  fmx_endpoint_param_t p = {.key = FMX_PARAM_CONTEXT_ID, .val.context_id = {4, 60}};
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 3, &p, 1, &e2), FMX_SUCCESS);
  char b[4];
  fmx_seg_t s = {b, 4};
  fmx_request_t r;
  CHECK_EQ(fmx_irecv(e2, &s, 1, 0, 0xff, NULL, &r), FMX_BAD_MATCHING_FOR_CONTEXT_ID_MASK);
  CHECK_EQ(fmx_irecv(e2, &s, 1, 0x1ull << 60, 0xfull << 60, NULL, &r), FMX_SUCCESS);
  uint32_t res;
  CHECK_EQ(fmx_cancel(e2, &r, &res), FMX_SUCCESS);
  fmx_endpoint_param_t bad = {.key = FMX_PARAM_CONTEXT_ID, .val.context_id = {17, 0}};
  fmx_endpoint_t e3;
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 3, &bad, 1, &e3), FMX_ENDPOINT_PARAM_BAD_VALUE);
  fmx_endpoint_param_t badkey = {.key = 77};
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 3, &badkey, 1, &e3), FMX_ENDPOINT_PARAM_BAD_KEY);
  CHECK_EQ(fmx_open_endpoint(5, FMX_ANY_ENDPOINT, 3, NULL, 0, &e3), FMX_BOARD_NOT_FOUND);
  CHECK_EQ(fmx_close_endpoint(e2), FMX_SUCCESS);
}

/* The introspection keys that fmx_info uses: counts, items in range, bad
 * lengths and indexes refused. */
static void test_introspection(void) {
  uint32_t n = 0, i;
  char name[32];
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_ENGINE_COUNT, NULL, 0, &n, sizeof n), FMX_SUCCESS);
  CHECK(n >= 2);
  for (i = 0; i < n; i++) {
    CHECK_EQ(fmx_get_info(NULL, FMX_INFO_ENGINE_NAME, &i, sizeof i, name, sizeof name), FMX_SUCCESS);
    CHECK(name[0] != '\0');
  }
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_ENGINE_NAME, &i, sizeof i, name, sizeof name), FMX_BAD_INFO_KEY);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_ENGINE_NAME, NULL, 0, name, sizeof name), FMX_BAD_INFO_LENGTH);
  i = 0;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_ENGINE_NAME, &i, sizeof i, NULL, 0), FMX_BAD_INFO_LENGTH);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_CONFIG_COUNT, NULL, 0, &n, sizeof n), FMX_SUCCESS);
  CHECK(n >= 20);
  int found = 0;
  for (i = 0; i < n; i++) {
    fmx_config_item_t it;
    CHECK_EQ(fmx_get_info(NULL, FMX_INFO_CONFIG_ITEM, &i, sizeof i, &it, sizeof it), FMX_SUCCESS);
    CHECK(!strncmp(it.name, "FMX_", 4) && it.source[0] && it.doc[0]);
    if (!strcmp(it.name, "FMX_RNDV_THRESHOLD")) found = 1;
  }
  CHECK(found);
  fmx_config_item_t it;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_CONFIG_ITEM, &n, sizeof n, &it, sizeof it), FMX_BAD_INFO_KEY);
  i = 0;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_CONFIG_ITEM, &i, sizeof i, &it, sizeof it - 1), FMX_BAD_INFO_LENGTH);
  fmx_topology_t t;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_TOPOLOGY, NULL, 0, &t, sizeof t), FMX_SUCCESS);
  CHECK(t.npus >= 1 && t.numa_nodes >= 1 && t.source[0]);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_TOPOLOGY, NULL, 0, &t, 8), FMX_BAD_INFO_LENGTH);

  /* What two CPUs share, in cost-spec names; bad input refused. */
  int32_t cores[2] = {0, 0};
  char level[16];
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_CORES_SHARE, cores, sizeof cores, level, sizeof level), FMX_SUCCESS);
  CHECK(strcmp(level, "CPU") == 0 || strcmp(level, "L1") == 0 || strcmp(level, "L2") == 0 || strcmp(level, "L3") == 0 ||
        strcmp(level, "NUMA") == 0);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_CORES_SHARE, cores, 4, level, sizeof level), FMX_BAD_INFO_LENGTH);
  cores[1] = -1;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_CORES_SHARE, cores, sizeof cores, level, sizeof level), FMX_BAD_INFO_KEY);

  /* The cost model: 2 us + 1 MiB at 1000 MB/s; the second line from 4 MiB;
   * the entry of the nearest level when the asked one is missing. */
  fmx_cost_query_t q;
  double us = 0;
  memset(&q, 0, sizeof q);
  snprintf(q.spec, sizeof q.spec, "L3:2:1000;L3@4194304:0:500;NUMA:10:100");
  snprintf(q.level, sizeof q.level, "L3");
  q.len = 1000000;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COST_TIME, &q, sizeof q, &us, sizeof us), FMX_SUCCESS);
  CHECK(us > 1001.9 && us < 1002.1);
  q.len = 5000000;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COST_TIME, &q, sizeof q, &us, sizeof us), FMX_SUCCESS);
  CHECK(us > 9999.9 && us < 10000.1);
  snprintf(q.level, sizeof q.level, "L2");
  q.len = 1000000;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COST_TIME, &q, sizeof q, &us, sizeof us), FMX_SUCCESS);
  CHECK(us > 1001.9 && us < 1002.1);
  const char *bad[] = {"", "L3", "L3:1", "L3:1:0", "L3:-1:100", "XX:1:100", "L3:1:100;junk", "L3:1:100x"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    snprintf(q.spec, sizeof q.spec, "%s", bad[k]);
    snprintf(q.level, sizeof q.level, "L3");
    CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COST_TIME, &q, sizeof q, &us, sizeof us), FMX_SUCCESS);
    CHECK(us < 0);
  }
  snprintf(q.spec, sizeof q.spec, "L3:1:100");
  snprintf(q.level, sizeof q.level, "L9");
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COST_TIME, &q, sizeof q, &us, sizeof us), FMX_SUCCESS);
  CHECK(us < 0);
  memset(q.level, 'A', sizeof q.level); /* not NUL-terminated */
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COST_TIME, &q, sizeof q, &us, sizeof us), FMX_BAD_INFO_LENGTH);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COST_TIME, &q, sizeof q - 1, &us, sizeof us), FMX_BAD_INFO_LENGTH);

  /* The copy routines: each usable one copies. */
  uint32_t nrt = 0;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COPY_ROUTINE_COUNT, NULL, 0, &nrt, sizeof nrt), FMX_SUCCESS);
  CHECK(nrt >= 1);
  static char src[1 << 16], dst[1 << 16];
  for (uint32_t k = 0; k < nrt; k++) {
    fmx_copy_routine_t rt;
    CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COPY_ROUTINE, &k, sizeof k, &rt, sizeof rt), FMX_SUCCESS);
    CHECK(rt.name[0] && rt.copy);
    if (!rt.usable) continue;
    for (size_t b = 0; b < sizeof src; b++) src[b] = (char)(b * 7 + k);
    memset(dst, 0, sizeof dst);
    rt.copy(dst, src, sizeof src);
    CHECK(memcmp(dst, src, sizeof src) == 0);
  }
  fmx_copy_routine_t rt;
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COPY_ROUTINE, &nrt, sizeof nrt, &rt, sizeof rt), FMX_BAD_INFO_KEY);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_COPY_ROUTINE, NULL, 0, &rt, sizeof rt), FMX_BAD_INFO_LENGTH);
}

/* FMX_INFO_PEER_SESSION: the session of the endpoint an address names, as
 * the endpoint that gave the address knows it; another endpoint's address
 * is refused, and so is one whose partner index and generation are ours
 * but whose board and id are not (what another endpoint's may hold). */
static void test_peer_session(void) {
  fmx_endpoint_t other;
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 0xfeed, NULL, 0, &other), FMX_SUCCESS);
  fmx_endpoint_addr_t other_self, to_other;
  uint32_t mine = 0, theirs = 0, via = 0, x = 0, oid = 0;
  CHECK_EQ(fmx_get_endpoint_addr(other, &other_self), FMX_SUCCESS);
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_PEER_SESSION, &me, sizeof me, &mine, sizeof mine), FMX_SUCCESS);
  CHECK_EQ(fmx_get_info(other, FMX_INFO_PEER_SESSION, &other_self, sizeof other_self, &theirs, sizeof theirs),
           FMX_SUCCESS);
  CHECK_EQ(fmx_get_info(other, FMX_INFO_ENDPOINT_ID, NULL, 0, &oid, sizeof oid), FMX_SUCCESS);
  CHECK_EQ(fmx_connect(ep, FMX_ANY_NIC, oid, 0xfeed, 1000, &to_other), FMX_SUCCESS);
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_PEER_SESSION, &to_other, sizeof to_other, &via, sizeof via), FMX_SUCCESS);
  CHECK_EQ(via, theirs);
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_PEER_SESSION, &other_self, sizeof other_self, &x, sizeof x), FMX_BAD_ADDRESS);
  fmx_endpoint_addr_t forged = me;
  forged.opaque[1] ^= 1ull << 48; /* another endpoint id */
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_PEER_SESSION, &forged, sizeof forged, &x, sizeof x), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_PEER_SESSION, &me, sizeof me - 1, &x, sizeof x), FMX_BAD_INFO_LENGTH);
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_PEER_SESSION, NULL, 0, &x, sizeof x), FMX_BAD_INFO_LENGTH);
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_PEER_SESSION, &me, sizeof me, &x, 2), FMX_BAD_INFO_LENGTH);
  CHECK_EQ(fmx_get_info(NULL, FMX_INFO_PEER_SESSION, &me, sizeof me, &x, sizeof x), FMX_BAD_ENDPOINT);
  CHECK_EQ(fmx_close_endpoint(other), FMX_SUCCESS);
}

int main(void) {
  fmx_endpoint_t tmp;
  CHECK_EQ(fmx_open_endpoint(0, 0, 1, NULL, 0, &tmp), FMX_NOT_INITIALIZED);
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  CHECK_EQ(fmx_init(), FMX_ALREADY_INITIALIZED);
  test_introspection();
  /* endpoint ids are per user and host: pick a free one, remember it */
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 0xfeed, NULL, 0, &ep), FMX_SUCCESS);
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_ENDPOINT_ID, NULL, 0, &my_eid, sizeof my_eid), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, my_eid, 0xfeed, NULL, 0, &tmp), FMX_BUSY);
  CHECK_EQ(fmx_connect(ep, FMX_ANY_NIC, my_eid, 0xfeed, 1000, &me), FMX_SUCCESS);
  fmx_endpoint_addr_t me2;
  fmx_get_endpoint_addr(ep, &me2);
  CHECK(memcmp(&me, &me2, sizeof me) == 0);
  test_classes_and_truncation();
  test_segments();
  test_unexpected_probe_order();
  test_cancel_forget_any_peek();
  test_wakeup_and_bad_args();
  test_self_queue_full();
  test_self_rendezvous_between_threads();
  test_context_ids();
  test_peer_session();
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_EQ(fmx_finalize(), FMX_NOT_INITIALIZED);
  CHECK_DONE("test_api");
  return 0;
}
