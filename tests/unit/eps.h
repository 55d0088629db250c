/* SPDX-License-Identifier: MIT */
/* Endpoint helpers of the unit tests (with check.h): open one, its id,
 * connect to one, wait for a request that must complete. */
#ifndef FMX_TESTS_EPS_H
#define FMX_TESTS_EPS_H

#include <string.h>

#include "check.h"
#include "fmx.h"

static inline fmx_endpoint_t open_ep(uint32_t eid, uint32_t key) {
  fmx_endpoint_t ep;
  CHECK_EQ(fmx_open_endpoint(0, eid, key, NULL, 0, &ep), FMX_SUCCESS);
  return ep;
}

static inline uint32_t eid_of(fmx_endpoint_t ep) {
  uint32_t e;
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_ENDPOINT_ID, NULL, 0, &e, sizeof e), FMX_SUCCESS);
  return e;
}

/* from's address of to, which was opened with key. */
static inline fmx_endpoint_addr_t connect_to(fmx_endpoint_t from, fmx_endpoint_t to, uint32_t key) {
  fmx_endpoint_addr_t a;
  CHECK_EQ(fmx_connect(from, FMX_ANY_NIC, eid_of(to), key, 1000, &a), FMX_SUCCESS);
  return a;
}

/* The counter of e labelled `label` (fmx_counters' text), UINT64_MAX when
 * there is none. */
static inline uint64_t counter_of(fmx_endpoint_t e, const char *label) {
  uint32_t n = 0;
  fmx_get_info(e, FMX_INFO_COUNTER_COUNT, NULL, 0, &n, sizeof n);
  uint64_t v[128] = {0}, r = UINT64_MAX;
  if (n > 128) n = 128;
  fmx_get_info(e, FMX_INFO_COUNTER_VALUES, NULL, 0, v, (uint32_t)(n * sizeof *v));
  for (uint32_t k = 0; k < n; k++) {
    char l[128] = "";
    fmx_get_info(e, FMX_INFO_COUNTER_LABEL, &k, sizeof k, l, sizeof l);
    if (!strcmp(l, label)) r = v[k];
  }
  return r;
}

/* Wait for r on ep; it must complete (within 20 s). */
static inline fmx_status_t wait_done(fmx_endpoint_t ep, fmx_request_t *r) {
  fmx_status_t st;
  uint32_t res = 0;
  CHECK_EQ(fmx_wait(ep, r, 20000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  return st;
}

#endif
