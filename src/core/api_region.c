/* SPDX-License-Identifier: MIT */
/* The public calls of fmx.h about declared regions: create, destroy, and
 * the one-sided reads and writes of a peer's (proto/rma.c moves them). */
#include "core/api.h"

#define REGION_ACCESS (FMX_REGION_READ | FMX_REGION_WRITE)

API fmx_return_t fmx_region_create(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, uint32_t access,
                                   uint64_t *cookie) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!cookie || !access || (access & ~REGION_ACCESS)) return FMX_BAD_REQUEST;
  *cookie = 0;
  uint64_t len;
  fmx_return_t rc = check_segs(segs, nsegs, &len);
  if (rc) return rc;
  ep_lock(ep);
  int e = region_table_add(&ep->pe.regions, segs, nsegs, access, cookie);
  ep_unlock(ep);
  return e ? FMX_NO_RESOURCES : FMX_SUCCESS;
}

API fmx_return_t fmx_region_destroy(fmx_endpoint_t ep, uint64_t cookie) {
  if (!ep) return FMX_BAD_ENDPOINT;
  ep_lock(ep);
  int e = region_table_del(&ep->pe.regions, cookie);
  ep_unlock(ep);
  return e ? FMX_REGION_NOT_FOUND : FMX_SUCCESS;
}

static fmx_return_t access_common(fmx_endpoint_t ep, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                                  const fmx_seg_t *segs, uint32_t nsegs, void *context, fmx_request_t *request,
                                  int write) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request) return FMX_BAD_REQUEST;
  uint64_t len;
  fmx_return_t rc = check_segs(segs, nsegs, &len);
  if (rc) return rc;
  if (offset + len < offset) return FMX_REGION_OUT_OF_RANGE; /* no region reaches past 2^64 */
  ep_lock(ep);
  struct partner *p = ep_partner_from_addr(ep, owner);
  struct fmx_request *r = p ? req_alloc(ep, write ? REQ_SEND : REQ_RECV) : NULL;
  if (!p || !r || req_set_segs(r, segs, nsegs) < 0) {
    if (r) req_free(ep, r);
    ep_unlock(ep);
    return p ? FMX_NO_RESOURCES : FMX_BAD_ADDRESS;
  }
  struct proto_msg *m = &r->m;
  m->partner = p;
  m->match = cookie;
  m->imm = offset;
  m->flags |= MSG_F_REGION;
  m->status = (fmx_status_t){.context = context, .source = owner, .match_info = cookie, .msg_length = len,
                             .xfer_length = len};
  if (!write) req_untimed(ep, r); /* as a receive: the grant is a record the owner sends when it can */
  *request = r;
  if (p->t.state != PARTNER_ALIVE)
    req_complete(ep, r, gone_code(p));
  else if (p->pp.tp->remote) /* regions are reached on their own host only (docs/regions.md) */
    req_complete(ep, r, FMX_NOT_IMPLEMENTED);
  else if (write)
    proto_send_start(ep, m);
  else
    proto_rma_read(ep, m);
  ep_unlock(ep);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_region_iread(fmx_endpoint_t ep, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                                  const fmx_seg_t *segs, uint32_t nsegs, void *context, fmx_request_t *request) {
  return access_common(ep, owner, cookie, offset, segs, nsegs, context, request, 0);
}

API fmx_return_t fmx_region_iwrite(fmx_endpoint_t ep, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                                   const fmx_seg_t *segs, uint32_t nsegs, void *context, fmx_request_t *request) {
  return access_common(ep, owner, cookie, offset, segs, nsegs, context, request, 1);
}

static fmx_return_t access_wait(fmx_endpoint_t ep, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                                const fmx_seg_t *segs, uint32_t nsegs, fmx_status_t *status, int write) {
  fmx_request_t req;
  fmx_return_t rc = access_common(ep, owner, cookie, offset, segs, nsegs, NULL, &req, write);
  if (rc) return rc;
  fmx_status_t st;
  uint32_t done = 0;
  while (!done && (rc = fmx_wait(ep, &req, FMX_TIMEOUT_INFINITE, &st, &done)) == FMX_SUCCESS) {
  }
  if (rc) return rc;
  if (status) *status = st;
  return st.code;
}

API fmx_return_t fmx_region_read(fmx_endpoint_t ep, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                                 const fmx_seg_t *segs, uint32_t nsegs, fmx_status_t *status) {
  return access_wait(ep, owner, cookie, offset, segs, nsegs, status, 0);
}

API fmx_return_t fmx_region_write(fmx_endpoint_t ep, fmx_endpoint_addr_t owner, uint64_t cookie, uint64_t offset,
                                  const fmx_seg_t *segs, uint32_t nsegs, fmx_status_t *status) {
  return access_wait(ep, owner, cookie, offset, segs, nsegs, status, 1);
}
