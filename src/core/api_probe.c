/* SPDX-License-Identifier: MIT */
/* Probes of fmx.h: looking at unexpected messages without receiving
 * them, and the matched probe's handles (fmx_improbe, fmx_imrecv,
 * fmx_mdiscard). */

#include "core/api.h"

struct probe_arg {
  uint64_t match, mask;
  const struct partner *from;
  int untagged;
  int claim;
  struct unexp_msg *found;
  fmx_status_t *status;
};

static int probe_check(struct fmx_endpoint *ep, void *arg) {
  struct probe_arg *a = arg;
  a->found = proto_probe(ep, a->match, a->mask, a->from, a->untagged, a->claim);
  if (!a->found) return 0;
  if (a->status) proto_unexp_status(a->found, a->status);
  return 1;
}

/* Checks of a probe's arguments; 0 or the error. Fills a (from NULL). */
static fmx_return_t probe_args(fmx_endpoint_t ep, uint64_t match, uint64_t mask, uint32_t flags, uint32_t *result,
                               struct probe_arg *a) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!result || (flags & ~RECV_FLAGS)) return FMX_BAD_REQUEST;
  *a = (struct probe_arg){.match = match, .mask = mask, .untagged = (flags & FMX_MSG_UNTAGGED) != 0};
  if (a->untagged) {
    a->match = a->mask = 0;
    return FMX_SUCCESS;
  }
  if (match & ~mask) return FMX_BAD_MATCH_MASK;
  return FMX_SUCCESS;
}

/* One pass under the lock: progress, then look. */
static fmx_return_t probe_once(fmx_endpoint_t ep, const fmx_endpoint_addr_t *source, struct probe_arg *a,
                               uint32_t *result) {
  ep_lock(ep);
  if (source && !(a->from = ep_partner_from_addr(ep, *source))) {
    ep_unlock(ep);
    return FMX_BAD_ADDRESS;
  }
  ep_progress_locked(ep);
  *result = (uint32_t)probe_check(ep, a);
  ep_unlock(ep);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_iprobe(fmx_endpoint_t ep, uint64_t match, uint64_t mask, fmx_status_t *status,
                            uint32_t *result) {
  return fmx_iprobex(ep, NULL, match, mask, 0, status, result);
}

API fmx_return_t fmx_iprobex(fmx_endpoint_t ep, const fmx_endpoint_addr_t *source, uint64_t match, uint64_t mask,
                             uint32_t flags, fmx_status_t *status, uint32_t *result) {
  struct probe_arg a;
  fmx_return_t rc = probe_args(ep, match, mask, flags, result, &a);
  if (rc) return rc;
  a.status = status;
  return probe_once(ep, source, &a, result);
}

API fmx_return_t fmx_probe(fmx_endpoint_t ep, uint32_t timeout_ms, uint64_t match, uint64_t mask,
                           fmx_status_t *status, uint32_t *result) {
  struct probe_arg a;
  fmx_return_t rc = probe_args(ep, match, mask, 0, result, &a);
  if (rc) return rc;
  a.status = status;
  *result = (uint32_t)ep_wait(ep, timeout_ms, probe_check, &a);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_improbe(fmx_endpoint_t ep, const fmx_endpoint_addr_t *source, uint64_t match, uint64_t mask,
                             uint32_t flags, fmx_message_t *message, fmx_status_t *status, uint32_t *result) {
  struct probe_arg a;
  fmx_return_t rc = probe_args(ep, match, mask, flags, result, &a);
  if (rc) return rc;
  if (!message) return FMX_BAD_REQUEST;
  a.status = status;
  a.claim = 1;
  rc = probe_once(ep, source, &a, result);
  *message = rc == FMX_SUCCESS && *result ? (fmx_message_t)a.found : NULL;
  return rc;
}

/* The claimed message *message names received into segs (checked) with
 * context; forgotten: no completion (fmx_mdiscard). FMX_BAD_REQUEST for a
 * handle that names none (NULL, stale, another endpoint's);
 * FMX_NO_RESOURCES leaves the handle valid. */
static fmx_return_t recv_claimed(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_message_t *message,
                                 void *context, int forgotten, fmx_request_t *request) {
  ep_lock(ep);
  struct unexp_msg *u = message ? (struct unexp_msg *)*message : NULL;
  fmx_return_t rc = FMX_SUCCESS;
  struct fmx_request *r = NULL;
  if (!u || !proto_is_claimed(&ep->pe, u)) {
    rc = FMX_BAD_REQUEST;
  } else if (!(r = recv_req_new(ep, segs, nsegs, u->match, UINT64_MAX,
                                u->flags & PROTO_F_UNTAGGED ? FMX_MSG_UNTAGGED : 0, context))) {
    rc = FMX_NO_RESOURCES;
  } else {
    if (forgotten) r->flags |= REQ_F_FORGOTTEN;
    if (request) *request = r;
    *message = NULL;
    proto_recv_claimed(ep, &r->m, u);
  }
  ep_unlock(ep);
  return rc;
}

API fmx_return_t fmx_imrecv(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_message_t *message,
                            void *context, fmx_request_t *request) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || !message) return FMX_BAD_REQUEST;
  uint64_t len;
  fmx_return_t rc = check_segs(segs, nsegs, &len);
  if (rc) return rc;
  return recv_claimed(ep, segs, nsegs, message, context, 0, request);
}

/* Received into nothing, its completion forgotten: the data is dropped and
 * a rendezvous sender gets its FIN. */
API fmx_return_t fmx_mdiscard(fmx_endpoint_t ep, fmx_message_t *message) {
  if (!ep) return FMX_BAD_ENDPOINT;
  return recv_claimed(ep, NULL, 0, message, NULL, 1, NULL);
}
