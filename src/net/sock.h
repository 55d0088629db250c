/* SPDX-License-Identifier: MIT */
/*
 * The wires a packet travels on, behind one ops table: raw Ethernet frames
 * (sock_raw.c, EtherType 0x86DF through an AF_PACKET socket) and UDP
 * datagrams (sock_udp.c). A wire sends one packet (gathered from an iovec)
 * to an address and receives packets in batches, without blocking; the
 * protocol engine (net.c) is the same over both.
 */
#ifndef FMX_NET_SOCK_H
#define FMX_NET_SOCK_H

#include <linux/if_packet.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "net/iface.h"

/* Where a packet goes or came from: the board (MAC) and, on the UDP wire,
 * its IPv4 address and port (network order; ip 0: broadcast on the
 * interface). */
struct net_addr {
  uint64_t nic;
  uint32_t ip;
  uint16_t port;
};

#define NET_RX_BATCH 32
#define NET_RX_BUF 9216 /* a jumbo frame's payload, rounded */

struct net_rx {
  uint8_t *buf;
  size_t len;
  uint32_t seg; /* several packets of seg bytes each, the last shorter (UDP GRO); 0: one packet */
  struct net_addr from;
  uint64_t at_ns; /* when it reached our socket (sys_wall_ns's clock); 0: not known (net_sock_stamps) */
};

/* recvmmsg's arrays, kept from one call to the next: a look that finds
 * nothing costs the system call alone, not 32 headers written again. */
struct net_rxq {
  struct mmsghdr mm[NET_RX_BATCH];
  struct iovec iov[NET_RX_BATCH];
  union {
    struct sockaddr_ll ll;
    struct sockaddr_in in;
  } from[NET_RX_BATCH];
  union {
    char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(struct timespec))]; /* UDP_GRO, SCM_TIMESTAMPNS */
    struct cmsghdr align;
  } ctl[NET_RX_BATCH];
  unsigned ctl_len; /* bytes of ctl[i] */
  int dirty;        /* entries the last call may have written */
  int idle;         /* the last call found nothing */
  int full;         /* the last call took all it asked for: more may wait */
};

struct net_sock;
struct net_wire {
  const char *name;
  /* Bytes of a packet's MTU the wire takes itself (UDP: IP and UDP headers). */
  uint32_t overhead;
  /* Packets of a message sent eagerly that cost what pulling it costs
   * more (its two extra one-way trips), measured on veth at MTU 1500 and
   * 9000 alike (docs/protocol.md): the default FMX_NET_PULL_THRESHOLD
   * where fragments leave one by one (with GSO trains a train's worth:
   * net_eager_bytes). */
  uint32_t pull_frames;
  /* Open for endpoint eid on the interface: 0, or -errno. */
  int (*open)(struct net_sock *s, const struct net_iface *ifc, uint32_t eid);
  /* One packet to endpoint eid at `to`: 0, -EAGAIN (the socket is full), or
   * -errno. */
  int (*send)(struct net_sock *s, const struct net_addr *to, uint32_t eid, const struct iovec *iov, int iovcnt);
  /* Several packets at once, gathered from iov: every one seg bytes but
   * the last (UDP GSO): 0, or -errno (-EOPNOTSUPP: the kernel refused
   * GSO, send one at a time from now on). NULL: the wire sends one at a
   * time. */
  int (*send_segs)(struct net_sock *s, const struct net_addr *to, uint32_t eid, const struct iovec *iov, int iovcnt,
                   uint16_t seg);
  /* Up to max datagrams that arrived: their count, 0 when none. */
  int (*recv)(struct net_sock *s, struct net_rx *rx, int max);
  /* Take GSO trains whole (UDP_GRO) or not; NULL: the wire has no such
   * thing. Only where s->gro >= 0 (the kernel took it at open). */
  void (*set_gro)(struct net_sock *s, int on);
  /* The bytes the receive side may hold; NULL: the socket's SO_RCVBUF. */
  uint32_t (*rcvbuf)(const struct net_sock *s);
  /* The bytes sent and not yet on the line; NULL: the socket's SIOCOUTQ. */
  uint32_t (*queued)(const struct net_sock *s);
  /* Let go of s->fd; NULL: close it (a wire whose sockets share one
   * descriptor keeps it). */
  void (*close)(struct net_sock *s);
};

struct net_sock {
  const struct net_wire *wire;
  int fd;
  struct net_iface ifc;
  uint32_t eid;
  uint16_t port_base;
  int gso;        /* UDP: the kernel takes GSO sends */
  int gro;        /* UDP: receives take GSO trains whole now (1) or not (0); -1: the kernel will not */
  int gro_batch;  /* trains one receive takes at most while gro is 1 (a quarter of L2) */
  int stamps;     /* the kernel stamps what we receive with its arrival (net_sock_stamps); -1: it cannot */
  uint32_t rx_buf; /* bytes of each receive buffer (NET_RX_BUF; 64 KiB with GRO) */
  uint8_t *rxmem;  /* NET_RX_BATCH buffers of rx_buf */
  struct net_rxq *rxq;
  /* Raw wire: the receive ring the kernel writes into (sock_ring.c);
   * NULL: none, packets read with recvmmsg into rxmem. */
  uint8_t *ring;
  size_t ring_len;
  uint32_t ring_frame, ring_nr; /* bytes of a slot, slots */
  uint32_t ring_head, ring_held; /* the next slot to look at; slots before it not given back yet */
};

extern const struct net_wire net_wire_raw, net_wire_udp;

/* Open s on the wire FMX_NET_WIRE names (auto: raw when a packet socket
 * may be opened, else UDP): 0, or -errno. */
int net_sock_open(struct net_sock *s, const struct net_iface *ifc, uint32_t eid);
/* Every endpoint opened from now on takes wire w, whatever FMX_NET_WIRE
 * says (the simulator's, tests/sim); NULL: FMX_NET_WIRE again. */
void net_wire_force(const struct net_wire *w);
/* Open s on wire w: 0, or -errno. */
int net_sock_open_wire(struct net_sock *s, const struct net_iface *ifc, uint32_t eid, const struct net_wire *w);
void net_sock_close(struct net_sock *s);
/* GSO trains taken whole (UDP_GRO) from now on, or not, where the wire
 * has such a switch and the kernel took it: 1 when this switched it. */
int net_sock_gro(struct net_sock *s, int on);
/* Whether this process may open the raw wire (CAP_NET_RAW in its network
 * namespace). */
int net_raw_permitted(void);
/* Shared by the wires: large socket buffers (forced where the process may);
 * and one batch of recvmmsg into s->rxq, message i into rxmem + i * rx_buf
 * (its length in rxq->mm[i].msg_len, its source in rxq->from[i], its
 * control messages in rxq->ctl[i]): the count, 0 when none. */
void net_sock_buffers(int fd);
/* The bytes the socket may hold received (what the kernel granted). */
uint32_t net_sock_rcvbuf(const struct net_sock *s);
/* Stamp what comes with the time it reached the socket (net_rx.at_ns), or
 * stop: a receive ring's slots have the stamp anyway; elsewhere
 * SO_TIMESTAMPNS, which costs each packet a clock read and a control
 * message. 1 when the socket's stamping changed. */
int net_sock_stamps(struct net_sock *s, int on);
/* Entry i of the last receive's arrival (0: no stamp). */
uint64_t net_sock_stamp(const struct net_sock *s, int i);
/* A stamp (net_rx.at_ns) on sys_now_ns's clock, now being that clock's
 * time: the stamp's clock (CLOCK_REALTIME) may be stepped, so only its age
 * is read from it, at once. One from the future came now; 0 for none, and
 * for one older than now's clock. */
uint64_t net_stamp_now(uint64_t at_ns, uint64_t now);
/* The last receive took all it could (a batch, or a GRO batch of trains):
 * more may wait in the socket. */
static inline int net_sock_more(const struct net_sock *s) { return s->rxq && s->rxq->full; }
/* The bytes handed to the socket that have not left it for the line yet
 * (0 where the kernel does not say). */
uint32_t net_sock_queued(const struct net_sock *s);
int net_sock_recv_batch(struct net_sock *s, int max);
/* Empty the socket's error queue (IP_RECVERR: an ICMP error for a
 * datagram of ours, a peer's port closed), a bounded number: its entries
 * are charged to the receive buffer, and while one is there the socket
 * polls as ready (a waiter on it would spin). */
void net_sock_drop_errors(struct net_sock *s);
/* A send on s failed with r: when the error is one an ICMP reported (not
 * a full buffer or queue, not a firewall's EPERM, not GSO refused), the
 * send took it from the socket and its entry stays queued: empty it. */
void net_sock_send_failed(struct net_sock *s, int r);
/* The raw wire's receive ring of about `bytes` (0: none; sock_ring.c):
 * 0, or -errno. */
int net_ring_open(struct net_sock *s, uint64_t bytes);
void net_ring_close(struct net_sock *s);
/* Up to max packets the kernel wrote into the ring, valid until the next
 * call: their count, 0 when none. */
int net_ring_recv(struct net_sock *s, struct net_rx *rx, int max);
/* The packet bytes the ring holds. */
uint32_t net_ring_bytes(const struct net_sock *s);
/* The largest packet (header + body) the wire carries on this interface. */
uint32_t net_sock_packet_max(const struct net_sock *s);

#endif
