/* SPDX-License-Identifier: MIT */
/* fmx_set_unexp_handler between two endpoints of one process (shared
 * memory): the handler sees each tagged message no receive takes, once,
 * before it is queued; it may post a receive that takes the message, data
 * and all (eager, medium, rendezvous); an answer that is neither CONTINUE
 * nor FINISHED keeps the message; untagged messages pass it by; inside it
 * no wait blocks (an infinite one returns) and closing, disconnecting and
 * connecting are refused; another thread that probes meanwhile waits its
 * turn (TSan). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eps.h"
#include "fmx.h"
#include "pattern.h"

static fmx_endpoint_t r, a;
static fmx_endpoint_addr_t a_to_r, r_to_a;
static const size_t sizes[] = {0, 8, 65536, 1u << 20};

static struct {
  int answer;          /* what the handler returns */
  int post;            /* post a receive into buf first */
  int misuse;          /* try what is refused inside it */
  unsigned calls; /* atomic: the handler runs on whichever thread made the progress */
  uint64_t match, len;
  fmx_endpoint_addr_t src;
  uint8_t *buf;
  fmx_request_t req;
} h;

static fmx_unexp_action_t handler(void *ctx, fmx_endpoint_addr_t src, uint64_t match, uint64_t len,
                                  const void *data) {
  CHECK(ctx == &h);
  (void)data;
  __atomic_add_fetch(&h.calls, 1, __ATOMIC_RELEASE);
  h.match = match, h.len = len, h.src = src;
  if (h.misuse) {
    CHECK_EQ(fmx_close_endpoint(r), FMX_BAD_ENDPOINT);
    CHECK_EQ(fmx_disconnect(r, r_to_a), FMX_BAD_ENDPOINT);
    fmx_endpoint_addr_t x;
    CHECK_EQ(fmx_connect(r, FMX_ANY_NIC, eid_of(a), 7, 1000, &x), FMX_BAD_ENDPOINT);
    /* A wait makes no progress here: even an infinite one returns. */
    fmx_request_t w;
    uint8_t b[8];
    fmx_seg_t s = {b, sizeof b};
    CHECK_EQ(fmx_irecv(r, &s, 1, 0x5a5a, ~0ull, NULL, &w), FMX_SUCCESS);
    fmx_status_t st;
    uint32_t res = 1;
    CHECK_EQ(fmx_wait(r, &w, FMX_TIMEOUT_INFINITE, &st, &res), FMX_SUCCESS);
    CHECK_EQ(res, 0);
    CHECK_EQ(fmx_cancel(r, &w, &res), FMX_SUCCESS);
    CHECK_EQ(res, 1);
  }
  if (h.post) {
    fmx_seg_t s = {h.buf, len};
    CHECK_EQ(fmx_irecv(r, &s, 1, match, ~0ull, NULL, &h.req), FMX_SUCCESS);
  }
  return (fmx_unexp_action_t)h.answer;
}

static unsigned calls_now(void) { return __atomic_load_n(&h.calls, __ATOMIC_ACQUIRE); }

/* Progress r until the handler ran `calls` times (bounded). */
static void progress_until(unsigned calls) {
  for (int i = 0; i < 2000000 && calls_now() < calls; i++) {
    uint32_t res;
    CHECK_EQ(fmx_iprobe(r, 0, 0, NULL, &res), FMX_SUCCESS);
  }
  CHECK_EQ(calls_now(), calls);
}

/* The handler posts the receive: it takes the message, every byte. */
static void test_post_in_handler(void) {
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    uint8_t *s = malloc(n + 1);
    h.buf = malloc(n + 1);
    fill(s, n, (unsigned)k);
    memset(h.buf, 0, n + 1);
    h.post = 1, h.answer = FMX_UNEXP_CONTINUE;
    unsigned before = calls_now();
    fmx_seg_t seg = {s, n};
    fmx_request_t sq;
    CHECK_EQ(fmx_isend(a, &seg, 1, a_to_r, 0x100 + k, NULL, &sq), FMX_SUCCESS);
    progress_until(before + 1);
    CHECK_EQ(h.match, 0x100 + k);
    CHECK_EQ(h.len, n);
    CHECK(memcmp(&h.src, &r_to_a, sizeof h.src) == 0);
    fmx_status_t st = wait_done(r, &h.req);
    CHECK_EQ(st.code, FMX_SUCCESS);
    CHECK_EQ(st.xfer_length, n);
    check_fill(h.buf, n, (unsigned)k);
    st = wait_done(a, &sq);
    CHECK_EQ(st.code, FMX_SUCCESS);
    free(s);
    free(h.buf);
  }
  h.post = 0;
}

/* 42 is no answer: the message is kept, a receive gets it; misuse inside
 * the handler is refused; untagged messages are not shown. */
static void test_odd_answer_misuse_untagged(void) {
  h.answer = 42, h.misuse = 1;
  unsigned before = calls_now();
  uint8_t s[100], d[100];
  fill(s, sizeof s, 9);
  fmx_seg_t seg = {s, sizeof s}, ds = {d, sizeof d};
  fmx_request_t sq, rq;
  CHECK_EQ(fmx_isend(a, &seg, 1, a_to_r, 0x200, NULL, &sq), FMX_SUCCESS);
  progress_until(before + 1);
  h.misuse = 0;
  CHECK_EQ(fmx_irecv(r, &ds, 1, 0x200, ~0ull, NULL, &rq), FMX_SUCCESS);
  fmx_status_t st = wait_done(r, &rq);
  CHECK_EQ(st.xfer_length, sizeof d);
  check_fill(d, sizeof d, 9);
  wait_done(a, &sq);
  /* untagged */
  h.answer = FMX_UNEXP_FINISHED;
  CHECK_EQ(fmx_isendx(a, &seg, 1, a_to_r, 0, 0, FMX_MSG_UNTAGGED, NULL, &sq), FMX_SUCCESS);
  wait_done(a, &sq);
  CHECK_EQ(fmx_irecvx(r, &ds, 1, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &rq), FMX_SUCCESS);
  st = wait_done(r, &rq);
  CHECK_EQ(st.xfer_length, sizeof d);
  CHECK_EQ(calls_now(), before + 1);
}

/* Another thread probes r all along while messages arrive and the
 * handler drops them: it waits its turn (the lock is the handler's). */
static int stop;
static void *prober(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000000 && !__atomic_load_n(&stop, __ATOMIC_ACQUIRE); i++) {
    uint32_t res;
    CHECK_EQ(fmx_iprobe(r, 0, 0, NULL, &res), FMX_SUCCESS);
  }
  return NULL;
}

static void test_other_thread(void) {
  h.answer = FMX_UNEXP_FINISHED;
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, prober, NULL), 0);
  uint8_t s[64];
  fill(s, sizeof s, 1);
  fmx_seg_t seg = {s, sizeof s};
  unsigned before = calls_now();
  for (int i = 0; i < 200; i++) {
    fmx_request_t sq;
    CHECK_EQ(fmx_isend(a, &seg, 1, a_to_r, 0x300 + (uint64_t)i, NULL, &sq), FMX_SUCCESS);
    wait_done(a, &sq);
    progress_until(before + 1 + (unsigned)i);
  }
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  uint32_t res = 1;
  CHECK_EQ(fmx_iprobe(r, 0, 0, NULL, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0); /* all dropped */
}

int main(void) {
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  r = open_ep(FMX_ANY_ENDPOINT, 7);
  a = open_ep(FMX_ANY_ENDPOINT, 7);
  a_to_r = connect_to(a, r, 7);
  r_to_a = connect_to(r, a, 7);
  CHECK_EQ(fmx_set_unexp_handler(NULL, handler, &h), FMX_BAD_ENDPOINT);
  CHECK_EQ(fmx_set_unexp_handler(r, handler, &h), FMX_SUCCESS);
  test_post_in_handler();
  test_odd_answer_misuse_untagged();
  test_other_thread();
  CHECK(counter_of(r, "messages shown to the unexpected-message handler") == calls_now());
  CHECK_EQ(fmx_set_unexp_handler(r, NULL, NULL), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(a), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(r), FMX_SUCCESS);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_unexp_handler");
  return 0;
}
