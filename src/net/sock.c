/* SPDX-License-Identifier: MIT */
/* Choosing and opening a wire (sock.h). */
#include "net/sock.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/config.h"
#include "net/wire.h"
#include "platform/sys.h"
#include "platform/topo.h"

int net_sock_open_wire(struct net_sock *s, const struct net_iface *ifc, uint32_t eid, const struct net_wire *w) {
  memset(s, 0, sizeof *s);
  s->fd = -1;
  s->ifc = *ifc;
  s->eid = eid;
  s->port_base = (uint16_t)fmx_cfg.net_port;
  s->rx_buf = NET_RX_BUF;
  s->wire = w;
  s->gro = -1;
  int r = w->open(s, ifc, eid);
  /* GSO trains are read in batches of a quarter of L2 at most: the kernel
   * writes a whole batch before we parse and copy it out, and a batch of
   * 32 trains (2 MiB) was out of L2 by then. UDP, MTU 1500, pinned
   * (2026-11-27, Intel Xeon VM, L2 2 MiB): 4 MiB 4,922-4,977 -> 5,251-5,418
   * MB/s and 16 MiB 3,202-3,231 -> 3,369-3,491 with 8 trains (512 KiB); 16
   * and 6 did less well. */
  uint64_t l2 = topo_get()->l2.size, fit = l2 && s->rx_buf ? l2 / 4 / s->rx_buf : NET_RX_BATCH;
  s->gro_batch = fit < 1 ? 1 : fit > NET_RX_BATCH ? NET_RX_BATCH : (int)fit;
  if (r == 0 && !(s->rxmem = malloc((size_t)NET_RX_BATCH * s->rx_buf))) r = -ENOMEM;
  if (r == 0 && !(s->rxq = calloc(1, sizeof *s->rxq))) r = -ENOMEM;
  if (r == 0) {
    struct net_rxq *q = s->rxq;
    q->ctl_len = sizeof q->ctl[0];
    for (int i = 0; i < NET_RX_BATCH; i++) {
      q->iov[i] = (struct iovec){s->rxmem + (size_t)i * s->rx_buf, s->rx_buf};
      q->mm[i].msg_hdr = (struct msghdr){.msg_name = &q->from[i],
                                         .msg_iov = &q->iov[i],
                                         .msg_iovlen = 1,
                                         .msg_control = q->ctl[i].buf};
    }
    q->dirty = NET_RX_BATCH;
  }
  if (r < 0) net_sock_close(s);
  return r;
}

static const struct net_wire *forced;

void net_wire_force(const struct net_wire *w) { forced = w; }

int net_sock_open(struct net_sock *s, const struct net_iface *ifc, uint32_t eid) {
  if (forced) return net_sock_open_wire(s, ifc, eid, forced);
  const char *w = fmx_cfg.net_wire ? fmx_cfg.net_wire : "auto";
  if (strcmp(w, "udp") != 0) {
    int r = net_sock_open_wire(s, ifc, eid, &net_wire_raw);
    if (r == 0 || strcmp(w, "raw") == 0) return r;
  }
  return net_sock_open_wire(s, ifc, eid, &net_wire_udp);
}

int net_sock_stamps(struct net_sock *s, int on) {
  if (s->ring || !s->rxq || s->stamps < 0 || s->stamps == on) return 0;
  if (setsockopt(s->fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on) < 0) {
    s->stamps = -1; /* not a socket that has them (the simulator's): not asked again */
    return 0;
  }
  s->stamps = on;
  return 1;
}

uint64_t net_sock_stamp(const struct net_sock *s, int i) {
  if (s->stamps <= 0) return 0;
  struct msghdr *m = &s->rxq->mm[i].msg_hdr;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS || c->cmsg_len < CMSG_LEN(sizeof(struct timespec)))
      continue;
    struct timespec t;
    memcpy(&t, CMSG_DATA(c), sizeof t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
  }
  return 0;
}

uint64_t net_stamp_now(uint64_t at_ns, uint64_t now) {
  if (!at_ns) return 0;
  uint64_t wall = sys_wall_ns(), age = at_ns < wall ? wall - at_ns : 0;
  return age < now ? now - age : 0;
}

int net_sock_gro(struct net_sock *s, int on) {
  if (s->gro < 0 || s->gro == on || !s->wire->set_gro) return 0;
  s->wire->set_gro(s, on);
  return s->gro == on;
}

void net_sock_close(struct net_sock *s) {
  net_ring_close(s);
  if (s->fd >= 0 && s->wire && s->wire->close) s->wire->close(s);
  else if (s->fd >= 0) close(s->fd);
  s->fd = -1;
  free(s->rxmem);
  s->rxmem = NULL;
  free(s->rxq);
  s->rxq = NULL;
}

uint32_t net_sock_packet_max(const struct net_sock *s) {
  uint32_t mtu = s->ifc.mtu ? s->ifc.mtu : 1500;
  uint32_t m = mtu - s->wire->overhead;
  return m > NET_HDR_LEN + NET_BODY_MAX ? NET_HDR_LEN + NET_BODY_MAX : m;
}

#define SOCK_BUF (4 << 20)

void net_sock_buffers(int fd) {
  int buf = SOCK_BUF;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf) < 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof buf);
  if (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf) < 0)
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &buf, sizeof buf);
}

uint32_t net_sock_rcvbuf(const struct net_sock *s) {
  if (s->wire->rcvbuf) return s->wire->rcvbuf(s);
  if (s->ring) return net_ring_bytes(s);
  int v = 0;
  socklen_t l = sizeof v;
  if (getsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &v, &l) < 0 || v <= 0) return 0;
  return (uint32_t)v;
}

uint32_t net_sock_queued(const struct net_sock *s) {
  if (s->wire->queued) return s->wire->queued(s);
  int v = 0;
  if (s->fd < 0 || ioctl(s->fd, SIOCOUTQ, &v) < 0 || v <= 0) return 0;
  return (uint32_t)v;
}

void net_sock_drop_errors(struct net_sock *s) {
  char data[256], ctl[256];
  for (int i = 0; i < 64; i++) {
    struct iovec iov = {data, sizeof data};
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof ctl};
    if (recvmsg(s->fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) break;
  }
}

void net_sock_send_failed(struct net_sock *s, int r) {
  if (r != -EAGAIN && r != -ENOBUFS && r != -EPERM && r != -EOPNOTSUPP) net_sock_drop_errors(s);
}

int net_sock_recv_batch(struct net_sock *s, int max) {
  struct net_rxq *q = s->rxq;
  if (max > NET_RX_BATCH) max = NET_RX_BATCH;
  /* The kernel writes back these three of each message it filled. */
  for (int i = 0; i < q->dirty; i++) {
    struct msghdr *m = &q->mm[i].msg_hdr;
    m->msg_namelen = sizeof q->from[i];
    m->msg_controllen = q->ctl_len;
    m->msg_flags = 0;
  }
  /* After a call that found nothing, ask for one: recvmmsg goes on past a
   * first datagram until one is missing, and a lone packet (a small
   * message) would pay that second look on its way in (8 B over UDP, veth:
   * 2.34 -> 2.27 us half round trip). A batch follows one that came. */
  if (q->idle) max = 1;
  if (s->gro == 1 && max > s->gro_batch) max = s->gro_batch;
  int n = recvmmsg(s->fd, q->mm, (unsigned)max, MSG_DONTWAIT, NULL);
  if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) net_sock_drop_errors(s);
  q->idle = n <= 0;
  q->full = n == max && max > 1; /* not the one asked for after an idle look: a lone packet */
  q->dirty = n > 0 ? n : 1;
  return n < 0 ? 0 : n;
}
