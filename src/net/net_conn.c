/* SPDX-License-Identifier: MIT */
/*
 * The net transport's handshake (docs/protocol.md, "Connecting").
 *
 * CONNECT {our NIC id, the board we want, key, conn_seq, our first seq} goes
 * to (board, endpoint id): on the raw wire to the board's MAC; on UDP to its
 * address when a partner there told it, else broadcast on the subnet (the
 * board named in the packet answers, the others ignore it). It is resent
 * with backoff until a CONNECT_REPLY {status, conn_seq, its first seq}
 * comes or the timeout falls. The listener checks the key; a partner is
 * made on each side with the two first seqs, so both streams start where
 * the other expects. Two endpoints that connect to each other at once make
 * one partner each: the one made for the peer's CONNECT starts at the seq
 * our own CONNECT announced. A CONNECT from a known session with the same
 * first seq is a resend, answered again; with another, or from a new
 * session (the peer restarted), the old partner fails and a new one is made.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "net/net.h"
#include "net/net_int.h"
#include "platform/sys.h"

static void send_connect(struct fmx_endpoint *ep) {
  struct net_ep *ne = net_ep(ep);
  struct net_hdr h;
  net_hdr_to(ep, NULL, &h, NET_CONNECT);
  h.dst_ep = (uint16_t)ne->pend.eid;
  uint32_t bip;
  uint16_t bport;
  net_bulk_addr(ep, &bip, &bport);
  h.len = (uint16_t)net_put_connect(ne->pkt + NET_HDR_LEN, transport_ep(ep)->nic, ne->pend.nic, ne->pend.key,
                                    ne->pend.conn_seq, ne->pend.start, bip, bport, net_mtu(ep));
  net_put_hdr(ne->pkt, &h);
  struct net_addr to = {.nic = ne->pend.nic};
  net_xmit(ep, &to, ne->pend.eid, ne->pkt, NET_HDR_LEN + h.len);
}

static void send_reply(struct fmx_endpoint *ep, const struct net_pkt *in, const struct net_addr *to, uint32_t status,
                       uint32_t start) {
  struct net_ep *ne = net_ep(ep);
  struct net_hdr h;
  net_hdr_to(ep, NULL, &h, NET_CONNECT_REPLY);
  h.dst_ep = in->h.src_ep;
  h.dst_session = in->h.src_session;
  uint32_t bip = 0;
  uint16_t bport = 0;
  if (status == 0) net_bulk_addr(ep, &bip, &bport);
  h.len = (uint16_t)net_put_reply(ne->pkt + NET_HDR_LEN, status, in->u.connect.conn_seq, start, bip, bport,
                                  net_mtu(ep));
  net_put_hdr(ne->pkt, &h);
  net_xmit(ep, to, in->h.src_ep, ne->pkt, NET_HDR_LEN + h.len);
}

/* A status a peer sent: one a connect may end with, else "aborted". */
static fmx_return_t peer_status(uint32_t s) {
  switch (s) {
    case FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY:
    case FMX_REMOTE_ENDPOINT_CLOSED:
    case FMX_REMOTE_ENDPOINT_BAD_ID:
    case FMX_NO_RESOURCES: return (fmx_return_t)s;
    default: return FMX_MESSAGE_ABORTED;
  }
}

void net_on_connect(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from) {
  struct net_ep *ne = net_ep(ep);
  const struct transport_ep *te = transport_ep(ep);
  uint64_t nic = pk->u.connect.nic;
  /* From our own board: only a process of this host, with FMX_SHM=0 (its
   * local peers through us), and over UDP from our own address; on the
   * wire such a source is forged. */
  int own = nic == te->nic && !fmx_cfg.shm && !from->nic && from->ip && from->ip == ne->sock.ifc.ip;
  if (pk->u.connect.dst_nic != te->nic || (nic == te->nic && !own) || (from->nic && from->nic != nic)) {
    TRANSPORT_CNT(ep, NET_DROPPED); /* a broadcast for another board, or a forged source */
    return;
  }
  struct net_addr to = *from;
  to.nic = nic;
  if (te->closing) {
    send_reply(ep, pk, &to, FMX_REMOTE_ENDPOINT_CLOSED, 0);
    return;
  }
  if (pk->u.connect.key != te->key) {
    TRANSPORT_CNT(ep, CONNECT_REFUSED);
    send_reply(ep, pk, &to, FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY, 0);
    return;
  }
  struct partner *q = net_find(ep, nic, NULL, pk->h.src_ep, 0);
  if (q) {
    struct net_peer *nq = transport_state(q);
    if (transport_peer(q)->session == pk->h.src_session && nq->peer_start == pk->u.connect.start_seq &&
        net_same_source(from, &nq->addr)) {
      send_reply(ep, pk, &to, 0, nq->start); /* a resend: our answer was lost */
      return;
    }
    /* The peer restarted (a new session) or lost its side: the old
     * partner is gone, its requests fail. */
    transport_up->peer_fail(ep, q, PARTNER_DEAD, FMX_REMOTE_ENDPOINT_UNREACHABLE);
  }
  struct partner *p = transport_up->peer_new(ep, &net_transport);
  /* Our own connect to it in flight: the seq it announced is ours. */
  int crossing = ne->pend.busy && ne->pend.nic == nic && ne->pend.eid == pk->h.src_ep;
  uint32_t start = crossing ? ne->pend.start : (uint32_t)sys_random64();
  if (!p || net_peer_init(ep, p, nic, pk->h.src_ep, pk->h.src_session, &to, start, pk->u.connect.start_seq) < 0) {
    if (p) transport_up->peer_down(ep, p, PARTNER_DEAD, FMX_NO_RESOURCES);
    send_reply(ep, pk, &to, FMX_NO_RESOURCES, 0);
    return;
  }
  net_peer_link(ep, p, pk->u.connect.bulk_ip, pk->u.connect.bulk_port, pk->u.connect.mtu);
  TRANSPORT_CNT(ep, CONNECT_OK);
  send_reply(ep, pk, &to, 0, start);
}

void net_on_reply(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from) {
  struct net_ep *ne = net_ep(ep);
  if (!ne->pend.busy || ne->pend.status >= 0 || pk->u.reply.conn_seq != ne->pend.conn_seq ||
      pk->h.src_ep != ne->pend.eid || pk->h.dst_session != transport_ep(ep)->session ||
      (from->nic && from->nic != ne->pend.nic)) {
    TRANSPORT_CNT(ep, NET_DROPPED);
    return;
  }
  if (pk->u.reply.status) {
    ne->pend.status = peer_status(pk->u.reply.status);
    return;
  }
  /* Made already by its own CONNECT (we connected to each other). */
  struct partner *p = net_find(ep, ne->pend.nic, NULL, ne->pend.eid, pk->h.src_session);
  if (!p) {
    struct net_addr to = *from;
    p = transport_up->peer_new(ep, &net_transport);
    if (!p || net_peer_init(ep, p, ne->pend.nic, ne->pend.eid, pk->h.src_session, &to, ne->pend.start,
                            pk->u.reply.start_seq) < 0) {
      if (p) transport_up->peer_down(ep, p, PARTNER_DEAD, FMX_NO_RESOURCES);
      ne->pend.status = FMX_NO_RESOURCES;
      return;
    }
    TRANSPORT_CNT(ep, CONNECT_OK);
  }
  net_peer_link(ep, p, pk->u.reply.bulk_ip, pk->u.reply.bulk_port, pk->u.reply.mtu);
  ne->pend.p = p;
  ne->pend.status = FMX_SUCCESS;
}

void net_on_nack(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from) {
  struct net_ep *ne = net_ep(ep);
  if (pk->h.dst_session != transport_ep(ep)->session) {
    TRANSPORT_CNT(ep, NET_DROPPED);
    return;
  }
  /* Our connect went to a peer that refuses it. */
  if (ne->pend.busy && ne->pend.status < 0 && pk->h.src_ep == ne->pend.eid && (!from->nic || from->nic == ne->pend.nic)) {
    ne->pend.status = pk->u.nack.reason == NET_NACK_BAD_KEY ? FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY
                                                            : FMX_REMOTE_ENDPOINT_CLOSED;
    return;
  }
  /* A partner that no longer knows us: it restarted or dropped us. */
  struct partner *p = net_find(ep, 0, from, pk->h.src_ep, 0);
  if (!p) {
    TRANSPORT_CNT(ep, NET_DROPPED);
    return;
  }
  transport_up->peer_fail(ep, p, PARTNER_DEAD,
                          pk->u.nack.reason == NET_NACK_BAD_SESSION ? FMX_REMOTE_ENDPOINT_BAD_SESSION
                                                                    : FMX_REMOTE_ENDPOINT_CLOSED);
}

fmx_return_t net_connect(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                         struct partner **out) {
  struct net_ep *ne = net_ep(ep);
  transport_up->lock(ep);
  if (!ne->on) {
    transport_up->unlock(ep);
    return FMX_NIC_ID_NOT_FOUND;
  }
  struct partner *have = net_find(ep, nic, NULL, eid, 0);
  if (have) {
    transport_up->unlock(ep);
    *out = have;
    return FMX_SUCCESS;
  }
  memset(&ne->pend, 0, sizeof ne->pend);
  ne->pend.busy = 1;
  ne->pend.status = -1;
  ne->pend.nic = nic;
  ne->pend.eid = eid;
  ne->pend.key = key;
  ne->pend.conn_seq = ++ne->conn_seq;
  ne->pend.start = (uint32_t)sys_random64();
  int fd = ne->sock.fd;
  transport_up->unlock(ep);

  uint64_t now = sys_now_ns();
  uint64_t deadline = timeout_ms == FMX_TIMEOUT_INFINITE ? UINT64_MAX : now + timeout_ms * 1000000ull;
  uint64_t wait = fmx_cfg.net_rto_us * 1000ull, resend = now;
  if (wait < 1000000) wait = 1000000; /* the peer may be busy computing: resend from 1 ms */
  fmx_return_t rc;
  uint32_t woken = transport_up->wakeups(ep);
  for (;;) {
    transport_up->lock(ep);
    now = sys_now_ns();
    if (now >= resend && ne->pend.status < 0) {
      send_connect(ep);
      resend = now + wait;
      uint64_t most = fmx_cfg.net_rto_max_us * 1000ull;
      wait = wait * 2 < most ? wait * 2 : (wait > most ? wait : most);
    }
    transport_up->progress(ep);
    int status = ne->pend.status;
    if (status == FMX_SUCCESS) *out = ne->pend.p;
    transport_up->unlock(ep);
    if (status >= 0) {
      rc = (fmx_return_t)status;
      break;
    }
    if (now >= deadline || transport_up->wakeups(ep) != woken) { /* out of time, or fmx_wakeup */
      rc = FMX_TIMEOUT;
      break;
    }
    uint64_t until = resend < deadline ? resend : deadline;
    int64_t ns = until > now ? (int64_t)(until - now) : 0;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    struct timespec ts = {.tv_sec = ns / 1000000000ll, .tv_nsec = ns % 1000000000ll};
    ppoll(&pfd, 1, &ts, NULL);
  }
  transport_up->lock(ep);
  ne->pend.busy = 0;
  transport_up->unlock(ep);
  return rc;
}
