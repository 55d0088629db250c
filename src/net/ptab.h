/* SPDX-License-Identifier: MIT */
/*
 * An endpoint's partners on other hosts by (endpoint id, session): a
 * chained hash table, so that a packet finds its partner in O(1) however
 * many there are (before it, each packet walked every partner: 1,000
 * partners cost 5 us a pass). The chains run through the entries, which
 * the caller owns and embeds (a partner's net_peer); the bucket array
 * doubles as entries outnumber buckets, with a random seed per table so
 * that no peer picks sessions that share a chain.
 *
 * It knows nothing of partners: an entry carries its key, and its owner
 * finds itself from it (container_of). Not thread-safe: the endpoint's lock.
 */
#ifndef FMX_NET_PTAB_H
#define FMX_NET_PTAB_H

#include <stdint.h>

struct net_ptab_entry {
  struct net_ptab_entry *next; /* in its chain */
  uint32_t session;            /* its key: the session and */
  uint16_t eid;                /* the endpoint id, as the wire carries it (16 bits) */
  uint8_t in;                  /* in the table */
};

struct net_ptab {
  struct net_ptab_entry **b; /* nb chains (a power of two) */
  uint32_t nb, n;
  uint32_t seed;
};

#define NET_PTAB_FIRST 64

/* NET_PTAB_FIRST chains: 0, or -ENOMEM. */
int net_ptab_init(struct net_ptab *t, uint32_t seed);
/* The chains freed; an entry still in is out from then on (its del is
 * harmless). */
void net_ptab_fini(struct net_ptab *t);
/* e under (eid, session), taken out first if in. Never fails: a growth
 * that finds no memory leaves the chains longer. */
void net_ptab_add(struct net_ptab *t, struct net_ptab_entry *e, uint32_t eid, uint32_t session);
void net_ptab_del(struct net_ptab *t, struct net_ptab_entry *e);
/* The first entry of the chain (eid, session) falls in; walk it with
 * ->next, comparing the keys (other keys share chains). */
struct net_ptab_entry *net_ptab_chain(const struct net_ptab *t, uint32_t eid, uint32_t session);

#endif
