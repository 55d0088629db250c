/* SPDX-License-Identifier: MIT */
/* The public calls of fmx.h about peers: error strings, addresses,
 * connect and disconnect (the message calls are in api.c, fmx_get_info in
 * info.c). */
#include <string.h>

#include "base/config.h"
#include "core/fmx_int.h"
#include "core/transport.h"
#include "net/peers.h"

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
    case FMX_REGION_NOT_FOUND: return "Region not found";
    case FMX_REGION_OUT_OF_RANGE: return "Region access out of range";
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

API fmx_return_t fmx_hostname_to_nic_id(const char *name, uint64_t *nic_id) {
  if (!name || !nic_id) return FMX_BAD_ADDRESS;
  return net_peer_lookup(name, nic_id) == 0 ? FMX_SUCCESS : FMX_PEER_NOT_FOUND;
}

API fmx_return_t fmx_nic_id_to_hostname(uint64_t nic_id, char *name, uint32_t len) {
  if (!name || !len) return FMX_BAD_ADDRESS;
  return net_peer_name(nic_id, name, len) == 0 ? FMX_SUCCESS : FMX_NIC_ID_NOT_FOUND;
}

/* Where a connect to (nic_id, eid) goes: ourselves (*addr set, *tp NULL),
 * or the transport that serves it (*tp), another host's board through the
 * one that reaches other hosts when it runs on this endpoint, this host's
 * through shm; or why not. */
static fmx_return_t route(struct fmx_endpoint *ep, uint64_t *nic_id, uint32_t eid, uint32_t key,
                          fmx_endpoint_addr_t *addr, const struct fmx_transport_ops **tp) {
  if (!addr) return FMX_BAD_ADDRESS;
  if (eid >= fmx_cfg.endpoint_max) return FMX_REMOTE_ENDPOINT_BAD_ID;
  int here = *nic_id == FMX_ANY_NIC || *nic_id == ep->t.nic;
  /* FMX_SELF=0: to ourselves through shm, as to a peer (not with FMX_SHM=0:
   * the net transport keeps one partner per endpoint id of a board). */
  if (here && eid == ep->t.eid && (fmx_cfg.self || !fmx_cfg.shm)) {
    if (key != ep->t.key) return FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY;
    *addr = ep_partner_addr(ep->self);
    *tp = NULL;
    return FMX_SUCCESS;
  }
  *tp = transport_local();
  if (!here || !fmx_cfg.shm) { /* FMX_SHM=0: this host's peers as another host's */
    if (here) *nic_id = ep->t.nic;
    *tp = transport_remote();
    if (!*tp || !transport_on(ep, *tp) || *nic_id == 0 || *nic_id > 0xffffffffffffull) return FMX_NIC_ID_NOT_FOUND;
  }
  return FMX_SUCCESS;
}

/* The handshake through tp, waited for (one at a time: connect_lock). */
static fmx_return_t connect_waiting(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp, uint64_t nic_id,
                                    uint32_t eid, uint32_t key, uint32_t timeout_ms, fmx_endpoint_addr_t *addr) {
  struct partner *p = NULL;
  pthread_mutex_lock(&ep->connect_lock);
  fmx_return_t rc = tp->connect(ep, nic_id, eid, key, timeout_ms, &p);
  pthread_mutex_unlock(&ep->connect_lock);
  if (rc == FMX_SUCCESS) {
    ep_lock(ep);
    /* p came back outside the lock: made, failed and its slot given to
     * another peer meanwhile (the slots of partners gone are taken again,
     * by this pass's progress or another thread's), it is not the one we
     * asked for. One that failed and kept its slot is ours, its requests
     * failing; one given to a newer connection to the same endpoint (it
     * restarted and connected back) serves as well. The board is compared
     * for another host's partner only: this host's say their own, which
     * their settings choose (FMX_NET_IFACE), and the route is shm anyway. */
    if (p->t.eid == eid && (!tp->remote || p->t.nic == nic_id))
      *addr = ep_partner_addr(p);
    else
      rc = FMX_REMOTE_ENDPOINT_UNREACHABLE;
    ep_unlock(ep);
  }
  return rc;
}

API fmx_return_t fmx_connect(fmx_endpoint_t ep, uint64_t nic_id, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                             fmx_endpoint_addr_t *addr) {
  if (!ep || ep_in_handler(ep)) return FMX_BAD_ENDPOINT; /* it would wait without progress */
  const struct fmx_transport_ops *tp;
  fmx_return_t rc = route(ep, &nic_id, eid, key, addr, &tp);
  return rc != FMX_SUCCESS || !tp ? rc : connect_waiting(ep, tp, nic_id, eid, key, timeout_ms, addr);
}

API fmx_return_t fmx_connect_async(fmx_endpoint_t ep, uint64_t nic_id, uint32_t eid, uint32_t key,
                                   uint32_t timeout_ms, fmx_endpoint_addr_t *addr) {
  if (!ep || ep_in_handler(ep)) return FMX_BAD_ENDPOINT;
  const struct fmx_transport_ops *tp;
  fmx_return_t rc = route(ep, &nic_id, eid, key, addr, &tp);
  if (rc != FMX_SUCCESS || !tp) return rc;
  /* This host's peers (shm): the peer's watcher answers at once. */
  if (!tp->dial) return connect_waiting(ep, tp, nic_id, eid, key, timeout_ms, addr);
  struct partner *p = NULL;
  ep_lock(ep);
  rc = tp->dial(ep, nic_id, eid, key, timeout_ms, &p);
  if (rc == FMX_SUCCESS) *addr = ep_partner_addr(p);
  ep_unlock(ep);
  return rc;
}

/* How long an iconnect's handshake may take without an endpoint timeout
 * (fmx_set_request_timeout): as MX's connects. With one, the request
 * times out then (FMX_TIMEOUT) and the handshake goes on as long again,
 * for the sends to that address (the request's timeout, not the dial's,
 * is what ends it). */
#define ICONNECT_TIMEOUT_MS 10000

/* Another host's peer: dialed (the request completes when its handshake
 * does, through progress: ep_connects_ready, or with the partner's
 * failure); this host's: the handshake is one local round trip with the
 * peer's watcher thread, done now, and the request completes at once, as
 * it does with an error. */
API fmx_return_t fmx_iconnect(fmx_endpoint_t ep, uint64_t nic_id, uint32_t eid, uint32_t key, uint64_t match,
                              void *context, fmx_request_t *request) {
  if (!ep) return FMX_BAD_ENDPOINT;
  if (!request) return FMX_BAD_REQUEST;
  fmx_endpoint_addr_t addr;
  memset(&addr, 0, sizeof addr);
  uint64_t t = ep->timeout_ms ? 2 * ep->timeout_ms : ICONNECT_TIMEOUT_MS;
  if (t >= FMX_TIMEOUT_INFINITE) t = FMX_TIMEOUT_INFINITE - 1;
  const struct fmx_transport_ops *tp = NULL;
  /* From the unexpected-message handler a local connect would wait
   * without progress. */
  fmx_return_t rc = ep_in_handler(ep) ? FMX_BAD_ENDPOINT : route(ep, &nic_id, eid, key, &addr, &tp);
  if (rc == FMX_SUCCESS && tp && !tp->dial) rc = connect_waiting(ep, tp, nic_id, eid, key, (uint32_t)t, &addr);
  ep_lock(ep);
  struct partner *p = NULL;
  if (rc == FMX_SUCCESS && tp && tp->dial) {
    rc = tp->dial(ep, nic_id, eid, key, (uint32_t)t, &p);
    if (rc == FMX_SUCCESS) addr = ep_partner_addr(p);
  }
  struct fmx_request *r = req_alloc(ep, REQ_CONNECT);
  if (!r) {
    ep_unlock(ep);
    return FMX_NO_RESOURCES;
  }
  r->m.status.context = context;
  r->m.status.match_info = match;
  r->m.status.source = addr;
  *request = r;
  int dialing = p && tp->dialing && tp->dialing(p);
  if (dialing && proto_live(p)) {
    r->m.partner = p;
    list_add_tail(&p->pp.live->msgs, &r->m.pnode); /* its failure completes it (ep_partner_down) */
    list_add_tail(&ep->connecting, &r->qnode);
  } else {
    if (dialing) rc = FMX_NO_SYSTEM_RESOURCES; /* no memory to wait with; the handshake goes on */
    req_complete(ep, r, rc);
  }
  ep_unlock(ep);
  return FMX_SUCCESS;
}

void ep_connects_ready(struct fmx_endpoint *ep, struct partner *p) {
  struct list_node *pos, *tmp;
  if (!p->pp.live) return;
  list_for_each_safe(pos, tmp, &p->pp.live->msgs) {
    struct fmx_request *r = req_of(list_entry(pos, struct proto_msg, pnode));
    if (r->kind == REQ_CONNECT) req_complete(ep, r, FMX_SUCCESS);
  }
}

void ep_connects_timeouts(struct fmx_endpoint *ep, uint64_t now) {
  struct list_node *pos, *tmp;
  list_for_each_safe(pos, tmp, &ep->connecting) {
    struct fmx_request *r = list_entry(pos, struct fmx_request, qnode);
    if (r->deadline_ns && now >= r->deadline_ns) {
      CNT(ep, TIMEOUT);
      req_complete(ep, r, FMX_TIMEOUT); /* the handshake goes on: sends to the address still wait for it */
    }
  }
}

API fmx_return_t fmx_disconnect(fmx_endpoint_t ep, fmx_endpoint_addr_t addr) {
  if (!ep || ep_in_handler(ep)) return FMX_BAD_ENDPOINT;
  ep_lock(ep);
  struct partner *p = ep_partner_from_addr(ep, addr);
  fmx_return_t rc = FMX_SUCCESS;
  if (!p || p->t.bulk->is_self) {
    rc = FMX_BAD_ADDRESS;
  } else if (p->t.state == PARTNER_ALIVE) {
    struct proto_hdr h = {.type = PROTO_CLOSE};
    if (proto_outq_empty(&p->pp)) p->pp.tp->push(ep, p, &h, NULL, 0);
    ep_partner_fail(ep, p, PARTNER_DISCONNECTED, FMX_REMOTE_ENDPOINT_UNREACHABLE);
  }
  ep_unlock(ep);
  return rc;
}
