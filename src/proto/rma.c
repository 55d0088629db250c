/* SPDX-License-Identifier: MIT */
/*
 * Region access (fmx_region_iread/iwrite; region/cookie.h): one-sided
 * reads and writes of a region a peer declared, made of the rendezvous'
 * parts. The owner checks the cookie, the access and the range before a
 * byte moves; then the engines copy once, as for a large message:
 *
 *   write: writer --RPUT (its segments)--> owner, who receives into the
 *          region's slice as into a matched receive (the engine it
 *          picks, CTS if that one pushes) --FIN--> writer completes.
 *   read:  reader --RGET--> owner --RGRANT (the slice's segments)-->
 *          reader, who receives as from an RTS --FIN--> owner.
 *
 * A refusal is an error FIN (write) or an error RGRANT (read) with the
 * code: nothing was read or written. The owner's side is a message of the
 * protocol's own (proto_core.internal) that nobody waits for.
 */
#include <string.h>

#include "base/log.h"
#include "platform/sys.h"
#include "proto/proto_int.h"

/* The region of h's cookie, for `access` over [off, off + len): FMX_SUCCESS
 * and its slice in out (*n segments), or the refusal's code. */
static fmx_return_t slice_of(struct fmx_endpoint *ep, struct partner *p, uint64_t cookie, uint64_t off,
                             uint64_t len, uint32_t access, fmx_seg_t *out, uint32_t *n) {
  struct proto_ep *pe = proto_ep(ep);
  const struct region_entry *e = region_table_find(&pe->regions, cookie);
  fmx_return_t code = e ? region_check(e, off, len, access) : FMX_REGION_NOT_FOUND;
  if (code) {
    PROTO_CNT(pe, RMA_REFUSED);
    log_info("FMX-RMA-REFUSED", "endpoint %u: region %s from endpoint %u refused: %s", transport_ep(ep)->eid,
             access == FMX_REGION_READ ? "read" : "write", transport_peer(p)->eid,
             !e ? "no such cookie" : code == FMX_ACCESS_DENIED ? "access denied" : "out of range");
    return code;
  }
  *n = region_slice(e, off, len, out);
  return FMX_SUCCESS;
}

static void refuse_read(struct fmx_endpoint *ep, struct partner *p, uint64_t rreq, fmx_return_t code) {
  struct proto_hdr g = {.type = PROTO_RGRANT, .flags = PROTO_F_ERROR, .match = (uint64_t)code, .rreq = rreq};
  proto_send_ctl(ep, p, &g);
}

static void fin_error(struct fmx_endpoint *ep, struct partner *p, uint64_t sreq, fmx_return_t code) {
  struct proto_hdr fin = {.type = PROTO_FIN, .flags = PROTO_F_ERROR, .match = (uint64_t)code, .sreq = sreq};
  proto_send_ctl(ep, p, &fin);
}

void proto_rma_read(struct fmx_endpoint *ep, struct proto_msg *m) {
  struct proto_live *l = proto_live(m->partner);
  if (!l) {
    proto_abort(ep, m->partner, FMX_NO_SYSTEM_RESOURCES, "a message's state");
    proto_up->complete(ep, m, FMX_NO_SYSTEM_RESOURCES);
    return;
  }
  list_add_tail(&l->msgs, &m->pnode); /* it fails with its owner */
  struct proto_hdr h = {.type = PROTO_RGET, .match = m->match, .msg_len = m->len, .sreq = m->id, .rreq = m->imm};
  proto_send_ctl_of(ep, m, &h);
}

void rma_on_get(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h) {
  fmx_seg_t slice[FMX_MAX_SEGMENTS];
  uint32_t n = 0;
  fmx_return_t code = slice_of(ep, p, h->match, h->rreq, h->msg_len, FMX_REGION_READ, slice, &n);
  struct proto_msg *m = code ? NULL : proto_up->internal(ep, p, 1, slice, n);
  if (!code && !m) code = FMX_NO_SYSTEM_RESOURCES;
  if (code) {
    refuse_read(ep, p, h->sreq, code);
    return;
  }
  PROTO_CNT(proto_ep(ep), RMA_READ);
  m->flags |= MSG_F_REGION | MSG_F_GRANT;
  m->imm = h->sreq;
  m->status.msg_length = m->status.xfer_length = m->len;
  proto_send_start(ep, m);
}

/* A copy of a record's segments (the engines keep it while they move):
 * NULL without memory, or when there are none. */
static struct proto_seg *segs_copy(const struct proto_hdr *h, const void *payload) {
  struct proto_seg *s = h->len ? sys_alloc(h->len) : NULL;
  if (s) memcpy(s, payload, h->len);
  return s;
}

void rma_on_put(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                const void *payload) {
  fmx_seg_t slice[FMX_MAX_SEGMENTS];
  uint32_t n = 0;
  fmx_return_t code = slice_of(ep, p, h->match, h->rreq, h->msg_len, FMX_REGION_WRITE, slice, &n);
  struct proto_msg *m = code ? NULL : proto_up->internal(ep, p, 0, slice, n);
  struct proto_seg *segs = m ? segs_copy(h, payload) : NULL;
  if (!code && (!m || (h->len && !segs))) code = FMX_NO_SYSTEM_RESOURCES;
  if (code) {
    if (m) proto_up->complete(ep, m, code); /* forgotten: freed */
    fin_error(ep, p, h->sreq, code);
    return;
  }
  PROTO_CNT(proto_ep(ep), RMA_WRITE);
  m->flags |= MSG_F_REGION;
  proto_fill_status(m, p, h->match, h->msg_len);
  rndv_recv_start(ep, m, p, lane, h->msg_len, h->sreq, segs, h->nseg, h->flags & PROTO_F_XMEM);
}

void rma_on_grant(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                  const void *payload) {
  struct proto_msg *r = proto_up->lookup(ep, h->rreq, 0);
  int err = (h->flags & PROTO_F_ERROR) != 0;
  if (!r || r->partner != p || !(r->flags & MSG_F_REGION) || r->state != MSG_PENDING ||
      (!err && h->msg_len != r->len)) {
    PROTO_CNT(proto_ep(ep), BAD_PACKET);
    if (!err) fin_error(ep, p, h->sreq, FMX_MESSAGE_ABORTED); /* the owner's send of it ends */
    if (r && r->partner == p && (r->flags & MSG_F_REGION) && r->state == MSG_PENDING)
      proto_up->complete(ep, r, FMX_MESSAGE_ABORTED);
    return;
  }
  if (err) {
    proto_up->complete(ep, r, rndv_peer_code(h->match));
    return;
  }
  struct proto_seg *segs = segs_copy(h, payload);
  list_del(&r->pnode); /* rndv_recv_start lists it again */
  if (h->len && !segs) {
    rndv_recv_refuse(ep, r, p, h->sreq, FMX_NO_SYSTEM_RESOURCES);
    return;
  }
  rndv_recv_start(ep, r, p, lane, h->msg_len, h->sreq, segs, h->nseg, h->flags & PROTO_F_XMEM);
}
