/* SPDX-License-Identifier: MIT */
#include "shm/eager_ring.h"

#include <errno.h>
#include <string.h>

#include "platform/copy.h"
#include "platform/sys.h"

#define CELLS_FOR(bytes) (((bytes) + RING_CELL - 1) / RING_CELL)
#define REC_CELLS(len) CELLS_FOR(RING_STAMP + RING_DATA_OFF(len) + (uint64_t)(len))

static uint64_t stamp_of(const struct shm_ring *r, uint64_t pos) {
  uint64_t x = pos + 1;
  x ^= x >> 31;
  x *= 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return x ^ r->key;
}

/* The stamp and the header of the cell at index i (0 <= i < ncells). */
static uint64_t *stamp_at(const struct shm_ring *r, uint64_t i) { return (uint64_t *)(r->cells + i * RING_CELL); }

static struct proto_hdr *hdr_at(const struct shm_ring *r, uint64_t i) {
  return (struct proto_hdr *)(r->cells + i * RING_CELL + RING_STAMP);
}

/* local and pos move on by `cells` (at most to the ring's end). */
static void advance(struct shm_ring *r, uint64_t cells) {
  r->local += cells;
  r->pos += cells;
  if (r->pos >= r->ncells) r->pos -= r->ncells;
}

size_t shm_ring_cells_bytes(size_t bytes) { return CELLS_FOR(bytes) * RING_CELL; }

void shm_ring_format(struct shm_ring_shared *sh, size_t bytes) {
  /* Only the header: the cells of a fresh memfd are zero, and a stamp is
   * keyed (a stale cell cannot pass for a record). Writing them would
   * take every page of the ring at once. */
  memset(sh, 0, sizeof *sh);
  sh->key = sys_random64();
  sh->ncells = CELLS_FOR(bytes);
}

int shm_ring_attach(struct shm_ring *r, struct shm_ring_shared *sh, void *cells, size_t avail) {
  uint64_t n = __atomic_load_n(&sh->ncells, __ATOMIC_ACQUIRE);
  if (n < 4 || n > avail / RING_CELL) return -EPROTO;
  r->sh = sh;
  r->cells = cells;
  r->ncells = n;
  r->key = __atomic_load_n(&sh->key, __ATOMIC_ACQUIRE);
  r->cached = 0;
  r->limit = n;
  r->faulted = 0;
  r->last_cells = 1;
  r->local = 0;
  r->pos = 0;
  r->broken = 0;
  r->records = 0;
  r->next = stamp_at(r, 0);
  r->next_stamp = stamp_of(r, 0);
  return 0;
}

/* Consumer: `cells` consumed, the tail published. */
static void consumed(struct shm_ring *r, uint64_t cells) {
  advance(r, cells);
  r->next = stamp_at(r, r->pos);
  r->next_stamp = stamp_of(r, r->local);
  __atomic_store_n(&r->sh->tail, r->local, __ATOMIC_RELEASE);
}

void shm_ring_set_limit(struct shm_ring *r, uint64_t cells, int fault_in) {
  r->limit = cells < 4 ? 4 : cells > r->ncells ? r->ncells : cells;
  if (!fault_in) return;
  /* Fault in the pages the limit adds, now and not in the middle of a
   * message (a first lap through 1 MiB took 256 faults: 8 B ping-pong
   * 0.81x). Never used so far, so nobody reads them: an add of 0 writes
   * nothing. */
  if (r->faulted < r->limit * RING_CELL) {
    sys_fault_in(r->cells + r->faulted, r->limit * RING_CELL - r->faulted);
    r->faulted = r->limit * RING_CELL;
  }
}

size_t shm_ring_max_payload(const struct shm_ring *r) {
  /* A record may need a PAD before it: half the ring is always placeable. */
  return (size_t)(r->limit / 2) * RING_CELL - RING_CELL;
}

/* Room for a record of `need` cells now: 1 (and *pad, the cells of the PAD
 * record it needs first), or 0. */
static int room(struct shm_ring *r, uint64_t need, uint64_t *pad) {
  uint64_t head = r->local;
  /* Reaching the limit: a PAD to the ring's end (its header is all it
   * writes, in the last cell within the limit: a record never ends on
   * it, unless the limit is the whole ring). */
  uint64_t end = r->limit < r->ncells ? r->limit - 1 : r->ncells;
  *pad = (r->pos + need > end) ? r->ncells - r->pos : 0;
  if (need > r->limit / 2) return 0;
  if (head + *pad + need - r->cached > r->ncells) {
    r->cached = __atomic_load_n(&r->sh->tail, __ATOMIC_ACQUIRE);
    if (head + *pad + need - r->cached > r->ncells) return 0;
  }
  return 1;
}

/* Fill the tail of the ring with a PAD record of `pad` cells: on to cell 0. */
static void put_pad(struct shm_ring *r, uint64_t pad) {
  struct proto_hdr *p = hdr_at(r, r->pos);
  memset(p, 0, sizeof *p);
  p->type = PROTO_PAD;
  p->len = (uint32_t)(pad == 1 ? RING_CELL_TINY : (pad - 1) * RING_CELL); /* REC_CELLS(len) == pad */
  __atomic_store_n(stamp_at(r, r->pos), stamp_of(r, r->local), __ATOMIC_RELEASE);
  advance(r, pad);
}

int shm_ring_push(struct shm_ring *r, const struct proto_hdr *hdr, const struct iovec *iov, int iovcnt) {
  uint64_t need = REC_CELLS(hdr->len), pad;
  if (!room(r, need, &pad)) return -EAGAIN;
  if (pad) put_pad(r, pad);
  uint8_t *dst = (uint8_t *)hdr_at(r, r->pos);
  memcpy(dst, hdr, sizeof *hdr);
  record_gather(dst + RING_DATA_OFF(hdr->len), iov, iovcnt, hdr->len);
  __atomic_store_n(stamp_at(r, r->pos), stamp_of(r, r->local), __ATOMIC_RELEASE);
  advance(r, need);
  r->last_cells = need;
  r->records++;
  return 0;
}

uint64_t shm_ring_own_plan(struct shm_ring *r, int stream) {
  r->own_cells = r->last_cells - (stream ? 0 : 1);
  return r->own_cells;
}

uint64_t shm_ring_own_ahead(struct shm_ring *r) {
  /* From the cell after the next, up to the room the reader left (as its
   * tail was last seen) and to the end of the cells in use. */
  uint64_t n = r->own_cells, first = r->pos + 1, end = r->limit < r->ncells ? r->limit : r->ncells;
  uint64_t room = r->cached + r->ncells - r->local; /* free cells from the next one on */
  r->own_cells = 0;
  if (n + 1 > room) n = room ? room - 1 : 0;
  if (first >= end) return 0;
  if (n > end - first) n = end - first;
  if (n) copy_own(r->cells + first * RING_CELL, n * RING_CELL);
  return n;
}

int shm_ring_unread(const struct shm_ring *r) { return __atomic_load_n(&r->sh->tail, __ATOMIC_ACQUIRE) < r->local; }

int64_t shm_ring_own_when_read(struct shm_ring *r) {
  uint64_t tail = __atomic_load_n(&r->sh->tail, __ATOMIC_ACQUIRE);
  if (tail < r->local) return -1;
  r->cached = tail;
  return (int64_t)shm_ring_own_ahead(r);
}

void shm_ring_hand_over(const struct shm_ring *r, const struct proto_hdr *hdr) {
  /* A record never wraps (a PAD sends it to cell 0): it ends where the
   * producer now is, or at the ring's end when that is cell 0. */
  uint64_t need = REC_CELLS(hdr->len), end = r->pos ? r->pos : r->ncells;
  copy_hand_over(stamp_at(r, end - need), need * RING_CELL);
}

int shm_ring_ref_fits(struct shm_ring *r) {
  uint64_t pad;
  return room(r, 1, &pad);
}

int shm_ring_push_ref(struct shm_ring *r, const struct proto_hdr *hdr, uint64_t ref, uint64_t *pos) {
  uint64_t pad;
  if (!room(r, 1, &pad)) return -EAGAIN;
  if (pad) put_pad(r, pad);
  *pos = r->local;
  uint8_t *dst = (uint8_t *)hdr_at(r, r->pos);
  memcpy(dst, hdr, sizeof *hdr);
  memcpy(dst + sizeof *hdr, &ref, sizeof ref);
  __atomic_store_n(stamp_at(r, r->pos), stamp_of(r, r->local) ^ RING_REF, __ATOMIC_RELEASE);
  advance(r, 1);
  r->records++;
  return 0;
}

const struct proto_hdr *shm_ring_peek(struct shm_ring *r) {
  for (;;) {
    uint64_t s = __atomic_load_n(r->next, __ATOMIC_ACQUIRE) ^ r->next_stamp;
    if ((s & ~RING_REF) || r->broken) return NULL;
    uint64_t pos = r->pos;
    const struct proto_hdr *h = hdr_at(r, pos);
    if (s) { /* a reference: one cell, whatever its len says */
      r->cur_cells = 1;
      memcpy(&r->cur_ref, (const uint8_t *)h + sizeof *h, sizeof r->cur_ref);
      if (h->type >= PROTO_TYPE_MAX || h->type == PROTO_PAD || r->cur_ref == RING_NO_REF) {
        r->broken = 1;
        return NULL;
      }
      return h;
    }
    uint64_t need = REC_CELLS(h->len);
    /* Never trust the peer's header: a record must end before the ring does. */
    if (h->type >= PROTO_TYPE_MAX || need > r->ncells - pos || (h->type == PROTO_PAD && need != r->ncells - pos)) {
      r->broken = 1;
      return NULL;
    }
    r->cur_cells = need;
    r->cur_ref = RING_NO_REF;
    /* The rest of the record, asked for at once: its lines then travel
     * together, not as the copy-out reaches each (docs/tuning.md). */
    if (need > 1) copy_fetch(r->cells + (pos + 1) * RING_CELL, (need - 1) * RING_CELL);
    if (h->type != PROTO_PAD) return h;
    consumed(r, need);
  }
}

void shm_ring_pop(struct shm_ring *r) {
  consumed(r, r->cur_cells);
  r->records++;
}
