/* SPDX-License-Identifier: MIT */
/* The provider's entry (fi_prov_ini), fi_getinfo's answer, the fabric and
 * its event queue (empty: fmx has no connection events to report). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ofi/ofi_int.h"

static void ofx_cleanup(void) {}

struct fi_provider ofx_prov = {
    .version = OFX_PROV_VERSION,
    .fi_version = FI_VERSION(1, 3),
    .name = OFX_NAME,
    .getinfo = ofx_getinfo,
    .fabric = ofx_fabric_open,
    .cleanup = ofx_cleanup,
};

/* Every tunable of fmx's table, registered with libfabric as
 * FI_FMX_<NAME> for FMX_<NAME>, so that `fi_info -e` lists them with their
 * doc and default. libfmx reads FI_FMX_<NAME> itself when FMX_<NAME> is
 * unset (src/base/config.c): nothing to fetch here. libfabric copies the
 * name and the text. */
static void define_params(void) {
  uint32_t n = 0;
  if (fmx_get_info(NULL, FMX_INFO_CONFIG_COUNT, NULL, 0, &n, sizeof n) != FMX_SUCCESS) return;
  fmx_config_item_t *it = malloc(sizeof *it);
  if (!it) return;
  for (uint32_t i = 0; i < n; i++) {
    if (fmx_get_info(NULL, FMX_INFO_CONFIG_ENTRY, &i, sizeof i, it, sizeof *it) != FMX_SUCCESS ||
        strncmp(it->name, "FMX_", 4) != 0)
      continue;
    char name[sizeof it->name];
    size_t k = 0;
    for (const char *c = it->name + 4; *c; c++) name[k++] = (char)tolower((unsigned char)*c);
    name[k] = '\0';
    fi_param_define(&ofx_prov, name, FI_PARAM_STRING, "%s (default %s; %s wins when both are set)", it->doc,
                    it->def[0] ? it->def : "empty", it->name);
  }
  free(it);
}

FI_EXT_INI {
  /* libfabric skips a provider older than the API version its caller asks
   * for: be as new as the library that loads us (OFI-NOTES). */
  ofx_prov.fi_version = fi_version();
  static int defined;
  if (!defined) {
    defined = 1;
    define_params();
  }
  return &ofx_prov;
}

/* ---- getinfo ----------------------------------------------------------- */

/* Whether hints ask for what fmx cannot give; 1 if they do. */
static int refused(const struct fi_info *h) {
  if (!h) return 0;
  const uint64_t ours = OFX_CAPS | FI_REMOTE_COMM | OFX_RMA_CAPS; /* FI_REMOTE_COMM: one host now, asked by Open MPI */
  if (h->caps & ~ours) return 1;
  /* RMA's keys are region cookies: the provider chooses them, and remote
   * addresses are offsets (no FI_MR_VIRT_ADDR). */
  if ((h->caps & OFX_RMA_CAPS) && !(h->domain_attr && (h->domain_attr->mr_mode & FI_MR_PROV_KEY))) return 1;
  if (h->addr_format != FI_FORMAT_UNSPEC) return 1;
  if (h->ep_attr && h->ep_attr->type != FI_EP_UNSPEC && h->ep_attr->type != FI_EP_RDM) return 1;
  if (h->fabric_attr && h->fabric_attr->name && strcmp(h->fabric_attr->name, OFX_NAME)) return 1;
  if (h->fabric_attr && h->fabric_attr->prov_name && strcasecmp(h->fabric_attr->prov_name, OFX_NAME)) return 1;
  const struct fi_domain_attr *d = h->domain_attr;
  if (d) {
    if (d->name && strcmp(d->name, OFX_NAME)) return 1;
    if (d->data_progress == FI_PROGRESS_AUTO) return 1;
    if (d->caps & ~(uint64_t)(FI_LOCAL_COMM | FI_REMOTE_COMM)) return 1; /* FI_SHARED_AV: not offered */
    if (d->cq_data_size > 8) return 1;
    if (d->av_type != FI_AV_UNSPEC && d->av_type != FI_AV_MAP && d->av_type != FI_AV_TABLE) return 1;
  }
  if (h->tx_attr && (h->tx_attr->caps & ~ours)) return 1;
  if (h->rx_attr && (h->rx_attr->caps & ~ours)) return 1;
  if (h->tx_attr && (h->tx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS)) return 1;
  if (h->rx_attr && (h->rx_attr->msg_order & ~(uint64_t)FI_ORDER_SAS)) return 1;
  if (h->tx_attr && h->tx_attr->inject_size > OFX_INJECT) return 1;
  return 0;
}

int ofx_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                const struct fi_info *hints, struct fi_info **out) {
  (void)node;
  (void)service;
  (void)flags;
  *out = NULL;
  if (refused(hints)) return -FI_ENODATA;
  struct fi_info *fi = fi_allocinfo();
  if (!fi) return -FI_ENOMEM;
  uint64_t caps = OFX_CAPS | FI_REMOTE_COMM;
  /* Primary caps asked for narrow the answer; secondary ones are ours. A
   * receive's source matters only with FI_DIRECTED_RECV asked for. */
  if (hints && hints->caps)
    caps = (hints->caps & OFX_CAPS) | (caps & ~(uint64_t)(FI_TAGGED | FI_MSG | FI_DIRECTED_RECV));
  if (!(caps & (FI_TAGGED | FI_MSG))) caps |= FI_TAGGED | FI_MSG;
  if (!(caps & (FI_SEND | FI_RECV))) caps |= FI_SEND | FI_RECV;
  int rma = hints && (hints->caps & OFX_RMA_CAPS); /* only when asked: it needs FI_MR_PROV_KEY */
  if (rma) caps |= OFX_RMA_CAPS;
  fi->caps = caps;
  fi->mode = 0;
  fi->addr_format = FI_FORMAT_UNSPEC;
  /* The source: this host, any endpoint id (an endpoint takes a free one). */
  struct ofx_name *src = calloc(1, sizeof *src);
  if (!src) {
    fi_freeinfo(fi);
    return -FI_ENOMEM;
  }
  *src = (struct ofx_name){.nic = 0, .eid = FMX_ANY_ENDPOINT, .mr_eid = FMX_ANY_ENDPOINT};
  fi->src_addr = src;
  fi->src_addrlen = sizeof *src;
  fi->tx_attr->caps = caps & OFX_TX_CAPS;
  fi->tx_attr->mode = 0;
  fi->tx_attr->op_flags = hints && hints->tx_attr ? hints->tx_attr->op_flags : 0;
  fi->tx_attr->msg_order = FI_ORDER_SAS;
  fi->tx_attr->comp_order = FI_ORDER_NONE;
  fi->tx_attr->inject_size = OFX_INJECT;
  fi->tx_attr->size = OFX_QUEUE;
  fi->tx_attr->iov_limit = FMX_MAX_SEGMENTS;
  fi->tx_attr->rma_iov_limit = rma ? 1 : 0;
  fi->rx_attr->caps = caps & OFX_RX_CAPS;
  fi->rx_attr->mode = 0;
  fi->rx_attr->op_flags = hints && hints->rx_attr ? hints->rx_attr->op_flags : 0;
  fi->rx_attr->msg_order = FI_ORDER_SAS;
  fi->rx_attr->comp_order = FI_ORDER_NONE;
  fi->rx_attr->total_buffered_recv = 0;
  fi->rx_attr->size = OFX_QUEUE;
  fi->rx_attr->iov_limit = FMX_MAX_SEGMENTS;
  fi->ep_attr->type = FI_EP_RDM;
  fi->ep_attr->protocol = FI_PROTO_UNSPEC;
  fi->ep_attr->protocol_version = 1;
  fi->ep_attr->max_msg_size = (size_t)1 << 62;
  fi->ep_attr->msg_prefix_size = 0;
  fi->ep_attr->max_order_raw_size = 0;
  fi->ep_attr->max_order_war_size = 0;
  fi->ep_attr->max_order_waw_size = 0;
  fi->ep_attr->mem_tag_format = OFX_TAG_FORMAT;
  fi->ep_attr->tx_ctx_cnt = 1;
  fi->ep_attr->rx_ctx_cnt = 1;
  struct fi_domain_attr *d = fi->domain_attr;
  const struct fi_domain_attr *hd = hints ? hints->domain_attr : NULL;
  d->name = strdup(OFX_NAME);
  d->threading = hd && hd->threading != FI_THREAD_UNSPEC ? hd->threading : FI_THREAD_SAFE;
  /* Handshakes: fmx's watcher thread, which also serves an application
   * that asked for manual control progress. */
  d->control_progress = hd && hd->control_progress == FI_PROGRESS_MANUAL ? FI_PROGRESS_MANUAL : FI_PROGRESS_AUTO;
  d->data_progress = FI_PROGRESS_MANUAL;
  d->resource_mgmt = FI_RM_ENABLED;
  d->av_type = hd && hd->av_type != FI_AV_UNSPEC ? hd->av_type : FI_AV_TABLE;
  d->mr_mode = rma ? FI_MR_PROV_KEY : 0;
  d->mr_key_size = sizeof(uint64_t);
  d->cq_data_size = sizeof(uint64_t);
  d->cq_cnt = 1024;
  d->ep_cnt = 1024;
  d->tx_ctx_cnt = 1024;
  d->rx_ctx_cnt = 1024;
  d->max_ep_tx_ctx = 1;
  d->max_ep_rx_ctx = 1;
  d->max_ep_stx_ctx = 0;
  d->max_ep_srx_ctx = 0;
  d->cntr_cnt = 1024;
  d->mr_iov_limit = FMX_MAX_SEGMENTS;
  d->caps = FI_LOCAL_COMM | FI_REMOTE_COMM;
  d->mode = 0;
  d->max_err_data = 0;
  d->mr_cnt = 1u << 20;
  fi->fabric_attr->name = strdup(OFX_NAME);
  fi->fabric_attr->prov_version = OFX_PROV_VERSION;
  fi->fabric_attr->api_version = version;
  if (!d->name || !fi->fabric_attr->name) {
    fi_freeinfo(fi);
    return -FI_ENOMEM;
  }
  *out = fi;
  return 0;
}

/* ---- the event queue: nothing ever comes ------------------------------ */

struct ofx_eq {
  struct fid_eq eq;
};

static ssize_t eq_read(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, uint64_t flags) {
  (void)eq, (void)event, (void)buf, (void)len, (void)flags;
  return -FI_EAGAIN;
}

static ssize_t eq_readerr(struct fid_eq *eq, struct fi_eq_err_entry *buf, uint64_t flags) {
  (void)eq, (void)buf, (void)flags;
  return -FI_EAGAIN;
}

static ssize_t eq_write(struct fid_eq *eq, uint32_t event, const void *buf, size_t len, uint64_t flags) {
  (void)eq, (void)event, (void)buf, (void)len, (void)flags;
  return -FI_ENOSYS;
}

/* Nothing comes: the timeout passes (< 0: a second at a time, forever). */
static ssize_t eq_sread(struct fid_eq *eq, uint32_t *event, void *buf, size_t len, int timeout, uint64_t flags) {
  (void)eq, (void)event, (void)buf, (void)len, (void)flags;
  struct timespec ts = {timeout < 0 ? 1 : timeout / 1000, timeout < 0 ? 0 : (long)(timeout % 1000) * 1000000};
  do
    nanosleep(&ts, NULL);
  while (timeout < 0);
  return -FI_EAGAIN;
}

static const char *eq_strerror(struct fid_eq *eq, int prov_errno, const void *err_data, char *buf, size_t len) {
  (void)eq, (void)err_data;
  return ofx_strerror(prov_errno, buf, len);
}

static struct fi_ops eq_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = ofx_close_free,
    .bind = ofx_no_bind,
    .control = ofx_no_control,
    .ops_open = ofx_no_ops_open,
};

static struct fi_ops_eq eq_ops = {
    .size = sizeof(struct fi_ops_eq),
    .read = eq_read,
    .readerr = eq_readerr,
    .write = eq_write,
    .sread = eq_sread,
    .strerror = eq_strerror,
};

static int eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr, struct fid_eq **eq, void *context) {
  (void)fabric, (void)attr;
  struct ofx_eq *q = calloc(1, sizeof *q);
  if (!q) return -FI_ENOMEM;
  q->eq.fid.fclass = FI_CLASS_EQ;
  q->eq.fid.context = context;
  q->eq.fid.ops = &eq_fid_ops;
  q->eq.ops = &eq_ops;
  *eq = &q->eq;
  return 0;
}

/* ---- the fabric -------------------------------------------------------- */

static struct fi_ops fabric_fid_ops = {
    .size = sizeof(struct fi_ops),
    .close = ofx_close_free,
    .bind = ofx_no_bind,
    .control = ofx_no_control,
    .ops_open = ofx_no_ops_open,
};

static int no_pep(struct fid_fabric *f, struct fi_info *info, struct fid_pep **pep, void *context) {
  (void)f, (void)info, (void)pep, (void)context;
  return -FI_ENOSYS;
}

static int no_wait(struct fid_fabric *f, struct fi_wait_attr *attr, struct fid_wait **w) {
  (void)f, (void)attr, (void)w;
  return -FI_ENOSYS;
}

static int no_trywait(struct fid_fabric *f, struct fid **fids, int count) {
  (void)f, (void)fids, (void)count;
  return 0; /* waiting is fmx's (fi_cq_sread) */
}

static struct fi_ops_fabric fabric_ops = {
    .size = sizeof(struct fi_ops_fabric),
    .domain = ofx_domain_open,
    .passive_ep = no_pep,
    .eq_open = eq_open,
    .wait_open = no_wait,
    .trywait = no_trywait,
};

int ofx_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context) {
  if (attr && attr->name && strcmp(attr->name, OFX_NAME)) return -FI_EINVAL;
  struct ofx_fabric *f = calloc(1, sizeof *f);
  if (!f) return -FI_ENOMEM;
  f->fabric.fid.fclass = FI_CLASS_FABRIC;
  f->fabric.fid.context = context;
  f->fabric.fid.ops = &fabric_fid_ops;
  f->fabric.ops = &fabric_ops;
  f->fabric.api_version = attr ? attr->api_version : fi_version();
  *fabric = &f->fabric;
  return 0;
}
