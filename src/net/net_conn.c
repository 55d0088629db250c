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
 * our own CONNECT announced, and ends our connect. A CONNECT from a known
 * session with the same first seq is a resend, answered again; with
 * another, or from a new session (the peer restarted), the old partner
 * fails and a new one is made.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/config.h"
#include "base/log.h"
#include "net/net.h"
#include "net/net_int.h"
#include "platform/sys.h"

static void send_connect(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t conn_seq,
                         uint32_t start) {
  struct net_ep *ne = net_ep(ep);
  struct net_hdr h;
  net_hdr_to(ep, NULL, &h, NET_CONNECT);
  h.dst_ep = (uint16_t)eid;
  uint32_t bip;
  uint16_t bport;
  net_bulk_addr(ep, &bip, &bport);
  h.len = (uint16_t)net_put_connect(ne->pkt + NET_HDR_LEN, transport_ep(ep)->nic, nic, key, conn_seq, start, bip,
                                    bport, net_mtu(ep));
  net_put_hdr(ne->pkt, &h);
  struct net_addr to = {.nic = nic};
  net_xmit(ep, &to, eid, ne->pkt, NET_HDR_LEN + h.len);
}

/* The first wait before a CONNECT goes again: the peer may be busy
 * computing, so 1 ms at least; doubled each time up to
 * FMX_NET_RTO_MAX_US. Each resend goes at a random point around it
 * (spread): with FMX_NET_RTO_US below 2 ms the first may come at 0.5 ms. */
static uint64_t first_wait(void) {
  uint64_t w = fmx_cfg.net_rto_us * 1000ull;
  return w < 1000000 ? 1000000 : w;
}

static uint64_t backoff(uint64_t wait) {
  uint64_t most = fmx_cfg.net_rto_max_us * 1000ull;
  return wait * 2 < most ? wait * 2 : (wait > most ? wait : most);
}

/* When the CONNECT goes again: wait, spread over [wait/2, 3 wait/2).
 * Dialers that started together and lost their CONNECTs in one full port
 * would otherwise all send again at the same moment, and lose them again. */
static uint64_t spread(uint64_t now, uint64_t wait) { return now + wait / 2 + sys_random64() % (wait ? wait : 1); }

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

/* ---- dialing: a handshake nobody waits for ------------------------------ */

/* Our blocking connect to (nic, eid) waits for its answer. */
static int pend_for(const struct net_ep *ne, uint64_t nic, uint32_t eid) {
  return ne->pend.busy && ne->pend.status < 0 && ne->pend.nic == nic && ne->pend.eid == eid;
}

/* Our blocking connect made p. */
static void pend_made(struct net_ep *ne, struct partner *p) {
  ne->pend.p = p;
  ne->pend.status = FMX_SUCCESS;
}

/* The peer's CONNECT crossed our blocking connect to it, and made p: that
 * connect is done, as a dial is (dial_done), and its CONNECT goes no
 * more. Resent after p fails (the peer dropped it), it would find no
 * partner there and make one whose first seq is not the one the peer's
 * first answer gave us: two streams that never meet, each resent for
 * ever into the other's "beyond the window". */
static void pend_crossed(struct net_ep *ne, uint64_t nic, uint32_t eid, struct partner *p) {
  if (pend_for(ne, nic, eid)) pend_made(ne, p);
}

/* Its next look: the next CONNECT, or the deadline if sooner. */
static void dial_arm(struct fmx_endpoint *ep, struct net_peer *np) {
  net_wheel_arm(&net_ep(ep)->timers, &np->timer,
                np->dial->next_ns < np->dial->deadline_ns ? np->dial->next_ns : np->dial->deadline_ns);
}

static void dial_send(struct fmx_endpoint *ep, struct partner *p, uint64_t now) {
  struct net_peer *np = transport_state(p);
  const struct transport_peer *t = transport_peer(p);
  send_connect(ep, t->nic, t->eid, np->dial->key, np->dial->conn_seq, np->start);
  np->dial->next_ns = spread(now, np->dial->wait_ns);
  np->dial->wait_ns = backoff(np->dial->wait_ns);
  dial_arm(ep, np);
}

fmx_return_t net_dial(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                      struct partner **out) {
  struct net_ep *ne = net_ep(ep);
  if (!ne->on) return FMX_NIC_ID_NOT_FOUND;
  struct partner *p = net_find(ep, nic, NULL, eid, 0); /* connected, or dialed already */
  if (p) {
    /* Dialed already: the handshake goes on as long as the later of the
     * two asks (an iconnect that timed out, then tried again). */
    struct net_peer *np = transport_state(p);
    uint64_t until = timeout_ms == FMX_TIMEOUT_INFINITE ? UINT64_MAX : sys_now_ns() + timeout_ms * 1000000ull;
    if (np->dial && until > np->dial->deadline_ns) np->dial->deadline_ns = until;
    *out = p;
    return FMX_SUCCESS;
  }
  struct net_dial *d = calloc(1, sizeof *d);
  p = d ? transport_up->peer_new(ep, &net_transport) : NULL;
  struct net_addr to = {.nic = nic};
  /* Its session and first seq come with its answer. */
  if (!p || net_peer_init(ep, p, nic, eid, 0, &to, (uint32_t)sys_random64(), 0) < 0) {
    free(d);
    if (p) transport_up->peer_down(ep, p, PARTNER_DEAD, FMX_NO_RESOURCES);
    return FMX_NO_RESOURCES;
  }
  struct net_peer *np = transport_state(p);
  np->dial = d;
  uint64_t now = sys_now_ns();
  np->dial->key = key;
  np->dial->conn_seq = ++ne->conn_seq;
  if (pend_for(ne, nic, eid)) {
    /* A blocking connect to it is under way (another thread): ours is
     * the same CONNECT (the peer answers it as a resend), and its answer
     * completes both (net_on_reply). */
    np->start = ne->pend.start;
    np->dial->conn_seq = ne->pend.conn_seq;
  }
  np->dial->wait_ns = first_wait();
  np->dial->deadline_ns = timeout_ms == FMX_TIMEOUT_INFINITE ? UINT64_MAX : now + timeout_ms * 1000000ull;
  TRANSPORT_CNT(ep, NET_DIALS);
  dial_send(ep, p, now);
  *out = p;
  return FMX_SUCCESS;
}

int net_dialing(struct partner *p) { return ((const struct net_peer *)transport_state(p))->dial != NULL; }

/* The handshake is over (answered, failed, or the partner released). */
void net_dial_end(struct net_peer *np) {
  free(np->dial);
  np->dial = NULL;
}

static void dial_fail(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code) {
  struct net_peer *np = transport_state(p);
  net_dial_end(np);
  TRANSPORT_CNT(ep, NET_DIALS_FAILED);
  transport_up->peer_fail(ep, p, PARTNER_DEAD, code); /* what waits for it fails; its timer uncounts it */
}

int net_dial_timer(struct fmx_endpoint *ep, struct partner *p, uint64_t now) {
  struct net_peer *np = transport_state(p);
  if (now >= np->dial->deadline_ns) {
    log_warn("FMX-NET-DIAL", "endpoint %u: endpoint %u of board %012llx did not answer our connect: its requests fail",
             transport_ep(ep)->eid, transport_peer(p)->eid, (unsigned long long)transport_peer(p)->nic);
    dial_fail(ep, p, FMX_REMOTE_ENDPOINT_UNREACHABLE);
    return 0;
  }
  if (now >= np->dial->next_ns)
    dial_send(ep, p, now);
  else
    dial_arm(ep, np);
  return 1;
}

/* The handshake of a dialed partner is done: the peer's session and first
 * seq, where its packets come from, its bulk socket. Records waiting for
 * it go at the next progress pass. */
static void dial_done(struct fmx_endpoint *ep, struct partner *p, uint32_t session, uint32_t start,
                      const struct net_addr *from, uint32_t bip, uint16_t bport, uint16_t mtu) {
  struct net_peer *np = transport_state(p);
  struct transport_peer *t = transport_peer(p);
  net_dial_end(np);
  t->session = session;
  net_peer_known(ep, p);
  np->peer_start = start;
  if (np->rel) net_rel_rx_start(np->rel, start); /* taken already (a rendezvous's conn): nothing came yet */
  np->addr = *from;
  np->addr.nic = t->nic;
  np->heard_ns = sys_now_ns();
  net_wheel_cancel(&net_ep(ep)->timers, &np->timer);
  net_peer_link(ep, p, bip, bport, mtu);
  TRANSPORT_CNT(ep, CONNECT_OK);
  transport_up->peer_ready(ep, p);
}

/* The partner we dial as endpoint eid at `from` (conn_seq: that dial's
 * only, NULL: any). */
static struct partner *dialing(struct fmx_endpoint *ep, const struct net_addr *from, uint32_t eid,
                               const uint32_t *conn_seq) {
  for (struct partner *p = transport_up->peer_next(ep, &net_transport, NULL); p;
       p = transport_up->peer_next(ep, &net_transport, p)) {
    const struct net_peer *np = transport_state(p);
    const struct transport_peer *t = transport_peer(p);
    if (np->dial && t->state == PARTNER_ALIVE && t->eid == eid && (!conn_seq || np->dial->conn_seq == *conn_seq) &&
        (!from->nic || from->nic == t->nic))
      return p;
  }
  return NULL;
}

int net_connecting(struct fmx_endpoint *ep, const struct net_addr *from, uint32_t eid) {
  const struct net_ep *ne = net_ep(ep);
  return pend_for(ne, from->nic ? from->nic : ne->pend.nic, eid) || dialing(ep, from, eid, NULL);
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
  if (q && ((struct net_peer *)transport_state(q))->dial) {
    /* We dial each other: its CONNECT completes ours, and ours (or its
     * answer) completes its side with the seq we announced. */
    dial_done(ep, q, pk->h.src_session, pk->u.connect.start_seq, &to, pk->u.connect.bulk_ip,
              pk->u.connect.bulk_port, pk->u.connect.mtu);
    send_reply(ep, pk, &to, 0, ((struct net_peer *)transport_state(q))->start);
    pend_crossed(ne, nic, pk->h.src_ep, q); /* a blocking connect that shared the dial's CONNECT */
    return;
  }
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
  if (crossing) pend_crossed(ne, nic, pk->h.src_ep, p);
}

void net_on_reply(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from) {
  struct net_ep *ne = net_ep(ep);
  struct partner *d = pk->h.dst_session == transport_ep(ep)->session
                          ? dialing(ep, from, pk->h.src_ep, &pk->u.reply.conn_seq)
                          : NULL;
  if (d) {
    /* A blocking connect that sent the same CONNECT learns it too. */
    int both = pend_for(ne, transport_peer(d)->nic, transport_peer(d)->eid) &&
               ne->pend.conn_seq == pk->u.reply.conn_seq;
    if (pk->u.reply.status) {
      if (both) ne->pend.status = peer_status(pk->u.reply.status);
      dial_fail(ep, d, peer_status(pk->u.reply.status));
      return;
    }
    dial_done(ep, d, pk->h.src_session, pk->u.reply.start_seq, from, pk->u.reply.bulk_ip, pk->u.reply.bulk_port,
              pk->u.reply.mtu);
    if (both) pend_made(ne, d);
    return;
  }
  if (!ne->pend.busy || ne->pend.status >= 0 || pk->u.reply.conn_seq != ne->pend.conn_seq ||
      pk->h.src_ep != ne->pend.eid || pk->h.dst_session != transport_ep(ep)->session ||
      (from->nic && from->nic != ne->pend.nic)) {
    TRANSPORT_CNT(ep, NET_STRANGERS); /* a late or repeated reply, or not ours */
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
  pend_made(ne, p);
}

/* A blocking connect to a peer dialed already (fmx_connect_async): wait
 * for that handshake, making progress. Its partner gone meanwhile means it
 * failed (FMX_REMOTE_ENDPOINT_UNREACHABLE here; what the peer said went to
 * the requests that waited for it). */
static fmx_return_t wait_dialed(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t timeout_ms,
                                struct partner **out) {
  uint64_t now = sys_now_ns();
  uint64_t deadline = timeout_ms == FMX_TIMEOUT_INFINITE ? UINT64_MAX : now + timeout_ms * 1000000ull;
  uint32_t woken = transport_up->wakeups(ep);
  for (;;) {
    transport_up->lock(ep);
    transport_up->progress(ep);
    struct partner *p = net_find(ep, nic, NULL, eid, 0);
    int dialing = p && ((struct net_peer *)transport_state(p))->dial;
    int fd = net_ep(ep)->sock.fd;
    transport_up->unlock(ep);
    if (!p) return FMX_REMOTE_ENDPOINT_UNREACHABLE;
    if (!dialing) {
      *out = p;
      return FMX_SUCCESS;
    }
    now = sys_now_ns();
    if (now >= deadline || transport_up->wakeups(ep) != woken) return FMX_TIMEOUT;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    struct timespec ts = {0, 1000000}; /* its resends are due on the timers: a look each millisecond */
    ppoll(&pfd, 1, &ts, NULL);
  }
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
  if (have && ((struct net_peer *)transport_state(have))->dial) {
    transport_up->unlock(ep);
    uint64_t t0 = sys_now_ns();
    fmx_return_t r = wait_dialed(ep, nic, eid, timeout_ms, out);
    if (r != FMX_REMOTE_ENDPOINT_UNREACHABLE) return r;
    /* That handshake failed: ours says why, in the time left. */
    uint64_t spent = (sys_now_ns() - t0) / 1000000;
    if (timeout_ms != FMX_TIMEOUT_INFINITE) timeout_ms = spent >= timeout_ms ? 0 : timeout_ms - (uint32_t)spent;
    return net_connect(ep, nic, eid, key, timeout_ms, out);
  }
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
  uint64_t wait = first_wait(), resend = now;
  fmx_return_t rc;
  uint32_t woken = transport_up->wakeups(ep);
  for (;;) {
    transport_up->lock(ep);
    now = sys_now_ns();
    if (now >= resend && ne->pend.status < 0) {
      send_connect(ep, ne->pend.nic, ne->pend.eid, ne->pend.key, ne->pend.conn_seq, ne->pend.start);
      resend = spread(now, wait);
      wait = backoff(wait);
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
