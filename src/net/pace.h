/* SPDX-License-Identifier: MIT */
/*
 * A sender's pacing of its answers to pulls (docs/protocol.md,
 * "Congestion"): how many bytes may wait in our own socket, not yet on
 * the line, before the next answer goes.
 *
 * A receiver's budget (grant.h) may ask one sender for more than its own
 * link drains in a round trip: with nothing dropped anywhere, it grows to
 * its cap, and the excess waits in the sender's socket (4 MiB of it at
 * 1 Gb/s is 33 ms). Every packet queued behind it waits too: the acks,
 * RTS and FIN records, the answers to other receivers; their resend
 * timers, measured on quiet round trips, fire for nothing (the simulator's
 * lone sender at 1 Gb/s resent 289 packets with none lost). So answers go
 * only while the socket holds less than the limit: what our line drains
 * in span_ns at the rate measured, and at least one block's packets (one
 * PULL's answer, a GSO send). The rest wait in their partner's queue
 * (pull_send.c), for the next look.
 *
 * The rate is measured from the socket itself, in its own unit (what the
 * kernel charges a packet, more than its bytes): over a span of span_ns
 * or more during which it never emptied, what it held, plus what our
 * sends added (read after each), less what it holds now, left for the
 * line (the most in this window or the last: NET_GRANT_EPOCH_NS, as
 * grant.h's). One state per socket. A socket that hands its packets on at
 * once (veth: nothing waits in ours) always has room, and nothing is
 * paced.
 *
 * Its own state and the clock as arguments (tests/unit/test_net_pace.c).
 */
#ifndef FMX_NET_PACE_H
#define FMX_NET_PACE_H

#include <stdint.h>

struct net_pace {
  uint64_t least;    /* the least limit: one PULL's answer */
  uint64_t span_ns;  /* the queue may take this long to drain; the shortest span a rate is sampled over */
  uint64_t rate[2];  /* bytes per second the socket drained, the most in this window and the last */
  uint64_t epoch_ns; /* when this window began */
  uint64_t at_ns;    /* the sample under way began (0: none) */
  uint64_t held;     /* what the socket held then */
  uint64_t handed;   /* what our sends added since */
  uint64_t last;     /* what it held at the last reading */
};

void net_pace_init(struct net_pace *p, uint64_t least, uint64_t span_ns, uint64_t now);
/* The socket holds `queued` bytes now: 1 when another answer may go. */
int net_pace_room(struct net_pace *p, uint64_t queued, uint64_t now);
/* A rate sample is under way: what our sends add counts (else the next
 * look begins one, and nothing needs reading after a send). */
static inline int net_pace_sampling(const struct net_pace *p) { return p->held != 0; }
/* The socket holds `queued` right after a send of ours. */
static inline void net_pace_sent(struct net_pace *p, uint64_t queued) {
  if (queued > p->last) p->handed += queued - p->last;
  p->last = queued;
}
/* The bytes it may hold before an answer waits. */
uint64_t net_pace_limit(const struct net_pace *p);

#endif
