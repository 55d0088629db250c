/* SPDX-License-Identifier: MIT */
/*
 * An endpoint's packet buffers (DESIGN.md section 5): every buffer holds
 * one packet of the endpoint's largest size. A packet is written once into
 * one (header and record in place), kept there by its partner's stream
 * until acked, and sent from there, first and again; a packet come early
 * waits in one for the hole before it. A buffer let go goes back to the
 * free list, the most recent first (warm in cache), and is taken again by
 * the next packet: no malloc and no copy per packet once the endpoint has
 * as many as it keeps in flight. Beyond `keep` free buffers, those let go
 * return to the allocator: a burst to many partners leaves no more behind.
 *
 * Not thread-safe: the endpoint's lock.
 */
#ifndef FMX_NET_POOL_H
#define FMX_NET_POOL_H

#include <stddef.h>
#include <stdint.h>

struct net_pool {
  size_t size;      /* bytes a buffer holds */
  uint32_t keep;    /* free buffers kept at most */
  uint32_t nfree;   /* on the free list */
  uint32_t out;     /* taken and not let go */
  void *free;       /* the free list, linked through the buffers' first bytes */
  uint64_t allocs;  /* buffers the allocator gave (counted: the rest were reused) */
};

void net_pool_init(struct net_pool *p, size_t size, uint32_t keep);
/* Every free buffer back to the allocator (those still out are the
 * owners' to put first). */
void net_pool_fini(struct net_pool *p);
/* A buffer of p->size bytes, or NULL (no memory). */
uint8_t *net_pool_get(struct net_pool *p);
void net_pool_put(struct net_pool *p, uint8_t *b);

#endif
