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
#include "base/log.h"
#include "platform/sys.h"
#include "proto/proto_int.h"
#include "transport/transport.h"

static void send_fin(struct fmx_endpoint *ep, struct fmx_request *r, fmx_return_t err) {
  struct proto_hdr fin = {.type = PROTO_FIN, .sreq = r->sreq, .msg_len = r->done};
  if (err) {
    fin.flags = PROTO_F_ERROR;
    fin.match = (uint64_t)err;
  }
  proto_send_ctl_of(ep, r, &fin);
}

static void recv_finish(struct fmx_endpoint *ep, struct fmx_request *r, fmx_return_t err) {
  send_fin(ep, r, err);
  if (!err) {
    snprintf(ep->last_engine, sizeof ep->last_engine, "%s%s", r->engine->name,
             r->flags & REQ_F_OFFLOADED ? "+offload" : "");
    ep->counters[r->engine->cnt_msgs]++;
    if (r->xsrc && r->xsrc != &region_identity) CNT(ep, XMEM_RECV);
    adapt_record(ep, r);
    if (r->status.xfer_length < r->status.msg_length) CNT(ep, TRUNCATED);
  } else {
    CNT(ep, BULK_ERROR);
  }
  fmx_return_t code = err ? err : (r->status.xfer_length < r->status.msg_length ? FMX_MESSAGE_TRUNCATED : FMX_SUCCESS);
  req_complete(ep, r, code);
}

void rndv_recv_refuse(struct fmx_endpoint *ep, struct fmx_request *r, struct partner *p, uint64_t sreq,
                      fmx_return_t code) {
  r->partner = p;
  r->sreq = sreq;
  r->done = 0;
  recv_finish(ep, r, code);
}

/* Every segment lies inside the mapped region m. */
static int covers(const struct region_map *m, const struct proto_seg *segs, uint32_t nseg) {
  for (uint32_t i = 0; i < nseg; i++)
    if (segs[i].len && !region_at(m, segs[i].addr, segs[i].len)) return 0;
  return 1;
}

void rndv_recv_start(struct fmx_endpoint *ep, struct fmx_request *r, struct partner *p, struct bulk_conn *lane,
                     uint64_t msg_len, uint64_t sreq, struct proto_seg *segs, uint32_t nseg, unsigned flags) {
  CNT(ep, RECV_RNDV);
  progress_unwatch(ep, r);
  r->state = REQ_MATCHED;
  r->partner = p;
  r->conn = lane;
  r->sreq = sreq;
  r->rsegs = segs;
  r->nrseg = nseg;
  r->want = r->status.xfer_length;
  r->done = 0;
  list_add_tail(&p->reqs, &r->pnode);
  /* The sender's segment list must hold what it announced. */
  uint64_t total = 0;
  for (uint32_t i = 0; i < nseg; i++) total += segs[i].len;
  /* From the sender's fmx_mem_alloc memory: map it, and every segment must
   * lie inside what it announced. */
  r->xsrc = NULL;
  int bad = total != msg_len;
  if (flags & PROTO_F_XMEM) {
    struct region_ref ref = proto_region_from_wire(segs + nseg);
    const struct region_map *m = region_map_peer(&p->xmem, p->pidfd, p->eid, &ref);
    if (!m && fmx_cfg.xmem) CNT(ep, XMEM_UNMAPPED);
    if (m && !covers(m, segs, nseg)) bad = 1;
    else r->xsrc = m;
  }
  int offload = 0, adapt = 0;
  /* Alone on the endpoint: its time is the engine's (adapt.c). */
  int alone = list_empty(&ep->bulk);
  if (p->tp->same_space) { /* ourselves: the sender's addresses are ours, one plain copy */
    r->xsrc = &region_identity;
    r->engine = &bulk_cma;
  } else {
    r->engine = bulk_select(ep, p, lane, r->want, r->xsrc != NULL, &offload, &adapt);
  }
  if (!r->engine->maps_peer) r->xsrc = NULL; /* it never reads through the mapping */
  r->adapt_seq = ++ep->rndv_starts;
  if (adapt && alone && !offload) { /* its flags start clear (req_alloc) */
    r->flags |= REQ_F_ADAPT;
    r->adapt_ns = sys_now_ns();
  }
  if (bad) {
    CNT(ep, BAD_PACKET);
    recv_finish(ep, r, FMX_MESSAGE_ABORTED);
    return;
  }
  if (r->want == 0) {
    recv_finish(ep, r, FMX_SUCCESS);
    return;
  }
  /* Engines with one transfer per channel direction at a time (coop's
   * area, vmsplice's pipe) claim it here; when it is busy the message goes
   * their fallback (cma, ring: the same rights). */
  r->xfer_tag = 0;
  if (r->engine->recv_start && r->engine->recv_start(ep, r) != 0) r->engine = r->engine->fallback;
  if (r->engine->needs_cts) {
    struct proto_hdr cts = {.type = PROTO_CTS, .flags = r->engine->cts_flag, .match = r->xfer_tag,
                            .sreq = sreq, .rreq = req_id(r), .msg_len = r->want};
    proto_send_ctl_of(ep, r, &cts);
  }
  r->moved_ns = sys_now_ns();
  list_add_tail(&ep->bulk, &r->bnode);
  if (offload == OFFLOAD_NOW) offload_start(ep, r); /* else (no channels) we copy */
  else if (offload == OFFLOAD_AWAY) progress_defer(ep, r);
}

void rndv_on_cts(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h) {
  struct fmx_request *s = req_lookup(ep, h->sreq, REQ_SEND);
  if (!s || s->partner != p || !(s->flags & REQ_F_RNDV) || h->msg_len > s->len || list_linked(&s->bnode)) {
    CNT(ep, BAD_PACKET);
    return;
  }
  s->engine = bulk_for_cts(h->flags);
  s->conn = p->tp->conn ? p->tp->conn(p) : NULL; /* where a sender-side engine works */
  s->xfer_tag = (uint32_t)h->match;
  s->rreq = h->rreq;
  s->want = h->msg_len;
  s->done = 0;
  s->moved_ns = sys_now_ns();
  list_add_tail(&ep->bulk, &s->bnode);
  progress_send_cts(ep, s); /* a channel may push for a sender that computes */
}

void rndv_on_fin(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h) {
  struct fmx_request *s = req_lookup(ep, h->sreq, REQ_SEND);
  if (!s || s->partner != p || !(s->flags & REQ_F_RNDV)) {
    CNT(ep, BAD_PACKET);
    return;
  }
  s->status.xfer_length = h->msg_len < s->len ? h->msg_len : s->len;
  if (h->flags & PROTO_F_ERROR) {
    fmx_return_t code = (fmx_return_t)h->match;
    if (code == FMX_SUCCESS || code > FMX_NOT_IMPLEMENTED) code = FMX_MESSAGE_ABORTED; /* a peer says anything */
    req_complete(ep, s, code);
    return;
  }
  req_complete(ep, s, FMX_SUCCESS);
}

void rndv_progress(struct fmx_endpoint *ep) {
  struct list_node *pos, *tmp;
  list_for_each_safe(pos, tmp, &ep->bulk) {
    struct fmx_request *r = list_entry(pos, struct fmx_request, bnode);
    if (offload_in_channel && (r->flags & REQ_F_DEFERRED)) continue; /* handed to a job next */
    uint64_t before = r->done;
    if (r->kind == REQ_RECV) {
      int rc = r->job && !r->engine->offload_helps ? offload_poll(ep, r) : r->engine->recv_progress(ep, r);
      if (r->done != before) r->moved_ns = sys_now_ns();
      if (rc == BULK_DONE)
        recv_finish(ep, r, FMX_SUCCESS);
      else if (rc < 0)
        recv_finish(ep, r, (fmx_return_t)-rc);
    } else {
      int rc = r->job ? offload_poll(ep, r) : r->engine->send_progress(ep, r);
      if (r->done != before) r->moved_ns = sys_now_ns();
      if (rc == BULK_DONE)
        list_del(&r->bnode); /* all pushed: completes on FIN */
      else if (rc < 0)
        req_complete(ep, r, (fmx_return_t)-rc);
    }
  }
}
