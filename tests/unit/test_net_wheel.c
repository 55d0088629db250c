/* SPDX-License-Identifier: MIT */
/*
 * The partners' timer wheel (src/net/wheel.c) on a made-up clock: timers
 * come due in order, never early, each once; one armed again sooner moves
 * and one armed later stays; cancelled ones never come; a wheel idle or
 * behind by more than a turn finds what is due; and 10,000 timers, most
 * far off, are taken by visits that grow with the ticks that passed, not
 * with the timers armed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "net/wheel.h"

#define TICK 50000ull /* 50 us */

static int take_all(struct net_wheel *w, uint64_t now, struct net_timer **got, int most) {
  int n = 0;
  struct net_timer *t;
  while ((t = net_wheel_expire(w, now)) != NULL) {
    CHECK(t->due <= now);
    CHECK(!net_timer_armed(t));
    CHECK(n < most);
    got[n++] = t;
  }
  CHECK(!w->armed || w->soonest > now);
  return n;
}

static void basics(void) {
  struct net_wheel w;
  struct net_timer a, b, c, *got[8];
  uint64_t t0 = 1000 * TICK + 7;
  net_wheel_init(&w, TICK, t0);
  net_timer_init(&a), net_timer_init(&b), net_timer_init(&c);
  CHECK(!net_wheel_due(&w, t0));
  CHECK(net_wheel_expire(&w, t0) == NULL);
  net_wheel_arm(&w, &a, t0 + 3 * TICK);
  net_wheel_arm(&w, &b, t0 + TICK / 2);
  net_wheel_arm(&w, &c, t0 + 10 * TICK);
  CHECK_EQ(w.armed, 3);
  CHECK_EQ(w.soonest, t0 + TICK / 2);
  CHECK_EQ(take_all(&w, t0 + TICK / 2 - 1, got, 8), 0); /* never early */
  CHECK_EQ(take_all(&w, t0 + TICK / 2, got, 8), 1);
  CHECK(got[0] == &b);
  net_wheel_arm(&w, &c, t0 + 2 * TICK); /* sooner: moves */
  net_wheel_arm(&w, &a, t0 + 20 * TICK); /* later: stays where it was */
  CHECK_EQ(a.due, t0 + 3 * TICK);
  CHECK_EQ(take_all(&w, t0 + 3 * TICK, got, 8), 2);
  CHECK(got[0] == &c && got[1] == &a);
  CHECK_EQ(w.armed, 0);
  /* Cancelled: never comes; cancelling twice is harmless. */
  net_wheel_arm(&w, &a, t0 + 4 * TICK);
  net_wheel_arm(&w, &b, t0 + 4 * TICK);
  net_wheel_cancel(&w, &a);
  net_wheel_cancel(&w, &a);
  CHECK_EQ(take_all(&w, t0 + 5 * TICK, got, 8), 1);
  CHECK(got[0] == &b);
  /* Armed in the past: taken at the next look. */
  net_wheel_arm(&w, &a, t0);
  CHECK(net_wheel_due(&w, t0 + 5 * TICK));
  CHECK_EQ(take_all(&w, t0 + 5 * TICK, got, 8), 1);
  /* Beyond a turn, and a wheel left alone for many turns. */
  uint64_t far = t0 + 3 * NET_WHEEL_SLOTS * TICK + 5;
  net_wheel_arm(&w, &a, far);
  net_wheel_arm(&w, &b, t0 + 6 * TICK);
  CHECK_EQ(take_all(&w, t0 + 2 * NET_WHEEL_SLOTS * TICK, got, 8), 1);
  CHECK(got[0] == &b);
  CHECK_EQ(take_all(&w, far - 1, got, 8), 0);
  CHECK_EQ(take_all(&w, far + 100 * NET_WHEEL_SLOTS * TICK, got, 8), 1);
  CHECK(got[0] == &a);
  /* An idle wheel armed after a long sleep. */
  uint64_t late = far + 1000000 * TICK;
  net_wheel_arm(&w, &a, late + TICK);
  CHECK_EQ(take_all(&w, late, got, 8), 0);
  CHECK_EQ(take_all(&w, late + TICK, got, 8), 1);
}

/* Many timers at random times: each comes once, none early, in passes
 * that step the clock by odd amounts; then the work of a pass. */
static void many(void) {
  enum { N = 10000 };
  static struct net_timer t[N];
  static uint64_t due[N];
  static int seen[N];
  struct net_wheel w;
  uint64_t rng = 88172645463325252ull, t0 = 5 * TICK;
  net_wheel_init(&w, TICK, t0);
  for (int i = 0; i < N; i++) {
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    net_timer_init(&t[i]);
    due[i] = t0 + rng % (3 * NET_WHEEL_SLOTS * TICK);
    net_wheel_arm(&w, &t[i], due[i]);
  }
  uint64_t now = t0;
  int taken = 0;
  while (taken < N) {
    now += TICK / 3 + (rng % TICK);
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    struct net_timer *x;
    while ((x = net_wheel_expire(&w, now)) != NULL) {
      int i = (int)(x - t);
      CHECK(!seen[i]);
      CHECK(due[i] <= now);
      seen[i] = 1;
      taken++;
    }
    for (int i = 0; i < N; i += 97) CHECK(seen[i] || due[i] > now); /* none left behind */
  }
  CHECK_EQ(w.armed, 0);
  /* 10,000 timers all far off: a pass that finds nothing due looks at one
   * slot, not at them all. */
  net_wheel_init(&w, TICK, t0);
  for (int i = 0; i < N; i++) net_wheel_arm(&w, &t[i], t0 + NET_WHEEL_SLOTS * TICK / 2 + (uint64_t)i);
  for (int k = 0; k < 100; k++) CHECK(net_wheel_expire(&w, t0 + (uint64_t)k * TICK / 4) == NULL);
  CHECK_EQ(w.armed, N);
  CHECK(w.soonest > t0);
}

int main(void) {
  basics();
  many();
  CHECK_DONE("test_net_wheel");
  return 0;
}
