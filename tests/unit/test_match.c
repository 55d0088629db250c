/* SPDX-License-Identifier: MIT */
/* Matching rules: posting order, masks, wildcards, context ids, unexpected. */
#include <string.h>

#include "check.h"
#include "proto/proto.h"
#include "proto/match.h"

static struct proto_msg reqs[4096];
static uint64_t seq;

static struct proto_msg *post(struct match_queues *mq, int i, uint64_t match, uint64_t mask) {
  struct proto_msg *r = &reqs[i];
  memset(r, 0, sizeof *r);
  r->match = match;
  r->mask = mask;
  r->seq = seq++;
  list_init(&r->hnode);
  match_post(mq, r);
  return r;
}

static struct match_queues mq;

static void test_order_and_masks(void) {
  match_init(&mq, 0, 0);
  struct proto_msg *wild = post(&mq, 0, 0x10, 0xf0);   /* any low nibble */
  struct proto_msg *exact = post(&mq, 1, 0x15, ~0ull);
  struct proto_msg *any = post(&mq, 2, 0, 0);           /* matches everything */
  /* 0x15 fits the wildcard posted first: posting order wins over exactness. */
  CHECK(match_take_posted(&mq, 0x15, NULL) == wild);
  CHECK(match_take_posted(&mq, 0x15, NULL) == exact);
  CHECK(match_take_posted(&mq, 0x99, NULL) == any);
  CHECK(match_take_posted(&mq, 0x15, NULL) == NULL);
  CHECK_EQ(mq.nposted, 0);
  /* exact posted before wildcard: exact first */
  exact = post(&mq, 3, 0x42, ~0ull);
  wild = post(&mq, 4, 0, 0);
  CHECK(match_take_posted(&mq, 0x42, NULL) == exact);
  CHECK(match_take_posted(&mq, 0x42, NULL) == wild);
}

static void test_many_exact(void) {
  match_init(&mq, 0, 0);
  for (int i = 0; i < 4000; i++) post(&mq, i, (uint64_t)i << 20, ~0ull);
  for (int i = 3999; i >= 0; i--) CHECK(match_take_posted(&mq, (uint64_t)i << 20, NULL) == &reqs[i]);
  CHECK_EQ(mq.nposted, 0);
  /* same match twice: FIFO */
  post(&mq, 0, 7, ~0ull);
  post(&mq, 1, 7, ~0ull);
  CHECK(match_take_posted(&mq, 7, NULL) == &reqs[0]);
  CHECK(match_take_posted(&mq, 7, NULL) == &reqs[1]);
}

static void test_checks(void) {
  match_init(&mq, 0, 0);
  CHECK_EQ(match_check(&mq, 0x1, 0x0), FMX_BAD_MATCH_MASK);
  CHECK_EQ(match_check(&mq, 0x10, 0xf0), 0);
  match_init(&mq, 8, 56); /* context id: top byte */
  CHECK_EQ(match_check(&mq, 0, 0xffffffff), FMX_BAD_MATCHING_FOR_CONTEXT_ID_MASK);
  CHECK_EQ(match_check(&mq, 0x0100000000000000ull, 0xff00000000000000ull), 0);
  /* with context ids, a receive that masks low bits still hashes */
  post(&mq, 0, 0x0200000000000000ull, 0xff00000000000000ull);
  post(&mq, 1, 0x0100000000000005ull, ~0ull);
  CHECK(match_take_posted(&mq, 0x0100000000000005ull, NULL) == &reqs[1]);
  CHECK(match_take_posted(&mq, 0x02000000000000ffull, NULL) == &reqs[0]);
}

static void test_unexpected(void) {
  match_init(&mq, 0, 0);
  struct unexp_msg u[5];
  memset(u, 0, sizeof u);
  uint64_t m[5] = {0x1, 0x2, 0x1, 0x300, 0x1};
  for (int i = 0; i < 5; i++) {
    u[i].match = m[i];
    match_add_unexp(&mq, &u[i]);
  }
  CHECK(match_find_unexp(&mq, 0x1, ~0ull, NULL, 0) == &u[0]); /* peek does not take */
  CHECK(match_find_unexp(&mq, 0x1, ~0ull, NULL, 1) == &u[0]);
  CHECK(match_find_unexp(&mq, 0x0, 0x0, NULL, 1) == &u[1]);   /* wildcard: arrival order */
  CHECK(match_find_unexp(&mq, 0x300, 0xf00, NULL, 1) == &u[3]);
  CHECK(match_find_unexp(&mq, 0x1, ~0ull, NULL, 1) == &u[2]);
  CHECK(match_find_unexp(&mq, 0x1, ~0ull, NULL, 1) == &u[4]);
  CHECK(match_find_unexp(&mq, 0x1, ~0ull, NULL, 1) == NULL);
  CHECK_EQ(mq.nunexp, 0);
}

/* A receive directed to one partner takes only its messages, and is found
 * by match_take_from; unexpected ones are found per source. The partners
 * are opaque here: two addresses stand for them. */
static void test_directed(void) {
  static char pa, pb;
  struct partner *a = (struct partner *)(void *)&pa, *b = (struct partner *)(void *)&pb;
  match_init(&mq, 0, 0);
  struct proto_msg *from_a = post(&mq, 0, 0x5, ~0ull);
  from_a->from = a;
  struct proto_msg *any = post(&mq, 1, 0x5, ~0ull);
  CHECK(match_take_posted(&mq, 0x5, b) == any); /* posted later, but the first that takes b's */
  CHECK(match_take_posted(&mq, 0x5, b) == NULL);
  CHECK(match_take_posted(&mq, 0x5, a) == from_a);
  struct proto_msg *w = post(&mq, 2, 0, 0);
  w->from = b;
  CHECK(match_take_from(&mq, a) == NULL);
  CHECK(match_take_from(&mq, b) == w);
  CHECK_EQ(mq.nposted, 0);
  struct unexp_msg u[3];
  memset(u, 0, sizeof u);
  u[0].partner = a;
  u[1].partner = b;
  u[2].partner = a;
  for (int i = 0; i < 3; i++) match_add_unexp(&mq, &u[i]);
  CHECK(match_find_unexp(&mq, 0, 0, b, 1) == &u[1]);
  CHECK(match_find_unexp(&mq, 0, ~0ull, a, 1) == &u[0]);
  CHECK(match_find_unexp(&mq, 0, 0, b, 1) == NULL);
  CHECK(match_find_unexp(&mq, 0, 0, NULL, 1) == &u[2]);
}

int main(void) {
  test_directed();
  test_order_and_masks();
  test_many_exact();
  test_checks();
  test_unexpected();
  CHECK_DONE("test_match");
  return 0;
}
