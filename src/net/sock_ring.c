/* SPDX-License-Identifier: MIT */
/*
 * The raw wire's receive ring (sock.h): a TPACKET_V2 ring that the kernel
 * and this process share (PACKET_RX_RING, mmap). The kernel writes each
 * frame of ours into the next slot and flips its status word to USER; a
 * receive is a look at that word, with no system call, and the frame is
 * read where it lies. The slots handed out by one receive go back to the
 * kernel at the next (the contract of every wire: a packet is valid until
 * the next recv).
 *
 * TPACKET_V2, not V3: a V3 block is handed over when full or when its
 * timer (a millisecond at least) fires, and an 8-byte ping-pong cannot wait
 * for either.
 */
#include <errno.h>
#include <linux/if_packet.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "net/sock.h"

#define RING_BLOCK (64u << 10)
/* Where a datagram socket's frame begins in its slot: the header, the
 * source address, and 16 bytes the kernel keeps for a link header. */
#define RING_NET_OFF (TPACKET_ALIGN(TPACKET2_HDRLEN) + 16)

static struct tpacket2_hdr *slot(const struct net_sock *s, uint32_t i) {
  uint32_t per = RING_BLOCK / s->ring_frame;
  return (struct tpacket2_hdr *)(s->ring + (size_t)(i / per) * RING_BLOCK + (size_t)(i % per) * s->ring_frame);
}

int net_ring_open(struct net_sock *s, uint64_t bytes) {
  uint32_t mtu = s->ifc.mtu ? s->ifc.mtu : 1500;
  uint32_t frame = TPACKET_ALIGN(RING_NET_OFF + mtu);
  if (bytes == 0 || frame > RING_BLOCK / 2) return 0; /* none: recvmmsg */
  uint32_t blocks = (uint32_t)(bytes / RING_BLOCK);
  if (blocks < 2) blocks = 2;
  int v = TPACKET_V2;
  if (setsockopt(s->fd, SOL_PACKET, PACKET_VERSION, &v, sizeof v) < 0) return -errno;
  struct tpacket_req req = {.tp_block_size = RING_BLOCK,
                            .tp_block_nr = blocks,
                            .tp_frame_size = frame,
                            .tp_frame_nr = blocks * (RING_BLOCK / frame)};
  if (setsockopt(s->fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof req) < 0) return -errno;
  size_t len = (size_t)blocks * RING_BLOCK;
  void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, s->fd, 0);
  if (m == MAP_FAILED) return -errno;
  s->ring = m;
  s->ring_len = len;
  s->ring_frame = frame;
  s->ring_nr = req.tp_frame_nr;
  s->ring_head = s->ring_held = 0;
  return 0;
}

void net_ring_close(struct net_sock *s) {
  if (s->ring) munmap(s->ring, s->ring_len);
  s->ring = NULL;
}

uint32_t net_ring_bytes(const struct net_sock *s) { return s->ring_nr * (s->ring_frame - RING_NET_OFF); }

int net_ring_recv(struct net_sock *s, struct net_rx *rx, int max) {
  /* The last receive's slots back to the kernel, oldest first. */
  for (uint32_t i = s->ring_held; i > 0; i--)
    __atomic_store_n(&slot(s, (s->ring_head + s->ring_nr - i) % s->ring_nr)->tp_status, TP_STATUS_KERNEL,
                     __ATOMIC_RELEASE);
  s->ring_held = 0;
  int k = 0;
  while (k < max) {
    struct tpacket2_hdr *h = slot(s, s->ring_head);
    if (!(__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) & TP_STATUS_USER)) break;
    s->ring_head = (s->ring_head + 1) % s->ring_nr;
    s->ring_held++;
    const struct sockaddr_ll *sll = (const void *)((uint8_t *)h + TPACKET_ALIGN(sizeof *h));
    /* Cut short (larger than a slot: the MTU grew) or not for us: dropped. */
    if (h->tp_snaplen < h->tp_len || h->tp_net + h->tp_snaplen > s->ring_frame) continue;
    if (sll->sll_pkttype == PACKET_OUTGOING || sll->sll_halen != 6) continue;
    uint64_t nic = 0;
    for (int b = 0; b < 6; b++) nic = nic << 8 | sll->sll_addr[b];
    rx[k++] = (struct net_rx){.buf = (uint8_t *)h + h->tp_net,
                              .len = h->tp_snaplen,
                              .from = {.nic = nic},
                              .at_ns = (uint64_t)h->tp_sec * 1000000000ull + h->tp_nsec}; /* CLOCK_REALTIME */
  }
  return k;
}
