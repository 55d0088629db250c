/* SPDX-License-Identifier: MIT */
/*
 * A sender's pacing (src/net/pace.c) on a made-up clock: the limit is one
 * block until a rate is measured; a socket that drains at a line's rate
 * while it never empties is measured at that rate, and the limit becomes
 * what that rate drains in the span; spans shorter than span_ns, and a
 * socket found empty, give no sample; the measured rate is forgotten two
 * windows later; a socket that never holds anything (veth) is never paced.
 */
#include <stdint.h>

#include "check.h"
#include "net/grant.h"
#include "net/pace.h"

#define US 1000ull
#define BLOCK 65507ull

/* A line of `rate` bytes/s fed one block whenever the socket has room,
 * looked at every `step` ns for `ns`: how many looks found no room. */
static uint64_t drive(struct net_pace *p, uint64_t *t, uint64_t rate, uint64_t step, uint64_t ns, uint64_t *queued) {
  uint64_t paced = 0;
  for (uint64_t end = *t + ns; *t < end; *t += step) {
    uint64_t left = rate / 1000000 * step / 1000;
    *queued = *queued > left ? *queued - left : 0;
    if (net_pace_room(p, *queued, *t)) {
      *queued += BLOCK;
      net_pace_sent(p, *queued);
    } else {
      paced++;
    }
  }
  return paced;
}

int main(void) {
  struct net_pace p;
  uint64_t t = 1000 * US, q = 0;
  net_pace_init(&p, BLOCK, 100 * US, t);
  CHECK_EQ(net_pace_limit(&p), BLOCK);
  CHECK(net_pace_room(&p, 0, t));
  CHECK(!net_pace_room(&p, BLOCK, t)); /* a block held: the next waits */

  /* 1 Gb/s, looked at every 10 us for 20 ms: the rate is measured within
   * 1%, the limit stays one block (1 Gb/s drains 12,500 B in 100 us), and
   * the socket never holds more than the limit and one block. */
  uint64_t paced = drive(&p, &t, 125000000ull, 10 * US, 20000 * US, &q);
  CHECK(paced > 0);
  CHECK(p.rate[0] >= 123750000ull && p.rate[0] <= 126250000ull);
  CHECK_EQ(net_pace_limit(&p), BLOCK);
  CHECK(q <= 2 * BLOCK);

  /* 100 Gb/s: the limit grows to what 100 us drain (1.25 MB). */
  paced = drive(&p, &t, 12500000000ull, 1 * US, 5000 * US, &q);
  uint64_t lim = net_pace_limit(&p);
  CHECK(lim >= 1200000ull && lim <= 1300000ull);

  /* Two windows later, with nothing held meanwhile (no sample), the rate
   * is forgotten: one block again. */
  q = 0;
  for (int i = 0; i < 3; i++) {
    t += NET_GRANT_EPOCH_NS;
    CHECK(net_pace_room(&p, 0, t));
  }
  CHECK_EQ(net_pace_limit(&p), BLOCK);

  /* A socket that hands everything on at once never paces. */
  struct net_pace v;
  net_pace_init(&v, BLOCK, 100 * US, t);
  for (int i = 0; i < 10000; i++) {
    t += 1 * US;
    CHECK(net_pace_room(&v, 0, t));
    CHECK(!net_pace_sampling(&v)); /* no read after its sends */
  }
  CHECK_EQ(v.rate[0], 0);

  /* Spans shorter than span_ns take no sample. */
  net_pace_init(&v, BLOCK, 100 * US, t);
  CHECK(net_pace_room(&v, 1000, t));
  net_pace_sent(&v, 1000 + BLOCK);
  CHECK(net_pace_room(&v, 1000, t + 50 * US));
  CHECK_EQ(v.rate[0], 0);
  CHECK(net_pace_room(&v, 1000, t + 150 * US)); /* 100 us and more since the sample began: one */
  CHECK(v.rate[0] > 0);
  CHECK_DONE("test_net_pace");
  return 0;
}
