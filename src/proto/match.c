/* SPDX-License-Identifier: MIT */
#include "proto/match.h"

#include "proto/proto.h"

static unsigned bucket_of(const struct match_queues *mq, uint64_t match) {
  uint64_t x = match & mq->hash_bits;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  return (unsigned)(x & (MATCH_BUCKETS - 1));
}

static int covers(const struct match_queues *mq, uint64_t mask) { return (mask & mq->hash_bits) == mq->hash_bits; }

void match_init(struct match_queues *mq, unsigned ctx_bits, unsigned ctx_shift) {
  mq->ctx_mask = ctx_bits ? (((1ull << ctx_bits) - 1) << ctx_shift) : 0;
  mq->hash_bits = ctx_bits ? mq->ctx_mask : UINT64_MAX;
  list_init(&mq->posted_wild);
  list_init(&mq->unexp_all);
  for (int i = 0; i < MATCH_BUCKETS; i++) {
    list_init(&mq->posted[i]);
    list_init(&mq->unexp[i]);
  }
  mq->nposted = mq->nunexp = 0;
}

int match_check(const struct match_queues *mq, uint64_t info, uint64_t mask) {
  if (info & ~mask) return FMX_BAD_MATCH_MASK;
  if ((mask & mq->ctx_mask) != mq->ctx_mask) return FMX_BAD_MATCHING_FOR_CONTEXT_ID_MASK;
  return 0;
}

void match_post(struct match_queues *mq, struct proto_msg *r) {
  if (covers(mq, r->mask))
    list_add_tail(&mq->posted[bucket_of(mq, r->match)], &r->hnode);
  else
    list_add_tail(&mq->posted_wild, &r->hnode);
  mq->nposted++;
}

void match_unpost(struct match_queues *mq, struct proto_msg *r) {
  list_del(&r->hnode);
  mq->nposted--;
}

static struct proto_msg *first_fit(struct list_node *head, uint64_t match, const struct partner *p) {
  struct list_node *pos;
  list_for_each(pos, head) {
    struct proto_msg *r = list_entry(pos, struct proto_msg, hnode);
    if ((match & r->mask) == r->match && (!r->from || r->from == p)) return r;
  }
  return NULL;
}

struct proto_msg *match_take_posted(struct match_queues *mq, uint64_t match, const struct partner *p) {
  if (!mq->nposted) return NULL;
  struct proto_msg *a = first_fit(&mq->posted[bucket_of(mq, match)], match, p);
  struct proto_msg *b = list_empty(&mq->posted_wild) ? NULL : first_fit(&mq->posted_wild, match, p);
  struct proto_msg *r = (a && b) ? (a->seq < b->seq ? a : b) : (a ? a : b);
  if (r && !(r->flags & MSG_F_MULTI)) match_unpost(mq, r); /* a multi-receive buffer stays (multi.c) */
  return r;
}

static struct proto_msg *first_from(struct list_node *head, const struct partner *p) {
  struct list_node *pos;
  list_for_each(pos, head) {
    struct proto_msg *r = list_entry(pos, struct proto_msg, hnode);
    if (r->from == p) return r;
  }
  return NULL;
}

struct proto_msg *match_take_from(struct match_queues *mq, const struct partner *p) {
  if (!mq->nposted) return NULL;
  struct proto_msg *r = first_from(&mq->posted_wild, p);
  for (unsigned b = 0; !r && b < MATCH_BUCKETS; b++) r = first_from(&mq->posted[b], p);
  if (r) match_unpost(mq, r);
  return r;
}

void match_add_unexp(struct match_queues *mq, struct unexp_msg *u) {
  list_add_tail(&mq->unexp_all, &u->all);
  list_add_tail(&mq->unexp[bucket_of(mq, u->match)], &u->bucket);
  mq->nunexp++;
}

void match_del_unexp(struct match_queues *mq, struct unexp_msg *u) {
  list_del(&u->all);
  list_del(&u->bucket);
  mq->nunexp--;
}

struct unexp_msg *match_find_unexp(struct match_queues *mq, uint64_t info, uint64_t mask, const struct partner *from,
                                   int take) {
  struct unexp_msg *found = NULL;
  struct list_node *pos;
  if (!mq->nunexp) return NULL;
  if (covers(mq, mask)) {
    list_for_each(pos, &mq->unexp[bucket_of(mq, info)]) {
      struct unexp_msg *u = list_entry(pos, struct unexp_msg, bucket);
      if ((u->match & mask) == info && (!from || u->partner == from)) { found = u; break; }
    }
  } else {
    list_for_each(pos, &mq->unexp_all) {
      struct unexp_msg *u = list_entry(pos, struct unexp_msg, all);
      if ((u->match & mask) == info && (!from || u->partner == from)) { found = u; break; }
    }
  }
  if (found && take) match_del_unexp(mq, found);
  return found;
}
