/* SPDX-License-Identifier: MIT */
/*
 * Single-producer/single-consumer ring of 64-byte cells in shared memory.
 * A record (struct proto_hdr + payload) takes whole contiguous cells; when it
 * does not fit before the end, a PAD record fills the tail and it starts at
 * cell 0. head and tail count cells since creation (never wrap in practice),
 * each on its own cache line; the producer publishes with a release store of
 * head after the record is written, the consumer frees with a release store
 * of tail. Offsets only, never pointers, live in the shared part.
 */
#ifndef FMX_SHM_RING_H
#define FMX_SHM_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "proto/proto.h"

#define RING_CELL 64
/* Payload that travels inline in the header cell: the "tiny" class. */
#define RING_CELL_TINY (RING_CELL - sizeof(struct proto_hdr))

struct shm_ring_shared {
  _Alignas(64) uint64_t head; /* written by the producer */
  _Alignas(64) uint64_t tail; /* written by the consumer */
  _Alignas(64) uint64_t ncells; /* set once by the creator */
};
_Static_assert(sizeof(struct shm_ring_shared) == 192, "shared ring header layout");

struct shm_ring {
  struct shm_ring_shared *sh;
  uint8_t *cells;
  uint64_t ncells;
  uint64_t cached; /* producer: last seen tail; consumer: last seen head */
  uint64_t local;  /* producer: head being built; consumer: tail being read */
  int broken;      /* consumer saw a record that cannot be (peer bug or attack) */
};

/* Bytes of shared memory for a ring of `bytes` payload capacity. */
size_t shm_ring_footprint(size_t bytes);
/* Initialise the shared part (creator only). */
void shm_ring_format(void *mem, size_t bytes);
/* Attach a local view; -1 if the shared part is inconsistent with `avail`. */
int shm_ring_attach(struct shm_ring *r, void *mem, size_t avail);
/* Largest payload a single record can carry. */
size_t shm_ring_max_payload(const struct shm_ring *r);
/* Write hdr + payload (gathered from iov, hdr->len bytes) as one record and
 * publish it. Returns 0, or -1 if there is no room now. */
int shm_ring_push(struct shm_ring *r, const struct proto_hdr *hdr, const struct iovec *iov, int iovcnt);
/* Look at the next record without consuming it; NULL if empty. */
const struct proto_hdr *shm_ring_peek(struct shm_ring *r);
/* Consume the record returned by the last peek. */
void shm_ring_pop(struct shm_ring *r);
/* Nothing to read (cheap: one shared load when the cache says empty). */
int shm_ring_empty(struct shm_ring *r);

#endif
