/* SPDX-License-Identifier: MIT */
/*
 * The UDP wire, for processes without CAP_NET_RAW: one packet per datagram,
 * endpoint e listening on FMX_NET_PORT + e on every address of the host.
 * A board whose address is not known yet is reached by broadcast on the
 * interface's subnet (a CONNECT names the board it is for; the others
 * ignore it), and its answer tells the address.
 *
 * Bulk (the answers to a pull, net/pull.c) goes as GSO sends: one system
 * call and one trip through the stack for up to 64 KiB of packets, which
 * the kernel cuts into datagrams (UDP_SEGMENT), and a receiving socket with
 * UDP_GRO takes such a train whole, where the stack keeps it whole (veth
 * does): one receive for the lot, each packet then read at its stride.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/sock.h"
#include "net/wire.h"

static int udp_open(struct net_sock *s, const struct net_iface *ifc, uint32_t eid) {
  if (!ifc->ip) return -EADDRNOTAVAIL; /* no IPv4 address on the interface */
  /* NET_EP_ANY: no endpoint (a querier, net/discover.c), any free port. */
  uint16_t port = eid == NET_EP_ANY ? 0 : (uint16_t)(s->port_base + eid);
  if (eid != NET_EP_ANY && (uint32_t)s->port_base + eid > 65535) return -ERANGE;
  s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) return -errno;
  int one = 1;
  setsockopt(s->fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
  net_sock_buffers(s->fd);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(INADDR_ANY)};
  if (bind(s->fd, (struct sockaddr *)&sa, sizeof sa) < 0) return -errno;
  /* GRO needs room for a train in each receive buffer. On from the start
   * (a bulk socket beside the raw wire takes nothing else); the endpoint's
   * own socket has it only while it pulls (net_ep.c). */
  if (setsockopt(s->fd, SOL_UDP, UDP_GRO, &one, sizeof one) == 0) {
    s->rx_buf = 65536;
    s->gro = 1;
  }
  s->gso = 1; /* until a send says otherwise */
  return 0;
}

/* Where a packet to endpoint eid at `to` goes: 0, or -EHOSTUNREACH where
 * its address is not known and the subnet has no broadcast (/31, /32). */
static int udp_to(struct net_sock *s, const struct net_addr *to, uint32_t eid, struct sockaddr_in *sa) {
  *sa = (struct sockaddr_in){.sin_family = AF_INET,
                             .sin_port = to->port ? to->port : htons((uint16_t)(s->port_base + eid)),
                             .sin_addr.s_addr = to->ip ? to->ip : s->ifc.bcast};
  return sa->sin_addr.s_addr ? 0 : -EHOSTUNREACH;
}

static int udp_send(struct net_sock *s, const struct net_addr *to, uint32_t eid, const struct iovec *iov, int iovcnt) {
  struct sockaddr_in sa;
  if (udp_to(s, to, eid, &sa) < 0) return -EHOSTUNREACH;
  struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt};
  if (sendmsg(s->fd, &m, MSG_DONTWAIT) >= 0) return 0;
  return errno == EWOULDBLOCK ? -EAGAIN : -errno; /* ENOBUFS: IP_RECVERR (net_ep.c), not a full buffer */
}

static int udp_send_segs(struct net_sock *s, const struct net_addr *to, uint32_t eid, const struct iovec *iov,
                         int iovcnt, uint16_t seg) {
  if (!s->gso) return -EOPNOTSUPP;
  struct sockaddr_in sa;
  if (udp_to(s, to, eid, &sa) < 0) return -EHOSTUNREACH;
  union {
    char buf[CMSG_SPACE(sizeof(uint16_t))];
    struct cmsghdr align;
  } ctl;
  memset(&ctl, 0, sizeof ctl);
  struct msghdr m = {.msg_name = &sa,
                     .msg_namelen = sizeof sa,
                     .msg_iov = (struct iovec *)iov,
                     .msg_iovlen = iovcnt,
                     .msg_control = ctl.buf,
                     .msg_controllen = sizeof ctl.buf};
  struct cmsghdr *c = CMSG_FIRSTHDR(&m);
  c->cmsg_level = SOL_UDP;
  c->cmsg_type = UDP_SEGMENT;
  c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
  memcpy(CMSG_DATA(c), &seg, sizeof seg);
  if (sendmsg(s->fd, &m, MSG_DONTWAIT) >= 0) return 0;
  if (errno == EAGAIN || errno == ENOBUFS) return -errno;
  if (errno == EIO || errno == EINVAL || errno == ENOPROTOOPT || errno == EOPNOTSUPP) {
    s->gso = 0; /* this kernel or device will not: one at a time */
    return -EOPNOTSUPP;
  }
  return -errno;
}

/* The GRO segment size of a received train, 0 when it is one packet. */
static uint32_t gro_seg(struct msghdr *m, size_t len) {
  for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level != SOL_UDP || c->cmsg_type != UDP_GRO) continue;
    int seg = 0;
    memcpy(&seg, CMSG_DATA(c), sizeof seg);
    return seg > 0 && (size_t)seg < len ? (uint32_t)seg : 0;
  }
  return 0;
}

/* A socket with UDP_GRO costs every datagram it receives: 8 B half round
 * trip over veth 2.06-2.12 us without, 2.29-2.33 with (a bare UDP ping-pong
 * in C, 2026-11-27, Intel Xeon VM; fmx over UDP 2.49-2.53 -> 2.29-2.36). */
static void udp_set_gro(struct net_sock *s, int on) {
  if (setsockopt(s->fd, SOL_UDP, UDP_GRO, &on, sizeof on) == 0) s->gro = on;
}

static int udp_recv(struct net_sock *s, struct net_rx *rx, int max) {
  struct net_rxq *q = s->rxq;
  int n = net_sock_recv_batch(s, max);
  for (int i = 0; i < n; i++)
    rx[i] = (struct net_rx){.buf = s->rxmem + (size_t)i * s->rx_buf,
                            .len = q->mm[i].msg_len,
                            .seg = gro_seg(&q->mm[i].msg_hdr, q->mm[i].msg_len),
                            .from = {.ip = q->from[i].in.sin_addr.s_addr, .port = q->from[i].in.sin_port},
                            .at_ns = net_sock_stamp(s, i)};
  return n;
}

const struct net_wire net_wire_udp = {
    .name = "udp",
    .overhead = 28,
    .pull_frames = 5,
    .open = udp_open,
    .send = udp_send,
    .send_segs = udp_send_segs,
    .recv = udp_recv,
    .set_gro = udp_set_gro,
};
