/* SPDX-License-Identifier: MIT */
/*
 * Trains: an eager message's fragments as one GSO send (net_int.h).
 *
 * Where the wire takes GSO sends (UDP), the fragments of an eager message
 * pushed in one batch (ops.batch) leave as one system call and cross the
 * stack, veth and a bridge as one buffer, which the receiver takes whole
 * with GRO: on 8 namespaced hosts on 2 cores, 17 sendmsg and 17 trips
 * through the bridge per 24 KiB halo made eager sends slower than pulling
 * them. Beside the raw wire, trains go between the two bulk sockets (the
 * answers to pulls go there too): the first packet in a frame, which
 * tells the receiver to read its bulk socket (NET_F_TRAIN), the rest as
 * one GSO send. Without either, packets leave one at a time. The packets
 * stay in their partner's rel slots meanwhile (net.c's send_data queued
 * them there): nothing frees those between a batch's pushes.
 */
#include <errno.h>

#include "net/net_int.h"

/* Beside the raw wire a train costs the receiver a read of its bulk
 * socket, worth it from NET_TRAIN_BULK_MIN fragments: fmx_perf pingpong
 * across veth, 2 KiB (2 fragments) 16.9 us in a train against 11.6 frame
 * by frame, 4 KiB even, 6 KiB (5) 20.1 against 27.1. */
#define NET_TRAIN_BULK_MIN 4

int net_train_wire(const struct net_sock *s) { return s->wire->send_segs && s->gso; }

uint64_t net_eager_bytes(const struct net_wire *w, int trains, uint32_t pkt_max) {
  /* Where fragments leave in trains (ops.batch), a train's worth: eager
   * 24 KiB took 31 us a half round trip on veth at MTU 1500 against 77
   * pulled (docs/protocol.md). */
  uint32_t frames = !trains ? w->pull_frames
                  : NET_PULL_BLOCK_BYTES / pkt_max < NET_PULL_FRAMES_MAX ? NET_PULL_BLOCK_BYTES / pkt_max
                                                                         : NET_PULL_FRAMES_MAX;
  return (uint64_t)frames * (pkt_max - NET_HDR_LEN - NET_RECORD_HDR);
}

struct net_sock *net_train_sock(struct net_ep *ne, const struct net_peer *np) {
  if (net_train_wire(&ne->sock)) return &ne->sock;
  if (ne->bulk_own && np->baddr.port && ne->bsock.gso) return &ne->bsock;
  return NULL;
}

int net_train_can(struct net_ep *ne, const struct net_peer *np, size_t payload) {
  struct net_sock *s = ne->train.want ? net_train_sock(ne, np) : NULL;
  return s && (s == &ne->sock || ne->train.want >= NET_TRAIN_BULK_MIN * (uint64_t)payload);
}

void net_train_flush(struct fmx_endpoint *ep) {
  struct net_ep *ne = net_ep(ep);
  int n = ne->train.n;
  if (!n) return;
  ne->train.n = 0;
  ne->train.bytes = 0;
  struct partner *p = ne->train.p;
  struct net_peer *np = transport_state(p);
  uint32_t eid = transport_peer(p)->eid;
  struct net_sock *s = net_train_sock(ne, np);
  const struct iovec *iov = ne->train.iov;
  const struct net_addr *to = &np->addr;
  int head = s == &ne->bsock; /* the first goes in a frame, to be heard */
  if (head) {
    iov++;
    n--;
    to = &np->baddr;
  }
  /* The rest first: when the frame is read, they are there. */
  int r = !s || n == 0 ? -EOPNOTSUPP
        : n == 1       ? s->wire->send(s, to, eid, iov, 1)
                       : s->wire->send_segs(s, to, eid, iov, n, ne->train.seg);
  if (head) {
    /* Alone (the window or a train's limit cut it off): no train to read for. */
    if (n == 0) net_clear_flags(ne->train.iov[0].iov_base, NET_F_TRAIN);
    net_xmit(ep, &np->addr, eid, ne->train.iov[0].iov_base, ne->train.iov[0].iov_len);
    /* The rest, kept for a resend, goes on the wire if ever again (below, or
     * rel's resends): there none of them is the head of a train. */
    for (int i = 0; i < n; i++) net_clear_flags(iov[i].iov_base, NET_F_TRAIN);
  }
  if (r == 0) {
    TRANSPORT_ADD(ep, NET_SENT, (uint64_t)n);
    if (n > 1) TRANSPORT_CNT(ep, NET_TRAINS);
  } else if (r == -EOPNOTSUPP || (head && r != -EAGAIN)) {
    net_sock_send_failed(s, r);
    /* The kernel refused GSO (now off), or our bulk socket refused them
     * (no neighbour for the peer's address, a full device queue: IP_RECVERR
     * tells): one at a time on our wire. */
    for (int i = 0; i < n; i++) net_xmit(ep, &np->addr, eid, iov[i].iov_base, iov[i].iov_len);
  } /* else lost as a line would lose them: the timer resends */
}

void net_train_add(struct fmx_endpoint *ep, struct partner *p, const uint8_t *pkt, uint32_t len) {
  struct net_ep *ne = net_ep(ep);
  if (ne->train.n && (ne->train.p != p || len > ne->train.seg || ne->train.n == NET_PULL_FRAMES_MAX ||
                      ne->train.bytes + len > NET_PULL_BLOCK_BYTES))
    net_train_flush(ep);
  if (!ne->train.n) {
    ne->train.p = p;
    ne->train.seg = (uint16_t)len;
  }
  ne->train.iov[ne->train.n++] = (struct iovec){(void *)pkt, len};
  ne->train.bytes += len;
  if (len < ne->train.seg) net_train_flush(ep); /* a shorter one ends a train */
}
