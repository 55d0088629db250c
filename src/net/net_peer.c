/* SPDX-License-Identifier: MIT */
/*
 * The net transport's partners (net.c): made from a handshake
 * (net_conn.c), found from a packet's source and session through the
 * endpoint's table (ptab.h) or, for a handshake, by walking them, and
 * told what the peer says of its bulk socket and MTU.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "base/config.h"
#include "base/log.h"
#include "net/net_int.h"
#include "platform/sys.h"

void net_rel_cfg_init(struct net_ep *ne, const int *crowded) {
  struct net_rel_cfg c = {
      .pool = &ne->pool,
      .counts = &ne->rel_counts,
      .window = (uint32_t)fmx_cfg.net_window,
      .rto_ns = fmx_cfg.net_rto_us * 1000ull,
      .rto_max_ns = fmx_cfg.net_rto_max_us * 1000ull,
      .dead_ns = fmx_cfg.net_timeout_ms * 1000000ull,
      .ack_delay_ns = fmx_cfg.net_ack_delay_us * 1000ull,
      .ack_every = (uint32_t)fmx_cfg.net_ack_every,
      .crowded = crowded,
  };
  c.rto_min_ns = ne->rto_min_ns;
  if (c.rto_max_ns < c.rto_ns) c.rto_max_ns = c.rto_ns;
  ne->rel_cfg = c;
}

int net_same_source(const struct net_addr *from, const struct net_addr *addr) {
  return from->nic ? from->nic == addr->nic : from->ip == addr->ip && from->port == addr->port;
}

static int is_it(struct partner *p, uint64_t nic, const struct net_addr *from, uint32_t eid, uint32_t session) {
  const struct transport_peer *t = transport_peer(p);
  const struct net_peer *np = transport_state(p);
  return t->state == PARTNER_ALIVE && t->eid == eid && (!session || t->session == session) && (!nic || t->nic == nic) &&
         (!from || net_same_source(from, &np->addr));
}

/* With a session (every packet of a partner's stream) through the table,
 * where every partner whose session is known is; else (a handshake) by
 * walking them all. */
struct partner *net_find(struct fmx_endpoint *ep, uint64_t nic, const struct net_addr *from, uint32_t eid,
                         uint32_t session) {
  if (session) {
    for (struct net_ptab_entry *e = net_ptab_chain(&net_ep(ep)->ptab, eid, session); e; e = e->next)
      if (e->eid == eid && e->session == session) {
        struct partner *p = transport_partner(container_of(e, struct net_peer, hent));
        if (is_it(p, nic, from, eid, session)) return p;
      }
    return NULL;
  }
  for (struct partner *p = transport_up->peer_next(ep, &net_transport, NULL); p;
       p = transport_up->peer_next(ep, &net_transport, p))
    if (is_it(p, nic, from, eid, 0)) return p;
  return NULL;
}

void net_peer_known(struct fmx_endpoint *ep, struct partner *p) {
  struct net_peer *np = transport_state(p);
  const struct transport_peer *t = transport_peer(p);
  net_ptab_add(&net_ep(ep)->ptab, &np->hent, t->eid, t->session);
}

int net_peer_init(struct fmx_endpoint *ep, struct partner *p, uint64_t nic, uint32_t eid, uint32_t session,
                  const struct net_addr *addr, uint32_t tx_start, uint32_t rx_start) {
  struct net_ep *ne = net_ep(ep);
  struct net_peer *np = transport_state(p);
  struct transport_peer *t = transport_peer(p);
  np->addr = *addr;
  np->addr.nic = nic;
  np->start = tx_start;
  np->peer_start = rx_start;
  np->pkt_max = ne->pkt_max;
  np->mtu = net_mtu(ep);
  np->heard_ns = sys_now_ns();
  np->baddr = (struct net_addr){0};
  net_timer_init(&np->timer);
  np->counted = 1;
  net_pull_init(ep, p);
  t->nic = nic;
  t->eid = eid;
  t->session = session;
  if (session) net_peer_known(ep, p);
  ne->npeers++;
  transport_up->peer_joined(ep, p);
  return 0;
}

int net_peer_live(struct net_ep *ne, struct net_peer *np) {
  if (!np->rel) {
    struct net_rel *r = sys_alloc(sizeof *r);
    if (!r) return -ENOMEM;
    if (net_rel_init(r, &ne->rel_cfg, np->start, np->peer_start) < 0) {
      free(r);
      return -ENOMEM;
    }
    np->rel = r;
  }
  return net_pull_attach(np);
}

void net_peer_unlive(struct net_peer *np) {
  if (!np->rel) return;
  net_rel_fini(np->rel);
  free(np->rel);
  np->rel = NULL;
}

uint16_t net_mtu(struct fmx_endpoint *ep) {
  uint32_t m = net_ep(ep)->sock.ifc.mtu;
  return (uint16_t)(m > 65535 ? 65535 : m);
}

void net_peer_link(struct fmx_endpoint *ep, struct partner *p, uint32_t ip, uint16_t port, uint16_t mtu) {
  struct net_ep *ne = net_ep(ep);
  struct net_peer *np = transport_state(p);
  if (ne->bulk_own && ip && port) {
    /* Its frames reached us on the link, so its address must be on our
     * subnet too: one outside it would take the answers to its pulls
     * where we cannot reach (a host on another subnet of the same
     * Ethernet: the pull stalled until the timeout) or where it wants
     * them not to go (a third party). Such a peer gets them in frames. */
    uint32_t me = ntohl(ne->bsock.ifc.ip), mask = ntohl(ne->bsock.ifc.mask), host = ip & ~mask;
    if (mask && ((ip ^ me) & mask) == 0 && ip != me && host != 0 && (host != ~mask || mask >= 0xfffffffeu))
      np->baddr = (struct net_addr){.ip = htonl(ip), .port = htons(port)};
    else
      log_warn("FMX-NET-BULK-ADDR",
               "endpoint %u: endpoint %u of board %012llx gives %u.%u.%u.%u for its pulls' answers, not a host of "
               "our subnet: they go in frames",
               transport_ep(ep)->eid, transport_peer(p)->eid, (unsigned long long)transport_peer(p)->nic, ip >> 24,
               ip >> 16 & 255, ip >> 8 & 255, ip & 255);
  }
  /* A peer whose MTU is smaller than ours would drop our larger packets
   * (and never see a pull's answers): we send it no more than it takes. */
  if (mtu >= NET_MTU_MIN && mtu < np->mtu) {
    np->mtu = mtu;
    if (mtu - ne->sock.wire->overhead < np->pkt_max) np->pkt_max = mtu - ne->sock.wire->overhead;
  }
  /* Trains between the bulk sockets (net_train_sock): every packet of ours
   * fits a UDP datagram within its MTU (28 bytes less than a frame). */
  if (np->baddr.port && ne->bsock.gso && net_bulk_packet_max(np) < np->pkt_max) np->pkt_max = net_bulk_packet_max(np);
}

uint32_t net_bulk_packet_max(const struct net_peer *np) {
  uint32_t m = net_sock_packet_max(&net_ep(np->ep)->bsock), peer = np->mtu - net_wire_udp.overhead;
  return peer < m ? peer : m;
}
