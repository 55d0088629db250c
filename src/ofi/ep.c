/* SPDX-License-Identifier: MIT */
/* Endpoints: one fmx endpoint each (any free id, a random key, both in
 * its name), bound to an AV and to CQs; connections made on first use;
 * the operations' pool (every one in flight on the live list, which
 * fi_cancel searches and close frees); progress, which turns finished
 * fmx requests into completions; fi_cancel. */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ofi/ofi_int.h"

/* ---- operations -------------------------------------------------------- */

struct ofx_op *ofx_op_get(struct ofx_ep *ep) {
  struct ofx_op *op = ep->free_ops;
  if (op) {
    ep->free_ops = op->next;
  } else if (!(op = malloc(sizeof *op))) {
    return NULL;
  }
  op->live = 0;
  op->report = 1;
  op->buf = NULL;
  op->req = NULL;
  return op;
}

void ofx_op_live(struct ofx_ep *ep, struct ofx_op *op) {
  op->live = 1;
  op->next = ep->live.next;
  op->prev = &ep->live;
  ep->live.next->prev = op;
  ep->live.next = op;
}

void ofx_op_put(struct ofx_ep *ep, struct ofx_op *op) {
  if (op->live) {
    op->prev->next = op->next;
    op->next->prev = op->prev;
  }
  op->next = ep->free_ops;
  ep->free_ops = op;
}

/* ---- errors ------------------------------------------------------------ */

int ofx_errno(fmx_return_t code) {
  switch (code) {
    case FMX_SUCCESS: return 0;
    case FMX_MESSAGE_TRUNCATED: return FI_ETRUNC;
    case FMX_CANCELLED: return FI_ECANCELED;
    case FMX_NO_RESOURCES:
    case FMX_NO_SYSTEM_RESOURCES: return FI_ENOMEM;
    case FMX_BAD_ADDRESS:
    case FMX_BAD_MATCH_MASK:
    case FMX_SEGMENTS_BAD_COUNT: return FI_EINVAL;
    case FMX_TIMEOUT: return FI_ETIMEDOUT;
    case FMX_ACCESS_DENIED:
    case FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY: return FI_EACCES;
    case FMX_REGION_NOT_FOUND: return FI_EKEYREJECTED;
    case FMX_REGION_OUT_OF_RANGE: return FI_EINVAL;
    case FMX_REMOTE_ENDPOINT_CLOSED:
    case FMX_REMOTE_ENDPOINT_UNREACHABLE:
    case FMX_REMOTE_ENDPOINT_BAD_ID:
    case FMX_REMOTE_ENDPOINT_BAD_SESSION:
    case FMX_MESSAGE_ABORTED: return FI_EIO;
    default: return FI_EOTHER;
  }
}

/* ---- progress ---------------------------------------------------------- */

void ofx_ep_finish(struct ofx_ep *ep, struct ofx_op *op, const fmx_status_t *st) {
  int recv = (op->flags & FI_RECV) != 0;
  struct ofx_cq *cq = recv ? ep->rxcq : ep->txcq;
  /* A multi-receive buffer: each message is a completion of its own, and
   * the buffer's release one with only FI_MULTI_RECV (MPICH reads a
   * message wherever FI_RECV is set). */
  uint64_t flags = op->flags & ~(uint64_t)FI_MULTI_RECV;
  if (st->flags & FMX_MSG_MULTI_DONE) flags = FI_MULTI_RECV;
  if (cq && (op->report || st->code != FMX_SUCCESS)) {
    struct fi_cq_tagged_entry e = {.op_context = op->context, .flags = flags};
    if (recv && !(st->flags & FMX_MSG_MULTI_DONE)) {
      e.flags |= st->flags & FMX_MSG_DATA ? FI_REMOTE_CQ_DATA : 0;
      e.len = (size_t)st->xfer_length;
      e.buf = st->flags & FMX_MSG_MULTI ? st->buffer : op->buf;
      e.data = st->data;
      e.tag = st->match_info;
    }
    if (st->code == FMX_SUCCESS)
      ofx_cq_push(cq, &e, ep->av, recv ? &st->source : NULL);
    else
      ofx_cq_push_err(cq, &e, ofx_errno(st->code), (int)st->code,
                      st->code == FMX_MESSAGE_TRUNCATED ? (size_t)(st->msg_length - st->xfer_length) : 0);
  }
  if (!(st->flags & FMX_MSG_MULTI_DONE)) {
    int k = op->flags & FI_RMA ? (op->flags & FI_WRITE ? OFX_CNT_WRITE : OFX_CNT_READ)
                               : (recv ? OFX_CNT_RECV : OFX_CNT_SEND);
    if (ep->cntr[k]) ofx_cntr_inc(ep->cntr[k], st->code != FMX_SUCCESS);
  }
  if (!(st->flags & FMX_MSG_MULTI)) ofx_op_put(ep, op); /* a buffer's message: the buffer lives on */
}

/* Completions taken per pass of fmx's progress (fmx_test_some). */
#define OFX_REAP 16

int ofx_ep_progress(struct ofx_ep *ep) {
  fmx_status_t st[OFX_REAP];
  uint32_t n = 0;
  OFX_LOCK(ep);
  if (fmx_test_some(ep->fx, st, OFX_REAP, &n) != FMX_SUCCESS) n = 0;
  for (uint32_t i = 0; i < n; i++) ofx_ep_finish(ep, st[i].context, &st[i]);
  OFX_UNLOCK(ep);
  /* Peers' reads and writes of our registrations wait for it. */
  if (ep->dom->mr_fx) fmx_progress(ep->dom->mr_fx);
  return (int)n;
}

int ofx_bound_progress(const struct ofx_bound *b) {
  int n = 0;
  for (int i = 0; i < b->n; i++) n += ofx_ep_progress(b->ep[i]);
  return n;
}

int ofx_op_inject(struct ofx_op *op, const struct iovec *iov, size_t count, fmx_seg_t *one) {
  size_t len = 0;
  for (size_t i = 0; i < count; i++) len += iov[i].iov_len;
  if (len > OFX_INJECT) return -FI_EMSGSIZE;
  size_t off = 0;
  for (size_t i = 0; i < count; i++) {
    if (!iov[i].iov_len) continue; /* a 0-byte inject may come with a NULL buffer (Open MPI's barrier) */
    memcpy(op->inject + off, iov[i].iov_base, iov[i].iov_len);
    off += iov[i].iov_len;
  }
  *one = (fmx_seg_t){op->inject, len};
  return 0;
}

ssize_t ofx_op_posted(struct ofx_ep *ep, struct ofx_op *op, fmx_return_t r) {
  if (r == FMX_SUCCESS) {
    ofx_op_live(ep, op);
    return 0;
  }
  ofx_op_put(ep, op);
  return r == FMX_NO_RESOURCES ? -FI_EAGAIN : -ofx_errno(r);
}

/* ---- addresses --------------------------------------------------------- */

/* The connection slot of addr (grown on demand) and its name; 0 or -FI_*. */
static int conn_slot(struct ofx_ep *ep, fi_addr_t addr, struct ofx_name *n) {
  if (!ep->av || !ofx_av_name(ep->av, addr, n)) return -FI_EINVAL;
  if (addr >= ep->nconn) {
    size_t cap = ep->nconn ? ep->nconn : 64;
    while (cap <= addr) cap *= 2;
    struct ofx_conn *c = realloc(ep->conn, cap * sizeof *c);
    if (!c) return -FI_ENOMEM;
    memset(c + ep->nconn, 0, (cap - ep->nconn) * sizeof *c);
    ep->conn = c;
    ep->nconn = cap;
  }
  return 0;
}

int ofx_ep_addr(struct ofx_ep *ep, fi_addr_t addr, fmx_endpoint_addr_t *out) {
  if (addr < ep->nconn && ep->conn[addr].ok) {
    *out = ep->conn[addr].addr;
    return 0;
  }
  struct ofx_name n;
  int e = conn_slot(ep, addr, &n);
  if (e) return e;
  /* Not waited for (libfabric's sends do not block): what is sent to it
   * waits for the handshake, and fails with it. */
  fmx_return_t rc = fmx_connect_async(ep->fx, n.nic, n.eid, n.key, OFX_CONNECT_MS, &ep->conn[addr].addr);
  if (rc != FMX_SUCCESS) return -ofx_errno(rc);
  ep->conn[addr].ok = 1;
  *out = ep->conn[addr].addr;
  return 0;
}

int ofx_ep_mr_addr(struct ofx_ep *ep, fi_addr_t addr, fmx_endpoint_addr_t *out) {
  if (addr < ep->nconn && ep->conn[addr].mr_ok) {
    *out = ep->conn[addr].mr_addr;
    return 0;
  }
  struct ofx_name n;
  int e = conn_slot(ep, addr, &n);
  if (e) return e;
  if (n.mr_eid == FMX_ANY_ENDPOINT) return -FI_EINVAL; /* its domain takes no RMA */
  fmx_return_t rc = fmx_connect_async(ep->fx, n.nic, n.mr_eid, n.mr_key, OFX_CONNECT_MS, &ep->conn[addr].mr_addr);
  if (rc != FMX_SUCCESS) return -ofx_errno(rc);
  ep->conn[addr].mr_ok = 1;
  *out = ep->conn[addr].mr_addr;
  return 0;
}

/* ---- fid operations ---------------------------------------------------- */

static int ep_close(struct fid *fid) {
  struct ofx_ep *ep = (struct ofx_ep *)fid;
  if (ep->txcq) ofx_cq_unbind_ep(ep->txcq, ep);
  if (ep->rxcq && ep->rxcq != ep->txcq) ofx_cq_unbind_ep(ep->rxcq, ep);
  for (int k = 0; k < OFX_CNT_N; k++)
    if (ep->cntr[k]) ofx_cntr_unbind_ep(ep->cntr[k], ep); /* once per counter is enough; more is harmless */
  fmx_close_endpoint(ep->fx); /* drops every request: their ops are freed below */
  struct ofx_op *op;
  while (ep->live.next != &ep->live) {
    op = ep->live.next;
    ep->live.next = op->next;
    free(op);
  }
  while ((op = ep->free_ops)) {
    ep->free_ops = op->next;
    free(op);
  }
  while (ep->claims) {
    struct ofx_claim *c = ep->claims;
    ep->claims = c->next;
    free(c);
  }
  free(ep->conn);
  pthread_mutex_destroy(&ep->lock);
  free(ep);
  return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags) {
  struct ofx_ep *ep = (struct ofx_ep *)fid;
  if (!bfid) return -FI_EINVAL;
  switch (bfid->fclass) {
    case FI_CLASS_AV:
      if (ep->av) return -FI_EINVAL;
      ep->av = (struct ofx_av *)bfid;
      return 0;
    case FI_CLASS_CQ: {
      struct ofx_cq *cq = (struct ofx_cq *)bfid;
      if (!(flags & (FI_TRANSMIT | FI_RECV))) return -FI_EBADFLAGS;
      if (((flags & FI_TRANSMIT) && ep->txcq) || ((flags & FI_RECV) && ep->rxcq)) return -FI_EINVAL;
      int rc = ofx_cq_bind_ep(cq, ep);
      if (rc) return rc;
      if (flags & FI_TRANSMIT) {
        ep->txcq = cq;
        ep->tx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
      }
      if (flags & FI_RECV) {
        ep->rxcq = cq;
        ep->rx_selective = (flags & FI_SELECTIVE_COMPLETION) != 0;
      }
      return 0;
    }
    case FI_CLASS_EQ:
      return 0; /* nothing to report on it */
    case FI_CLASS_CNTR: {
      static const uint64_t ev[OFX_CNT_N] = {FI_SEND, FI_RECV, FI_READ, FI_WRITE};
      if (flags & (FI_REMOTE_READ | FI_REMOTE_WRITE)) return -FI_ENOSYS; /* no FI_RMA_EVENT */
      if (!(flags & (FI_SEND | FI_RECV | FI_READ | FI_WRITE))) return -FI_EBADFLAGS;
      for (int k = 0; k < OFX_CNT_N; k++)
        if ((flags & ev[k]) && ep->cntr[k]) return -FI_EINVAL;
      struct ofx_cntr *c = (struct ofx_cntr *)bfid;
      int rc = ofx_cntr_bind_ep(c, ep);
      if (rc) return rc;
      for (int k = 0; k < OFX_CNT_N; k++)
        if (flags & ev[k]) ep->cntr[k] = c;
      return 0;
    }
    default:
      return -FI_ENOSYS; /* stx/srx */
  }
}

static int ep_control(struct fid *fid, int command, void *arg) {
  struct ofx_ep *ep = (struct ofx_ep *)fid;
  switch (command) {
    case FI_ENABLE:
      if (!ep->av) return -FI_ENOAV;
      if (!ep->txcq && !ep->rxcq && !ep->cntr[OFX_CNT_SEND] && !ep->cntr[OFX_CNT_RECV]) return -FI_ENOCQ;
      ep->enabled = 1;
      return 0;
    case FI_GETOPSFLAG: {
      uint64_t *f = arg;
      if (!f) return -FI_EINVAL;
      *f = (*f & FI_TRANSMIT) ? ep->tx_flags : ep->rx_flags;
      return 0;
    }
    case FI_SETOPSFLAG: {
      uint64_t *f = arg;
      if (!f) return -FI_EINVAL;
      if (*f & FI_TRANSMIT) ep->tx_flags = *f & ~(uint64_t)FI_TRANSMIT;
      if (*f & FI_RECV) ep->rx_flags = *f & ~(uint64_t)FI_RECV;
      return 0;
    }
    default:
      return -FI_ENOSYS;
  }
}

static struct fi_ops ep_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = ep_close,
    .bind = ep_bind,
    .control = ep_control,
    .ops_open = ofx_no_ops_open,
};

static ssize_t ep_cancel(fid_t fid, void *context) {
  struct ofx_ep *ep = (struct ofx_ep *)fid;
  ssize_t rc = -FI_ENOENT;
  OFX_LOCK(ep);
  for (struct ofx_op *op = ep->live.next; op != &ep->live; op = op->next) {
    if (op->context != context || !(op->flags & FI_RECV)) continue;
    uint32_t done = 0;
    if (fmx_cancel(ep->fx, &op->req, &done) == FMX_SUCCESS && done) {
      fmx_status_t st = {.code = FMX_CANCELLED, .context = op};
      ofx_ep_finish(ep, op, &st); /* an error completion, FI_ECANCELED */
      rc = 0;
    }
    break;
  }
  OFX_UNLOCK(ep);
  return rc;
}

static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen) {
  struct ofx_ep *ep = (struct ofx_ep *)fid;
  if (level != FI_OPT_ENDPOINT) return -FI_ENOPROTOOPT;
  if (optname == FI_OPT_MIN_MULTI_RECV) {
    if (!optval || !optlen || *optlen < sizeof(size_t)) return -FI_EINVAL;
    *(size_t *)optval = ep->min_multi_recv;
    *optlen = sizeof(size_t);
    return 0;
  }
  return -FI_ENOPROTOOPT;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval, size_t optlen) {
  struct ofx_ep *ep = (struct ofx_ep *)fid;
  if (level != FI_OPT_ENDPOINT) return -FI_ENOPROTOOPT;
  if (optname == FI_OPT_MIN_MULTI_RECV) {
    if (!optval || optlen < sizeof(size_t)) return -FI_EINVAL;
    ep->min_multi_recv = *(const size_t *)optval;
    return 0;
  }
  return -FI_ENOPROTOOPT;
}

static int no_ctx(struct fid_ep *sep, int index, void *attr, struct fid_ep **ep, void *context) {
  (void)sep, (void)index, (void)attr, (void)ep, (void)context;
  return -FI_ENOSYS;
}

static ssize_t size_left(struct fid_ep *ep) {
  (void)ep;
  return OFX_QUEUE;
}

static struct fi_ops_ep ep_ops = {
    .size = sizeof(struct fi_ops_ep),
    .cancel = ep_cancel,
    .getopt = ep_getopt,
    .setopt = ep_setopt,
    .tx_ctx = (int (*)(struct fid_ep *, int, struct fi_tx_attr *, struct fid_ep **, void *))no_ctx,
    .rx_ctx = (int (*)(struct fid_ep *, int, struct fi_rx_attr *, struct fid_ep **, void *))no_ctx,
    .rx_size_left = size_left,
    .tx_size_left = size_left,
};

static int ep_getname(fid_t fid, void *addr, size_t *addrlen) {
  struct ofx_ep *ep = (struct ofx_ep *)fid;
  if (!addrlen) return -FI_EINVAL;
  struct ofx_name n = {.key = ep->key, .mr_eid = ep->dom->mr_eid, .mr_key = ep->dom->mr_key};
  fmx_get_info(ep->fx, FMX_INFO_NIC_ID, NULL, 0, &n.nic, sizeof n.nic);
  fmx_get_info(ep->fx, FMX_INFO_ENDPOINT_ID, NULL, 0, &n.eid, sizeof n.eid);
  size_t have = *addrlen;
  *addrlen = sizeof n;
  if (have < sizeof n) return -FI_ETOOSMALL;
  memcpy(addr, &n, sizeof n);
  return 0;
}

static int no_setname(fid_t fid, void *addr, size_t addrlen) {
  (void)fid, (void)addr, (void)addrlen;
  return -FI_ENOSYS;
}

static int no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen) {
  (void)ep, (void)addr, (void)addrlen;
  return -FI_ENOSYS;
}

static int no_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen) {
  (void)ep, (void)addr, (void)param, (void)paramlen;
  return -FI_ENOSYS;
}

static int no_listen(struct fid_pep *pep) {
  (void)pep;
  return -FI_ENOSYS;
}

static int no_accept(struct fid_ep *ep, const void *param, size_t paramlen) {
  (void)ep, (void)param, (void)paramlen;
  return -FI_ENOSYS;
}

static int no_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen) {
  (void)pep, (void)handle, (void)param, (void)paramlen;
  return -FI_ENOSYS;
}

static int no_shutdown(struct fid_ep *ep, uint64_t flags) {
  (void)ep, (void)flags;
  return -FI_ENOSYS;
}

static int no_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc, void *context) {
  (void)ep, (void)addr, (void)flags, (void)mc, (void)context;
  return -FI_ENOSYS;
}

static struct fi_ops_cm cm_ops = {
    .size = sizeof(struct fi_ops_cm),
    .setname = no_setname,
    .getname = ep_getname,
    .getpeer = no_getpeer,
    .connect = no_connect,
    .listen = no_listen,
    .accept = no_accept,
    .reject = no_reject,
    .shutdown = no_shutdown,
    .join = no_join,
};

int ofx_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **out, void *context) {
  if (!info || (info->ep_attr && info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_UNSPEC))
    return -FI_EINVAL;
  struct ofx_ep *ep = calloc(1, sizeof *ep);
  if (!ep) return -FI_ENOMEM;
  /* The key guards the endpoint: only who holds its name connects. */
  if (getrandom(&ep->key, sizeof ep->key, 0) != sizeof ep->key) ep->key = (uint32_t)(uintptr_t)ep;
  fmx_return_t rc = fmx_open_endpoint(0, FMX_ANY_ENDPOINT, ep->key, NULL, 0, &ep->fx);
  if (rc != FMX_SUCCESS) {
    free(ep);
    return -ofx_errno(rc);
  }
  pthread_mutex_init(&ep->lock, NULL);
  ep->serial = ((struct ofx_domain *)domain)->serial;
  ep->caps = info->caps ? info->caps : OFX_CAPS;
  ep->tx_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
  ep->rx_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
  ep->live.next = ep->live.prev = &ep->live;
  ep->min_multi_recv = 64; /* FI_OPT_MIN_MULTI_RECV's default */
  ep->ep.fid.fclass = FI_CLASS_EP;
  ep->ep.fid.context = context;
  ep->ep.fid.ops = &ep_fid_ops;
  ep->ep.ops = &ep_ops;
  ep->ep.cm = &cm_ops;
  ep->ep.msg = &ofx_msg_ops;
  ep->ep.tagged = &ofx_tagged_ops;
  ep->ep.rma = &ofx_rma_ops;
  ep->dom = (struct ofx_domain *)domain;
  *out = &ep->ep;
  return 0;
}
