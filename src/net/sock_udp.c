/* SPDX-License-Identifier: MIT */
/*
 * The UDP wire, for processes without CAP_NET_RAW: one packet per datagram,
 * endpoint e listening on FMX_NET_PORT + e on every address of the host.
 * A board whose address is not known yet is reached by broadcast on the
 * interface's subnet (a CONNECT names the board it is for; the others
 * ignore it), and its answer tells the address.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/sock.h"

#define SOCK_BUF (4 << 20)

static int udp_open(struct net_sock *s, const struct net_iface *ifc, uint32_t eid) {
  if (!ifc->ip) return -EADDRNOTAVAIL; /* no IPv4 address on the interface */
  if ((uint32_t)s->port_base + eid > 65535) return -ERANGE;
  s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) return -errno;
  int one = 1, buf = SOCK_BUF;
  setsockopt(s->fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
  if (setsockopt(s->fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) < 0)
    setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  if (setsockopt(s->fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) < 0)
    setsockopt(s->fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)(s->port_base + eid)),
                           .sin_addr.s_addr = htonl(INADDR_ANY)};
  if (bind(s->fd, (struct sockaddr *)&sa, sizeof sa) < 0) return -errno;
  return 0;
}

static int udp_send(struct net_sock *s, const struct net_addr *to, uint32_t eid, const struct iovec *iov, int iovcnt) {
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = to->port ? to->port : htons((uint16_t)(s->port_base + eid)),
                           .sin_addr.s_addr = to->ip ? to->ip : s->ifc.bcast};
  struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt};
  if (sendmsg(s->fd, &m, MSG_DONTWAIT) >= 0) return 0;
  return errno == EAGAIN || errno == ENOBUFS ? -EAGAIN : -errno;
}

static int udp_recv(struct net_sock *s, struct net_rx *rx, int max) {
  struct mmsghdr mm[NET_RX_BATCH];
  struct iovec iov[NET_RX_BATCH];
  struct sockaddr_in from[NET_RX_BATCH];
  if (max > NET_RX_BATCH) max = NET_RX_BATCH;
  for (int i = 0; i < max; i++) {
    iov[i] = (struct iovec){s->rxmem + (size_t)i * NET_RX_BUF, NET_RX_BUF};
    mm[i].msg_hdr = (struct msghdr){.msg_name = &from[i], .msg_namelen = sizeof from[i], .msg_iov = &iov[i], .msg_iovlen = 1};
  }
  int n = recvmmsg(s->fd, mm, (unsigned)max, MSG_DONTWAIT, NULL);
  for (int i = 0; i < n; i++)
    rx[i] = (struct net_rx){.buf = iov[i].iov_base,
                            .len = mm[i].msg_len,
                            .from = {.ip = from[i].sin_addr.s_addr, .port = from[i].sin_port}};
  return n < 0 ? 0 : n;
}

const struct net_wire net_wire_udp = {
    .name = "udp",
    .overhead = 28,
    .open = udp_open,
    .send = udp_send,
    .recv = udp_recv,
};
