/* SPDX-License-Identifier: MIT */
/* fi_rma: fi_read and fi_write onto fmx_region_iread and fmx_region_iwrite
 * of the peer's domain's registrations (domain.c): the key is a region
 * cookie, the remote address an offset in the registration. One remote
 * segment per operation; completions go to the transmit queue as
 * FI_RMA | FI_READ or FI_WRITE, refusals as error completions
 * (FI_EKEYREJECTED: no such key; FI_EACCES: no such access; FI_EINVAL: out
 * of range), with nothing read or written. */
#include <sys/uio.h>

#include "ofi/ofi_int.h"

#define EP(fep) ((struct ofx_ep *)(fep))

static ssize_t rma_common(struct ofx_ep *ep, const struct iovec *iov, size_t count, fi_addr_t peer, uint64_t addr,
                          uint64_t key, uint64_t flags, void *context, int write) {
  if (count > FMX_MAX_SEGMENTS || (count && !iov)) return -FI_EINVAL;
  if (!ep->enabled) return -FI_EOPBADSTATE;
  if (!(ep->caps & (write ? FI_WRITE : FI_READ)) && !(ep->caps & FI_RMA)) return -FI_EOPNOTSUPP;
  if (!ep->txcq) return -FI_ENOCQ;
  OFX_LOCK(ep);
  fmx_endpoint_addr_t to;
  ssize_t rc = ofx_ep_mr_addr(ep, peer, &to);
  struct ofx_op *op = rc ? NULL : ofx_op_get(ep);
  if (!rc && !op) rc = -FI_EAGAIN;
  if (rc) {
    OFX_UNLOCK(ep);
    return rc;
  }
  op->context = context;
  op->flags = FI_RMA | (write ? FI_WRITE : FI_READ);
  op->report = !(flags & FI_INJECT) && (!ep->tx_selective || (flags & FI_COMPLETION));
  fmx_seg_t one, *segs = (fmx_seg_t *)iov;
  uint32_t nsegs = (uint32_t)count;
  if (flags & FI_INJECT) { /* the caller's buffer is free at return: a copy goes */
    rc = write ? ofx_op_inject(op, iov, count, &one) : -FI_EINVAL;
    if (rc) {
      ofx_op_put(ep, op);
      OFX_UNLOCK(ep);
      return rc;
    }
    segs = &one;
    nsegs = 1;
  }
  rc = ofx_op_posted(ep, op, write ? fmx_region_iwrite(ep->fx, to, key, addr, segs, nsegs, op, &op->req)
                                   : fmx_region_iread(ep->fx, to, key, addr, segs, nsegs, op, &op->req));
  OFX_UNLOCK(ep);
  return rc;
}

static ssize_t rma_read(struct fid_ep *fep, void *buf, size_t len, void *desc, fi_addr_t src, uint64_t addr,
                        uint64_t key, void *context) {
  (void)desc;
  struct iovec iov = {buf, len};
  return rma_common(EP(fep), &iov, 1, src, addr, key, EP(fep)->tx_flags, context, 0);
}

static ssize_t rma_readv(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t src,
                         uint64_t addr, uint64_t key, void *context) {
  (void)desc;
  return rma_common(EP(fep), iov, count, src, addr, key, EP(fep)->tx_flags, context, 0);
}

/* One remote segment: fmx reads or writes one range of a region. */
static ssize_t rma_msg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags, int write) {
  if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov) return -FI_EINVAL;
  if (flags & FI_REMOTE_CQ_DATA) return -FI_EOPNOTSUPP;
  return rma_common(EP(fep), msg->msg_iov, msg->iov_count, msg->addr, msg->rma_iov->addr, msg->rma_iov->key, flags,
                    msg->context, write);
}

static ssize_t rma_readmsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags) {
  return rma_msg(fep, msg, flags, 0);
}

static ssize_t rma_write(struct fid_ep *fep, const void *buf, size_t len, void *desc, fi_addr_t dest, uint64_t addr,
                         uint64_t key, void *context) {
  (void)desc;
  struct iovec iov = {(void *)buf, len};
  return rma_common(EP(fep), &iov, 1, dest, addr, key, EP(fep)->tx_flags, context, 1);
}

static ssize_t rma_writev(struct fid_ep *fep, const struct iovec *iov, void **desc, size_t count, fi_addr_t dest,
                          uint64_t addr, uint64_t key, void *context) {
  (void)desc;
  return rma_common(EP(fep), iov, count, dest, addr, key, EP(fep)->tx_flags, context, 1);
}

static ssize_t rma_writemsg(struct fid_ep *fep, const struct fi_msg_rma *msg, uint64_t flags) {
  return rma_msg(fep, msg, flags, 1);
}

static ssize_t rma_inject(struct fid_ep *fep, const void *buf, size_t len, fi_addr_t dest, uint64_t addr,
                          uint64_t key) {
  struct iovec iov = {(void *)buf, len};
  return rma_common(EP(fep), &iov, 1, dest, addr, key, FI_INJECT, NULL, 1);
}

/* Remote CQ data with RMA (a completion at the target) is not offered. */
static ssize_t no_writedata(struct fid_ep *fep, const void *buf, size_t len, void *desc, uint64_t data,
                            fi_addr_t dest, uint64_t addr, uint64_t key, void *context) {
  (void)fep, (void)buf, (void)len, (void)desc, (void)data, (void)dest, (void)addr, (void)key, (void)context;
  return -FI_ENOSYS;
}

static ssize_t no_injectdata(struct fid_ep *fep, const void *buf, size_t len, uint64_t data, fi_addr_t dest,
                             uint64_t addr, uint64_t key) {
  (void)fep, (void)buf, (void)len, (void)data, (void)dest, (void)addr, (void)key;
  return -FI_ENOSYS;
}

struct fi_ops_rma ofx_rma_ops = {
    .size = sizeof(struct fi_ops_rma),
    .read = rma_read,
    .readv = rma_readv,
    .readmsg = rma_readmsg,
    .write = rma_write,
    .writev = rma_writev,
    .writemsg = rma_writemsg,
    .inject = rma_inject,
    .writedata = no_writedata,
    .injectdata = no_injectdata,
};
