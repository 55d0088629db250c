/* SPDX-License-Identifier: MIT */
/*
 * The medium class, receiving side: an eager message longer than
 * FMX_EAGER_FRAG arrives as an EAGER record with msg_len > len (its first
 * fragment) and FRAG records right behind it on the same ring (proto.h).
 * Each fragment is copied out as soon as it lands, while the sender copies
 * the next one in: the two copies of the eager class overlap, with no
 * rendezvous round trip. A matched receive takes the fragments directly; an
 * unexpected message is gathered in a buffer and queued only when whole, so
 * a receive posted meanwhile still matches it in order.
 */
#include <stdlib.h>
#include <string.h>

#include "bulk/engine.h"
#include "base/log.h"
#include "platform/sys.h"
#include "proto/proto_int.h"

/* The message in flight on this lane, or NULL. */
static struct medium_rx *slot_of(struct partner *p, struct bulk_conn *lane) {
  struct medium_rx *m = proto_medium(proto_peer(p));
  if (!m) return NULL;
  for (int i = 0; i < 2; i++)
    if (m[i].busy && m[i].lane == lane) return &m[i];
  return NULL;
}

/* A free slot, or NULL with *nomem set when p's slots could not be taken. */
static struct medium_rx *free_slot(struct partner *p, int *nomem) {
  struct proto_live *l = proto_live(p);
  if (!l || (!l->medium && !(l->medium = sys_zalloc(2 * sizeof *l->medium)))) {
    *nomem = 1;
    return NULL;
  }
  for (int i = 0; i < 2; i++)
    if (!l->medium[i].busy) return &l->medium[i];
  return NULL;
}

static void drop(struct fmx_endpoint *ep, struct medium_rx *m) {
  if (m->unexp) proto_unexp_free(m->unexp);
  if (m->busy) proto_ep(ep)->medium_live--;
  memset(m, 0, sizeof *m);
}

static void bad(struct fmx_endpoint *ep, struct partner *p, const char *why) {
  PROTO_CNT(proto_ep(ep), BAD_PACKET);
  log_warn_once("FMX-BAD-FRAGMENT", "endpoint %u: %s from endpoint %u dropped", transport_ep(ep)->eid, why,
                transport_peer(p)->eid);
}

/* The message in flight on lane will never be whole: its receive fails. */
static void abort_one(struct fmx_endpoint *ep, struct medium_rx *m) {
  if (m->msg) proto_up->complete(ep, m->msg, FMX_MESSAGE_ABORTED);
  drop(ep, m);
}

void medium_cut(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane) {
  struct medium_rx *m = slot_of(p, lane);
  if (!m) return;
  bad(ep, p, "medium message cut short by another record");
  abort_one(ep, m);
}

void medium_reset(struct fmx_endpoint *ep, struct partner *p) {
  struct medium_rx *m = proto_medium(proto_peer(p));
  if (!m) return;
  for (int i = 0; i < 2; i++) drop(ep, &m[i]);
}

static void finish(struct fmx_endpoint *ep, struct partner *p, struct medium_rx *m) {
  struct proto_ep *pe = proto_ep(ep);
  PROTO_CNT(pe, RECV_MEDIUM);
  if (m->msg) {
    struct proto_msg *r = m->msg;
    PROTO_CNT(pe, RECV_EAGER);
    int trunc = r->status.xfer_length < r->status.msg_length;
    if (trunc) PROTO_CNT(pe, TRUNCATED);
    uint64_t total = m->total, t0 = trunc ? 0 : m->class_ns, snap = m->class_snap; /* a cut copy times nothing */
    int both = m->class_both;
    drop(ep, m);
    proto_up->complete(ep, r, trunc ? FMX_MESSAGE_TRUNCATED : FMX_SUCCESS);
    proto_class_done(ep, p, total, 0, t0, snap, both);
    return;
  }
  struct unexp_msg *u = m->unexp;
  m->unexp = NULL;
  drop(ep, m);
  /* Whole now: a receive posted while it arrived comes first. */
  struct match_queues *mq = proto_mq(pe, u->flags & PROTO_F_UNTAGGED);
  int dropped;
  struct proto_msg *r = proto_take_arriving(ep, p, u->match, u->msg_len, u->flags, u->data, &dropped);
  if (dropped) {
    proto_unexp_free(u);
  } else if (r) {
    proto_fill_data(r, u->flags, u->imm);
    proto_eager_complete(ep, r, p, u->match, u->data, u->msg_len);
    proto_unexp_free(u);
  } else {
    PROTO_CNT(pe, UNEXPECTED);
    match_add_unexp(mq, u);
  }
}

/* Copy [off, off+len) of the message out of the ring. */
static void take(struct medium_rx *m, uint64_t off, const void *data, uint64_t len) {
  if (m->msg) {
    uint64_t fit = m->msg->status.xfer_length;
    if (off < fit) copy_segs(m->msg->segs, m->msg->nseg, off, (void *)data, len < fit - off ? len : fit - off, 1, NULL);
  } else if (m->unexp) {
    copy_regular((char *)m->unexp->data + off, data, len);
  }
  m->got += len;
}

void medium_first(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                  const void *payload) {
  if (h->len == 0 || h->msg_len > PROTO_EAGER_MAX) {
    bad(ep, p, "malformed medium message");
    return;
  }
  int nomem = 0;
  struct medium_rx *m = free_slot(p, &nomem);
  if (nomem) { /* dropping it would shift every later match from p by one message */
    proto_abort(ep, p, FMX_NO_SYSTEM_RESOURCES, "a medium message");
    return;
  }
  if (!m) { /* both slots busy: cannot be (one per lane) */
    bad(ep, p, "medium message on an unknown lane");
    return;
  }
  struct proto_ep *pe = proto_ep(ep);
  pe->medium_starts++;
  uint64_t snap = 0, t0 = proto_class_start(ep, p, h->msg_len, &snap);
  m->busy = 1;
  pe->medium_live++;
  m->lane = lane;
  m->sreq = h->sreq;
  m->total = h->msg_len;
  struct proto_msg *r = proto_take_posted(ep, proto_mq(pe, h->flags & PROTO_F_UNTAGGED), h->match, p, h->msg_len);
  if (r) {
    /* Timed only into a receive posted before it came: an unexpected
     * one waits for the application, whose time it is not. */
    m->class_ns = t0;
    m->class_snap = snap;
    m->class_both = t0 && proto_peer(p)->tp->unread && proto_peer(p)->tp->unread(p);
    proto_up->unwatch(ep, r);
    proto_fill_status(r, p, h->match, h->msg_len);
    proto_fill_data(r, h->flags, h->rreq);
    r->state = MSG_MATCHED;
    list_add_tail(&proto_peer(p)->live->msgs, &r->pnode); /* a dying peer completes it (its slot took live) */
    m->msg = r;
  } else {
    m->unexp = proto_unexp_new(ep, p, lane, h, h->msg_len);
    if (!m->unexp) return; /* no memory: the connection is down, and its slots cleared */
  }
  take(m, 0, payload, h->len);
}

void medium_next(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                 const void *payload) {
  struct medium_rx *m = slot_of(p, lane);
  if (!m || h->sreq != m->sreq || h->msg_len != m->got || h->len == 0 || h->len > m->total - m->got) {
    bad(ep, p, "fragment out of place");
    if (m) abort_one(ep, m);
    return;
  }
  take(m, h->msg_len, payload, h->len);
  if (m->got == m->total) finish(ep, p, m);
}
