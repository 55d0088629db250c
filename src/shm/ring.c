/* SPDX-License-Identifier: MIT */
#include "shm/ring.h"

#include <string.h>

#define CELLS_FOR(bytes) (((bytes) + RING_CELL - 1) / RING_CELL)

size_t shm_ring_footprint(size_t bytes) {
  return sizeof(struct shm_ring_shared) + CELLS_FOR(bytes) * RING_CELL;
}

void shm_ring_format(void *mem, size_t bytes) {
  struct shm_ring_shared *sh = mem;
  memset(sh, 0, sizeof *sh);
  sh->ncells = CELLS_FOR(bytes);
}

int shm_ring_attach(struct shm_ring *r, void *mem, size_t avail) {
  struct shm_ring_shared *sh = mem;
  uint64_t n = __atomic_load_n(&sh->ncells, __ATOMIC_ACQUIRE);
  if (avail < sizeof *sh || n < 4 || n > (avail - sizeof *sh) / RING_CELL) return -1;
  r->sh = sh;
  r->cells = (uint8_t *)mem + sizeof *sh;
  r->ncells = n;
  r->cached = 0;
  r->local = 0;
  return 0;
}

size_t shm_ring_max_payload(const struct shm_ring *r) {
  /* A record may need a PAD before it: half the ring is always placeable. */
  return (size_t)(r->ncells / 2) * RING_CELL - sizeof(struct proto_hdr);
}

int shm_ring_push(struct shm_ring *r, const struct proto_hdr *hdr, const struct iovec *iov, int iovcnt) {
  uint64_t need = CELLS_FOR(sizeof *hdr + (uint64_t)hdr->len);
  uint64_t head = r->local;
  uint64_t pos = head % r->ncells;
  uint64_t pad = (pos + need > r->ncells) ? r->ncells - pos : 0;
  if (need > r->ncells / 2) return -1;
  if (head + pad + need - r->cached > r->ncells) {
    r->cached = __atomic_load_n(&r->sh->tail, __ATOMIC_ACQUIRE);
    if (head + pad + need - r->cached > r->ncells) return -1;
  }
  if (pad) {
    struct proto_hdr *p = (struct proto_hdr *)(r->cells + pos * RING_CELL);
    memset(p, 0, sizeof *p);
    p->type = PROTO_PAD;
    p->len = (uint32_t)(pad * RING_CELL - sizeof *p);
    head += pad;
    pos = 0;
  }
  uint8_t *dst = r->cells + pos * RING_CELL;
  memcpy(dst, hdr, sizeof *hdr);
  dst += sizeof *hdr;
  size_t left = hdr->len;
  for (int i = 0; i < iovcnt && left; i++) {
    size_t n = iov[i].iov_len < left ? iov[i].iov_len : left;
    memcpy(dst, iov[i].iov_base, n);
    dst += n;
    left -= n;
  }
  head += need;
  r->local = head;
  __atomic_store_n(&r->sh->head, head, __ATOMIC_RELEASE);
  return 0;
}

int shm_ring_empty(struct shm_ring *r) {
  if (r->local != r->cached) return 0;
  r->cached = __atomic_load_n(&r->sh->head, __ATOMIC_ACQUIRE);
  return r->local == r->cached;
}

const struct proto_hdr *shm_ring_peek(struct shm_ring *r) {
  for (;;) {
    if (shm_ring_empty(r)) return NULL;
    uint64_t pos = r->local % r->ncells;
    const struct proto_hdr *h = (const struct proto_hdr *)(r->cells + pos * RING_CELL);
    uint64_t need = CELLS_FOR(sizeof *h + (uint64_t)h->len);
    /* Never trust the peer's header: a record must end before the ring does
     * and before what the producer published. */
    if (h->type >= PROTO_TYPE_MAX || need > r->ncells - pos || r->local + need > r->cached) {
      r->broken = 1;
      return NULL;
    }
    if (h->type != PROTO_PAD) return h;
    /* A PAD always reaches the end of the ring: skip it. */
    r->local += r->ncells - pos;
    __atomic_store_n(&r->sh->tail, r->local, __ATOMIC_RELEASE);
  }
}

void shm_ring_pop(struct shm_ring *r) {
  uint64_t pos = r->local % r->ncells;
  const struct proto_hdr *h = (const struct proto_hdr *)(r->cells + pos * RING_CELL);
  uint64_t len = h->len;
  uint64_t need = CELLS_FOR(sizeof *h + len);
  /* A corrupt length must not send the consumer past the producer. */
  if (need > r->ncells - pos) need = r->ncells - pos;
  r->local += need;
  if (r->local > r->cached) r->local = r->cached;
  __atomic_store_n(&r->sh->tail, r->local, __ATOMIC_RELEASE);
}
