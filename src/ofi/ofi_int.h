/* SPDX-License-Identifier: MIT */
/*
 * fmx's libfabric provider (libfmx-fi.so, name "fmx"): a face over the
 * public fmx.h only, as an MPI's libfabric sees it (docs/ofi.md). One
 * libfabric endpoint is one fmx endpoint; an address vector holds peers'
 * names and each endpoint connects to a name the first time it uses it;
 * a completion queue collects, in its own ring, what its endpoints'
 * fmx_test_any hands back. Folder-internal header.
 *
 * Locks: an endpoint's mutex covers its fmx calls and its bookkeeping
 * (operations, connections, claimed messages); a CQ's covers its ring;
 * an AV's its names. Order: endpoint, then CQ, then AV (a leaf).
 */
#ifndef FMX_OFI_INT_H
#define FMX_OFI_INT_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_prov.h>

#include "fmx.h"

#define OFX_NAME "fmx"
#define OFX_PROV_VERSION FI_VERSION(0, 1)
#define OFX_INJECT 256            /* inject_size: copied into the operation */
#define OFX_CONNECT_MS 10000      /* a peer that never answers our handshake: its sends fail after this */
#define OFX_TAG_FORMAT 0xaaaaaaaaaaaaaaaaull /* FI_TAG_GENERIC: bit 63 set, as Open MPI asks */
#define OFX_CAPS                                                                                                 \
  (FI_TAGGED | FI_MSG | FI_SEND | FI_RECV | FI_LOCAL_COMM | FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV)
/* What of an info's caps its tx_attr and rx_attr carry. */
#define OFX_TX_CAPS (FI_MSG | FI_TAGGED | FI_RMA | FI_SEND | FI_READ | FI_WRITE)
#define OFX_RX_CAPS                                                                                              \
  (FI_MSG | FI_TAGGED | FI_RMA | FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE | FI_DIRECTED_RECV | FI_SOURCE |     \
   FI_MULTI_RECV)
#define OFX_QUEUE 65536           /* tx/rx queue depth advertised (fmx has no fixed limit) */
/* RMA (rma.c), given when asked for and the application takes
 * provider-chosen keys (FI_MR_PROV_KEY): remote addresses are offsets in
 * the registration, whose keys are fmx region cookies. */
#define OFX_RMA_CAPS (FI_RMA | FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

extern struct fi_provider ofx_prov;

/* The name fi_getname gives, fi_av_insert takes: fixed length. mr_eid and
 * mr_key name the endpoint that owns its domain's registrations (RMA's
 * target; mr_eid FMX_ANY_ENDPOINT: none). */
struct ofx_name {
  uint64_t nic;
  uint32_t eid;
  uint32_t key;
  uint32_t mr_eid;
  uint32_t mr_key;
};

struct ofx_fabric {
  struct fid_fabric fabric;
};

/* An endpoint's or a queue's lock, unless its domain is serial: then
 * the application's order is the lock (8 B ping-pong through Open MPI:
 * docs/ofi.md, Latency). */
#define OFX_LOCK(o)                                   \
  do {                                                \
    if (!(o)->serial) pthread_mutex_lock(&(o)->lock); \
  } while (0)
#define OFX_UNLOCK(o)                                   \
  do {                                                  \
    if (!(o)->serial) pthread_mutex_unlock(&(o)->lock); \
  } while (0)

/* A domain opened for RMA owns a hidden fmx endpoint whose regions are its
 * registrations (one cookie per registration, whichever endpoint a peer
 * names); its endpoints progress it. */
struct ofx_domain {
  struct fid_domain domain;
  /* The application serializes its calls on the domain's objects
   * (FI_THREAD_DOMAIN, what Open MPI and MPICH ask without
   * MPI_THREAD_MULTIPLE): its endpoints and queues take no lock (OFX_LOCK).
   * fmx's own threads never call the provider. */
  int serial;
  uint64_t next_key; /* fi_mr_reg's keys when there is no RMA */
  fmx_endpoint_t mr_fx;
  uint32_t mr_eid, mr_key;
};

struct ofx_mr {
  struct fid_mr mr;
  struct ofx_domain *dom;
  int region; /* mr.key is a region of dom->mr_fx */
};

struct ofx_av {
  struct fid_av av;
  pthread_mutex_t lock;
  struct ofx_name *names; /* fi_addr_t is the index */
  uint8_t *live;
  size_t n, cap;
  uint64_t *hkey; /* (nic, eid) -> index + 1, open addressing */
  size_t *hval;
  size_t hcap;
};

/* One completion as the queue keeps it: its source as fmx gave it, made
 * an fi_addr_t only for fi_cq_readfrom (av NULL: none). */
struct ofx_cqe {
  struct fi_cq_tagged_entry e;
  struct ofx_av *av;
  fmx_endpoint_addr_t src;
};

struct ofx_err {
  struct ofx_err *next;
  struct fi_cq_err_entry e;
};

#define OFX_CQ_EPS 8

/* The endpoints bound to a CQ or a counter: its reads progress them. */
struct ofx_bound {
  struct ofx_ep *ep[OFX_CQ_EPS];
  int n;
};
/* Add ep once: 0, or -FI_ENOSPC. */
static inline int ofx_bound_add(struct ofx_bound *b, struct ofx_ep *ep) {
  for (int i = 0; i < b->n; i++)
    if (b->ep[i] == ep) return 0;
  if (b->n == OFX_CQ_EPS) return -FI_ENOSPC;
  b->ep[b->n++] = ep;
  return 0;
}
static inline void ofx_bound_del(struct ofx_bound *b, struct ofx_ep *ep) {
  for (int i = 0; i < b->n; i++)
    if (b->ep[i] == ep) {
      b->ep[i] = b->ep[--b->n];
      return;
    }
}

/* CLOCK_MONOTONIC in ms: the sleeping reads' deadlines. */
static inline uint64_t ofx_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

struct ofx_cq {
  struct fid_cq cq;
  enum fi_cq_format format;
  pthread_mutex_t lock;
  int serial; /* its domain's: no locking (OFX_LOCK) */
  struct ofx_cqe *ring;
  size_t cap, head, count;
  struct ofx_err *err, **err_tail;
  struct ofx_bound bound; /* progressed by a read */
  int signaled;
  /* count or err nonzero, stored under lock: a read of an empty queue
   * (a polling MPI's every call) looks here without the lock. */
  int avail;
};

/* A counter (cntr.c): the endpoints bound to it are progressed by its
 * reads and waits. */
struct ofx_cntr {
  struct fid_cntr cntr;
  uint64_t value, err; /* atomics */
  pthread_mutex_t lock; /* bound */
  struct ofx_bound bound;
};

/* What an endpoint's counters count: sends, receives, reads, writes. */
enum { OFX_CNT_SEND, OFX_CNT_RECV, OFX_CNT_READ, OFX_CNT_WRITE, OFX_CNT_N };

/* An operation in flight: the context of its fmx request. */
struct ofx_op {
  struct ofx_op *next, *prev; /* free list; the endpoint's live list */
  void *context;
  uint64_t flags; /* FI_SEND/FI_RECV | FI_TAGGED/FI_MSG */
  void *buf;
  fmx_request_t req;
  int report;     /* write a completion */
  int live;       /* on the endpoint's live list (its fmx request in flight) */
  uint8_t inject[OFX_INJECT];
};

/* An endpoint's connection to an AV entry, made on first use. */
struct ofx_conn {
  fmx_endpoint_addr_t addr, mr_addr; /* the peer, its domain's registrations */
  int ok, mr_ok;
};

/* A message claimed by FI_PEEK|FI_CLAIM, found again by its context. */
struct ofx_claim {
  struct ofx_claim *next;
  void *context;
  fmx_message_t msg;
};

struct ofx_ep {
  struct fid_ep ep;
  struct ofx_domain *dom;
  uint64_t caps;
  uint64_t tx_flags, rx_flags; /* FI_GETOPSFLAG/FI_SETOPSFLAG */
  fmx_endpoint_t fx;
  uint32_t key;
  int enabled;
  struct ofx_av *av;
  struct ofx_cq *txcq, *rxcq;
  int tx_selective, rx_selective;
  struct ofx_cntr *cntr[OFX_CNT_N];
  size_t min_multi_recv;
  pthread_mutex_t lock;
  int serial; /* its domain's: no locking (OFX_LOCK) */
  struct ofx_conn *conn; /* per fi_addr */
  size_t nconn;
  struct ofx_op *free_ops;
  struct ofx_op live; /* operations in flight: fi_cancel's, and close's to free */
  struct ofx_claim *claims;
};

/* getinfo and the fabric (prov.c) */
int ofx_getinfo(uint32_t version, const char *node, const char *service, uint64_t flags,
                const struct fi_info *hints, struct fi_info **info);
int ofx_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric, void *context);
/* domain.c */
int ofx_domain_open(struct fid_fabric *fabric, struct fi_info *info, struct fid_domain **dom, void *context);
/* av.c */
int ofx_av_open(struct fid_domain *domain, struct fi_av_attr *attr, struct fid_av **av, void *context);
/* The name at fi_addr into *out: 1, or 0 (unknown, removed). */
int ofx_av_name(struct ofx_av *av, fi_addr_t addr, struct ofx_name *out);
/* The fi_addr of the peer at fmx address a, or FI_ADDR_NOTAVAIL. */
fi_addr_t ofx_av_reverse(struct ofx_av *av, fmx_endpoint_addr_t a);
/* cq.c */
int ofx_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr, struct fid_cq **cq, void *context);
int ofx_cq_bind_ep(struct ofx_cq *cq, struct ofx_ep *ep);
void ofx_cq_unbind_ep(struct ofx_cq *cq, struct ofx_ep *ep);
/* Whether cq holds a completion or an error, after progress if it held
 * none (fi_poll). */
int ofx_cq_ready(struct ofx_cq *cq);
/* poll.c */
int ofx_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr, struct fid_poll **pollset);
/* A completion (the endpoint's lock held), from src as av knows it (av
 * NULL: no source). */
void ofx_cq_push(struct ofx_cq *cq, const struct fi_cq_tagged_entry *e, struct ofx_av *av,
                 const fmx_endpoint_addr_t *src);
/* An error completion: e's fields, err (positive FI_E*), the fmx code,
 * the bytes cut off (FI_ETRUNC). */
void ofx_cq_push_err(struct ofx_cq *cq, const struct fi_cq_tagged_entry *e, int err, int prov_errno, size_t olen);
/* cntr.c */
int ofx_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr, struct fid_cntr **cntr, void *context);
int ofx_cntr_bind_ep(struct ofx_cntr *c, struct ofx_ep *ep);
void ofx_cntr_unbind_ep(struct ofx_cntr *c, struct ofx_ep *ep);
/* One more operation done, or failed. */
void ofx_cntr_inc(struct ofx_cntr *c, int failed);
/* Operations done and failed, after one progress pass (fi_poll). */
uint64_t ofx_cntr_events(struct ofx_cntr *c);
/* ep.c */
int ofx_ep_open(struct fid_domain *domain, struct fi_info *info, struct fid_ep **ep, void *context);
/* Reap what the endpoint's fmx requests finished into their queues; the
 * number reaped. */
int ofx_ep_progress(struct ofx_ep *ep);
/* The same for every endpoint of b. */
int ofx_bound_progress(const struct ofx_bound *b);
/* op is done with st: its completion (or error) goes to its queue, and
 * op back to the pool. Lock held. */
void ofx_ep_finish(struct ofx_ep *ep, struct ofx_op *op, const fmx_status_t *st);
/* The fmx address of fi_addr, connecting on first use; 0 or -FI_*. The
 * endpoint's lock held. */
int ofx_ep_addr(struct ofx_ep *ep, fi_addr_t addr, fmx_endpoint_addr_t *out);
/* The same for the endpoint owning the peer's registrations (RMA). */
int ofx_ep_mr_addr(struct ofx_ep *ep, fi_addr_t addr, fmx_endpoint_addr_t *out);
/* An operation from the pool (NULL without memory); once its fmx request
 * is made, onto the live list; back when it is done. Lock held. */
struct ofx_op *ofx_op_get(struct ofx_ep *ep);
void ofx_op_live(struct ofx_ep *ep, struct ofx_op *op);
void ofx_op_put(struct ofx_ep *ep, struct ofx_op *op);
/* An inject: iov copied into op->inject, described by *one; 0, or
 * -FI_EMSGSIZE past OFX_INJECT. */
int ofx_op_inject(struct ofx_op *op, const struct iovec *iov, size_t count, fmx_seg_t *one);
/* The fmx call that made op's request returned r: op goes live, or back
 * to the pool; 0 or the libfabric error. Lock held. */
ssize_t ofx_op_posted(struct ofx_ep *ep, struct ofx_op *op, fmx_return_t r);
/* msg.c: the message and tagged tables */
extern struct fi_ops_msg ofx_msg_ops;
extern struct fi_ops_tagged ofx_tagged_ops;
/* rma.c: fi_read and fi_write onto region reads and writes */
extern struct fi_ops_rma ofx_rma_ops;
/* What an fmx code is as a libfabric error (positive FI_E*). */
int ofx_errno(fmx_return_t code);
/* stubs.c: calls fmx does not offer; close for what owns nothing but itself */
int ofx_close_free(struct fid *fid);
int ofx_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int ofx_no_control(struct fid *fid, int command, void *arg);
int ofx_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context);
/* fi_cq_strerror/fi_eq_strerror: the fmx code's text, into buf if given. */
const char *ofx_strerror(int prov_errno, char *buf, size_t len);

#endif
