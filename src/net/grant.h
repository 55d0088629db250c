/* SPDX-License-Identifier: MIT */
/*
 * A receiver's grants (docs/protocol.md, "Congestion"): how many pulled
 * bytes may be on their way to one endpoint at once, from all its partners
 * together. The receiver asks for every run of a large message (pull.c):
 * what it asks is all that comes, so a budget kept near what the path
 * holds keeps the queue at the switch port toward it short, however many
 * senders there are.
 *
 * The budget starts at one block and grows by what comes while nothing is
 * lost (slow start). A loss the caller reads as a queue's (pull.c: while
 * several partners send to us, or a tail drop) halves it, once per episode: losses of
 * what was asked before the last cut are that cut's (NewReno's recovery
 * point, in time). Two silences in a row (nothing came from anyone) put
 * it back to the floor. After a cut it grows once per budget's worth of
 * bytes that come (a round trip) by a binary search (BIC): half the way
 * back to where it lost, at most an eighth of itself; past that point by
 * a step that doubles each round trip from one frame, probing. It never
 * goes below the floor nor above the cap (the share of the socket's
 * buffer the pulls may fill). The floor is what keeps the port busy: the
 * bytes the path holds (the rate measured times the network's shortest
 * wait) and those that come while someone on the way waits for a core
 * (the longest wait seen, windowed: ours between two passes while we
 * pull, a sender's wait to read a PULL: not its pacing), at least two
 * frames and at most half
 * the first budget (several runs on their way, so that a lost one shows
 * by those behind it and not by a timer). Before a rate and a wait are
 * measured it is that half.
 *
 * A queue's delay cuts it too, before anything is lost. The wait between
 * asking a run and its first frame, less the time its sender held the
 * PULL (its kernel's stamp of the PULL's arrival to its answer; ours of
 * the answer's: wire.h), is the network's alone, whoever waited for a
 * core; beyond the shortest such wait it is a queue on the way, smoothed
 * as a round trip is (a frame that waited for a bridge's or a kernel's
 * turn on a core is one sample; a queue stands). Past the
 * target, the time the port takes to send the floor's bytes at the rate
 * measured, the budget is cut by the share of the delay beyond it (Swift's
 * multiplicative decrease, at most half), once a round trip. Only on a
 * path that drops: within NET_GRANT_LOSSY_NS of a loss read as a queue's.
 * Where none is, the wait beyond the shortest is the hosts' own kernels
 * moving the bytes (two namespaces on veth: tens of microseconds at 4
 * GB/s), which a smaller budget would only slow. Such a cut is no
 * loss's episode: a loss of what was asked before it halves the budget it
 * began from (one cut, the larger of the two).
 *
 * It measures the bandwidth-delay product (the most bytes per second that
 * came over a millisecond or more, times the network's shortest wait) and
 * reports it, with the queue it implies (fmx_counters). It bounds the
 * floor from below only where the floor is under half the first budget:
 * where senders wait for cores the bytes asked include those a sender
 * holds, and a floor at the whole wait's BDP, above that half, let 15
 * senders overflow a 64 KB port (docs/protocol.md).
 *
 * Its own state and the clock as arguments: no socket, no endpoint
 * (tests/unit/test_net_grant.c drives it on a made-up clock, with a
 * simulated port and up to 1,000 senders).
 */
#ifndef FMX_NET_GRANT_H
#define FMX_NET_GRANT_H

#include <stdint.h>

struct net_grant {
  uint64_t cap;      /* the most bytes on their way */
  uint64_t unit;     /* a frame's bytes: the least step */
  uint64_t least;    /* the floor at most: half the first budget */
  uint64_t budget;   /* bytes that may be asked and not come */
  uint64_t thresh;   /* slow start below it */
  uint64_t lost_at;  /* the budget when it last lost */
  uint64_t probe;    /* the step past lost_at */
  uint64_t inflight; /* bytes asked and not come */
  uint64_t grown;    /* bytes come toward the next step */
  uint64_t cut_ns;   /* the last cut on a loss: what was asked before it and lost is of its episode */
  uint64_t delay_cut_ns; /* the last cut on a queue's delay (net_grant_delay; lost_at: where it began) */
  uint64_t came_ns;  /* when bytes last came */
  /* Measured: windowed, the current window and the one before. */
  uint64_t rtt_min_ns[2];
  uint64_t rate[2];   /* bytes per second come, the most in a sample */
  uint64_t epoch_ns;  /* when the current window began */
  uint64_t srtt_ns;   /* the wait for a run's first frame, smoothed */
  uint64_t span_ns;   /* the delivery sample under way began (0: none) */
  uint64_t span_bytes;
  uint64_t net_min_ns[2]; /* the network's shortest wait (net_grant_delay), windowed as rtt_min_ns */
  uint64_t qdelay_ns;     /* the queue's delay last measured */
  uint64_t qsmooth_ns;    /* and smoothed (what a cut reads) */
  uint64_t lossy_ns;      /* a loss read as a queue's last came (0: none yet) */
  uint64_t away_ns[2];    /* the longest wait for a core, ours or a sender's (net_grant_away), windowed */
  uint64_t cuts, resets, delay_cuts;
};

/* Windows of the measured minimum and maximum: a path that changes is
 * seen within two. */
#define NET_GRANT_EPOCH_NS 500000000ull
/* The shortest span a delivery rate is sampled over: frames that waited
 * in the socket while the process was off its core are read at once, and
 * over a round trip of microseconds they would read as gigabytes a
 * second. */
#define NET_GRANT_SPAN_NS 1000000ull

void net_grant_init(struct net_grant *g, uint64_t cap, uint64_t unit, uint64_t first);
/* Someone on the way waited ns for a core: the receiver between two of
 * its passes while it pulled, or a sender before it read a PULL (its
 * PULL_REPLY's flags). */
void net_grant_away(struct net_grant *g, uint64_t ns, uint64_t now);
/* Bytes that may be asked now. */
static inline uint64_t net_grant_room(const struct net_grant *g) {
  return g->budget > g->inflight ? g->budget - g->inflight : 0;
}
void net_grant_asked(struct net_grant *g, uint64_t bytes, uint64_t now);
/* Bytes asked came (duplicates are not counted: their frame came once). */
void net_grant_came(struct net_grant *g, uint64_t bytes, uint64_t now);
/* Bytes asked that will not come: their pull ended. */
void net_grant_forget(struct net_grant *g, uint64_t bytes);
/* A run asked once saw its first frame `ns` after it was asked. */
void net_grant_rtt(struct net_grant *g, uint64_t ns, uint64_t now);
/* Frames lost that the caller reads as a queue's (pull.c, net_pull_crowded), the
 * newest of them asked at asked_ns. 1 when the budget was cut: the first
 * loss of an episode. */
int net_grant_lost(struct net_grant *g, uint64_t asked_ns, uint64_t now);
/* How long a loss read as a queue's makes a queue's delay count: two
 * windows of the measured minimum. */
#define NET_GRANT_LOSSY_NS (2 * NET_GRANT_EPOCH_NS)
/* A run asked once had its first frame come after `ns` of the network's
 * (the wait less its sender's hold). 1 when it cut the budget: the delay
 * beyond the shortest is past net_grant_delay_target, on a path that
 * dropped lately. */
int net_grant_delay(struct net_grant *g, uint64_t ns, uint64_t now);
/* The queue's delay allowed: the floor's bytes at the rate measured (0
 * until a rate is: no cut). */
uint64_t net_grant_delay_target(const struct net_grant *g);
/* The frames in a row at the end of a run whose loss, with a frame of
 * the run come, reads as a queue's: 0.1^4 of runs at 10% random loss. */
#define NET_GRANT_TAIL 4

/* A run of frames lo..hi-1 (bits of `missing`, which are set for those
 * that have not come) lost its end, NET_GRANT_TAIL frames or more in a
 * row, while a frame of it came: a full queue on the way (the port in
 * front of us, an uplink shared with others, the sender's own) drops the
 * end of a burst, and from one partner alone that is the only loss
 * pull.c reads as congestion. A lost PULL loses the whole run; random
 * loss (a lossy line, a filter) a frame here and there. */
static inline int net_grant_tail(uint64_t missing, unsigned lo, unsigned hi) {
  if (hi > 64 || hi < lo || hi - lo <= NET_GRANT_TAIL) return 0;
  uint64_t run = (hi - lo == 64 ? ~0ull : (1ull << (hi - lo)) - 1) << lo;
  uint64_t tail = ((1ull << NET_GRANT_TAIL) - 1) << (hi - NET_GRANT_TAIL);
  return (missing & tail) == tail && (run & ~missing) != 0;
}
/* Nothing came from anyone for a whole wait: a cut as for a loss the
 * first time (1 when it cut), back to the floor when it was already silent
 * (again != 0; 2). Not a queue's loss (a sender off its core is silent
 * too): a queue's delay does not count after it (net_grant_delay). */
int net_grant_silence(struct net_grant *g, int again, uint64_t asked_ns, uint64_t now);
/* The shortest wait between asking a run and its first frame, windowed
 * (0 until one is seen). */
uint64_t net_grant_rtt_min(const struct net_grant *g);
/* The network's shortest wait, windowed (0 until one is seen). */
uint64_t net_grant_net_min(const struct net_grant *g);
/* The bandwidth-delay product measured: the rate times the network's
 * shortest wait, or the shortest wait where no sender said its hold (0
 * until both are seen). */
uint64_t net_grant_bdp(const struct net_grant *g);
/* How long what is on its way takes to come at the rate measured (0
 * until a rate is): a run asked last waits behind it. */
uint64_t net_grant_drain_ns(const struct net_grant *g);
/* The least budget (the floor, above). */
uint64_t net_grant_floor(const struct net_grant *g);

#endif
