/* SPDX-License-Identifier: MIT */
/* The receiving half: records in, matching, unexpected queue. */
#include <stdlib.h>
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "base/log.h"
#include "platform/sys.h"
#include "proto/proto_int.h"

void proto_fill_status(struct proto_msg *r, struct partner *p, uint64_t match, uint64_t msg_len) {
  r->partner = p;
  r->status.source = proto_up->addr(p);
  r->status.match_info = match;
  r->status.msg_length = msg_len;
  r->status.xfer_length = msg_len < r->len ? msg_len : r->len;
}

static void fill_data(fmx_status_t *st, unsigned hflags, uint64_t imm) {
  st->data = hflags & PROTO_F_DATA ? imm : 0;
  st->flags = (hflags & PROTO_F_DATA ? FMX_MSG_DATA : 0u) | (hflags & PROTO_F_UNTAGGED ? FMX_MSG_UNTAGGED : 0u);
}

void proto_fill_data(struct proto_msg *r, unsigned hflags, uint64_t imm) { fill_data(&r->status, hflags, imm); }

void proto_unexp_status(const struct unexp_msg *u, fmx_status_t *st) {
  memset(st, 0, sizeof *st);
  st->code = FMX_SUCCESS;
  st->source = proto_up->addr(u->partner);
  st->match_info = u->match;
  st->msg_length = st->xfer_length = u->msg_len;
  fill_data(st, u->flags, u->imm);
}

/* Eager data for a matched receive: copy what fits, never more. */
void proto_eager_complete(struct fmx_endpoint *ep, struct proto_msg *r, struct partner *p, uint64_t match,
                          const void *data, uint64_t len) {
  proto_fill_status(r, p, match, len);
  if (r->nseg == 1) { /* the common case, without copy_segs' walk */
    if (r->status.xfer_length) copy_regular(r->segs[0].ptr, data, r->status.xfer_length);
  } else
    copy_segs(r->segs, r->nseg, 0, (void *)data, r->status.xfer_length, 1, NULL);
  struct proto_ep *pe = proto_ep(ep);
  PROTO_CNT(pe, RECV_EAGER);
  if (r->status.xfer_length < len) PROTO_CNT(pe, TRUNCATED);
  proto_up->complete(ep, r, r->status.xfer_length < len ? FMX_MESSAGE_TRUNCATED : FMX_SUCCESS);
}

void proto_unexp_free(struct unexp_msg *u) {
  free(u->data);
  free(u);
}

struct unexp_msg *proto_unexp_new(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane,
                                  const struct proto_hdr *h, size_t bytes) {
  struct unexp_msg *u = sys_zalloc(sizeof *u);
  void *data = bytes && u ? sys_alloc(bytes) : NULL;
  if (!u || (bytes && !data)) {
    free(u);
    /* Dropping it would shift every later match from p by one message. */
    proto_abort(ep, p, FMX_NO_SYSTEM_RESOURCES, "an unexpected message");
    return NULL;
  }
  u->match = h->match;
  u->msg_len = h->msg_len;
  u->partner = p;
  u->type = h->type;
  u->flags = h->flags;
  u->nseg = h->nseg;
  u->sreq = h->sreq;
  u->imm = h->rreq;
  u->lane = lane;
  u->data = data;
  return u;
}

static void queue_unexpected(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane,
                             const struct proto_hdr *h, const void *payload) {
  struct unexp_msg *u = proto_unexp_new(ep, p, lane, h, h->len);
  if (!u) return; /* the connection is down */
  if (h->len) copy_regular(u->data, payload, h->len);
  struct proto_ep *pe = proto_ep(ep);
  PROTO_CNT(pe, UNEXPECTED);
  match_add_unexp(proto_mq(pe, h->flags & PROTO_F_UNTAGGED), u);
}

struct proto_msg *proto_take_arriving(struct fmx_endpoint *ep, struct partner *p, uint64_t match, uint64_t msg_len,
                                      unsigned hflags, const void *data, int *dropped) {
  struct proto_ep *pe = proto_ep(ep);
  struct match_queues *mq = proto_mq(pe, hflags & PROTO_F_UNTAGGED);
  *dropped = 0;
  struct proto_msg *r = proto_take_posted(ep, mq, match, p, msg_len);
  if (r || !pe->unexp_hook || (hflags & PROTO_F_UNTAGGED)) return r;
  if (proto_up->unexp(ep, p, match, msg_len, data)) {
    *dropped = 1;
    return NULL;
  }
  return proto_take_posted(ep, mq, match, p, msg_len);
}

void proto_deliver(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                   const void *payload) {
  struct proto_ep *pe = proto_ep(ep);
  /* A rendezvous or a write to a region puts a message in flight with p
   * (rndv_recv_start, now or once a receive takes it unexpected): p's
   * state of messages is taken first. Other records find it taken by
   * their request, or take it themselves (medium, hint, control records). */
  if ((h->type == PROTO_RTS || h->type == PROTO_RPUT) && !proto_live(p)) {
    proto_abort(ep, p, FMX_NO_SYSTEM_RESOURCES, "a partner's messages");
    return;
  }
  /* Nothing comes between the fragments of a medium message. */
  const struct medium_rx *med = proto_medium(proto_peer(p));
  if (h->type != PROTO_FRAG && med && (med[0].busy | med[1].busy)) medium_cut(ep, p, lane);
  switch (h->type) {
    case PROTO_EAGER: {
      if (h->msg_len > h->len) {
        medium_first(ep, p, lane, h, payload);
        return;
      }
      if (h->msg_len != h->len) goto bad;
      int dropped;
      struct proto_msg *r = proto_take_arriving(ep, p, h->match, h->len, h->flags, h->len ? payload : "", &dropped);
      if (dropped) return;
      if (r) {
        if (h->flags) proto_fill_data(r, h->flags, h->rreq);
        proto_eager_complete(ep, r, p, h->match, payload, h->len);
      } else {
        queue_unexpected(ep, p, lane, h, payload);
      }
      return;
    }
    case PROTO_RTS: {
      if (!record_rts_len_ok(h)) goto bad;
      int dropped;
      struct proto_msg *r = proto_take_arriving(ep, p, h->match, h->msg_len, h->flags, NULL, &dropped);
      /* Dropped by the handler: taken by a receive of nothing, as
       * fmx_mdiscard does, so that the sender completes (truncated);
       * without memory for one it waits unexpected instead. */
      if (dropped) r = proto_up->internal(ep, p, 0, NULL, 0);
      if (!r) {
        queue_unexpected(ep, p, lane, h, payload);
        return;
      }
      proto_fill_status(r, p, h->match, h->msg_len);
      proto_fill_data(r, h->flags, h->rreq);
      struct proto_seg *segs = h->len ? sys_alloc(h->len) : NULL;
      if (h->len && !segs) { /* this message fails, on both sides */
        rndv_recv_refuse(ep, r, p, h->sreq, FMX_NO_SYSTEM_RESOURCES);
        return;
      }
      if (h->len) memcpy(segs, payload, h->len);
      rndv_recv_start(ep, r, p, lane, h->msg_len, h->sreq, segs, h->nseg, h->flags);
      return;
    }
    case PROTO_CTS:
      rndv_on_cts(ep, p, h);
      return;
    case PROTO_FIN:
      rndv_on_fin(ep, p, h);
      return;
    case PROTO_FRAG:
      medium_next(ep, p, lane, h, payload);
      return;
    case PROTO_RGET:
      if (h->len) goto bad;
      rma_on_get(ep, p, h);
      return;
    case PROTO_RPUT:
    case PROTO_RGRANT:
      if (!record_rts_len_ok(h) || (h->type == PROTO_RGRANT && (h->flags & PROTO_F_ERROR) && h->len)) goto bad;
      (h->type == PROTO_RPUT ? rma_on_put : rma_on_grant)(ep, p, lane, h, payload);
      return;
    case PROTO_HINT:
      if (h->len) goto bad;
      proto_class_hint(p, h);
      return;
    case PROTO_CLOSE:
      log_info("FMX-PEER-CLOSED", "endpoint %u: peer endpoint %u closed", transport_ep(ep)->eid,
               transport_peer(p)->eid);
      proto_up->peer_fail(ep, p, PARTNER_CLOSED, FMX_REMOTE_ENDPOINT_CLOSED);
      return;
    default:
      break;
  }
bad:
  PROTO_CNT(pe, BAD_PACKET);
  log_warn_once("FMX-BAD-RECORD", "endpoint %u: malformed %s record from endpoint %u dropped", transport_ep(ep)->eid,
                proto_type_str(h->type), transport_peer(p)->eid);
}

void proto_recv_unpost(struct fmx_endpoint *ep, struct proto_msg *r) {
  match_unpost(proto_mq(proto_ep(ep), r->flags & MSG_F_UNTAGGED), r);
}

int proto_recv_cancel(struct fmx_endpoint *ep, struct proto_msg *r) {
  if (r->flags & MSG_F_MULTI) return proto_multi_close(ep, r, FMX_SUCCESS);
  proto_recv_unpost(ep, r);
  return 1;
}

void proto_recv_fail_from(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code) {
  for (int space = 0; space < 2; space++) {
    struct match_queues *mq = proto_mq(proto_ep(ep), space);
    struct proto_msg *r;
    while ((r = match_take_from(mq, p)) != NULL) {
      proto_up->unwatch(ep, r);
      if (r->flags & MSG_F_MULTI)
        proto_multi_end(ep, r, code);
      else
        proto_up->complete(ep, r, code);
    }
  }
}

void proto_take_unexpected(struct fmx_endpoint *ep, struct proto_msg *r, struct unexp_msg *u) {
  proto_fill_data(r, u->flags, u->imm);
  if (u->type == PROTO_EAGER) {
    proto_eager_complete(ep, r, u->partner, u->match, u->data, u->msg_len);
  } else {
    proto_fill_status(r, u->partner, u->match, u->msg_len);
    if (transport_peer(u->partner)->state != PARTNER_ALIVE) {
      proto_up->complete(ep, r, FMX_REMOTE_ENDPOINT_UNREACHABLE);
    } else {
      rndv_recv_start(ep, r, u->partner, u->lane, u->msg_len, u->sreq, u->data, u->nseg, u->flags);
      u->data = NULL; /* now owned by the request */
    }
  }
  proto_unexp_free(u);
}

struct unexp_msg *proto_probe(struct fmx_endpoint *ep, uint64_t info, uint64_t mask, const struct partner *from,
                              int untagged, int claim) {
  struct proto_ep *pe = proto_ep(ep);
  struct unexp_msg *u = match_find_unexp(proto_mq(pe, untagged), info, mask, from, claim);
  if (u && claim) list_add_tail(&pe->claimed, &u->all);
  return u;
}

int proto_is_claimed(struct proto_ep *pe, const struct unexp_msg *u) {
  struct list_node *pos;
  list_for_each(pos, &pe->claimed) {
    if (list_entry(pos, struct unexp_msg, all) == u) return 1;
  }
  return 0;
}

void proto_recv_claimed(struct fmx_endpoint *ep, struct proto_msg *r, struct unexp_msg *u) {
  list_del(&u->all);
  proto_take_unexpected(ep, r, u);
}

/* The common case (nothing unexpected fits: post it) kept apart from taking
 * an unexpected message. */
void proto_recv_post(struct fmx_endpoint *ep, struct proto_msg *r) {
  struct proto_ep *pe = proto_ep(ep);
  struct match_queues *mq = proto_mq(pe, r->flags & MSG_F_UNTAGGED);
  if (r->flags & MSG_F_MULTI) {
    proto_multi_post(ep, mq, r, match_find_unexp(mq, r->match, r->mask, r->from, 0));
    return;
  }
  struct unexp_msg *u = match_find_unexp(mq, r->match, r->mask, r->from, 1);
  if (u) {
    proto_take_unexpected(ep, r, u);
    return;
  }
  match_post(mq, r);
  /* A channel may match it while the application computes; not below the
   * rendezvous threshold, with no transfer to move (a call saved per
   * small receive), nor below what a partner on another host pulls. */
  uint64_t pull_min = transport_ep(ep)->pull_min;
  if (r->len >= fmx_cfg.rndv_threshold || (pull_min && r->len >= pull_min)) proto_up->watch(ep, r);
}
