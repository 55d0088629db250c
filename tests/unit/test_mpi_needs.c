/* SPDX-License-Identifier: MIT */
/* What MPI asks of a message layer (fmx_isendx, fmx_irecvx): 64 bits of
 * data with a message, untagged messages apart from tagged ones, receives
 * directed to one source (and failed when it goes), at each message class,
 * expected and unexpected; bad flags and addresses. Three endpoints of one
 * process: r receives from a and b. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eps.h"
#include "pattern.h"
#include "fmx.h"

static fmx_endpoint_t r, a, b;
static fmx_endpoint_addr_t a_to_r, b_to_r, r_to_a, r_to_b;

static int same_addr(fmx_endpoint_addr_t x, fmx_endpoint_addr_t y) { return memcmp(&x, &y, sizeof x) == 0; }

static const size_t sizes[] = {0, 8, 65536, 1u << 20}; /* tiny, medium, rendezvous */

/* Data travels with a message of every class, posted before or after it
 * arrives; a message without it says so. */
static void test_data(void) {
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    uint8_t *s = malloc(n + 1), *d = malloc(n + 1);
    for (int posted_first = 0; posted_first < 2; posted_first++) {
      fill(s, n, (unsigned)k);
      memset(d, 0, n + 1);
      fmx_seg_t ss = {s, n}, ds = {d, n};
      fmx_request_t sq, rq = NULL;
      uint64_t data = 0x1122334455667788ull + n + (uint64_t)posted_first;
      if (posted_first) CHECK_EQ(fmx_irecvx(r, &ds, 1, NULL, 0x40, ~0ull, 0, NULL, &rq), FMX_SUCCESS);
      CHECK_EQ(fmx_isendx(a, &ss, 1, a_to_r, 0x40, data, FMX_MSG_DATA, NULL, &sq), FMX_SUCCESS);
      if (!posted_first) {
        for (int i = 0; i < 100; i++) fmx_progress(r); /* arrives unexpected (a rendezvous: its RTS) */
        CHECK_EQ(fmx_irecvx(r, &ds, 1, NULL, 0x40, ~0ull, 0, NULL, &rq), FMX_SUCCESS);
      }
      fmx_status_t st = wait_done(r, &rq);
      CHECK_EQ(st.code, FMX_SUCCESS);
      CHECK_EQ(st.data, data);
      CHECK_EQ(st.flags, FMX_MSG_DATA);
      CHECK_EQ(st.xfer_length, n);
      check_fill(d, n, (unsigned)k);
      CHECK_EQ(wait_done(a, &sq).code, FMX_SUCCESS);
    }
    /* Without FMX_MSG_DATA: none, whatever `data` said. */
    fmx_seg_t ss = {s, n}, ds = {d, n};
    fmx_request_t sq, rq;
    CHECK_EQ(fmx_irecv(r, &ds, 1, 0x41, ~0ull, NULL, &rq), FMX_SUCCESS);
    CHECK_EQ(fmx_isendx(a, &ss, 1, a_to_r, 0x41, 99, 0, NULL, &sq), FMX_SUCCESS);
    fmx_status_t st = wait_done(r, &rq);
    CHECK_EQ(st.data, 0);
    CHECK_EQ(st.flags, 0);
    wait_done(a, &sq);
    free(s);
    free(d);
  }
}

/* An untagged message never matches a tagged receive, even one that
 * takes anything, nor a tagged message an untagged receive; each space
 * keeps its order. */
static void test_untagged(void) {
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    uint8_t *s1 = malloc(n + 1), *s2 = malloc(n + 1), *d1 = malloc(n + 1), *d2 = malloc(n + 1);
    fill(s1, n, 1);
    fill(s2, n, 2);
    fmx_seg_t u_seg = {s1, n}, t_seg = {s2, n}, d1s = {d1, n}, d2s = {d2, n};
    fmx_request_t us, ts, tr, ur;
    CHECK_EQ(fmx_isendx(a, &u_seg, 1, a_to_r, 0x5, 0, FMX_MSG_UNTAGGED, NULL, &us), FMX_SUCCESS);
    CHECK_EQ(fmx_isendx(a, &t_seg, 1, a_to_r, 0x5, 7, FMX_MSG_DATA, NULL, &ts), FMX_SUCCESS);
    for (int i = 0; i < 100; i++) fmx_progress(r);
    CHECK_EQ(fmx_irecv(r, &d1s, 1, 0, 0, NULL, &tr), FMX_SUCCESS); /* takes any tagged message */
    fmx_status_t st = wait_done(r, &tr);
    CHECK_EQ(st.match_info, 0x5);
    CHECK_EQ(st.flags, FMX_MSG_DATA);
    check_fill(d1, n, 2);
    CHECK_EQ(fmx_irecvx(r, &d2s, 1, NULL, 0x123, 0, FMX_MSG_UNTAGGED, NULL, &ur), FMX_SUCCESS); /* match ignored */
    st = wait_done(r, &ur);
    CHECK_EQ(st.flags, FMX_MSG_UNTAGGED);
    CHECK_EQ(st.match_info, 0);
    CHECK_EQ(st.xfer_length, n);
    check_fill(d2, n, 1);
    wait_done(a, &us);
    wait_done(a, &ts);
    /* Posted first: an untagged receive waits out a tagged message. */
    CHECK_EQ(fmx_irecvx(r, &d2s, 1, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &ur), FMX_SUCCESS);
    CHECK_EQ(fmx_isend(a, &t_seg, 1, a_to_r, 0x6, NULL, &ts), FMX_SUCCESS);
    fmx_status_t sst;
    uint32_t res = 1;
    CHECK_EQ(fmx_wait(r, &ur, 50, &sst, &res), FMX_SUCCESS);
    CHECK_EQ(res, 0);
    CHECK_EQ(fmx_isendx(a, &u_seg, 1, a_to_r, 0, 0, FMX_MSG_UNTAGGED, NULL, &us), FMX_SUCCESS);
    st = wait_done(r, &ur);
    CHECK_EQ(st.flags, FMX_MSG_UNTAGGED);
    check_fill(d2, n, 1);
    CHECK_EQ(fmx_irecv(r, &d1s, 1, 0x6, ~0ull, NULL, &tr), FMX_SUCCESS);
    st = wait_done(r, &tr);
    CHECK_EQ(st.match_info, 0x6);
    check_fill(d1, n, 2);
    wait_done(a, &us);
    wait_done(a, &ts);
    free(s1);
    free(s2);
    free(d1);
    free(d2);
  }
}

/* A receive directed to b takes b's message though a's came first, and
 * waits out a's; the status names the source. */
static void test_directed(void) {
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    uint8_t *s = malloc(n + 1), *d = malloc(n + 1);
    fill(s, n, 3);
    fmx_seg_t ss = {s, n}, ds = {d, n};
    fmx_request_t sa, sb, q;
    CHECK_EQ(fmx_isend(a, &ss, 1, a_to_r, 0x9, NULL, &sa), FMX_SUCCESS);
    CHECK_EQ(fmx_isend(b, &ss, 1, b_to_r, 0x9, NULL, &sb), FMX_SUCCESS);
    for (int i = 0; i < 100; i++) fmx_progress(r);
    CHECK_EQ(fmx_irecvx(r, &ds, 1, &r_to_b, 0x9, ~0ull, 0, NULL, &q), FMX_SUCCESS);
    fmx_status_t st = wait_done(r, &q);
    CHECK(same_addr(st.source, r_to_b));
    CHECK_EQ(st.xfer_length, n);
    check_fill(d, n, 3);
    wait_done(b, &sb);
    CHECK_EQ(fmx_irecvx(r, &ds, 1, &r_to_a, 0x9, ~0ull, 0, NULL, &q), FMX_SUCCESS);
    st = wait_done(r, &q);
    CHECK(same_addr(st.source, r_to_a));
    wait_done(a, &sa);
    /* Posted first, directed to a: b's message stays unexpected. */
    CHECK_EQ(fmx_irecvx(r, &ds, 1, &r_to_a, 0x10, ~0ull, 0, NULL, &q), FMX_SUCCESS);
    CHECK_EQ(fmx_isend(b, &ss, 1, b_to_r, 0x10, NULL, &sb), FMX_SUCCESS);
    uint32_t res = 1;
    CHECK_EQ(fmx_wait(r, &q, 50, &st, &res), FMX_SUCCESS);
    CHECK_EQ(res, 0);
    CHECK_EQ(fmx_isend(a, &ss, 1, a_to_r, 0x10, NULL, &sa), FMX_SUCCESS);
    st = wait_done(r, &q);
    CHECK(same_addr(st.source, r_to_a));
    wait_done(a, &sa);
    CHECK_EQ(fmx_irecvx(r, &ds, 1, NULL, 0x10, ~0ull, 0, NULL, &q), FMX_SUCCESS);
    st = wait_done(r, &q);
    CHECK(same_addr(st.source, r_to_b));
    wait_done(b, &sb);
    free(s);
    free(d);
  }
}

/* FMX_MSG_NOW: a message that goes now leaves no request and arrives
 * whole; one that cannot go now (longer than a record, a full ring, a
 * sync send) is refused and nothing arrives; after the receiver drained
 * the ring, sends go now again. */
static void test_send_now(void) {
  uint64_t v = 0x0123456789abcdefull, got = 0;
  fmx_seg_t s8 = {&v, sizeof v}, d8 = {&got, sizeof got};
  fmx_request_t q = (fmx_request_t)&v, rq;
  CHECK_EQ(fmx_isendx(a, &s8, 1, a_to_r, 0x50, 77, FMX_MSG_DATA | FMX_MSG_NOW, NULL, &q), FMX_SUCCESS);
  CHECK(q == NULL);
  CHECK_EQ(fmx_irecvx(r, &d8, 1, NULL, 0x50, ~0ull, 0, NULL, &rq), FMX_SUCCESS);
  fmx_status_t st = wait_done(r, &rq);
  CHECK_EQ(st.code, FMX_SUCCESS);
  CHECK_EQ(st.data, 77);
  CHECK_EQ(got, v);
  CHECK_EQ(fmx_isendx(a, &s8, 1, a_to_r, 0x50, 0, FMX_MSG_NOW | FMX_MSG_SYNC, NULL, &q), FMX_BAD_REQUEST);
  /* Longer than one record: refused, nothing sent. */
  size_t big = 1u << 20;
  uint8_t *b1 = malloc(big);
  fmx_seg_t sb = {b1, big};
  CHECK_EQ(fmx_isendx(a, &sb, 1, a_to_r, 0x51, 0, FMX_MSG_NOW, NULL, &q), FMX_NO_RESOURCES);
  CHECK_EQ(fmx_irecvx(r, &sb, 1, NULL, 0x51, ~0ull, 0, NULL, &rq), FMX_SUCCESS);
  uint32_t res = 0;
  for (int i = 0; i < 100; i++) fmx_progress(r);
  CHECK_EQ(fmx_test(r, &rq, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  CHECK_EQ(fmx_cancel(r, &rq, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  free(b1);
  /* Until the ring is full, then refused; every one sent arrives, in order. */
  uint64_t n = 0;
  for (; n < (1u << 20); n++) {
    fmx_seg_t sn = {&n, sizeof n};
    fmx_return_t rc = fmx_isendx(a, &sn, 1, a_to_r, 0x52, 0, FMX_MSG_NOW, NULL, &q);
    if (rc == FMX_NO_RESOURCES) break;
    CHECK_EQ(rc, FMX_SUCCESS);
  }
  CHECK(n > 16 && n < (1u << 20));
  for (uint64_t i = 0; i < n; i++) {
    CHECK_EQ(fmx_irecvx(r, &d8, 1, NULL, 0x52, ~0ull, 0, NULL, &rq), FMX_SUCCESS);
    CHECK_EQ(wait_done(r, &rq).code, FMX_SUCCESS);
    CHECK_EQ(got, i);
  }
  CHECK_EQ(fmx_isendx(a, &s8, 1, a_to_r, 0x53, 0, FMX_MSG_NOW, NULL, &q), FMX_SUCCESS);
  CHECK_EQ(fmx_irecvx(r, &d8, 1, NULL, 0x53, ~0ull, 0, NULL, &rq), FMX_SUCCESS);
  CHECK_EQ(wait_done(r, &rq).code, FMX_SUCCESS);
}

/* fmx_test_some: one progress pass, then up to max completions, oldest
 * first; max 0 progresses only; bad arguments refused. */
static void test_test_some(void) {
  uint64_t in[3] = {0}, out[3] = {11, 12, 13};
  fmx_request_t rq[3], q;
  for (int i = 0; i < 3; i++) {
    fmx_seg_t d = {&in[i], sizeof in[i]};
    CHECK_EQ(fmx_irecv(r, &d, 1, 0x60 + (uint64_t)i, ~0ull, &in[i], &rq[i]), FMX_SUCCESS);
  }
  for (int i = 0; i < 3; i++) {
    fmx_seg_t s = {&out[i], sizeof out[i]};
    CHECK_EQ(fmx_isendx(a, &s, 1, a_to_r, 0x60 + (uint64_t)i, 0, FMX_MSG_NOW, NULL, &q), FMX_SUCCESS);
  }
  fmx_status_t st[2];
  uint32_t got = 0, n = 0;
  for (int tries = 0; got < 3 && tries < 100000; tries++) {
    CHECK_EQ(fmx_test_some(r, st, 2, &n), FMX_SUCCESS);
    CHECK(n <= 2);
    for (uint32_t k = 0; k < n; k++, got++) {
      CHECK_EQ(st[k].code, FMX_SUCCESS);
      CHECK(st[k].context == &in[got]); /* oldest first: they completed in order */
      CHECK_EQ(in[got], out[got]);
    }
  }
  CHECK_EQ(got, 3);
  CHECK_EQ(fmx_test_some(r, NULL, 0, &n), FMX_SUCCESS);
  CHECK_EQ(n, 0);
  CHECK_EQ(fmx_test_some(r, st, 2, NULL), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_test_some(r, NULL, 1, &n), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_test_some(NULL, st, 2, &n), FMX_BAD_ENDPOINT);
}

static void test_bad_input(void) {
  char c = 0;
  fmx_seg_t seg = {&c, 1};
  fmx_request_t q = NULL;
  CHECK_EQ(fmx_isendx(a, &seg, 1, a_to_r, 0, 0, 0x80, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_irecvx(r, &seg, 1, NULL, 0, 0, FMX_MSG_DATA, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_irecvx(r, &seg, 1, NULL, 0, 0, FMX_MSG_SYNC, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_irecvx(r, &seg, 1, NULL, 1, 0, 0, NULL, &q), FMX_BAD_MATCH_MASK);
  fmx_endpoint_addr_t junk;
  memset(&junk, 0x5a, sizeof junk);
  CHECK_EQ(fmx_irecvx(r, &seg, 1, &junk, 0, 0, 0, NULL, &q), FMX_BAD_ADDRESS);
  CHECK(q == NULL); /* nothing posted */
}

/* A receive directed to b fails once b closes, posted before or after;
 * one for any source stays. */
static void test_directed_peer_gone(void) {
  char buf[8];
  fmx_seg_t seg = {buf, sizeof buf};
  fmx_request_t before, any;
  CHECK_EQ(fmx_irecvx(r, &seg, 1, &r_to_b, 0x77, ~0ull, 0, NULL, &before), FMX_SUCCESS);
  CHECK_EQ(fmx_irecv(r, &seg, 1, 0x77, ~0ull, NULL, &any), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(b), FMX_SUCCESS);
  fmx_status_t st = wait_done(r, &before);
  CHECK(st.code == FMX_REMOTE_ENDPOINT_CLOSED || st.code == FMX_REMOTE_ENDPOINT_UNREACHABLE);
  fmx_request_t after;
  CHECK_EQ(fmx_irecvx(r, &seg, 1, &r_to_b, 0x77, ~0ull, 0, NULL, &after), FMX_SUCCESS);
  st = wait_done(r, &after);
  CHECK(st.code == FMX_REMOTE_ENDPOINT_CLOSED || st.code == FMX_REMOTE_ENDPOINT_UNREACHABLE);
  uint32_t res = 0;
  CHECK_EQ(fmx_cancel(r, &any, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  /* Now or not at all, to a partner gone: its error at once. */
  fmx_request_t q = NULL;
  fmx_return_t rc = fmx_isendx(r, &seg, 1, r_to_b, 0x77, 0, FMX_MSG_NOW, NULL, &q);
  CHECK(rc == FMX_REMOTE_ENDPOINT_CLOSED || rc == FMX_REMOTE_ENDPOINT_UNREACHABLE);
  CHECK(q == NULL);
}

int main(void) {
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  r = open_ep(FMX_ANY_ENDPOINT, 41);
  a = open_ep(FMX_ANY_ENDPOINT, 42);
  b = open_ep(FMX_ANY_ENDPOINT, 43);
  a_to_r = connect_to(a, r, 41);
  b_to_r = connect_to(b, r, 41);
  r_to_a = connect_to(r, a, 42);
  r_to_b = connect_to(r, b, 43);
  test_data();
  test_untagged();
  test_directed();
  test_send_now();
  test_test_some();
  test_bad_input();
  test_directed_peer_gone();
  CHECK_EQ(fmx_close_endpoint(a), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(r), FMX_SUCCESS);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_mpi_needs");
  return 0;
}
