/* SPDX-License-Identifier: MIT */
/* fi_msg and fi_tagged: sends, injects and receives onto fmx_isendx and
 * fmx_irecvx (untagged ones in fmx's untagged space), remote CQ data as
 * fmx's 64-bit data, directed receives, and fi_trecvmsg's FI_PEEK,
 * FI_CLAIM and FI_DISCARD onto fmx_iprobex, fmx_improbe, fmx_imrecv and
 * fmx_mdiscard. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "ofi/ofi_int.h"

/* An iovec is an fmx_seg_t: the list is handed over as it is. */
_Static_assert(sizeof(struct iovec) == sizeof(fmx_seg_t) && offsetof(struct iovec, iov_base) == offsetof(fmx_seg_t, ptr) &&
                   offsetof(struct iovec, iov_len) == offsetof(fmx_seg_t, len),
               "struct iovec and fmx_seg_t differ");

#define EP(fep) ((struct ofx_ep *)(fep))

/* A short send handed to fmx now or not at all (FMX_MSG_NOW): no
 * operation, no fmx request, no copy of an inject's bytes (they are in the
 * peer's ring when the call returns); its completion, when one is asked
 * for, goes to the queue at once, as fmx's receipt would have. 1 done
 * (*rc its result), 0 take the common path (it could not go now). Lock
 * held. Open MPI's 8 B ping-pong: see docs/ofi.md, Latency. */
static int send_now(struct ofx_ep *ep, const struct iovec *iov, size_t count, fmx_endpoint_addr_t to, uint64_t tag,
                    uint64_t data, uint32_t fx, void *context, int report, uint64_t opflags, ssize_t *rc) {
  fmx_request_t none;
  fmx_return_t r = fmx_isendx(ep->fx, (const fmx_seg_t *)iov, (uint32_t)count, to, tag, data, fx | FMX_MSG_NOW,
                              NULL, &none);
  if (r == FMX_NO_RESOURCES) return 0;
  *rc = -ofx_errno(r);
  if (r != FMX_SUCCESS) return 1;
  if (report && ep->txcq) {
    struct fi_cq_tagged_entry e = {.op_context = context, .flags = opflags};
    ofx_cq_push(ep->txcq, &e, ep->av, NULL);
  }
  if (ep->cntr[OFX_CNT_SEND]) ofx_cntr_inc(ep->cntr[OFX_CNT_SEND], 0);
  return 1;
}

/* The one send: tagged or not, inject (copied, no completion) or not. */
static ssize_t send_common(struct ofx_ep *ep, const struct iovec *iov, size_t count, fi_addr_t dest, uint64_t tag,
                           uint64_t data, uint64_t flags, void *context, int tagged) {
  if (count > FMX_MAX_SEGMENTS || (count && !iov)) return -FI_EINVAL;
  if (!ep->enabled) return -FI_EOPBADSTATE;
  uint32_t fx = (tagged ? 0 : FMX_MSG_UNTAGGED) | (flags & FI_REMOTE_CQ_DATA ? FMX_MSG_DATA : 0);
  size_t len = 0;
  for (size_t i = 0; i < count; i++) len += iov[i].iov_len;
  if ((flags & FI_INJECT) && len > OFX_INJECT) return -FI_EMSGSIZE;
  uint64_t opflags = FI_SEND | (tagged ? FI_TAGGED : FI_MSG);
  int report = !(flags & FI_INJECT) && (!ep->tx_selective || (flags & FI_COMPLETION));
  OFX_LOCK(ep);
  fmx_endpoint_addr_t to;
  ssize_t rc = ofx_ep_addr(ep, dest, &to);
  if (!rc && len <= OFX_INJECT &&
      send_now(ep, iov, count, to, tagged ? tag : 0, data, fx, context, report, opflags, &rc)) {
    OFX_UNLOCK(ep);
    return rc;
  }
  struct ofx_op *op = rc ? NULL : ofx_op_get(ep);
  if (!rc && !op) rc = -FI_EAGAIN;
  if (rc) {
    OFX_UNLOCK(ep);
    return rc;
  }
  op->context = context;
  op->flags = opflags;
  fmx_seg_t one, *segs = (fmx_seg_t *)iov;
  uint32_t nsegs = (uint32_t)count;
  op->report = report;
  if (flags & FI_INJECT) {
    if ((rc = ofx_op_inject(op, iov, count, &one)) != 0) {
      ofx_op_put(ep, op);
      OFX_UNLOCK(ep);
      return rc;
    }
    segs = &one;
    nsegs = 1;
  }
  rc = ofx_op_posted(ep, op, fmx_isendx(ep->fx, segs, nsegs, to, tagged ? tag : 0, data, fx, op, &op->req));
  OFX_UNLOCK(ep);
  return rc;
}

/* FI_PEEK: what is there, as a completion (FI_ENOMSG when nothing fits);
 * with FI_CLAIM it is kept for a later FI_CLAIM receive under the same
 * context, with FI_DISCARD dropped. Lock held. */
static ssize_t peek(struct ofx_ep *ep, const fmx_endpoint_addr_t *from, uint64_t match, uint64_t mask,
                    uint32_t fx, uint64_t flags, void *context, int tagged) {
  if (!ep->rxcq) return -FI_ENOCQ;
  fmx_status_t st;
  uint32_t found = 0;
  fmx_message_t msg = NULL;
  int keep = (flags & (FI_CLAIM | FI_DISCARD)) != 0;
  struct ofx_claim *c = NULL;
  if ((flags & FI_CLAIM) && !(c = malloc(sizeof *c))) return -FI_EAGAIN;
  fmx_return_t r = keep ? fmx_improbe(ep->fx, from, match, mask, fx, &msg, &st, &found)
                        : fmx_iprobex(ep->fx, from, match, mask, fx, &st, &found);
  if (r != FMX_SUCCESS) {
    free(c);
    return -ofx_errno(r);
  }
  struct fi_cq_tagged_entry e = {.op_context = context, .flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG)};
  if (!found) {
    free(c);
    ofx_cq_push_err(ep->rxcq, &e, FI_ENOMSG, FMX_SUCCESS, 0);
    return 0;
  }
  if (flags & FI_CLAIM) {
    c->context = context;
    c->msg = msg;
    c->next = ep->claims;
    ep->claims = c;
  } else if (flags & FI_DISCARD) {
    fmx_mdiscard(ep->fx, &msg);
  }
  e.flags |= st.flags & FMX_MSG_DATA ? FI_REMOTE_CQ_DATA : 0;
  e.len = (size_t)st.msg_length;
  e.data = st.data;
  e.tag = st.match_info;
  ofx_cq_push(ep->rxcq, &e, ep->av, &st.source);
  return 0;
}

/* FI_CLAIM without FI_PEEK: the message a peek claimed under context,
 * received into iov or (FI_DISCARD) dropped. Lock held. */
static ssize_t claim(struct ofx_ep *ep, const struct iovec *iov, size_t count, uint64_t flags, void *context,
                     int tagged) {
  struct ofx_claim **pc = &ep->claims;
  while (*pc && (*pc)->context != context) pc = &(*pc)->next;
  struct ofx_claim *c = *pc;
  if (!c) return -FI_EINVAL;
  uint64_t cflags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
  if (flags & FI_DISCARD) {
    fmx_mdiscard(ep->fx, &c->msg);
    *pc = c->next;
    free(c);
    struct fi_cq_tagged_entry e = {.op_context = context, .flags = cflags};
    if (ep->rxcq) ofx_cq_push(ep->rxcq, &e, NULL, NULL);
    return 0;
  }
  struct ofx_op *op = ofx_op_get(ep);
  if (!op) return -FI_EAGAIN;
  op->context = context;
  op->flags = cflags;
  op->buf = count ? iov[0].iov_base : NULL;
  op->report = 1;
  ssize_t rc = ofx_op_posted(ep, op, fmx_imrecv(ep->fx, (const fmx_seg_t *)iov, (uint32_t)count, &c->msg, op, &op->req));
  if (rc) return rc;
  *pc = c->next;
  free(c);
  return 0;
}

/* The one receive. */
static ssize_t recv_common(struct ofx_ep *ep, const struct iovec *iov, size_t count, fi_addr_t src, uint64_t tag,
                           uint64_t ignore, uint64_t flags, void *context, int tagged) {
  if (count > FMX_MAX_SEGMENTS || (count && !iov)) return -FI_EINVAL;
  if (!ep->enabled) return -FI_EOPBADSTATE;
  /* A multi-receive buffer: untagged, one segment (docs/ofi.md). */
  if ((flags & FI_MULTI_RECV) && (tagged || count != 1 || !(ep->caps & FI_MULTI_RECV))) return -FI_EINVAL;
  uint64_t match = tagged ? tag & ~ignore : 0, mask = tagged ? ~ignore : 0;
  uint32_t fx = tagged ? 0 : FMX_MSG_UNTAGGED;
  OFX_LOCK(ep);
  ssize_t rc = 0;
  fmx_endpoint_addr_t from_addr, *from = NULL;
  if ((flags & FI_CLAIM) && !(flags & FI_PEEK)) {
    rc = claim(ep, iov, count, flags, context, tagged);
    goto out;
  }
  if (src != FI_ADDR_UNSPEC && (ep->caps & FI_DIRECTED_RECV)) {
    rc = ofx_ep_addr(ep, src, &from_addr);
    if (rc) goto out;
    from = &from_addr;
  }
  if (flags & FI_PEEK) {
    rc = peek(ep, from, match, mask, fx, flags, context, tagged);
    goto out;
  }
  struct ofx_op *op = ofx_op_get(ep);
  if (!op) {
    rc = -FI_EAGAIN;
    goto out;
  }
  op->context = context;
  op->flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
  op->buf = count ? iov[0].iov_base : NULL;
  op->report = !ep->rx_selective || (flags & FI_COMPLETION);
  if (flags & FI_MULTI_RECV) {
    op->flags |= FI_MULTI_RECV;
    rc = ofx_op_posted(ep, op,
                       fmx_irecv_multi(ep->fx, iov[0].iov_base, iov[0].iov_len, ep->min_multi_recv, from, 0, 0,
                                       FMX_MSG_UNTAGGED, op, &op->req));
  } else {
    rc = ofx_op_posted(
        ep, op, fmx_irecvx(ep->fx, (const fmx_seg_t *)iov, (uint32_t)count, from, match, mask, fx, op, &op->req));
  }
out:
  OFX_UNLOCK(ep);
  return rc;
}

/* ---- fi_tagged --------------------------------------------------------- */

static ssize_t t_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t tag,
                      uint64_t ignore, void *context) {
  (void)desc;
  struct iovec iov = {buf, len};
  return recv_common(EP(fep), &iov, 1, src, tag, ignore, EP(fep)->rx_flags, context, 1);
}

static ssize_t t_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
                       uint64_t tag, uint64_t ignore, void *context) {
  (void)desc;
  return recv_common(EP(fep), iov, count, src, tag, ignore, EP(fep)->rx_flags, context, 1);
}

static ssize_t t_recvmsg(struct fid_ep *fep, const struct fi_msg_tagged *m, uint64_t flags) {
  if (!m) return -FI_EINVAL;
  return recv_common(EP(fep), m->msg_iov, m->iov_count, m->addr, m->tag, m->ignore, flags, m->context, 1);
}

static ssize_t t_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t tag,
                      void *context) {
  (void)desc;
  struct iovec iov = {(void *)buf, len};
  return send_common(EP(fep), &iov, 1, dest, tag, 0, EP(fep)->tx_flags, context, 1);
}

static ssize_t t_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
                       uint64_t tag, void *context) {
  (void)desc;
  return send_common(EP(fep), iov, count, dest, tag, 0, EP(fep)->tx_flags, context, 1);
}

static ssize_t t_sendmsg(struct fid_ep *fep, const struct fi_msg_tagged *m, uint64_t flags) {
  if (!m) return -FI_EINVAL;
  return send_common(EP(fep), m->msg_iov, m->iov_count, m->addr, m->tag, m->data, flags, m->context, 1);
}

static ssize_t t_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest, uint64_t tag) {
  struct iovec iov = {(void *)buf, len};
  return send_common(EP(fep), &iov, 1, dest, tag, 0, FI_INJECT, NULL, 1);
}

static ssize_t t_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc, uint64_t data,
                          fi_addr_t dest, uint64_t tag, void *context) {
  (void)desc;
  struct iovec iov = {(void *)buf, len};
  return send_common(EP(fep), &iov, 1, dest, tag, data, EP(fep)->tx_flags | FI_REMOTE_CQ_DATA, context, 1);
}

static ssize_t t_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
                            uint64_t tag) {
  struct iovec iov = {(void *)buf, len};
  return send_common(EP(fep), &iov, 1, dest, tag, data, FI_INJECT | FI_REMOTE_CQ_DATA, NULL, 1);
}

struct fi_ops_tagged ofx_tagged_ops = {
    .size = sizeof(struct fi_ops_tagged),
    .recv = t_recv,
    .recvv = t_recvv,
    .recvmsg = t_recvmsg,
    .send = t_send,
    .sendv = t_sendv,
    .sendmsg = t_sendmsg,
    .inject = t_inject,
    .senddata = t_senddata,
    .injectdata = t_injectdata,
};

/* ---- fi_msg ------------------------------------------------------------ */

static ssize_t m_recv(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src, void *context) {
  (void)desc;
  struct iovec iov = {buf, len};
  return recv_common(EP(fep), &iov, 1, src, 0, 0, EP(fep)->rx_flags, context, 0);
}

static ssize_t m_recvv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
                       void *context) {
  (void)desc;
  return recv_common(EP(fep), iov, count, src, 0, 0, EP(fep)->rx_flags, context, 0);
}

static ssize_t m_recvmsg(struct fid_ep *fep, const struct fi_msg *m, uint64_t flags) {
  if (!m) return -FI_EINVAL;
  return recv_common(EP(fep), m->msg_iov, m->iov_count, m->addr, 0, 0, flags, m->context, 0);
}

static ssize_t m_send(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest, void *context) {
  (void)desc;
  struct iovec iov = {(void *)buf, len};
  return send_common(EP(fep), &iov, 1, dest, 0, 0, EP(fep)->tx_flags, context, 0);
}

static ssize_t m_sendv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
                       void *context) {
  (void)desc;
  return send_common(EP(fep), iov, count, dest, 0, 0, EP(fep)->tx_flags, context, 0);
}

static ssize_t m_sendmsg(struct fid_ep *fep, const struct fi_msg *m, uint64_t flags) {
  if (!m) return -FI_EINVAL;
  return send_common(EP(fep), m->msg_iov, m->iov_count, m->addr, 0, m->data, flags, m->context, 0);
}

static ssize_t m_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest) {
  struct iovec iov = {(void *)buf, len};
  return send_common(EP(fep), &iov, 1, dest, 0, 0, FI_INJECT, NULL, 0);
}

static ssize_t m_senddata(struct fid_ep *fep, const void *buf, size_t len, void *desc, uint64_t data,
                          fi_addr_t dest, void *context) {
  (void)desc;
  struct iovec iov = {(void *)buf, len};
  return send_common(EP(fep), &iov, 1, dest, 0, data, EP(fep)->tx_flags | FI_REMOTE_CQ_DATA, context, 0);
}

static ssize_t m_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data, fi_addr_t dest) {
  struct iovec iov = {(void *)buf, len};
  return send_common(EP(fep), &iov, 1, dest, 0, data, FI_INJECT | FI_REMOTE_CQ_DATA, NULL, 0);
}

struct fi_ops_msg ofx_msg_ops = {
    .size = sizeof(struct fi_ops_msg),
    .recv = m_recv,
    .recvv = m_recvv,
    .recvmsg = m_recvmsg,
    .send = m_send,
    .sendv = m_sendv,
    .sendmsg = m_sendmsg,
    .inject = m_inject,
    .senddata = m_senddata,
    .injectdata = m_injectdata,
};
