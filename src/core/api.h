/* SPDX-License-Identifier: MIT */
/* What the public calls of the core share (api.c, api_probe.c): argument
 * checks and the making of a receive. Inside src/core/ only. */
#ifndef FMX_CORE_API_H
#define FMX_CORE_API_H

#include "core/fmx_int.h"

#define API __attribute__((visibility("default")))

/* A segment list must describe memory that can exist: no NULL pointer
 * with a length, no segment running past the end of the address space,
 * and a total that fits in 64 bits (two segments of 2^63 bytes once
 * wrapped to a 0-byte message and were delivered as a success). */
static inline __attribute__((always_inline)) fmx_return_t check_segs(const fmx_seg_t *segs, uint32_t nsegs, uint64_t *len) {
  if (nsegs > FMX_MAX_SEGMENTS) return FMX_SEGMENTS_BAD_COUNT;
  if (nsegs && !segs) return FMX_BAD_ADDRESS;
  uint64_t total = 0;
  for (uint32_t i = 0; i < nsegs; i++) {
    uintptr_t a = (uintptr_t)segs[i].ptr;
    if (!segs[i].len) continue;
    if (!a || segs[i].len > PTRDIFF_MAX || a + segs[i].len < a) return FMX_BAD_ADDRESS;
    if (total + segs[i].len < total) return FMX_BAD_ADDRESS;
    total += segs[i].len;
  }
  *len = total;
  return FMX_SUCCESS;
}

#define SEND_FLAGS (FMX_MSG_UNTAGGED | FMX_MSG_DATA | FMX_MSG_SYNC | FMX_MSG_NOW)
#define RECV_FLAGS FMX_MSG_UNTAGGED

/* What a request with a gone partner p completes with. */
static inline fmx_return_t gone_code(const struct partner *p) {
  return p->t.state == PARTNER_CLOSED ? FMX_REMOTE_ENDPOINT_CLOSED : FMX_REMOTE_ENDPOINT_UNREACHABLE;
}

/* A receive request for segs (checked), match and mask (checked), flags
 * (RECV_FLAGS) and context, not posted; NULL without memory. ep->lock
 * held. Inlined into fmx_irecv, as recv_common. */
static inline __attribute__((always_inline)) struct fmx_request *
recv_req_new(struct fmx_endpoint *ep, const fmx_seg_t *segs, uint32_t nsegs, uint64_t match, uint64_t mask,
             uint32_t flags, void *context) {
  struct fmx_request *r = req_alloc(ep, REQ_RECV);
  if (!r || req_set_segs(r, segs, nsegs) < 0) {
    if (r) req_free(ep, r);
    return NULL;
  }
  r->m.match = match;
  r->m.mask = mask;
  r->m.seq = ep->next_seq++;
  r->m.status.context = context;
  if (flags & FMX_MSG_UNTAGGED) r->m.flags |= MSG_F_UNTAGGED;
  req_untimed(ep, r);
  return r;
}

#endif
