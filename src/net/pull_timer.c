/* SPDX-License-Identifier: MIT */
/*
 * The receiver's timers of the pull protocol (pull.c says the whole of
 * it; pull_int.h holds what they share with pull.c): the scheduler's tick,
 * once per timer pass, which sends a probe after a silence; and each
 * partner's timer, which asks again for what its pulls miss after a wait
 * (backing off while nothing comes) and fails a partner silent for
 * FMX_NET_TIMEOUT_MS.
 */
#include <stdint.h>

#include "base/config.h"
#include "base/list.h"
#include "base/log.h"
#include "net/net_int.h"
#include "net/pull_int.h"

/* The partner said nothing of a pull for FMX_NET_TIMEOUT_MS: gone. */
static int silent(struct fmx_endpoint *ep, struct partner *p, uint64_t since, uint64_t now, const char *what) {
  if (now - since < fmx_cfg.net_timeout_ms * 1000000ull) return 0;
  TRANSPORT_CNT(ep, NET_TIMEOUTS);
  log_warn("FMX-NET-TIMEOUT", "endpoint %u: endpoint %u of board %012llx %s for %llu ms: gone", transport_ep(ep)->eid,
           transport_peer(p)->eid, (unsigned long long)transport_peer(p)->nic, what,
           (unsigned long long)fmx_cfg.net_timeout_ms);
  transport_up->peer_fail(ep, p, PARTNER_DEAD, FMX_REMOTE_ENDPOINT_UNREACHABLE);
  return 1;
}

void net_pull_tick(struct fmx_endpoint *ep, uint64_t now) {
  /* Room a failed partner's pulls left; and when nothing came for two
   * round trips while bytes are on their way, one run whatever the
   * budget: a probe, whose frames show what was lost before it (a lost
   * PULL, a tail) sooner than a timer would, when the lost hold the whole
   * budget. */
  struct net_ep *ne = net_ep(ep);
  struct net_grant *gr = &ne->grant;
  uint64_t rt = 2 * gr->srtt_ns;
  int probe = gr->inflight && rt && now - gr->came_ns >= rt && gr->came_ns > ne->grant_probe_ns; /* one a silence */
  if (probe) ne->grant_probe_ns = now;
  net_pull_grant(ep, now, probe);
}

/* The pulls' timers: ask again what is missing after a silence; a sender
 * that sends nothing we pull, or a receiver that pulls nothing of what it
 * matched, for FMX_NET_TIMEOUT_MS is gone. 1 while pulls are pending
 * (either way), 0 when none, -1 when the partner failed. */
int net_pull_timers(struct fmx_endpoint *ep, struct partner *p, uint64_t now) {
  struct net_peer *np = transport_state(p);
  struct list_node *pos;
  if (!np->pull) return net_pull_serve(ep, now); /* no record either way yet: no pull */
  if (np->pull->ask_wire && now >= np->pull->wire_until_ns) np->pull->ask_wire = 0; /* our bulk socket again */
  /* Its receiver may serve other senders first (shortest remaining
   * first): anything it sends says it is there. */
  uint64_t heard = net_pull_exports_heard(np);
  if (heard && silent(ep, p, heard > np->heard_ns ? heard : np->heard_ns, now, "pulled nothing it matched")) return -1;
  int waiting = net_pull_serve(ep, now); /* our answers that wait for room (any partner's) */
  list_for_each(pos, &np->pull->pulls) {
    struct net_pull *pl = list_entry(pos, struct net_pull, node);
    if (!pl->started || !pl->open) continue; /* nothing asked: it waits for its turn */
    if (silent(ep, p, pl->heard_ns, now, "sent nothing we pulled")) return -1;
    /* Backed off while nothing comes: doubled at each silent wait. */
    uint64_t last = pl->heard_ns > pl->asked_ns ? pl->heard_ns : pl->asked_ns;
    /* What the others have on their way comes first at the port. */
    struct net_grant *g = &net_ep(ep)->grant;
    uint64_t wait = net_pull_wait(np), most = fmx_cfg.net_rto_max_us * 1000ull;
    /* A pull alone: what it misses was lost once nothing came for twice
     * the shortest round trip (a timer step at least: the timers tell no
     * shorter wait; not the streams' floor, the peer's ack delay, which a
     * PULL's answer never waits) and what is on its way; the block time
     * measured under load (srtt + 4 rttvar, 0.7-1.3 ms here) is far longer
     * than a lost tail's wait needs. With other pulls, theirs may come
     * first: their own sender, pacing, SRPT; and where ranks outnumber
     * cores, the sender may wait for one. */
    if (net_ep(ep)->pulling == 1 && !transport_ep(ep)->crowded) {
      uint64_t quick = 2 * net_grant_rtt_min(g), least = net_ep(ep)->timer_step;
      if (quick < least) quick = least;
      if (quick < wait) wait = quick;
    }
    wait += net_grant_drain_ns(g);
    for (uint32_t k = 0; k < pl->silences + pl->kicks && wait < most; k++) wait *= 2;
    if (wait > most) wait = most;
    if (now - last < wait) continue;
    if (!net_pull_known(np, pl)) {
      /* Its sender cannot answer what we ask until our CTS comes: the CTS (and
       * what is missed before it) goes again now, not at the stream's
       * resend wait (srtt + 4 rttvar: 60 ms seen, the round trips measured
       * behind the peer's own answers); no silence, and each such wait
       * twice the one before (a partner off its core acks late); once it
       * is acked, net_pull_acked asks again. */
      net_resend_before(ep, p, pl->cts_seq);
      if (pl->kicks < 16) pl->kicks++;
      pl->reasked_ns = pl->asked_ns = now;
      continue;
    }
    uint64_t asked = 0;
    int crowd = net_pull_crowded(net_ep(ep)); /* before the asks below */
    /* Asked again twice already, the second time after the budget went
     * back to its floor (two silences), and nothing of it came since: the
     * first run of this ask is to be answered on the wire. Should that
     * answer come there, and not the others at our bulk socket, the
     * partner answers and its bulk answers are lost: it answers on the
     * wire from then on (net_pull_on_reply). A partner off its core for
     * those waits answers the first asks when it is back, and not this
     * one (pull_send.c): its bulk answers go on. A queue that overflowed
     * lets the floor's runs through; after one silence alone, a shaped
     * uplink's congestion put 1 run in 10 of
     * test_pairs_across_a_shaped_uplink on the wire. */
    if (pl->silences >= 2 && pl->heard_ns <= pl->reasked_ns && net_pull_bulk_answers(np) && !np->pull->ask_wire)
      np->pull->wire_probe = 1;
    for (uint32_t b = pl->low; b < pl->next; b++)
      if (pl->blk[b].missing && pl->blk[b].asked_ns > asked) asked = pl->blk[b].asked_ns;
    net_pull_ask_missing(np, pl, now);
    /* Others' bytes still came meanwhile: the path works, and this is a
     * loss at the tail of what we asked (or a slow sender); else silence.
     * From one sender alone the budget stays. */
    if (crowd) {
      if (now - g->came_ns < wait) {
        if (net_grant_lost(g, asked, now)) TRANSPORT_CNT(ep, NET_GRANT_CUTS);
      } else {
        int r = net_grant_silence(g, pl->silences > 0, asked, now);
        if (r == 2) TRANSPORT_CNT(ep, NET_GRANT_RESETS);
        else if (r == 1) TRANSPORT_CNT(ep, NET_GRANT_CUTS);
      }
    }
    net_pull_silence(np, pl, pl->heard_ns > pl->reasked_ns ? 0 : pl->silences + 1);
    if (pl->silences == 1) {
      /* Silent: what it was asked leaves the budget (it comes uncounted,
       * if it comes), and the others go first (net_pull_grant). */
      net_grant_forget(g, pl->out);
      pl->out = 0;
    }
    pl->reasked_ns = now;
    pl->asked_ns = now;
  }
  return !list_empty(&np->pull->pulls) || !list_empty(&np->pull->exports) || waiting;
}
