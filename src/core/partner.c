/* SPDX-License-Identifier: MIT */
/* An endpoint's partners: their slots and addresses, made, found, failed,
 * and reaped once nothing refers to them. Called with ep->lock held. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bulk/engine.h"
#include "core/fmx_int.h"
#include "core/transport.h"
#include "platform/sys.h"

fmx_endpoint_addr_t ep_partner_addr(const struct partner *p) {
  fmx_endpoint_addr_t a;
  a.opaque[0] = ((uint64_t)p->index << 32) | p->t.gen;
  a.opaque[1] = (p->t.nic & 0xffffffffffffull) | ((uint64_t)(p->t.eid & 0xffff) << 48);
  return a;
}

struct partner *ep_partner_from_addr(struct fmx_endpoint *ep, fmx_endpoint_addr_t a) {
  uint32_t index = (uint32_t)(a.opaque[0] >> 32), gen = (uint32_t)a.opaque[0];
  if (index >= ep->npartners) return NULL;
  struct partner *p = ep->partners[index];
  return p && p->t.gen == gen ? p : NULL;
}

/* Whether an unexpected message of the list (linked by unexp_msg.all)
 * comes from p. */
static int unexp_from(const struct list_node *list, const struct partner *p) {
  const struct list_node *pos;
  for (pos = list->next; pos != list; pos = pos->next)
    if (list_entry(pos, struct unexp_msg, all)->partner == p) return 1;
  return 0;
}

/* Whether anything of ours still points at the partner: a request (in
 * flight, or completed and not yet tested) or an unexpected message
 * (queued, or claimed by a matched probe). */
static int partner_in_use(struct fmx_endpoint *ep, const struct partner *p) {
  for (uint32_t i = 0; i < ep->nreqs; i++)
    if (ep->reqs[i]->kind && (ep->reqs[i]->m.partner == p || ep->reqs[i]->m.from == p)) return 1;
  return unexp_from(&ep->pe.mq.unexp_all, p) || unexp_from(&ep->pe.mqu.unexp_all, p) ||
         unexp_from(&ep->pe.claimed, p);
}

/* Release what gone partners hold (links, descriptor, mapped regions)
 * once nothing refers to them, and mark their slots free for the next
 * partner: a server whose clients come and go stays flat (seen before:
 * 600 short-lived clients left 600 link mappings and 80 MB behind).
 * The struct stays allocated, so a pointer snapshotted by the watcher
 * never dangles; its generation changes when the slot is reused. Called
 * with ep->lock held, where a partner is added. */
void ep_partner_reap(struct fmx_endpoint *ep) {
  for (uint32_t i = 0; i < ep->npartners; i++) {
    struct partner *p = ep->partners[i];
    if (p->t.state == PARTNER_ALIVE || p->t.bulk->is_self || p->reaped || partner_in_use(ep, p)) continue;
    p->pp.tp->release(ep, p);
    medium_reset(ep, p);
    if (p->pp.live && list_linked(&p->pp.live->backlog)) list_del(&p->pp.live->backlog); /* none: ep_partner_down emptied it */
    proto_peer_fini(&p->pp);
    ep_partner_bulk_fini(p); /* nothing moves with it now (partner_in_use) */
    if (!ep_partner_remote(p)) {
      ep->nsiblings -= p->t.bulk->same_process;
      p->t.bulk->same_process = 0;
    }
    p->reaped = 1;
    if (p->polled_at != UINT32_MAX) { /* its place to the last one's */
      struct partner *last = ep->polled[--ep->npolled];
      ep->polled[p->polled_at] = last;
      last->polled_at = p->polled_at;
      p->polled_at = UINT32_MAX;
    }
    ep->t.nlive--;
    if (p->pp.tp->remote) __atomic_sub_fetch(&ep->nremote, 1, __ATOMIC_RELAXED);
  }
  ep_crowd_set(ep);
}

/* A partner and its transport's private state (tp->partner_size bytes,
 * transport_state) in one block, zeroed: one allocation and no pointer
 * between them (an idle partner's bytes). */
static size_t partner_block(const struct fmx_transport_ops *tp) {
  return PARTNER_HEAD + TRANSPORT_STATE_ROUND(tp->partner_size) + (tp->remote ? 0 : sizeof(struct bulk_peer));
}

static struct partner *partner_alloc(const struct fmx_transport_ops *tp) { return calloc(1, partner_block(tp)); }

/* What the bulk engines know of every partner on another host: they never
 * move its bytes (its transport pulls them), and nothing writes it. One
 * for all, where a partner on this host has its own, at the end of its
 * block. */
static const struct bulk_peer remote_bulk = {.pidfd = -1, .cpu = -1, .cma_reason = "another host"};

static struct bulk_peer *bulk_of(struct partner *p, const struct fmx_transport_ops *tp) {
  /* Read-only memory: a write to it faults at once, where it would race
   * between endpoints. */
  return tp->remote ? (struct bulk_peer *)&remote_bulk
                    : (struct bulk_peer *)((char *)p + partner_block(tp) - sizeof(struct bulk_peer));
}

int ep_partner_remote(const struct partner *p) { return p->t.bulk == &remote_bulk; }

void ep_partner_bulk_fini(struct partner *p) {
  if (ep_partner_remote(p)) return;
  region_cache_release(&p->t.bulk->xmem);
  bulk_peer_fini(p->t.bulk);
}

/* p (zeroed) becomes a live partner of ep in slot index, served by tp. */
static struct partner *partner_start(struct fmx_endpoint *ep, struct partner *p, uint32_t index, uint32_t gen,
                                     const struct fmx_transport_ops *tp) {
  p->index = index;
  p->t.gen = gen;
  p->t.bulk = bulk_of(p, tp);
  if (!tp->remote) {
    p->t.bulk->pidfd = -1;
    p->t.bulk->cpu = -1;
  }
  p->polled_at = UINT32_MAX;
  if (tp->poll) { /* room made (ep_partner_new) */
    p->polled_at = ep->npolled;
    ep->polled[ep->npolled++] = p;
  }
  proto_peer_init(&p->pp, tp);
  ep->t.nlive++;
  if (tp->remote) __atomic_add_fetch(&ep->nremote, 1, __ATOMIC_RELAXED);
  ep_crowd_set(ep);
  return p;
}

/* Room for one more partner (polled: one its transport polls): 0, or -ENOMEM. */
static int room(struct partner ***v, uint32_t n, uint32_t *cap) {
  if (n < *cap) return 0;
  uint32_t c = *cap ? *cap * 2 : 16;
  struct partner **t = realloc(*v, c * sizeof *t);
  if (!t) return -ENOMEM;
  *v = t;
  *cap = c;
  return 0;
}

struct partner *ep_partner_new(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp) {
  if (tp->poll && room(&ep->polled, ep->npolled, &ep->polled_cap) < 0) return NULL;
  /* A slot of the same transport's: its block fits, and stays (a pointer
   * the watcher snapshotted never dangles: ep_partner_reap). */
  for (uint32_t i = 0; i < ep->npartners; i++) {
    struct partner *p = ep->partners[i];
    if (!p->reaped || p->pp.tp != tp) continue;
    uint32_t gen = p->t.gen;
    memset(p, 0, partner_block(tp));
    return partner_start(ep, p, i, (gen + 2) | 1, tp); /* addresses of the previous partner go stale */
  }
  if (room(&ep->partners, ep->npartners, &ep->partners_cap) < 0) return NULL;
  struct partner *p = partner_alloc(tp);
  if (!p) return NULL;
  ep->partners[ep->npartners] = p;
  return partner_start(ep, p, ep->npartners++, (uint32_t)sys_random64() | 1, tp);
}

struct partner *ep_partner_find(struct fmx_endpoint *ep, uint32_t eid, uint32_t session) {
  for (uint32_t i = 0; i < ep->npartners; i++) {
    struct partner *p = ep->partners[i];
    if (p->t.eid == eid && p->t.session == session && p->t.state == PARTNER_ALIVE && !p->t.bulk->is_self) return p;
  }
  return NULL;
}

/* What a transport calls for each record it takes from p. */
int ep_partner_deliver(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                       const void *payload) {
  proto_deliver(ep, p, lane, h, payload);
  return p->t.state != PARTNER_ALIVE;
}

void ep_partner_poll(struct fmx_endpoint *ep, struct partner *p) {
  if (p->pp.tp->poll) p->pp.tp->poll(ep, p, ep_partner_deliver);
}

/* p's queue got its first record: flushed at every pass until it empties
 * (proto_core.queued). */
void ep_partner_queued(struct fmx_endpoint *ep, struct partner *p) {
  struct proto_live *l = p->pp.live; /* taken: its queue holds a record */
  if (!list_linked(&l->backlog)) list_add_tail(&ep->backlog, &l->backlog);
}

/* The partner is gone (died, closed, disconnected). What it had already put
 * in our rings is delivered first: eager data is ours and completes
 * receives; a rendezvous it announced matches a receive that then fails
 * (the bytes are gone with it) instead of leaving that receive waiting for
 * ever. Everything else pending with it completes with `code`. Unexpected
 * rendezvous messages from it stay queued: a receive that takes one later
 * completes with REMOTE_ENDPOINT_UNREACHABLE. Links stay mapped until the
 * endpoint closes so no stale pointer can fault. */
void ep_partner_fail(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code) {
  if (p->t.state != PARTNER_ALIVE || p->failing) return;
  p->failing = 1;
  ep_partner_poll(ep, p); /* may fail it itself (CLOSE, corrupt ring) */
  p->failing = 0;
  ep_partner_down(ep, p, state, code);
}

void ep_partner_down(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code) {
  if (p->t.state != PARTNER_ALIVE) return;
  p->t.state = state;
  struct proto_live *l = p->pp.live;
  while (l && !list_empty(&l->outq)) proto_out_drop(ep, list_entry(l->outq.next, struct out_rec, node));
  if (l && list_linked(&l->backlog)) list_del(&l->backlog);
  while (l && !list_empty(&l->msgs)) {
    struct proto_msg *m = list_entry(l->msgs.next, struct proto_msg, pnode);
    list_del(&m->pnode);
    req_complete(ep, req_of(m), code);
  }
  medium_reset(ep, p);
  proto_recv_fail_from(ep, p, code); /* receives directed to it: nothing more comes */
  if (p->t.bulk->pidfd >= 0) {
    close(p->t.bulk->pidfd);
    p->t.bulk->pidfd = -1;
  }
  ep_wake(ep->pe.benv.desc);
}
