/* SPDX-License-Identifier: MIT */
/* The sending half of the protocol: message classes and the ordered queue. */
#include <stdlib.h>
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "base/log.h"
#include "platform/sys.h"
#include "transport/transport.h"
#include "proto/proto_int.h"

/* The non-empty segments as an iovec (a record's payload); their count. */
static int iov_of(const fmx_seg_t *segs, uint32_t nseg, struct iovec *iov) {
  int n = 0;
  for (uint32_t i = 0; i < nseg; i++)
    if (segs[i].len) iov[n++] = (struct iovec){segs[i].ptr, segs[i].len};
  return n;
}

static uint64_t frag_size(struct partner *p, const struct proto_peer *pp) {
  uint64_t ring = pp->tp->max_payload(p), f = fmx_cfg.eager_frag;
  if (f < 64) f = 64;
  return f < ring ? f : ring;
}

/* Crowded (ranks outnumber cores), a message longer than one fragment goes
 * rendezvous, one copy, when the peer's memory can be read and the ring
 * lacks room for it now: the receiver has yet to read records we pushed, or
 * the message is longer than an empty ring holds (2 x its largest record).
 * Eager, its fragments would wait in our queue for the receiver to get a
 * core; every copy made twice is time taken from another rank (alltoall
 * of 64 KiB among 8 ranks on 2 cores: 207 us instead of 358 us, Open
 * MPI's 206 us; docs/performance.md). When the ring takes it whole, the
 * send completes at once, where a rendezvous waits for the receiver's
 * next turn on a core: a blocking halo send (Intel MPI's mini-app, 16 KiB
 * halos with 4 ranks on 2 cores: halo time 0.25-0.32 s rendezvous against
 * Intel MPI's own shm 0.10-0.19 s; docs/progress.md). */
static int crowded_rndv(struct partner *p, const struct proto_peer *pp, uint64_t len) {
  return len > 2 * (uint64_t)pp->tp->max_payload(p) || (pp->tp->unread && pp->tp->unread(p)) || !proto_outq_empty(pp);
}

/* Eager messages longer than one fragment travel in fragments, so no
 * record is larger than the ring can take. Between two endpoints of one
 * process no longer than half the ring, which an empty ring takes whole:
 * the only thread in fmx may be one waiting on the receiving endpoint,
 * and nothing else would push the rest from the sending one.
 * The most an eager message of len bytes may carry to p; frag:
 * frag_size(p), which the caller has (one call through the transport's
 * table per send). */
static uint64_t eager_max(const struct proto_ep *pe, struct partner *p, const struct proto_peer *pp, uint64_t frag,
                          uint64_t len) {
  /* Another host: its transport says where pulling pays (docs/protocol.md). */
  if (pp->tp->eager_max) return pp->tp->eager_max(p);
  const struct bulk_peer *b = transport_peer(p)->bulk;
  uint64_t t = fmx_cfg.rndv_threshold ? fmx_cfg.rndv_threshold - 1 : 0;
  if (b->same_process && !b->is_self) {
    uint64_t ring = pp->tp->max_payload(p);
    if (t > ring) t = ring;
  }
  if (pe->crowded && !pe->rndv_explicit && !b->is_self && b->cma_ok && t > frag && len > frag &&
      crowded_rndv(p, pp, len))
    t = frag;
  return t < PROTO_EAGER_MAX ? t : PROTO_EAGER_MAX;
}

/* Push what is left of a medium message, a fragment at a time: 1 when all
 * of it is in the ring, 0 when the ring is full (o->off says how far). The
 * first fragment is an EAGER record with msg_len > len, the others FRAG
 * records (proto.h); the queue keeps every other record behind them. */
static int push_medium(struct fmx_endpoint *ep, struct partner *p, const struct proto_peer *pp, struct out_rec *o,
                       uint64_t frag) {
  struct proto_msg *r = o->msg;
  struct iovec iov[FMX_MAX_SEGMENTS];
  int all = 1;
  if (pp->tp->batch) pp->tp->batch(ep, r->len - o->off); /* the fragments may leave together */
  while (o->off < r->len) {
    /* Progressive, as the ring engine's slots: one page first, then each
     * fragment as long as what went before, up to frag, so the receiver
     * starts copying out at once. */
    uint64_t n = o->off < 4096 ? 4096 : o->off;
    if (n > frag) n = frag;
    if (n > r->len - o->off) n = r->len - o->off;
    struct proto_hdr h = o->hdr;
    h.len = (uint32_t)n;
    h.sreq = r->id;
    if (o->off) {
      h.type = PROTO_FRAG;
      h.msg_len = o->off;
    }
    int niov = bulk_iov_local(r->segs, r->nseg, o->off, n, iov, FMX_MAX_SEGMENTS);
    if (pp->tp->push(ep, p, &h, iov, niov) < 0) {
      all = 0;
      break;
    }
    o->off += n;
  }
  if (pp->tp->batch) pp->tp->batch(ep, 0);
  return all;
}

/* Try to put one record (a medium message: all its fragments) in the ring.
 * 1 pushed, 0 no room (yet). */
static int push_one(struct fmx_endpoint *ep, struct partner *p, struct out_rec *o) {
  struct proto_peer *pp = proto_peer(p);
  struct proto_msg *r = o->ctl ? NULL : o->msg;
  struct iovec iov[FMX_MAX_SEGMENTS];
  struct proto_seg segs[FMX_MAX_SEGMENTS + 2]; /* + an fmx_mem_alloc region */
  int n = 0;
  iov[0] = (struct iovec){NULL, 0};
  uint64_t frag = frag_size(p, pp);
  if (r && o->hdr.type == PROTO_EAGER && r->len > frag) {
    if (!push_medium(ep, p, pp, o, frag)) return 0;
    PROTO_CNT(proto_ep(ep), SEND_MEDIUM);
  } else {
    if (r && o->hdr.type == PROTO_EAGER) {
      n = iov_of(r->segs, r->nseg, iov);
    } else if (r && record_rts_shaped(o->hdr.type)) {
      if (pp->tp->remote)
        segs[0] = (struct proto_seg){0, r->len};
      else
        for (uint32_t i = 0; i < r->nseg; i++)
          segs[i] = (struct proto_seg){(uint64_t)(uintptr_t)r->segs[i].ptr, r->segs[i].len};
      if (o->hdr.flags & PROTO_F_XMEM) region_to_wire(&r->xref, segs + r->nseg);
      iov[0] = (struct iovec){segs, o->hdr.len};
      n = 1;
    }
    if (pp->tp->push(ep, p, &o->hdr, iov, n) < 0) return 0;
  }
  if (r && o->hdr.type == PROTO_EAGER) {
    PROTO_CNT(proto_ep(ep), SEND_EAGER);
    proto_up->complete(ep, r, FMX_SUCCESS); /* buffered: the bytes are in the ring */
  } else if (r) {
    PROTO_CNT(proto_ep(ep), SEND_RNDV);
    r->state = MSG_MATCHED; /* in flight: waits for FIN */
  }
  return 1;
}

/* o waits in p's queue (its state of messages taken by the message in
 * flight o is part of, or by send_ctl). */
static void queue_out(struct fmx_endpoint *ep, struct partner *p, struct out_rec *o) {
  struct proto_live *l = proto_peer(p)->live;
  if (list_empty(&l->outq)) proto_up->queued(ep, p);
  list_add_tail(&l->outq, &o->node);
}

/* 1 if pushed now, 0 if queued behind earlier records or a full ring. */
static int enqueue(struct fmx_endpoint *ep, struct partner *p, struct out_rec *o) {
  struct proto_peer *pp = proto_peer(p);
  if (proto_outq_empty(pp) && push_one(ep, p, o)) return 1;
  PROTO_CNT(proto_ep(ep), RING_FULL);
  queue_out(ep, p, o);
  return 0;
}

/* The record o has left the queue (pushed, or dropped with its partner). */
static void out_done(struct fmx_endpoint *ep, struct out_rec *o) {
  if (!o->ctl) return; /* a send's: its request goes on */
  if (!o->msg) {
    free(o);
    return;
  }
  if (o->msg->freed) { /* the application let the receive go meanwhile */
    o->msg->freed = 0;
    proto_up->release(ep, o->msg);
  }
}

void proto_out_drop(struct fmx_endpoint *ep, struct out_rec *o) {
  list_del(&o->node);
  out_done(ep, o);
}

void proto_flush(struct fmx_endpoint *ep, struct partner *p) {
  struct proto_live *l = proto_peer(p)->live;
  if (!l) return;
  struct list_node *q = &l->outq;
  while (!list_empty(q)) {
    struct out_rec *o = list_entry(q->next, struct out_rec, node);
    list_del(&o->node);
    if (!push_one(ep, p, o)) {
      /* put it back at the head */
      o->node.next = q->next;
      o->node.prev = q;
      q->next->prev = &o->node;
      q->next = &o->node;
      return;
    }
    out_done(ep, o);
  }
}

void proto_abort(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code, const char *what) {
  const struct transport_peer *t = transport_peer(p);
  if (t->state != PARTNER_ALIVE) return;
  PROTO_CNT(proto_ep(ep), NOMEM_ABORTS);
  log_warn("FMX-NOMEM-ABORT", "endpoint %u: no memory for %s from endpoint %u (pid %d): connection dropped, "
           "its requests fail on both sides", transport_ep(ep)->eid, what, t->eid, (int)t->bulk->pid);
  const struct fmx_transport_ops *tp = proto_peer(p)->tp;
  if (tp->abort) tp->abort(ep, p, code); /* self: no peer to tell */
  proto_up->peer_down(ep, p, PARTNER_DISCONNECTED, code);
}

/* A control record goes at once when nothing waits before it; else it
 * waits in the queue, in the receive r when it is one's (CTS, FIN: no
 * allocation, so none can fail), else in memory of its own. */
static void send_ctl(struct fmx_endpoint *ep, struct partner *p, struct proto_msg *r, const struct proto_hdr *h) {
  if (transport_peer(p)->state != PARTNER_ALIVE) return;
  struct proto_peer *pp = proto_peer(p);
  struct out_rec now = {.hdr = *h, .ctl = 1};
  if (proto_outq_empty(pp) && push_one(ep, p, &now)) return;
  if (!proto_live(p)) {
    proto_abort(ep, p, FMX_NO_SYSTEM_RESOURCES, "a control record");
    return;
  }
  struct out_rec *o;
  if (r) {
    o = &r->out;
    /* A CTS still waiting when the receive already ends (an error): the
     * FIN takes its place, and the sender needs no CTS any more. */
    int queued = o->ctl && list_linked(&o->node);
    o->hdr = *h;
    o->msg = r;
    o->ctl = 1;
    if (queued) return;
  } else if ((o = sys_zalloc(sizeof *o)) != NULL) {
    o->hdr = *h;
    o->ctl = 1;
  } else {
    proto_abort(ep, p, FMX_NO_SYSTEM_RESOURCES, "a control record");
    return;
  }
  PROTO_CNT(proto_ep(ep), RING_FULL);
  queue_out(ep, p, o);
}

void proto_send_ctl(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h) { send_ctl(ep, p, NULL, h); }

void proto_send_ctl_of(struct fmx_endpoint *ep, struct proto_msg *m, const struct proto_hdr *h) {
  send_ctl(ep, m->partner, m, h);
}

/* An eager message of one record, when nothing waits before it, goes into
 * the ring at once, from the caller's segments: its request, which is
 * only a receipt, is made after the push (api.c), off the latency path.
 * 1 pushed; 0 take the common path (proto_send_start). */
int proto_send_now(struct fmx_endpoint *ep, struct partner *p, const fmx_seg_t *segs, uint32_t nseg, uint64_t len,
                   uint64_t match, unsigned hflags, uint64_t imm) {
  struct proto_peer *pp = proto_peer(p);
  if (!proto_outq_empty(pp)) return 0;
  struct proto_ep *pe = proto_ep(ep);
  /* A tiny message is eager below the rendezvous threshold whatever the
   * ring or the crowding (both allow TRANSPORT_MIN_PAYLOAD): no call
   * through the transport's table to ask (8 B message rate, sender). */
  if (len > TRANSPORT_MIN_PAYLOAD || len >= fmx_cfg.rndv_threshold) {
    uint64_t frag = frag_size(p, pp); /* one call through the transport's table */
    if (len > frag || len > eager_max(pe, p, pp, frag, len)) return 0;
  }
  struct proto_hdr h = {
      .type = PROTO_EAGER, .flags = (uint8_t)hflags, .len = (uint32_t)len, .match = match, .msg_len = len, .rreq = imm};
  struct iovec iov[FMX_MAX_SEGMENTS];
  if (pp->tp->push(ep, p, &h, iov, iov_of(segs, nseg, iov)) < 0) return 0;
  PROTO_CNT(pe, SEND_EAGER);
  return 1;
}

void proto_send_start(struct fmx_endpoint *ep, struct proto_msg *r) {
  struct partner *p = r->partner;
  struct proto_peer *pp = proto_peer(p);
  const struct bulk_peer *b = transport_peer(p)->bulk;
  struct out_rec *o = &r->out;
  memset(&o->hdr, 0, sizeof o->hdr);
  o->msg = r;
  o->off = 0;
  o->hdr.match = r->match;
  o->hdr.msg_len = r->len;
  struct proto_live *l = proto_live(p);
  if (!l) { /* the peer may wait for it: the connection goes, as for any message without memory */
    proto_abort(ep, p, FMX_NO_SYSTEM_RESOURCES, "a message's state");
    proto_up->complete(ep, r, FMX_NO_SYSTEM_RESOURCES);
    return;
  }
  list_add_tail(&l->msgs, &r->pnode);
  uint64_t frag = frag_size(p, pp);
  int eager = !(r->flags & (MSG_F_SYNC | MSG_F_REGION)) && r->len <= eager_max(proto_ep(ep), p, pp, frag, r->len);
  /* Longer than a fragment: the receiver may have measured rendezvous
   * faster for its size (classes.c). */
  if (eager && r->len > frag && proto_class_wants_rndv(pp, r->len)) eager = 0;
  /* A rendezvous from fmx_mem_alloc memory announces its region, so the
   * receiver may map it (region/region.h). A message longer than one fragment
   * from it goes rendezvous: the receiver copies it once, where the medium
   * class copies it twice (one copy won from 32 KiB, even at 16 KiB:
   * docs/tuning.md, FMX_XMEM). xref.len stays 0 when nothing is found. */
  r->xref.len = 0;
  if (fmx_cfg.xmem && !b->is_self && !pp->tp->remote && (!eager || (b->cma_ok && r->len > frag)) &&
      region_find(r->segs, r->nseg, &r->xref))
    eager = 0;
  if (eager) {
    o->hdr.type = PROTO_EAGER;
    o->hdr.len = (uint32_t)r->len;
  } else {
    r->flags |= MSG_F_RNDV;
    o->hdr.type = PROTO_RTS;
    o->hdr.flags = (r->flags & MSG_F_SYNC) ? PROTO_F_SYNC : 0;
    /* Another host cannot use our addresses: it pulls the bytes by offset
     * (bulk/pull.c), and the RTS names one segment of the message's length. */
    o->hdr.nseg = pp->tp->remote ? 1 : (uint16_t)r->nseg;
    o->hdr.len = (uint32_t)(o->hdr.nseg * sizeof(struct proto_seg));
    if (r->xref.len) {
      o->hdr.flags |= PROTO_F_XMEM;
      o->hdr.len += 2 * sizeof(struct proto_seg);
    }
    o->hdr.sreq = r->id;
    proto_up->watch(ep, r); /* channel 0 may take the CTS while the application computes */
  }
  if (r->flags & MSG_F_UNTAGGED) o->hdr.flags |= PROTO_F_UNTAGGED;
  if (r->flags & MSG_F_REGION) { /* rma.c: a write to a region, or the answer to a read */
    o->hdr.type = r->flags & MSG_F_GRANT ? PROTO_RGRANT : PROTO_RPUT;
    o->hdr.rreq = r->imm;
  } else if (r->flags & MSG_F_DATA) {
    o->hdr.flags |= PROTO_F_DATA;
    o->hdr.rreq = r->imm;
  }
  enqueue(ep, p, o);
}
