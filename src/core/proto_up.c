/* SPDX-License-Identifier: MIT */
/* What the protocol asks of the core (proto/proto.h): where its parts of
 * the endpoint and the partner lie, and the table of calls it is given at
 * fmx_init. */
#include "core/fmx_int.h"

struct proto_ep *proto_ep(struct fmx_endpoint *ep) { return &ep->pe; }

struct proto_peer *proto_peer(struct partner *p) { return &p->pp; }

static void complete(struct fmx_endpoint *ep, struct proto_msg *m, fmx_return_t code) {
  req_complete(ep, req_of(m), code);
}

static void release(struct fmx_endpoint *ep, struct proto_msg *m) { req_free(ep, req_of(m)); }

static struct proto_msg *lookup(struct fmx_endpoint *ep, uint64_t id, int send) {
  struct fmx_request *r = req_lookup(ep, id, send ? REQ_SEND : REQ_RECV);
  return r ? &r->m : NULL;
}

static void watch(struct fmx_endpoint *ep, struct proto_msg *m) { progress_watch(ep, req_of(m)); }
static void unwatch(struct fmx_endpoint *ep, struct proto_msg *m) { progress_unwatch(ep, req_of(m)); }
static void defer(struct fmx_endpoint *ep, struct proto_msg *m) { progress_defer(ep, req_of(m)); }
static void send_cts(struct fmx_endpoint *ep, struct proto_msg *m) { progress_send_cts(ep, req_of(m)); }

static struct proto_msg *internal(struct fmx_endpoint *ep, struct partner *p, int send, const fmx_seg_t *segs,
                                  uint32_t nseg) {
  struct fmx_request *r = req_alloc(ep, send ? REQ_SEND : REQ_RECV);
  if (!r) return NULL;
  if (req_set_segs(r, segs, nseg) < 0) {
    req_free(ep, r);
    return NULL;
  }
  req_untimed(ep, r); /* it ends with its peer, never by a timer */
  r->flags |= REQ_F_FORGOTTEN;
  r->m.partner = p;
  return &r->m;
}

static struct proto_msg *slice(struct fmx_endpoint *ep, struct proto_msg *b, const fmx_seg_t *seg) {
  struct fmx_request *r = req_alloc(ep, REQ_RECV);
  if (!r) return NULL;
  req_set_segs(r, seg, 1); /* one segment: no allocation */
  req_untimed(ep, r);
  r->m.status.context = b->status.context;
  r->m.flags = b->flags & MSG_F_UNTAGGED;
  return &r->m;
}

const struct proto_core core_for_proto = {
    .complete = complete,
    .release = release,
    .lookup = lookup,
    .watch = watch,
    .unwatch = unwatch,
    .defer = defer,
    .send_cts = send_cts,
    .peer_fail = ep_partner_fail,
    .peer_down = ep_partner_down,
    .queued = ep_partner_queued,
    .internal = internal,
    .slice = slice,
    .unexp = ep_unexp_call,
    .addr = ep_partner_addr,
};
