/* SPDX-License-Identifier: MIT */
/* The public calls of fmx.h that move messages: argument checks, then the
 * core under ep->lock (peers and addresses: api_conn.c; fmx_get_info:
 * info.c). */
#include <string.h>

#include "bulk/engine.h"
#include "core/api.h"
#include "platform/sys.h"

/* flags: FMX_MSG_* (SEND_FLAGS). Inlined: fmx_isend's constant flags fold
 * away (called, it cost 4% of the 8 B message rate). */
static inline __attribute__((always_inline)) fmx_return_t
send_common(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_endpoint_addr_t dest, uint64_t match,
            uint64_t data, uint32_t flags, void *context, fmx_request_t *request) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || (flags & ~SEND_FLAGS)) return FMX_BAD_REQUEST;
  int sync = (flags & FMX_MSG_SYNC) != 0;
  if (sync && (flags & FMX_MSG_NOW)) return FMX_BAD_REQUEST;
  /* The record's flags: none on the common path. */
  unsigned hflags = 0;
  if (flags & FMX_MSG_UNTAGGED) {
    hflags |= PROTO_F_UNTAGGED;
    match = 0;
  }
  if (flags & FMX_MSG_DATA) hflags |= PROTO_F_DATA;
  else data = 0;
  uint64_t len;
  fmx_return_t rc = check_segs(segs, nsegs, &len);
  if (rc) return rc;
  ep_lock(ep);
  struct partner *p = ep_partner_from_addr(ep, dest);
  if (!p) {
    ep_unlock(ep);
    return FMX_BAD_ADDRESS;
  }
  /* Now or not at all (the libfabric provider's injects): no request. */
  if (flags & FMX_MSG_NOW) {
    fmx_return_t now = p->t.state != PARTNER_ALIVE                                   ? gone_code(p)
                       : proto_send_now(ep, p, segs, nsegs, len, match, hflags, data) ? FMX_SUCCESS
                                                                                     : FMX_NO_RESOURCES;
    ep_unlock(ep);
    if (now == FMX_SUCCESS) *request = NULL;
    return now;
  }
  /* A small message goes before its request, which is then only a
   * receipt, done at birth: one on the free list, so that making it cannot
   * fail. */
  int sent = !sync && ep->free_reqs && p->t.state == PARTNER_ALIVE &&
             proto_send_now(ep, p, segs, nsegs, len, match, hflags, data);
  struct fmx_request *r = sent ? req_receipt(ep, REQ_SEND) : req_alloc(ep, REQ_SEND);
  if (!sent && (!r || req_set_segs(r, segs, nsegs) < 0)) {
    if (r) req_free(ep, r);
    ep_unlock(ep);
    return FMX_NO_RESOURCES;
  }
  struct proto_msg *m = &r->m;
  m->match = match;
  m->len = len;
  m->partner = p;
  m->status = (fmx_status_t){.context = context, .source = dest, .match_info = match, .msg_length = len,
                             .xfer_length = len};
  if (sync) m->flags |= MSG_F_SYNC;
  if (hflags & PROTO_F_UNTAGGED) m->flags |= MSG_F_UNTAGGED;
  if (hflags & PROTO_F_DATA) {
    m->flags |= MSG_F_DATA;
    m->imm = data;
  }
  *request = r;
  if (!sent && p->t.state != PARTNER_ALIVE)
    req_complete(ep, r, gone_code(p));
  else if (!sent)
    proto_send_start(ep, m);
  progress_left(ep);
  ep_unlock(ep);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_isend(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_endpoint_addr_t dest,
                           uint64_t match, void *context, fmx_request_t *request) {
  return send_common(ep, segs, nsegs, dest, match, 0, 0, context, request);
}

API fmx_return_t fmx_issend(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_endpoint_addr_t dest,
                            uint64_t match, void *context, fmx_request_t *request) {
  return send_common(ep, segs, nsegs, dest, match, 0, FMX_MSG_SYNC, context, request);
}

API fmx_return_t fmx_isendx(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_endpoint_addr_t dest,
                            uint64_t match, uint64_t data, uint32_t flags, void *context, fmx_request_t *request) {
  return send_common(ep, segs, nsegs, dest, match, data, flags, context, request);
}

/* source: NULL, or the only partner it takes from. flags: RECV_FLAGS.
 * multi: a multi-receive buffer (one segment) leaving min_free. Inlined,
 * as send_common (multi 0 folds away). */
static inline __attribute__((always_inline)) fmx_return_t
recv_common(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, const fmx_endpoint_addr_t *source,
            uint64_t match, uint64_t mask, uint32_t flags, void *context, fmx_request_t *request, int multi,
            uint64_t min_free) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || (flags & ~RECV_FLAGS)) return FMX_BAD_REQUEST;
  uint64_t len;
  fmx_return_t rc = check_segs(segs, nsegs, &len);
  if (rc) return rc;
  if (flags & FMX_MSG_UNTAGGED) {
    match = mask = 0;
  } else {
    rc = (fmx_return_t)match_check(&ep->pe.mq, match, mask);
    if (rc) return rc;
  }
  ep_lock(ep);
  struct partner *from = NULL;
  if (source && !(from = ep_partner_from_addr(ep, *source))) {
    ep_unlock(ep);
    return FMX_BAD_ADDRESS;
  }
  struct fmx_request *r = recv_req_new(ep, segs, nsegs, match, mask, flags, context);
  if (!r) {
    ep_unlock(ep);
    return FMX_NO_RESOURCES;
  }
  r->m.from = from;
  if (multi) proto_multi_init(&r->m, min_free);
  *request = r;
  /* No progress pass first: a record still in a ring has not arrived yet,
   * so matching it after this receive is posted keeps MX semantics. */
  proto_recv_post(ep, &r->m);
  /* Directed to a partner already gone: what it delivered may have matched;
   * else nothing more comes, as for those posted before it went. */
  if (from && from->t.state != PARTNER_ALIVE) proto_recv_fail_from(ep, from, gone_code(from));
  progress_left(ep);
  ep_unlock(ep);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_irecv(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, uint64_t match, uint64_t mask,
                           void *context, fmx_request_t *request) {
  return recv_common(ep, segs, nsegs, NULL, match, mask, 0, context, request, 0, 0);
}

API fmx_return_t fmx_irecvx(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, const fmx_endpoint_addr_t *source,
                            uint64_t match, uint64_t mask, uint32_t flags, void *context, fmx_request_t *request) {
  return recv_common(ep, segs, nsegs, source, match, mask, flags, context, request, 0, 0);
}

API fmx_return_t fmx_irecv_multi(fmx_endpoint_t ep, void *buf, uint64_t len, uint64_t min_free,
                                 const fmx_endpoint_addr_t *source, uint64_t match, uint64_t mask, uint32_t flags,
                                 void *context, fmx_request_t *request) {
  fmx_seg_t seg = {buf, len};
  return recv_common(ep, &seg, 1, source, match, mask, flags, context, request, 1, min_free);
}

/* ---- completion -------------------------------------------------------- */

static int req_valid(struct fmx_endpoint *ep, struct fmx_request *r) {
  return r && r->ep == ep && r->kind != 0 && r->index < ep->nreqs && ep->reqs[r->index] == r;
}

/* Hand a completed request to the caller and free it. */
static void reap(struct fmx_endpoint *ep, struct fmx_request *r, fmx_status_t *status) {
  if (status) *status = r->m.status;
  list_del(&r->qnode);
  r->m.state = MSG_PENDING; /* so req_free accounts it */
  req_free(ep, r);
}

static fmx_return_t test_common(fmx_endpoint_t ep, fmx_request_t *request, fmx_status_t *status, uint32_t *result,
                                int progress, int take) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || !result) return FMX_BAD_REQUEST;
  ep_lock(ep);
  struct fmx_request *r = *request;
  if (!req_valid(ep, r) || (r->flags & REQ_F_FORGOTTEN)) {
    ep_unlock(ep);
    return FMX_BAD_REQUEST;
  }
  if (progress && r->m.state != MSG_DONE) ep_progress_locked(ep);
  *result = r->m.state == MSG_DONE;
  if (*result && take) {
    reap(ep, r, status);
    *request = NULL;
  }
  ep_unlock(ep);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_test(fmx_endpoint_t ep, fmx_request_t *request, fmx_status_t *status, uint32_t *result) {
  return test_common(ep, request, status, result, 1, 1);
}

API fmx_return_t fmx_ibuffered(fmx_endpoint_t ep, fmx_request_t *request, uint32_t *result) {
  return test_common(ep, request, NULL, result, 1, 0);
}

/* fmx_wait's check: the request is done (reaped here, under the lock that
 * found it done) or not valid (any longer). */
struct wait_one {
  struct fmx_request *r;
  fmx_status_t *status;
  int outcome; /* 0 pending, 1 done and reaped, -1 not a valid request */
};

static int wait_one_check(struct fmx_endpoint *ep, void *arg) {
  struct wait_one *w = arg;
  if (!req_valid(ep, w->r) || (w->r->flags & REQ_F_FORGOTTEN)) return (w->outcome = -1) != 0;
  if (w->r->m.state != MSG_DONE) return 0;
  reap(ep, w->r, w->status);
  return (w->outcome = 1) != 0;
}

API fmx_return_t fmx_wait(fmx_endpoint_t ep, fmx_request_t *request, uint32_t timeout_ms, fmx_status_t *status,
                          uint32_t *result) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || !result) return FMX_BAD_REQUEST;
  struct wait_one w = {*request, status, 0};
  ep_wait(ep, timeout_ms, wait_one_check, &w);
  if (w.outcome < 0) return FMX_BAD_REQUEST;
  if (w.outcome) *request = NULL;
  *result = w.outcome == 1;
  return FMX_SUCCESS;
}

struct any_arg {
  uint64_t match, mask;
  struct fmx_request *found;
};

static int find_any(struct fmx_endpoint *ep, void *arg) {
  struct any_arg *a = arg;
  struct list_node *pos;
  list_for_each(pos, &ep->completed) {
    struct fmx_request *r = list_entry(pos, struct fmx_request, qnode);
    if ((r->m.status.match_info & a->mask) == a->match) {
      a->found = r;
      return 1;
    }
  }
  return 0;
}

static fmx_return_t any_common(fmx_endpoint_t ep, uint32_t timeout_ms, int block, uint64_t match, uint64_t mask,
                               fmx_status_t *status, uint32_t *result) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!result) return FMX_BAD_REQUEST;
  if (match & ~mask) return FMX_BAD_MATCH_MASK;
  struct any_arg a = {match, mask, NULL};
  if (block) ep_wait(ep, timeout_ms, find_any, &a);
  ep_lock(ep);
  ep_progress_locked(ep);
  a.found = NULL;
  *result = (uint32_t)find_any(ep, &a);
  if (*result) reap(ep, a.found, status);
  ep_unlock(ep);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_test_any(fmx_endpoint_t ep, uint64_t match, uint64_t mask, fmx_status_t *status,
                              uint32_t *result) {
  return any_common(ep, 0, 0, match, mask, status, result);
}

API fmx_return_t fmx_wait_any(fmx_endpoint_t ep, uint32_t timeout_ms, uint64_t match, uint64_t mask,
                              fmx_status_t *status, uint32_t *result) {
  return any_common(ep, timeout_ms, 1, match, mask, status, result);
}

API fmx_return_t fmx_test_some(fmx_endpoint_t ep, fmx_status_t *statuses, uint32_t max, uint32_t *count) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!count || (max && !statuses)) return FMX_BAD_REQUEST;
  uint32_t n = 0;
  ep_lock(ep);
  /* Timed as a wait's pass (bulk/engine.h, adapt_in_pass): the provider
   * calls this back to back while its MPI waits, so what a transfer takes
   * is the engine's; untimed, adapt never learns, and the topology's ring
   * took alltoall of 4 MiB on 2 ranks 1.5x as long as cma (Open MPI +
   * fmx 592-598 us, timed 386-401; vader 389-391, 2026-11-27). */
  adapt_in_pass = 1;
  ep_progress_locked(ep);
  adapt_in_pass = 0;
  for (; n < max && !list_empty(&ep->completed); n++)
    reap(ep, list_entry(ep->completed.next, struct fmx_request, qnode), &statuses[n]);
  ep_unlock(ep);
  *count = n;
  return FMX_SUCCESS;
}

static int any_completed(struct fmx_endpoint *ep, void *arg) { return !list_empty(&ep->completed); }

static fmx_return_t peek_common(fmx_endpoint_t ep, uint32_t timeout_ms, int block, fmx_request_t *request,
                                uint32_t *result) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || !result) return FMX_BAD_REQUEST;
  if (block) ep_wait(ep, timeout_ms, any_completed, NULL);
  ep_lock(ep);
  ep_progress_locked(ep);
  *result = !list_empty(&ep->completed);
  if (*result) *request = list_entry(ep->completed.next, struct fmx_request, qnode);
  ep_unlock(ep);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_ipeek(fmx_endpoint_t ep, fmx_request_t *request, uint32_t *result) {
  return peek_common(ep, 0, 0, request, result);
}

API fmx_return_t fmx_peek(fmx_endpoint_t ep, uint32_t timeout_ms, fmx_request_t *request, uint32_t *result) {
  return peek_common(ep, timeout_ms, 1, request, result);
}

API fmx_return_t fmx_cancel(fmx_endpoint_t ep, fmx_request_t *request, uint32_t *result) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || !result) return FMX_BAD_REQUEST;
  ep_lock(ep);
  struct fmx_request *r = *request;
  fmx_return_t rc = FMX_SUCCESS;
  *result = 0;
  if (!req_valid(ep, r)) {
    rc = FMX_BAD_REQUEST;
  } else if (r->kind == REQ_SEND) {
    rc = FMX_BAD_REQUEST;
  } else if (r->kind == REQ_CONNECT && r->m.state != MSG_DONE) {
    /* Its handshake goes on (as fmx_connect_async's): nobody waits for it. */
    CNT(ep, CANCELLED);
    req_free(ep, r);
    *request = NULL;
    *result = 1;
  } else if (r->kind == REQ_RECV && r->m.state == MSG_PENDING && !(r->m.flags & MSG_F_REGION) &&
             proto_recv_cancel(ep, &r->m)) {
    CNT(ep, CANCELLED);
    req_free(ep, r);
    *request = NULL;
    *result = 1;
  }
  ep_unlock(ep);
  return rc;
}

API fmx_return_t fmx_forget(fmx_endpoint_t ep, fmx_request_t *request) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request) return FMX_BAD_REQUEST;
  ep_lock(ep);
  struct fmx_request *r = *request;
  fmx_return_t rc = FMX_SUCCESS;
  if (!req_valid(ep, r) || (r->flags & REQ_F_FORGOTTEN)) {
    rc = FMX_BAD_REQUEST;
  } else if (r->m.state == MSG_DONE) {
    reap(ep, r, NULL);
    *request = NULL;
  } else {
    r->flags |= REQ_F_FORGOTTEN;
    *request = NULL;
  }
  ep_unlock(ep);
  return rc;
}

API fmx_return_t fmx_context(fmx_request_t *request, void **context) {
  if (!request || !*request || !context) return FMX_BAD_REQUEST;
  *context = (*request)->m.status.context;
  return FMX_SUCCESS;
}

API fmx_return_t fmx_set_request_timeout(fmx_endpoint_t ep, fmx_request_t request, uint32_t timeout_ms) {
  if (!ep) return FMX_BAD_ENDPOINT;
  ep_lock(ep);
  fmx_return_t rc = FMX_SUCCESS;
  if (!request) {
    ep->timeout_ms = timeout_ms;
  } else if (!req_valid(ep, request)) {
    rc = FMX_BAD_REQUEST;
  } else if (request->m.state != MSG_DONE && request->kind == REQ_SEND) {
    if (!request->deadline_ns && timeout_ms) ep->ntimed++;
    if (request->deadline_ns && !timeout_ms) ep->ntimed--;
    request->deadline_ns = timeout_ms ? sys_now_ns() + timeout_ms * 1000000ull : 0;
  }
  ep_unlock(ep);
  return rc;
}

API fmx_return_t fmx_wakeup(fmx_endpoint_t ep) {
  if (!ep) return FMX_BAD_ENDPOINT;
  __atomic_fetch_add(&ep->wakeup_gen, 1, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&ep->pe.benv.desc->wake_seq, 1, __ATOMIC_SEQ_CST);
  sys_futex_wake(&ep->pe.benv.desc->wake_seq);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_idle(fmx_endpoint_t ep) {
  if (!ep) return FMX_BAD_ENDPOINT;
  ep_crowd_look(ep, 0);
  if (__atomic_load_n(&ep->pe.crowded, __ATOMIC_RELAXED)) ep_give_core(ep);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_progress(fmx_endpoint_t ep) {
  if (!ep) return FMX_BAD_ENDPOINT;
  ep_lock(ep);
  ep_progress_locked(ep);
  ep_unlock(ep);
  return FMX_SUCCESS;
}
