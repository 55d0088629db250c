/* SPDX-License-Identifier: MIT */
/* A sender's pacing of its answers to pulls: pace.h. */
#include "net/pace.h"

#include "net/grant.h"

void net_pace_init(struct net_pace *p, uint64_t least, uint64_t span_ns, uint64_t now) {
  *p = (struct net_pace){.least = least, .span_ns = span_ns ? span_ns : 1, .epoch_ns = now};
}

uint64_t net_pace_limit(const struct net_pace *p) {
  uint64_t rate = p->rate[0] > p->rate[1] ? p->rate[0] : p->rate[1];
  /* rate x span in bytes, without overflow for any rate a line has */
  uint64_t drains = rate / 1000000 * p->span_ns / 1000;
  return drains > p->least ? drains : p->least;
}

int net_pace_room(struct net_pace *p, uint64_t queued, uint64_t now) {
  if (now - p->epoch_ns >= NET_GRANT_EPOCH_NS) {
    p->rate[1] = p->rate[0];
    p->rate[0] = 0;
    p->epoch_ns = now;
  }
  if (!p->at_ns || !p->held || !queued || now < p->at_ns) {
    /* Empty at either end: the line may have idled meanwhile, a sample
     * would read low. Begin one here. */
    p->at_ns = now;
    p->held = queued;
    p->handed = 0;
  } else if (now - p->at_ns >= p->span_ns) {
    uint64_t in = p->held + p->handed;
    if (in > queued) {
      uint64_t r = (in - queued) * 1000000000ull / (now - p->at_ns);
      if (r > p->rate[0]) p->rate[0] = r;
    }
    p->at_ns = now;
    p->held = queued;
    p->handed = 0;
  }
  p->last = queued;
  return queued < net_pace_limit(p);
}
