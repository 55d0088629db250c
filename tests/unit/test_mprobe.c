/* SPDX-License-Identifier: MIT */
/* Probes as MPI uses them: fmx_iprobex (directed, untagged, flags and
 * data in the status) and the matched probe (fmx_improbe, then fmx_imrecv
 * or fmx_mdiscard) at each message class; a claimed message is out of
 * every receive's reach; bad and reused handles; a claimed rendezvous
 * whose sender goes. Three endpoints of one process: r receives from a
 * and b. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eps.h"
#include "fmx.h"
#include "pattern.h"

static fmx_endpoint_t r, a, b;
static fmx_endpoint_addr_t a_to_r, b_to_r, r_to_a, r_to_b;

static const size_t sizes[] = {0, 8, 65536, 1u << 20}; /* tiny, medium, rendezvous */

/* Probe r until a message fits (bounded); 1 if one did. */
static int probe_for(const fmx_endpoint_addr_t *src, uint64_t match, uint64_t mask, uint32_t flags,
                     fmx_message_t *msg, fmx_status_t *st) {
  for (int i = 0; i < 200000; i++) {
    uint32_t res = 0;
    if (msg)
      CHECK_EQ(fmx_improbe(r, src, match, mask, flags, msg, st, &res), FMX_SUCCESS);
    else
      CHECK_EQ(fmx_iprobex(r, src, match, mask, flags, st, &res), FMX_SUCCESS);
    if (res) return 1;
  }
  return 0;
}

/* A claimed message goes to fmx_imrecv only: a receive for anything
 * posted meanwhile takes the next message. Status, data, truncation. */
static void test_claim_recv(void) {
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    uint8_t *s1 = malloc(n + 1), *s2 = malloc(n + 1), *d = malloc(n + 1);
    fill(s1, n, 3);
    fill(s2, n, 4);
    fmx_seg_t seg1 = {s1, n}, seg2 = {s2, n}, ds = {d, n};
    fmx_request_t sq1, sq2, any, mq;
    CHECK_EQ(fmx_isendx(a, &seg1, 1, a_to_r, 0x90, 0xabcdef + n, FMX_MSG_DATA, NULL, &sq1), FMX_SUCCESS);
    fmx_message_t msg = NULL;
    fmx_status_t st;
    CHECK(probe_for(NULL, 0x90, ~0ull, 0, &msg, &st));
    CHECK(msg != NULL);
    CHECK_EQ(st.code, FMX_SUCCESS);
    CHECK_EQ(st.match_info, 0x90);
    CHECK_EQ(st.msg_length, n);
    CHECK_EQ(st.flags, FMX_MSG_DATA);
    CHECK_EQ(st.data, 0xabcdef + n);
    CHECK(memcmp(&st.source, &r_to_a, sizeof st.source) == 0);
    /* Out of matching: neither a probe nor a receive for anything sees it. */
    uint32_t res = 1;
    CHECK_EQ(fmx_iprobe(r, 0, 0, NULL, &res), FMX_SUCCESS);
    CHECK_EQ(res, 0);
    uint8_t other[16];
    fmx_seg_t os = {other, sizeof other};
    CHECK_EQ(fmx_irecv(r, &os, 1, 0, 0, NULL, &any), FMX_SUCCESS);
    CHECK_EQ(fmx_isend(a, &seg2, 1, a_to_r, 0x91, NULL, &sq2), FMX_SUCCESS);
    st = wait_done(r, &any);
    CHECK_EQ(st.match_info, 0x91);
    /* Into a buffer one byte short when there is a byte to lose. */
    ds.len = n ? n - 1 : 0;
    memset(d, 0, n + 1);
    CHECK_EQ(fmx_imrecv(r, &ds, 1, &msg, (void *)0x5, &mq), FMX_SUCCESS);
    CHECK(msg == NULL);
    st = wait_done(r, &mq);
    CHECK_EQ(st.code, n ? FMX_MESSAGE_TRUNCATED : FMX_SUCCESS);
    CHECK_EQ(st.xfer_length, ds.len);
    CHECK_EQ(st.msg_length, n);
    CHECK_EQ(st.data, 0xabcdef + n);
    CHECK(st.context == (void *)0x5);
    check_fill(d, ds.len, 3);
    wait_done(a, &sq1);
    wait_done(a, &sq2);
    free(s1);
    free(s2);
    free(d);
  }
}

/* A discarded message is gone, and its sender completes. */
static void test_discard(void) {
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    size_t n = sizes[k];
    uint8_t *s = calloc(1, n + 1);
    fmx_seg_t seg = {s, n};
    fmx_request_t sq;
    CHECK_EQ(fmx_isend(a, &seg, 1, a_to_r, 0x92, NULL, &sq), FMX_SUCCESS);
    fmx_message_t msg = NULL;
    fmx_status_t st;
    CHECK(probe_for(NULL, 0x92, ~0ull, 0, &msg, &st));
    CHECK_EQ(fmx_mdiscard(r, &msg), FMX_SUCCESS);
    CHECK(msg == NULL);
    wait_done(a, &sq);
    uint32_t res = 1;
    CHECK_EQ(fmx_iprobe(r, 0, 0, NULL, &res), FMX_SUCCESS);
    CHECK_EQ(res, 0);
    free(s);
  }
}

/* fmx_iprobex directed and per space; fmx_improbe directed. */
static void test_probe_forms(void) {
  uint8_t x[8] = {0}, d[8];
  fmx_seg_t seg = {x, sizeof x}, ds = {d, sizeof d};
  fmx_request_t sb, su, q;
  CHECK_EQ(fmx_isend(b, &seg, 1, b_to_r, 0x93, NULL, &sb), FMX_SUCCESS);
  CHECK_EQ(fmx_isendx(a, &seg, 1, a_to_r, 0, 0, FMX_MSG_UNTAGGED, NULL, &su), FMX_SUCCESS);
  fmx_status_t st;
  CHECK(probe_for(&r_to_b, 0, 0, 0, NULL, &st)); /* b's, tagged */
  CHECK_EQ(st.match_info, 0x93);
  CHECK(probe_for(NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &st)); /* a's, untagged */
  CHECK_EQ(st.flags, FMX_MSG_UNTAGGED);
  CHECK(memcmp(&st.source, &r_to_a, sizeof st.source) == 0);
  uint32_t res = 1;
  CHECK_EQ(fmx_iprobex(r, &r_to_a, 0, 0, 0, &st, &res), FMX_SUCCESS); /* nothing tagged from a */
  CHECK_EQ(res, 0);
  fmx_message_t msg = NULL;
  CHECK_EQ(fmx_improbe(r, &r_to_a, 0, 0, 0, &msg, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  CHECK(msg == NULL);
  CHECK(probe_for(&r_to_a, 0, 0, FMX_MSG_UNTAGGED, &msg, &st));
  CHECK_EQ(fmx_imrecv(r, &ds, 1, &msg, NULL, &q), FMX_SUCCESS);
  CHECK_EQ(wait_done(r, &q).flags, FMX_MSG_UNTAGGED);
  CHECK(probe_for(&r_to_b, 0x93, ~0ull, 0, &msg, &st));
  CHECK_EQ(fmx_imrecv(r, &ds, 1, &msg, NULL, &q), FMX_SUCCESS);
  CHECK_EQ(wait_done(r, &q).match_info, 0x93);
  wait_done(b, &sb);
  wait_done(a, &su);
}

static void test_bad_handles(void) {
  uint8_t x[8] = {0};
  fmx_seg_t seg = {x, sizeof x};
  fmx_request_t sq, q = NULL;
  uint32_t res = 0;
  fmx_status_t st;
  fmx_message_t msg = NULL, junk = (fmx_message_t)&res, none = NULL;
  CHECK_EQ(fmx_imrecv(r, &seg, 1, &junk, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_imrecv(r, &seg, 1, &none, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_imrecv(r, &seg, 1, NULL, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_mdiscard(r, &junk), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_mdiscard(r, NULL), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_improbe(r, NULL, 0, 0, 0, NULL, &st, &res), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_improbe(r, NULL, 1, 0, 0, &msg, &st, &res), FMX_BAD_MATCH_MASK);
  CHECK_EQ(fmx_improbe(r, NULL, 0, 0, FMX_MSG_DATA, &msg, &st, &res), FMX_BAD_REQUEST);
  fmx_endpoint_addr_t bad;
  memset(&bad, 0x5a, sizeof bad);
  CHECK_EQ(fmx_iprobex(r, &bad, 0, 0, 0, &st, &res), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_improbe(NULL, NULL, 0, 0, 0, &msg, &st, &res), FMX_BAD_ENDPOINT);
  CHECK(q == NULL);
  /* A handle is good once: a copy of it is stale after fmx_imrecv, and a
   * handle of r's means nothing to a. */
  CHECK_EQ(fmx_isend(a, &seg, 1, a_to_r, 0x94, NULL, &sq), FMX_SUCCESS);
  CHECK(probe_for(NULL, 0x94, ~0ull, 0, &msg, &st));
  fmx_message_t copy = msg;
  CHECK_EQ(fmx_imrecv(a, &seg, 1, &copy, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_mdiscard(a, &copy), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_imrecv(r, &seg, 1, &msg, NULL, &q), FMX_SUCCESS);
  wait_done(r, &q);
  CHECK_EQ(fmx_imrecv(r, &seg, 1, &copy, NULL, &q), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_mdiscard(r, &copy), FMX_BAD_REQUEST);
  wait_done(a, &sq);
}

/* A claimed rendezvous whose sender closes: the receive fails, nothing
 * hangs. Also left claimed at close: the endpoint frees it (ASan). */
static void test_sender_gone(void) {
  size_t n = 1u << 20;
  uint8_t *s = calloc(1, n), *d = malloc(n);
  fmx_seg_t seg = {s, n}, ds = {d, n};
  fmx_request_t sq, q;
  CHECK_EQ(fmx_isend(b, &seg, 1, b_to_r, 0x95, NULL, &sq), FMX_SUCCESS);
  CHECK_EQ(fmx_isend(a, &seg, 1, a_to_r, 0x96, NULL, &sq), FMX_SUCCESS); /* left claimed */
  fmx_message_t mb = NULL, ma = NULL;
  fmx_status_t st;
  CHECK(probe_for(&r_to_b, 0x95, ~0ull, 0, &mb, &st));
  CHECK(probe_for(&r_to_a, 0x96, ~0ull, 0, &ma, &st));
  CHECK_EQ(fmx_close_endpoint(b), FMX_SUCCESS);
  CHECK_EQ(fmx_imrecv(r, &ds, 1, &mb, NULL, &q), FMX_SUCCESS);
  st = wait_done(r, &q);
  CHECK(st.code == FMX_REMOTE_ENDPOINT_CLOSED || st.code == FMX_REMOTE_ENDPOINT_UNREACHABLE);
  CHECK_EQ(fmx_close_endpoint(r), FMX_SUCCESS); /* with ma claimed */
  free(s);
  free(d);
}

int main(void) {
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  r = open_ep(FMX_ANY_ENDPOINT, 51);
  a = open_ep(FMX_ANY_ENDPOINT, 52);
  b = open_ep(FMX_ANY_ENDPOINT, 53);
  a_to_r = connect_to(a, r, 51);
  b_to_r = connect_to(b, r, 51);
  r_to_a = connect_to(r, a, 52);
  r_to_b = connect_to(r, b, 53);
  test_claim_recv();
  test_discard();
  test_probe_forms();
  test_bad_handles();
  test_sender_gone();
  CHECK_EQ(fmx_close_endpoint(a), FMX_SUCCESS);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_mprobe");
  return 0;
}
