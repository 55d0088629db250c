/* SPDX-License-Identifier: MIT */
/*
 * Rendezvous: RTS (sender) -> match -> bulk engine -> FIN (receiver).
 * Receiver-pulled engines (cma) start at once; sender-pushed ones (ring,
 * vmsplice) and coop first send CTS {rreq, bytes wanted}. A truncating receiver asks only for
 * what fits; the sender still completes with success.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "base/errors.h"
#include "base/log.h"
#include "platform/sys.h"
#include "proto/proto_int.h"
#include "transport/transport.h"

/* A transfer's fields before its engine is chosen: ours and the peer's
 * as the engines know them. */
static void xfer_init(struct fmx_endpoint *ep, struct proto_msg *r, struct partner *p) {
  struct bulk_xfer *x = &r->xfer;
  memset(x, 0, sizeof *x);
  x->env = &proto_ep(ep)->benv;
  x->peer = transport_peer(p)->bulk;
  x->segs = r->segs;
  x->nseg = r->nseg;
  x->id = r->id;
}

static void send_fin(struct fmx_endpoint *ep, struct proto_msg *r, fmx_return_t err) {
  struct proto_hdr fin = {.type = PROTO_FIN, .sreq = r->xfer.peer_id, .msg_len = r->xfer.done};
  if (err) {
    fin.flags = PROTO_F_ERROR;
    fin.match = (uint64_t)err;
  }
  proto_send_ctl_of(ep, r, &fin);
}

int proto_sending_rndv(const struct proto_peer *pp) {
  const struct list_node *pos;
  if (!pp->live) return 0;
  list_for_each(pos, &pp->live->msgs) if (list_entry(pos, struct proto_msg, pnode)->flags & MSG_F_RNDV) return 1;
  return 0; /* only sends go rendezvous */
}

static void recv_finish(struct fmx_endpoint *ep, struct proto_msg *r, fmx_return_t err) {
  struct proto_ep *pe = proto_ep(ep);
  send_fin(ep, r, err);
  /* An exchange's receive is matched before or after our send, and our
   * send may complete before it does: a send in flight at either end tells
   * the next one (bulk_select, BULK_SEL_EXCHANGE). */
  struct proto_live *l = proto_peer(r->partner)->live; /* none: nothing was ever in flight with it */
  if (l) l->exchanged = (uint8_t)(r->sending || proto_sending_rndv(proto_peer(r->partner)));
  if (!err) {
    pe->last_engine = r->xfer.engine;
    pe->last_offloaded = r->xfer.offloaded;
    bulk_recv_done(&r->xfer);
    if (r->status.xfer_length < r->status.msg_length) PROTO_CNT(pe, TRUNCATED);
  } else {
    PROTO_CNT(pe, BULK_ERROR);
  }
  fmx_return_t code = err ? err : (r->status.xfer_length < r->status.msg_length ? FMX_MESSAGE_TRUNCATED : FMX_SUCCESS);
  /* Timed for the class choice: looked at once the message has left the
   * endpoint's transfers, so that its own does not count as another. */
  struct partner *p = r->partner;
  uint64_t len = r->status.msg_length, snap = r->class_snap;
  uint64_t t0 = err || r->status.xfer_length < len ? 0 : r->class_ns; /* a cut copy times nothing */
  proto_up->complete(ep, r, code);
  if (t0) proto_class_done(ep, p, len, 1, t0, snap, 0);
}

void rndv_recv_refuse(struct fmx_endpoint *ep, struct proto_msg *r, struct partner *p, uint64_t sreq,
                      fmx_return_t code) {
  r->partner = p;
  xfer_init(ep, r, p);
  r->xfer.peer_id = sreq;
  recv_finish(ep, r, code);
}

/* Every segment lies inside the mapped region m. */
static int covers(const struct region_map *m, const struct proto_seg *segs, uint32_t nseg) {
  for (uint32_t i = 0; i < nseg; i++)
    if (segs[i].len && !region_at(m, segs[i].addr, segs[i].len)) return 0;
  return 1;
}

void rndv_recv_start(struct fmx_endpoint *ep, struct proto_msg *r, struct partner *p, struct bulk_conn *lane,
                     uint64_t msg_len, uint64_t sreq, struct proto_seg *segs, uint32_t nseg, unsigned flags) {
  struct proto_ep *pe = proto_ep(ep);
  struct transport_peer *t = transport_peer(p);
  PROTO_CNT(pe, RECV_RNDV);
  r->state = MSG_MATCHED;
  r->partner = p;
  /* A pull from another host moves only with progress: it may stay
   * watched until it completes (core/progress.c decides); here a channel's
   * engine takes it. */
  if (proto_peer(p)->tp->remote)
    proto_up->watch(ep, r);
  else
    proto_up->unwatch(ep, r);
  xfer_init(ep, r, p);
  r->xfer.conn = lane;
  r->xfer.peer_id = sreq;
  r->xfer.rsegs = segs;
  r->xfer.nrseg = nseg;
  r->xfer.want = r->status.xfer_length;
  r->sending = (uint8_t)proto_sending_rndv(proto_peer(p));
  list_add_tail(&proto_peer(p)->live->msgs, &r->pnode); /* taken when its RTS came (proto_deliver) */
  /* The sender's segment list must hold what it announced. */
  uint64_t total = 0;
  for (uint32_t i = 0; i < nseg; i++) total += segs[i].len;
  /* From the sender's fmx_mem_alloc memory: map it, and every segment must
   * lie inside what it announced. */
  r->xfer.xsrc = NULL;
  int bad = total != msg_len;
  if ((flags & PROTO_F_XMEM) && !proto_peer(p)->tp->remote) {
    struct region_ref ref = region_from_wire(segs + nseg);
    const struct region_map *m = region_map_peer(&t->bulk->xmem, t->bulk->pidfd, t->eid, &ref);
    if (!m && fmx_cfg.xmem) PROTO_CNT(pe, XMEM_UNMAPPED);
    if (m && !covers(m, segs, nseg)) bad = 1;
    else r->xfer.xsrc = m;
  }
  int offload = 0, adapt = 0;
  /* Alone on the endpoint: its time is the engine's (adapt.c). */
  int alone = list_empty(&pe->bulk);
  const struct fmx_transport_ops *tp = proto_peer(p)->tp;
  if (tp->remote) { /* another host: its transport pulls the bytes (bulk/pull.c) */
    r->xfer.conn = tp->conn ? tp->conn(p) : NULL;
    r->xfer.engine = &bulk_pull;
  } else if (tp->same_space) { /* ourselves: the sender's addresses are ours, one plain copy */
    r->xfer.xsrc = &region_identity;
    r->xfer.engine = &bulk_cma;
  } else {
    int how = r->xfer.xsrc ? BULK_SEL_MAPPED : 0;
    if (r->sending || proto_peer(p)->live->exchanged) how |= BULK_SEL_EXCHANGE;
    if (nseg && r->xfer.nseg && copy_aliases((uintptr_t)r->xfer.segs[0].ptr, segs[0].addr)) how |= BULK_SEL_ALIASED;
    r->xfer.engine = bulk_select(&pe->benv, t->bulk, lane, r->xfer.want, how, pe->crowded, &offload, &adapt);
  }
  if (!r->xfer.engine->maps_peer) r->xfer.xsrc = NULL; /* it never reads through the mapping */
  r->xfer.adapt_seq = ++pe->benv.starts;
  /* A rendezvous the class choice may have asked for (not a synchronous
   * send, nor one from fmx_mem_alloc memory: those go rendezvous anyway). */
  r->class_ns = 0;
  if (!(flags & (PROTO_F_SYNC | PROTO_F_XMEM)) && !(r->flags & MSG_F_REGION))
    r->class_ns = proto_class_start(ep, p, msg_len, &r->class_snap);
  if (adapt && alone && !offload) {
    r->xfer.adapt = 1;
    r->xfer.adapt_ns = sys_now_ns();
  }
  if (bad) {
    PROTO_CNT(pe, BAD_PACKET);
    recv_finish(ep, r, FMX_MESSAGE_ABORTED);
    return;
  }
  if (r->xfer.want == 0) {
    recv_finish(ep, r, FMX_SUCCESS);
    return;
  }
  /* Engines with one transfer per connection direction at a time (coop's
   * area, vmsplice's pipe) claim it here; when it is busy the message goes
   * their fallback (cma, ring: the same rights). */
  bulk_recv_start(&r->xfer);
  if (r->xfer.engine->needs_cts) {
    struct proto_hdr cts = {.type = PROTO_CTS,
                            .flags = (uint8_t)(r->xfer.engine->wire_id << PROTO_CTS_ENGINE_SHIFT),
                            .match = r->xfer.tag,
                            .sreq = sreq,
                            .rreq = r->xfer.id,
                            .msg_len = r->xfer.want};
    proto_send_ctl_of(ep, r, &cts);
  }
  r->moved_ns = sys_now_ns();
  list_add_tail(&pe->bulk, &r->bnode);
  if (offload == OFFLOAD_NOW) offload_start(&r->xfer); /* else (no channels) we copy */
  else if (offload == OFFLOAD_AWAY) proto_up->defer(ep, r);
}

void rndv_on_cts(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h) {
  struct proto_ep *pe = proto_ep(ep);
  struct proto_msg *s = proto_up->lookup(ep, h->sreq, 1);
  if (!s || s->partner != p || !(s->flags & MSG_F_RNDV) || h->msg_len > s->len || list_linked(&s->bnode)) {
    PROTO_CNT(pe, BAD_PACKET);
    return;
  }
  const struct fmx_transport_ops *tp = proto_peer(p)->tp;
  const struct fmx_bulk_engine *e = bulk_for_wire(PROTO_CTS_ENGINE(h->flags));
  if ((e == &bulk_pull) != (tp->remote != 0)) { /* pulls cross hosts, and nothing else does */
    PROTO_CNT(pe, BAD_PACKET);
    return;
  }
  xfer_init(ep, s, p);
  s->xfer.engine = e;
  s->xfer.conn = tp->conn ? tp->conn(p) : NULL; /* where a sender-side engine works */
  s->xfer.send = 1;
  s->xfer.tag = (uint32_t)h->match;
  s->xfer.peer_id = h->rreq;
  s->xfer.want = h->msg_len;
  s->moved_ns = sys_now_ns();
  if (e->send_start) {
    int rc = e->send_start(&s->xfer);
    if (rc < 0) {
      proto_up->complete(ep, s, fmx_code(rc));
      return;
    }
  }
  list_add_tail(&pe->bulk, &s->bnode);
  proto_up->send_cts(ep, s); /* a channel may push for a sender that computes */
}

fmx_return_t rndv_peer_code(uint64_t code) {
  /* A peer may say anything. */
  if (code == FMX_SUCCESS || (code > FMX_NOT_IMPLEMENTED && code != FMX_REGION_NOT_FOUND &&
                              code != FMX_REGION_OUT_OF_RANGE))
    return FMX_MESSAGE_ABORTED;
  return (fmx_return_t)code;
}

void rndv_on_fin(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h) {
  struct proto_msg *s = proto_up->lookup(ep, h->sreq, 1);
  if (!s || s->partner != p || !(s->flags & MSG_F_RNDV)) {
    PROTO_CNT(proto_ep(ep), BAD_PACKET);
    return;
  }
  s->status.xfer_length = h->msg_len < s->len ? h->msg_len : s->len;
  if (h->flags & PROTO_F_ERROR) {
    proto_up->complete(ep, s, rndv_peer_code(h->match));
    return;
  }
  proto_up->complete(ep, s, FMX_SUCCESS);
}

void rndv_progress(struct fmx_endpoint *ep) {
  struct list_node *pos, *tmp;
  list_for_each_safe(pos, tmp, &proto_ep(ep)->bulk) {
    struct proto_msg *r = list_entry(pos, struct proto_msg, bnode);
    if (offload_in_channel && (r->flags & MSG_F_DEFERRED)) continue; /* handed to a job next */
    uint64_t before = r->xfer.done;
    int rc = bulk_progress(&r->xfer);
    if (!r->xfer.send) {
      if (r->xfer.done != before) r->moved_ns = sys_now_ns();
      if (rc == BULK_DONE)
        recv_finish(ep, r, FMX_SUCCESS);
      else if (rc < 0)
        recv_finish(ep, r, fmx_code(rc));
    } else {
      if (r->xfer.done != before) r->moved_ns = sys_now_ns();
      if (rc == BULK_DONE)
        list_del(&r->bnode); /* all pushed: completes on FIN */
      else if (rc < 0)
        proto_up->complete(ep, r, fmx_code(rc));
    }
  }
}

void proto_last_engine(const struct proto_ep *pe, char *out, size_t len) {
  if (!pe->last_engine)
    snprintf(out, len, "none");
  else
    snprintf(out, len, "%s%s", pe->last_engine->name, pe->last_offloaded ? "+offload" : "");
}

int proto_xfer_receiving(struct bulk_env *env) {
  struct proto_ep *pe = container_of(env, struct proto_ep, benv);
  struct list_node *pos;
  list_for_each(pos, &pe->bulk) if (!list_entry(pos, struct proto_msg, bnode)->xfer.send) return 1;
  return 0;
}

int proto_xfer_active(struct bulk_env *env, uint64_t id, int send, const struct fmx_bulk_engine *e) {
  struct fmx_endpoint *ep = container_of(env, struct proto_ep, benv)->ep;
  struct proto_msg *o = proto_up->lookup(ep, id, send);
  if (!o || o->xfer.engine != e) return 0;
  return send ? list_linked(&o->bnode) : o->state == MSG_MATCHED;
}
