/* SPDX-License-Identifier: MIT */
/*
 * Matching: posted receives and unexpected messages.
 *
 * A receive (info, mask) takes a message m when (m & mask) == info; receives
 * match in posting order, messages in arrival order. Fast path: a receive
 * whose mask covers the "hash bits" (every bit by default, the context-id
 * bits when the endpoint has them) sits in a bucket chosen by those bits, so
 * thousands of exact receives cost O(1) per message. Other receives sit in
 * one wildcard list. An incoming message looks at its bucket and at the
 * wildcard list and takes the earlier-posted candidate, so posting order is
 * kept exactly.
 */
#ifndef FMX_PROTO_MATCH_H
#define FMX_PROTO_MATCH_H

#include <stdint.h>

#include "base/list.h"

struct proto_msg;
struct partner;
struct bulk_conn;

#define MATCH_BUCKETS 1024 /* power of two */

struct unexp_msg {
  struct list_node all;    /* arrival order */
  struct list_node bucket; /* same hash bits, arrival order */
  uint64_t match;
  uint64_t msg_len;
  struct partner *partner; /* opaque: the core's */
  uint8_t type;            /* PROTO_EAGER or PROTO_RTS */
  uint8_t flags;
  uint32_t nseg;           /* RTS: remote segments in data */
  uint64_t sreq;
  uint64_t imm;            /* flags & PROTO_F_DATA: the data it carries */
  struct bulk_conn *lane;
  void *data;              /* EAGER: payload; RTS: struct proto_seg[nseg] */
};

struct match_queues {
  uint64_t hash_bits;
  uint64_t ctx_mask; /* 0 without context ids */
  struct list_node posted_wild;
  struct list_node posted[MATCH_BUCKETS];
  struct list_node unexp_all;
  struct list_node unexp[MATCH_BUCKETS];
  uint64_t nposted;
  uint64_t nunexp;
};

void match_init(struct match_queues *mq, unsigned ctx_bits, unsigned ctx_shift);
/* Post a receive (m->match, m->mask, m->seq set). */
void match_post(struct match_queues *mq, struct proto_msg *m);
void match_unpost(struct match_queues *mq, struct proto_msg *m);
/* First posted receive that takes `match` from p (posted for any source or
 * directed to p), removed from the queue; or NULL. */
struct proto_msg *match_take_posted(struct match_queues *mq, uint64_t match, const struct partner *p);
/* A posted receive directed to p (any one), removed from the queue; or
 * NULL. */
struct proto_msg *match_take_from(struct match_queues *mq, const struct partner *p);
void match_add_unexp(struct match_queues *mq, struct unexp_msg *u);
/* First unexpected message that fits (info, mask), from `from` unless it
 * is NULL; take=1 removes it. */
struct unexp_msg *match_find_unexp(struct match_queues *mq, uint64_t info, uint64_t mask, const struct partner *from,
                                   int take);
void match_del_unexp(struct match_queues *mq, struct unexp_msg *u);
/* 0, or the fmx_return_t that rejects this (info, mask). */
int match_check(const struct match_queues *mq, uint64_t info, uint64_t mask);

#endif
