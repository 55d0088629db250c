/* SPDX-License-Identifier: MIT */
/* Internal objects of the core: endpoint, partner, request. */
#ifndef FMX_CORE_FMX_INT_H
#define FMX_CORE_FMX_INT_H

#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>

#include "core/counters.h"
#include "core/eplock.h"
#include "base/list.h"
#include "platform/copy.h"
#include "core/match.h"
#include "fmx.h"
#include "transport/record.h"
#include "region/region.h"

struct channel;
struct bulk_conn;
struct fmx_bulk_engine;
struct fmx_transport_ops;
struct offload_job;

/* Shared descriptor of an endpoint (a memfd page mapped by every peer):
 * what a peer needs to wake us. */
struct ep_desc {
  uint32_t magic;
  uint32_t version;
  _Alignas(64) uint32_t wake_seq; /* futex word */
  uint32_t sleepers;              /* threads blocked (or about to) on wake_seq */
  uint32_t closed;
};
#define EP_DESC_MAGIC 0x464d5844u /* "FMXD" */
#define EP_DESC_VERSION 1
#define EP_DESC_SIZE 4096

enum partner_state { PARTNER_ALIVE = 0, PARTNER_DEAD, PARTNER_CLOSED, PARTNER_DISCONNECTED };

/* A bulk engine's cost with one peer, in segments: for len >= from,
 * time(len) = startup_us + len / mbps (MB/s = bytes per microsecond); the
 * segments follow the cache regimes (in cache, out of it). bulk/engine.h. */
struct bulk_cost {
  double startup_us, mbps;
  uint64_t from;
};
#define BULK_COST_SEGS 4
struct bulk_model {
  int n; /* segments, sorted by from; 0 = not measured */
  struct bulk_cost seg[BULK_COST_SEGS];
};
#define BULK_MAX_ENGINES 8

/* The receiver's own measurement of the engines for one size class (a
 * power of two) of one partner, where nothing was measured (bulk/adapt.c). */
#define ADAPT_CLASSES 40
struct adapt_class {
  uint8_t inc;   /* the engine in use: bulk_engines[] index + 1; 0 = none yet */
  uint8_t probe; /* within a round: the next index to try */
  uint8_t skip;  /* engines (bit i: bulk_engines[i]) this round leaves out */
  uint8_t rounds; /* rounds ended (saturates) */
  uint8_t timed;  /* engines (bit i) timed in some round */
  uint32_t left; /* messages on inc before the next round */
  uint32_t span; /* the last such run */
  float best[BULK_MAX_ENGINES]; /* fastest clean transfer this round, ns per byte; 0 = none */
  float last[BULK_MAX_ENGINES]; /* the same, of the last round ended */
  /* The engine in use, recent only: the fastest of its last ADAPT_WINDOW
   * clean transfers and of the window before (the machine changes). */
  float win, prev_win;
  uint32_t nwin;
};

/* A medium message arriving in fragments on one channel (proto/medium.c):
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
  uint32_t index;
  uint32_t gen;
  uint64_t nic;
  uint32_t eid;
  uint32_t session;
  pid_t pid;
  int pidfd;
  int state;
  int is_self;
  int same_process; /* another endpoint of this process (or ourselves) */
  int failing; /* ep_partner_fail is draining its rings */
  struct channel *chan[2]; /* we send on chan[0]; we poll every one */
  int nchan;
  const struct fmx_transport_ops *tp; /* the transport serving it */
  void *tpd;                          /* its private state (tp->partner_size bytes) */
  int cpu;   /* the peer's CPU from its hello (a hint), -1 unknown */
  int cost_ready;                          /* cost[] and level filled (first rendezvous) */
  int level;                               /* topology level shared with us (enum topo_level) */
  struct bulk_model cost[BULK_MAX_ENGINES]; /* per bulk_engines[] index */
  struct adapt_class adapt[ADAPT_CLASSES];  /* per size class, when cost[] is empty */
  int cma_ok;
  struct list_node outq;   /* records waiting for ring room, in order */
  struct medium_rx medium[2]; /* per channel we poll */
  struct region_cache *xmem;    /* its fmx_mem_alloc regions mapped here (region/region.c) */
  struct list_node reqs;   /* requests in flight with this partner */
  void *user_context;
  /* Cold fields last: the ones above are read per message, and their
   * cache lines stay where they were measured. */
  int reaped;  /* gone and released: the slot is free (ep_partner_reap) */
  char cma_reason[160];
};

enum req_kind { REQ_SEND = 1, REQ_RECV, REQ_CONNECT };
enum req_state { REQ_PENDING = 0, REQ_MATCHED, REQ_DONE };

#define REQ_F_FORGOTTEN 0x01
#define REQ_F_SYNC 0x02
#define REQ_F_RNDV 0x04
#define REQ_F_QUEUED 0x08 /* on partner outq */
#define REQ_F_OFFLOADED 0x10 /* an offload channel moved (or helped move) it */
#define REQ_F_WATCHED 0x20   /* counted in ep->nwatch (posted, or deferred) */
#define REQ_F_DEFERRED 0x40  /* matched: to a channel if the application stays away */
#define REQ_F_ADAPT 0x80     /* its engine came from adapt: time it (bulk/adapt.c) */

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
  /* rendezvous */
  const struct fmx_bulk_engine *engine;
  /* What the connection lends the engines (bulk/conn.h): the RTS's lane
   * (receiver), the transport's conn op (sender, at the CTS). */
  struct bulk_conn *conn;
  struct proto_seg *rsegs; /* remote segments (receiver) */
  uint32_t nrseg;
  uint64_t sreq;          /* sender's id (receiver side) */
  uint64_t rreq;          /* receiver's id (sender side, ring engine) */
  uint64_t want;          /* bytes to move */
  uint64_t done;          /* bytes moved */
  uint64_t moved_ns;      /* when the engine last moved bytes (or started) */
  uint64_t adapt_ns;      /* when it was matched (REQ_F_ADAPT) */
  uint64_t adapt_seq;     /* ep->rndv_starts then */
  uint32_t xfer_tag;      /* an engine's tag for this transfer, carried by the CTS (coop: its generation) */
  const struct region_map *xsrc; /* receiver: the sender's region holding rsegs, mapped here; NULL: cma */
  struct region_ref xref;   /* sender: the fmx_mem_alloc region holding segs; len 0: none */
  struct offload_job *job; /* the offload channel's job moving it, or NULL */
  struct list_node bnode; /* ep->bulk list */
  uint64_t deadline_ns;
};

struct fmx_endpoint {
  struct ep_lock lock; /* core/eplock.h: ep_lock(ep), ep_unlock(ep) */
  pthread_mutex_t connect_lock; /* one outgoing handshake at a time */
  struct list_node link;        /* all endpoints */
  uint32_t board;
  uint32_t eid;
  uint32_t key;
  uint32_t session;
  uint64_t nic;
  int listen_fd;
  int ctl_fd; /* eventfd: tells the watcher thread to rescan or quit */
  pthread_t watcher;
  int watcher_running;
  int desc_fd;
  struct ep_desc *desc;
  void *tpe[4]; /* each registered transport's state of this endpoint (core/transport.c) */
  uint64_t probe_word; /* peers read it to prove CMA works */
  int cpu;             /* our CPU at open (pinned: exact; else a hint), -1 unknown */

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
  uint64_t rndv_starts;  /* rendezvous receives matched so far (bulk/adapt.c) */
  struct list_node watch_node;
  int watch_refs;
  uint64_t timeout_ms;        /* default request timeout */
  uint32_t ntimed;            /* requests with a deadline */

  struct fmx_request **reqs;  /* by index */
  uint32_t nreqs;
  uint32_t reqs_cap;
  struct fmx_request *free_reqs;
  uint64_t next_seq;

  uint32_t nlive;    /* partners not reaped, ourselves (ep->self) included */
  int crowded;       /* ep_crowded: nlive above the host's hardware threads */
  int rndv_explicit; /* FMX_RNDV_THRESHOLD was set (not derived): it stands, crowded or not */
  uint64_t counters[CNT_MAX];
  char last_engine[16];
  int closing;
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
/* Wake a peer that may sleep on its descriptor (1 if it did). Dekker
 * pattern: we publish (a record, a freed slot), then read `sleepers`; the
 * sleeper counts itself in `sleepers`, then looks again. One side needs a
 * full fence between its store and its load. With membarrier the sleeper
 * pays it (a system call on the slow path it is taking anyway, ep_wait)
 * and every send skips its mfence, which on x86 would wait for the
 * published line to leave the store buffer. Without membarrier (old
 * kernels), the waker fences. Inline: every push calls it. */
extern int ep_asym_fence; /* membarrier gives the sleeper the fence (endpoint.c) */
void ep_wake_sleepers(struct ep_desc *d);
static inline int ep_wake(struct ep_desc *d) {
  if (!d) return 0;
#ifdef __SANITIZE_THREAD__
  /* TSan does not model fences: an RMW gives the same order, slower. */
  if (!__atomic_fetch_add(&d->sleepers, 0, __ATOMIC_SEQ_CST)) return 0;
#else
  if (!ep_asym_fence)
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  else
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* compiler barrier only */
  if (!__atomic_load_n(&d->sleepers, __ATOMIC_RELAXED)) return 0;
#endif
  ep_wake_sleepers(d);
  return 1;
}
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
