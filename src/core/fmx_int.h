/* SPDX-License-Identifier: MIT */
/* Internal objects of the core: endpoint, partner, request. */
#ifndef FMX_CORE_FMX_INT_H
#define FMX_CORE_FMX_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/counters.h"
#include "core/eplock.h"
#include "base/list.h"
#include "platform/copy.h"
#include "platform/wake.h"
#include "core/match.h"
#include "fmx.h"
#include "transport/record.h"
#include "transport/transport.h"
#include "region/region.h"
#include "bulk/xfer.h"

struct bulk_conn;
struct fmx_transport_ops;

/* A medium message arriving in fragments on one lane (proto/medium.c):
 * into a matched receive, or into a buffer until it is whole (neither:
 * out of memory, its fragments are swallowed). */
struct medium_rx {
  int busy;             /* a message in flight */
  struct bulk_conn *lane; /* the lane it comes on (NULL for a transport with one) */
  uint64_t sreq, total, got;
  struct fmx_request *req;
  struct unexp_msg *unexp;
};

struct partner {
  /* What its transport reads and fills (who it is, its state),
   * transport/transport.h. */
  struct transport_peer t;
  uint32_t index;
  int failing; /* ep_partner_fail is draining its rings */
  const struct fmx_transport_ops *tp; /* the transport serving it */
  void *tpd;                          /* its private state (tp->partner_size bytes) */
  struct list_node outq;   /* records waiting for ring room, in order */
  struct medium_rx medium[2]; /* per lane it delivers on */
  struct list_node reqs;   /* requests in flight with this partner */
  void *user_context;
  int reaped;  /* gone and released: the slot is free (ep_partner_reap) */
  /* What the bulk engines know of it (t.bulk points here): cold, and
   * large, after the fields read per message. */
  struct bulk_peer bulk;
};

enum req_kind { REQ_SEND = 1, REQ_RECV, REQ_CONNECT };
enum req_state { REQ_PENDING = 0, REQ_MATCHED, REQ_DONE };

#define REQ_F_FORGOTTEN 0x01
#define REQ_F_SYNC 0x02
#define REQ_F_RNDV 0x04
#define REQ_F_QUEUED 0x08 /* on partner outq */
#define REQ_F_WATCHED 0x20   /* counted in ep->nwatch (posted, or deferred) */
#define REQ_F_DEFERRED 0x40  /* matched: to a channel if the application stays away */

/* A record waiting for room in a ring: a send's message (ctl 0, req the
 * send), or a control record, either a receive's CTS or FIN kept in that
 * receive (ctl 1, req the receive, which outlives it: req_free waits) or
 * one with no request (ctl 1, req NULL, allocated). */
struct out_rec {
  struct list_node node;
  struct proto_hdr hdr;
  struct fmx_request *req;
  uint64_t off;            /* EAGER in fragments: bytes pushed so far */
  uint8_t ctl;
};

struct fmx_request {
  _Alignas(16) uint32_t index; /* 16: req_zero's stores (calloc gives that) */
  uint32_t gen;
  uint8_t kind;
  uint8_t state;
  uint8_t flags;
  uint8_t freed; /* the application let it go while its CTS/FIN waits for ring room */
  struct fmx_endpoint *ep;
  fmx_status_t status;
  struct partner *partner;
  uint64_t match;
  uint64_t mask;
  uint64_t seq; /* posting order */
  uint32_t nseg;
  fmx_seg_t *segs;
  fmx_seg_t seg1; /* storage when nseg <= 1 */
  uint64_t len;   /* sum of segs */
  struct list_node qnode; /* posted queue, or completed list */
  struct list_node hnode; /* posted hash bucket */
  struct list_node pnode; /* partner->reqs */
  struct out_rec out;
  /* rendezvous: the transfer the bulk engines move (bulk/xfer.h) */
  struct bulk_xfer xfer;
  uint64_t moved_ns;      /* when the engine last moved bytes (or started) */
  struct region_ref xref;   /* sender: the fmx_mem_alloc region holding segs; len 0: none */
  struct list_node bnode; /* ep->bulk list */
  uint64_t deadline_ns;
};

struct fmx_endpoint {
  struct ep_lock lock; /* core/eplock.h: ep_lock(ep), ep_unlock(ep) */
  pthread_mutex_t connect_lock; /* one outgoing handshake at a time */
  struct list_node link;        /* all endpoints */
  struct transport_ep t;        /* what transports read of it: who it is, nlive, closing (transport/transport.h) */
  struct ep_desc *desc;
  void *tpe[4]; /* each registered transport's state of this endpoint (core/transport.c) */

  struct partner **partners;
  uint32_t npartners;
  uint32_t partners_cap;
  struct partner *self;
  uint32_t wakeup_gen;
  uint64_t spin_ns; /* adaptive spin before blocking (wait.c) */

  struct match_queues mq;
  struct list_node completed;
  struct list_node bulk;      /* requests with a bulk transfer in progress */
  uint32_t nsiblings;         /* partners that are other endpoints of this process (wait.c) */
  /* Offload watch (progress.c): posted receives that a channel should
   * match while the application computes, and progress.c's list of such
   * endpoints (under its lock, with channel 0's references). */
  uint32_t nwatch;
  int nwaiting; /* application threads inside ep_wait */
  uint64_t wait_left_ns; /* when the last one left */
  struct bulk_env benv;   /* the endpoint as the bulk engines know it (bulk/xfer.h) */
  struct list_node watch_node;
  int watch_refs;
  uint64_t timeout_ms;        /* default request timeout */
  uint32_t ntimed;            /* requests with a deadline */

  struct fmx_request **reqs;  /* by index */
  uint32_t nreqs;
  uint32_t reqs_cap;
  struct fmx_request *free_reqs;
  uint64_t next_seq;

  int crowded;       /* ep_crowded: nlive above the host's hardware threads */
  int rndv_explicit; /* FMX_RNDV_THRESHOLD was set (not derived): it stands, crowded or not */
  uint64_t counters[CNT_MAX];
  char last_engine[16];
};

#define CNT(ep, name) ((ep)->counters[CNT_##name]++)

/* request.c */
struct fmx_request *req_alloc(struct fmx_endpoint *ep, int kind);
/* A request done at birth, status code FMX_SUCCESS, on the completed list:
 * the receipt of a send already pushed. Taken from ep->free_reqs, which the
 * caller saw non-empty, so it cannot fail. */
struct fmx_request *req_receipt(struct fmx_endpoint *ep, int kind);
void req_free(struct fmx_endpoint *ep, struct fmx_request *r);
uint64_t req_id(const struct fmx_request *r);
struct fmx_request *req_lookup(struct fmx_endpoint *ep, uint64_t id, int kind);
int req_set_segs(struct fmx_request *r, const fmx_seg_t *segs, uint32_t nseg);
void req_complete(struct fmx_endpoint *ep, struct fmx_request *r, fmx_return_t code);
void req_pool_fini(struct fmx_endpoint *ep);
/* copy `len` bytes at `off` into (to_req=1) or out of the request's segments */
/* Copy between the request's segments at `off` and buf; fn is the copy
 * routine (platform/copy.h), NULL for memcpy. */
void req_copy(struct fmx_request *r, uint64_t off, void *buf, uint64_t len, int to_req, copy_fn fn);

/* endpoint.c */
int lib_ready(void); /* fmx_init done and not finalized */
struct partner *ep_partner_from_addr(struct fmx_endpoint *ep, fmx_endpoint_addr_t a);
fmx_endpoint_addr_t ep_partner_addr(const struct partner *p);
struct partner *ep_partner_new(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp);
void ep_partner_reap(struct fmx_endpoint *ep);
struct partner *ep_partner_find(struct fmx_endpoint *ep, uint32_t eid, uint32_t session);
void ep_partner_fail(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code);
/* The same without taking what the partner's rings still hold first. */
void ep_partner_down(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code);
/* Poll p's transport, its records to the protocol. */
void ep_partner_poll(struct fmx_endpoint *ep, struct partner *p);
/* More partners in use (ourselves included) than the host has hardware
 * threads: ranks outnumber cores, and a copy made twice is time taken from
 * another rank (proto's eager limit, bulk's engine choice). */
static inline int ep_crowded(const struct fmx_endpoint *ep) { return ep->crowded; }
void ep_progress_locked(struct fmx_endpoint *ep);
void ep_progress_siblings(struct fmx_endpoint *ep);

/* wait.c */
/* Blocks until check(ep, arg) returns non-zero (called under ep->lock: once
 * before any progress, then after each progress pass), the timeout expires
 * or fmx_wakeup is called. Returns the last value of check. */
int ep_wait(struct fmx_endpoint *ep, uint32_t timeout_ms, int (*check)(struct fmx_endpoint *, void *), void *arg);

/* progress.c: progress while the application computes (offload channel 0
 * makes it on watched endpoints). Called by proto with ep->lock held. */
/* A receive r was posted unmatched, or a large send waits for its CTS: if
 * it may end up offloaded, count it so channel 0 matches for the
 * application meanwhile. */
void progress_watch(struct fmx_endpoint *ep, struct fmx_request *r);
/* r matched, completed or cancelled: no longer counted. */
void progress_unwatch(struct fmx_endpoint *ep, struct fmx_request *r);
/* r matched to be moved by whoever is idle (OFFLOAD_AWAY): the application
 * copies while it waits in fmx; channel 0 hands it to a channel once the
 * application has been away a moment. */
void progress_defer(struct fmx_endpoint *ep, struct fmx_request *r);
/* The send s got its CTS: a channel may fill for it (FMX_OFFLOAD=on,
 * FMX_BULK=offload: at once; auto: deferred, as receives). */
void progress_send_cts(struct fmx_endpoint *ep, struct fmx_request *s);
/* The endpoint closes (its lock not held): off the watch list, and channel
 * 0 no longer inside it. */
void progress_forget_ep(struct fmx_endpoint *ep);

#endif
