/* SPDX-License-Identifier: MIT */
/*
 * Single-producer/single-consumer ring of 64-byte cells in shared memory.
 *
 * A record is an 8-byte stamp, a struct proto_hdr and its payload (right
 * behind the header when tiny, else from the record's second cell: see
 * RING_DATA_OFF), in whole contiguous cells; when it does not fit before the end, a PAD record fills
 * the tail and it starts at cell 0. The producer writes the record, then
 * stores the stamp with release; the consumer polls the stamp of the cell at
 * its tail. So a tiny message costs the receiver one cache line, not two (a
 * separate head index would be a second line to miss on).
 *
 * The stamp of the record at absolute cell position P is mix(P) ^ key, with
 * a random per-ring key: unique for ever, and no payload left from an
 * earlier lap can look like it by accident (a counter array could look like
 * P + 1).
 *
 * A record whose payload lies elsewhere (the endpoint's send pool,
 * region/pool.h) is one cell: its header, then the 8-byte reference the
 * transport gave, and its stamp has bit 63 flipped (RING_REF).
 *
 * tail counts consumed cells (on its own cache line), read by the producer
 * only when its cached copy says the ring is full. Offsets only, never
 * pointers, live in the shared part.
 */
#ifndef FMX_SHM_EAGER_RING_H
#define FMX_SHM_EAGER_RING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "transport/record.h"

#define RING_CELL 64
#define RING_STAMP 8
/* Payload that travels inline in the first cell: the "tiny" class. */
#define RING_CELL_TINY (RING_CELL - RING_STAMP - sizeof(struct proto_hdr))
/* Where a record's payload starts, from its header: right behind it for a
 * tiny payload, else at the next cell, so that both copies of the payload
 * (into the ring, out of it) run on whole cache lines: glibc memcpy to a
 * destination 48 bytes off a line ran 16-19% slower at 16 and 64 KiB in
 * cache on the EPYC VM (one core; its share of the medium class's gain was
 * not measured apart). */
#define RING_DATA_OFF(len) ((len) <= RING_CELL_TINY ? sizeof(struct proto_hdr) : (size_t)(RING_CELL - RING_STAMP))
static inline const void *shm_ring_data(const struct proto_hdr *h) {
  return (const uint8_t *)h + RING_DATA_OFF(h->len);
}

#define RING_REF (1ull << 63)

struct shm_ring_shared {
  _Alignas(64) uint64_t key;    /* set once by the creator */
  uint64_t ncells;              /* set once by the creator */
  _Alignas(64) uint64_t tail;   /* written by the consumer */
};
_Static_assert(sizeof(struct shm_ring_shared) == 128, "shared ring header layout");

struct shm_ring {
  struct shm_ring_shared *sh;
  uint8_t *cells;
  uint64_t ncells;
  uint64_t key;
  uint64_t cached; /* producer: last seen tail */
  uint64_t limit;  /* producer: the cells it uses, from cell 0 (shm_ring_set_limit) */
  uint64_t faulted; /* producer: bytes of cells faulted in from cell 0 */
  uint64_t last_cells; /* producer: cells of the last record shm_ring_push wrote */
  uint64_t own_cells;  /* producer: cells planned to take ahead (shm_ring_own_plan) */
  uint64_t local;  /* producer: next cell to write; consumer: next cell to read */
  uint64_t pos;    /* local % ncells, kept as it advances (no division per record) */
  uint64_t records; /* producer: records pushed; consumer: records popped (PADs not counted) */
  /* Consumer: the cell at `local` and the stamp it will bear, so that an
   * idle poll is one load and one compare (no division, no hash). */
  uint64_t *next;
  uint64_t next_stamp;
  uint64_t cur_cells; /* consumer: cells of the record the last peek returned */
  uint64_t cur_ref;   /* consumer: its reference, RING_NO_REF when its payload is inline */
  int broken;      /* consumer saw a record that cannot be (peer bug or attack) */
};

/* Bytes of cells for a ring of `bytes` payload capacity (its shared
 * header, struct shm_ring_shared, lives apart: a link keeps both rings'
 * headers on its first page, so an idle ring takes no page of its own). */
size_t shm_ring_cells_bytes(size_t bytes);
/* Initialise the shared header (creator only). */
void shm_ring_format(struct shm_ring_shared *sh, size_t bytes);
/* Attach a local view of the header sh and `avail` bytes of cells; -EPROTO if
 * the header is inconsistent with them. */
int shm_ring_attach(struct shm_ring *r, struct shm_ring_shared *sh, void *cells, size_t avail);
/* Producer: use only the first `cells` cells of the ring (at least 4, at
 * most all) from the next wrap on: a PAD record then covers the rest, whose
 * pages are never touched. The consumer needs to know nothing. fault_in:
 * fault in now the pages the limit adds (else on first use). */
void shm_ring_set_limit(struct shm_ring *r, uint64_t cells, int fault_in);
/* Largest payload a single record can carry (within the limit). */
size_t shm_ring_max_payload(const struct shm_ring *r);
/* Write hdr + payload (gathered from iov, hdr->len bytes) as one record and
 * publish it. Returns 0, or -EAGAIN if there is no room now. */
int shm_ring_push(struct shm_ring *r, const struct proto_hdr *hdr, const struct iovec *iov, int iovcnt);
/* Hand the lines of the record just pushed (its header hdr) over to the
 * cache all cores share (copy_hand_over). */
void shm_ring_hand_over(const struct shm_ring *r, const struct proto_hdr *hdr);
/*
 * Producer, after a push: plan to take for writing, ahead (copy_own), the
 * cells the next record will likely fill, so that their transfer from the
 * reader's cache runs while we wait, not in the next push's stores: from
 * the one after the next (an idle reader polls the next: taking it would
 * only make its line travel once more), as many as the record just pushed
 * took, one fewer unless `stream`. Returns the cells planned.
 */
uint64_t shm_ring_own_plan(struct shm_ring *r, int stream);
/* Take the planned cells now, within the room the reader left (as its
 * tail was last seen) and the cells in use; returns how many it took. */
uint64_t shm_ring_own_ahead(struct shm_ring *r);
/* Take them once the reader has consumed every record pushed (the cells
 * taken, maybe 0), else nothing (-1). While it reads, taking the lines
 * past its record competes with its reads (docs/tuning.md). */
int64_t shm_ring_own_when_read(struct shm_ring *r);
/* Producer: whether the reader has yet to consume some record pushed. */
int shm_ring_unread(const struct shm_ring *r);
/* Whether a record referring to its payload (shm_ring_push_ref) fits now. */
int shm_ring_ref_fits(struct shm_ring *r);
/* Write hdr and the reference `ref` (whatever names the payload's place)
 * as a one-cell record, and publish it; 0 (*pos: the record's absolute
 * cell, consumed once the tail is past it), or -EAGAIN if there is no room now. */
int shm_ring_push_ref(struct shm_ring *r, const struct proto_hdr *hdr, uint64_t ref, uint64_t *pos);
#define RING_NO_REF UINT64_MAX
/* Look at the next record without consuming it; NULL if none is ready. Its
 * payload is at shm_ring_data(header) when r->cur_ref is RING_NO_REF, else
 * where the reference r->cur_ref says. */
const struct proto_hdr *shm_ring_peek(struct shm_ring *r);
/* Consume the record returned by the last peek. */
void shm_ring_pop(struct shm_ring *r);

#endif
