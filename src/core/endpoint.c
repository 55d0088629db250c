/* SPDX-License-Identifier: MIT */
/* Library and endpoint life cycle, progress (partners: partner.c). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "base/errors.h"
#include "core/tunables.h"
#include "base/log.h"
#include "core/transport.h"
#include "platform/sys.h"
#include "platform/topo.h"
#include "core/counters_page.h"
#include "core/fmx_int.h"

static pthread_mutex_t lib_lock = PTHREAD_MUTEX_INITIALIZER;
static int lib_initialized;
static struct list_node endpoints = {&endpoints, &endpoints};

int lib_ready(void) { return __atomic_load_n(&lib_initialized, __ATOMIC_ACQUIRE); }

__attribute__((visibility("default"))) fmx_return_t fmx_init(void) {
  pthread_mutex_lock(&lib_lock);
  if (lib_initialized) {
    pthread_mutex_unlock(&lib_lock);
    return FMX_ALREADY_INITIALIZED;
  }
  tunables_load();
  transports_init();
  proto_init(&core_for_proto);
  ep_asym_fence = sys_membarrier_register() == 0;
  __atomic_store_n(&lib_initialized, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lib_lock);
  return FMX_SUCCESS;
}

__attribute__((visibility("default"))) fmx_return_t fmx_finalize(void) {
  pthread_mutex_lock(&lib_lock);
  if (!lib_initialized) {
    pthread_mutex_unlock(&lib_lock);
    return FMX_NOT_INITIALIZED;
  }
  while (!list_empty(&endpoints)) {
    struct fmx_endpoint *ep = list_entry(endpoints.next, struct fmx_endpoint, link);
    pthread_mutex_unlock(&lib_lock);
    fmx_close_endpoint(ep);
    pthread_mutex_lock(&lib_lock);
  }
  lib_initialized = 0;
  pthread_mutex_unlock(&lib_lock);
  offload_shutdown(); /* every endpoint is closed: no job, nothing watched */
  transports_fini();
  log_flush_held();
  return FMX_SUCCESS;
}

/* ---- progress ---------------------------------------------------------- */

static void check_timeouts(struct fmx_endpoint *ep) {
  uint64_t now = sys_now_ns();
  if (!list_empty(&ep->connecting)) ep_connects_timeouts(ep, now);
  struct list_node *bpos, *bnext;
  list_for_each_safe(bpos, bnext, &ep->backlog) { /* only a queued record can time out here */
    struct proto_live *l = list_entry(bpos, struct proto_live, backlog);
    struct list_node *pos, *tmp;
    list_for_each_safe(pos, tmp, &l->outq) {
      struct out_rec *o = list_entry(pos, struct out_rec, node);
      struct fmx_request *r = o->msg ? req_of(o->msg) : NULL;
      /* Only what is still undelivered can time out: once in the ring the
       * peer has it (shm loses nothing). */
      if (r && !o->ctl && r->deadline_ns && now >= r->deadline_ns && !o->off) { /* a medium message half pushed is delivered */
        CNT(ep, TIMEOUT);
        req_complete(ep, r, FMX_TIMEOUT);
      }
    }
  }
}

void ep_progress_locked(struct fmx_endpoint *ep) {
  if (ep_in_handler(ep)) return; /* called back from the handler, mid-delivery (unexp.c) */
  for (int i = 0; i < ep->nprog; i++) ep->prog[i]->progress(ep, ep_partner_deliver);
  /* A partner polled may fail, or another be reaped, meanwhile: one moved
   * into a place already passed waits for the next pass. */
  for (uint32_t i = 0; i < ep->npolled; i++) {
    struct partner *p = ep->polled[i];
    if (p->t.state == PARTNER_ALIVE) ep_partner_poll(ep, p);
  }
  /* The queues: taken off the list while flushed (a flush may fail its
   * partner, which unlinks it), back on it while records still wait. */
  struct list_node q;
  list_init(&q);
  if (!list_empty(&ep->backlog)) {
    q.next = ep->backlog.next, q.prev = ep->backlog.prev;
    q.next->prev = q.prev->next = &q;
    list_init(&ep->backlog);
  }
  while (!list_empty(&q)) {
    struct proto_live *l = list_entry(q.next, struct proto_live, backlog);
    struct partner *p = l->owner;
    list_del(&l->backlog);
    if (p->t.state != PARTNER_ALIVE) continue;
    proto_flush(ep, p);
    if (!proto_outq_empty(&p->pp)) ep_partner_queued(ep, p);
  }
  if (!list_empty(&ep->pe.bulk)) rndv_progress(ep);
  if (ep->ntimed) check_timeouts(ep);
}

/* A waiter whose transfer needs another endpoint of this process (a ring or
 * vmsplice sender fills slots only when someone makes progress on it) makes
 * that progress itself: the application may wait on the receiving endpoint
 * alone. Trylock only: an endpoint in use is already being progressed.
 * lib_lock keeps a sibling from being freed meanwhile; nobody takes it while
 * holding an endpoint's lock. */
void ep_progress_siblings(struct fmx_endpoint *ep) {
  pthread_mutex_lock(&lib_lock);
  struct list_node *pos;
  list_for_each(pos, &endpoints) {
    struct fmx_endpoint *e = list_entry(pos, struct fmx_endpoint, link);
    if (e == ep || ep_trylock(e) != 0) continue;
    if (!e->t.closing) ep_progress_locked(e);
    ep_unlock(e);
  }
  pthread_mutex_unlock(&lib_lock);
}

/* ---- endpoints --------------------------------------------------------- */

/* The endpoint's descriptor page (its wake word): a memfd that shm
 * peers map, or with FMX_SHM=0, where none ever will, a page of our own
 * and no descriptor (a process opening 10,000 endpoints, fmx_sim, would
 * spend half the descriptors it may hold on them). */
static int open_desc(struct fmx_endpoint *ep) {
  int fd = -1;
  struct ep_desc *d;
  if (fmx_cfg.shm) {
    if ((fd = sys_memfd("fmx-endpoint", EP_DESC_SIZE)) < 0) return fd;
    d = sys_map_shared(fd, EP_DESC_SIZE);
  } else {
    void *m = mmap(NULL, EP_DESC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    d = m == MAP_FAILED ? NULL : m;
  }
  if (!d) {
    if (fd >= 0) close(fd);
    return -ENOMEM;
  }
  d->magic = EP_DESC_MAGIC;
  d->version = EP_DESC_VERSION;
  ep->t.desc_fd = fd;
  ep->pe.benv.desc = d;
  return 0;
}

/* The endpoint's partner to itself (ep->self), served by the self
 * transport: one address space, nothing shared. */
static int open_self(struct fmx_endpoint *ep) {
  struct partner *p = ep_partner_new(ep, transport_self());
  if (!p) return -ENOMEM;
  struct bulk_peer *b = p->t.bulk;
  b->is_self = 1;
  b->same_process = 1;
  b->cpu = ep->pe.benv.cpu;
  p->t.nic = ep->t.nic;
  p->t.eid = b->eid = ep->t.eid;
  p->t.session = ep->t.session;
  b->pid = getpid();
  b->cma_ok = 1; /* a rendezvous to ourselves is a plain copy (proto/rndv.c) */
  b->cma_reason = "one address space: plain copies";
  ep->self = p;
  return 0;
}

static void ep_free(struct fmx_endpoint *ep) {
  /* Offload channels moving a transfer let go before its shared memory goes. */
  for (uint32_t i = 0; i < ep->nreqs; i++)
    if (ep->reqs[i]->m.xfer.job) offload_detach(&ep->reqs[i]->m.xfer);
  for (uint32_t i = 0; i < ep->npartners; i++) {
    ep->partners[i]->pp.tp->release(ep, ep->partners[i]);
    medium_reset(ep, ep->partners[i]);
    proto_peer_fini(&ep->partners[i]->pp);
    ep_partner_bulk_fini(ep->partners[i]);
    free(ep->partners[i]);
  }
  free(ep->partners);
  free(ep->polled);
  proto_ep_fini(&ep->pe);
  req_pool_fini(ep);
  transports_ep_fini(ep);
  if (ep->pe.benv.desc) munmap(ep->pe.benv.desc, EP_DESC_SIZE);
  if (ep->t.desc_fd >= 0) close(ep->t.desc_fd);
  ep_lock_fini(&ep->lock);
  pthread_mutex_destroy(&ep->connect_lock);
  counters_page_close(ep);
  free(ep);
}

static fmx_return_t apply_params(struct fmx_endpoint *ep, const fmx_endpoint_param_t *params, uint32_t n,
                                 unsigned *ctx_bits, unsigned *ctx_shift) {
  if (n && !params) return FMX_ENDPOINT_PARAM_BAD_VALUE;
  for (uint32_t i = 0; i < n; i++) {
    switch (params[i].key) {
      case FMX_PARAM_CONTEXT_ID:
        *ctx_bits = params[i].val.context_id.bits;
        *ctx_shift = params[i].val.context_id.shift;
        if (*ctx_bits == 0 || *ctx_bits > 16 || *ctx_bits + *ctx_shift > 64) return FMX_ENDPOINT_PARAM_BAD_VALUE;
        break;
      case FMX_PARAM_TIMEOUT_MS:
        ep->timeout_ms = params[i].val.timeout_ms;
        break;
      default:
        return FMX_ENDPOINT_PARAM_BAD_KEY;
    }
  }
  return FMX_SUCCESS;
}

/* FMX_CONTEXT_IDS ("BITS,SHIFT", Open-MX's OMX_CTXIDS) for an endpoint
 * opened without context ids of its own. */
static fmx_return_t forced_context_ids(unsigned *ctx_bits, unsigned *ctx_shift) {
  const char *v = fmx_cfg.context_ids;
  if (!v || !*v || *ctx_bits) return FMX_SUCCESS;
  unsigned bits, shift;
  char end;
  if (sscanf(v, "%u,%u%c", &bits, &shift, &end) != 2 || bits == 0 || bits > 16 || bits + shift > 64) {
    log_warn_once("FMX-CFG-CTXIDS", "FMX_CONTEXT_IDS='%s' is not BITS,SHIFT with 1-16 bits and BITS+SHIFT <= 64: "
                  "endpoints do not open", v);
    return FMX_ENDPOINT_PARAM_BAD_VALUE;
  }
  *ctx_bits = bits;
  *ctx_shift = shift;
  return FMX_SUCCESS;
}

__attribute__((visibility("default"))) fmx_return_t fmx_open_endpoint(uint32_t board, uint32_t endpoint_id,
                                                                      uint32_t key,
                                                                      const fmx_endpoint_param_t *params,
                                                                      uint32_t nparams, fmx_endpoint_t *endpoint) {
  if (!lib_ready()) return FMX_NOT_INITIALIZED;
  if (!endpoint) return FMX_BAD_ENDPOINT;
  if (board != 0 && board != FMX_ANY_BOARD) return FMX_BOARD_NOT_FOUND;
  if (endpoint_id != FMX_ANY_ENDPOINT && endpoint_id >= fmx_cfg.endpoint_max) return FMX_BAD_ENDPOINT;
  if (fmx_cfg.ring_size < 4 * 1024 || fmx_cfg.ring_size > (1ull << 30)) {
    log_warn_once("FMX-CFG-RING", "FMX_RING_SIZE=%llu out of [4K, 1G]", (unsigned long long)fmx_cfg.ring_size);
    return FMX_ENDPOINT_PARAM_BAD_VALUE;
  }
  struct fmx_endpoint *ep = calloc(1, sizeof *ep);
  if (!ep) return FMX_NO_RESOURCES;
  ep_lock_init(&ep->lock);
  pthread_mutex_init(&ep->connect_lock, NULL);
  ep->t.desc_fd = -1;
  ep->t.board = 0;
  ep->t.key = key;
  ep->t.nic = transports_nic();
  ep->t.session = (uint32_t)sys_random64();
  ep->t.bulk = &ep->pe.benv;
  ep->pe.benv.cpu = topo_home_cpu();
  counters_page_open(ep);
  ep->pe.benv.counters = ep->counters;
  ep->timeout_ms = fmx_cfg.request_timeout_ms;
  const char *src = config_source("FMX_RNDV_THRESHOLD");
  ep_crowd_init(ep);
  ep->pe.rndv_explicit = src && strcmp(src, "default") != 0 && strcmp(src, "topology") != 0;
  list_init(&ep->completed);
  list_init(&ep->connecting);
  list_init(&ep->backlog);
  list_init(&ep->watch_node);
  proto_ep_init(ep, 0, 0); /* so ep_free works from here on */
  unsigned ctx_bits = 0, ctx_shift = 0;
  int r;
  fmx_return_t rc = apply_params(ep, params, nparams, &ctx_bits, &ctx_shift);
  if (!rc) rc = forced_context_ids(&ctx_bits, &ctx_shift);
  if (rc) {
    ep_free(ep);
    return rc;
  }
  proto_ep_init(ep, ctx_bits, ctx_shift);
  if ((r = open_desc(ep)) < 0) {
    log_warn("FMX-FDS", "endpoint: no descriptor page%s: %s (RLIMIT_NOFILE %llu)", fmx_cfg.shm ? " (memfd)" : "",
             strerror(-r), sys_nofile_limit());
    ep_free(ep);
    return FMX_NO_SYSTEM_RESOURCES;
  }
  if (transports_ep_init(ep) < 0) {
    ep_free(ep);
    return FMX_NO_RESOURCES;
  }
  const struct fmx_transport_ops *tp = transport_local();
  r = -EADDRINUSE;
  if (endpoint_id == FMX_ANY_ENDPOINT) {
    for (uint32_t id = (uint32_t)fmx_cfg.any_endpoint_from; id < fmx_cfg.endpoint_max && (r == -EADDRINUSE || r == -EACCES);
         id++) {
      ep->t.eid = id;
      r = tp->listen(ep);
    }
  } else {
    ep->t.eid = endpoint_id;
    r = tp->listen(ep);
  }
  if (r < 0) {
    ep_free(ep);
    /* -EADDRINUSE: BUSY; squatted (-EACCES): another user holds the name
     * (logged), ACCESS_DENIED. */
    return fmx_code(r);
  }
  if ((r = open_self(ep)) < 0 || (r = tp->open(ep)) < 0) {
    log_warn("FMX-EP-OPEN", "endpoint %u: cannot start: %s (RLIMIT_NOFILE %llu)", ep->t.eid,
             strerror(r < 0 ? -r : ENOMEM), sys_nofile_limit());
    ep_free(ep);
    return FMX_NO_SYSTEM_RESOURCES;
  }
  transports_ep_open(ep);
  counters_page_ready(ep);
  pthread_mutex_lock(&lib_lock);
  list_add_tail(&endpoints, &ep->link);
  pthread_mutex_unlock(&lib_lock);
  *endpoint = ep;
  return FMX_SUCCESS;
}

/* What is still queued when the endpoint closes (a handshake under way, a
 * ring or a window full) goes before the CLOSE: an eager send completes
 * before the peer has it and the process may exit right after. A peer
 * that dies or fails its handshake drops its queue (the endpoint is not
 * closing yet: its watcher still sees deaths); one alive that never makes
 * room is waited for at most FMX_NET_TIMEOUT_MS, as unacked data is
 * (net_close). Between passes the lock is dropped, the endpoints of this
 * process that the queue may be for get a pass (the caller may be the
 * only thread), and the sleep doubles from 50 us to 5 ms. With the
 * endpoint's lock held. */
#define CLOSE_NAP_FIRST_NS 50000
#define CLOSE_NAP_MOST_NS 5000000
static void close_flush(struct fmx_endpoint *ep) {
  if (list_empty(&ep->backlog)) return;
  uint64_t end = sys_now_ns() + fmx_cfg.net_timeout_ms * 1000000ull;
  long nap = CLOSE_NAP_FIRST_NS;
  for (;;) {
    ep_progress_locked(ep);
    if (list_empty(&ep->backlog) || sys_now_ns() >= end) break;
    ep_unlock(ep);
    ep_progress_siblings(ep);
    struct timespec ts = {0, nap};
    nanosleep(&ts, NULL);
    nap = nap * 2 < CLOSE_NAP_MOST_NS ? nap * 2 : CLOSE_NAP_MOST_NS;
    ep_lock(ep);
  }
}

__attribute__((visibility("default"))) fmx_return_t fmx_close_endpoint(fmx_endpoint_t ep) {
  if (!ep || ep_in_handler(ep)) return FMX_BAD_ENDPOINT;
  ep_lock(ep);
  close_flush(ep);
  ep->t.closing = 1;
  /* Tell every live peer, best effort (a full ring: its pidfd or its next
   * send to our closed socket tells it instead). */
  for (uint32_t i = 0; i < ep->npartners; i++) {
    struct partner *p = ep->partners[i];
    if (p->t.state != PARTNER_ALIVE || p->t.bulk->is_self) continue;
    struct proto_hdr h = {.type = PROTO_CLOSE};
    if (proto_outq_empty(&p->pp)) p->pp.tp->push(ep, p, &h, NULL, 0);
  }
  ep->pe.benv.desc->closed = 1;
  ep_unlock(ep);
  transport_local()->close(ep);
  transports_ep_close(ep);
  progress_forget_ep(ep);
  pthread_mutex_lock(&lib_lock);
  list_del(&ep->link);
  pthread_mutex_unlock(&lib_lock);
  ep_free(ep);
  return FMX_SUCCESS;
}
