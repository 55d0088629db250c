/* SPDX-License-Identifier: MIT */
/* The eager ring: wrap-around, full ring, corrupt records. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "shm/eager_ring.h"

/* A ring's header and cells in one zeroed allocation (as a fresh memfd). */
#define SH(mem) ((struct shm_ring_shared *)(mem))
#define CELLS(mem) ((uint8_t *)(mem) + sizeof(struct shm_ring_shared))
static void *ring_mem(size_t bytes) {
  size_t n = sizeof(struct shm_ring_shared) + shm_ring_cells_bytes(bytes);
  void *mem = aligned_alloc(64, n);
  CHECK(mem != NULL);
  memset(mem, 0, n);
  shm_ring_format(SH(mem), bytes);
  return mem;
}

static void test_wrap_and_full(void) {
  size_t bytes = 64 * 1024;
  void *mem = ring_mem(bytes);
  struct shm_ring tx, rx;
  CHECK_EQ(shm_ring_attach(&tx, SH(mem), CELLS(mem), shm_ring_cells_bytes(bytes)), 0);
  CHECK_EQ(shm_ring_attach(&rx, SH(mem), CELLS(mem), shm_ring_cells_bytes(bytes)), 0);
  CHECK(shm_ring_peek(&rx) == NULL);
  static uint8_t buf[8192], out[8192];
  uint64_t sent = 0, recvd = 0;
  /* Odd sizes force PAD records at the end; run many laps. */
  for (int round = 0; round < 2000; round++) {
    int pushed = 0;
    for (;;) {
      struct proto_hdr h = {.type = PROTO_EAGER};
      h.len = (uint32_t)((sent * 977) % 5000);
      h.match = sent;
      memset(buf, (int)(sent & 0xff), h.len);
      struct iovec iov = {buf, h.len};
      if (shm_ring_push(&tx, &h, &iov, 1) < 0) break;
      if (sent & 1) shm_ring_hand_over(&tx, &h); /* every other one handed over: nothing changes */
      sent++;
      pushed++;
    }
    CHECK(pushed > 0 || round > 0); /* the ring filled up: push said no room */
    int popped = 0;
    const struct proto_hdr *h;
    while ((h = shm_ring_peek(&rx)) != NULL && popped < 3) {
      CHECK_EQ(h->match, recvd);
      CHECK_EQ(h->len, (recvd * 977) % 5000);
      memcpy(out, shm_ring_data(h), h->len);
      for (uint32_t i = 0; i < h->len; i++) CHECK_EQ(out[i], recvd & 0xff);
      shm_ring_pop(&rx);
      recvd++;
      popped++;
    }
  }
  CHECK(!rx.broken);
  CHECK(sent > 2000);
  /* Too big for the ring: refused, never written. */
  struct proto_hdr big = {.type = PROTO_EAGER, .len = (uint32_t)bytes};
  struct iovec iov = {buf, 1};
  CHECK(shm_ring_push(&tx, &big, &iov, 1) < 0);
  free(mem);
}

static void test_corrupt(void) {
  size_t bytes = 64 * 1024;
  void *mem = ring_mem(bytes);
  struct shm_ring tx, rx;
  shm_ring_attach(&tx, SH(mem), CELLS(mem), shm_ring_cells_bytes(bytes));
  shm_ring_attach(&rx, SH(mem), CELLS(mem), shm_ring_cells_bytes(bytes));
  struct proto_hdr h = {.type = PROTO_EAGER, .len = 8};
  uint64_t v = 42;
  struct iovec iov = {&v, 8};
  CHECK_EQ(shm_ring_push(&tx, &h, &iov, 1), 0);
  /* A hostile peer rewrites the length to run past the ring. */
  ((struct proto_hdr *)(rx.cells + RING_STAMP))->len = 1u << 30;
  CHECK(shm_ring_peek(&rx) == NULL);
  CHECK(rx.broken);
  /* A bad ncells is refused at attach. */
  ((struct shm_ring_shared *)mem)->ncells = 1ull << 40;
  /* nothing is read from a ring that is not published */
  struct shm_ring r3;
  shm_ring_format(SH(mem), bytes);
  CHECK_EQ(shm_ring_attach(&r3, SH(mem), CELLS(mem), shm_ring_cells_bytes(bytes)), 0);
  memset(r3.cells, 0x5a, 4096); /* garbage, no valid stamp */
  CHECK(shm_ring_peek(&r3) == NULL);
  CHECK(!r3.broken);
  ((struct shm_ring_shared *)mem)->ncells = 1ull << 40;
  struct shm_ring r2;
  CHECK(shm_ring_attach(&r2, SH(mem), CELLS(mem), shm_ring_cells_bytes(bytes)) < 0);
  free(mem);
}

/* What the producer takes for writing ahead (shm_ring_own_*): the cells the
 * next record of the same size would fill, after the next one, and never a
 * cell the reader has not consumed or one past the cells in use. */
static void test_own_ahead(void) {
  size_t bytes = 16 * 1024; /* 256 cells */
  void *mem = ring_mem(bytes);
  struct shm_ring tx, rx;
  CHECK_EQ(shm_ring_attach(&tx, SH(mem), CELLS(mem), shm_ring_cells_bytes(bytes)), 0);
  CHECK_EQ(shm_ring_attach(&rx, SH(mem), CELLS(mem), shm_ring_cells_bytes(bytes)), 0);
  static uint8_t buf[4096];
  struct iovec iov = {buf, 1024};
  struct proto_hdr h = {.type = PROTO_EAGER, .len = 1024}; /* 17 cells */
  CHECK_EQ(shm_ring_push(&tx, &h, &iov, 1), 0);
  CHECK_EQ(shm_ring_own_plan(&tx, 0), 16); /* a reply: not the next cell */
  CHECK_EQ(shm_ring_own_when_read(&tx), -1); /* the reader has not read it */
  CHECK(shm_ring_peek(&rx) != NULL);
  shm_ring_pop(&rx);
  CHECK_EQ(shm_ring_own_when_read(&tx), 16);
  CHECK_EQ(shm_ring_own_plan(&tx, 1), 17); /* a stream: one more */
  CHECK_EQ(shm_ring_own_ahead(&tx), 17);
  CHECK_EQ(shm_ring_own_ahead(&tx), 0); /* taken once */
  /* A tiny reply plans nothing. */
  struct proto_hdr t = {.type = PROTO_EAGER, .len = 8};
  struct iovec tiov = {buf, 8};
  CHECK_EQ(shm_ring_push(&tx, &t, &tiov, 1), 0);
  CHECK_EQ(shm_ring_own_plan(&tx, 0), 0);
  /* The reader behind: never past the room it left. */
  uint64_t pushed = 0;
  while (shm_ring_push(&tx, &h, &iov, 1) == 0) pushed++;
  CHECK(pushed > 0);
  shm_ring_own_plan(&tx, 1);
  uint64_t n = shm_ring_own_ahead(&tx);
  CHECK(n == 0 || tx.local + 1 + n <= tx.cached + tx.ncells);
  CHECK(tx.pos + 1 + n <= tx.ncells);
  /* Whatever the stream, records go on arriving whole. */
  uint64_t got = 0;
  for (int lap = 0; lap < 200; lap++) {
    const struct proto_hdr *r;
    while ((r = shm_ring_peek(&rx)) != NULL) {
      CHECK(r->len == 1024 || r->len == 8);
      shm_ring_pop(&rx);
      got++;
    }
    while (shm_ring_push(&tx, &h, &iov, 1) == 0) {
      shm_ring_own_plan(&tx, lap & 1);
      n = shm_ring_own_ahead(&tx);
      CHECK(n == 0 || tx.local + 1 + n <= tx.cached + tx.ncells);
      CHECK(tx.pos + 1 + n <= tx.ncells);
    }
  }
  CHECK(got > 200);
  CHECK(!rx.broken);
  /* A limit below the ring: nothing past it. */
  shm_ring_set_limit(&tx, 64, 0);
  while ((shm_ring_peek(&rx)) != NULL) shm_ring_pop(&rx);
  for (int i = 0; i < 100; i++) {
    while (shm_ring_peek(&rx) != NULL) shm_ring_pop(&rx);
    if (shm_ring_push(&tx, &h, &iov, 1) < 0) continue;
    shm_ring_own_plan(&tx, 1);
    n = shm_ring_own_ahead(&tx);
    CHECK(tx.pos >= 64 || tx.pos + 1 + n <= 64);
  }
  free(mem);
}

int main(void) {
  test_wrap_and_full();
  test_own_ahead();
  test_corrupt();
  CHECK_DONE("test_ring");
  return 0;
}
