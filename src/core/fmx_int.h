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
#include "platform/sys.h"
#include "platform/wake.h"
#include "fmx.h"
#include "proto/proto.h"
#include "transport/transport.h"
#include "bulk/xfer.h"

struct fmx_transport_ops;

struct partner {
  /* What its transport reads and fills (who it is, its state),
   * transport/transport.h. */
  struct transport_peer t;
  uint32_t index;
  uint8_t failing;    /* ep_partner_fail is draining its rings */
  uint8_t reaped;     /* gone and released: the slot is free (ep_partner_reap) */
  uint32_t polled_at; /* its place in ep->polled (its transport polls each partner), else UINT32_MAX */
  struct proto_peer pp; /* the protocol's: its transport (pp.tp), queue, messages in flight */
  void *user_context;
  /* Its block goes on with its transport's state (transport_state), then,
   * for a partner on this host, what the bulk engines know of it (t.bulk;
   * core/partner.c). */
};

/* Where a partner's transport state begins in its block (core/partner.c:
 * the partner, then tp->partner_size bytes). */
#define TRANSPORT_STATE_ROUND(n) (((n) + TRANSPORT_STATE_ALIGN - 1) & ~(size_t)(TRANSPORT_STATE_ALIGN - 1))
#define PARTNER_HEAD TRANSPORT_STATE_ROUND(sizeof(struct partner))

enum req_kind { REQ_SEND = 1, REQ_RECV, REQ_CONNECT };

#define REQ_F_FORGOTTEN 0x01
#define REQ_F_WATCHED 0x02 /* counted in ep->nwatch (posted, or deferred) */
#define REQ_F_NETWATCH 0x04 /* watched for a partner on another host: counted in ep->nnetwatch too */

/* A request: the core's bookkeeping around the message the protocol
 * moves (m: its description, state and status, proto/proto.h). */
struct fmx_request {
  _Alignas(16) uint32_t index; /* 16: req_zero's stores (calloc gives that) */
  uint32_t gen;
  uint8_t kind;  /* enum req_kind */
  uint8_t flags; /* REQ_F_* */
  struct fmx_endpoint *ep;
  struct proto_msg m;
  struct list_node qnode; /* completed list */
  uint64_t deadline_ns;
};

/* The request a message is part of. */
static inline struct fmx_request *req_of(struct proto_msg *m) { return container_of(m, struct fmx_request, m); }

struct fmx_endpoint {
  struct ep_lock lock; /* core/eplock.h: ep_lock(ep), ep_unlock(ep) */
  pthread_mutex_t connect_lock; /* one outgoing handshake at a time */
  struct list_node link;        /* all endpoints */
  struct transport_ep t;        /* what transports read of it: who it is, nlive, closing (transport/transport.h) */
  void *tpe[4]; /* each registered transport's state of this endpoint (core/transport.c) */
  /* The transports beyond the local one that run on it (net), and those
   * of them with a progress verb, called at every progress pass. */
  const struct fmx_transport_ops *on[4], *prog[4];
  int non, nprog;

  struct partner **partners;
  uint32_t npartners;
  uint32_t partners_cap;
  /* What a progress pass visits, so that partners on other hosts (their
   * transport takes every partner's packets at once) cost it nothing:
   * those whose transport polls each partner (polled_cap slots, in no
   * order), and those whose queue holds records. */
  struct partner **polled;
  uint32_t npolled, polled_cap;
  struct list_node backlog; /* partners whose queue holds records (their proto_live.backlog) */
  struct partner *self;
  uint32_t wakeup_gen;
  uint64_t spin_ns; /* adaptive spin before blocking (wait.c) */
  uint64_t yield_quiet_until; /* no uncrowded yields before (wait.c, yield_when_long) */

  struct list_node completed;
  /* fmx_iconnect's requests waiting for a handshake (api_conn.c), by
   * qnode; each also in its partner's pp.live->msgs, so its death fails them. */
  struct list_node connecting;
  uint32_t nsiblings;         /* partners that are other endpoints of this process (wait.c) */
  /* Crowding (crowd.c): FMX_CROWDED; the partners in use on other hosts
   * (read unlocked; those on this one are t.nlive less these); under the
   * lock, the kernel's runnable tasks at the last look; when that look
   * was, and a count of idle polls (every 64th reads the clock). */
  enum { CROWD_AUTO, CROWD_ON, CROWD_OFF } crowd_mode;
  /* FMX_NET_PROGRESS (progress.c, net_watch), as crowd_mode: auto reads runnable too. */
  int net_mode;
  uint32_t nremote;
  int runnable;
  uint64_t crowd_look_ns;
  uint32_t crowd_polls;
  /* Offload watch (progress.c): posted receives that a channel should
   * match while the application computes, and progress.c's list of such
   * endpoints (under its lock, with channel 0's references). */
  uint32_t nwatch;
  uint32_t nnetwatch; /* of them, those with a partner on another host (channel 0 naps on the socket) */
  int nwaiting; /* application threads inside ep_wait (counted after the wait's first poll) */
  uint64_t wait_left_ns; /* when the last one left */
  uint64_t post_left_ns; /* when a post last returned with something watched (progress_left) */
  /* Bumped as a thread enters ep_wait with something watched and as it
   * leaves (a plain store: only a sign of life; odd: inside, with one
   * thread), and channel 0's last view of it: the value and when it first
   * saw it (progress.c). */
  uint32_t wait_gen;
  uint32_t idle_seen_gen;
  uint64_t idle_seen_ns;
  struct list_node watch_node;
  int watch_refs;
  /* The application's unexpected-message handler (core/unexp.c); it
   * runs while ep_in_handler. */
  fmx_unexp_handler_t unexp_fn;
  void *unexp_ctx;
  uint64_t timeout_ms;        /* default request timeout */
  uint32_t ntimed;            /* requests with a deadline */

  struct fmx_request **reqs;  /* by index */
  uint32_t nreqs;
  uint32_t reqs_cap;
  struct fmx_request *free_reqs;
  uint64_t next_seq;

  /* Its counters: in its published page (core/counters_page.h), or in
   * counters_own when there is none. */
  uint64_t *counters;
  struct counters_page *cpage;
  int cpage_fd;
  uint64_t counters_own[CNT_MAX];
  /* The protocol's (proto/proto.h): matching, transfers in progress, the
   * bulk engines' view. */
  struct proto_ep pe;
};

#define CNT(ep, name) ((ep)->counters[CNT_##name]++)

/* request.c */
struct fmx_request *req_alloc(struct fmx_endpoint *ep, int kind);
/* A request done at birth, status code FMX_SUCCESS, on the completed list:
 * the receipt of a send already pushed. Taken from ep->free_reqs, which the
 * caller saw non-empty, so it cannot fail. */
struct fmx_request *req_receipt(struct fmx_endpoint *ep, int kind);
void req_free(struct fmx_endpoint *ep, struct fmx_request *r);
struct fmx_request *req_lookup(struct fmx_endpoint *ep, uint64_t id, int kind);
int req_set_segs(struct fmx_request *r, const fmx_seg_t *segs, uint32_t nseg);
/* r never times out (a receive: no sender may ever come; the owner's side
 * of a region access). */
static inline void req_untimed(struct fmx_endpoint *ep, struct fmx_request *r) {
  if (r->deadline_ns) {
    r->deadline_ns = 0;
    ep->ntimed--;
  }
}
void req_complete(struct fmx_endpoint *ep, struct fmx_request *r, fmx_return_t code);
void req_pool_fini(struct fmx_endpoint *ep);

/* proto_up.c: the calls the protocol is given (proto_init) */
extern const struct proto_core core_for_proto;

/* endpoint.c */
int lib_ready(void); /* fmx_init done and not finalized */
/* crowd.c: FMX_CROWDED read into ep at its open; pe.crowded set again
 * (under the lock) after the partners changed. */
void ep_crowd_init(struct fmx_endpoint *ep);
void ep_crowd_set(struct fmx_endpoint *ep);
/* With partners on other hosts, look at the kernel's runnable tasks at
 * most every 10 ms (now: the caller's clock, or 0: every 64th call reads
 * it) and update pe.crowded. Any thread, without the lock. */
void ep_crowd_look(struct fmx_endpoint *ep, uint64_t now);
/* Give the core away (sched_yield), counted: ranks outnumber cores. */
void ep_give_core(struct fmx_endpoint *ep);
/* partner.c */
struct partner *ep_partner_from_addr(struct fmx_endpoint *ep, fmx_endpoint_addr_t a);
fmx_endpoint_addr_t ep_partner_addr(const struct partner *p);
/* p is on another host: its t.bulk is the one all such share, never written. */
int ep_partner_remote(const struct partner *p);
/* What the bulk engines kept of p (its own view: a partner on this host). */
void ep_partner_bulk_fini(struct partner *p);
struct partner *ep_partner_new(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp);
void ep_partner_reap(struct fmx_endpoint *ep);
struct partner *ep_partner_find(struct fmx_endpoint *ep, uint32_t eid, uint32_t session);
void ep_partner_fail(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code);
/* The same without taking what the partner's rings still hold first. */
void ep_partner_down(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code);
/* What a transport calls for each record it takes from p: 1 when p failed
 * meanwhile. */
int ep_partner_deliver(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                       const void *payload);
/* Poll p's transport, its records to the protocol. */
void ep_partner_poll(struct fmx_endpoint *ep, struct partner *p);
void ep_partner_queued(struct fmx_endpoint *ep, struct partner *p);
/* endpoint.c */
void ep_progress_locked(struct fmx_endpoint *ep);
void ep_progress_siblings(struct fmx_endpoint *ep);
/* api_conn.c: p's handshake is done: its iconnect requests complete
 * (transport_core.peer_ready); those past their deadline time out. */
void ep_connects_ready(struct fmx_endpoint *ep, struct partner *p);
void ep_connects_timeouts(struct fmx_endpoint *ep, uint64_t now);

/* unexp.c: proto_core.unexp. */
int ep_unexp_call(struct fmx_endpoint *ep, struct partner *p, uint64_t match, uint64_t len, const void *data);
/* Called back from the application's handler (the lock is this thread's,
 * nested): no progress, no close, disconnect or connect. Under the lock,
 * true exactly while the handler runs. */
static inline int ep_in_handler(struct fmx_endpoint *ep) { return ep_lock_nested(&ep->lock); }

/* wait.c */
/* Blocks until check(ep, arg) returns non-zero (called under ep->lock: once
 * before any progress, then after each progress pass), the timeout expires
 * or fmx_wakeup is called. Returns the last value of check. */
int ep_wait(struct fmx_endpoint *ep, uint32_t timeout_ms, int (*check)(struct fmx_endpoint *, void *), void *arg);

/* progress.c: progress while the application computes (offload channel 0
 * makes it on watched endpoints). The protocol reaches these through the
 * calls it was given (proto_up.c), with ep->lock held. */
/* A receive r was posted unmatched, or a large send waits for its CTS, or
 * either is pulled across hosts: if it may end up offloaded or needs
 * progress from another host (FMX_NET_PROGRESS), count it so channel 0
 * matches for the application meanwhile; else no longer counted. */
void progress_watch(struct fmx_endpoint *ep, struct fmx_request *r);
/* r matched, completed or cancelled: no longer counted. */
void progress_unwatch(struct fmx_endpoint *ep, struct fmx_request *r);
/* r matched to be moved by whoever is idle (OFFLOAD_AWAY): the application
 * copies while it waits in fmx; channel 0 hands it to a channel once the
 * application has been away a moment. */
void progress_defer(struct fmx_endpoint *ep, struct fmx_request *r);
/* Wake channel 0 to look at the watched endpoints (a watch began, a
 * watched wait ended), unless its last looks found the application about
 * (progress.c). */
void progress_kick(struct fmx_endpoint *ep);
/* A wait begins with something watched: was the application away? */
void progress_wait_begins(struct fmx_endpoint *ep);
/* A post returns (ep->lock held) with something watched: for
 * progress_wait_begins, the application's visit ends now (the post may
 * have copied for a while: a large send's first slots), not when the
 * watch began. */
static inline void progress_left(struct fmx_endpoint *ep) {
  if (__atomic_load_n(&ep->nwatch, __ATOMIC_RELAXED)) __atomic_store_n(&ep->post_left_ns, sys_now_ns(), __ATOMIC_RELAXED);
}
/* The send s got its CTS: a channel may fill for it (FMX_OFFLOAD=on,
 * FMX_BULK=offload: at once; auto: deferred, as receives). */
void progress_send_cts(struct fmx_endpoint *ep, struct fmx_request *s);
/* The endpoint closes (its lock not held): off the watch list, and channel
 * 0 no longer inside it. */
void progress_forget_ep(struct fmx_endpoint *ep);

#endif
