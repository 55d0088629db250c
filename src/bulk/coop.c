/* SPDX-License-Identifier: MIT */
/*
 * coop: cooperative striping. The receiver publishes the transfer in the
 * connection's coop area (its destination segments, a stripe counter, a done
 * counter) and invites the sender with a CTS. Then whoever is inside fmx
 * takes the next stripe: the receiver pulls it with process_vm_readv, the
 * sender pushes it with process_vm_writev. A sender that never re-enters
 * the library leaves every stripe to the receiver, which still completes.
 *
 * Stripe schedule (Open-MX's progressively aggressive pinning): stripe 0 is
 * one page, each next one twice as large, up to FMX_CHUNK_MAX; so data
 * flows at once and the other side can join early.
 *
 * The stripe counter carries a generation: a taker checks it in the same
 * compare-and-swap that takes the stripe, so a late sender can never write
 * a stripe of the next transfer. Before a receive completes with an error
 * the receiver closes the counter and waits (bounded) for the stripes
 * already taken, so no write lands in a buffer the user got back.
 */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "platform/sys.h"
#include "bulk/conn.h"

#define GEN_MASK 0xffffffull
#define INDEX_MASK ((1ull << COOP_GEN_SHIFT) - 1)
#define CLOSED INDEX_MASK /* an index no transfer reaches */

static int coop_probe(char *reason, size_t len) {
  /* The same rights as cma (the receiver pulls), and more: the sender
   * pushes. Each peer's own probe decides per connection. */
  return bulk_cma.probe(reason, len);
}

static int coop_usable(const struct bulk_peer *p, const struct bulk_conn *c) {
  return c && fmx_cfg.cma && p->cma_ok && !p->is_self;
}

/* [off, off + len) of stripe k; len 0 past the end. */
static void stripe_range(uint64_t k, uint64_t smax, uint64_t total, uint64_t *off, uint64_t *len) {
  int d = 0;
  while ((4096ull << (d + 1)) <= smax && d < 30) d++; /* smax = 4096 << d */
  uint64_t o, l;
  if (k < (uint64_t)d) {
    o = 4096 * ((1ull << k) - 1);
    l = 4096ull << k;
  } else {
    o = 4096 * ((1ull << d) - 1) + (k - (uint64_t)d) * smax;
    l = smax;
  }
  if (o >= total) {
    *off = total;
    *len = 0;
    return;
  }
  *off = o;
  *len = total - o < l ? total - o : l;
}

/* Take the next stripe of generation gen; returns its index, or -1 when
 * none is left or the area moved on to another transfer. */
static int64_t take(struct coop_area *a, uint32_t gen, uint64_t total) {
  uint64_t w = __atomic_load_n(&a->stripe, __ATOMIC_ACQUIRE);
  for (;;) {
    if ((w >> COOP_GEN_SHIFT) != gen || (w & INDEX_MASK) == CLOSED) return -1;
    uint64_t k = w & INDEX_MASK, off, len;
    stripe_range(k, a->stripe_max, total, &off, &len);
    if (len == 0) return -1;
    if (__atomic_compare_exchange_n(&a->stripe, &w, w + 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) return (int64_t)k;
  }
}

/* The copy failed with err (-errno): the area carries it, as a positive
 * errno (both ends share a kernel), for the receiver to end with. */
static void fail(struct coop_area *a, ssize_t err) {
  uint64_t zero = 0;
  __atomic_compare_exchange_n(&a->error, &zero, (uint64_t)-err, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* Receiver: publish the transfer. Returns 0, or -1 if the area is taken by
 * another transfer from this peer (the message then goes cma). */
static int coop_publish(struct bulk_xfer *x) {
  if (!x->conn) return -ENODEV; /* a connection with no coop area */
  struct coop_area *a = x->conn->rx_coop;
  if (a->busy || x->nseg > COOP_MAX_SEGS) return -EBUSY;
  uint32_t gen = (++x->conn->coop_gen) & GEN_MASK;
  if (!gen) gen = (++x->conn->coop_gen) & GEN_MASK;
  x->tag = gen;
  a->busy = 1;
  a->sreq = x->peer_id;
  a->total = x->want;
  uint64_t smax = fmx_cfg.chunk_max < 4096 ? 4096 : fmx_cfg.chunk_max & ~4095ull;
  a->stripe_max = smax;
  a->nseg = x->nseg;
  for (uint32_t i = 0; i < x->nseg; i++) {
    a->segs[i].addr = (uint64_t)(uintptr_t)x->segs[i].ptr;
    a->segs[i].len = x->segs[i].len;
  }
  struct region_ref ref = {0};
  if (!(fmx_cfg.xmem && region_find(x->segs, x->nseg, &ref))) ref.len = 0;
  region_to_wire(&ref, a->xmem);
  __atomic_store_n(&a->done, 0, __ATOMIC_RELAXED);
  __atomic_store_n(&a->error, 0, __ATOMIC_RELAXED);
  /* Everything above before the counter that opens the transfer. */
  __atomic_store_n(&a->stripe, (uint64_t)gen << COOP_GEN_SHIFT, __ATOMIC_RELEASE);
  return 0;
}

static int peer_gone(const struct bulk_peer *p) {
  struct pollfd q = {p->pidfd, POLLIN, 0};
  return p->pidfd >= 0 && poll(&q, 1, 0) > 0;
}

/* Receiver, once done or failed: close the counter; after a failure wait
 * (bounded) until the stripes already taken are accounted for. */
static void finish(struct bulk_xfer *x, int failed) {
  struct coop_area *a = x->conn->rx_coop;
  uint64_t w = __atomic_exchange_n(&a->stripe, ((uint64_t)x->tag << COOP_GEN_SHIFT) | CLOSED, __ATOMIC_ACQ_REL);
  if (failed && (w >> COOP_GEN_SHIFT) == x->tag) {
    uint64_t off, len, taken = 0;
    for (uint64_t k = 0; k < (w & INDEX_MASK); k++) {
      stripe_range(k, a->stripe_max, a->total, &off, &len);
      taken += len;
    }
    /* A peer killed mid-stripe never accounts for it: stop waiting once
     * its pidfd says it is gone (a dead process writes nothing more into
     * our buffer), else after 1 s (a live peer that stopped helping). The
     * death is usually what failed the pull (ESRCH), so this waited the
     * whole second before (1000-1030 ms measured, every other engine
     * 0.6-36 ms). */
    uint64_t deadline = sys_now_ns() + 1000000000ull;
    while (__atomic_load_n(&a->done, __ATOMIC_ACQUIRE) < taken && sys_now_ns() < deadline &&
           !peer_gone(x->peer))
      sched_yield();
  }
  a->busy = 0;
}

/* Receiver side (the application or an offload channel): take the next
 * stripe and pull it. 0 when none is left, else the stripe's length (its
 * bytes in *moved, 0 if the pull failed: the area then carries the error). */
static uint64_t pull_stripe(struct bulk_xfer *x, uint64_t *moved) {
  struct coop_area *a = x->conn->rx_coop;
  int64_t k = take(a, x->tag, x->want);
  if (k < 0) return 0;
  uint64_t off, len;
  stripe_range((uint64_t)k, a->stripe_max, x->want, &off, &len);
  ssize_t n = bulk_remote_range(x->xsrc, x->peer->pid, 0, x, x->rsegs, x->nrseg, off, len);
  if (n < 0) fail(a, n);
  __atomic_fetch_add(&a->done, len, __ATOMIC_RELEASE);
  *moved = n > 0 ? (uint64_t)n : 0;
  return len;
}

static int coop_recv_progress(struct bulk_xfer *x) {
  struct coop_area *a = x->conn->rx_coop;
  uint64_t moved = 0;
  pull_stripe(x, &moved);
  x->env->counters[CNT_BULK_COOP_BYTES] += moved;
  uint64_t err = __atomic_load_n(&a->error, __ATOMIC_ACQUIRE);
  if (err) {
    finish(x, 1);
    /* The peer writes the area too: whatever it put there ends the
     * transfer, as an errno or (out of range) a protocol error. */
    return err < 4096 ? -(int)err : -EPROTO;
  }
  uint64_t done = __atomic_load_n(&a->done, __ATOMIC_ACQUIRE);
  if (done < x->want) return BULK_MORE;
  x->done = x->want;
  finish(x, 0);
  return BULK_DONE;
}

/* Sender: help while stripes are left. The area is the peer's to write:
 * check what we use of it; a lie can only make us write our own message
 * into the peer's memory (or fail), never read or write our memory beyond
 * the message. */
static int coop_send_progress(struct bulk_xfer *s) {
  struct bulk_peer *p = s->peer;
  if (!s->conn) return BULK_DONE; /* nothing to help through: the receiver pulls alone */
  /* Short: the receiver copies it in its cache before our stripes would
   * pay for the lines they move between the cores (docs/engines.md). */
  if (s->want < fmx_cfg.coop_help_min) return BULK_DONE;
  /* Busy with a receive of our own (an exchange): that copy is ours to
   * make; the peer takes our stripes meanwhile, and we join once it ends. */
  if (s->env->receiving && s->env->receiving(s->env)) return BULK_MORE;
  struct coop_area *a = s->conn->tx_coop;
  /* The receiver's buffer in its fmx_mem_alloc memory: map it and store
   * straight into it (every piece is checked against the mapping). */
  struct proto_seg xw[2] = {a->xmem[0], a->xmem[1]};
  struct region_ref ref = region_from_wire(xw);
  const struct region_map *dm = ref.len && a->sreq == s->id ? region_map_peer(&p->xmem, p->pidfd, p->eid, &ref) : NULL;
  if (!dm && (!p->cma_ok || !fmx_cfg.cma)) return BULK_DONE; /* we may not push: the receiver pulls alone */
  uint64_t total = s->want;
  uint32_t nseg = __atomic_load_n(&a->nseg, __ATOMIC_RELAXED);
  uint64_t smax = a->stripe_max;
  if (a->sreq != s->id || a->total != total || nseg > COOP_MAX_SEGS || smax < 4096 || smax % 4096) return BULK_DONE;
  if (__atomic_load_n(&a->error, __ATOMIC_ACQUIRE)) return BULK_DONE; /* failed: the receiver ends it */
  int64_t k = take(a, s->tag, total);
  if (k < 0) return BULK_DONE; /* all taken: the FIN completes us */
  uint64_t off, len;
  stripe_range((uint64_t)k, smax, total, &off, &len);
  /* The segments stay in shared memory: a receiver that rewrites them under
   * us only moves where our own message lands in its memory. */
  ssize_t n = bulk_remote_range(dm, p->pid, 1, s, a->segs, nseg, off, len);
  if (n < 0) fail(a, n);
  __atomic_fetch_add(&a->done, len, __ATOMIC_RELEASE);
  if (n > 0) {
    s->done += (uint64_t)n;
    s->env->counters[CNT_BULK_COOP_BYTES] += (uint64_t)n;
    if (dm) s->env->counters[CNT_XMEM_SEND_BYTES] += (uint64_t)n;
  }
  bulk_conn_wake(s->conn); /* the receiver may wait for our stripe */
  return BULK_MORE;
}

/* An offload channel helping the receiver: it takes stripes too, until
 * none is left; the receiver's recv_progress still completes. */
static int coop_offload_step(struct bulk_xfer *x, uint64_t *done, uint64_t *moved) {
  uint64_t len = pull_stripe(x, moved);
  *done += len;
  /* Done when none is left, or a pull failed (the receiver ends it). */
  return len && *moved ? BULK_MORE : BULK_DONE;
}

const struct fmx_bulk_engine bulk_coop = {
    .name = "coop",
    .cost_cfg = &fmx_cfg.cost_coop,
    .cost_var = "FMX_COST_COOP",
    .probe = coop_probe,
    .usable = coop_usable,
    .needs_cts = 1,
    .receiver_copies = 1,
    .maps_peer = 1,
    .wire_id = 1,
    .cnt_msgs = CNT_BULK_COOP,
    .recv_start = coop_publish,
    .fallback = &bulk_cma,
    .recv_progress = coop_recv_progress,
    .send_progress = coop_send_progress,
    .offload_step = coop_offload_step,
    .offload_helps = 1,
};
