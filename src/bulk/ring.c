/* SPDX-License-Identifier: MIT */
/* ring: pipelined two-copy through the connection's bulk slots. The sender
 * copies chunks into buffers of its pool and names them in free slots
 * while the receiver copies full slots out and gives their buffers back;
 * chunks are sized from the L2 so both copies stay in cache (MPICH Nemesis
 * double buffering). Needs no rights over the peer: the fallback when CMA is
 * refused. */
#include <errno.h>
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "bulk/conn.h"

static int ring_probe(char *reason, size_t len) {
  strncpy(reason, "available", len);
  return 0;
}

static int ring_usable(const struct bulk_peer *p, const struct bulk_conn *c) { return c != NULL; }

/* Copy the full slots at the head that belong to x into it, from *done
 * on; a slot of another transfer stops us unless `drop` and that
 * transfer's owner is gone (only the application can tell, under the
 * endpoint's lock: a channel passes no drop and waits). The caller holds
 * the connection's rx_busy. */
static int consume_held(struct bulk_xfer *x, int drop, uint64_t *done, uint64_t *moved) {
  struct bulk_slots *s = &x->conn->rx_slots;
  const struct pool_view *pool = x->conn->peer_pool;
  uint64_t me = x->id;
  int any = 0;
  /* Out of the slot into the user's buffer: non-temporal above the
   * threshold, where the destination would not stay in cache anyway. */
  copy_fn out = bulk_copy_fn(x->want);
  for (uint64_t k = 0; k < s->n && *done < x->want; k++) {
    struct bulk_slot *h = &s->hdr[s->next % s->n];
    if (!__atomic_load_n(&h->full, __ATOMIC_ACQUIRE)) break;
    uint64_t rreq = h->rreq, off = h->off, len = h->len, buf = h->buf;
    /* A peer may write anything in shared memory: check before copying. */
    const uint8_t *data = pool_view_buf(pool, buf, len);
    if (!data) return -EPROTO;
    if (rreq != me) {
      if (!drop || x->env->active(x->env, rreq, 0, &bulk_ring)) break;
    } else {
      if (off != *done || len > x->want - *done) return -EPROTO;
      copy_segs(x->segs, x->nseg, off, (void *)data, len, 1, out);
      *done += len;
      *moved += len;
    }
    pool_view_release(pool, buf);
    __atomic_store_n(&h->full, 0, __ATOMIC_RELEASE);
    s->next++;
    any = 1;
  }
  if (any) bulk_conn_wake(x->conn);
  return *done == x->want ? BULK_DONE : BULK_MORE;
}

/* Whoever holds the connection's rx_busy copies out (the application or an
 * offload channel); the other tries again later. */
static int consume(struct bulk_xfer *x, int drop, uint64_t *done, uint64_t *moved) {
  if (__atomic_exchange_n(&x->conn->rx_busy, 1, __ATOMIC_ACQUIRE)) return BULK_MORE;
  int rc = consume_held(x, drop, done, moved);
  __atomic_store_n(&x->conn->rx_busy, 0, __ATOMIC_RELEASE);
  return rc;
}

/* Under the lock: another transfer's slot is left to its owner unless that
 * owner is gone (ended with an error), then dropped so the pipe flows. */
static int ring_recv_progress(struct bulk_xfer *x) {
  uint64_t moved = 0;
  int rc = consume(x, 1, &x->done, &moved);
  x->env->counters[CNT_BULK_RING_BYTES] += moved;
  return rc;
}

/* The same, run by an offload channel. */
static int ring_offload_step(struct bulk_xfer *x, uint64_t *done, uint64_t *moved) {
  return consume(x, 0, done, moved);
}

/* Fill the free slots with the send x's bytes from *done on, one transfer
 * per connection direction at a time (tx_owner). The caller holds tx_busy. */
static int fill_held(struct bulk_xfer *x, uint64_t *done, uint64_t *moved) {
  struct bulk_conn *c = x->conn; /* not NULL: fill() checked */
  uint64_t me = x->id;
  if (c->tx_owner && c->tx_owner != me) return BULK_MORE; /* wait our turn */
  c->tx_owner = me;
  struct bulk_slots *s = &c->tx_slots;
  uint64_t chunk = pool_class_size(c->pool, POOL_CHUNK);
  for (uint64_t k = 0; k < s->n && *done < x->want; k++) {
    struct bulk_slot *h = &s->hdr[s->next % s->n];
    if (__atomic_load_n(&h->full, __ATOMIC_ACQUIRE)) break;
    int64_t b = pool_take_chunk(c->pool, &c->pool_held[POOL_CHUNK]);
    if (b < 0) break; /* the pool is lent out: on a later pass */
    /* Progressive: the first slot carries one page and each next one twice
     * as much, up to the chunk size, so the receiver starts copying out at
     * once instead of after a whole chunk (DESIGN.md section 6). */
    uint64_t len = *done < 4096 ? 4096 : *done;
    if (len > chunk) len = chunk;
    if (len > x->want - *done) len = x->want - *done;
    /* Regular stores: the chunk must stay in cache for the receiver. */
    copy_segs(x->segs, x->nseg, *done, pool_buf(c->pool, (uint64_t)b), len, 0, NULL);
    h->rreq = x->peer_id;
    h->off = *done;
    h->len = len;
    h->buf = (uint64_t)b;
    __atomic_store_n(&h->full, 1, __ATOMIC_RELEASE);
    s->next++;
    *done += len;
    *moved += len;
  }
  if (*moved) bulk_conn_wake(c);
  if (*done == x->want) {
    c->tx_owner = 0;
    return BULK_DONE;
  }
  return BULK_MORE;
}

/* Whoever holds tx_busy fills (the application, or an offload channel for
 * a sender that computes: this is also the engine's offload_send_step). */
static int fill(struct bulk_xfer *x, uint64_t *done, uint64_t *moved) {
  struct bulk_conn *c = x->conn;
  if (!c) return -EPROTO; /* asked for over a connection that lends no slots */
  if (__atomic_exchange_n(&c->tx_busy, 1, __ATOMIC_ACQUIRE)) return BULK_MORE;
  int rc = fill_held(x, done, moved);
  __atomic_store_n(&c->tx_busy, 0, __ATOMIC_RELEASE);
  return rc;
}

static int ring_send_progress(struct bulk_xfer *x) {
  uint64_t moved = 0;
  return fill(x, &x->done, &moved);
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
