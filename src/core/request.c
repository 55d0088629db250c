/* SPDX-License-Identifier: MIT */
/* Request pool: requests are reused through a free list and named on the
 * wire by (index, generation), so a stale or forged id from a peer is
 * recognised instead of dereferenced. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "bulk/engine.h"
#include "core/fmx_int.h"
#include "platform/sys.h"

/* Zero the hot part of a request (all but the cold part of its message,
 * proto.h) with 16-byte stores, unrolled: the memset gcc inlines for its
 * size is a `rep stos`, whose start-up took 2/3 of req_alloc (perf, 8 B
 * message rate: 6.7% of each side's time), and a loop of 8-byte stores
 * still cost 118 instructions a request (callgrind). calloc and the pool
 * give 16-byte aligned requests. */
typedef uint64_t req_zero_v __attribute__((vector_size(16), aligned(16)));
#define REQ_HOT_END (offsetof(struct fmx_request, m) + PROTO_MSG_HOT_END)
static inline void req_zero(struct fmx_request *r) {
  _Static_assert(REQ_HOT_END % sizeof(req_zero_v) == 0, "the hot part is whole 16-byte words");
  _Static_assert(_Alignof(struct fmx_request) >= 16, "request alignment");
  req_zero_v *w = (req_zero_v *)(void *)r, z = {0, 0};
#pragma GCC unroll 32
  for (size_t i = 0; i < REQ_HOT_END / sizeof *w; i++) w[i] = z;
}

/* r, off the free list or new, made a fresh request of this kind. */
static inline void req_init(struct fmx_endpoint *ep, struct fmx_request *r, int kind) {
  uint32_t index = r->index, gen = r->gen + 1;
  req_zero(r);
  r->index = index;
  r->gen = gen;
  r->kind = (uint8_t)kind;
  r->ep = ep;
  r->m.id = ((uint64_t)index << 32) | gen;
  list_init(&r->qnode);
  r->deadline_ns = 0;
  list_init(&r->m.hnode);
  list_init(&r->m.pnode);
  proto_msg_cold_init(&r->m);
}

struct fmx_request *req_alloc(struct fmx_endpoint *ep, int kind) {
  struct fmx_request *r = ep->free_reqs;
  if (r) {
    ep->free_reqs = (struct fmx_request *)r->m.segs;
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
  if (__atomic_load_n(&ep->pe.benv.desc->sleepers, __ATOMIC_RELAXED)) ep_wake_sleepers(ep->pe.benv.desc);
}

struct fmx_request *req_receipt(struct fmx_endpoint *ep, int kind) {
  struct fmx_request *r = ep->free_reqs;
  ep->free_reqs = (struct fmx_request *)r->m.segs;
  req_init(ep, r, kind);
  r->m.state = MSG_DONE;
  done_listed(ep, r);
  return r;
}

void req_free(struct fmx_endpoint *ep, struct fmx_request *r) {
  /* Its CTS or FIN still waits for ring room: the record lives in it, so it
   * is freed once that record has gone (proto_out_done). */
  struct proto_msg *m = &r->m;
  if (m->out.ctl && list_linked(&m->out.node)) {
    m->freed = 1;
    return;
  }
  progress_unwatch(ep, r); /* a cancelled receive */
  if (m->segs && m->segs != &m->seg1) free(m->segs);
  if (m->xfer.rsegs) free(m->xfer.rsegs);
  if (r->deadline_ns) ep->ntimed--;
  list_del(&r->qnode);
  list_del(&m->pnode);
  list_del(&m->bnode);
  list_del(&m->out.node);
  r->gen++; /* any id still held by a peer is now stale */
  m->state = MSG_DONE;
  r->kind = 0;
  m->segs = (fmx_seg_t *)ep->free_reqs;
  ep->free_reqs = r;
}

struct fmx_request *req_lookup(struct fmx_endpoint *ep, uint64_t id, int kind) {
  uint32_t index = (uint32_t)(id >> 32), gen = (uint32_t)id;
  if (index >= ep->nreqs) return NULL;
  struct fmx_request *r = ep->reqs[index];
  if (r->gen != gen || r->kind != kind || r->m.state == MSG_DONE) return NULL;
  return r;
}

int req_set_segs(struct fmx_request *r, const fmx_seg_t *segs, uint32_t nseg) {
  struct proto_msg *m = &r->m;
  m->nseg = nseg;
  m->len = 0;
  if (nseg <= 1) {
    m->segs = &m->seg1;
    m->seg1 = nseg ? segs[0] : (fmx_seg_t){NULL, 0};
  } else {
    m->segs = malloc(nseg * sizeof *segs);
    if (!m->segs) return -ENOMEM;
    memcpy(m->segs, segs, nseg * sizeof *segs);
  }
  for (uint32_t i = 0; i < nseg; i++) m->len += segs[i].len;
  return 0;
}

void req_complete(struct fmx_endpoint *ep, struct fmx_request *r, fmx_return_t code) {
  struct proto_msg *m = &r->m;
  if (m->state == MSG_DONE) return;
  /* A channel moving it lets go first: nothing lands in a buffer the user
   * got back (a peer's death, a timeout, a coop helper past the end). */
  if (m->xfer.job) offload_detach(&m->xfer);
  progress_unwatch(ep, r);
  m->state = MSG_DONE;
  m->status.code = code;
  list_del(&m->pnode);
  if (list_linked(&m->bnode)) bulk_end(&m->xfer); /* a transfer still moving: its engine lets go */
  list_del(&m->bnode);
  if (!m->out.ctl) list_del(&m->out.node); /* a send not pushed; a receive's FIN still goes */
  if (r->deadline_ns) {
    r->deadline_ns = 0;
    ep->ntimed--;
  }
  /* A slice of a multi-receive buffer: the buffer may be released after it. */
  struct proto_msg *b = m->multi_of;
  if (b) m->status.flags |= FMX_MSG_MULTI;
  if (r->kind == REQ_CONNECT) list_del(&r->qnode); /* off ep->connecting */
  if (r->flags & REQ_F_FORGOTTEN) {
    m->state = MSG_PENDING; /* let req_free see a live request */
    req_free(ep, r);
  } else {
    done_listed(ep, r);
  }
  if (b) proto_multi_slice_done(ep, b);
}

void req_pool_fini(struct fmx_endpoint *ep) {
  for (uint32_t i = 0; i < ep->nreqs; i++) {
    struct fmx_request *r = ep->reqs[i];
    if (r->kind && r->m.segs && r->m.segs != &r->m.seg1) free(r->m.segs);
    if (r->kind && r->m.xfer.rsegs) free(r->m.xfer.rsegs);
    free(r);
  }
  free(ep->reqs);
  ep->reqs = NULL;
  ep->nreqs = ep->reqs_cap = 0;
  ep->free_reqs = NULL;
}
