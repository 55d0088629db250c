/* SPDX-License-Identifier: MIT */
/*
 * Reliability of one partner's packet stream (DESIGN.md section 5, the
 * rules of Open-MX's library in OPENMX-NOTES.md B): sequence numbers,
 * cumulative acks piggybacked on data or sent alone (delayed), a selective
 * ack bitmap so a hole is resent at once (resend on gap), retransmission
 * after a timeout that backs off, duplicate suppression, a send window, and
 * a partner declared gone when nothing it acks moves for dead_ns.
 *
 * It knows no socket and no clock: the caller passes the time, hands it
 * packets already written in buffers of the endpoint's pool (pool.h;
 * header included, their seq field taken from next_seq), which it keeps
 * until acked and gives back to the pool, and transmits what it gives
 * back through emit; a packet sent
 * again carries the current ack (patched in here, net_patch_ack). Sequence numbers are
 * 32-bit and compared modulo 2^32. Not thread-safe: the endpoint's lock.
 */
#ifndef FMX_NET_REL_H
#define FMX_NET_REL_H

#include <stddef.h>
#include <stdint.h>

#include "net/pool.h"

/* What the streams of one cfg count, for fmx_counters: one set for them
 * all (a count per stream would be 48 bytes of every idle partner). */
struct net_rel_counts {
  uint64_t resent, gap_resends, early_resends, cwnd_cuts, cwnd_undone, dups, early, far, bad_acks;
};

struct net_rel_cfg {
  struct net_pool *pool; /* where the packets kept live (the endpoint's; required) */
  struct net_rel_counts *counts; /* where its streams count (required) */
  uint32_t window;       /* packets in flight at most (1..NET_REL_WINDOW_MAX) */
  uint64_t rto_ns;       /* a packet not acked this long is sent again (the first guess, until round
                          * trips are measured)... */
  uint64_t rto_min_ns;   /* the least the wait measured from round trips may be; 0: rto_ns, not measured */
  uint64_t rto_max_ns;   /* ...the wait doubling at each resend up to this, the most a measured one is */
  uint64_t dead_ns;      /* nothing acked for this long with packets in flight: the partner is gone */
  uint64_t ack_delay_ns; /* a packet received is acked within this... */
  uint32_t ack_every;    /* ...or at once once this many are not acked */
  /* The caller's flag, read as it changes (NULL: never): its partners may
   * wait for a core (ranks outnumber cores), so an ack later than the
   * path's shortest round trip says nothing of a loss (probe_tail). */
  const int *crowded;
};
#define NET_REL_WINDOW_MAX 4096

struct net_rel_slot {
  uint8_t *pkt; /* NULL: free */
  uint32_t len;
  uint32_t tries; /* sends so far (tx) */
  uint64_t sent_ns;
  uint8_t sacked, gap_resent;
};

struct net_rel {
  const struct net_rel_cfg *cfg; /* the caller's, shared by its streams: it outlives them */
  /* sending */
  uint32_t next_seq; /* the seq of the next packet queued */
  uint32_t una;      /* the oldest not acked */
  uint64_t rto_ns;   /* the current wait, backed off */
  uint64_t srtt_ns, rttvar_ns; /* round trips of packets acked at their first send (RFC 6298); 0: none yet */
  uint64_t progress_ns; /* when una last moved, or the first packet went out after an idle time */
  /* tx_cap slots (a ring by seq), grown as packets in flight need, up to
   * the window rounded up to a power of two (rx_cap likewise) */
  struct net_rel_slot *tx;
  uint16_t tx_cap;
  uint16_t cwnd;     /* the congestion window, packets in flight at most (net_rel_can_send) */
  uint32_t probed;   /* next_seq when the last packet was last sent again as a probe (net_rel_timers) */
  /* receiving */
  uint32_t expect; /* the next seq to deliver: the ack we send */
  uint32_t unacked;
  uint64_t unacked_since_ns;
  uint16_t ack_now : 1; /* a duplicate or a hole came: ack at once */
  uint16_t dups : 15;   /* duplicates come since our last ACK, said in the next (net_rel_dups) */
  /* Sending: the window after its last cut; from it on the window grows
   * by one packet a window's worth of acks (ca_acked counts toward it),
   * below it by a packet an ack (0: never cut, slow start). */
  uint16_t ssthresh, ca_acked;
  /* Sending: the window and ssthresh before the last cut, and the copies
   * sent again since that the peer has not yet said came twice; when it
   * has said so of as many, the cut is undone (undo_cwnd 0: nothing to
   * undo). */
  uint16_t undo_cwnd, undo_ssthresh, undo_resends;
  uint32_t rtt_min_us; /* the shortest round trip measured, in us (at least 1; 0: none yet) */
  struct net_rel_slot *rx; /* rx_cap slots for packets come early, grown as a hole's width needs */
  uint16_t rx_cap;
  uint8_t frto; /* the timer sent the oldest packet again alone; the next ack says whether more was lost */
  uint32_t recover; /* next_seq at the window's last cut: holes below it are that cut's */
};
_Static_assert(NET_REL_WINDOW_MAX <= UINT16_MAX / 2, "windows, rings and counts of a window fit 16 bits");

/* The congestion window of a new stream: one eager message's train (44
 * packets at MTU 1500) goes whole to a partner we have not lost to (how
 * it moves: net_rel_can_send). */
#define NET_REL_CWND_FIRST 64
/* The least: a record and its successor (a hole then shows). */
#define NET_REL_CWND_MIN 2

/* Results of net_rel_recv. */
enum { NET_REL_NEW = 1, NET_REL_EARLY = 2, NET_REL_DUP = 3, NET_REL_FAR = 4 };

typedef void (*net_rel_emit_fn)(void *arg, uint8_t *pkt, size_t len);

/* No memory is taken until packets are kept: a partner that never sends
 * nor sees a hole costs its struct alone; the rings grow by doubling
 * from NET_REL_RING_FIRST slots to the window rounded up to a power of
 * two (what they hold: 0 or -ENOMEM from the call that needed more). */
#define NET_REL_RING_FIRST 8
/* cfg is kept, not copied: it must outlive the stream (an endpoint's, for
 * all its partners). */
int net_rel_init(struct net_rel *r, const struct net_rel_cfg *cfg, uint32_t tx_start, uint32_t rx_start);
/* Bytes of ring the stream holds now (not the packets in it). */
size_t net_rel_ring_bytes(const struct net_rel *r);
void net_rel_fini(struct net_rel *r);

/* The peer's first seq, learnt after init (a handshake we began): only
 * before anything was received. */
static inline void net_rel_rx_start(struct net_rel *r, uint32_t rx_start) { r->expect = rx_start; }

/* Sending. Room for one more packet in the congestion window? It starts
 * at NET_REL_CWND_FIRST and grows by every packet acked up to the
 * configured window (slow start); it halves on a hole the peer reports or
 * a resend on the timer (once for what was in flight then: new packets
 * wait until half the flight is acked), and then grows by a packet a
 * window's worth of acks, unless the peer's duplicate counts undo the cut
 * (net_rel_on_dups). */
int net_rel_can_send(const struct net_rel *r);
/* Keep the packet of seq next_seq (len bytes, in a buffer of cfg.pool)
 * until it is acked, counted as sent at now: 0 (the buffer is the
 * stream's now; the caller transmits it from there), -EAGAIN (window
 * full), -ENOMEM (either way the buffer stays the caller's). */
int net_rel_keep(struct net_rel *r, uint8_t *pkt, size_t len, uint64_t now);
/* The same from a packet written elsewhere, copied into a buffer of the
 * pool: 0, -EAGAIN, -ENOMEM, -EMSGSIZE (larger than a buffer). */
int net_rel_queue(struct net_rel *r, const uint8_t *pkt, size_t len, uint64_t now);
/* An ack from the peer (any packet's ack field; sack from an ACK, else 0):
 * frees what it covers and resends at once the holes below a packet the
 * peer holds. Returns -1 for an ack outside what we sent (counted,
 * ignored). */
int net_rel_on_ack(struct net_rel *r, uint32_t ack, uint64_t sack, uint64_t now, net_rel_emit_fn emit, void *arg);
/* An ACK of the peer's says n packets of ours came to it twice since its
 * last (before the ack it carries is taken: net_rel_on_ack). */
void net_rel_on_dups(struct net_rel *r, unsigned n);
/* Resend the oldest packet that timed out, alone (max 0: none), or probe
 * the tail; -ETIMEDOUT once the partner is gone (dead_ns without an ack
 * while packets are in flight), else how many went (0 or 1). */
int net_rel_timers(struct net_rel *r, uint64_t now, uint32_t max, net_rel_emit_fn emit, void *arg);
/* The packets before seq upto not acked (nor held by the peer) go again
 * now, at most max: the caller knows one of them is missed. Their send
 * times and counts stay (send_early). How many went. */
int net_rel_resend_before(struct net_rel *r, uint32_t upto, uint32_t max, net_rel_emit_fn emit, void *arg);
/* Nothing of ours waits for an ack. */
int net_rel_idle(const struct net_rel *r);
/* The resend wait back to what round trips measure, its backoff undone:
 * a closing endpoint's last packets go again soon. */
void net_rel_unback(struct net_rel *r);
/* How many times packet seq went, while it waits for its ack (else 0). */
uint32_t net_rel_sends(const struct net_rel *r, uint32_t seq);

/* Receiving. A packet of seq arrived: NET_REL_NEW (the next in order:
 * deliver it, then each net_rel_pop), NET_REL_EARLY (kept until the hole
 * before it fills: a copy in a buffer of the pool), NET_REL_DUP or
 * NET_REL_FAR (beyond the window): drop it. -ENOMEM: not kept, as if lost. */
int net_rel_recv(struct net_rel *r, uint32_t seq, const uint8_t *pkt, size_t len, uint64_t now);
/* The next packet now in order, kept early (the caller gives it back to
 * cfg.pool), or NULL. */
uint8_t *net_rel_pop(struct net_rel *r, size_t *len);
/* Should an ACK go now (delayed ack due, too many unacked, duplicate)? */
int net_rel_ack_due(const struct net_rel *r, uint64_t now);
/* The ack to send (the next seq expected) and the selective bitmap: bit i
 * set when seq ack+1+i is held early. */
uint32_t net_rel_ack_value(const struct net_rel *r);
uint64_t net_rel_sack(const struct net_rel *r);
/* The duplicates come since our last ACK, for the next (at most
 * NET_REL_DUPS_MAX). */
#define NET_REL_DUPS_MAX 4095
unsigned net_rel_dups(const struct net_rel *r);
/* Our ack went out: in an ACK, which said net_rel_dups... */
void net_rel_acked(struct net_rel *r);
/* ...or on a packet of data, which cannot: an ACK still goes at once if
 * there are duplicates to say. */
void net_rel_acked_on_data(struct net_rel *r);

static inline int net_seq_lt(uint32_t a, uint32_t b) { return (int32_t)(a - b) < 0; }
/* seq was sent and is not acked yet. */
static inline int net_rel_in_flight(const struct net_rel *r, uint32_t seq) {
  return !net_seq_lt(seq, r->una) && net_seq_lt(seq, r->next_seq);
}

/* A round trip t measured (Karn: of something sent once): the smoothed
 * time and its mean deviation, as TCP keeps them (RFC 6298). */
static inline void net_rtt_sample(uint64_t *srtt, uint64_t *var, uint64_t t) {
  if (!*srtt) {
    *srtt = t;
    *var = t / 2;
    return;
  }
  uint64_t d = t > *srtt ? t - *srtt : *srtt - t;
  *var = *var - *var / 4 + d / 4;
  *srtt = *srtt - *srtt / 8 + t / 8;
}

#endif
