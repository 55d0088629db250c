/* SPDX-License-Identifier: MIT */
/* The public calls of fmx.h: argument checks, then the core under ep->lock. */
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "core/introspect.h"
#include "core/transport.h"
#include "platform/sys.h"
#include "proto/proto_int.h"

#define API __attribute__((visibility("default")))

API const char *fmx_strerror(fmx_return_t code) {
  switch (code) {
    case FMX_SUCCESS: return "Success";
    case FMX_BAD_ERROR: return "Bad error";
    case FMX_ALREADY_INITIALIZED: return "Already initialized";
    case FMX_NOT_INITIALIZED: return "Not initialized";
    case FMX_ACCESS_DENIED: return "Access denied";
    case FMX_BOARD_NOT_FOUND: return "Board not found";
    case FMX_BAD_ENDPOINT: return "Bad endpoint";
    case FMX_SEGMENTS_BAD_COUNT: return "Bad segment count";
    case FMX_BAD_REQUEST: return "Bad request";
    case FMX_BAD_MATCH_MASK: return "Bad match mask";
    case FMX_NO_RESOURCES: return "No resources";
    case FMX_BUSY: return "Busy";
    case FMX_BAD_INFO_KEY: return "Bad info key";
    case FMX_BAD_ADDRESS: return "Bad address";
    case FMX_ENDPOINT_PARAM_BAD_KEY: return "Bad endpoint parameter key";
    case FMX_ENDPOINT_PARAM_BAD_VALUE: return "Bad endpoint parameter value";
    case FMX_PEER_NOT_FOUND: return "Peer not found";
    case FMX_TIMEOUT: return "Timeout";
    case FMX_REMOTE_ENDPOINT_BAD_ID: return "Remote endpoint bad id";
    case FMX_REMOTE_ENDPOINT_CLOSED: return "Remote endpoint closed";
    case FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY: return "Remote endpoint bad connection key";
    case FMX_BAD_INFO_LENGTH: return "Bad info length";
    case FMX_NIC_ID_NOT_FOUND: return "NIC id not found";
    case FMX_BAD_LIB_ABI: return "Bad library ABI";
    case FMX_BAD_MATCHING_FOR_CONTEXT_ID_MASK: return "Bad matching for context id mask";
    case FMX_CANCELLED: return "Cancelled";
    case FMX_REMOTE_ENDPOINT_UNREACHABLE: return "Remote endpoint unreachable";
    case FMX_REMOTE_ENDPOINT_BAD_SESSION: return "Remote endpoint bad session";
    case FMX_MESSAGE_ABORTED: return "Message aborted";
    case FMX_MESSAGE_TRUNCATED: return "Message truncated";
    case FMX_NO_SYSTEM_RESOURCES: return "No system resources";
    case FMX_NOT_IMPLEMENTED: return "Not implemented";
  }
  return "Unknown error code";
}

API fmx_return_t fmx_get_endpoint_addr(fmx_endpoint_t ep, fmx_endpoint_addr_t *addr) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!addr) return FMX_BAD_ADDRESS;
  *addr = ep_partner_addr(ep->self);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_decompose_endpoint_addr(fmx_endpoint_addr_t addr, uint64_t *nic_id, uint32_t *endpoint_id) {
  if (nic_id) *nic_id = addr.opaque[1] & 0xffffffffffffull;
  if (endpoint_id) *endpoint_id = (uint32_t)(addr.opaque[1] >> 48);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_connect(fmx_endpoint_t ep, uint64_t nic_id, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                             fmx_endpoint_addr_t *addr) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!addr) return FMX_BAD_ADDRESS;
  if (nic_id != FMX_ANY_NIC && nic_id != ep->nic) return FMX_NIC_ID_NOT_FOUND;
  if (eid >= fmx_cfg.endpoint_max) return FMX_REMOTE_ENDPOINT_BAD_ID;
  if (eid == ep->eid) {
    if (key != ep->key) return FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY;
    *addr = ep_partner_addr(ep->self);
    return FMX_SUCCESS;
  }
  struct partner *p = NULL;
  pthread_mutex_lock(&ep->connect_lock);
  fmx_return_t rc = transport_local()->connect(ep, eid, key, timeout_ms, &p);
  pthread_mutex_unlock(&ep->connect_lock);
  if (rc == FMX_SUCCESS) {
    pthread_mutex_lock(&ep->lock);
    *addr = ep_partner_addr(p);
    pthread_mutex_unlock(&ep->lock);
  }
  return rc;
}

API fmx_return_t fmx_iconnect(fmx_endpoint_t ep, uint64_t nic_id, uint32_t eid, uint32_t key, uint64_t match,
                              void *context, fmx_request_t *request) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request) return FMX_BAD_REQUEST;
  /* Same host: the handshake is one local round trip with the peer's
   * watcher thread, so it is done now and the request completes at once. */
  fmx_endpoint_addr_t addr;
  memset(&addr, 0, sizeof addr);
  uint32_t t = ep->timeout_ms ? (uint32_t)ep->timeout_ms : 10000;
  fmx_return_t rc = fmx_connect(ep, nic_id, eid, key, t, &addr);
  pthread_mutex_lock(&ep->lock);
  struct fmx_request *r = req_alloc(ep, REQ_CONNECT);
  if (!r) {
    pthread_mutex_unlock(&ep->lock);
    return FMX_NO_RESOURCES;
  }
  r->status.context = context;
  r->status.match_info = match;
  r->status.source = addr;
  req_complete(ep, r, rc);
  *request = r;
  pthread_mutex_unlock(&ep->lock);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_disconnect(fmx_endpoint_t ep, fmx_endpoint_addr_t addr) {
  if (!ep) return FMX_BAD_ENDPOINT;
  pthread_mutex_lock(&ep->lock);
  struct partner *p = ep_partner_from_addr(ep, addr);
  fmx_return_t rc = FMX_SUCCESS;
  if (!p || p->is_self) {
    rc = FMX_BAD_ADDRESS;
  } else if (p->state == PARTNER_ALIVE) {
    struct proto_hdr h = {.type = PROTO_CLOSE};
    if (list_empty(&p->outq)) p->tp->push(ep, p, &h, NULL, 0);
    ep_partner_fail(ep, p, PARTNER_DISCONNECTED, FMX_REMOTE_ENDPOINT_UNREACHABLE);
  }
  pthread_mutex_unlock(&ep->lock);
  return rc;
}

/* A segment list must describe memory that can exist: no NULL pointer
 * with a length, no segment running past the end of the address space,
 * and a total that fits in 64 bits (two segments of 2^63 bytes once
 * wrapped to a 0-byte message and were delivered as a success). */
static fmx_return_t check_segs(const fmx_seg_t *segs, uint32_t nsegs) {
  if (nsegs > FMX_MAX_SEGMENTS) return FMX_SEGMENTS_BAD_COUNT;
  if (nsegs && !segs) return FMX_BAD_ADDRESS;
  uint64_t total = 0;
  for (uint32_t i = 0; i < nsegs; i++) {
    uintptr_t a = (uintptr_t)segs[i].ptr;
    if (!segs[i].len) continue;
    if (!a || segs[i].len > PTRDIFF_MAX || a + segs[i].len < a) return FMX_BAD_ADDRESS;
    if (total + segs[i].len < total) return FMX_BAD_ADDRESS;
    total += segs[i].len;
  }
  return FMX_SUCCESS;
}

static fmx_return_t send_common(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_endpoint_addr_t dest,
                                uint64_t match, void *context, fmx_request_t *request, int sync) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request) return FMX_BAD_REQUEST;
  fmx_return_t rc = check_segs(segs, nsegs);
  if (rc) return rc;
  pthread_mutex_lock(&ep->lock);
  struct partner *p = ep_partner_from_addr(ep, dest);
  if (!p) {
    pthread_mutex_unlock(&ep->lock);
    return FMX_BAD_ADDRESS;
  }
  struct fmx_request *r = req_alloc(ep, REQ_SEND);
  if (!r || req_set_segs(r, segs, nsegs) < 0) {
    if (r) req_free(ep, r);
    pthread_mutex_unlock(&ep->lock);
    return FMX_NO_RESOURCES;
  }
  r->match = match;
  r->partner = p;
  r->status.context = context;
  r->status.source = dest;
  r->status.match_info = match;
  r->status.msg_length = r->len;
  r->status.xfer_length = r->len;
  if (sync) r->flags |= REQ_F_SYNC;
  *request = r;
  if (p->state != PARTNER_ALIVE) {
    req_complete(ep, r, p->state == PARTNER_CLOSED ? FMX_REMOTE_ENDPOINT_CLOSED : FMX_REMOTE_ENDPOINT_UNREACHABLE);
  } else {
    proto_send_start(ep, r);
  }
  pthread_mutex_unlock(&ep->lock);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_isend(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_endpoint_addr_t dest,
                           uint64_t match, void *context, fmx_request_t *request) {
  return send_common(ep, segs, nsegs, dest, match, context, request, 0);
}

API fmx_return_t fmx_issend(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, fmx_endpoint_addr_t dest,
                            uint64_t match, void *context, fmx_request_t *request) {
  return send_common(ep, segs, nsegs, dest, match, context, request, 1);
}

API fmx_return_t fmx_irecv(fmx_endpoint_t ep, const fmx_seg_t *segs, uint32_t nsegs, uint64_t match, uint64_t mask,
                           void *context, fmx_request_t *request) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request) return FMX_BAD_REQUEST;
  fmx_return_t rc = check_segs(segs, nsegs);
  if (rc) return rc;
  rc = (fmx_return_t)match_check(&ep->mq, match, mask);
  if (rc) return rc;
  pthread_mutex_lock(&ep->lock);
  struct fmx_request *r = req_alloc(ep, REQ_RECV);
  if (!r || req_set_segs(r, segs, nsegs) < 0) {
    if (r) req_free(ep, r);
    pthread_mutex_unlock(&ep->lock);
    return FMX_NO_RESOURCES;
  }
  r->match = match;
  r->mask = mask;
  r->seq = ep->next_seq++;
  r->status.context = context;
  /* A receive never times out by itself: no sender may ever come. */
  if (r->deadline_ns) {
    r->deadline_ns = 0;
    ep->ntimed--;
  }
  *request = r;
  /* No progress pass first: a record still in a ring has not arrived yet,
   * so matching it after this receive is posted keeps MX semantics. */
  proto_recv_post(ep, r);
  pthread_mutex_unlock(&ep->lock);
  return FMX_SUCCESS;
}

/* ---- completion -------------------------------------------------------- */

static int req_valid(struct fmx_endpoint *ep, struct fmx_request *r) {
  return r && r->ep == ep && r->kind != 0 && r->index < ep->nreqs && ep->reqs[r->index] == r;
}

/* Hand a completed request to the caller and free it. */
static void reap(struct fmx_endpoint *ep, struct fmx_request *r, fmx_status_t *status) {
  if (status) *status = r->status;
  list_del(&r->qnode);
  r->state = REQ_PENDING; /* so req_free accounts it */
  req_free(ep, r);
}

static fmx_return_t test_common(fmx_endpoint_t ep, fmx_request_t *request, fmx_status_t *status, uint32_t *result,
                                int progress) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || !result) return FMX_BAD_REQUEST;
  pthread_mutex_lock(&ep->lock);
  struct fmx_request *r = *request;
  if (!req_valid(ep, r) || (r->flags & REQ_F_FORGOTTEN)) {
    pthread_mutex_unlock(&ep->lock);
    return FMX_BAD_REQUEST;
  }
  if (progress && r->state != REQ_DONE) ep_progress_locked(ep);
  *result = r->state == REQ_DONE;
  if (*result) {
    reap(ep, r, status);
    *request = NULL;
  }
  pthread_mutex_unlock(&ep->lock);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_test(fmx_endpoint_t ep, fmx_request_t *request, fmx_status_t *status, uint32_t *result) {
  return test_common(ep, request, status, result, 1);
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
  if (w->r->state != REQ_DONE) return 0;
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
    if ((r->status.match_info & a->mask) == a->match) {
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
  pthread_mutex_lock(&ep->lock);
  ep_progress_locked(ep);
  a.found = NULL;
  *result = (uint32_t)find_any(ep, &a);
  if (*result) reap(ep, a.found, status);
  pthread_mutex_unlock(&ep->lock);
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

static int any_completed(struct fmx_endpoint *ep, void *arg) { return !list_empty(&ep->completed); }

static fmx_return_t peek_common(fmx_endpoint_t ep, uint32_t timeout_ms, int block, fmx_request_t *request,
                                uint32_t *result) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || !result) return FMX_BAD_REQUEST;
  if (block) ep_wait(ep, timeout_ms, any_completed, NULL);
  pthread_mutex_lock(&ep->lock);
  ep_progress_locked(ep);
  *result = !list_empty(&ep->completed);
  if (*result) *request = list_entry(ep->completed.next, struct fmx_request, qnode);
  pthread_mutex_unlock(&ep->lock);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_ipeek(fmx_endpoint_t ep, fmx_request_t *request, uint32_t *result) {
  return peek_common(ep, 0, 0, request, result);
}

API fmx_return_t fmx_peek(fmx_endpoint_t ep, uint32_t timeout_ms, fmx_request_t *request, uint32_t *result) {
  return peek_common(ep, timeout_ms, 1, request, result);
}

struct probe_arg {
  uint64_t match, mask;
  fmx_status_t *status;
};

static int probe_check(struct fmx_endpoint *ep, void *arg) {
  struct probe_arg *a = arg;
  struct unexp_msg *u = match_find_unexp(&ep->mq, a->match, a->mask, 0);
  if (!u) return 0;
  if (a->status) {
    memset(a->status, 0, sizeof *a->status);
    a->status->code = FMX_SUCCESS;
    a->status->source = ep_partner_addr(u->partner);
    a->status->match_info = u->match;
    a->status->msg_length = u->msg_len;
    a->status->xfer_length = u->msg_len;
  }
  return 1;
}

static fmx_return_t probe_common(fmx_endpoint_t ep, uint32_t timeout_ms, int block, uint64_t match, uint64_t mask,
                                 fmx_status_t *status, uint32_t *result) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!result) return FMX_BAD_REQUEST;
  if (match & ~mask) return FMX_BAD_MATCH_MASK;
  struct probe_arg a = {match, mask, status};
  if (block) {
    *result = (uint32_t)ep_wait(ep, timeout_ms, probe_check, &a);
    return FMX_SUCCESS;
  }
  pthread_mutex_lock(&ep->lock);
  ep_progress_locked(ep);
  *result = (uint32_t)probe_check(ep, &a);
  pthread_mutex_unlock(&ep->lock);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_iprobe(fmx_endpoint_t ep, uint64_t match, uint64_t mask, fmx_status_t *status,
                            uint32_t *result) {
  return probe_common(ep, 0, 0, match, mask, status, result);
}

API fmx_return_t fmx_probe(fmx_endpoint_t ep, uint32_t timeout_ms, uint64_t match, uint64_t mask,
                           fmx_status_t *status, uint32_t *result) {
  return probe_common(ep, timeout_ms, 1, match, mask, status, result);
}

API fmx_return_t fmx_cancel(fmx_endpoint_t ep, fmx_request_t *request, uint32_t *result) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request || !result) return FMX_BAD_REQUEST;
  pthread_mutex_lock(&ep->lock);
  struct fmx_request *r = *request;
  fmx_return_t rc = FMX_SUCCESS;
  *result = 0;
  if (!req_valid(ep, r)) {
    rc = FMX_BAD_REQUEST;
  } else if (r->kind == REQ_SEND) {
    rc = FMX_BAD_REQUEST;
  } else if (r->kind == REQ_RECV && r->state == REQ_PENDING) {
    match_unpost(&ep->mq, r);
    CNT(ep, CANCELLED);
    req_free(ep, r);
    *request = NULL;
    *result = 1;
  }
  pthread_mutex_unlock(&ep->lock);
  return rc;
}

API fmx_return_t fmx_forget(fmx_endpoint_t ep, fmx_request_t *request) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request) return FMX_BAD_REQUEST;
  pthread_mutex_lock(&ep->lock);
  struct fmx_request *r = *request;
  fmx_return_t rc = FMX_SUCCESS;
  if (!req_valid(ep, r) || (r->flags & REQ_F_FORGOTTEN)) {
    rc = FMX_BAD_REQUEST;
  } else if (r->state == REQ_DONE) {
    reap(ep, r, NULL);
    *request = NULL;
  } else {
    r->flags |= REQ_F_FORGOTTEN;
    *request = NULL;
  }
  pthread_mutex_unlock(&ep->lock);
  return rc;
}

API fmx_return_t fmx_context(fmx_request_t *request, void **context) {
  if (!request || !*request || !context) return FMX_BAD_REQUEST;
  *context = (*request)->status.context;
  return FMX_SUCCESS;
}

API fmx_return_t fmx_set_request_timeout(fmx_endpoint_t ep, fmx_request_t request, uint32_t timeout_ms) {
  if (!ep) return FMX_BAD_ENDPOINT;
  pthread_mutex_lock(&ep->lock);
  fmx_return_t rc = FMX_SUCCESS;
  if (!request) {
    ep->timeout_ms = timeout_ms;
  } else if (!req_valid(ep, request)) {
    rc = FMX_BAD_REQUEST;
  } else if (request->state != REQ_DONE && request->kind == REQ_SEND) {
    if (!request->deadline_ns && timeout_ms) ep->ntimed++;
    if (request->deadline_ns && !timeout_ms) ep->ntimed--;
    request->deadline_ns = timeout_ms ? sys_now_ns() + timeout_ms * 1000000ull : 0;
  }
  pthread_mutex_unlock(&ep->lock);
  return rc;
}

API fmx_return_t fmx_wakeup(fmx_endpoint_t ep) {
  if (!ep) return FMX_BAD_ENDPOINT;
  __atomic_fetch_add(&ep->wakeup_gen, 1, __ATOMIC_SEQ_CST);
  __atomic_fetch_add(&ep->desc->wake_seq, 1, __ATOMIC_SEQ_CST);
  sys_futex_wake(&ep->desc->wake_seq);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_progress(fmx_endpoint_t ep) {
  if (!ep) return FMX_BAD_ENDPOINT;
  pthread_mutex_lock(&ep->lock);
  ep_progress_locked(ep);
  pthread_mutex_unlock(&ep->lock);
  return FMX_SUCCESS;
}

API fmx_return_t fmx_get_info(fmx_endpoint_t ep, uint32_t key, const void *in, uint32_t in_len, void *out,
                              uint32_t out_len) {
  if (!lib_ready()) return FMX_NOT_INITIALIZED;
  uint64_t v;
  fmx_return_t irc;
  if (introspect_info(key, in, in_len, out, out_len, &irc)) return irc;
  switch (key) {
    case FMX_INFO_RNDV_THRESHOLD:
      v = fmx_cfg.rndv_threshold;
      return info_put(out, out_len, &v, sizeof v);
    case FMX_INFO_TINY_MAX:
      v = transport_local()->tiny_max;
      return info_put(out, out_len, &v, sizeof v);
    case FMX_INFO_NIC_ID:
      v = sys_host_id();
      return info_put(out, out_len, &v, sizeof v);
    case FMX_INFO_ENGINE_STATUS: {
      if (!in || in_len == 0 || ((const char *)in)[in_len - 1] != '\0') return FMX_BAD_INFO_LENGTH;
      const struct fmx_bulk_engine *e = bulk_find(in);
      if (!e) return FMX_BAD_INFO_KEY;
      char reason[160];
      e->probe(reason, sizeof reason);
      return info_put_str(out, out_len, reason);
    }
    default:
      break;
  }
  if (!ep) return FMX_BAD_ENDPOINT;
  fmx_return_t rc = FMX_SUCCESS;
  pthread_mutex_lock(&ep->lock);
  switch (key) {
    case FMX_INFO_COUNTER_COUNT: {
      uint32_t n = CNT_MAX;
      rc = info_put(out, out_len, &n, sizeof n);
      break;
    }
    case FMX_INFO_COUNTER_LABEL: {
      uint32_t i;
      if (!in || in_len < sizeof i) {
        rc = FMX_BAD_INFO_LENGTH;
        break;
      }
      memcpy(&i, in, sizeof i);
      rc = i < CNT_MAX ? info_put_str(out, out_len, counter_labels[i]) : FMX_BAD_INFO_KEY;
      break;
    }
    case FMX_INFO_COUNTER_VALUES:
      rc = info_put(out, out_len, ep->counters, sizeof ep->counters);
      break;
    case FMX_INFO_LAST_BULK_ENGINE:
      rc = info_put_str(out, out_len, ep->last_engine[0] ? ep->last_engine : "none");
      break;
    case FMX_INFO_ENDPOINT_ID:
      rc = info_put(out, out_len, &ep->eid, sizeof ep->eid);
      break;
    default:
      rc = FMX_BAD_INFO_KEY;
  }
  pthread_mutex_unlock(&ep->lock);
  return rc;
}
