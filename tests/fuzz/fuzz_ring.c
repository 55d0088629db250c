/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the eager ring's consumer against a producer that writes
 * what it likes. The input is a program for a malicious peer: push records
 * with any header (type, flags, len, the rest), push references with any
 * buffer index, rewrite any 8 bytes of the cells (headers and stamps after
 * they are published), write any record into the duplex box beside it
 * (with the stamp its reader waits for, or any), and let the consumer take
 * what it finds, as the shm transport does (the ring peeked, then the
 * box). Whatever the consumer returns must lie inside the ring or the
 * box's copy, which is read whole (ASan watches the cells, an exact-size
 * allocation); a box record it takes is never longer than the box.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "shm/duplex_box.h"
#include "shm/eager_ring.h"

#define NCELLS 64

static volatile uint64_t sink;

static void sum(const uint8_t *data, uint32_t len) {
  uint64_t s = 0;
  for (uint32_t k = 0; k < len; k++) s += data[k];
  sink += s;
}

static void consume(struct shm_ring *c, struct shm_box *box, const uint8_t *cells) {
  for (int i = 0; i < 2 * NCELLS; i++) {
    const struct proto_hdr *h = shm_ring_peek(c);
    if (!c->broken && shm_box_ready(box, c->records)) {
      struct shm_box_line rec;
      if (shm_box_take(box, &rec) < 0) return; /* the link breaks */
      if (rec.hdr.len > sizeof rec.data) abort();
      sum(rec.data, rec.hdr.len);
      continue;
    }
    if (!h) return;
    const uint8_t *p = (const uint8_t *)h;
    if (p < cells || p + sizeof *h > cells + NCELLS * RING_CELL) abort();
    if (c->cur_ref == RING_NO_REF) {
      const uint8_t *data = shm_ring_data(h);
      uint32_t len = h->len;
      if (data < cells || data + len > cells + NCELLS * RING_CELL) abort();
      sum(data, len);
    }
    shm_ring_pop(c);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct shm_ring_shared *sh = aligned_alloc(64, sizeof *sh);
  uint8_t *cells = aligned_alloc(64, NCELLS * RING_CELL);
  struct shm_box_line *line = aligned_alloc(64, sizeof *line);
  if (!sh || !cells || !line) abort();
  memset(line, 0, sizeof *line);
  struct shm_box box;
  shm_box_attach(&box, line, 0);
  memset(cells, 0, NCELLS * RING_CELL);
  shm_ring_format(sh, NCELLS * RING_CELL);
  struct shm_ring prod, cons;
  if (shm_ring_attach(&prod, sh, cells, NCELLS * RING_CELL) < 0 || shm_ring_attach(&cons, sh, cells, NCELLS * RING_CELL) < 0)
    abort();
  static uint8_t payload[NCELLS * RING_CELL];
  while (size > 0) {
    uint8_t op;
    fuzz_take(&data, &size, &op, 1);
    switch (op % 5) {
      case 0: { /* a record with any header; its payload from the input */
        struct proto_hdr h;
        fuzz_take(&data, &size, &h, sizeof h);
        uint16_t len;
        fuzz_take(&data, &size, &len, sizeof len);
        h.len = len % (NCELLS * RING_CELL / 2);
        size_t got = fuzz_take(&data, &size, payload, h.len);
        struct iovec iov = {payload, got};
        h.len = (uint32_t)got;
        shm_ring_push(&prod, &h, &iov, 1);
        break;
      }
      case 1: { /* a reference with any index */
        struct proto_hdr h;
        uint64_t ref, at;
        fuzz_take(&data, &size, &h, sizeof h);
        fuzz_take(&data, &size, &ref, sizeof ref);
        shm_ring_push_ref(&prod, &h, ref, &at);
        break;
      }
      case 2: { /* rewrite 8 bytes anywhere in the cells */
        uint16_t off;
        uint64_t v;
        fuzz_take(&data, &size, &off, sizeof off);
        fuzz_take(&data, &size, &v, sizeof v);
        memcpy(cells + (off % (NCELLS * RING_CELL / 8)) * 8, &v, sizeof v);
        break;
      }
      case 3: { /* a box record with any header, and the stamp awaited or any */
        fuzz_take(&data, &size, line, sizeof *line);
        if (!(op & 0x80))
          __atomic_store_n(&line->stamp, (uint64_t)(uint32_t)cons.records << 32 | (uint32_t)(box.seq + 1),
                           __ATOMIC_RELEASE);
        break;
      }
      default:
        consume(&cons, &box, cells);
    }
  }
  consume(&cons, &box, cells);
  free(line);
  free(cells);
  free(sh);
  return 0;
}
