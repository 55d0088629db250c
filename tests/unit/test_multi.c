/* SPDX-License-Identifier: MIT */
/* Multi-receive buffers (fmx_irecv_multi): messages of every class land
 * one after the other at aligned offsets, whether they came before the
 * buffer was posted or after; each is a completion of its own; the
 * buffer's release comes after all of them, once the room left falls
 * below its minimum; what comes next waits for the next receive. Also:
 * truncation into the last bytes, the tagged space and match bits,
 * cancel, a directed buffer whose source goes, bad input. r receives
 * from a and b, endpoints of this process. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eps.h"
#include "pattern.h"
#include "fmx.h"

static fmx_endpoint_t r, a, b;
static fmx_endpoint_addr_t a_to_r, r_to_b;

/* tiny, small, medium, rendezvous (twice), in a mix */
static const size_t sizes[] = {0, 8, 3000, 65536, 1u << 20, 8, 70001, 1u << 20};
#define NMSG (sizeof sizes / sizeof *sizes)

static uint64_t align8(uint64_t x) { return (x + 7) & ~7ull; }

static void send_untagged(fmx_endpoint_t from, fmx_endpoint_addr_t to, uint8_t *s, size_t n, uint64_t k,
                          fmx_request_t *q) {
  fill(s, n, (unsigned)k);
  fmx_seg_t seg = {s, n};
  CHECK_EQ(fmx_isendx(from, &seg, 1, to, 0, k, FMX_MSG_UNTAGGED | FMX_MSG_DATA, NULL, q), FMX_SUCCESS);
}

/* Wait for one completion on r: a's sends complete on a, so everything
 * here is r's. a is progressed for its rendezvous sends. */
static fmx_status_t next_done(void) {
  fmx_status_t st;
  uint32_t res = 0;
  for (int i = 0; i < 2000000 && !res; i++) {
    fmx_progress(a);
    CHECK_EQ(fmx_test_any(r, 0, 0, &st, &res), FMX_SUCCESS);
  }
  CHECK_EQ(res, 1);
  return st;
}

static void test_classes(void) {
  uint64_t need = 0;
  for (size_t k = 0; k < NMSG; k++) need = align8(need + sizes[k]);
  const uint64_t min_free = 512 << 10, len = need + (100 << 10);
  uint8_t *buf = malloc(len), *s[NMSG + 1];
  memset(buf, 0, len);
  fmx_request_t sq[NMSG + 1], mq;
  int ctx;
  /* Half arrive before the buffer is posted (unexpected), half after. */
  for (size_t k = 0; k < NMSG / 2; k++) {
    s[k] = malloc(sizes[k] + 1);
    send_untagged(a, a_to_r, s[k], sizes[k], k, &sq[k]);
  }
  for (int i = 0; i < 200; i++) fmx_progress(r);
  CHECK_EQ(fmx_irecv_multi(r, buf, len, min_free, NULL, 0, 0, FMX_MSG_UNTAGGED, &ctx, &mq), FMX_SUCCESS);
  for (size_t k = NMSG / 2; k < NMSG; k++) {
    s[k] = malloc(sizes[k] + 1);
    send_untagged(a, a_to_r, s[k], sizes[k], k, &sq[k]);
  }
  /* One more, after the buffer is full: not for it. */
  s[NMSG] = malloc(16);
  send_untagged(a, a_to_r, s[NMSG], 16, 99, &sq[NMSG]);
  int seen[NMSG] = {0}, done = 0;
  uint64_t end_max = 0;
  for (size_t got = 0; got < NMSG + 1; got++) {
    fmx_status_t st = next_done();
    CHECK(st.context == &ctx);
    if (st.flags & FMX_MSG_MULTI_DONE) {
      CHECK_EQ(got, NMSG); /* after every message it took */
      CHECK_EQ(st.code, FMX_SUCCESS);
      CHECK(st.buffer == buf);
      CHECK_EQ(st.xfer_length, need);
      done = 1;
      continue;
    }
    CHECK_EQ(st.code, FMX_SUCCESS);
    CHECK(st.flags & FMX_MSG_MULTI);
    CHECK(st.flags & FMX_MSG_UNTAGGED);
    CHECK(st.flags & FMX_MSG_DATA);
    uint64_t k = st.data;
    CHECK(k < NMSG);
    if (k >= NMSG) continue;
    CHECK(!seen[k]);
    seen[k] = 1;
    CHECK_EQ(st.xfer_length, sizes[k]);
    uint8_t *at = st.buffer;
    CHECK(at >= buf && at + sizes[k] <= buf + len);
    CHECK_EQ(((uintptr_t)(at - buf)) % 8, 0);
    check_fill(at, sizes[k], (unsigned)k);
    if ((uint64_t)(at - buf) + sizes[k] > end_max) end_max = (uint64_t)(at - buf) + sizes[k];
  }
  CHECK(done);
  CHECK(end_max <= need);
  /* The 16 B message waits for the next receive. */
  uint8_t last[16];
  fmx_seg_t ls = {last, sizeof last};
  fmx_request_t lq;
  CHECK_EQ(fmx_irecvx(r, &ls, 1, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &lq), FMX_SUCCESS);
  fmx_status_t st = wait_done(r, &lq);
  CHECK_EQ(st.data, 99);
  check_fill(last, 16, 99);
  for (size_t k = 0; k <= NMSG; k++) {
    CHECK_EQ(wait_done(a, &sq[k]).code, FMX_SUCCESS);
    free(s[k]);
  }
  free(buf);
}

/* The last message is cut to the room left (truncated); the buffer,
 * with no room, is released. With min_free 0 it takes messages until
 * then. fmx_ipeek hands out a message's request, fmx_test reaps it. */
static void test_truncated(void) {
  uint8_t buf[100], s1[64], s2[200];
  fmx_request_t q1, q2, mq;
  CHECK_EQ(fmx_irecv_multi(r, buf, sizeof buf, 0, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &mq), FMX_SUCCESS);
  send_untagged(a, a_to_r, s1, sizeof s1, 1, &q1);
  send_untagged(a, a_to_r, s2, sizeof s2, 2, &q2);
  fmx_request_t got = NULL;
  uint32_t res = 0;
  CHECK_EQ(fmx_peek(r, 5000, &got, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  fmx_status_t st;
  CHECK_EQ(fmx_test(r, &got, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK(st.buffer == buf);
  CHECK_EQ(st.xfer_length, 64);
  st = next_done();
  CHECK_EQ(st.code, FMX_MESSAGE_TRUNCATED);
  CHECK(st.buffer == buf + 64);
  CHECK_EQ(st.msg_length, 200);
  CHECK_EQ(st.xfer_length, 36);
  check_fill(buf + 64, 36, 2);
  st = wait_done(r, &mq);
  CHECK_EQ(st.flags, FMX_MSG_MULTI_DONE);
  CHECK_EQ(st.xfer_length, 100);
  wait_done(a, &q1);
  wait_done(a, &q2);
}

/* A tagged buffer takes only what its match bits let through, and no
 * untagged message. */
static void test_tagged(void) {
  uint8_t buf[256], s[3][8], other[8];
  fmx_request_t q[3], mq, oq;
  CHECK_EQ(fmx_irecv_multi(r, buf, sizeof buf, 245, NULL, 0x100, 0xff00, 0, NULL, &mq), FMX_SUCCESS);
  fmx_seg_t s0 = {s[0], 8}, s1 = {s[1], 8}, s2 = {s[2], 8};
  fill(s[0], 8, 1);
  fill(s[2], 8, 3);
  CHECK_EQ(fmx_isend(a, &s0, 1, a_to_r, 0x1a5, NULL, &q[0]), FMX_SUCCESS);
  CHECK_EQ(fmx_isend(a, &s1, 1, a_to_r, 0x2a5, NULL, &q[1]), FMX_SUCCESS);               /* not its bits */
  CHECK_EQ(fmx_isendx(a, &s1, 1, a_to_r, 0, 0, FMX_MSG_UNTAGGED, NULL, &q[2]), FMX_SUCCESS); /* untagged */
  fmx_status_t st = next_done();
  CHECK_EQ(st.match_info, 0x1a5);
  CHECK(st.buffer == buf);
  check_fill(buf, 8, 1);
  CHECK_EQ(fmx_isend(a, &s2, 1, a_to_r, 0x1ff, NULL, &oq), FMX_SUCCESS);
  st = next_done();
  CHECK_EQ(st.match_info, 0x1ff);
  CHECK(st.buffer == buf + 8);
  check_fill(buf + 8, 8, 3);
  /* 256 - 16 < 245: released. */
  st = wait_done(r, &mq);
  CHECK_EQ(st.flags, FMX_MSG_MULTI_DONE);
  fmx_seg_t os = {other, 8};
  fmx_request_t tq, uq;
  CHECK_EQ(fmx_irecv(r, &os, 1, 0x2a5, ~0ull, NULL, &tq), FMX_SUCCESS);
  CHECK_EQ(wait_done(r, &tq).match_info, 0x2a5);
  CHECK_EQ(fmx_irecvx(r, &os, 1, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &uq), FMX_SUCCESS);
  CHECK_EQ(wait_done(r, &uq).flags, FMX_MSG_UNTAGGED);
  for (int k = 0; k < 3; k++) wait_done(a, &q[k]);
  wait_done(a, &oq);
}

/* Cancel: an empty buffer goes at once; one that took a message goes
 * too once that message is done, which stays to be reaped. */
static void test_cancel(void) {
  uint8_t buf[128], s[8];
  fmx_request_t mq, q;
  uint32_t res = 0;
  CHECK_EQ(fmx_irecv_multi(r, buf, sizeof buf, 8, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &mq), FMX_SUCCESS);
  CHECK_EQ(fmx_cancel(r, &mq, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK(mq == NULL);
  CHECK_EQ(fmx_irecv_multi(r, buf, sizeof buf, 8, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &mq), FMX_SUCCESS);
  send_untagged(a, a_to_r, s, sizeof s, 5, &q);
  fmx_status_t st = next_done();
  CHECK_EQ(st.flags & FMX_MSG_MULTI, FMX_MSG_MULTI);
  CHECK_EQ(fmx_cancel(r, &mq, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  wait_done(a, &q);
  /* Cancelled, it takes nothing more. */
  send_untagged(a, a_to_r, s, sizeof s, 6, &q);
  for (int i = 0; i < 200; i++) fmx_progress(r);
  CHECK_EQ(fmx_test_any(r, 0, 0, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  uint8_t d[8];
  fmx_seg_t ds = {d, 8};
  fmx_request_t dq;
  CHECK_EQ(fmx_irecvx(r, &ds, 1, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &dq), FMX_SUCCESS);
  CHECK_EQ(wait_done(r, &dq).data, 6);
  wait_done(a, &q);
}

/* A buffer directed to b: a's messages pass it by; b closing releases it
 * with b's fate as its code. */
static void test_directed_gone(void) {
  uint8_t buf[64], s[8], d[8];
  fmx_request_t mq, q, dq;
  CHECK_EQ(fmx_irecv_multi(r, buf, sizeof buf, 8, &r_to_b, 0, 0, FMX_MSG_UNTAGGED, NULL, &mq), FMX_SUCCESS);
  send_untagged(a, a_to_r, s, sizeof s, 7, &q);
  for (int i = 0; i < 200; i++) fmx_progress(r);
  fmx_seg_t ds = {d, 8};
  CHECK_EQ(fmx_irecvx(r, &ds, 1, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &dq), FMX_SUCCESS);
  CHECK_EQ(wait_done(r, &dq).data, 7);
  wait_done(a, &q);
  CHECK_EQ(fmx_close_endpoint(b), FMX_SUCCESS);
  fmx_status_t st = wait_done(r, &mq);
  CHECK(st.code == FMX_REMOTE_ENDPOINT_CLOSED || st.code == FMX_REMOTE_ENDPOINT_UNREACHABLE);
  CHECK_EQ(st.flags, FMX_MSG_MULTI_DONE);
  CHECK_EQ(st.xfer_length, 0);
}

static void test_bad_input(void) {
  char c[8];
  fmx_request_t q = NULL;
  CHECK_EQ(fmx_irecv_multi(NULL, c, 8, 0, NULL, 0, 0, 0, NULL, &q), FMX_BAD_ENDPOINT);
  CHECK_EQ(fmx_irecv_multi(r, c, 8, 0, NULL, 0, 0, FMX_MSG_DATA, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_irecv_multi(r, c, 8, 0, NULL, 0, 0, 0, NULL, NULL), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_irecv_multi(r, NULL, 8, 0, NULL, 0, 0, 0, NULL, &q), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_irecv_multi(r, (void *)(uintptr_t)-4, 8, 0, NULL, 0, 0, 0, NULL, &q), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_irecv_multi(r, c, 8, 0, NULL, 1, 0, 0, NULL, &q), FMX_BAD_MATCH_MASK);
  fmx_endpoint_addr_t junk;
  memset(&junk, 0x5a, sizeof junk);
  CHECK_EQ(fmx_irecv_multi(r, c, 8, 0, &junk, 0, 0, 0, NULL, &q), FMX_BAD_ADDRESS);
  CHECK(q == NULL);
  /* 0 bytes: no room at all, so it is released at once. */
  CHECK_EQ(fmx_irecv_multi(r, NULL, 0, 0, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &q), FMX_SUCCESS);
  fmx_status_t st = wait_done(r, &q);
  CHECK_EQ(st.flags, FMX_MSG_MULTI_DONE);
  CHECK_EQ(st.code, FMX_SUCCESS);
}

int main(void) {
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  r = open_ep(FMX_ANY_ENDPOINT, 51);
  a = open_ep(FMX_ANY_ENDPOINT, 52);
  b = open_ep(FMX_ANY_ENDPOINT, 53);
  a_to_r = connect_to(a, r, 51);
  connect_to(b, r, 51);
  r_to_b = connect_to(r, b, 53);
  test_classes();
  test_truncated();
  test_tagged();
  test_cancel();
  test_bad_input();
  test_directed_gone();
  CHECK_EQ(fmx_close_endpoint(a), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(r), FMX_SUCCESS);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_multi");
  return 0;
}
