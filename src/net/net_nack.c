/* SPDX-License-Identifier: MIT */
/*
 * The net transport's NACKs (docs/protocol.md, "Types and bodies"): a refusal of
 * what a peer sent, and what a refusal of ours does here. A refusal of
 * our connect ends it; one from a partner that no longer knows us fails
 * that partner; "out of step" fails it only when the packet it names is in
 * our flight.
 */
#include "base/log.h"
#include "net/net.h"
#include "net/net_int.h"
#include "platform/sys.h"

/* A NACK of reason to endpoint eid of session at `to`, about its packet
 * seq (0: none). */
void net_nack(struct fmx_endpoint *ep, const struct net_addr *to, uint32_t eid, uint32_t session, uint32_t reason,
              uint32_t seq) {
  struct net_ep *ne = net_ep(ep);
  struct net_hdr h;
  net_hdr_to(ep, NULL, &h, NET_NACK);
  h.dst_ep = (uint16_t)eid;
  h.dst_session = session;
  h.seq = seq;
  h.len = (uint16_t)net_put_nack(ne->pkt + NET_HDR_LEN, reason);
  net_put_hdr(ne->pkt, &h);
  TRANSPORT_CNT(ep, NET_NACKS);
  net_xmit(ep, to, eid, ne->pkt, NET_HDR_LEN + h.len);
}

void net_send_nack(struct fmx_endpoint *ep, const struct net_pkt *in, const struct net_addr *to, uint32_t reason) {
  struct net_ep *ne = net_ep(ep);
  uint64_t now = sys_now_ns();
  if (now - ne->nack_ns < 1000000) return; /* a flood of strangers gets one a millisecond */
  ne->nack_ns = now;
  net_nack(ep, to, in->h.src_ep, in->h.src_session, reason, in->h.seq);
}

/* The peer's side of our connection starts elsewhere than ours: it took a
 * packet we sent as beyond any window. A packet of an earlier connection
 * of ours (same sessions) is not in the flight of this one: then nothing
 * fails. */
static void out_of_step(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from) {
  struct partner *p = net_find(ep, 0, from, pk->h.src_ep, pk->h.src_session);
  const struct net_peer *np = p ? transport_state(p) : NULL;
  if (!np || !np->rel || !net_rel_in_flight(np->rel, pk->h.seq)) {
    TRANSPORT_CNT(ep, NET_STRANGERS);
    return;
  }
  TRANSPORT_CNT(ep, NET_OUT_OF_STEP);
  log_warn("FMX-NET-OUT-OF-STEP", "endpoint %u: endpoint %u of board %012llx expects our packets elsewhere in the "
           "stream: the connection fails", transport_ep(ep)->eid, transport_peer(p)->eid,
           (unsigned long long)transport_peer(p)->nic);
  transport_up->peer_fail(ep, p, PARTNER_DEAD, FMX_REMOTE_ENDPOINT_BAD_SESSION);
}

void net_on_nack(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from) {
  struct net_ep *ne = net_ep(ep);
  if (pk->h.dst_session != transport_ep(ep)->session) {
    TRANSPORT_CNT(ep, NET_STRANGERS); /* for a session of ours before this one */
    return;
  }
  if (pk->u.nack.reason == NET_NACK_OUT_OF_STEP) { /* of a packet of a partner's, not of a connect */
    out_of_step(ep, pk, from);
    return;
  }
  /* Our connect went to a peer that refuses it. */
  if (ne->pend.busy && ne->pend.status < 0 && pk->h.src_ep == ne->pend.eid && (!from->nic || from->nic == ne->pend.nic)) {
    ne->pend.status = pk->u.nack.reason == NET_NACK_BAD_KEY ? FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY
                                                            : FMX_REMOTE_ENDPOINT_CLOSED;
    return;
  }
  /* A partner that no longer knows us: it restarted or dropped us. One
   * that gave up on us for lack of memory says which of its sessions did:
   * a late one fails no newer connection. */
  uint32_t session = pk->u.nack.reason == NET_NACK_NO_MEMORY ? pk->h.src_session : 0;
  struct partner *p = net_find(ep, 0, from, pk->h.src_ep, session);
  if (!p) {
    TRANSPORT_CNT(ep, NET_STRANGERS);
    return;
  }
  fmx_return_t code = pk->u.nack.reason == NET_NACK_BAD_SESSION ? FMX_REMOTE_ENDPOINT_BAD_SESSION
                                                                : FMX_REMOTE_ENDPOINT_CLOSED;
  if (session) { /* NET_NACK_NO_MEMORY */
    code = FMX_NO_SYSTEM_RESOURCES;
    TRANSPORT_CNT(ep, PEER_ABORTS);
    log_warn("FMX-PEER-ABORT", "endpoint %u: endpoint %u of board %012llx dropped the connection (%s): its requests with "
             "us fail", transport_ep(ep)->eid, transport_peer(p)->eid, (unsigned long long)transport_peer(p)->nic,
             fmx_strerror(code));
  }
  transport_up->peer_fail(ep, p, PARTNER_DEAD, code);
}
