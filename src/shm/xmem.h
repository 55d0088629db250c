/* SPDX-License-Identifier: MIT */
/*
 * xmem.h - memory that local peers map (fmx_mem_alloc): a large message
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
#ifndef FMX_SHM_XMEM_H
#define FMX_SHM_XMEM_H

#include <stddef.h>
#include <stdint.h>

#include "fmx.h"
#include "proto/proto.h"

struct partner;

/* A region as announced on the wire (two proto_seg: {fd, ino}, {base, len}). */
struct xmem_ref {
  uint64_t fd, ino, base, len;
};

/* A peer's region mapped here. */
struct xmem_map {
  uint64_t ino, base, len;
  uint8_t *addr;
};

/* Per partner: the peer regions mapped so far (never unmapped before the
 * endpoint closes; when full, nothing more is mapped and CMA is used). */
#define XMEM_MAPS 64
struct xmem_cache {
  uint32_t n;
  struct xmem_map m[XMEM_MAPS];
};

/* 1 and *ref if every non-empty segment lies in one fmx_mem_alloc region of
 * this process, else 0. Cheap when nothing was allocated. */
int xmem_find(const fmx_seg_t *segs, uint32_t nseg, struct xmem_ref *ref);

/* The peer's region mapped here, mapping it on first use; NULL when it
 * cannot be (rights, a stale fd, a bad size, FMX_XMEM=0, cache full). */
const struct xmem_map *xmem_map_peer(struct partner *p, const struct xmem_ref *ref);

/* Where [addr, addr + len) of the peer's memory is here, or NULL when that
 * is not wholly inside the mapped region. */
static inline uint8_t *xmem_at(const struct xmem_map *m, uint64_t addr, uint64_t len) {
  if (addr < m->base || len > m->len || addr - m->base > m->len - len) return NULL;
  return m->addr + (addr - m->base);
}

/* 1 if every segment lies inside m. */
int xmem_covers(const struct xmem_map *m, const struct proto_seg *segs, uint32_t nseg);

/* Unmap a partner's mappings (endpoint close). */
void xmem_release(struct partner *p);

/* Wire form: 2 proto_seg after the RTS's segments. */
static inline void xmem_to_wire(const struct xmem_ref *r, struct proto_seg w[2]) {
  w[0] = (struct proto_seg){r->fd, r->ino};
  w[1] = (struct proto_seg){r->base, r->len};
}
static inline struct xmem_ref xmem_from_wire(const struct proto_seg w[2]) {
  return (struct xmem_ref){w[0].addr, w[0].len, w[1].addr, w[1].len};
}

#endif
