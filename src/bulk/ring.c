/* SPDX-License-Identifier: MIT */
/* ring: pipelined two-copy through the channel's bulk slots. The sender
 * copies chunks into buffers of its pool and names them in free slots
 * while the receiver copies full slots out and gives their buffers back;
 * chunks are sized from the L2 so both copies stay in cache (MPICH Nemesis
 * double buffering). Needs no rights over the peer: the fallback when CMA is
 * refused. */
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "bulk/conn.h"

static int ring_probe(char *reason, size_t len) {
  strncpy(reason, "available", len);
  return 0;
}

static int ring_usable(struct fmx_endpoint *ep, struct partner *p, const struct bulk_conn *c) { return c != NULL; }

/* Copy the full slots at the head that belong to r (id me) into it, from
 * *done on; a slot of another transfer stops us unless drop(ep, its id)
 * says its owner is gone (only the application can tell; a channel passes
 * no drop and waits). The caller holds the channel's rx_busy. */
static int consume_held(struct fmx_endpoint *ep, struct fmx_request *r, int (*drop)(struct fmx_endpoint *, uint64_t),
                        uint64_t *done, uint64_t *moved) {
  struct bulk_slots *s = &r->conn->rx_slots;
  const struct pool_view *pool = r->conn->peer_pool;
  uint64_t me = req_id(r);
  int any = 0;
  /* Out of the slot into the user's buffer: non-temporal above the
   * threshold, where the destination would not stay in cache anyway. */
  copy_fn out = bulk_copy_fn(r->want);
  for (uint64_t k = 0; k < s->n && *done < r->want; k++) {
    struct bulk_slot *h = &s->hdr[s->next % s->n];
    if (!__atomic_load_n(&h->full, __ATOMIC_ACQUIRE)) break;
    uint64_t rreq = h->rreq, off = h->off, len = h->len, buf = h->buf;
    /* A peer may write anything in shared memory: check before copying. */
    const uint8_t *data = pool_view_buf(pool, buf, len);
    if (!data) return -FMX_MESSAGE_ABORTED;
    if (rreq != me) {
      if (!drop || !drop(ep, rreq)) break;
    } else {
      if (off != *done || len > r->want - *done) return -FMX_MESSAGE_ABORTED;
      req_copy(r, off, (void *)data, len, 1, out);
      *done += len;
      *moved += len;
    }
    pool_view_release(pool, buf);
    __atomic_store_n(&h->full, 0, __ATOMIC_RELEASE);
    s->next++;
    any = 1;
  }
  if (any) bulk_conn_wake(r->conn);
  return *done == r->want ? BULK_DONE : BULK_MORE;
}

/* Whoever holds the channel's rx_busy copies out (the application or an
 * offload channel); the other tries again later. */
static int consume(struct fmx_endpoint *ep, struct fmx_request *r, int (*drop)(struct fmx_endpoint *, uint64_t),
                   uint64_t *done, uint64_t *moved) {
  if (__atomic_exchange_n(&r->conn->rx_busy, 1, __ATOMIC_ACQUIRE)) return BULK_MORE;
  int rc = consume_held(ep, r, drop, done, moved);
  __atomic_store_n(&r->conn->rx_busy, 0, __ATOMIC_RELEASE);
  return rc;
}

/* Another transfer's slot: leave it to its owner unless that owner is gone
 * (completed with an error), then drop it so the pipe flows. */
static int owner_gone(struct fmx_endpoint *ep, uint64_t rreq) {
  struct fmx_request *o = req_lookup(ep, rreq, REQ_RECV);
  return !(o && o->engine == &bulk_ring && o->state == REQ_MATCHED);
}

static int ring_recv_progress(struct fmx_endpoint *ep, struct fmx_request *r) {
  uint64_t moved = 0;
  int rc = consume(ep, r, owner_gone, &r->done, &moved);
  ep->counters[CNT_BULK_RING_BYTES] += moved;
  return rc;
}

/* The same, run by an offload channel. */
static int ring_offload_step(struct fmx_request *r, uint64_t *done, uint64_t *moved) {
  return consume(NULL, r, NULL, done, moved);
}

/* Fill the free slots with the send sr's bytes from *done on, one transfer
 * per channel direction at a time (tx_owner). The caller holds tx_busy. */
static int fill_held(struct fmx_request *sr, uint64_t *done, uint64_t *moved) {
  struct bulk_conn *c = sr->conn; /* not NULL: fill() checked */
  uint64_t me = req_id(sr);
  if (c->tx_owner && c->tx_owner != me) return BULK_MORE; /* wait our turn */
  c->tx_owner = me;
  struct bulk_slots *s = &c->tx_slots;
  uint64_t chunk = pool_class_size(c->pool, POOL_CHUNK);
  for (uint64_t k = 0; k < s->n && *done < sr->want; k++) {
    struct bulk_slot *h = &s->hdr[s->next % s->n];
    if (__atomic_load_n(&h->full, __ATOMIC_ACQUIRE)) break;
    int64_t b = pool_take_chunk(c->pool, &c->pool_held[POOL_CHUNK]);
    if (b < 0) break; /* the pool is lent out: on a later pass */
    /* Progressive: the first slot carries one page and each next one twice
     * as much, up to the chunk size, so the receiver starts copying out at
     * once instead of after a whole chunk (DESIGN.md section 6). */
    uint64_t len = *done < 4096 ? 4096 : *done;
    if (len > chunk) len = chunk;
    if (len > sr->want - *done) len = sr->want - *done;
    /* Regular stores: the chunk must stay in cache for the receiver. */
    req_copy(sr, *done, pool_buf(c->pool, (uint64_t)b), len, 0, NULL);
    h->rreq = sr->rreq;
    h->off = *done;
    h->len = len;
    h->buf = (uint64_t)b;
    __atomic_store_n(&h->full, 1, __ATOMIC_RELEASE);
    s->next++;
    *done += len;
    *moved += len;
  }
  if (*moved) bulk_conn_wake(c);
  if (*done == sr->want) {
    c->tx_owner = 0;
    return BULK_DONE;
  }
  return BULK_MORE;
}

/* Whoever holds tx_busy fills (the application, or an offload channel for
 * a sender that computes: this is also the engine's offload_send_step). */
static int fill(struct fmx_request *sr, uint64_t *done, uint64_t *moved) {
  struct bulk_conn *c = sr->conn;
  if (!c) return -FMX_MESSAGE_ABORTED; /* asked for over a connection that lends no slots */
  if (__atomic_exchange_n(&c->tx_busy, 1, __ATOMIC_ACQUIRE)) return BULK_MORE;
  int rc = fill_held(sr, done, moved);
  __atomic_store_n(&c->tx_busy, 0, __ATOMIC_RELEASE);
  return rc;
}

static int ring_send_progress(struct fmx_endpoint *ep, struct fmx_request *sr) {
  uint64_t moved = 0;
  return fill(sr, &sr->done, &moved);
}

const struct fmx_bulk_engine bulk_ring = {
    .name = "ring",
    .cost_cfg = &fmx_cfg.cost_ring,
    .cost_var = "FMX_COST_RING",
    .probe = ring_probe,
    .usable = ring_usable,
    .needs_cts = 1,
    .cnt_msgs = CNT_BULK_RING,
    .recv_progress = ring_recv_progress,
    .send_progress = ring_send_progress,
    .offload_step = ring_offload_step,
    .offload_send_step = fill,
};
