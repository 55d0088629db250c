/* SPDX-License-Identifier: MIT */
/*
 * The raw wire: our packets as the payload of Ethernet frames of EtherType
 * 0x86DF, through an AF_PACKET datagram socket bound to the interface (the
 * kernel writes the Ethernet header: destination = the partner's NIC id).
 * Every endpoint of the host has such a socket; a classic BPF filter
 * attached to it keeps only our magic and our endpoint id, so the kernel
 * drops the others' frames before they are queued to us. Frames we send
 * ourselves are not looped back (PACKET_IGNORE_OUTGOING, and the packet
 * type checked).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "net/sock.h"
#include "net/wire.h"

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

static void mac_bytes(uint64_t nic, unsigned char *b) {
  for (int i = 0; i < 6; i++) b[i] = (unsigned char)(nic >> (40 - 8 * i));
}

int net_raw_permitted(void) {
  int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(NET_ETHERTYPE));
  if (fd < 0) return 0;
  close(fd);
  return 1;
}

static int raw_open(struct net_sock *s, const struct net_iface *ifc, uint32_t eid) {
  s->fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(NET_ETHERTYPE));
  if (s->fd < 0) return -errno;
  /* Offsets are from our header (a datagram socket sees no Ethernet one). */
  struct sock_filter code[] = {
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NET_MAGIC, 0, 4),
      BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 4),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, eid, 1, 0),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, NET_EP_ANY, 0, 1), /* a HOST_QUERY, for anyone */
      BPF_STMT(BPF_RET | BPF_K, 0xffff),
      BPF_STMT(BPF_RET | BPF_K, 0),
  };
  struct sock_fprog prog = {.len = sizeof code / sizeof code[0], .filter = code};
  if (setsockopt(s->fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof prog) < 0) return -errno;
  int one = 1;
  setsockopt(s->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof one);
  net_sock_buffers(s->fd);
  /* No ring (the kernel would not give one that large): recvmmsg. */
  int r = net_ring_open(s, fmx_cfg.net_ring);
  if (r < 0)
    log_info("FMX-NET-RING", "endpoint %u: no receive ring of %llu bytes (%s): frames read with recvmmsg", eid,
             (unsigned long long)fmx_cfg.net_ring, strerror(-r));
  struct sockaddr_ll sa = {.sll_family = AF_PACKET, .sll_protocol = htons(NET_ETHERTYPE), .sll_ifindex = ifc->index};
  if (bind(s->fd, (struct sockaddr *)&sa, sizeof sa) < 0) return -errno;
  /* Frames queued between socket() and the filter's attach: drop them. */
  unsigned char junk[64];
  while (recv(s->fd, junk, sizeof junk, MSG_DONTWAIT) >= 0) {
  }
  return 0;
}

static int raw_send(struct net_sock *s, const struct net_addr *to, uint32_t eid, const struct iovec *iov, int iovcnt) {
  (void)eid; /* in our header */
  struct sockaddr_ll sa = {.sll_family = AF_PACKET,
                           .sll_protocol = htons(NET_ETHERTYPE),
                           .sll_ifindex = s->ifc.index,
                           .sll_halen = 6};
  mac_bytes(to->nic, sa.sll_addr);
  struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof sa, .msg_iov = (struct iovec *)iov, .msg_iovlen = iovcnt};
  if (sendmsg(s->fd, &m, MSG_DONTWAIT) >= 0) return 0;
  return errno == EAGAIN || errno == ENOBUFS ? -EAGAIN : -errno;
}

static int raw_recv(struct net_sock *s, struct net_rx *rx, int max) {
  if (s->ring) return net_ring_recv(s, rx, max);
  int n = net_sock_recv_batch(s, max);
  int k = 0;
  for (int i = 0; i < n; i++) {
    const struct sockaddr_ll *from = &s->rxq->from[i].ll;
    if (from->sll_pkttype == PACKET_OUTGOING || from->sll_halen != 6) continue;
    uint64_t nic = 0;
    for (int b = 0; b < 6; b++) nic = nic << 8 | from->sll_addr[b];
    rx[k++] = (struct net_rx){.buf = s->rxmem + (size_t)i * s->rx_buf,
                              .len = s->rxq->mm[i].msg_len,
                              .from = {.nic = nic},
                              .at_ns = net_sock_stamp(s, i)};
  }
  return k;
}

const struct net_wire net_wire_raw = {
    .name = "raw",
    .overhead = 0,
    .pull_frames = 8,
    .open = raw_open,
    .send = raw_send,
    .recv = raw_recv,
};
