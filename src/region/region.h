/* SPDX-License-Identifier: MIT */
/*
 * region.h - memory that local peers map (fmx_mem_alloc): a large message
 * sent from it is copied once, by plain loads and stores at the copy
 * routine's speed, instead of through the kernel (CMA) or a ring (two
 * copies); received into it, the sender can copy stripes too.
 *
 * Each fmx_mem_alloc region is its own sealed memfd (it cannot shrink under
 * a peer that maps it). A rendezvous whose send segments all lie in one
 * region carries the region in its RTS (PROTO_F_XMEM): {fd number, inode}
 * and {base address, length}. The receiver takes the fd with pidfd_getfd
 * (the same ptrace rights as CMA), checks the inode, the seals and the
 * size, maps it whole and keeps the mapping per partner until the endpoint
 * closes, so a channel copying through it never sees it go away. A mapping
 * of a region the peer has freed keeps its pages alive; nothing faults.
 */
#ifndef FMX_REGION_REGION_H
#define FMX_REGION_REGION_H

#include <stddef.h>
#include <stdint.h>

#include "fmx.h"

/* A span of a process's memory, {addr, len}: a peer's segments as the
 * records carry them (transport/record.h), the engines' remote
 * description, a region announced on the wire. */
struct proto_seg {
  uint64_t addr;
  uint64_t len;
};

/* A region as a peer announces it ({fd, ino}, {base, len} on the wire:
 * proto/proto.h). */
struct region_ref {
  uint64_t fd, ino, base, len;
};

/* A peer's region mapped here. */
struct region_map {
  uint64_t ino, base, len;
  uint8_t *addr;
};

/* Per partner: the peer regions mapped so far (never unmapped before the
 * endpoint closes; when full, nothing more is mapped and CMA is used). */
#define REGION_MAPS 64
struct region_cache {
  uint32_t n;
  struct region_map m[REGION_MAPS];
};

/* 1 and *ref if every non-empty segment lies in one fmx_mem_alloc region of
 * this process, else 0. Cheap when nothing was allocated. */
int region_find(const fmx_seg_t *segs, uint32_t nseg, struct region_ref *ref);

/* The peer's region mapped here (the peer: pidfd, for messages its eid),
 * mapping it on first use into *cache (allocated then); NULL when it cannot
 * be (rights, a stale fd, a bad size, FMX_XMEM=0, cache full). */
const struct region_map *region_map_peer(struct region_cache **cache, int pidfd, uint32_t peer_eid,
                                         const struct region_ref *ref);

/* Where [addr, addr + len) of the peer's memory is here, or NULL when that
 * is not wholly inside the mapped region. */
static inline uint8_t *region_at(const struct region_map *m, uint64_t addr, uint64_t len) {
  if (addr < m->base || len > m->len || addr - m->base > m->len - len) return NULL;
  return m->addr ? m->addr + (addr - m->base) : (uint8_t *)(uintptr_t)addr;
}

/* A peer in our own address space (self): its whole memory, as is. */
extern const struct region_map region_identity;

/* Unmap a peer's mappings and free the cache (its partner is released). */
void region_cache_release(struct region_cache **cache);

/* An fmx_mem_alloc region's wire form: 2 proto_seg after an RTS's
 * segments, or in a coop area. */
static inline void region_to_wire(const struct region_ref *r, struct proto_seg w[2]) {
  w[0] = (struct proto_seg){r->fd, r->ino};
  w[1] = (struct proto_seg){r->base, r->len};
}
static inline struct region_ref region_from_wire(const struct proto_seg w[2]) {
  return (struct region_ref){w[0].addr, w[0].len, w[1].addr, w[1].len};
}

#endif
