/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: what a foreign host may put on the wire to the net
 * transport. The input is a run of packets (u16 length, then that many
 * bytes), each parsed (src/net/wire.c) and, when it parses, fed to one
 * partner's reliability state (src/net/rel.c) as the receiving path will:
 * its ack (with the ACK's selective bitmap) against what we sent, a DATA
 * packet into the ordered stream, every in-order packet popped and freed,
 * timers run between packets. A crash, a leak or an invariant broken is the
 * finding.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"
#include "net/rel.h"
#include "net/wire.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t emitted;
static void emit(void *arg, uint8_t *pkt, size_t len) {
  (void)arg, (void)pkt;
  emitted += len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static struct net_pool pool = {.size = 2048, .keep = 16};
  static struct net_rel_counts counts;
  static const struct net_rel_cfg cfg = {
      .pool = &pool, .counts = &counts, .window = 16, .rto_ns = 1000, .rto_max_ns = 8000, .dead_ns = 1000000, .ack_delay_ns = 500, .ack_every = 4};
  struct net_rel r;
  uint32_t start = 0;
  fuzz_take(&data, &size, &start, sizeof start);
  if (net_rel_init(&r, &cfg, start, start ^ 0x5a5a5a5au) != 0) abort();
  uint8_t out[NET_HDR_LEN + 8] = {0};
  for (int i = 0; i < 8; i++) net_rel_queue(&r, out, sizeof out, 0); /* ours in flight, to be acked */
  uint64_t now = 0;
  while (size >= 2) {
    uint16_t len = 0;
    fuzz_take(&data, &size, &len, sizeof len);
    if (len > size) len = (uint16_t)size;
    uint8_t *pkt = malloc(len ? len : 1); /* its own allocation: ASan sees a read past it */
    if (!pkt) abort();
    memcpy(pkt, data, len);
    data += len, size -= len;
    now += 300;
    struct net_pkt p;
    if (net_parse(pkt, len, &p) == NET_OK) {
      if (p.body < pkt + NET_HDR_LEN || p.body + p.h.len > pkt + len) abort(); /* the body lies inside */
      uint32_t una = r.una;
      if (p.h.type == NET_ACK) net_rel_on_dups(&r, p.u.ack.dups);
      net_rel_on_ack(&r, p.h.ack, p.h.type == NET_ACK ? p.u.ack.sack : 0, now, emit, NULL);
      if (net_seq_lt(r.una, una) || r.next_seq - r.una > cfg.window || !r.cwnd || r.cwnd > cfg.window) abort();
      struct proto_hdr rec;
      if (p.h.type == NET_DATA && net_get_record(p.body, p.h.len, &rec) == 0 &&
          (size_t)NET_RECORD_HDR + rec.len != p.h.len)
        abort(); /* a record accepted says exactly the payload it carries */
      if (p.h.type == NET_DATA && net_rel_recv(&r, p.h.seq, pkt, len, now) == NET_REL_NEW) {
        size_t n;
        uint8_t *q;
        while ((q = net_rel_pop(&r, &n))) net_pool_put(&pool, q);
      }
      if (net_rel_ack_due(&r, now)) {
        (void)net_rel_sack(&r);
        net_rel_acked(&r);
      }
    }
    net_rel_timers(&r, now, UINT32_MAX, emit, NULL);
    free(pkt);
  }
  net_rel_fini(&r);
  return 0;
}
