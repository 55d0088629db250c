/* SPDX-License-Identifier: MIT */
/*
 * The net transport's board and an endpoint's sockets: which interface is
 * board 0 (once per process), opening the wire's socket and, beside the
 * raw wire, the UDP socket the answers to our pulls come on; what a
 * sleeping waiter polls; closing once what we sent is acked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "net/net_int.h"
#include "platform/sys.h"

/* ---- the board ---------------------------------------------------------- */

uint64_t net_nic(void) {
  struct net_iface f;
  return net_board(&f) == 0 ? f.nic : 0;
}

void net_bulk_addr(struct fmx_endpoint *ep, uint32_t *ip, uint16_t *port) {
  struct net_ep *ne = net_ep(ep);
  *ip = ne->bulk_own ? ntohl(ne->bsock.ifc.ip) : 0;
  *port = ne->bulk_own ? (uint16_t)(ne->bsock.port_base + ne->bsock.eid) : 0;
}

/* Beside the raw wire, a UDP socket for the answers to our pulls where
 * the interface has an address (FMX_NET_BULK), and an epoll set of both
 * for a waiter; bulk_own says both are there. (On the UDP wire the answers
 * come on its socket.) */
static void bulk_open(struct net_ep *ne, const struct net_iface *f, uint32_t eid) {
  if (ne->sock.wire != &net_wire_raw || strcmp(fmx_cfg.net_bulk, "udp") != 0 || !f->ip) return;
  if (net_sock_open_wire(&ne->bsock, f, eid, &net_wire_udp) < 0) {
    log_info("FMX-NET-BULK", "endpoint %u: no UDP socket for bulk (port %u taken?): pulls on raw frames", eid,
             (unsigned)(fmx_cfg.net_port + eid));
    return;
  }
  /* Its sends' local failures come back to us (the kernel drops them
   * silently otherwise): no neighbour for the peer's address, a full
   * device queue. Pull answers then go on the wire at once (pull.c, answer).
   * ICMP errors queue on the socket too: net_sock_recv_batch empties it. */
  int one = 1;
  if (setsockopt(ne->bsock.fd, IPPROTO_IP, IP_RECVERR, &one, sizeof one) < 0)
    log_info("FMX-NET-BULK", "endpoint %u: IP_RECVERR refused: pull answers the bulk socket drops are lost, "
             "and asked again", eid);
  int fd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN};
  if (fd < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, ne->sock.fd, &ev) < 0 || epoll_ctl(fd, EPOLL_CTL_ADD, ne->bsock.fd, &ev) < 0) {
    if (fd >= 0) close(fd);
    net_sock_close(&ne->bsock);
    return;
  }
  ne->epfd = fd;
  ne->bulk_own = 1;
}

int net_open(struct fmx_endpoint *ep) {
  struct net_ep *ne = net_ep(ep);
  if (!net_wanted()) return -ENODEV;
  struct net_iface f;
  int r = net_board(&f);
  if (r < 0) {
    if (fmx_cfg.net_iface && fmx_cfg.net_iface[0])
      log_warn("FMX-NET-IFACE", "FMX_NET_IFACE=%s: no such Ethernet interface", fmx_cfg.net_iface);
    return r;
  }
  if (net_ptab_init(&ne->ptab, (uint32_t)sys_random64()) < 0) return -ENOMEM;
  if ((r = net_sock_open(&ne->sock, &f, transport_ep(ep)->eid)) < 0) {
    net_ptab_fini(&ne->ptab);
    return r;
  }
  net_sock_gro(&ne->sock, 0); /* until we pull (pull.c) */
  ne->pkt_max = net_sock_packet_max(&ne->sock);
  if (ne->pkt_max < NET_HDR_LEN + NET_RECORD_HDR + TRANSPORT_MIN_PAYLOAD) {
    net_sock_close(&ne->sock);
    net_ptab_fini(&ne->ptab);
    return -EMSGSIZE;
  }
  bulk_open(ne, &f, transport_ep(ep)->eid);
  net_pool_init(&ne->pool, ne->pkt_max, (uint32_t)fmx_cfg.net_window); /* one partner's window kept warm */
  /* The shortest wait a timer may have (the ack delay, or the resend wait
   * if shorter): measured waits are no shorter, and timers run at half of
   * it. */
  uint64_t least = fmx_cfg.net_ack_delay_us < fmx_cfg.net_rto_us ? fmx_cfg.net_ack_delay_us : fmx_cfg.net_rto_us;
  ne->rto_min_ns = least * 1000ull;
  ne->timer_step = least * 500ull + 1;
  /* Our answers to pulls may keep our socket busy for a timer step (half
   * the least resend wait): a record behind them is not resent for it. */
  for (int i = 0; i < 2; i++) net_pace_init(&ne->pace[i], NET_PULL_BLOCK_BYTES, ne->timer_step, sys_now_ns());
  net_rel_cfg_init(ne, &transport_ep(ep)->crowded);
  net_wheel_init(&ne->timers, ne->timer_step, sys_now_ns());
  ne->probe_step = fmx_cfg.net_timeout_ms * 250000ull; /* a quarter of the timeout */
  /* A pull asks for no more than half what the socket its answers come to
   * may hold received: the rest is room for the others' packets. */
  ne->pull_window = fmx_cfg.net_pull_window ? fmx_cfg.net_pull_window
                                            : net_sock_rcvbuf(ne->bulk_own ? &ne->bsock : &ne->sock) / 2;
  /* A peer whose answers come on the wire (no UDP address of ours it may
   * take, net_peer_link): the wire socket's share. */
  ne->pull_window_wire = fmx_cfg.net_pull_window ? fmx_cfg.net_pull_window : net_sock_rcvbuf(&ne->sock) / 2;
  /* The receiver's budget: at most what a pull may ask of the bigger
   * socket, one block to begin, a frame its step (net/grant.h). */
  uint64_t cap = ne->pull_window > ne->pull_window_wire ? ne->pull_window : ne->pull_window_wire;
  net_grant_init(&ne->grant, cap, ne->pkt_max - NET_HDR_LEN - NET_PULL_REPLY_HDR, NET_PULL_BLOCK_BYTES);
  list_init(&ne->granting);
  /* The least net_eager_max gives a partner of the largest packets (one
   * without trains: beside the raw wire, a partner without a bulk
   * socket): longer messages may be pulled, and move only when someone
   * makes progress (core/progress.c watches such receives). */
  transport_ep(ep)->pull_min =
      fmx_cfg.net_pull_threshold
          ? fmx_cfg.net_pull_threshold
          : net_eager_bytes(ne->sock.wire, net_train_wire(&ne->sock), ne->pkt_max) + 1;
  ne->conn_seq = (uint32_t)sys_random64();
  ne->on = 1;
  return 0;
}

/* Closing: what we sent (the CLOSE records among it) is acked, or the
 * partners fail, before the socket goes: an eager send completes before
 * the peer has it, and the process may exit right after.
 *
 * A peer that gets our CLOSE acks it once, at once, and may leave. When
 * that ack is lost nothing acks what we send again, so:
 * - our last packets go again at the resend wait round trips measure, not
 *   one backed off by earlier losses (net_rel_unback);
 * - a peer whose CLOSE came less than FMX_NET_RTO_MAX_US ago (the longest
 *   it waits before it sends again) may still be resending it: we stay
 *   that long, and as it is no partner now, what it sends again is
 *   answered by a NACK, which ends its wait (net_on_nack);
 * - once all before our CLOSE is acked, the CLOSE alone waits for its ack
 *   NET_CLOSE_SENDS sends long (the waits doubling: a live peer whose
 *   acks are all lost that often is as unlikely as the loss rate to that
 *   power), not FMX_NET_TIMEOUT_MS: nothing is lost if it goes unacked.
 * What was sent before the CLOSE is waited for as long as the peer may
 * live (FMX_NET_TIMEOUT_MS): a peer busy elsewhere still gets it. */
#define NET_CLOSE_SENDS 8
static int close_waits(struct partner *p, uint64_t now) {
  struct net_peer *np = transport_state(p);
  if (!np->rel) return 0;
  if (transport_peer(p)->state != PARTNER_ALIVE)
    return np->left_ns && now - np->left_ns < fmx_cfg.net_rto_max_us * 1000ull;
  if (net_rel_idle(np->rel)) return 0;
  if (!np->close_sent || np->rel->una != np->close_seq || np->rel->next_seq != np->close_seq + 1) return 1;
  return net_rel_sends(np->rel, np->close_seq) < NET_CLOSE_SENDS;
}

void net_close(struct fmx_endpoint *ep) {
  struct net_ep *ne = net_ep(ep);
  if (!ne->on) return;
  uint64_t end = sys_now_ns() + fmx_cfg.net_timeout_ms * 1000000ull;
  transport_up->lock(ep);
  for (struct partner *p = transport_up->peer_next(ep, &net_transport, NULL); p;
       p = transport_up->peer_next(ep, &net_transport, p)) {
    struct net_peer *np = transport_state(p);
    if (np->rel) net_rel_unback(np->rel);
  }
  transport_up->unlock(ep);
  for (;;) {
    transport_up->lock(ep);
    transport_up->progress(ep);
    uint64_t now = sys_now_ns();
    int busy = 0;
    for (struct partner *p = transport_up->peer_next(ep, &net_transport, NULL); p && !busy;
         p = transport_up->peer_next(ep, &net_transport, p))
      busy = close_waits(p, now);
    transport_up->unlock(ep);
    if (!busy || sys_now_ns() >= end) break;
    struct timespec ts = {0, 100000};
    nanosleep(&ts, NULL);
  }
}

/* With no partner here the waiter sleeps on its wake word as before (shm
 * peers write it) and looks for a connect every NET_IDLE_LOOK_NS. */
#define NET_IDLE_LOOK_NS 10000000ull
int net_wait_fd(struct fmx_endpoint *ep, uint64_t *max_ns) {
  struct net_ep *ne = net_ep(ep);
  if (!ne->on) return -1;
  ne->look = 1; /* back from the sleep: read the socket at once */
  if (!ne->npeers && !ne->pend.busy) {
    *max_ns = NET_IDLE_LOOK_NS;
    return -1;
  }
  if (ne->timers.armed) {
    uint64_t now = sys_now_ns();
    *max_ns = ne->timers.soonest > now ? ne->timers.soonest - now : 0;
  }
  return net_bulk_due(ep) ? ne->epfd : ne->sock.fd;
}

void net_ep_fini(struct fmx_endpoint *ep) {
  struct net_ep *ne = net_ep(ep);
  if (ne->on || ne->sock.rxmem) net_sock_close(&ne->sock);
  if (ne->bulk_own) {
    net_sock_close(&ne->bsock);
    close(ne->epfd);
  }
  ne->bulk_own = 0;
  ne->on = 0;
  net_ptab_fini(&ne->ptab);
  net_pool_fini(&ne->pool);
  net_pull_queue_fini(&ne->answers);
}
