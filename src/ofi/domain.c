/* SPDX-License-Identifier: MIT */
/* The domain: fmx_init's owner, the factory of AVs, CQs and endpoints,
 * and memory registration: without RMA (mr_mode 0) a key and nothing else,
 * fmx reads and writes any memory of the process for messages; with RMA
 * (FI_MR_PROV_KEY) a region of the domain's hidden endpoint whose cookie
 * is the key (docs/ofi.md, "RMA"). */
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "ofi/ofi_int.h"

static pthread_mutex_t init_lock = PTHREAD_MUTEX_INITIALIZER;
static int ndomains;
static int we_init; /* fmx_init was ours to undo (not the application's) */

static int domain_close(struct fid *fid) {
  struct ofx_domain *d = (struct ofx_domain *)fid;
  if (d->mr_fx) fmx_close_endpoint(d->mr_fx);
  pthread_mutex_lock(&init_lock);
  if (--ndomains == 0 && we_init) {
    fmx_finalize();
    we_init = 0;
  }
  pthread_mutex_unlock(&init_lock);
  free(fid);
  return 0;
}

static struct fi_ops domain_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = domain_close,
    .bind = ofx_no_bind,
    .control = ofx_no_control,
    .ops_open = ofx_no_ops_open,
};

static int no_sep(struct fid_domain *d, struct fi_info *info, struct fid_ep **sep, void *context) {
  (void)d, (void)info, (void)sep, (void)context;
  return -FI_ENOSYS;
}

static int no_stx(struct fid_domain *d, struct fi_tx_attr *attr, struct fid_stx **stx, void *context) {
  (void)d, (void)attr, (void)stx, (void)context;
  return -FI_ENOSYS;
}

static int no_srx(struct fid_domain *d, struct fi_rx_attr *attr, struct fid_ep **rx, void *context) {
  (void)d, (void)attr, (void)rx, (void)context;
  return -FI_ENOSYS;
}

static int no_atomic(struct fid_domain *d, enum fi_datatype dt, enum fi_op op, struct fi_atomic_attr *attr,
                     uint64_t flags) {
  (void)d, (void)dt, (void)op, (void)attr, (void)flags;
  return -FI_ENOSYS;
}

static int no_coll(struct fid_domain *d, enum fi_collective_op coll, struct fi_collective_attr *attr,
                   uint64_t flags) {
  (void)d, (void)coll, (void)attr, (void)flags;
  return -FI_ENOSYS;
}

static struct fi_ops_domain domain_ops = {
    .size = sizeof(struct fi_ops_domain),
    .av_open = ofx_av_open,
    .cq_open = ofx_cq_open,
    .endpoint = ofx_ep_open,
    .scalable_ep = no_sep,
    .cntr_open = ofx_cntr_open,
    .poll_open = ofx_poll_open,
    .stx_ctx = no_stx,
    .srx_ctx = no_srx,
    .query_atomic = no_atomic,
    .query_collective = no_coll,
};

/* ---- memory registration ----------------------------------------------- */

static int mr_close(struct fid *fid) {
  struct ofx_mr *m = (struct ofx_mr *)fid;
  if (m->region) fmx_region_destroy(m->dom->mr_fx, m->mr.key);
  free(m);
  return 0;
}

static struct fi_ops mr_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = mr_close,
    .bind = ofx_no_bind,
    .control = ofx_no_control,
    .ops_open = ofx_no_ops_open,
};

static int mr_regattr(struct fid *fid, const struct fi_mr_attr *attr, uint64_t flags, struct fid_mr **mr) {
  (void)flags;
  struct ofx_domain *d = (struct ofx_domain *)fid;
  if (!attr || !mr || (attr->iov_count && !attr->mr_iov)) return -FI_EINVAL;
  uint32_t access = (attr->access & FI_REMOTE_READ ? FMX_REGION_READ : 0u) |
                    (attr->access & FI_REMOTE_WRITE ? FMX_REGION_WRITE : 0u);
  /* Remote addresses are offsets from the registration's start: an offset
   * of its own would have to travel with the key, which is a cookie. */
  if (access && (!d->mr_fx || attr->offset)) return -FI_EINVAL;
  struct ofx_mr *m = calloc(1, sizeof *m);
  if (!m) return -FI_ENOMEM;
  m->mr.fid.fclass = FI_CLASS_MR;
  m->mr.fid.context = attr->context;
  m->mr.fid.ops = &mr_fid_ops;
  m->mr.mem_desc = NULL;
  m->dom = d;
  if (access) {
    fmx_return_t rc = fmx_region_create(d->mr_fx, (const fmx_seg_t *)attr->mr_iov, (uint32_t)attr->iov_count,
                                        access, &m->mr.key);
    if (rc != FMX_SUCCESS) {
      free(m);
      return -ofx_errno(rc);
    }
    m->region = 1;
  } else {
    m->mr.key = __atomic_fetch_add(&d->next_key, 1, __ATOMIC_RELAXED);
  }
  *mr = &m->mr;
  return 0;
}

static int mr_regv(struct fid *fid, const struct iovec *iov, size_t count, uint64_t access, uint64_t offset,
                   uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context) {
  struct fi_mr_attr attr = {.mr_iov = iov, .iov_count = count, .access = access, .offset = offset,
                            .requested_key = requested_key, .context = context};
  return mr_regattr(fid, &attr, flags, mr);
}

static int mr_reg(struct fid *fid, const void *buf, size_t len, uint64_t access, uint64_t offset,
                  uint64_t requested_key, uint64_t flags, struct fid_mr **mr, void *context) {
  struct iovec iov = {(void *)buf, len};
  return mr_regv(fid, &iov, 1, access, offset, requested_key, flags, mr, context);
}

static struct fi_ops_mr mr_ops = {
    .size = sizeof(struct fi_ops_mr),
    .reg = mr_reg,
    .regv = mr_regv,
    .regattr = mr_regattr,
};

int ofx_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom, void *context) {
  if (info && info->domain_attr && info->domain_attr->name && strcmp(info->domain_attr->name, OFX_NAME))
    return -FI_EINVAL;
  struct ofx_domain *d = calloc(1, sizeof *d);
  if (!d) return -FI_ENOMEM;
  pthread_mutex_lock(&init_lock);
  fmx_return_t rc = FMX_SUCCESS;
  if (ndomains == 0) {
    /* An MPI polls (manual progress: fi_cq_read in a loop) and never
     * sleeps in fmx: an offload channel would take turns with the spinning
     * ranks for a core (Open MPI, 2 cores, 8 MiB: 55 MB/s, 50 GB/s with
     * it off). Off unless the user says otherwise: set under libfabric's
     * name, which the user's FI_FMX_OFFLOAD keeps and FMX_OFFLOAD overrides
     * (the config module's order; docs/ofi.md). */
    setenv("FI_FMX_OFFLOAD", "off", 0);
    rc = fmx_init();
    we_init = rc == FMX_SUCCESS;
    if (rc == FMX_ALREADY_INITIALIZED) rc = FMX_SUCCESS; /* the application uses fmx.h too */
  }
  if (rc == FMX_SUCCESS) ndomains++;
  pthread_mutex_unlock(&init_lock);
  if (rc != FMX_SUCCESS) {
    free(d);
    return -ofx_errno(rc);
  }
  (void)fabric;
  d->serial = info && info->domain_attr && info->domain_attr->threading == FI_THREAD_DOMAIN;
  d->next_key = 1;
  d->mr_eid = FMX_ANY_ENDPOINT;
  if (info && (info->caps & (FI_RMA | FI_REMOTE_READ | FI_REMOTE_WRITE))) {
    /* The owner of the registrations: guarded by a key as an endpoint is. */
    if (getrandom(&d->mr_key, sizeof d->mr_key, 0) != sizeof d->mr_key) d->mr_key = (uint32_t)(uintptr_t)d;
    rc = fmx_open_endpoint(0, FMX_ANY_ENDPOINT, d->mr_key, NULL, 0, &d->mr_fx);
    if (rc == FMX_SUCCESS) rc = fmx_get_info(d->mr_fx, FMX_INFO_ENDPOINT_ID, NULL, 0, &d->mr_eid, sizeof d->mr_eid);
    if (rc != FMX_SUCCESS) {
      domain_close(&d->domain.fid);
      return -ofx_errno(rc);
    }
  }
  d->domain.fid.fclass = FI_CLASS_DOMAIN;
  d->domain.fid.context = context;
  d->domain.fid.ops = &domain_fid_ops;
  d->domain.ops = &domain_ops;
  d->domain.mr = &mr_ops;
  *dom = &d->domain;
  return 0;
}
