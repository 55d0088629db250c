/* SPDX-License-Identifier: MIT */
/* Reliability of a partner's packet stream: see rel.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/rel.h"
#include "net/wire.h"

static struct net_rel_slot *tx_slot(const struct net_rel *r, uint32_t seq) { return &r->tx[seq % r->tx_cap]; }
static struct net_rel_slot *rx_slot(const struct net_rel *r, uint32_t seq) { return &r->rx[seq % r->rx_cap]; }
/* The packet come early with seq, kept (NULL: none, or beyond the ring). */
static struct net_rel_slot *rx_held(const struct net_rel *r, uint32_t seq) {
  return seq - r->expect < r->rx_cap && rx_slot(r, seq)->pkt ? rx_slot(r, seq) : NULL;
}

static void slot_free(struct net_rel *r, struct net_rel_slot *s) {
  net_pool_put(r->cfg->pool, s->pkt);
  memset(s, 0, sizeof *s);
}

/* A ring of at least `need` slots, the `n` slots from seq `from` moved to
 * their places in it: 0, or -ENOMEM (the old one kept). Always a power of
 * two (the window rounded up at most), so that seq % cap stays in order
 * across the wrap of the 32-bit seq: with a window of 100, seqs 2^32 - 4
 * and 92, both in flight, shared a slot. */
static int grow(struct net_rel_slot **ring, uint16_t *cap, uint32_t need, uint32_t from, uint32_t n) {
  uint32_t c = *cap ? *cap : NET_REL_RING_FIRST;
  while (c < need) c *= 2;
  if (c <= *cap) return 0;
  struct net_rel_slot *nr = calloc(c, sizeof *nr);
  if (!nr) return -ENOMEM;
  for (uint32_t i = 0; i < n; i++) nr[(from + i) % c] = (*ring)[(from + i) % *cap];
  free(*ring);
  *ring = nr;
  *cap = (uint16_t)c; /* at most the window rounded up: a 16-bit count (rel.h) */
  return 0;
}

int net_rel_init(struct net_rel *r, const struct net_rel_cfg *cfg, uint32_t tx_start, uint32_t rx_start) {
  memset(r, 0, sizeof *r);
  if (!cfg || !cfg->pool || !cfg->counts || cfg->window == 0 || cfg->window > NET_REL_WINDOW_MAX || !cfg->rto_ns || cfg->rto_max_ns < cfg->rto_ns)
    return -EINVAL;
  r->cfg = cfg;
  r->next_seq = r->una = r->probed = r->recover = tx_start;
  r->cwnd = (uint16_t)(cfg->window < NET_REL_CWND_FIRST ? cfg->window : NET_REL_CWND_FIRST);
  r->expect = rx_start;
  r->rto_ns = cfg->rto_ns;
  return 0;
}

void net_rel_fini(struct net_rel *r) {
  for (uint32_t i = 0; i < r->tx_cap; i++) slot_free(r, &r->tx[i]);
  for (uint32_t i = 0; i < r->rx_cap; i++) slot_free(r, &r->rx[i]);
  free(r->tx);
  free(r->rx);
  r->tx = r->rx = NULL;
  r->tx_cap = r->rx_cap = 0;
}

size_t net_rel_ring_bytes(const struct net_rel *r) { return ((size_t)r->tx_cap + r->rx_cap) * sizeof(struct net_rel_slot); }

int net_rel_can_send(const struct net_rel *r) { return r->next_seq - r->una < r->cwnd; }

/* n packets newly acked: the window grows by as many up to ssthresh, by
 * one a window's worth above it, up to the configured one. Grown by as
 * many always, a cut window was back whole a round trip later: 7
 * namespaced hosts sending eager messages of 32 KiB into one 1 Gb/s port
 * of 64 KB (bench/incast.py --size 32768 --msgs 64) moved 45-93 MB/s, a
 * third of the frames dropped at the port and 5,300-6,700 packets resent
 * by the timer a run; 114-116 MB/s, 490-920 frames of 11,100 dropped and
 * 1,300-2,000 resent with Reno's growth and the timer's cut (cwnd_cut). */
static void cwnd_grow(struct net_rel *r, uint32_t n) {
  uint32_t w = r->cwnd + n;
  if (r->ssthresh && r->cwnd >= r->ssthresh) {
    uint32_t a = r->ca_acked + n;
    for (w = r->cwnd; a >= w; w++) a -= w;
    r->ca_acked = (uint16_t)a; /* below w <= NET_REL_WINDOW_MAX */
  }
  r->cwnd = (uint16_t)(w < r->cfg->window ? w : r->cfg->window);
}

/* A copy of a packet sent again while a cut may be undone (a resend of its
 * recovery, a probe, what a peer's pull waits for): the peer gets it twice
 * too unless the first was lost. */
static void count_copy(struct net_rel *r) {
  if (r->undo_cwnd && r->undo_resends < UINT16_MAX) r->undo_resends++;
}

/* Packet seq is resent, for a hole the peer reported at it or on the
 * timer: the window halves, once for what was in flight at the last cut
 * (NewReno's recovery point). Eager messages of 32 KiB from 7 namespaced
 * hosts into one 1 Gb/s port of 64 KB (bench/incast.py --size 32768
 * --msgs 256): 41 MB/s with the window at FMX_NET_WINDOW, 77 with it (TCP
 * BTL 51-60). The resends of the cut's recovery are counted: if the peer
 * says they all came twice, nothing was lost (net_rel_on_dups). */
static void cwnd_cut(struct net_rel *r, uint32_t seq) {
  if (net_seq_lt(seq, r->recover)) {
    count_copy(r);
    return;
  }
  uint32_t half = (r->next_seq - r->una) / 2;
  if (half > r->cwnd / 2u) half = r->cwnd / 2u;
  if (half < NET_REL_CWND_MIN) half = NET_REL_CWND_MIN;
  r->undo_cwnd = r->cwnd;
  r->undo_ssthresh = r->ssthresh;
  r->undo_resends = 1;
  r->cwnd = (uint16_t)(half < r->cfg->window ? half : r->cfg->window);
  r->ssthresh = r->cwnd;
  r->ca_acked = 0;
  r->recover = r->next_seq;
  r->cfg->counts->cwnd_cuts++;
}

void net_rel_on_dups(struct net_rel *r, unsigned n) {
  if (!r->undo_cwnd || !n) return;
  if (n < r->undo_resends) {
    r->undo_resends = (uint16_t)(r->undo_resends - n);
    return;
  }
  /* Late acks, not losses: a peer waiting for a core (ranks outnumber
   * cores) acks what came meanwhile only when it runs, after our timer;
   * or a train's rest that reached its bulk socket before the head's
   * frame. LAMMPS on 8 namespaced hosts on 2 cores: 253 of 255 cuts
   * undone in a run, the loop as fast as with no cut on the timer (1.29
   * s against 1.30); 1.75 s with the cuts kept. */
  if (r->cwnd < r->undo_cwnd) r->cwnd = r->undo_cwnd;
  r->ssthresh = r->undo_ssthresh;
  r->ca_acked = 0;
  r->undo_cwnd = 0;
  /* Its recovery is over: a hole or a timeout from now on is news, and
   * cuts again (the copies still on their way may then count toward that
   * cut: the count, not which packets). */
  r->recover = r->una;
  r->cfg->counts->cwnd_undone++;
}

int net_rel_idle(const struct net_rel *r) { return r->next_seq == r->una; }

uint32_t net_rel_sends(const struct net_rel *r, uint32_t seq) {
  if (net_seq_lt(seq, r->una) || !net_seq_lt(seq, r->next_seq)) return 0; /* and so a ring holds it */
  return tx_slot(r, seq)->tries;
}

int net_rel_keep(struct net_rel *r, uint8_t *pkt, size_t len, uint64_t now) {
  if (!net_rel_can_send(r)) return -EAGAIN;
  uint32_t inflight = r->next_seq - r->una;
  if (inflight >= r->tx_cap && grow(&r->tx, &r->tx_cap, inflight + 1, r->una, inflight) < 0) return -ENOMEM;
  struct net_rel_slot *s = tx_slot(r, r->next_seq);
  s->pkt = pkt;
  s->len = (uint32_t)len;
  s->tries = 1;
  s->sent_ns = now;
  if (net_rel_idle(r)) r->progress_ns = now; /* the dead clock runs from the first packet in flight */
  r->next_seq++;
  return 0;
}

int net_rel_queue(struct net_rel *r, const uint8_t *pkt, size_t len, uint64_t now) {
  if (len > r->cfg->pool->size) return -EMSGSIZE;
  if (!net_rel_can_send(r)) return -EAGAIN;
  uint8_t *b = net_pool_get(r->cfg->pool);
  if (!b) return -ENOMEM;
  memcpy(b, pkt, len);
  int rc = net_rel_keep(r, b, len, now);
  if (rc < 0) net_pool_put(r->cfg->pool, b);
  return rc;
}

static void send_again(struct net_rel *r, struct net_rel_slot *s, uint64_t now, net_rel_emit_fn emit, void *arg) {
  net_patch_ack(s->pkt, r->expect);
  emit(arg, s->pkt, s->len);
  s->sent_ns = now;
  s->tries++;
}

static void resend(struct net_rel *r, struct net_rel_slot *s, uint64_t now, net_rel_emit_fn emit, void *arg) {
  send_again(r, s, now, emit, arg);
  r->cfg->counts->resent++;
}

/* Sent again before its resend wait: a tail probe, or the caller's. Its
 * send time and count stay the first send's: its ack still times a round
 * trip (from the first send: long, if that was lost), and its resend wait
 * still runs. Counted a second send, as Karn's rule would have it, those
 * late acks were not taken, and the waits measured fell short of a deep
 * queue's: 8 MB behind a 1 Gb/s uplink, up to 362 records resent by the
 * timer in 64 messages against 96-137 without the probes. */
static void send_early(struct net_rel *r, struct net_rel_slot *s, net_rel_emit_fn emit, void *arg) {
  count_copy(r);
  net_patch_ack(s->pkt, r->expect);
  emit(arg, s->pkt, s->len);
  r->cfg->counts->early_resends++;
}

/* The wait before a resend: measured (srtt + 4 rttvar) within
 * [rto_min_ns, rto_max_ns], or rto_ns until something is measured. Above
 * the first guess too: a partner whose acks come late (its rank waits for
 * a core among more ranks than cores, a time slice or more) is resent to
 * only once its acks are later than they have been, not every rto_ns
 * (8 namespaced hosts on 2 cores, LAMMPS with its halos eager: 22,699
 * packets resent by the timer and 22,742 duplicates dropped in one run,
 * with the wait capped at the 2 ms first guess). */
static uint64_t base_rto(const struct net_rel *r) {
  if (!r->cfg->rto_min_ns || !r->srtt_ns) return r->cfg->rto_ns;
  uint64_t w = r->srtt_ns + 4 * r->rttvar_ns;
  return w < r->cfg->rto_min_ns ? r->cfg->rto_min_ns : w > r->cfg->rto_max_ns ? r->cfg->rto_max_ns : w;
}

/* The ack of the packet the timer sent again alone (net_rel_timers)
 * acked it and nothing after it, and the peer holds nothing beyond: the
 * rest of that flight was lost too. It goes now (what a window allows),
 * not a backed-off wait later; what was sent since the timeout (younger
 * than a resend wait) is left to its own. */
static void timed_out(struct net_rel *r, uint64_t now, net_rel_emit_fn emit, void *arg) {
  uint32_t n = 0;
  uint64_t wait = base_rto(r);
  for (uint32_t seq = r->una; seq != r->next_seq && n < r->cwnd; seq++) {
    struct net_rel_slot *s = tx_slot(r, seq);
    if (!s->pkt || s->sacked || now - s->sent_ns < wait) continue;
    cwnd_cut(r, seq); /* below the timeout's cut: a copy an undo waits for */
    resend(r, s, now, emit, arg);
    n++;
  }
}

int net_rel_on_ack(struct net_rel *r, uint32_t ack, uint64_t sack, uint64_t now, net_rel_emit_fn emit, void *arg) {
  if (net_seq_lt(ack, r->una) || net_seq_lt(r->next_seq, ack)) {
    r->cfg->counts->bad_acks++; /* older than what was acked (reordered: harmless) or beyond what we sent */
    return -1;
  }
  /* The timer sent the oldest packet again alone (net_rel_timers): what
   * this ack says is news of the flight before it. */
  int timed = r->frto;
  if (ack != r->una) {
    uint32_t from = r->una;
    const struct net_rel_slot *last = tx_slot(r, ack - 1);
    /* Karn: a packet sent again gives no round trip; the next sent once
     * and acked measures it and undoes the backoff, and the ack of one
     * sent again undoes half of it. Undone whole at every ack, a path
     * whose acks all come later than the quiet round trips measured
     * (behind a queue of the peer's answers on its 1 Gb/s uplink) had
     * every packet resent before its ack came, no round trip measured and
     * the wait never grown: 1,391 resends in 64 messages of 1 MiB. Kept
     * whole, the next record lost at random waited the whole backoff (16
     * MiB ping-pongs at 10% loss: 0.83x). */
    int measured = !r->cfg->rto_min_ns || (last->tries == 1 && !last->gap_resent);
    if (r->cfg->rto_min_ns && measured) {
      uint64_t rtt = now - last->sent_ns, us = rtt / 1000 ? rtt / 1000 : 1;
      net_rtt_sample(&r->srtt_ns, &r->rttvar_ns, rtt);
      if (!r->rtt_min_us || us < r->rtt_min_us) r->rtt_min_us = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
    }
    cwnd_grow(r, ack - r->una);
    for (; r->una != ack; r->una++) slot_free(r, tx_slot(r, r->una));
    if (net_seq_lt(r->recover, r->una)) r->recover = r->una; /* never 2^31 behind: its compare holds */
    uint64_t base = base_rto(r);
    r->rto_ns = measured || r->rto_ns / 2 < base ? base : r->rto_ns / 2;
    r->progress_ns = now;
    if (r->frto) {
      r->frto = 0;
      if (ack == from + 1 && !sack) timed_out(r, now, emit, arg);
    }
  }
  if (!sack) return 0;
  /* The peer holds packets after a hole: mark them, resend the holes
   * below the last one once each; after a timeout, again those whose
   * resend is a resend wait old (lost too: the timer would only have
   * sent them one a timeout). */
  uint32_t inflight = r->next_seq - r->una, top = 0;
  for (uint32_t i = 0; i < 64 && i + 1 < inflight; i++)
    if (sack >> i & 1) {
      tx_slot(r, ack + 1 + i)->sacked = 1;
      top = i + 1;
    }
  uint64_t wait = timed ? base_rto(r) : 0;
  for (uint32_t i = 0; i < top; i++) {
    struct net_rel_slot *s = tx_slot(r, ack + i);
    if (s->pkt && !s->sacked && (!s->gap_resent || (timed && now - s->sent_ns >= wait))) {
      s->gap_resent = 1;
      r->cfg->counts->gap_resends++;
      cwnd_cut(r, ack + i);
      resend(r, s, now, emit, arg);
    }
  }
  return 0;
}

void net_rel_unback(struct net_rel *r) { r->rto_ns = base_rto(r); }

/* A tail loss probe (RACK-TLP's, RFC 8985): the last packet sent, not
 * acked two round trips and the peer's ack delay after it went, is sent
 * again once, before its resend wait. A lost record at the end of what we
 * sent (an RTS, a CTS, a FIN: nothing comes after it to show the hole) is
 * then found by the ack the copy brings (the peer acks a duplicate at
 * once, and its SACK names any hole before it) rather than by the wait,
 * srtt + 4 rttvar: with a partner's acks queued behind its answers to our
 * pulls the round trips measured 0.9 ms give or take 1.1, and the wait
 * 5-11 ms (16 MiB ping-pongs at 10% loss). Once a flight of packets (until
 * another is queued); never before the wait's floor.
 *
 * The round trip is the shortest measured, not the smoothed one, unless
 * the caller is crowded: a peer that computes between its calls (a 16 MiB
 * ping-pong checking every byte) acks what came meanwhile only then, and
 * those round trips (srtt 14.6 ms, a probe after 29 ms and a resend after
 * 44 ms, for every RTS or FIN lost) say how long it computes, not how
 * long the path takes. A probe to a peer that merely computes costs a
 * packet a flight; where ranks wait for cores, that would be most flights. */
static int probe_tail(struct net_rel *r, uint64_t now, net_rel_emit_fn emit, void *arg) {
  if (!r->srtt_ns || r->probed == r->next_seq) return 0;
  struct net_rel_slot *s = tx_slot(r, r->next_seq - 1);
  int crowded = r->cfg->crowded && *r->cfg->crowded;
  uint64_t rtt = crowded || !r->rtt_min_us ? r->srtt_ns : r->rtt_min_us * 1000ull;
  uint64_t pto = 2 * rtt + r->cfg->ack_delay_ns;
  if (pto < r->cfg->rto_min_ns) pto = r->cfg->rto_min_ns;
  if (!s->pkt || s->sacked || s->tries != 1 || pto >= r->rto_ns || now - s->sent_ns < pto) return 0;
  r->probed = r->next_seq;
  send_early(r, s, emit, arg);
  return 1;
}

int net_rel_resend_before(struct net_rel *r, uint32_t upto, uint32_t max, net_rel_emit_fn emit, void *arg) {
  uint32_t n = 0;
  for (uint32_t seq = r->una; seq != r->next_seq && net_seq_lt(seq, upto) && n < max; seq++) {
    struct net_rel_slot *s = tx_slot(r, seq);
    if (!s->pkt || s->sacked) continue;
    send_early(r, s, emit, arg);
    n++;
  }
  return (int)n;
}

int net_rel_timers(struct net_rel *r, uint64_t now, uint32_t max, net_rel_emit_fn emit, void *arg) {
  if (net_rel_idle(r)) return 0;
  if (now - r->progress_ns >= r->cfg->dead_ns) return -ETIMEDOUT;
  if (!max) return 0;
  /* F-RTO's first step (RFC 5682): the oldest packet due goes again
   * alone, and alone at each timeout until an ack comes. A peer that
   * merely acked late (it waited for a core) then acks all it got,
   * beyond that packet, and nothing else went twice; an ack of that
   * packet alone says the rest was lost (timed_out). Resending all that
   * was due, LAMMPS on 8 namespaced hosts on 2 cores resent 4,046-5,303
   * packets by the timer a run, every one a duplicate; with this, 228-964
   * (4 interleaved reps). */
  for (uint32_t seq = r->una; seq != r->next_seq; seq++) {
    struct net_rel_slot *s = tx_slot(r, seq);
    if (!s->pkt || s->sacked || now - s->sent_ns < r->rto_ns) continue;
    r->frto = 1;
    r->probed = r->next_seq; /* no tail probe in this flight on top: the backoff lifts its bar */
    cwnd_cut(r, seq);
    resend(r, s, now, emit, arg);
    r->rto_ns = r->rto_ns * 2 > r->cfg->rto_max_ns ? r->cfg->rto_max_ns : r->rto_ns * 2;
    return 1;
  }
  return probe_tail(r, now, emit, arg);
}

static void note_received(struct net_rel *r, uint64_t now) {
  if (!r->unacked++) r->unacked_since_ns = now;
}

int net_rel_recv(struct net_rel *r, uint32_t seq, const uint8_t *pkt, size_t len, uint64_t now) {
  if (net_seq_lt(seq, r->expect)) {
    r->cfg->counts->dups++;
    if (r->dups < NET_REL_DUPS_MAX) r->dups++;
    r->ack_now = 1; /* it came again: our ack was likely lost */
    return NET_REL_DUP;
  }
  if (seq - r->expect >= r->cfg->window) {
    r->cfg->counts->far++;
    return NET_REL_FAR;
  }
  if (seq == r->expect) {
    r->expect++;
    note_received(r, now);
    return NET_REL_NEW;
  }
  if (rx_held(r, seq)) {
    r->cfg->counts->dups++;
    if (r->dups < NET_REL_DUPS_MAX) r->dups++;
    r->ack_now = 1;
    return NET_REL_DUP;
  }
  uint32_t ahead = seq - r->expect;
  if (ahead >= r->rx_cap && grow(&r->rx, &r->rx_cap, ahead + 1, r->expect, r->rx_cap) < 0) return -ENOMEM;
  struct net_rel_slot *s = rx_slot(r, seq);
  if (len > r->cfg->pool->size || !(s->pkt = net_pool_get(r->cfg->pool))) return -ENOMEM;
  memcpy(s->pkt, pkt, len);
  s->len = (uint32_t)len;
  r->cfg->counts->early++;
  note_received(r, now);
  r->ack_now = 1; /* a hole: tell the sender at once (resend on gap) */
  return NET_REL_EARLY;
}

uint8_t *net_rel_pop(struct net_rel *r, size_t *len) {
  struct net_rel_slot *s = rx_held(r, r->expect);
  if (!s) return NULL;
  uint8_t *p = s->pkt;
  *len = s->len;
  memset(s, 0, sizeof *s);
  r->expect++;
  return p;
}

int net_rel_ack_due(const struct net_rel *r, uint64_t now) {
  if (r->ack_now) return 1;
  if (!r->unacked) return 0;
  return r->unacked >= r->cfg->ack_every || now - r->unacked_since_ns >= r->cfg->ack_delay_ns;
}

uint32_t net_rel_ack_value(const struct net_rel *r) { return r->expect; }

uint64_t net_rel_sack(const struct net_rel *r) {
  uint64_t m = 0;
  for (uint32_t i = 0; i < 64 && i + 1 < r->cfg->window; i++)
    if (rx_held(r, r->expect + 1 + i)) m |= 1ull << i;
  return m;
}

unsigned net_rel_dups(const struct net_rel *r) { return r->dups; }

void net_rel_acked(struct net_rel *r) {
  r->unacked = 0;
  r->ack_now = 0;
  r->dups = 0;
}

void net_rel_acked_on_data(struct net_rel *r) {
  r->unacked = 0;
  r->ack_now = r->dups != 0;
}
