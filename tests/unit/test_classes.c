/* SPDX-License-Identifier: MIT */
/* The receiver's choice between the medium class and rendezvous for one
 * size class (proto/classes.c, proto_class_step): the mode it asks for
 * after each message, fed times it could have measured. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "proto/proto_int.h"

#define MEDIUM 0
#define RNDV 1
#define DIRTY UINT64_MAX

/* n messages of mode, each taking ns; returns the last answer. */
static int feed(struct proto_class *k, int mode, uint64_t ns, int n) {
  int want = -1;
  for (int i = 0; i < n; i++) want = proto_class_step(k, mode, ns);
  return want;
}

/* Rendezvous faster: medium for 8, a trial of 8, then rendezvous; the
 * medium class is tried again after 8 more and loses. */
static void test_to_rndv(void) {
  struct proto_class k;
  memset(&k, 0, sizeof k);
  CHECK_EQ(feed(&k, MEDIUM, 300, 7), MEDIUM);
  CHECK_EQ(proto_class_step(&k, MEDIUM, 300), RNDV); /* the 8th: try rendezvous */
  CHECK(k.trial && k.mode == MEDIUM);
  CHECK_EQ(feed(&k, RNDV, 180, 7), RNDV);
  CHECK_EQ(proto_class_step(&k, RNDV, 180), RNDV);
  CHECK(!k.trial && k.mode == RNDV && k.span == 8);
  CHECK_EQ(feed(&k, RNDV, 180, 8), MEDIUM); /* span over: try the medium class */
  CHECK_EQ(feed(&k, MEDIUM, 300, 8), RNDV);
  CHECK(!k.trial && k.mode == RNDV && k.span == 32); /* the choice held: span grows */
}

/* Medium faster: the trial loses, span grows 4x to 1024 and stays. */
static void test_medium_holds(void) {
  struct proto_class k;
  memset(&k, 0, sizeof k);
  uint32_t span = 8;
  for (int round = 0; round < 6; round++) {
    CHECK_EQ(feed(&k, MEDIUM, 200, (int)span - 1), MEDIUM);
    CHECK_EQ(proto_class_step(&k, MEDIUM, 200), RNDV);
    CHECK_EQ(feed(&k, RNDV, 260, 8), MEDIUM);
    CHECK(k.mode == MEDIUM && !k.trial);
    span = span * 4 < 1024 ? span * 4 : 1024;
    CHECK_EQ(k.span, span);
  }
}

/* Messages of the mode just left, still on their way, count for nothing;
 * a trial with no clean sample gives up after 64 messages and waits the
 * longest span; the mode in use changes only against a clean time of its
 * own. */
static void test_in_flight_and_dirty(void) {
  struct proto_class k;
  memset(&k, 0, sizeof k);
  CHECK_EQ(feed(&k, RNDV, 10, 5), MEDIUM); /* not asked for: ignored */
  CHECK_EQ(k.left, 8u);
  CHECK_EQ(feed(&k, MEDIUM, 300, 8), RNDV);
  CHECK_EQ(feed(&k, MEDIUM, 300, 10), RNDV); /* sent before the hint came */
  CHECK_EQ(feed(&k, RNDV, DIRTY, 53), RNDV);
  CHECK_EQ(proto_class_step(&k, RNDV, DIRTY), MEDIUM); /* the 64th: given up */
  CHECK(!k.trial && k.mode == MEDIUM && k.span == 1024 && k.left == 1024);

  memset(&k, 0, sizeof k);
  CHECK_EQ(feed(&k, MEDIUM, DIRTY, 8), RNDV);
  CHECK_EQ(feed(&k, RNDV, 100, 8), MEDIUM); /* faster, but medium had no clean time */
  CHECK(k.mode == MEDIUM && k.span == 32);
}

/* In an exchange the medium class counts the sender's copy too: twice
 * what the receiver timed, while the class is judged an exchange's;
 * rendezvous, a ping-pong's medium class and an unknown time stay as they
 * are. With receiver times of 180 (medium) and 300 (rendezvous), a
 * ping-pong keeps the medium class and an exchange moves to rendezvous. */
static void test_exchange_cost(void) {
  struct proto_class k;
  memset(&k, 0, sizeof k);
  k.best[MEDIUM] = 180;
  k.best[RNDV] = 300;
  CHECK_EQ(proto_class_cost(&k, MEDIUM), 180);
  k.xleft = 1;
  CHECK_EQ(proto_class_cost(&k, MEDIUM), 360);
  CHECK_EQ(proto_class_cost(&k, RNDV), 300);
  k.best[MEDIUM] = DIRTY;
  CHECK_EQ(proto_class_cost(&k, MEDIUM), DIRTY);
  k.best[MEDIUM] = DIRTY - 1;
  CHECK(proto_class_cost(&k, MEDIUM) != DIRTY); /* a huge time stays a time */
  memset(&k, 0, sizeof k);
  CHECK_EQ(feed(&k, MEDIUM, 180, 8), RNDV); /* the trial */
  CHECK_EQ(feed(&k, RNDV, 300, 8), MEDIUM);
  CHECK(k.mode == MEDIUM);
  memset(&k, 0, sizeof k);
  k.xleft = 100;
  CHECK_EQ(feed(&k, MEDIUM, 180, 8), RNDV);
  CHECK_EQ(feed(&k, RNDV, 300, 8), RNDV);
  CHECK(k.mode == RNDV);
}

int main(void) {
  test_to_rndv();
  test_exchange_cost();
  test_medium_holds();
  test_in_flight_and_dirty();
  CHECK_DONE("test_classes");
  return 0;
}
