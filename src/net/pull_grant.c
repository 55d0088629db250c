/* SPDX-License-Identifier: MIT */
/*
 * The receiver's scheduler of the pull protocol (pull.c says the whole of
 * it; pull_int.h holds what they share): the endpoint's pulls wait in one
 * list, the one with the fewest bytes left to ask first (shortest
 * remaining first), and each grant lets the first whose sender answers ask
 * for its next run while the budget of bytes on their way (net/grant.h)
 * has room for it.
 */
#include <stdint.h>

#include "base/list.h"
#include "net/net_int.h"
#include "net/pull_int.h"

/* The payload bytes of frames first..first+n-1. */
static uint64_t run_bytes(const struct net_pull *pl, uint32_t first, uint32_t n) {
  uint64_t a = (uint64_t)first * pl->frame, end = a + (uint64_t)n * pl->frame;
  return (end < pl->x->want ? end : pl->x->want) - a;
}

/* The frames of a run: a quarter of the budget, at least one, at most a
 * block's. */
static uint32_t run_frames(const struct net_grant *g, const struct net_pull *pl) {
  uint64_t n = g->budget / 4 / pl->per;
  return n < 1 ? 1 : n > pl->bframes ? pl->bframes : (uint32_t)n;
}

static void gauges(struct fmx_endpoint *ep, const struct net_grant *g) {
  if (!g->inflight && !g->came_ns) return; /* it never pulled */
  uint64_t bdp = net_grant_bdp(g), q = g->inflight > bdp ? g->inflight - bdp : 0;
  TRANSPORT_SET(ep, NET_GRANT_BUDGET, g->budget);
  TRANSPORT_SET(ep, NET_GRANT_BDP, bdp);
  if (q > transport_ep(ep)->bulk->counters[CNT_NET_GRANT_QUEUE]) TRANSPORT_SET(ep, NET_GRANT_QUEUE, q);
}

/* Join the endpoint's granting, behind the pulls with as few bytes left
 * (shortest remaining first; the head keeps its place as it asks, its
 * bytes left only shrinking). */
void net_pull_queue(struct net_ep *ne, struct net_pull *pl) {
  struct list_node *pos;
  list_for_each(pos, &ne->granting) {
    if (list_entry(pos, struct net_pull, gnode)->unasked > pl->unasked) break;
  }
  list_add_tail(pos, &pl->gnode); /* before pos: the first with more left, or the end */
  pl->queued = 1;
}

void net_pull_unqueue(struct net_pull *pl) {
  if (!pl->queued) return;
  list_del(&pl->gnode);
  pl->queued = 0;
}

/* Grant: while the budget has room for it, the head of the granting asks
 * for its next run: the rest of the block it is in, no more than a quarter
 * of the budget (several runs on their way: one lost says so by those
 * behind it; and a run, sent in one burst, no longer than a quarter of
 * what the port in front of us held when we last lost). With nothing on
 * its way, or as a probe, a run goes whatever the budget; a partner that
 * answers on our wire socket has no more on its way than that socket's
 * share. */
void net_pull_grant(struct fmx_endpoint *ep, uint64_t now, int probe) {
  struct net_ep *ne = net_ep(ep);
  struct net_grant *g = &ne->grant;
  int asked = 0;
  for (;;) {
    /* The first whose sender answers: one silent (its timer asked again
     * with nothing heard) waits, its bytes out of the budget, and does not
     * hold the others; nor do the other pulls from its sender take them
     * (a sender off its core would find them all asked when back: many
     * budgets' worth on their way to us at once). */
    struct net_pull *pl = NULL;
    struct list_node *pos;
    list_for_each(pos, &ne->granting) {
      struct net_pull *q = list_entry(pos, struct net_pull, gnode);
      if (!q->np->pull->pulls_silent) {
        pl = q;
        break;
      }
    }
    if (!pl) break;
    struct net_peer *np = pl->np;
    uint32_t f = pl->nextf, b = f / pl->bframes, in = f % pl->bframes;
    uint32_t n = pl->bframes - in, quarter = run_frames(g, pl);
    if (n > pl->nframes - f) n = pl->nframes - f;
    if (n > quarter) n = quarter;
    uint64_t need = run_bytes(pl, f, n);
    uint64_t win = net_pull_bulk_answers(np) && !np->pull->ask_wire ? ne->pull_window : ne->pull_window_wire;
    int over = g->inflight && (net_grant_room(g) < need || pl->out + need > win);
    if (over && !probe) {
      pl->waited = 1;
      break;
    }
    if (over) TRANSPORT_CNT(ep, NET_GRANT_PROBES);
    probe = 0;
    asked = 1;
    struct pull_block *blk = &pl->blk[b];
    blk->asked = ++np->pull->stamp;
    if (!blk->missing) {
      if (!pl->open) pl->heard_ns = now; /* a pull that waited for its turn was not silent */
      pl->open++;
      blk->heard = 0; /* its first frame times the line, one of this run's, whatever runs of it follow */
      blk->timed_ns = now;
      blk->tlo = (uint8_t)in;
      blk->thi = (uint8_t)(in + n);
      blk->oldest = blk->asked;
    }
    blk->missing |= net_pull_run_mask(in, n);
    blk->asked_ns = now;
    net_pull_send(np, pl, f, n, now);
    pl->nextf += n;
    pl->next = b + 1;
    pl->asked_ns = now;
    pl->out += need;
    pl->unasked -= need;
    net_grant_asked(g, need, now);
    TRANSPORT_CNT(ep, NET_GRANTS);
    if (pl->waited) TRANSPORT_CNT(ep, NET_GRANT_WAITS);
    pl->waited = 0;
    if (pl->nextf == pl->nframes) net_pull_unqueue(pl);
  }
  if (asked) gauges(ep, g); /* once a grant, not once a frame */
}

/* A loss is read as the queue in front of us overflowing while several
 * partners send to us at once (an incast: their answers meet at our
 * port). From one partner alone only a tail drop is (tail_dropped): a
 * lossy line or a filter drops a frame here and there, and a lost PULL
 * loses a whole run; asking less would not help there. */
int net_pull_crowded(const struct net_ep *ne) { return ne->senders >= 2; }
