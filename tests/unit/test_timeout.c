/* SPDX-License-Identifier: MIT */
/* Request timeouts: a send its peer never takes (full ring, peer not
 * progressing) completes with FMX_TIMEOUT; per request and per endpoint. */
#include <string.h>

#include "check.h"
#include "fmx.h"

int main(void) {
  fmx_endpoint_t a, b;
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  fmx_endpoint_param_t p = {.key = FMX_PARAM_TIMEOUT_MS, .val.timeout_ms = 200};
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 1, &p, 1, &a), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 2, NULL, 0, &b), FMX_SUCCESS);
  uint32_t eb;
  fmx_get_info(b, FMX_INFO_ENDPOINT_ID, NULL, 0, &eb, sizeof eb);
  fmx_endpoint_addr_t to_b;
  CHECK_EQ(fmx_connect(a, FMX_ANY_NIC, eb, 2, 1000, &to_b), FMX_SUCCESS);
  static char buf[4096];
  fmx_seg_t s = {buf, sizeof buf}; /* eager at any threshold (64K and up) */
  /* b never calls fmx: its ring fills, later sends wait undelivered. */
  enum { N = 400 };
  fmx_request_t r[N];
  for (int i = 0; i < N; i++) CHECK_EQ(fmx_isend(a, &s, 1, to_b, (uint64_t)i, NULL, &r[i]), FMX_SUCCESS);
  fmx_status_t st;
  uint32_t res;
  CHECK_EQ(fmx_wait(a, &r[0], 1000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_SUCCESS); /* in the ring: buffered, done */
  /* the last one is queued behind a full ring: it times out (endpoint default) */
  CHECK_EQ(fmx_wait(a, &r[N - 1], 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_TIMEOUT);
  /* per request: none for this one, so waiting gives up without completing */
  fmx_request_t q;
  CHECK_EQ(fmx_isend(a, &s, 1, to_b, 9999, NULL, &q), FMX_SUCCESS);
  CHECK_EQ(fmx_set_request_timeout(a, q, 0), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(a, &q, 400, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  CHECK_EQ(fmx_set_request_timeout(a, q, 50), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(a, &q, 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_TIMEOUT);
  /* b drains what reached its ring, in order */
  static char rb[1 << 20];
  fmx_seg_t rs = {rb, sizeof rb};
  fmx_request_t rr;
  CHECK_EQ(fmx_irecv(b, &rs, 1, 0, 0, NULL, &rr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(b, &rr, 1000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.match_info, 0);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_timeout");
  return 0;
}
