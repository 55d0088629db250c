/* SPDX-License-Identifier: MIT */
/*
 * A channel: the shared memory between two endpoints, one memfd created by the connecting side and passed over the
 * handshake socket. Layout (offsets, never pointers):
 *
 *   [chan_hdr + both rings' headers][cells 0][cells 1][slots 0][slots 1][coop 0][coop 1]
 *
 * Direction 0 is creator -> acceptor, direction 1 the reverse; each
 * direction has a ring, the ring engine's slot headers (their data lies in
 * the sender's pool, shm/pool.h) and the coop engine's transfer descriptor
 * (bulk/coop.c). Nothing is page-aligned but the start: a channel costs
 * the pages its rings touch, and the coop pages only once used.
 */
#ifndef FMX_SHM_CHANNEL_H
#define FMX_SHM_CHANNEL_H

#include <stddef.h>
#include <stdint.h>

#include "transport/record.h"
#include "shm/pool.h"
#include "shm/eager_ring.h"

#define CHAN_MAGIC 0x464d5843u /* "FMXC" */
#define CHAN_VERSION 5 /* 2: coop areas, 3: their xmem region, 4: abort words, 5: slot data in the pool, ring headers in chan_hdr */

struct chan_hdr {
  uint32_t magic;
  uint32_t version;
  uint64_t size;
  uint64_t ring_off[2];
  uint64_t ring_bytes;
  uint64_t slots_off[2];
  uint64_t nslots;
  uint64_t coop_off[2];
  /* Per direction, written once by its sender: nonzero (an fmx_return_t)
   * when it gave up on the connection (it ran out of memory for a record
   * it must keep): the receiver drains the ring, then fails the partner
   * with it. Its own line: read by every idle poll, written at most once. */
  _Alignas(64) uint32_t abort[2];
  /* Each direction's ring header (cells at ring_off). */
  struct shm_ring_shared ring[2];
};

/* One bulk slot's header in shared memory; its data is `len` bytes in
 * buffer `buf` of the sender's pool. `full` is the handover word: the
 * sender sets it (release) after the data, the receiver clears it after it
 * gave the buffer back. */
struct bulk_slot {
  uint32_t full;
  uint32_t pad;
  uint64_t rreq;
  uint64_t off;
  uint64_t len;
  uint64_t buf;
  uint8_t pad2[24];
};
_Static_assert(sizeof(struct bulk_slot) == 64, "bulk slot header layout");

/* The coop engine's transfer descriptor, one per direction: the receiver
 * publishes its destination segments here, then receiver and sender take
 * stripes by advancing `stripe` with compare-and-swap. `stripe` holds the
 * transfer's generation in its high 24 bits, so a late taker of an old
 * transfer can never take a stripe of the next one. Written by the
 * receiver (everything but stripe/done/error before `stripe` is released),
 * read by the sender, which checks every field it uses. */
#define COOP_MAX_SEGS 256
#define COOP_GEN_SHIFT 40
struct coop_area {
  uint64_t stripe;     /* gen << COOP_GEN_SHIFT | next stripe index */
  uint64_t done;       /* bytes copied, by both sides */
  uint64_t error;      /* first fmx_return_t a taker hit, 0 if none */
  uint64_t sreq;       /* the sender's request id */
  uint64_t total;      /* bytes to move */
  uint64_t stripe_max; /* largest stripe, bytes (a multiple of 4096) */
  uint32_t nseg;       /* receiver's segments below */
  uint32_t busy;       /* receiver's own flag: the area holds a transfer */
  uint8_t pad[8];
  /* The receiver's fmx_mem_alloc region holding segs ({fd, inode}, {base,
   * len}, shm/xmem.h), len 0 when none: the sender may map it and copy its
   * stripes with plain stores. */
  struct proto_seg xmem[2];
  struct proto_seg segs[COOP_MAX_SEGS];
};
_Static_assert(sizeof(struct coop_area) == 96 + 16 * COOP_MAX_SEGS, "coop area layout");

struct bulk_slots {
  struct bulk_slot *hdr;
  uint64_t n;
  uint64_t next; /* next slot to fill (sender) or drain (receiver) */
};

struct channel {
  void *base;
  size_t size;
  /* The pools its records' payloads and ring-engine chunks lie in: ours
   * (with the partner's count of buffers lent), the peer's. Set when the
   * partner adopts it (shm/hello.c). */
  struct shm_pool *pool;
  uint32_t *pool_held; /* [POOL_CLASSES] */
  const struct shm_pool_view *peer_pool;
  /* Our records on tx that name a buffer of our pool, in push order: each
   * buffer goes back to the pool once the tail is past its record. */
  struct {
    uint64_t *pos;
    uint32_t *buf;
    uint32_t head, n, cap;
  } lent;
  struct shm_ring tx, rx;
  struct bulk_slots tx_slots, rx_slots;
  struct coop_area *tx_coop, *rx_coop; /* sender side uses tx, receiver rx */
  uint32_t *tx_abort, *rx_abort;       /* chan_hdr.abort of our direction and of the peer's */
  uint32_t coop_gen;                   /* receiver: last generation used */
  uint64_t rx_freed; /* cells consumed since we last woke the sender */
  uint64_t tx_owner; /* ring engine: id of the send filling tx_slots, 0 if none */
  int rx_busy;       /* ring engine: someone (application or offload channel) is copying out of rx_slots */
  int tx_busy;       /* ring engine: someone is filling tx_slots */
  /* vmsplice engine: one pipe per direction, created by the connector and
   * passed in the hello (-1 when the connection has none). */
  int pipe_tx, pipe_rx;    /* write end of our direction, read end of the peer's */
  uint64_t pipe_tx_owner;  /* id of the send pushing into pipe_tx, 0 if none */
  uint64_t pipe_rx_owner;  /* id of the receive reading pipe_rx, 0 if none */
  int pipe_rx_broken;      /* a receive failed mid-transfer: stale bytes, never again */
  int ours;                /* we created it (we connected) */
};

/* Create a channel memfd with the current config; returns the channel and
 * stores the fd in *fd (to pass to the peer). NULL on failure. */
struct channel *chan_create(int *fd);
/* Map a channel received from a peer (we are the acceptor): the memfd must
 * be sealed against shrinking and growing; every offset is validated
 * against its size. NULL on a malformed channel, *why says what. */
struct channel *chan_attach(int fd, const char **why);
void chan_destroy(struct channel *c);
/* Create the two pipes of a connection, O_NONBLOCK, sized to FMX_CHUNK_MAX
 * (or as much as the kernel grants): our ends go to c, the peer's (read end
 * of direction 0, write end of direction 1) to peer_fds. 0 or -1. */
/* Whether connections should carry the vmsplice engine's pipes. */
int chan_pipes_wanted(void);
int chan_pipes_create(struct channel *c, int peer_fds[2]);
/* Adopt the pipe ends a connector passed (we are the acceptor): checks they
 * are a read end and a write end of pipes. 0 (fds now the channel's) or -1
 * (fds left to the caller). */
int chan_pipes_attach(struct channel *c, int rx_fd, int tx_fd);

#endif
