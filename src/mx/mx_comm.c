/* SPDX-License-Identifier: MIT */
/* MX's messages and completions over fmx: segment lists converted (MX's
 * lengths are 32-bit), timeouts converted (MX_INFINITE is 0), statuses
 * converted and written only when something completed. */
#include "mx/mx_int.h"

/* MX's segments as fmx's. */
static mx_return_t segs_in(struct mx_endpoint *e, const mx_segment_t *in, uint32_t n, fmx_seg_t *out,
                           const char *what) {
  if (n > MX_MAX_SEGMENTS) return mx_fail(e, MX_BAD_SEG_CNT, "%s: %u segments (at most %d)", what, n, MX_MAX_SEGMENTS);
  if (n && !in) return mx_fail(e, MX_BAD_SEG_LIST, "%s: NULL segment list with %u segments", what, n);
  for (uint32_t i = 0; i < n; i++) {
    out[i].ptr = in[i].segment_ptr;
    out[i].len = in[i].segment_length;
  }
  return MX_SUCCESS;
}

static inline fmx_request_t *req_of(mx_request_t *r) { return (fmx_request_t *)(void *)r; }

/* A NULL request pointer: the request is forgotten (Open-MX's extension). */
static mx_return_t posted(struct mx_endpoint *e, fmx_return_t rc, fmx_request_t r, mx_request_t *request,
                          const char *what) {
  if (rc != FMX_SUCCESS) return mx_check(e, rc, what);
  if (request)
    *request = (mx_request_t)r;
  else
    fmx_forget(e->ep, &r);
  return MX_SUCCESS;
}

static mx_return_t send_common(mx_endpoint_t e, mx_segment_t *segs, uint32_t n, mx_endpoint_addr_t dest,
                               uint64_t match_info, void *context, mx_request_t *request, int sync) {
  const char *what = sync ? "mx_issend" : "mx_isend";
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "%s", what);
  fmx_seg_t fs[MX_MAX_SEGMENTS];
  mx_return_t m = segs_in(e, segs, n, fs, what);
  if (m != MX_SUCCESS) return m;
  fmx_request_t r = NULL;
  fmx_return_t rc = (sync ? fmx_issend : fmx_isend)(e->ep, fs, n, mx_to_fmx_addr(dest), match_info, context, &r);
  return posted(e, rc, r, request, what);
}

MX_FACE mx_return_t mx_isend(mx_endpoint_t e, mx_segment_t *segs, uint32_t n, mx_endpoint_addr_t dest,
                             uint64_t match_info, void *context, mx_request_t *request) {
  return send_common(e, segs, n, dest, match_info, context, request, 0);
}

MX_FACE mx_return_t mx_issend(mx_endpoint_t e, mx_segment_t *segs, uint32_t n, mx_endpoint_addr_t dest,
                              uint64_t match_info, void *context, mx_request_t *request) {
  return send_common(e, segs, n, dest, match_info, context, request, 1);
}

MX_FACE mx_return_t mx_irecv(mx_endpoint_t e, mx_segment_t *segs, uint32_t n, uint64_t match_info,
                             uint64_t match_mask, void *context, mx_request_t *request) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_irecv");
  fmx_seg_t fs[MX_MAX_SEGMENTS];
  mx_return_t m = segs_in(e, segs, n, fs, "mx_irecv");
  if (m != MX_SUCCESS) return m;
  fmx_request_t r = NULL;
  fmx_return_t rc = fmx_irecv(e->ep, fs, n, match_info, match_mask, context, &r);
  return posted(e, rc, r, request, "mx_irecv");
}

MX_FACE mx_return_t mx_cancel(mx_endpoint_t e, mx_request_t *request, uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_cancel");
  if (!request || !result) return mx_fail(e, MX_BAD_REQUEST, "mx_cancel");
  return mx_check(e, fmx_cancel(e->ep, req_of(request), result), "mx_cancel");
}

MX_FACE mx_return_t mx_forget(mx_endpoint_t e, mx_request_t *request) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_forget");
  if (!request) return mx_fail(e, MX_BAD_REQUEST, "mx_forget");
  return mx_check(e, fmx_forget(e->ep, req_of(request)), "mx_forget");
}

/* What a test or wait found: the status converted when it completed one. */
static mx_return_t done(struct mx_endpoint *e, fmx_return_t rc, const fmx_status_t *fs, mx_status_t *status,
                        const uint32_t *result, const char *what) {
  if (rc != FMX_SUCCESS) return mx_check(e, rc, what);
  if (*result && status) mx_status_from(status, fs);
  return MX_SUCCESS;
}

MX_FACE mx_return_t mx_test(mx_endpoint_t e, mx_request_t *request, mx_status_t *status, uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_test");
  if (!request || !result) return mx_fail(e, MX_BAD_REQUEST, "mx_test");
  fmx_status_t fs;
  return done(e, fmx_test(e->ep, req_of(request), &fs, result), &fs, status, result, "mx_test");
}

MX_FACE mx_return_t mx_wait(mx_endpoint_t e, mx_request_t *request, uint32_t timeout, mx_status_t *status,
                            uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_wait");
  if (!request || !result) return mx_fail(e, MX_BAD_REQUEST, "mx_wait");
  fmx_status_t fs;
  return done(e, fmx_wait(e->ep, req_of(request), mx_timeout(timeout), &fs, result), &fs, status, result, "mx_wait");
}

MX_FACE mx_return_t mx_test_any(mx_endpoint_t e, uint64_t match_info, uint64_t match_mask, mx_status_t *status,
                                uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_test_any");
  if (!result) return mx_fail(e, MX_BAD_REQUEST, "mx_test_any");
  fmx_status_t fs;
  return done(e, fmx_test_any(e->ep, match_info, match_mask, &fs, result), &fs, status, result, "mx_test_any");
}

MX_FACE mx_return_t mx_wait_any(mx_endpoint_t e, uint32_t timeout, uint64_t match_info, uint64_t match_mask,
                                mx_status_t *status, uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_wait_any");
  if (!result) return mx_fail(e, MX_BAD_REQUEST, "mx_wait_any");
  fmx_status_t fs;
  return done(e, fmx_wait_any(e->ep, mx_timeout(timeout), match_info, match_mask, &fs, result), &fs, status, result,
              "mx_wait_any");
}

MX_FACE mx_return_t mx_ipeek(mx_endpoint_t e, mx_request_t *request, uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_ipeek");
  if (!request || !result) return mx_fail(e, MX_BAD_REQUEST, "mx_ipeek");
  return mx_check(e, fmx_ipeek(e->ep, req_of(request), result), "mx_ipeek");
}

MX_FACE mx_return_t mx_peek(mx_endpoint_t e, uint32_t timeout, mx_request_t *request, uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_peek");
  if (!request || !result) return mx_fail(e, MX_BAD_REQUEST, "mx_peek");
  return mx_check(e, fmx_peek(e->ep, mx_timeout(timeout), req_of(request), result), "mx_peek");
}

MX_FACE mx_return_t mx_iprobe(mx_endpoint_t e, uint64_t match_info, uint64_t match_mask, mx_status_t *status,
                              uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_iprobe");
  if (!result) return mx_fail(e, MX_BAD_REQUEST, "mx_iprobe");
  fmx_status_t fs;
  return done(e, fmx_iprobe(e->ep, match_info, match_mask, &fs, result), &fs, status, result, "mx_iprobe");
}

MX_FACE mx_return_t mx_probe(mx_endpoint_t e, uint32_t timeout, uint64_t match_info, uint64_t match_mask,
                             mx_status_t *status, uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_probe");
  if (!result) return mx_fail(e, MX_BAD_REQUEST, "mx_probe");
  fmx_status_t fs;
  return done(e, fmx_probe(e->ep, mx_timeout(timeout), match_info, match_mask, &fs, result), &fs, status, result,
              "mx_probe");
}

MX_FACE mx_return_t mx_ibuffered(mx_endpoint_t e, mx_request_t *request, uint32_t *result) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_ibuffered");
  if (!request || !result) return mx_fail(e, MX_BAD_REQUEST, "mx_ibuffered");
  return mx_check(e, fmx_ibuffered(e->ep, req_of(request), result), "mx_ibuffered");
}

MX_FACE mx_return_t mx_context(mx_request_t *request, void **context) {
  if (!request || !context) return mx_fail(NULL, MX_BAD_REQUEST, "mx_context");
  return mx_check(NULL, fmx_context(req_of(request), context), "mx_context");
}

MX_FACE mx_return_t mx_set_request_timeout(mx_endpoint_t e, mx_request_t request, uint32_t milli_seconds) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_set_request_timeout");
  return mx_check(e, fmx_set_request_timeout(e->ep, (fmx_request_t)request, milli_seconds),
                  "mx_set_request_timeout");
}
