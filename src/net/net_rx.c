/* SPDX-License-Identifier: MIT */
/*
 * The net transport's receive side (docs/protocol.md, "Net transport"):
 * each datagram drained from a socket is cut into its packets (a GRO
 * batch holds several), parsed, checked against its partner's session,
 * and handed on: DATA to the partner's stream and the protocol in order,
 * the rest (acks, handshakes, NACKs, pulls) to their engines. The head of
 * a train marks that its rest comes to the bulk socket.
 */
#include "base/log.h"
#include "net/discover.h"
#include "net/net.h"
#include "net/net_int.h"
#include "platform/sys.h"

/* One record (a DATA body) to the protocol: nonzero once p is gone. */
static int deliver_body(struct fmx_endpoint *ep, struct partner *p, transport_deliver_fn deliver, const uint8_t *b,
                        size_t n) {
  if (n == 0) return 0; /* a probe: acked, nothing to deliver */
  struct proto_hdr h;
  if (net_get_record(b, n, &h) < 0) {
    TRANSPORT_CNT(ep, BAD_PACKET);
    return 0;
  }
  log_debug("FMX-NET-REC", "endpoint %u: record %s from endpoint %u, %u B of %llu", transport_ep(ep)->eid,
            proto_type_str(h.type), transport_peer(p)->eid, h.len, (unsigned long long)h.msg_len);
  return deliver(ep, p, &((struct net_peer *)transport_state(p))->pull->lend, &h, b + NET_RECORD_HDR);
}

/* The UDP wire's socket takes GSO trains whole only while they come
 * (NET_GRO_QUIET). */
void net_gro_want(struct fmx_endpoint *ep) {
  struct net_ep *ne = net_ep(ep);
  ne->gro_quiet = 0;
  if (net_sock_gro(&ne->sock, 1)) TRANSPORT_CNT(ep, NET_GRO_SWITCHES);
}

void net_stamps_want(struct fmx_endpoint *ep) {
  struct net_ep *ne = net_ep(ep);
  ne->stamps_quiet = 0;
  int on = net_sock_stamps(&ne->sock, 1);
  if (ne->bulk_own) on |= net_sock_stamps(&ne->bsock, 1);
  if (on) TRANSPORT_CNT(ep, NET_STAMP_SWITCHES);
}

static void gro_quiet_packet(struct fmx_endpoint *ep, struct net_ep *ne) {
  if (ne->sock.gro == 1 && !ne->pulling && ++ne->gro_quiet >= NET_GRO_QUIET && net_sock_gro(&ne->sock, 0))
    TRANSPORT_CNT(ep, NET_GRO_SWITCHES);
}

/* Beside the raw wire the rest of a train comes to the bulk socket, sent
 * before its head (train.c). After a head, the bulk socket is read at
 * every pass until NET_TRAIN_PASSES of them found nothing: a waiter with
 * nothing else to do takes the next train's rest as it comes (read only
 * once its head came, a 24 KiB half round trip took 14.6 us instead of
 * 12.5 across veth). When crowded, only while a head came and the packet
 * after it did not: each read is a system call, time taken from another
 * rank (8 namespaced hosts of LAMMPS on 2 cores read it 390 times a step,
 * and took each train's rest before its head, kept early). */
static void train_head(struct net_ep *ne, struct net_peer *np, uint32_t seq) {
  if (!np->train_wait) ne->trains_waiting++;
  np->train_wait = 1;
  np->train_next = seq + 1;
  ne->trains_due = NET_TRAIN_PASSES;
}

/* np's stream delivered up to rel.expect: its train came whole? */
static void train_came(struct net_ep *ne, struct net_peer *np) {
  if (!np->train_wait || !net_seq_lt(np->train_next, np->rel->expect)) return;
  np->train_wait = 0;
  ne->trains_waiting--;
}

static void on_data(struct fmx_endpoint *ep, struct partner *p, const struct net_pkt *pk, int bulk,
                    transport_deliver_fn deliver, uint64_t now) {
  struct net_peer *np = transport_state(p);
  struct net_ep *ne = net_ep(ep);
  if (pk->h.flags & NET_F_TRAIN) {
    net_gro_want(ep);
    if (ne->bulk_own && !bulk) train_head(ne, np, pk->h.seq); /* the rest comes to the bulk socket */
  } else {
    gro_quiet_packet(ep, ne);
  }
  int r = net_rel_recv(np->rel, pk->h.seq, pk->body, pk->h.len, now);
  /* Further from what we expect, ahead or behind, than a peer in step
   * with us can send: its packets in flight lie within one window
   * (NET_REL_WINDOW_MAX at most) and we expect one of them or the one
   * after, so one window away at most (behind: a resend of its oldest
   * once we have its whole flight). Twice that: its stream to us starts
   * elsewhere than ours from it (two handshakes crossed wrong). Both
   * alive, the two would wait on each other until FMX_NET_TIMEOUT_MS;
   * told, it fails the partner, should that packet be in its flight
   * (net_on_nack). */
  if (r == NET_REL_FAR || r == NET_REL_DUP) {
    uint32_t ahead = pk->h.seq - np->rel->expect, off = net_seq_lt(pk->h.seq, np->rel->expect) ? 0u - ahead : ahead;
    if (off >= 2 * NET_REL_WINDOW_MAX) net_send_nack(ep, pk, &np->addr, NET_NACK_OUT_OF_STEP);
  }
  net_arm_timers(ne, np, now); /* its ack is due */
  int gone = 0;
  if (r == NET_REL_NEW) {
    gone = deliver_body(ep, p, deliver, pk->body, pk->h.len);
    size_t len;
    uint8_t *b;
    while (!gone && (b = net_rel_pop(np->rel, &len)) != NULL) {
      gone = deliver_body(ep, p, deliver, b, len);
      net_pool_put(&ne->pool, b);
    }
  }
  train_came(ne, np); /* also for a head sent again, after its train came */
  /* It left (its CLOSE): ack what it sent at once, it may wait for that
   * before it exits; we keep no timer for it now (net_close stays a while
   * for it). */
  if (gone) {
    net_send_ack(ep, p);
    if (transport_peer(p)->state == PARTNER_CLOSED) np->left_ns = now;
  }
}

/* The partner a packet that came to the bulk socket is from: the
 * answers to our pulls and the trains of eager fragments, nothing else,
 * come there. */
static struct partner *bulk_source(struct fmx_endpoint *ep, const struct net_pkt *pk, const struct net_addr *from) {
  if (pk->h.type != NET_PULL_REPLY && !(pk->h.type == NET_DATA && (pk->h.flags & NET_F_TRAIN))) return NULL;
  struct partner *p = net_find(ep, 0, NULL, pk->h.src_ep, pk->h.src_session);
  return p && net_same_source(from, &((struct net_peer *)transport_state(p))->baddr) ? p : NULL;
}

static void on_packet(struct fmx_endpoint *ep, const uint8_t *buf, size_t len, const struct net_rx *rx, int bulk,
                      transport_deliver_fn deliver, uint64_t now) {
  const struct transport_ep *te = transport_ep(ep);
  struct net_pkt pk;
  TRANSPORT_CNT(ep, NET_RECEIVED);
  int why = net_parse(buf, len, &pk);
  if (why == NET_OK)
    log_debug("FMX-NET-RX", "endpoint %u: %s from endpoint %u session %08x to session %08x, seq %u ack %u, %u B",
              te->eid, net_type_str(pk.h.type), pk.h.src_ep, pk.h.src_session, pk.h.dst_session, pk.h.seq, pk.h.ack,
              pk.h.len);
  if (why == NET_OK && pk.h.type == NET_HOST_QUERY && pk.h.dst_ep == NET_EP_ANY && !bulk) {
    net_discover_answer(ep, &pk, &rx->from);
    return;
  }
  if (why != NET_OK || pk.h.dst_ep != te->eid) {
    TRANSPORT_CNT(ep, NET_DROPPED);
    return;
  }
  struct partner *p = NULL;
  if (bulk) {
    p = pk.h.dst_session == te->session ? bulk_source(ep, &pk, &rx->from) : NULL;
    if (!p) {
      TRANSPORT_CNT(ep, NET_STRANGERS);
      return;
    }
  } else {
    switch (pk.h.type) {
      case NET_CONNECT: net_on_connect(ep, &pk, &rx->from); return;
      case NET_CONNECT_REPLY: net_on_reply(ep, &pk, &rx->from); return;
      case NET_NACK: net_on_nack(ep, &pk, &rx->from); return;
      default: break;
    }
    p = pk.h.dst_session == te->session ? net_find(ep, 0, &rx->from, pk.h.src_ep, pk.h.src_session) : NULL;
  }
  if (!p) {
    /* A stranger, a partner we dropped, or one from before we restarted
     * (another session): dropped, and told so for data. Not a peer we
     * are connecting to whose answer was lost: the CONNECT we send again
     * finishes it, and its data comes again. */
    TRANSPORT_CNT(ep, NET_STRANGERS);
    if (pk.h.type == NET_DATA && !net_connecting(ep, &rx->from, pk.h.src_ep))
      net_send_nack(ep, &pk, &rx->from, NET_NACK_BAD_SESSION);
    return;
  }
  struct net_peer *np = transport_state(p);
  struct net_emit a = {ep, p};
  np->heard_ns = now;
  /* Its first record takes its stream and pull state; without memory the
   * packet is not taken, as if lost (sent again). Nothing else comes
   * before a record either way (a late ack of a session's earlier
   * connection: dropped). */
  if (!np->pull && (pk.h.type != NET_DATA || net_peer_live(net_ep(ep), np) < 0)) return;
  if (pk.h.type == NET_ACK) net_rel_on_dups(np->rel, pk.u.ack.dups);
  net_rel_on_ack(np->rel, pk.h.ack, pk.h.type == NET_ACK ? pk.u.ack.sack : 0, now, net_emit, &a);
  if (np->pull && np->pull->pulls_unknown)
    net_pull_acked(ep, p, pk.h.type == NET_PULL_REPLY ? pk.u.reply_data.rreq : 0, now);
  switch (pk.h.type) {
    case NET_DATA: on_data(ep, p, &pk, bulk, deliver, now); break;
    case NET_PULL: net_pull_on_pull(ep, p, &pk, rx->at_ns); break;
    case NET_PULL_REPLY: net_pull_on_reply(ep, p, &pk, bulk, rx->at_ns, now); break;
    default: break;
  }
}

/* A datagram: one packet, or a train of them (UDP GRO) at its stride. One
 * clock read for the lot: it was 4.5% of a 16 MiB pull's receiver, read
 * for every frame (twice on the UDP wire). */
static void on_datagram(struct fmx_endpoint *ep, const struct net_rx *rx, int bulk, transport_deliver_fn deliver) {
  uint64_t now = sys_now_ns();
  if (!rx->seg) {
    on_packet(ep, rx->buf, rx->len, rx, bulk, deliver, now);
    return;
  }
  for (size_t off = 0; off < rx->len; off += rx->seg)
    on_packet(ep, rx->buf + off, rx->len - off < rx->seg ? rx->len - off : rx->seg, rx, bulk, deliver, now);
}

/* What arrived on sock, a few batches at most (a batch of GSO trains is
 * shorter than NET_RX_BATCH: net_sock_more): the datagrams taken. */
int net_drain(struct fmx_endpoint *ep, struct net_sock *sock, int bulk, transport_deliver_fn deliver) {
  struct net_rx rx[NET_RX_BATCH];
  int got = 0;
  for (int round = 0; round < 4; round++) {
    int n = sock->wire->recv(sock, rx, NET_RX_BATCH);
    for (int i = 0; i < n; i++) on_datagram(ep, &rx[i], bulk, deliver);
    got += n;
    if (n < NET_RX_BATCH && !net_sock_more(sock)) break;
  }
  return got;
}
