/* SPDX-License-Identifier: MIT */
/* The duplex box: turns, its order with the ring it goes beside, records
 * that cannot be; and through real endpoints, a mix of tiny and longer
 * messages both ways that arrives in order, with records in the box. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eps.h"
#include "shm/duplex_box.h"
#include "shm/eager_ring.h"

#define BOXED "tiny records sent through a link's duplex box (the line both directions share by turns)"

static void test_turns(void) {
  struct shm_box_line *line = aligned_alloc(64, sizeof *line);
  CHECK(line != NULL);
  memset(line, 0, sizeof *line);
  struct shm_box c, a; /* the link's creator and its acceptor */
  shm_box_attach(&c, line, 1);
  shm_box_attach(&a, line, 0);
  struct proto_hdr h = {.type = PROTO_EAGER, .len = RING_CELL_TINY, .msg_len = RING_CELL_TINY, .match = 7};
  CHECK(shm_box_fits(&c, &h));
  CHECK(!shm_box_fits(&a, &h)); /* not its turn */
  h.len = RING_CELL_TINY + 1;
  CHECK(!shm_box_fits(&c, &h)); /* not tiny */
  h.len = 4;
  h.type = PROTO_FRAG;
  CHECK(!shm_box_fits(&c, &h)); /* fragments stay in the ring */
  h.type = PROTO_EAGER;
  CHECK(!shm_box_ready(&a, 0)); /* nothing yet */

  char msg[RING_CELL_TINY] = "0123456789abcdef";
  struct iovec iov = {msg, 4};
  shm_box_push(&c, &h, &iov, 1, 3); /* after 3 ring records */
  CHECK(!shm_box_fits(&c, &h)); /* the turn has gone */
  CHECK(!shm_box_ready(&c, 3));  /* its own record is not its peer's */
  CHECK(!shm_box_ready(&a, 2));  /* a ring record before it is still unread */
  CHECK(shm_box_ready(&a, 3));
  CHECK(!shm_box_ready(&a, 4));
  struct shm_box_line got;
  CHECK_EQ(shm_box_take(&a, &got), 0);
  CHECK_EQ(got.hdr.match, 7);
  CHECK_EQ(got.hdr.len, 4);
  CHECK(memcmp(got.data, "0123", 4) == 0);
  CHECK(!shm_box_ready(&a, 3)); /* taken once */
  CHECK(shm_box_fits(&a, &h));  /* and the turn is the acceptor's */
  CHECK(!shm_box_fits(&c, &h));

  /* The reply: ready for the creator at its own count of ring records. */
  h.match = 8;
  h.len = 0;
  shm_box_push(&a, &h, NULL, 0, 0);
  CHECK(!shm_box_ready(&c, 1));
  CHECK(shm_box_ready(&c, 0));
  CHECK_EQ(shm_box_take(&c, &got), 0);
  CHECK_EQ(got.hdr.match, 8);
  CHECK(shm_box_fits(&c, &h));

  /* A peer writes what cannot be, with the stamp the reader expects: a
   * payload longer than the box, a PAD, a fragment, an unknown type. */
  uint8_t bad_types[] = {PROTO_EAGER, PROTO_PAD, PROTO_FRAG, PROTO_TYPE_MAX, 0xff};
  for (unsigned k = 0; k < sizeof bad_types; k++) {
    shm_box_attach(&c, line, 1);
    shm_box_attach(&a, line, 0);
    memset(line, 0, sizeof *line);
    line->hdr.type = bad_types[k];
    line->hdr.len = k == 0 ? RING_CELL_TINY + 1 : 0;
    __atomic_store_n(&line->stamp, 1, __ATOMIC_RELEASE); /* record 1, after 0 ring records */
    CHECK(shm_box_ready(&a, 0));
    CHECK_EQ(shm_box_take(&a, &got), -EPROTO);
  }
  /* After a crossing, the next BOX_REST records that could go there go
   * through the ring; the turn stays. */
  shm_box_attach(&c, line, 1);
  h = (struct proto_hdr){.type = PROTO_EAGER, .len = 8, .msg_len = 8};
  shm_box_crossed(&c);
  for (int i = 0; i < BOX_REST; i++) CHECK(!shm_box_pick(&c, &h));
  CHECK(c.turn);
  CHECK(shm_box_pick(&c, &h));
  free(line);
}

/* A producer that sends through a ring and the box, a consumer that takes
 * them as the shm transport does (the ring peeked, then the box) and
 * answers now and then through the box, which hands the producer the turn
 * back: every record arrives once, in order, across PADs and wraps. */
static void test_order_with_the_ring(void) {
  size_t bytes = 4096;
  size_t n = sizeof(struct shm_ring_shared) + shm_ring_cells_bytes(bytes);
  uint8_t *mem = aligned_alloc(64, n);
  struct shm_box_line *line = aligned_alloc(64, sizeof *line);
  CHECK(mem != NULL && line != NULL);
  memset(mem, 0, n);
  memset(line, 0, sizeof *line);
  struct shm_ring_shared *sh = (struct shm_ring_shared *)mem;
  shm_ring_format(sh, bytes);
  struct shm_ring tx, rx;
  CHECK_EQ(shm_ring_attach(&tx, sh, mem + sizeof *sh, shm_ring_cells_bytes(bytes)), 0);
  CHECK_EQ(shm_ring_attach(&rx, sh, mem + sizeof *sh, shm_ring_cells_bytes(bytes)), 0);
  struct shm_box p, c;
  shm_box_attach(&p, line, 1);
  shm_box_attach(&c, line, 0);
  static uint8_t buf[1024];
  uint64_t sent = 0, recvd = 0, boxed = 0, answers = 0;
  unsigned seed = 12345;
  while (recvd < 20000) {
    /* The producer pushes a few (until the ring is full). */
    int burst = rand_r(&seed) % 8;
    for (int i = 0; i < burst; i++) {
      struct proto_hdr h = {.type = PROTO_EAGER, .match = sent};
      h.len = rand_r(&seed) % 3 ? (uint32_t)(rand_r(&seed) % (RING_CELL_TINY + 1)) : (uint32_t)(rand_r(&seed) % 700);
      h.msg_len = h.len;
      memset(buf, (int)(sent & 0xff), h.len);
      struct iovec iov = {buf, h.len};
      if (shm_box_fits(&p, &h)) {
        shm_box_push(&p, &h, &iov, 1, tx.records);
        boxed++;
      } else if (shm_ring_push(&tx, &h, &iov, 1) < 0) {
        break;
      }
      sent++;
    }
    /* The producer takes an answer in the box: its turn again. */
    if (shm_box_ready(&p, 0)) {
      struct shm_box_line a;
      CHECK_EQ(shm_box_take(&p, &a), 0);
      CHECK_EQ(a.hdr.match, answers++);
    }
    /* The consumer takes some, in order. */
    int take = rand_r(&seed) % 10;
    for (int i = 0; i < take; i++) {
      const struct proto_hdr *h = shm_ring_peek(&rx);
      struct shm_box_line b;
      const struct proto_hdr *got = h;
      const uint8_t *data = h ? shm_ring_data(h) : NULL;
      int from_box = shm_box_ready(&c, rx.records);
      if (from_box) {
        CHECK_EQ(shm_box_take(&c, &b), 0);
        got = &b.hdr;
        data = b.data;
      }
      if (!got) break;
      CHECK_EQ(got->match, recvd);
      for (uint32_t k = 0; k < got->len; k++) CHECK_EQ(data[k], recvd & 0xff);
      recvd++;
      if (!from_box) shm_ring_pop(&rx);
      /* Now and then an answer (a 0-byte record after no ring records of
       * the consumer's: it has no ring here). */
      struct proto_hdr ans = {.type = PROTO_EAGER, .match = answers};
      if (shm_box_fits(&c, &ans) && rand_r(&seed) % 2) shm_box_push(&c, &ans, NULL, 0, 0);
    }
  }
  CHECK(recvd >= 20000);
  CHECK(boxed > 1000); /* both ways of sending were used */
  CHECK(sent - boxed > 1000);
  CHECK(!rx.broken);
  free(mem);
  free(line);
}

/* Real endpoints: a side sends a burst of messages of mixed sizes (tiny,
 * one ring record, pool buffers, medium) to the other, which receives them
 * with a wildcard tag and answers with a tiny one; they swap roles. The
 * tags say the order; some records went through the box. */
static void test_real_mixed_order(void) {
  fmx_endpoint_t e[2] = {open_ep(FMX_ANY_ENDPOINT, 21), open_ep(FMX_ANY_ENDPOINT, 22)};
  fmx_endpoint_addr_t to[2] = {connect_to(e[0], e[1], 22), connect_to(e[1], e[0], 21)};
  static uint8_t out[64 * 1024], in[64 * 1024];
  static const uint32_t sizes[] = {0, 8, 16, 17, 200, 3000, 20000, 60000, 1};
  unsigned seed = 99;
  uint64_t tag[2] = {0, 0};
  for (int round = 0; round < 300; round++) {
    int s = round & 1, r = !s;
    int burst = 1 + rand_r(&seed) % 6;
    fmx_request_t sreq[8];
    for (int i = 0; i < burst; i++) {
      uint32_t len = sizes[rand_r(&seed) % (sizeof sizes / sizeof *sizes)];
      memset(out, (int)(tag[s] & 0x7f), len);
      fmx_seg_t seg = {out, len};
      CHECK_EQ(fmx_isend(e[s], &seg, 1, to[s], tag[s]++, NULL, &sreq[i]), FMX_SUCCESS);
    }
    for (int i = 0; i < burst; i++) {
      fmx_seg_t seg = {in, sizeof in};
      fmx_request_t rr;
      CHECK_EQ(fmx_irecv(e[r], &seg, 1, 0, 0, NULL, &rr), FMX_SUCCESS); /* any tag: the next in order */
      fmx_status_t st = wait_done(e[r], &rr);
      CHECK_EQ(st.code, FMX_SUCCESS);
      uint64_t want = tag[s] - (uint64_t)burst + (uint64_t)i;
      CHECK_EQ(st.match_info, want);
      for (uint32_t k = 0; k < st.xfer_length; k++) CHECK_EQ(in[k], want & 0x7f);
    }
    for (int i = 0; i < burst; i++) wait_done(e[s], &sreq[i]);
  }
  CHECK(counter_of(e[0], BOXED) + counter_of(e[1], BOXED) > 0);
  fmx_close_endpoint(e[0]);
  fmx_close_endpoint(e[1]);
}

/* Two real endpoints exchange tiny messages (both send, then both
 * receive: each side's record crosses the other's): the box carries few
 * of them. Then a ping-pong: the box carries nearly all again. */
static void test_real_crossing(void) {
  fmx_endpoint_t e[2] = {open_ep(FMX_ANY_ENDPOINT, 31), open_ep(FMX_ANY_ENDPOINT, 32)};
  fmx_endpoint_addr_t to[2] = {connect_to(e[0], e[1], 32), connect_to(e[1], e[0], 31)};
  uint64_t word = 0;
  fmx_seg_t seg = {&word, sizeof word};
  fmx_request_t sr, rr;
  const int n = 1000;
  uint64_t before = counter_of(e[0], BOXED) + counter_of(e[1], BOXED);
  if (before == UINT64_MAX) before = 0;
  for (int i = 0; i < n; i++) {
    for (int k = 0; k < 2; k++) {
      CHECK_EQ(fmx_isend(e[k], &seg, 1, to[k], 1, NULL, &sr), FMX_SUCCESS);
      wait_done(e[k], &sr);
    }
    for (int k = 0; k < 2; k++) {
      CHECK_EQ(fmx_irecv(e[k], &seg, 1, 1, ~0ull, NULL, &rr), FMX_SUCCESS);
      wait_done(e[k], &rr);
    }
  }
  uint64_t exchanged = counter_of(e[0], BOXED) + counter_of(e[1], BOXED);
  if (exchanged == UINT64_MAX) exchanged = 0;
  CHECK(exchanged - before < (uint64_t)n / 8); /* of 2n records */
  for (int i = 0; i < n; i++)
    for (int k = 0; k < 2; k++) {
      CHECK_EQ(fmx_irecv(e[!k], &seg, 1, 2, ~0ull, NULL, &rr), FMX_SUCCESS);
      CHECK_EQ(fmx_isend(e[k], &seg, 1, to[k], 2, NULL, &sr), FMX_SUCCESS);
      wait_done(e[k], &sr);
      wait_done(e[!k], &rr);
    }
  uint64_t after = counter_of(e[0], BOXED) + counter_of(e[1], BOXED);
  CHECK(after - exchanged > (uint64_t)n); /* of 2n records */
  fmx_close_endpoint(e[0]);
  fmx_close_endpoint(e[1]);
}

int main(void) {
  test_turns();
  test_order_with_the_ring();
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  test_real_mixed_order();
  test_real_crossing();
  fmx_finalize();
  CHECK_DONE("test_box");
  return 0;
}
