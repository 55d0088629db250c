/* SPDX-License-Identifier: MIT */
/* A peer that writes garbage into shared memory: malformed records are
 * counted and dropped, a rendezvous pointing at freed memory fails cleanly
 * on both sides, an impossible record drops the peer; nothing crashes and
 * the endpoint keeps working with its other peers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check.h"
#include "eps.h"
#include "base/config.h"
#include "bulk/engine.h"
#include "core/fmx_int.h"
#include "transport/record.h"
#include "shm/link.h"
#include "shm/shm.h"
#include "shm/eager_ring.h"

static fmx_endpoint_t a, b;
static fmx_endpoint_addr_t a_to_b, b_to_a;

static uint64_t counter(fmx_endpoint_t ep, int which) {
  uint64_t v[CNT_MAX];
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_COUNTER_VALUES, NULL, 0, v, sizeof v), FMX_SUCCESS);
  return v[which];
}

/* Write a raw record from a to b, as a hostile a would. */
static void inject(const struct proto_hdr *h, const void *payload) {
  struct partner *p = ep_partner_from_addr(a, a_to_b);
  CHECK(p != NULL);
  struct iovec iov = {(void *)payload, h->len};
  CHECK_EQ(shm_ring_push(&shm_peer(p)->link[0]->tx, h, &iov, payload ? 1 : 0), 0);
}

/* The first fragment of an 8 KiB medium message: 4 KiB of ones. */
static void inject_first_fragment(uint64_t match, uint64_t sreq) {
  static char frag[4096];
  memset(frag, 1, sizeof frag);
  struct proto_hdr h = {.type = PROTO_EAGER, .len = sizeof frag, .msg_len = 2 * sizeof frag, .match = match, .sreq = sreq};
  inject(&h, frag);
}

/* An RTS from a announcing an fmx_mem_alloc region `ref`, whose one segment
 * is 1 MiB at addr, met by a receive on b into rbuf (1 MiB): its status. */
static fmx_status_t xmem_rts(uint64_t addr, const struct region_ref *ref, uint64_t match, uint64_t sreq, char *rbuf) {
  struct proto_seg xp[3] = {{addr, 1 << 20}};
  region_to_wire(ref, xp + 1);
  struct proto_hdr h = {.type = PROTO_RTS, .flags = PROTO_F_XMEM, .nseg = 1, .len = sizeof xp,
                        .msg_len = 1 << 20, .match = match, .sreq = sreq};
  fmx_seg_t rs = {rbuf, 1 << 20};
  fmx_request_t rr;
  CHECK_EQ(fmx_irecv(b, &rs, 1, match, ~0ull, NULL, &rr), FMX_SUCCESS);
  inject(&h, xp);
  return wait_done(b, &rr);
}

static void progress_b(void) {
  for (int i = 0; i < 10; i++) fmx_progress(b);
}

/* A fresh pair c -> d (one link, c's), d's count of bad packets before,
 * and a receive of match 9 posted on d, that nothing will meet. */
struct hostile_pair {
  fmx_endpoint_t c, d;
  fmx_endpoint_addr_t c_to_d, d_to_c;
  uint64_t bad0;
  fmx_request_t rr;
  char buf[64];
};

static struct shm_link *fresh_pair(struct hostile_pair *hp) {
  uint32_t ec, ed;
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 3, NULL, 0, &hp->c), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 4, NULL, 0, &hp->d), FMX_SUCCESS);
  fmx_get_info(hp->c, FMX_INFO_ENDPOINT_ID, NULL, 0, &ec, sizeof ec);
  fmx_get_info(hp->d, FMX_INFO_ENDPOINT_ID, NULL, 0, &ed, sizeof ed);
  CHECK_EQ(fmx_connect(hp->c, FMX_ANY_NIC, ed, 4, 1000, &hp->c_to_d), FMX_SUCCESS);
  CHECK_EQ(fmx_connect(hp->d, FMX_ANY_NIC, ec, 3, 1000, &hp->d_to_c), FMX_SUCCESS);
  hp->bad0 = counter(hp->d, CNT_BAD_PACKET);
  fmx_seg_t rs = {hp->buf, sizeof hp->buf};
  CHECK_EQ(fmx_irecv(hp->d, &rs, 1, 9, ~0ull, NULL, &hp->rr), FMX_SUCCESS);
  return shm_peer(ep_partner_from_addr(hp->c, hp->c_to_d))->link[0];
}

/* d has dropped c, and its receive met nothing; both endpoints closed. */
static void dropped_and_closed(struct hostile_pair *hp) {
  for (int i = 0; i < 10; i++) fmx_progress(hp->d);
  CHECK(ep_partner_from_addr(hp->d, hp->d_to_c)->t.state != PARTNER_ALIVE);
  CHECK(counter(hp->d, CNT_BAD_PACKET) > hp->bad0);
  uint32_t cancelled = 0;
  CHECK_EQ(fmx_cancel(hp->d, &hp->rr, &cancelled), FMX_SUCCESS); /* nothing matched it */
  CHECK_EQ(cancelled, 1);
  CHECK_EQ(fmx_close_endpoint(hp->c), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(hp->d), FMX_SUCCESS);
}

/* c pushes an EAGER record whose payload, it says, is `len` bytes in
 * buffer `ref` of its pool. */
static void pool_ref_out_of_range(uint64_t ref, uint32_t len) {
  struct hostile_pair hp;
  struct shm_link *l = fresh_pair(&hp);
  struct proto_hdr h = {.type = PROTO_EAGER, .len = len, .msg_len = len, .match = 9};
  uint64_t at;
  CHECK_EQ(shm_ring_push_ref(&l->tx, &h, ref, &at), 0);
  dropped_and_closed(&hp);
}

/* c writes into the link's duplex box, with the stamp d waits for, a
 * record that cannot be (a payload longer than the box, or a type no box
 * carries). */
static void box_record_that_cannot_be(uint8_t type, uint32_t len) {
  struct hostile_pair hp;
  struct shm_link *l = fresh_pair(&hp);
  CHECK(l->box.turn); /* c made the link: the first turn is its */
  struct shm_box_line *line = l->box.line;
  line->hdr = (struct proto_hdr){.type = type, .len = len, .msg_len = len, .match = 9};
  __atomic_store_n(&line->stamp, (uint64_t)(uint32_t)l->tx.records << 32 | (uint32_t)(l->box.seq + 1), __ATOMIC_RELEASE);
  dropped_and_closed(&hp);
}

/* A link header whose area offsets are forged so that offset + length
 * wraps past 2^64 (found by tests/fuzz/fuzz_shared): refused, never
 * mapped into a view. Each of the ring, slots and coop offsets, each
 * direction. */
static void forged_channel_offsets(void) {
  int fd;
  struct shm_link *c = link_create(&fd);
  CHECK(c != NULL);
  link_destroy(c);
  struct chan_hdr good;
  CHECK_EQ(pread(fd, &good, sizeof good, 0), (ssize_t)sizeof good);
  const char *why = NULL;
  struct shm_link *ok = link_attach(fd, &why); /* the untouched header is fine */
  CHECK(ok != NULL);
  link_destroy(ok);
  for (int field = 0; field < 3; field++)
    for (int d = 0; d < 2; d++) {
      struct chan_hdr h = good;
      uint64_t *off = field == 0 ? &h.ring_off[d] : field == 1 ? &h.slots_off[d] : &h.coop_off[d];
      *off = ~0ull - 255; /* 64-aligned, and off + len wraps to a small number */
      CHECK_EQ(pwrite(fd, &h, sizeof h, 0), (ssize_t)sizeof h);
      CHECK(link_attach(fd, &why) == NULL);
      CHECK(why != NULL);
    }
  close(fd);
}

int main(void) {
  setenv("FMX_RING_SIZE", "64K", 1); /* inject() writes 4K payloads straight into the ring */
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 1, NULL, 0, &a), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 2, NULL, 0, &b), FMX_SUCCESS);
  uint32_t ea, eb;
  fmx_get_info(a, FMX_INFO_ENDPOINT_ID, NULL, 0, &ea, sizeof ea);
  fmx_get_info(b, FMX_INFO_ENDPOINT_ID, NULL, 0, &eb, sizeof eb);
  CHECK_EQ(fmx_connect(a, FMX_ANY_NIC, eb, 2, 1000, &a_to_b), FMX_SUCCESS);
  CHECK_EQ(fmx_connect(b, FMX_ANY_NIC, ea, 1, 1000, &b_to_a), FMX_SUCCESS);

  /* 1. EAGER whose length disagrees with its payload; CTS and FIN for
   *    requests that do not exist; RTS with too many segments. */
  uint64_t bad0 = counter(b, CNT_BAD_PACKET);
  char junk[64] = {0};
  struct proto_hdr h = {.type = PROTO_EAGER, .len = 64, .msg_len = 8, .match = 1};
  inject(&h, junk);
  h = (struct proto_hdr){.type = PROTO_CTS, .sreq = 0x123456789ull, .msg_len = 10};
  inject(&h, NULL);
  h = (struct proto_hdr){.type = PROTO_FIN, .sreq = 0x7777ull << 32};
  inject(&h, NULL);
  h = (struct proto_hdr){.type = PROTO_RTS, .nseg = 300, .len = 16, .msg_len = 10, .match = 2};
  inject(&h, junk);
  progress_b();
  CHECK_EQ(counter(b, CNT_BAD_PACKET) - bad0, 4);

  /* 2. RTS whose segments are freed memory: the receive completes with an
   *    error, nothing is written past the buffer, the endpoint lives on.
   *    (cma: the receiver pulls alone; the injected "sender" never pushes.) */
  CHECK_EQ(config_set("FMX_BULK", "cma", "environment"), 0);
  size_t pg = 1 << 20;
  void *gone = mmap(NULL, pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(gone, pg);
  struct proto_seg seg = {(uint64_t)(uintptr_t)gone, pg};
  h = (struct proto_hdr){.type = PROTO_RTS, .nseg = 1, .len = sizeof seg, .msg_len = pg, .match = 3,
                         .sreq = 0x42ull << 32};
  static char rbuf[(1 << 20) + 64];
  memset(rbuf, 0x5a, sizeof rbuf);
  fmx_seg_t rs = {rbuf, 1 << 20};
  fmx_request_t rr;
  CHECK_EQ(fmx_irecv(b, &rs, 1, 3, ~0ull, NULL, &rr), FMX_SUCCESS);
  inject(&h, &seg);
  fmx_status_t st;
  uint32_t res;
  CHECK_EQ(fmx_wait(b, &rr, 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK(st.code == FMX_MESSAGE_ABORTED || st.code == FMX_REMOTE_ENDPOINT_UNREACHABLE);
  for (size_t i = 1 << 20; i < sizeof rbuf; i++) CHECK_EQ(rbuf[i], 0x5a);

  /* 3. An RTS whose segments do not add up to its length. */
  struct proto_seg short_seg = {(uint64_t)(uintptr_t)junk, 8};
  h = (struct proto_hdr){.type = PROTO_RTS, .nseg = 1, .len = sizeof short_seg, .msg_len = 1 << 20, .match = 4,
                         .sreq = 0x43ull << 32};
  CHECK_EQ(fmx_irecv(b, &rs, 1, 4, ~0ull, NULL, &rr), FMX_SUCCESS);
  inject(&h, &short_seg);
  CHECK_EQ(fmx_wait(b, &rr, 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_MESSAGE_ABORTED);

  /* 3c. fmx_mem_alloc regions announced by an RTS (PROTO_F_XMEM, region/region.h):
   *  - the flag without room for the region in the payload: dropped;
   *  - a region that cannot be mapped (no such fd; a wrong inode): counted,
   *    and cma moves the message from the segments as without a region;
   *  - a region that does not hold the segments: the receive fails, nothing
   *    lands past its buffer. */
  uint8_t *reg;
  CHECK_EQ(fmx_mem_alloc(1 << 20, (void **)&reg), FMX_SUCCESS);
  memset(reg, 0x33, 1 << 20);
  fmx_seg_t regseg = {reg, 1 << 20};
  struct region_ref ref;
  CHECK_EQ(region_find(&regseg, 1, &ref), 1);
  struct proto_seg xp[3] = {{(uint64_t)(uintptr_t)reg, 1 << 20}};
  uint64_t badx = counter(b, CNT_BAD_PACKET);
  h = (struct proto_hdr){.type = PROTO_RTS, .flags = PROTO_F_XMEM, .nseg = 1, .len = sizeof xp[0],
                         .msg_len = 1 << 20, .match = 5, .sreq = 0x44ull << 32};
  inject(&h, xp);
  progress_b();
  CHECK_EQ(counter(b, CNT_BAD_PACKET) - badx, 1);
  for (int bad_ino = 0; bad_ino < 2; bad_ino++) {
    struct region_ref wrong = ref;
    if (bad_ino)
      wrong.ino++;
    else
      wrong.fd = 999999;
    uint64_t unmapped = counter(b, CNT_XMEM_UNMAPPED), mapped = counter(b, CNT_XMEM_RECV);
    memset(rbuf, 0, sizeof rbuf);
    st = xmem_rts((uint64_t)(uintptr_t)reg, &wrong, 7, (0x46ull + (uint64_t)bad_ino) << 32, rbuf);
    CHECK_EQ(st.code, FMX_SUCCESS);
    CHECK_EQ(counter(b, CNT_XMEM_UNMAPPED) - unmapped, 1);
    CHECK_EQ(counter(b, CNT_XMEM_RECV), mapped);
    for (size_t i = 0; i < (1 << 20); i++) CHECK_EQ((uint8_t)rbuf[i], 0x33);
  }
  static char outside[1 << 20];
  memset(rbuf, 0x5a, sizeof rbuf);
  st = xmem_rts((uint64_t)(uintptr_t)outside, &ref, 6, 0x45ull << 32, rbuf);
  CHECK_EQ(st.code, FMX_MESSAGE_ABORTED);
  CHECK_EQ(counter(b, CNT_BAD_PACKET) - badx, 2);
  for (size_t i = 1 << 20; i < sizeof rbuf; i++) CHECK_EQ(rbuf[i], 0x5a);

  /* 3b. Medium messages (eager in fragments, proto/medium.c):
   *  - a FRAG with no message in flight;
   *  - a fragment at the wrong offset: the receive it continues fails and
   *    nothing lands past its buffer;
   *  - a record between two fragments ends the message in flight, and is
   *    itself delivered;
   *  - an unexpected medium message cut short is dropped, never matched
   *    (ASan: nothing leaks);
   *  - an absurd length is refused. */
  bad0 = counter(b, CNT_BAD_PACKET);
  static char mbuf[8192 + 64];
  memset(mbuf, 0x5a, sizeof mbuf);
  fmx_seg_t ms = {mbuf, 8192};
  h = (struct proto_hdr){.type = PROTO_FRAG, .len = 64, .msg_len = 64, .sreq = 9};
  inject(&h, junk);
  CHECK_EQ(fmx_irecv(b, &ms, 1, 10, ~0ull, NULL, &rr), FMX_SUCCESS);
  inject_first_fragment(10, 9);
  h = (struct proto_hdr){.type = PROTO_FRAG, .len = 64, .msg_len = 2048, .sreq = 9};
  inject(&h, junk);
  CHECK_EQ(wait_done(b, &rr).code, FMX_MESSAGE_ABORTED);
  for (size_t i = 8192; i < sizeof mbuf; i++) CHECK_EQ(mbuf[i], 0x5a);
  fmx_request_t rr2;
  char small[64];
  fmx_seg_t ss = {small, sizeof small};
  CHECK_EQ(fmx_irecv(b, &ms, 1, 11, ~0ull, NULL, &rr), FMX_SUCCESS);
  CHECK_EQ(fmx_irecv(b, &ss, 1, 12, ~0ull, NULL, &rr2), FMX_SUCCESS);
  inject_first_fragment(11, 10);
  h = (struct proto_hdr){.type = PROTO_EAGER, .len = 8, .msg_len = 8, .match = 12};
  inject(&h, junk);
  CHECK_EQ(wait_done(b, &rr).code, FMX_MESSAGE_ABORTED);
  st = wait_done(b, &rr2);
  CHECK_EQ(st.code, FMX_SUCCESS);
  CHECK_EQ(st.xfer_length, 8);
  inject_first_fragment(13, 11);
  h = (struct proto_hdr){.type = PROTO_FRAG, .len = 64, .msg_len = 4096, .sreq = 12}; /* not its sender id */
  inject(&h, junk);
  h = (struct proto_hdr){.type = PROTO_EAGER, .len = 64, .msg_len = 1ull << 40, .match = 14, .sreq = 13};
  inject(&h, junk);
  progress_b();
  uint32_t found = 1;
  CHECK_EQ(fmx_iprobe(b, 13, ~0ull, &st, &found), FMX_SUCCESS);
  CHECK_EQ(found, 0);
  CHECK_EQ(fmx_iprobe(b, 14, ~0ull, &st, &found), FMX_SUCCESS);
  CHECK_EQ(found, 0);
  CHECK_EQ(counter(b, CNT_BAD_PACKET) - bad0, 5);

  /* 3d. Region records (proto/rma.c): an RGET with a payload, an RPUT with
   *    too many segments, an error RGRANT with a payload, an RGRANT for no
   *    read of ours are dropped and counted; an RGET or RPUT for a cookie b
   *    never made is refused (counted), and nothing is read or written. */
  h = (struct proto_hdr){.type = PROTO_RGET, .len = 8, .match = 1, .msg_len = 8};
  inject(&h, junk);
  h = (struct proto_hdr){.type = PROTO_RPUT, .nseg = 300, .len = 16, .msg_len = 10, .match = 1};
  inject(&h, junk);
  h = (struct proto_hdr){.type = PROTO_RGRANT, .flags = PROTO_F_ERROR, .len = 16, .nseg = 1, .match = 100};
  inject(&h, junk);
  struct proto_seg gseg = {(uint64_t)(uintptr_t)junk, 8};
  h = (struct proto_hdr){.type = PROTO_RGRANT, .nseg = 1, .len = sizeof gseg, .msg_len = 8, .rreq = 0x4242ull << 32};
  inject(&h, &gseg);
  uint64_t refused0 = counter(b, CNT_RMA_REFUSED);
  h = (struct proto_hdr){.type = PROTO_RGET, .match = 0xdead, .msg_len = 8, .sreq = 1};
  inject(&h, NULL);
  h = (struct proto_hdr){.type = PROTO_RPUT, .nseg = 1, .len = sizeof gseg, .msg_len = 8, .match = 0xbeef};
  inject(&h, &gseg);
  progress_b();
  CHECK_EQ(counter(b, CNT_BAD_PACKET) - bad0, 9);
  CHECK_EQ(counter(b, CNT_RMA_REFUSED) - refused0, 2);

  /* Real traffic still flows both ways after all that. */
  uint64_t v = 99;
  fmx_seg_t vs = {&v, sizeof v};
  fmx_request_t sr;
  CHECK_EQ(fmx_irecv(b, &rs, 1, 5, ~0ull, NULL, &rr), FMX_SUCCESS);
  CHECK_EQ(fmx_isend(a, &vs, 1, a_to_b, 5, NULL, &sr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(b, &rr, 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_SUCCESS);
  CHECK_EQ(*(uint64_t *)rbuf, 99);
  CHECK_EQ(fmx_wait(a, &sr, 5000, &st, &res), FMX_SUCCESS);

  /* 4. A hostile receiver's coop area. b sends 1 MiB to a; "a" answers
   *    with a coop CTS after scribbling the area b reads: first nonsense
   *    (too many segments, wrong sender id: b does not take part), then a
   *    well-formed transfer whose destination is unmapped (b's push fails,
   *    recorded in the area, no crash). A FIN with an error ends the send. */
  CHECK_EQ(config_set("FMX_RNDV_THRESHOLD", "64K", "environment"), 0); /* 1 MiB goes rendezvous on any L2 */
  CHECK_EQ(config_set("FMX_COOP_HELP_MIN", "0", "environment"), 0);   /* and b helps with it on any L2 */
  static char big[1 << 20];
  fmx_seg_t bs = {big, sizeof big};
  CHECK_EQ(fmx_isend(b, &bs, 1, b_to_a, 8, NULL, &sr), FMX_SUCCESS);
  struct fmx_request *sreq = (struct fmx_request *)sr;
  struct partner *pb = ep_partner_from_addr(b, b_to_a);
  struct coop_area *area = shm_peer(pb)->link[0]->bulk.tx_coop;
  uint32_t gen = 77;
  memset(area, 0xff, sizeof *area);
  area->stripe = (uint64_t)gen << COOP_GEN_SHIFT;
  area->nseg = 100000;
  struct proto_hdr cts = {.type = PROTO_CTS, .flags = bulk_coop.wire_id << PROTO_CTS_ENGINE_SHIFT, .sreq = sreq->m.id, .rreq = 1,
                          .msg_len = sizeof big, .match = gen};
  struct partner *pa2 = ep_partner_from_addr(a, a_to_b);
  struct iovec none = {NULL, 0};
  CHECK_EQ(shm_ring_push(&shm_peer(pa2)->link[0]->tx, &cts, &none, 0), 0);
  for (int i = 0; i < 10; i++) fmx_progress(b);
  CHECK_EQ(area->stripe, (uint64_t)gen << COOP_GEN_SHIFT); /* nothing taken */
  memset(area, 0, sizeof *area);
  area->sreq = sreq->m.id;
  area->total = sizeof big;
  area->stripe_max = 4096;
  area->nseg = 1;
  area->segs[0].addr = 4096; /* unmapped in any process */
  area->segs[0].len = sizeof big;
  __atomic_store_n(&area->stripe, (uint64_t)gen << COOP_GEN_SHIFT, __ATOMIC_RELEASE);
  CHECK_EQ(shm_ring_push(&shm_peer(pa2)->link[0]->tx, &cts, &none, 0), 0); /* b left the first one */
  for (int i = 0; i < 10; i++) fmx_progress(b);
  CHECK_EQ(area->error, EFAULT); /* b tried its stripe, failed, said so (an errno: both ends share a kernel) */
  CHECK_EQ(area->done, 4096);
  struct proto_hdr fin = {.type = PROTO_FIN, .flags = PROTO_F_ERROR, .sreq = sreq->m.id, .match = FMX_MESSAGE_ABORTED};
  CHECK_EQ(shm_ring_push(&shm_peer(pa2)->link[0]->tx, &fin, &none, 0), 0);
  CHECK_EQ(fmx_wait(b, &sr, 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_MESSAGE_ABORTED);

  /* 4b. The same with a region announced in the area (a's own
   *     fmx_mem_alloc memory, which b maps): a destination outside it is
   *     never written; b's stripe fails and says so. */
  CHECK_EQ(fmx_isend(b, &bs, 1, b_to_a, 8, NULL, &sr), FMX_SUCCESS);
  sreq = (struct fmx_request *)sr;
  gen = 78;
  memset(area, 0, sizeof *area);
  area->sreq = sreq->m.id;
  area->total = sizeof big;
  area->stripe_max = 4096;
  area->nseg = 1;
  area->segs[0].addr = (uint64_t)(uintptr_t)outside;
  area->segs[0].len = sizeof big;
  region_to_wire(&ref, area->xmem);
  memset(outside, 0x11, sizeof outside);
  memset(reg, 0x22, 1 << 20);
  __atomic_store_n(&area->stripe, (uint64_t)gen << COOP_GEN_SHIFT, __ATOMIC_RELEASE);
  cts.sreq = sreq->m.id;
  cts.match = gen;
  CHECK_EQ(shm_ring_push(&shm_peer(pa2)->link[0]->tx, &cts, &none, 0), 0);
  for (int i = 0; i < 10; i++) fmx_progress(b);
  CHECK_EQ(area->error, EFAULT);
  for (size_t i = 0; i < sizeof outside; i++) CHECK_EQ(outside[i], 0x11);
  for (size_t i = 0; i < (1 << 20); i++) CHECK_EQ(reg[i], 0x22);
  fin.sreq = sreq->m.id;
  CHECK_EQ(shm_ring_push(&shm_peer(pa2)->link[0]->tx, &fin, &none, 0), 0);
  CHECK_EQ(fmx_wait(b, &sr, 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_MESSAGE_ABORTED);
  CHECK_EQ(fmx_mem_free(reg), FMX_SUCCESS);

  /* 5. An impossible record (unknown type) breaks the ring: b drops a,
   *    pending receives from a complete with an error, b keeps working. */
  h = (struct proto_hdr){.type = 200};
  inject(&h, NULL);
  progress_b();
  struct partner *pa = ep_partner_from_addr(b, b_to_a);
  CHECK(pa != NULL);
  CHECK(pa->t.state != PARTNER_ALIVE);
  CHECK_EQ(fmx_isend(b, &vs, 1, b_to_a, 6, NULL, &sr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(b, &sr, 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, FMX_REMOTE_ENDPOINT_UNREACHABLE);
  fmx_endpoint_addr_t self;
  fmx_get_endpoint_addr(b, &self);
  CHECK_EQ(fmx_irecv(b, &rs, 1, 7, ~0ull, NULL, &rr), FMX_SUCCESS);
  CHECK_EQ(fmx_isend(b, &vs, 1, self, 7, NULL, &sr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(b, &rr, 5000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(st.code, FMX_SUCCESS);
  CHECK_EQ(fmx_wait(b, &sr, 5000, &st, &res), FMX_SUCCESS);

  /* 6. A record naming a buffer its sender's pool does not have (an index
   *    past it, or more bytes than a buffer holds): the receiver reads
   *    nothing there, drops the sender, and keeps working. */
  pool_ref_out_of_range(1ull << 40, 64);
  pool_ref_out_of_range(0, 1u << 30);
  box_record_that_cannot_be(PROTO_EAGER, RING_CELL_TINY + 1);
  box_record_that_cannot_be(PROTO_FRAG, 8);
  box_record_that_cannot_be(PROTO_TYPE_MAX, 0);

  forged_channel_offsets();
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_malformed");
  return 0;
}
