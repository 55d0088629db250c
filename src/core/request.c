/* SPDX-License-Identifier: MIT */
/* Request pool: requests are reused through a free list and named on the
 * wire by (index, generation), so a stale or forged id from a peer is
 * recognised instead of dereferenced. */
#include <stdlib.h>
#include <string.h>

#include "bulk/engine.h"
#include "core/fmx_int.h"
#include "proto/proto.h"
#include "platform/sys.h"

/* Zero a request with 16-byte stores, unrolled: the memset gcc inlines for
 * its size is a `rep stos`, whose start-up took 2/3 of req_alloc (perf, 8 B
 * message rate: 6.7% of each side's time), and a loop of 8-byte stores
 * still cost 118 instructions a request (callgrind). calloc and the pool
 * give 16-byte aligned requests. */
typedef uint64_t req_zero_v __attribute__((vector_size(16), aligned(16)));
static inline void req_zero(struct fmx_request *r) {
  _Static_assert(sizeof *r % sizeof(req_zero_v) == 0, "a request is whole 16-byte words");
  _Static_assert(_Alignof(struct fmx_request) >= 16, "request alignment");
  req_zero_v *w = (req_zero_v *)(void *)r, z = {0, 0};
#pragma GCC unroll 32
  for (size_t i = 0; i < sizeof *r / sizeof *w; i++) w[i] = z;
}

/* r, off the free list or new, made a fresh request of this kind. */
static inline void req_init(struct fmx_endpoint *ep, struct fmx_request *r, int kind) {
  uint32_t index = r->index, gen = r->gen + 1;
  req_zero(r);
  r->index = index;
  r->gen = gen;
  r->kind = (uint8_t)kind;
  r->ep = ep;
  list_init(&r->qnode);
  list_init(&r->hnode);
  list_init(&r->pnode);
  list_init(&r->bnode);
  list_init(&r->out.node);
}

struct fmx_request *req_alloc(struct fmx_endpoint *ep, int kind) {
  struct fmx_request *r = ep->free_reqs;
  if (r) {
    ep->free_reqs = (struct fmx_request *)r->segs;
  } else {
    if (ep->nreqs == ep->reqs_cap) {
      uint32_t cap = ep->reqs_cap ? ep->reqs_cap * 2 : 64;
      struct fmx_request **t = realloc(ep->reqs, cap * sizeof *t);
      if (!t) return NULL;
      ep->reqs = t;
      ep->reqs_cap = cap;
    }
    r = calloc(1, sizeof *r);
    if (!r) return NULL;
    r->index = ep->nreqs;
    ep->reqs[ep->nreqs++] = r;
  }
  req_init(ep, r, kind);
  if (ep->timeout_ms) {
    r->deadline_ns = sys_now_ns() + ep->timeout_ms * 1000000ull;
    ep->ntimed++;
  }
  return r;
}

static void done_listed(struct fmx_endpoint *ep, struct fmx_request *r) {
  list_add_tail(&ep->completed, &r->qnode);
  /* Another thread of ours may sleep on this completion. No fence needed:
   * we hold ep->lock, and a waiter counts itself in sleepers before its
   * last locked check, so the lock orders the two. */
  if (__atomic_load_n(&ep->desc->sleepers, __ATOMIC_RELAXED)) ep_wake_sleepers(ep->desc);
}

struct fmx_request *req_receipt(struct fmx_endpoint *ep, int kind) {
  struct fmx_request *r = ep->free_reqs;
  ep->free_reqs = (struct fmx_request *)r->segs;
  req_init(ep, r, kind);
  r->state = REQ_DONE;
  done_listed(ep, r);
  return r;
}

void req_free(struct fmx_endpoint *ep, struct fmx_request *r) {
  /* Its CTS or FIN still waits for ring room: the record lives in it, so it
   * is freed once that record has gone (proto_out_done). */
  if (r->out.ctl && list_linked(&r->out.node)) {
    r->freed = 1;
    return;
  }
  progress_unwatch(ep, r); /* a cancelled receive */
  if (r->segs && r->segs != &r->seg1) free(r->segs);
  if (r->xfer.rsegs) free(r->xfer.rsegs);
  if (r->deadline_ns) ep->ntimed--;
  list_del(&r->qnode);
  list_del(&r->pnode);
  list_del(&r->bnode);
  list_del(&r->out.node);
  r->gen++; /* any id still held by a peer is now stale */
  r->state = REQ_DONE;
  r->kind = 0;
  r->segs = (fmx_seg_t *)ep->free_reqs;
  ep->free_reqs = r;
}

uint64_t req_id(const struct fmx_request *r) { return ((uint64_t)r->index << 32) | r->gen; }

struct fmx_request *req_lookup(struct fmx_endpoint *ep, uint64_t id, int kind) {
  uint32_t index = (uint32_t)(id >> 32), gen = (uint32_t)id;
  if (index >= ep->nreqs) return NULL;
  struct fmx_request *r = ep->reqs[index];
  if (r->gen != gen || r->kind != kind || r->state == REQ_DONE) return NULL;
  return r;
}

int req_set_segs(struct fmx_request *r, const fmx_seg_t *segs, uint32_t nseg) {
  r->nseg = nseg;
  r->len = 0;
  if (nseg <= 1) {
    r->segs = &r->seg1;
    r->seg1 = nseg ? segs[0] : (fmx_seg_t){NULL, 0};
  } else {
    r->segs = malloc(nseg * sizeof *segs);
    if (!r->segs) return -1;
    memcpy(r->segs, segs, nseg * sizeof *segs);
  }
  for (uint32_t i = 0; i < nseg; i++) r->len += segs[i].len;
  return 0;
}

void req_copy(struct fmx_request *r, uint64_t off, void *buf, uint64_t len, int to_req, copy_fn fn) {
  copy_segs(r->segs, r->nseg, off, buf, len, to_req, fn);
}

void req_complete(struct fmx_endpoint *ep, struct fmx_request *r, fmx_return_t code) {
  if (r->state == REQ_DONE) return;
  /* A channel moving it lets go first: nothing lands in a buffer the user
   * got back (a peer's death, a timeout, a coop helper past the end). */
  if (r->xfer.job) offload_detach(&r->xfer);
  progress_unwatch(ep, r);
  r->state = REQ_DONE;
  r->status.code = code;
  list_del(&r->pnode);
  list_del(&r->bnode);
  if (!r->out.ctl) list_del(&r->out.node); /* a send not pushed; a receive's FIN still goes */
  if (r->deadline_ns) {
    r->deadline_ns = 0;
    ep->ntimed--;
  }
  if (r->flags & REQ_F_FORGOTTEN) {
    r->state = REQ_PENDING; /* let req_free see a live request */
    req_free(ep, r);
    return;
  }
  done_listed(ep, r);
}

void req_pool_fini(struct fmx_endpoint *ep) {
  for (uint32_t i = 0; i < ep->nreqs; i++) {
    struct fmx_request *r = ep->reqs[i];
    if (r->kind && r->segs && r->segs != &r->seg1) free(r->segs);
    if (r->kind && r->xfer.rsegs) free(r->xfer.rsegs);
    free(r);
  }
  free(ep->reqs);
  ep->reqs = NULL;
  ep->nreqs = ep->reqs_cap = 0;
  ep->free_reqs = NULL;
}
