/* SPDX-License-Identifier: MIT */
/* Every call is thread-safe: threads share one endpoint and a pair of
 * endpoints, sending, receiving and waiting at once (run under TSan too),
 * with the automatic engine and each engine forced. The threads wait on the
 * receiving endpoint; a forced ring or vmsplice sender fills its slots only
 * when someone makes progress on the sending endpoint, which the waiter then
 * does (wait.c). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "fmx.h"

#define THREADS 4
#define ITERS 2000

static fmx_endpoint_t a, b;
static fmx_endpoint_addr_t a_to_b, b_to_a;

static void *worker(void *arg) {
  long id = (long)arg;
  for (int i = 0; i < ITERS; i++) {
    /* small eager, medium (eager in 8K fragments: between endpoints of one
     * process up to half the 64K ring) and rendezvous (main's settings) */
    size_t len = (i % 11 == 0) ? 100000 : (i % 7 == 0) ? 20000 : (size_t)(i % 300);
    static __thread uint8_t out[100000], in[100000];
    memset(out, (int)(id + i), len);
    fmx_seg_t so = {out, len}, si = {in, sizeof in};
    fmx_request_t sr, rr;
    uint64_t tag = ((uint64_t)id << 32) | (uint64_t)i;
    CHECK_EQ(fmx_irecv(b, &si, 1, tag, ~0ull, NULL, &rr), FMX_SUCCESS);
    CHECK_EQ(fmx_isend(a, &so, 1, a_to_b, tag, NULL, &sr), FMX_SUCCESS);
    fmx_status_t st;
    uint32_t res = 0;
    while (!res) CHECK_EQ(fmx_wait(b, &rr, 10000, &st, &res), FMX_SUCCESS);
    CHECK_EQ(st.xfer_length, len);
    for (size_t k = 0; k < len; k++) CHECK_EQ(in[k], (uint8_t)(id + i));
    res = 0;
    while (!res) CHECK_EQ(fmx_wait(a, &sr, 10000, &st, &res), FMX_SUCCESS);
  }
  return NULL;
}

static void *close_soon(void *arg) {
  struct timespec ts = {0, 2000000};
  nanosleep(&ts, NULL);
  CHECK_EQ(fmx_close_endpoint(*(fmx_endpoint_t *)arg), FMX_SUCCESS);
  return NULL;
}

/* The sending endpoint closes (another thread) mid-transfer while a thread
 * waits on the receiving endpoint, which makes progress on the sender
 * meanwhile: the receive completes (whole, or with the close's error),
 * nothing hangs, and the sanitizers see no access to the freed endpoint. */
static void close_sender_mid_transfer(void) {
  fmx_endpoint_t c, d;
  fmx_endpoint_addr_t c_to_d;
  uint32_t ed;
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 44, NULL, 0, &c), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 45, NULL, 0, &d), FMX_SUCCESS);
  fmx_get_info(d, FMX_INFO_ENDPOINT_ID, NULL, 0, &ed, sizeof ed);
  CHECK_EQ(fmx_connect(c, FMX_ANY_NIC, ed, 45, 5000, &c_to_d), FMX_SUCCESS);
  size_t len = 32u << 20;
  uint8_t *out = malloc(len), *in = malloc(len);
  CHECK(out && in);
  memset(out, 0x5a, len);
  fmx_seg_t so = {out, len}, si = {in, len};
  fmx_request_t sr, rr;
  CHECK_EQ(fmx_irecv(d, &si, 1, 7, ~0ull, NULL, &rr), FMX_SUCCESS);
  CHECK_EQ(fmx_isend(c, &so, 1, c_to_d, 7, NULL, &sr), FMX_SUCCESS);
  pthread_t t;
  pthread_create(&t, NULL, close_soon, &c);
  fmx_status_t st;
  uint32_t res = 0;
  CHECK_EQ(fmx_wait(d, &rr, 20000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK(st.code == FMX_SUCCESS || st.code == FMX_REMOTE_ENDPOINT_CLOSED);
  if (st.code == FMX_SUCCESS) CHECK(st.xfer_length == len && memcmp(in, out, len) == 0);
  pthread_join(t, NULL);
  CHECK_EQ(fmx_close_endpoint(d), FMX_SUCCESS);
  free(out);
  free(in);
}

static void run(const char *engine) {
  setenv("FMX_BULK", engine, 1);
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 42, NULL, 0, &a), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 43, NULL, 0, &b), FMX_SUCCESS);
  uint32_t ea, eb;
  fmx_get_info(a, FMX_INFO_ENDPOINT_ID, NULL, 0, &ea, sizeof ea);
  fmx_get_info(b, FMX_INFO_ENDPOINT_ID, NULL, 0, &eb, sizeof eb);
  CHECK_EQ(fmx_connect(a, FMX_ANY_NIC, eb, 43, 5000, &a_to_b), FMX_SUCCESS);
  CHECK_EQ(fmx_connect(b, FMX_ANY_NIC, ea, 42, 5000, &b_to_a), FMX_SUCCESS);
  /* connecting twice gives the same peer */
  fmx_endpoint_addr_t again;
  CHECK_EQ(fmx_connect(a, FMX_ANY_NIC, eb, 43, 5000, &again), FMX_SUCCESS);
  pthread_t t[THREADS];
  for (long i = 0; i < THREADS; i++) pthread_create(&t[i], NULL, worker, (void *)i);
  for (int i = 0; i < THREADS; i++) pthread_join(t[i], NULL);
  /* A message below the threshold but larger than the ring, waited for
   * on the receiving endpoint only: nobody would push the rest of it from
   * the sending endpoint, so between endpoints of one process it goes
   * rendezvous (cma needs nothing from the sender). */
  {
    static uint8_t big_out[200000], big_in[200000];
    memset(big_out, 0x77, sizeof big_out);
    fmx_seg_t so = {big_out, sizeof big_out}, si = {big_in, sizeof big_in};
    fmx_request_t sr, rr;
    fmx_status_t st;
    uint32_t res = 0;
    CHECK_EQ(fmx_irecv(b, &si, 1, 99, ~0ull, NULL, &rr), FMX_SUCCESS);
    CHECK_EQ(fmx_isend(a, &so, 1, a_to_b, 99, NULL, &sr), FMX_SUCCESS);
    CHECK_EQ(fmx_wait(b, &rr, 10000, &st, &res), FMX_SUCCESS);
    CHECK_EQ(res, 1);
    CHECK_EQ(st.xfer_length, sizeof big_in);
    CHECK(memcmp(big_in, big_out, sizeof big_in) == 0);
    res = 0;
    CHECK_EQ(fmx_wait(a, &sr, 10000, &st, &res), FMX_SUCCESS);
    CHECK_EQ(res, 1);
  }
  /* close one side: the other sees it closed */
  CHECK_EQ(fmx_close_endpoint(b), FMX_SUCCESS);
  char c = 0;
  fmx_seg_t s = {&c, 1};
  fmx_request_t r;
  fmx_status_t st;
  uint32_t res = 0;
  for (int i = 0; i < 100 && !res; i++) {
    CHECK_EQ(fmx_issend(a, &s, 1, a_to_b, 1, NULL, &r), FMX_SUCCESS);
    CHECK_EQ(fmx_wait(a, &r, 5000, &st, &res), FMX_SUCCESS);
  }
  CHECK_EQ(res, 1);
  CHECK(st.code == FMX_REMOTE_ENDPOINT_CLOSED);
  close_sender_mid_transfer();
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
}

int main(void) {
  setenv("FMX_RNDV_THRESHOLD", "256K", 1);
  setenv("FMX_RING_SIZE", "64K", 1);
  setenv("FMX_EAGER_FRAG", "8K", 1);
  static const char *const engines[] = {"auto", "ring", "vmsplice", "coop", "cma"};
  for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++) run(engines[i]);
  CHECK_DONE("test_threads");
  return 0;
}
