/* SPDX-License-Identifier: MIT */
/*
 * What a connection lends the bulk engines: a transport that has shared
 * memory with its peer (shm: a link, shm/link.h) fills one of these
 * per connection and hands it on as an opaque resource (the lane its
 * records come on, and transport op `conn` for our sends). The engines see
 * this and never the transport's own state.
 *
 * The shared formats below are the engines' own: the transport only makes
 * room for them in the memory both sides map, one per direction.
 */
#ifndef FMX_BULK_CONN_H
#define FMX_BULK_CONN_H

#include <stdint.h>

#include "region/pool.h"
#include "region/region.h"

struct bulk_xfer;

/* One ring-engine slot's header in shared memory; its data is `len` bytes
 * in buffer `buf` of the sender's pool. `full` is the handover word: the
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
   * len}, region/region.h), len 0 when none: the sender may map it and
   * copy its stripes with plain stores. */
  struct proto_seg xmem[2];
  struct proto_seg segs[COOP_MAX_SEGS];
};
_Static_assert(sizeof(struct coop_area) == 96 + 16 * COOP_MAX_SEGS, "coop area layout");

/* What a transport that moves a rendezvous's bytes itself lends (net: the
 * pull protocol, docs/protocol.md): the engine `pull` (pull.c) drives
 * these, each with the lender's arg. Every call runs under the endpoint's
 * lock.
 *   recv_start     the receiver's transfer x begins (its CTS not sent
 *                  yet): 0, or -errno
 *   recv_progress  BULK_MORE, BULK_DONE once x->done == x->want, or
 *                  -errno; the lender writes what arrives into x->segs and
 *                  advances x->done as it does
 *   send_start     the sender's transfer x begins (its CTS came): the
 *                  lender answers the peer's pulls from x->segs, up to
 *                  x->want bytes, until end: 0, or -errno
 *   end            x is over (completed, failed): the lender forgets it
 *                  and touches its buffers no more (a call for an x it does
 *                  not hold is harmless) */
struct bulk_pull_ops {
  int (*recv_start)(void *arg, struct bulk_xfer *x);
  int (*recv_progress)(void *arg, struct bulk_xfer *x);
  int (*send_start)(void *arg, struct bulk_xfer *x);
  void (*end)(void *arg, struct bulk_xfer *x);
};

/* A direction's slots, as one side sees them. */
struct bulk_slots {
  struct bulk_slot *hdr;
  uint64_t n;
  uint64_t next; /* next slot to fill (sender) or drain (receiver) */
};

struct bulk_conn {
  /* Pools: ours, whose chunks the ring engine fills (with the partner's
   * count of buffers held, [POOL_CLASSES]), and the peer's, mapped here. */
  struct buf_pool *pool;
  uint32_t *pool_held;
  const struct pool_view *peer_pool;
  /* ring engine */
  struct bulk_slots tx_slots, rx_slots;
  uint64_t tx_owner; /* id of the send filling tx_slots, 0 if none */
  int rx_busy;       /* someone (application or offload channel) is copying out of rx_slots */
  int tx_busy;       /* someone is filling tx_slots */
  /* coop engine: the sender uses tx, the receiver rx */
  struct coop_area *tx_coop, *rx_coop;
  uint32_t coop_gen; /* receiver: last generation used */
  /* vmsplice engine: one pipe per direction, -1 when the connection has
   * none. */
  int pipe_tx, pipe_rx;   /* write end of our direction, read end of the peer's */
  uint64_t pipe_tx_owner; /* id of the send pushing into pipe_tx, 0 if none */
  uint64_t pipe_rx_owner; /* id of the receive reading pipe_rx, 0 if none */
  int pipe_rx_broken;     /* a receive failed mid-transfer: stale bytes, never again */
  /* The pull protocol, where the transport moves the bytes (NULL: it
   * does not). */
  const struct bulk_pull_ops *pull;
  void *pull_arg;
  /* Wake the peer, who may sleep waiting for a slot, a stripe or pipe
   * room: the transport's, with its argument. */
  void (*wake)(void *arg);
  void *wake_arg;
};

/* An engine wrote what the peer may wait for (a slot, a stripe, pipe
 * room): wake it if it sleeps. */
static inline void bulk_conn_wake(const struct bulk_conn *c) {
  if (c->wake) c->wake(c->wake_arg);
}

#endif
