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

static int udp_open(struct net_sock *s, const struct net_iface *ifc, uint32_t eid) {
  if (!ifc->ip) return -EADDRNOTAVAIL; /* no IPv4 address on the interface */
  if ((uint32_t)s->port_base + eid > 65535) return -ERANGE;
  s->fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s->fd < 0) return -errno;
  int one = 1;
  setsockopt(s->fd, SOL_SOCKET, SO_BROADCAST, &one, sizeof one);
  net_sock_buffers(s->fd);
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
  struct sockaddr_in from[NET_RX_BATCH];
  int n = net_sock_recv_batch(s, mm, from, sizeof from[0], max);
  for (int i = 0; i < n; i++)
    rx[i] = (struct net_rx){.buf = s->rxmem + (size_t)i * NET_RX_BUF,
                            .len = mm[i].msg_len,
                            .from = {.ip = from[i].sin_addr.s_addr, .port = from[i].sin_port}};
  return n;
}

const struct net_wire net_wire_udp = {
    .name = "udp",
    .overhead = 28,
    .open = udp_open,
    .send = udp_send,
    .recv = udp_recv,
};
