/* SPDX-License-Identifier: MIT */
/*
 * The net transport's packet format and reliability (src/net/wire.c,
 * src/net/rel.c), between two streams joined by a simulated line that
 * loses, duplicates, delays and reorders packets with a seeded generator:
 * every packet must arrive exactly once and in order, a silent partner
 * must be declared gone after dead_ns and not before, and each malformed
 * header must be refused with its reason. The line is simulated because
 * this is the algorithm alone; the real wires and namespaces are the
 * system tests' (and nftables' loss there).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "net/iface.h"
#include "net/rel.h"
#include "net/wire.h"

/* The packets both sides keep (an endpoint's pool, pool.h). */
static struct net_pool pool = {.size = 2048, .keep = 64};

/* ---- a line ------------------------------------------------------------ */

struct pkt {
  uint64_t at; /* arrival time */
  int to;      /* side 0 or 1 */
  size_t len;
  uint8_t b[NET_HDR_LEN + 256];
};

#define LINE_MAX 65536
static struct pkt line[LINE_MAX];
static int nline;
static uint64_t rng = 1;
static unsigned loss_pct, dup_pct, jitter_ns, delay_ns = 20000;
static uint64_t now;
static int emit_to;

static uint32_t rnd(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (uint32_t)(rng >> 11);
}

static void put_on_line(int to, const uint8_t *b, size_t len) {
  int copies = 1 + (rnd() % 100 < dup_pct);
  for (int c = 0; c < copies; c++) {
    if (rnd() % 100 < loss_pct) continue;
    CHECK(nline < LINE_MAX);
    struct pkt *p = &line[nline++];
    p->at = now + delay_ns + (jitter_ns ? rnd() % jitter_ns : 0);
    p->to = to;
    p->len = len;
    memcpy(p->b, b, len);
  }
}

static void emit(void *arg, uint8_t *b, size_t len) {
  (void)arg;
  put_on_line(emit_to, b, len);
}

/* ---- two sides --------------------------------------------------------- */

struct side {
  struct net_rel r;
  uint32_t sent, got; /* packets queued, delivered in order */
  uint32_t want;      /* to send */
  uint32_t base;      /* seq of our first packet (the peer's rx_start) */
  int dead;
};

static void make_data(struct side *s, uint8_t *b, size_t *len) {
  uint32_t idx = s->sent;
  uint16_t body = (uint16_t)(4 + rnd() % 200);
  struct net_hdr h = {.type = NET_DATA, .dst_ep = 1, .src_ep = 2, .seq = s->r.next_seq,
                      .ack = net_rel_ack_value(&s->r), .len = body, .flags = NET_F_FIRST | NET_F_LAST};
  net_put_hdr(b, &h);
  net_set32(b + NET_HDR_LEN, idx);
  for (uint16_t i = 4; i < body; i++) b[NET_HDR_LEN + i] = (uint8_t)(idx * 7 + i);
  *len = NET_HDR_LEN + body;
}

static void deliver(struct side *s, const uint8_t *b, size_t len) {
  struct net_pkt p;
  CHECK_EQ(net_parse(b, len, &p), NET_OK);
  CHECK(p.h.len >= 4);
  uint32_t idx = net_get32(p.body);
  CHECK_EQ(idx, s->got); /* in order, none missing, none twice */
  for (uint16_t i = 4; i < p.h.len; i++) CHECK_EQ(p.body[i], (uint8_t)(idx * 7 + i));
  s->got++;
}

static void arrive(struct side *s, int me, const struct pkt *k) {
  struct net_pkt p;
  CHECK_EQ(net_parse(k->b, k->len, &p), NET_OK);
  emit_to = !me;
  if (p.h.type == NET_ACK) net_rel_on_dups(&s->r, p.u.ack.dups);
  net_rel_on_ack(&s->r, p.h.ack, p.h.type == NET_ACK ? p.u.ack.sack : 0, now, emit, NULL);
  CHECK(s->r.cwnd >= 1 && s->r.cwnd <= s->r.cfg->window);
  if (p.h.type != NET_DATA) return;
  int rc = net_rel_recv(&s->r, p.h.seq, k->b, k->len, now);
  CHECK(rc > 0);
  if (rc != NET_REL_NEW) return;
  deliver(s, k->b, k->len);
  size_t len;
  uint8_t *q;
  while ((q = net_rel_pop(&s->r, &len))) {
    deliver(s, q, len);
    net_pool_put(&pool, q);
  }
}

static void step(struct side *s, int me) {
  emit_to = !me;
  if (!s->dead) {
    int rc = net_rel_timers(&s->r, now, UINT32_MAX, emit, NULL);
    if (rc == -ETIMEDOUT) s->dead = 1;
  }
  while (!s->dead && s->sent < s->want && net_rel_can_send(&s->r)) {
    uint8_t b[NET_HDR_LEN + 256];
    size_t len;
    make_data(s, b, &len);
    CHECK_EQ(net_rel_queue(&s->r, b, len, now), 0);
    net_rel_acked_on_data(&s->r); /* the ack rode along */
    s->sent++;
    put_on_line(!me, b, len);
  }
  if (net_rel_ack_due(&s->r, now)) {
    uint8_t b[NET_HDR_LEN + 8];
    struct net_hdr h = {.type = NET_ACK, .dst_ep = 1, .src_ep = 2, .ack = net_rel_ack_value(&s->r), .len = 8,
                        .flags = (uint16_t)(net_rel_dups(&s->r) << NET_ACK_DUPS_SHIFT)};
    net_put_hdr(b, &h);
    net_put_ack(b + NET_HDR_LEN, net_rel_sack(&s->r));
    net_rel_acked(&s->r);
    put_on_line(!me, b, sizeof b);
  }
}

/* What each side's stream counts (pair), and the streams made from cfg itself. */
static struct net_rel_counts cnt[2], counts;
static const struct net_rel_cfg cfg = {
    .pool = &pool, .counts = &counts, .window = 64, .rto_ns = 200000, .rto_max_ns = 3200000, .dead_ns = 50000000, .ack_delay_ns = 50000, .ack_every = 4};

/* Run both sides until each got all the other sent, or a side is gone,
 * or the time limit: the simulated time it took. */
static uint64_t run(struct side *s, uint64_t limit_ns) {
  nline = 0;
  uint64_t start = now;
  while (now - start < limit_ns) {
    for (int i = 0; i < 2; i++) step(&s[i], i);
    /* the packets due by now, in arrival order */
    for (int i = 0; i < nline;) {
      if (line[i].at <= now) {
        struct pkt k = line[i];
        line[i] = line[--nline];
        arrive(&s[k.to], k.to, &k);
      } else {
        i++;
      }
    }
    if (s[0].got == s[1].want && s[1].got == s[0].want && net_rel_idle(&s[0].r) && net_rel_idle(&s[1].r)) break;
    if (s[0].dead || s[1].dead) break;
    now += 5000;
  }
  return now - start;
}

static void pair(struct side *s, uint32_t a_start, uint32_t b_start, uint32_t n) {
  static struct net_rel_cfg sides[2];
  memset(s, 0, 2 * sizeof *s);
  memset(cnt, 0, sizeof cnt);
  for (int i = 0; i < 2; i++) sides[i] = cfg, sides[i].counts = &cnt[i];
  CHECK_EQ(net_rel_init(&s[0].r, &sides[0], a_start, b_start), 0);
  CHECK_EQ(net_rel_init(&s[1].r, &sides[1], b_start, a_start), 0);
  s[0].want = s[1].want = n;
}

static void unpair(struct side *s) {
  net_rel_fini(&s[0].r);
  net_rel_fini(&s[1].r);
}

static void test_clean(void) {
  struct side s[2];
  loss_pct = dup_pct = jitter_ns = 0;
  pair(s, 1, 1000, 2000);
  run(s, 10000000000ull);
  CHECK_EQ(s[0].got, 2000);
  CHECK_EQ(s[1].got, 2000);
  CHECK_EQ(cnt[0].resent + cnt[1].resent, 0);
  unpair(s);
}

/* 10% loss and 5% duplication each way, delays spread over 4x the base
 * (reordering), sequence numbers that wrap: exactly once, in order. */
static void test_lossy(uint64_t seed) {
  struct side s[2];
  rng = seed;
  loss_pct = 10, dup_pct = 5, jitter_ns = 80000;
  pair(s, 0xFFFFFF00u, 0x7FFFFFF0u, 3000);
  run(s, 60000000000ull);
  CHECK(!s[0].dead && !s[1].dead);
  CHECK_EQ(s[0].got, 3000);
  CHECK_EQ(s[1].got, 3000);
  CHECK(cnt[0].resent > 0 && cnt[1].resent > 0);
  CHECK(cnt[0].gap_resends + cnt[1].gap_resends > 0); /* holes resent before the timer */
  CHECK(cnt[0].dups + cnt[1].dups > 0);
  CHECK(cnt[0].early + cnt[1].early > 0);
  CHECK_EQ(s[0].r.next_seq, 0xFFFFFF00u + 3000); /* wrapped */
  unpair(s);
}

/* The line goes dead: the sender declares its partner gone after dead_ns
 * of no ack, not before, resending with backoff meanwhile. */
static void test_dead(void) {
  struct side s[2];
  loss_pct = 0, dup_pct = 0, jitter_ns = 0;
  pair(s, 5, 6, 100);
  s[1].want = 0;
  run(s, 1000000); /* 1 ms: some delivered and acked */
  CHECK(s[1].got > 0);
  loss_pct = 100;
  s[0].want = 1000;
  uint64_t t0 = now;
  uint64_t took = run(s, 10000000000ull);
  CHECK(s[0].dead);
  CHECK(took >= cfg.dead_ns - 1000000); /* the clock ran from the last progress, at most 1 ms before */
  CHECK(now - t0 <= cfg.dead_ns + cfg.rto_max_ns);
  CHECK(cnt[0].resent > 0);
  CHECK(s[0].r.rto_ns == cfg.rto_max_ns); /* backed off to the cap */
  unpair(s);
}

static void test_edges(void) {
  struct net_rel r;
  struct net_rel_cfg bad = cfg;
  bad.window = 0;
  CHECK_EQ(net_rel_init(&r, &bad, 0, 0), -EINVAL);
  bad = cfg, bad.window = NET_REL_WINDOW_MAX + 1;
  CHECK_EQ(net_rel_init(&r, &bad, 0, 0), -EINVAL);
  bad = cfg, bad.rto_max_ns = cfg.rto_ns - 1;
  CHECK_EQ(net_rel_init(&r, &bad, 0, 0), -EINVAL);
  bad = cfg, bad.pool = NULL;
  CHECK_EQ(net_rel_init(&r, &bad, 0, 0), -EINVAL);
  bad = cfg, bad.counts = NULL;
  CHECK_EQ(net_rel_init(&r, &bad, 0, 0), -EINVAL);
  memset(&counts, 0, sizeof counts);
  CHECK_EQ(net_rel_init(&r, &cfg, 10, 20), 0);
  static uint8_t huge[2049];
  CHECK_EQ(net_rel_queue(&r, huge, sizeof huge, 0), -EMSGSIZE); /* more than a buffer holds */
  CHECK_EQ(net_rel_recv(&r, 21, huge, sizeof huge, 0), -ENOMEM); /* early, and too big to keep: as if lost */
  uint8_t b[NET_HDR_LEN + 4] = {0};
  for (uint32_t i = 0; i < cfg.window; i++) CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
  CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), -EAGAIN); /* window full */
  CHECK(!net_rel_can_send(&r));
  emit_to = 0;
  CHECK_EQ(net_rel_on_ack(&r, 10 + cfg.window + 1, 0, 0, emit, NULL), -1); /* beyond what was sent */
  CHECK_EQ(net_rel_on_ack(&r, 9, 0, 0, emit, NULL), -1);                    /* before what was acked */
  CHECK_EQ(counts.bad_acks, 2);
  CHECK_EQ(net_rel_on_ack(&r, 12, 0, 0, emit, NULL), 0);
  CHECK_EQ(r.una, 12);
  CHECK(net_rel_can_send(&r));
  /* receiving: far, early, duplicate early, in order, popped, old dup */
  CHECK_EQ(net_rel_recv(&r, 20 + cfg.window, b, sizeof b, 0), NET_REL_FAR);
  CHECK_EQ(net_rel_recv(&r, 22, b, sizeof b, 0), NET_REL_EARLY);
  CHECK_EQ(net_rel_recv(&r, 22, b, sizeof b, 0), NET_REL_DUP);
  CHECK_EQ(net_rel_sack(&r), 2); /* seq 22 = ack 20 + 1 + bit 1 */
  CHECK(net_rel_ack_due(&r, 0)); /* a hole: at once */
  size_t len;
  CHECK(net_rel_pop(&r, &len) == NULL);
  CHECK_EQ(net_rel_recv(&r, 20, b, sizeof b, 0), NET_REL_NEW);
  CHECK(net_rel_pop(&r, &len) == NULL); /* 21 still missing */
  CHECK_EQ(net_rel_recv(&r, 21, b, sizeof b, 0), NET_REL_NEW);
  uint8_t *q = net_rel_pop(&r, &len);
  CHECK(q != NULL && len == sizeof b);
  net_pool_put(&pool, q);
  CHECK_EQ(net_rel_ack_value(&r), 23);
  CHECK_EQ(net_rel_recv(&r, 20, b, sizeof b, 0), NET_REL_DUP);
  net_rel_acked(&r);
  CHECK(!net_rel_ack_due(&r, 0));
  net_rel_fini(&r);
}

/* The rings take memory only as packets are kept, doubling from
 * NET_REL_RING_FIRST up to the window; what they hold keeps its order
 * through each growth. */
static void test_rings(void) {
  struct net_rel r;
  CHECK_EQ(net_rel_init(&r, &cfg, 0xfffffff0u, 0xfffffffau), 0); /* both about to wrap */
  CHECK_EQ(net_rel_ring_bytes(&r), 0);
  uint8_t b[NET_HDR_LEN + 4] = {0};
  CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
  CHECK_EQ(net_rel_ring_bytes(&r), NET_REL_RING_FIRST * sizeof(struct net_rel_slot));
  /* 20 in flight, each telling its seq in its last byte. */
  for (uint32_t i = 1; i < 20; i++) {
    b[NET_HDR_LEN] = (uint8_t)i;
    CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
  }
  CHECK_EQ(net_rel_ring_bytes(&r), 32 * sizeof(struct net_rel_slot));
  for (uint32_t i = 1; i < 20; i++) CHECK_EQ(net_rel_sends(&r, 0xfffffff0u + i), 1);
  CHECK_EQ(net_rel_on_ack(&r, 0xfffffff0u + 10, 0, 0, emit, NULL), 0);
  for (uint32_t i = 10; i < 20; i++) CHECK_EQ(net_rel_sends(&r, 0xfffffff0u + i), 1);
  /* The resends after the growth are the packets queued with those seqs:
   * the oldest alone on the timer, the rest (what the halved window
   * allows) once its ack says they were lost too. */
  emit_to = 0;
  nline = 0;
  CHECK_EQ(net_rel_timers(&r, cfg.rto_ns, 100, emit, NULL), 1);
  CHECK_EQ(net_rel_on_ack(&r, 0xfffffff0u + 11, 0, cfg.rto_ns + 1, emit, NULL), 0);
  CHECK_EQ(nline, 1 + 5);
  for (int i = 0; i < nline; i++) CHECK_EQ(line[i].b[NET_HDR_LEN], 10 + i);
  nline = 0;
  /* Early packets 3 then 40 ahead of a hole at 0xfffffffa: the ring grows
   * to 64 slots, and both come out in order once the hole fills. */
  uint32_t x = 0xfffffffau;
  b[NET_HDR_LEN] = 3;
  CHECK_EQ(net_rel_recv(&r, x + 3, b, sizeof b, 0), NET_REL_EARLY);
  size_t rx8 = net_rel_ring_bytes(&r);
  b[NET_HDR_LEN] = 40;
  CHECK_EQ(net_rel_recv(&r, x + 40, b, sizeof b, 0), NET_REL_EARLY);
  CHECK_EQ(net_rel_ring_bytes(&r) - rx8, (64 - NET_REL_RING_FIRST) * sizeof(struct net_rel_slot));
  CHECK_EQ(net_rel_recv(&r, x + 3, b, sizeof b, 0), NET_REL_DUP);
  CHECK_EQ(net_rel_sack(&r), 1ull << 2 | 1ull << 39);
  size_t len;
  for (uint32_t i = 0; i < 3; i++) CHECK_EQ(net_rel_recv(&r, x + i, b, sizeof b, 0), NET_REL_NEW);
  uint8_t *q = net_rel_pop(&r, &len);
  CHECK(q && q[NET_HDR_LEN] == 3);
  net_pool_put(&pool, q);
  CHECK(net_rel_pop(&r, &len) == NULL);
  for (uint32_t i = 4; i < 40; i++) CHECK_EQ(net_rel_recv(&r, x + i, b, sizeof b, 0), NET_REL_NEW);
  q = net_rel_pop(&r, &len);
  CHECK(q && q[NET_HDR_LEN] == 40);
  net_pool_put(&pool, q);
  CHECK_EQ(net_rel_ack_value(&r), x + 41);
  net_rel_fini(&r);
  CHECK_EQ(net_rel_ring_bytes(&r), 0);
  /* A window that is not a power of two, full across the seq wrap: every
   * packet keeps a slot of its own (the ring is 128 slots). */
  struct net_rel_cfg c100 = cfg;
  c100.window = 100;
  CHECK_EQ(net_rel_init(&r, &c100, 0xffffffffu - 3, 0), 0);
  r.cwnd = (uint16_t)c100.window; /* open as far as the configured window (it grows there as acks come) */
  for (uint32_t i = 0; i < 100; i++) {
    b[NET_HDR_LEN] = (uint8_t)i;
    CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
  }
  CHECK_EQ(net_rel_ring_bytes(&r), 128 * sizeof(struct net_rel_slot));
  nline = 0;
  CHECK_EQ(net_rel_timers(&r, cfg.rto_ns, 100, emit, NULL), 1);
  CHECK_EQ(net_rel_on_ack(&r, 0xffffffffu - 2, 0, cfg.rto_ns + 1, emit, NULL), 0);
  CHECK_EQ(nline, 1 + 50);
  for (int i = 0; i < nline; i++) CHECK_EQ(line[i].b[NET_HDR_LEN], i);
  nline = 0;
  net_rel_fini(&r);
}

/* The resend wait measured from round trips: within [rto_min_ns,
 * rto_max_ns], past the first guess when round trips are long, never from
 * a packet sent twice (Karn), backed off from there. */
static void test_measured_rto(void) {
  struct net_rel r;
  struct net_rel_cfg c = cfg;
  c.rto_min_ns = 20000;
  CHECK_EQ(net_rel_init(&r, &c, 1, 1), 0);
  uint8_t b[NET_HDR_LEN + 4] = {0};
  CHECK_EQ(r.rto_ns, c.rto_ns); /* nothing measured: the first guess */
  uint64_t t = 1000000;
  for (int i = 0; i < 20; i++) { /* round trips of 10 us */
    CHECK_EQ(net_rel_queue(&r, b, sizeof b, t), 0);
    t += 10000;
    CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t, emit, NULL), 0);
  }
  CHECK(r.srtt_ns >= 9000 && r.srtt_ns <= 11000);
  CHECK_EQ(r.rto_ns, c.rto_min_ns); /* 10 us + 4 x variation is below the least */
  for (int i = 0; i < 40; i++) { /* round trips of 100 us */
    CHECK_EQ(net_rel_queue(&r, b, sizeof b, t), 0);
    t += 100000;
    CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t, emit, NULL), 0);
  }
  CHECK(r.rto_ns > c.rto_min_ns && r.rto_ns < c.rto_ns);
  uint64_t before = r.srtt_ns;
  /* A packet resent, then acked much later: its time is not taken. */
  CHECK_EQ(net_rel_queue(&r, b, sizeof b, t), 0);
  emit_to = 0;
  CHECK_EQ(net_rel_timers(&r, t + r.rto_ns, UINT32_MAX, emit, NULL), 1);
  CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t + 150000000, emit, NULL), 0);
  CHECK_EQ(r.srtt_ns, before);
  for (int i = 0; i < 40; i++) { /* round trips of 10 ms: past the first guess, capped at rto_max_ns */
    CHECK_EQ(net_rel_queue(&r, b, sizeof b, t), 0);
    t += 10000000;
    CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t, emit, NULL), 0);
  }
  CHECK_EQ(r.rto_ns, c.rto_max_ns);
  for (int i = 0; i < 200; i++) { /* round trips of 1 ms: between the first guess and the cap */
    CHECK_EQ(net_rel_queue(&r, b, sizeof b, t), 0);
    t += 1000000;
    CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t, emit, NULL), 0);
  }
  CHECK(r.rto_ns > c.rto_ns && r.rto_ns < c.rto_max_ns);
  net_rel_fini(&r);
}

/* What a closing endpoint asks: how often a packet went (0 once acked or
 * never sent), and the resend wait's backoff undone. */
static void test_close_helpers(void) {
  struct net_rel r;
  CHECK_EQ(net_rel_init(&r, &cfg, 100, 0), 0);
  uint8_t b[NET_HDR_LEN + 4] = {0};
  CHECK_EQ(net_rel_sends(&r, 100), 0); /* not sent yet */
  CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
  CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
  CHECK_EQ(net_rel_sends(&r, 101), 1);
  /* In flight: sent, not acked (what an out-of-step NACK must name). */
  CHECK(!net_rel_in_flight(&r, 99) && net_rel_in_flight(&r, 100) && net_rel_in_flight(&r, 101));
  CHECK(!net_rel_in_flight(&r, 102) && !net_rel_in_flight(&r, 100 + (1u << 20)));
  emit_to = 0;
  uint64_t t = 0;
  for (int i = 0; i < 5; i++) {
    t += r.rto_ns;
    CHECK_EQ(net_rel_timers(&r, t, UINT32_MAX, emit, NULL), 1); /* the oldest alone */
  }
  CHECK_EQ(net_rel_sends(&r, 100), 6);
  CHECK_EQ(net_rel_sends(&r, 101), 1);
  CHECK(r.rto_ns > cfg.rto_ns); /* backed off */
  net_rel_unback(&r);
  CHECK_EQ(r.rto_ns, cfg.rto_ns); /* nothing measured: the first guess */
  CHECK_EQ(net_rel_on_ack(&r, 101, 0, t, emit, NULL), 0);
  CHECK_EQ(net_rel_sends(&r, 100), 0); /* acked */
  CHECK_EQ(net_rel_sends(&r, 101), 2); /* it alone acked: the other was lost too, and went at once */
  CHECK(!net_rel_in_flight(&r, 100) && net_rel_in_flight(&r, 101));
  CHECK_EQ(net_rel_sends(&r, 99), 0);
  CHECK_EQ(net_rel_sends(&r, 102), 0);
  net_rel_fini(&r);
}

/* A timer pass bounded: the oldest packet due, alone, and alone again at
 * each backed-off timeout while no ack comes (F-RTO); none with max 0. An
 * ack of more than that packet (the peer had the rest: its acks were
 * late) sends nothing more; an ack of it alone sends the rest that timed
 * out, what the halved window allows. */
static void test_resend_bound(void) {
  struct net_rel r;
  CHECK_EQ(net_rel_init(&r, &cfg, 0, 0), 0);
  uint8_t b[NET_HDR_LEN + 4] = {0};
  for (int i = 0; i < 10; i++) CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
  emit_to = 0;
  nline = 0;
  uint64_t t = r.rto_ns, rto = r.rto_ns;
  CHECK_EQ(net_rel_timers(&r, t, 0, emit, NULL), 0);
  CHECK_EQ(net_rel_timers(&r, t, 4, emit, NULL), 1);
  CHECK_EQ(nline, 1);
  CHECK_EQ(net_rel_sends(&r, 0), 2);
  CHECK_EQ(net_rel_sends(&r, 1), 1);
  CHECK_EQ(r.rto_ns, 2 * rto);
  CHECK_EQ(net_rel_timers(&r, t, 4, emit, NULL), 0); /* nothing due again yet */
  t += 2 * rto;
  CHECK_EQ(net_rel_timers(&r, t, 4, emit, NULL), 1); /* the oldest again, alone */
  CHECK_EQ(net_rel_sends(&r, 0), 3);
  CHECK_EQ(net_rel_sends(&r, 1), 1);
  CHECK_EQ(r.rto_ns, 4 * rto);
  /* Late acks: the peer had all ten. */
  CHECK_EQ(net_rel_on_ack(&r, 10, 0, t + 1000, emit, NULL), 0);
  CHECK_EQ(nline, 2);
  CHECK(net_rel_idle(&r));
  /* Lost: ten more, the oldest's ack alone says the rest went too. */
  t += rto;
  uint32_t n = 0;
  for (; net_rel_can_send(&r); n++) CHECK_EQ(net_rel_queue(&r, b, sizeof b, t), 0);
  CHECK(n >= 4);
  t += r.rto_ns;
  CHECK_EQ(net_rel_timers(&r, t, 4, emit, NULL), 1);
  uint32_t w = r.cwnd, again = n - 1 < w ? n - 1 : w;
  CHECK(again >= 1);
  CHECK_EQ(net_rel_on_ack(&r, 11, 0, t + 1000, emit, NULL), 0);
  CHECK_EQ((uint32_t)nline, 3 + again);
  for (uint32_t seq = 11; seq < 10 + n; seq++) CHECK_EQ(net_rel_sends(&r, seq), seq < 11 + again ? 2u : 1u);
  /* ...and an ack that moves by one with no timeout behind it sends nothing. */
  CHECK_EQ(net_rel_on_ack(&r, 12, 0, t + 2000, emit, NULL), 0);
  CHECK_EQ((uint32_t)nline, 3 + again);
  nline = 0;
  net_rel_fini(&r);
}

/* A DATA packet of one byte with the stream's next seq, queued at t. */
static void queue_one(struct net_rel *r, uint64_t t) {
  uint8_t b[NET_HDR_LEN + 1] = {0};
  struct net_hdr h = {.type = NET_DATA, .dst_ep = 1, .src_ep = 2, .seq = r->next_seq, .len = 1,
                      .flags = NET_F_FIRST | NET_F_LAST};
  net_put_hdr(b, &h);
  CHECK_EQ(net_rel_queue(r, b, sizeof b, t), 0);
}

static uint32_t line_seq(int i) {
  struct net_pkt p;
  CHECK_EQ(net_parse(line[i].b, line[i].len, &p), NET_OK);
  return p.h.seq;
}

/* The last packet of a flight, not acked two round trips and the peer's
 * ack delay after it went, goes again once before its resend wait (a tail
 * loss probe): the shortest round trip measured, or the smoothed one where
 * the caller is crowded; the packets before a seq the caller names go at
 * once. */
static void test_tail_probe(void) {
  struct net_rel r;
  struct net_rel_cfg c = cfg;
  c.rto_min_ns = 20000;
  c.rto_max_ns = 100000000;
  CHECK_EQ(net_rel_init(&r, &c, 5, 1), 0);
  emit_to = 0;
  nline = 0;
  uint64_t t = 1000000;
  queue_one(&r, t);
  CHECK_EQ(net_rel_timers(&r, t + 10 * c.rto_ns, UINT32_MAX, emit, NULL), 1); /* nothing measured: a resend */
  CHECK_EQ(counts.early_resends, 0);
  CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t + 10 * c.rto_ns, emit, NULL), 0);
  t += 10 * c.rto_ns;
  for (int i = 0; i < 40; i++) { /* round trips of 50 us and 2 ms by turns: a wait far above 2 x srtt */
    queue_one(&r, t);
    t += i % 2 ? 2000000 : 50000;
    CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t, emit, NULL), 0);
  }
  CHECK_EQ(r.rtt_min_us, 50);
  uint64_t pto = 2 * 50000 + c.ack_delay_ns, pto_crowded = 2 * r.srtt_ns + c.ack_delay_ns;
  CHECK(pto < pto_crowded && pto_crowded < r.rto_ns);
  uint64_t resent = counts.resent, early = counts.early_resends;
  nline = 0;
  for (int i = 0; i < 3; i++) queue_one(&r, t);
  CHECK_EQ(net_rel_timers(&r, t + pto - 1, UINT32_MAX, emit, NULL), 0);
  CHECK_EQ(net_rel_timers(&r, t + pto, UINT32_MAX, emit, NULL), 1);
  CHECK_EQ(nline, 1);
  CHECK_EQ(line_seq(0), r.next_seq - 1); /* the last one */
  CHECK_EQ(counts.early_resends, early + 1);
  CHECK_EQ(counts.resent, resent);
  CHECK_EQ(net_rel_sends(&r, r.next_seq - 1), 1); /* its first send's count and time stay */
  CHECK_EQ(net_rel_timers(&r, t + pto + 1000, UINT32_MAX, emit, NULL), 0); /* once a flight */
  /* At the resend wait the oldest goes, alone (the probe's wait ran from the first send). */
  CHECK_EQ(net_rel_timers(&r, t + r.rto_ns, UINT32_MAX, emit, NULL), 1);
  CHECK_EQ(line_seq(1), r.una);
  CHECK_EQ(counts.resent, resent + 1);
  /* Before a seq: not acked, not held by the peer (SACK), at most max. */
  nline = 0;
  uint32_t una = r.una;
  CHECK_EQ(net_rel_on_ack(&r, una, 1ull << 0, t + r.rto_ns, emit, NULL), 0); /* the peer holds una + 1 */
  nline = 0;
  CHECK_EQ(net_rel_resend_before(&r, una + 3, 8, emit, NULL), 2); /* una, una + 2 */
  CHECK_EQ(line_seq(0), una);
  CHECK_EQ(line_seq(1), una + 2);
  CHECK_EQ(net_rel_resend_before(&r, una + 3, 1, emit, NULL), 1);
  CHECK_EQ(net_rel_resend_before(&r, una, 8, emit, NULL), 0);
  CHECK_EQ(counts.early_resends, early + 4);
  /* Crowded: a peer's acks wait for its core; the smoothed round trip. */
  CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t + r.rto_ns, emit, NULL), 0);
  t += r.rto_ns;
  pto_crowded = 2 * r.srtt_ns + c.ack_delay_ns; /* the probe's first send timed a round trip (Karn) */
  CHECK(pto < pto_crowded && pto_crowded < r.rto_ns);
  int crowded = 1;
  c.crowded = &crowded;
  queue_one(&r, t);
  nline = 0;
  CHECK_EQ(net_rel_timers(&r, t + pto, UINT32_MAX, emit, NULL), 0);
  CHECK_EQ(net_rel_timers(&r, t + pto_crowded, UINT32_MAX, emit, NULL), 1);
  CHECK_EQ(counts.early_resends, early + 5);
  nline = 0;
  net_rel_fini(&r);
}

/* A stream of its own configuration (c: the caller's, outliving it), a
 * window of `window`, its packets to side 0 of an empty line. */
static void open_stream(struct net_rel *r, struct net_rel_cfg *c, uint32_t window) {
  *c = cfg;
  c->window = window;
  CHECK_EQ(net_rel_init(r, c, 10, 1), 0);
  emit_to = 0;
  nline = 0;
}

/* The congestion window: NET_REL_CWND_FIRST at first, grown by what is
 * acked; halved once for the holes of one flight, then grown by a packet
 * a window's worth of acks. */
static void test_cwnd(void) {
  struct net_rel r;
  struct net_rel_cfg c;
  open_stream(&r, &c, 256);
  uint64_t t = 1000000, cuts = counts.cwnd_cuts;
  for (int i = 0; i < NET_REL_CWND_FIRST; i++) queue_one(&r, t);
  CHECK(!net_rel_can_send(&r));
  CHECK_EQ(net_rel_on_ack(&r, r.una + 8, 0, t + 50000, emit, NULL), 0); /* 8 acked: 8 more may go */
  CHECK_EQ(r.cwnd, NET_REL_CWND_FIRST + 8);
  for (int i = 0; i < 16; i++) queue_one(&r, t);
  CHECK(!net_rel_can_send(&r));
  /* A hole at una (the peer holds una + 1): half of what is in flight. */
  uint32_t una = r.una, inflight = r.next_seq - r.una;
  CHECK_EQ(net_rel_on_ack(&r, una, 1ull << 0, t + 60000, emit, NULL), 0);
  CHECK_EQ(r.cwnd, inflight / 2);
  CHECK_EQ(counts.cwnd_cuts, cuts + 1);
  /* Another hole of the same flight: no second cut. */
  CHECK_EQ(net_rel_on_ack(&r, una, (1ull << 0) | (1ull << 2), t + 61000, emit, NULL), 0);
  CHECK_EQ(r.cwnd, inflight / 2);
  CHECK_EQ(counts.cwnd_cuts, cuts + 1);
  /* All acked: a packet more for each window's worth. */
  uint16_t w = r.cwnd;
  CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t + 70000, emit, NULL), 0);
  CHECK_EQ(r.cwnd, w + 1);
  for (int k = 0; k < 10; k++) {
    w = r.cwnd;
    while (net_rel_can_send(&r)) queue_one(&r, t);
    CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t + 80000, emit, NULL), 0);
    CHECK_EQ(r.cwnd, w + 1);
  }
  /* A hole in a later flight cuts again, never below NET_REL_CWND_MIN. */
  for (int k = 0; k < 12; k++) {
    queue_one(&r, t);
    queue_one(&r, t);
    CHECK_EQ(net_rel_on_ack(&r, r.una, 1ull << 0, t + 90000, emit, NULL), 0);
    CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t + 90000, emit, NULL), 0);
    CHECK(r.cwnd >= NET_REL_CWND_MIN);
  }
  CHECK_EQ(counts.cwnd_cuts, cuts + 13);
  nline = 0;
  net_rel_fini(&r);
}

/* A resend on the timer cuts the window too, once a flight; the cut is
 * undone when the peer says every resend behind it came twice (late
 * acks, not losses), and kept when some did not, or when a probe of ours
 * (sent twice on purpose) may be what came twice. */
static void test_cwnd_undo(void) {
  struct net_rel r;
  struct net_rel_cfg c;
  open_stream(&r, &c, 256);
  uint64_t t = 1000000, cuts = counts.cwnd_cuts, undone = counts.cwnd_undone;
  for (int i = 0; i < 16; i++) queue_one(&r, t);
  /* Nothing acked: the oldest goes again alone on the timer, one cut,
   * and again at the backed-off wait, within the same cut. */
  CHECK_EQ(net_rel_timers(&r, t + c.rto_ns, 64, emit, NULL), 1);
  CHECK_EQ(counts.cwnd_cuts, cuts + 1);
  CHECK_EQ(r.cwnd, 8);
  CHECK_EQ(r.ssthresh, 8);
  CHECK_EQ(net_rel_timers(&r, t + 3 * c.rto_ns, 64, emit, NULL), 1);
  CHECK_EQ(counts.cwnd_cuts, cuts + 1);
  /* The peer got one of them twice: not enough to undo. */
  net_rel_on_dups(&r, 1);
  CHECK_EQ(r.cwnd, 8);
  CHECK_EQ(counts.cwnd_undone, undone);
  /* ...then the other: the originals had all come, the cut is undone. */
  net_rel_on_dups(&r, 1);
  CHECK_EQ(r.cwnd, NET_REL_CWND_FIRST);
  CHECK_EQ(counts.cwnd_undone, undone + 1);
  net_rel_on_dups(&r, 15); /* nothing left to undo */
  CHECK_EQ(counts.cwnd_undone, undone + 1);
  CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t + 3 * c.rto_ns + 1000, emit, NULL), 0);

  /* Lost for real: the oldest's ack alone sends the other three, and the
   * cut stays while fewer came twice than went again. */
  nline = 0;
  uint16_t before = r.cwnd;
  for (int i = 0; i < 4; i++) queue_one(&r, t + 10000000);
  CHECK_EQ(net_rel_timers(&r, t + 10000000 + 4 * c.rto_ns, 64, emit, NULL), 1);
  CHECK_EQ(counts.cwnd_cuts, cuts + 2);
  CHECK(r.cwnd < before);
  uint16_t cut = r.cwnd;
  CHECK_EQ(net_rel_on_ack(&r, r.una + 1, 0, t + 10000000 + 4 * c.rto_ns + 1000, emit, NULL), 0);
  int again = cut < 3 ? cut : 3; /* what the cut window allows */
  CHECK_EQ(nline, 1 + again);
  CHECK_EQ(counts.cwnd_cuts, cuts + 2);
  net_rel_on_dups(&r, (unsigned)again);
  CHECK_EQ(r.cwnd, cut);
  CHECK_EQ(counts.cwnd_undone, undone + 1);
  CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, t + 10000000 + 5 * c.rto_ns, emit, NULL), 0);
  CHECK(r.cwnd <= cut + 1);

  /* Sent early after a cut (a probe, or what a peer's pull waits for):
   * the peer gets those twice too, unless they were lost. */
  nline = 0;
  net_rel_fini(&r);
  open_stream(&r, &c, 256);
  for (int i = 0; i < 4; i++) queue_one(&r, t + 20000000);
  /* The peer holds the fourth: the three before go again, one cut. */
  CHECK_EQ(net_rel_on_ack(&r, r.una, 1ull << 2, t + 20000000 + 1000, emit, NULL), 0);
  CHECK_EQ(counts.cwnd_cuts, cuts + 3);
  cut = r.cwnd;
  CHECK_EQ(net_rel_resend_before(&r, r.next_seq, 8, emit, NULL), 3);
  net_rel_on_dups(&r, 5); /* one of the six copies did not come twice: a loss */
  CHECK_EQ(r.cwnd, cut);
  net_rel_on_dups(&r, 1);
  CHECK_EQ(r.cwnd, NET_REL_CWND_FIRST);
  CHECK_EQ(counts.cwnd_undone, undone + 2);
  nline = 0;
  net_rel_fini(&r);
}

/* Holes resent on a gap and lost again: the timer sends the oldest alone,
 * and the ack of it that still names a packet held beyond sends the other
 * holes again at once (they are a resend wait old), not one a timeout;
 * no tail probe rides on the lone resend. */
static void test_sack_after_timeout(void) {
  struct net_rel r;
  struct net_rel_cfg c;
  open_stream(&r, &c, 256);
  uint64_t t = 1000000;
  for (int i = 0; i < 6; i++) queue_one(&r, t);
  uint32_t una = r.una;
  /* The peer holds the sixth: the five before go again on the gap. */
  CHECK_EQ(net_rel_on_ack(&r, una, 1ull << 4, t + 1000, emit, NULL), 0);
  CHECK_EQ(nline, 5);
  /* ...and are lost again. The timer: the oldest alone. */
  nline = 0;
  CHECK_EQ(net_rel_timers(&r, t + 1000 + c.rto_ns, UINT32_MAX, emit, NULL), 1);
  CHECK_EQ(line_seq(0), una);
  CHECK_EQ(net_rel_timers(&r, t + 1000 + c.rto_ns + 1, UINT32_MAX, emit, NULL), 0); /* no probe on top */
  /* Its ack, the sixth still held: the four holes between go at once. */
  CHECK_EQ(net_rel_on_ack(&r, una + 1, 1ull << 3, t + 2000 + c.rto_ns, emit, NULL), 0);
  CHECK_EQ(nline, 1 + 4);
  for (int i = 1; i < nline; i++) CHECK_EQ(line_seq(i), una + (uint32_t)i);
  for (uint32_t k = 1; k < 5; k++) CHECK_EQ(net_rel_sends(&r, una + k), 3);
  CHECK_EQ(net_rel_sends(&r, una + 5), 1);
  nline = 0;
  net_rel_fini(&r);
}

/* After an undo, a hole in what is still in flight is news: it cuts
 * again (its recovery point moved to what is acked). A window of 1 stays
 * 1 whatever cuts it. */
static void test_cwnd_after_undo(void) {
  struct net_rel r;
  struct net_rel_cfg c;
  open_stream(&r, &c, 256);
  uint64_t t = 1000000, cuts = counts.cwnd_cuts;
  for (int i = 0; i < 16; i++) queue_one(&r, t);
  CHECK_EQ(net_rel_timers(&r, t + c.rto_ns, 4, emit, NULL), 1); /* the oldest of the 16 due: one cut */
  CHECK_EQ(counts.cwnd_cuts, cuts + 1);
  net_rel_on_dups(&r, 1);
  CHECK_EQ(r.cwnd, NET_REL_CWND_FIRST);
  CHECK_EQ(r.ssthresh, 0); /* slow start again: it was never cut for a loss */
  CHECK_EQ(net_rel_timers(&r, t + 3 * c.rto_ns, 4, emit, NULL), 1); /* due again: a cut of its own */
  CHECK_EQ(counts.cwnd_cuts, cuts + 2);
  CHECK(r.cwnd < NET_REL_CWND_FIRST);
  nline = 0;
  net_rel_fini(&r);

  open_stream(&r, &c, 1);
  queue_one(&r, t);
  CHECK(!net_rel_can_send(&r));
  CHECK_EQ(net_rel_timers(&r, t + c.rto_ns, 4, emit, NULL), 1);
  CHECK_EQ(r.cwnd, 1);
  CHECK(!net_rel_can_send(&r));
  nline = 0;
  net_rel_fini(&r);
}

/* The receiver counts the duplicates that come until its next ACK (at
 * most NET_REL_DUPS_MAX), and acks at once while any is unsaid: an ack
 * that rides on data cannot say them. */
static void test_dups_said(void) {
  struct net_rel r;
  CHECK_EQ(net_rel_init(&r, &cfg, 10, 100), 0);
  uint8_t b[NET_HDR_LEN + 1] = {0};
  CHECK_EQ(net_rel_recv(&r, 100, b, sizeof b, 0), NET_REL_NEW);
  CHECK_EQ(net_rel_dups(&r), 0);
  CHECK_EQ(net_rel_recv(&r, 100, b, sizeof b, 0), NET_REL_DUP);
  CHECK_EQ(net_rel_dups(&r), 1);
  CHECK(net_rel_ack_due(&r, 0));
  net_rel_acked_on_data(&r);
  CHECK(net_rel_ack_due(&r, 0)); /* still unsaid */
  CHECK_EQ(net_rel_dups(&r), 1);
  CHECK_EQ(net_rel_recv(&r, 102, b, sizeof b, 0), NET_REL_EARLY);
  CHECK_EQ(net_rel_recv(&r, 102, b, sizeof b, 0), NET_REL_DUP); /* held early, came again */
  CHECK_EQ(net_rel_dups(&r), 2);
  for (int i = 0; i < NET_REL_DUPS_MAX + 40; i++) net_rel_recv(&r, 99, b, sizeof b, 0);
  CHECK_EQ(net_rel_dups(&r), NET_REL_DUPS_MAX);
  net_rel_acked(&r);
  CHECK_EQ(net_rel_dups(&r), 0);
  net_rel_fini(&r);
}

/* ---- the format -------------------------------------------------------- */

static void test_wire(void) {
  uint8_t b[NET_HDR_LEN + 128];
  struct net_pkt p;
  struct net_hdr h = {.type = NET_CONNECT, .dst_ep = 3, .src_ep = 65535, .dst_session = 0xdeadbeef,
                      .src_session = 7, .seq = 0x01020304, .ack = 0xfffffffe, .len = 36};
  net_put_hdr(b, &h);
  net_put_connect(b + NET_HDR_LEN, 0x0000a1b2c3d4e5f6ull, 0x0000020000000001ull, 0x1234, 9, 77, 0x0a630001, 18009, 9000);
  CHECK_EQ(b[0], 0x46);
  CHECK_EQ(b[1], 0x58);
  CHECK_EQ(b[16], 0x01); /* seq, big-endian */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 36, &p), NET_OK);
  CHECK_EQ(p.h.type, NET_CONNECT);
  CHECK_EQ(p.h.dst_ep, 3);
  CHECK_EQ(p.h.src_ep, 65535);
  CHECK_EQ(p.h.dst_session, 0xdeadbeef);
  CHECK_EQ(p.h.seq, 0x01020304);
  CHECK_EQ(p.h.ack, 0xfffffffe);
  CHECK_EQ(p.u.connect.nic, 0x0000a1b2c3d4e5f6ull);
  CHECK_EQ(p.u.connect.dst_nic, 0x0000020000000001ull);
  CHECK_EQ(p.u.connect.key, 0x1234);
  CHECK_EQ(p.u.connect.conn_seq, 9);
  CHECK_EQ(p.u.connect.start_seq, 77);
  CHECK_EQ(p.u.connect.bulk_ip, 0x0a630001);
  CHECK_EQ(p.u.connect.bulk_port, 18009);
  CHECK_EQ(p.u.connect.mtu, 9000);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 40, &p), NET_OK); /* padding after the body is ignored */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 27, &p), NET_BAD_LENGTH);
  CHECK_EQ(net_parse(b, NET_HDR_LEN - 1, &p), NET_BAD_SHORT);
  CHECK_EQ(net_parse(NULL, 100, &p), NET_BAD_SHORT);
  net_patch_ack(b, 5);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 36, &p), NET_OK);
  CHECK_EQ(p.h.ack, 5);

  h = (struct net_hdr){.type = NET_CONNECT_REPLY, .len = 20};
  net_put_hdr(b, &h);
  net_put_reply(b + NET_HDR_LEN, 11, 9, 1234, 0x0a630002, 18010, 1500);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 20, &p), NET_OK);
  CHECK_EQ(p.u.reply.status, 11);
  CHECK_EQ(p.u.reply.start_seq, 1234);
  CHECK_EQ(p.u.reply.bulk_ip, 0x0a630002);
  CHECK_EQ(p.u.reply.bulk_port, 18010);
  CHECK_EQ(p.u.reply.mtu, 1500);
  h = (struct net_hdr){.type = NET_ACK, .len = 8};
  net_put_hdr(b, &h);
  net_put_ack(b + NET_HDR_LEN, 0x8000000000000001ull);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_OK);
  CHECK_EQ(p.u.ack.sack, (long long)0x8000000000000001ull);
  h = (struct net_hdr){.type = NET_NACK, .len = 4};
  net_put_hdr(b, &h);
  net_put_nack(b + NET_HDR_LEN, NET_NACK_BAD_KEY);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 4, &p), NET_OK);
  CHECK_EQ(p.u.nack.reason, NET_NACK_BAD_KEY);
  h = (struct net_hdr){.type = NET_PULL, .len = 28};
  net_put_hdr(b, &h);
  net_put_pull(b + NET_HDR_LEN, 0x0102030405060708ull, 0x1112131415161718ull, 1432, 70000, 44);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 28, &p), NET_OK);
  CHECK_EQ(p.u.pull.sreq, (long long)0x0102030405060708ull);
  CHECK_EQ(p.u.pull.rreq, (long long)0x1112131415161718ull);
  CHECK_EQ(p.u.pull.frame, 1432);
  CHECK_EQ(p.u.pull.first, 70000);
  CHECK_EQ(p.u.pull.count, 44);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 27, &p), NET_BAD_LENGTH);
  h.len = 29; /* a PULL is 28 bytes */
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 29, &p), NET_BAD_LENGTH);
  h.len = 28;
  h.flags = NET_F_WIRE; /* answer on the wire: its one flag */
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 28, &p), NET_OK);
  CHECK_EQ(p.h.flags, NET_F_WIRE);
  h.flags = NET_F_WIRE | NET_F_TRAIN;
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 28, &p), NET_BAD_FLAGS);
  h = (struct net_hdr){.type = NET_ACK, .len = 8, .flags = NET_F_WIRE}; /* not another type's */
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_FLAGS);
  h = (struct net_hdr){.type = NET_PULL_REPLY, .len = NET_PULL_REPLY_HDR + 3};
  net_put_hdr(b, &h);
  net_put_pull_reply(b + NET_HDR_LEN, 0x2122232425262728ull, 7);
  memcpy(b + NET_HDR_LEN + NET_PULL_REPLY_HDR, "abc", 3);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_PULL_REPLY_HDR + 3, &p), NET_OK);
  CHECK_EQ(p.u.reply_data.rreq, (long long)0x2122232425262728ull);
  CHECK_EQ(p.u.reply_data.index, 7);
  CHECK(memcmp(p.body + NET_PULL_REPLY_HDR, "abc", 3) == 0);
  h.len = NET_PULL_REPLY_HDR; /* no bytes: refused */
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_PULL_REPLY_HDR, &p), NET_BAD_LENGTH);
  h.len = NET_PULL_REPLY_HDR + 1;
  h.flags = NET_F_FIRST; /* no flags but the core wait */
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_PULL_REPLY_HDR + 1, &p), NET_BAD_FLAGS);
  h.flags = net_wait_put(3000000) | NET_F_WIRE;
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_PULL_REPLY_HDR + 1, &p), NET_BAD_FLAGS);
  h.flags = NET_REPLY_WAIT_MASK;
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_PULL_REPLY_HDR + 1, &p), NET_OK);
  CHECK_EQ(net_wait_get(p.h.flags), (255ull << 15) * 1000); /* the longest: 8.4 s */
  h.flags = net_wait_put(3000000); /* 3 ms */
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_PULL_REPLY_HDR + 1, &p), NET_OK);
  CHECK_EQ(net_wait_get(p.h.flags), 2992000); /* 187 << 4 us: rounded down, within 1/128 */
  CHECK(strcmp(net_type_str(NET_PULL_REPLY), "PULL_REPLY") == 0);
  /* Discovery: a query of 8 bytes; a reply with a printable name. */
  h = (struct net_hdr){.type = NET_HOST_QUERY, .dst_ep = NET_EP_ANY, .src_ep = NET_EP_ANY, .len = 8};
  net_put_hdr(b, &h);
  net_put_query(b + NET_HDR_LEN, 0x3132333435363738ull);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_OK);
  CHECK_EQ(p.u.query.nonce, (long long)0x3132333435363738ull);
  CHECK_EQ(p.h.dst_ep, NET_EP_ANY);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 7, &p), NET_BAD_LENGTH);
  h = (struct net_hdr){.type = NET_HOST_REPLY, .len = NET_HOST_REPLY_HDR + 7};
  net_put_hdr(b, &h);
  CHECK_EQ(net_put_host(b + NET_HDR_LEN, 0x41ull, 0x020000000001ull, "node1:0", 7), NET_HOST_REPLY_HDR + 7);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_HOST_REPLY_HDR + 7, &p), NET_OK);
  CHECK_EQ(p.u.host.nonce, 0x41);
  CHECK_EQ(p.u.host.nic, (long long)0x020000000001ull);
  CHECK_EQ(p.u.host.name_len, 7);
  CHECK(memcmp(p.body + NET_HOST_REPLY_HDR, "node1:0", 7) == 0);
  b[NET_HDR_LEN + NET_HOST_REPLY_HDR + 2] = ' '; /* a space: not a name */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_HOST_REPLY_HDR + 7, &p), NET_BAD_LENGTH);
  b[NET_HDR_LEN + NET_HOST_REPLY_HDR + 2] = 0; /* a NUL neither */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_HOST_REPLY_HDR + 7, &p), NET_BAD_LENGTH);
  h.len = NET_HOST_REPLY_HDR; /* no name */
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + NET_HOST_REPLY_HDR, &p), NET_BAD_LENGTH);
  h.len = NET_HOST_REPLY_HDR + NET_NAME_MAX + 1; /* a name too long */
  net_put_hdr(b, &h);
  memset(b + NET_HDR_LEN + NET_HOST_REPLY_HDR, 'x', NET_NAME_MAX + 1);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + h.len, &p), NET_BAD_LENGTH);
  CHECK(strcmp(net_type_str(NET_HOST_REPLY), "HOST_REPLY") == 0);
  h.len = 5; /* a NACK is 4 bytes */
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 5, &p), NET_BAD_LENGTH);

  h = (struct net_hdr){.type = NET_DATA, .len = 0, .flags = NET_F_FIRST};
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN, &p), NET_BAD_LENGTH); /* empty DATA with a flag */
  h.flags = 0;
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN, &p), NET_OK); /* a probe */
  h.flags = NET_F_FIRST;
  h.len = 10;
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 10, &p), NET_OK);
  CHECK(p.body == b + NET_HDR_LEN);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 9, &p), NET_BAD_LENGTH); /* len beyond the bytes */
  h.flags = 0x10;
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 10, &p), NET_BAD_FLAGS);
  h = (struct net_hdr){.type = NET_ACK, .len = 8, .flags = 1};
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_FLAGS);
  /* An ACK's only flags: the duplicates it counts. */
  h = (struct net_hdr){.type = NET_ACK, .len = 8, .flags = NET_ACK_DUPS_MASK};
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_OK);
  CHECK_EQ(p.u.ack.dups, 4095);
  h.flags = 3 << NET_ACK_DUPS_SHIFT;
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_OK);
  CHECK_EQ(p.u.ack.dups, 3);
  h.flags = 0x0001 | 3 << NET_ACK_DUPS_SHIFT;
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_FLAGS);
  h = (struct net_hdr){.type = NET_NACK, .len = 4, .flags = 1 << NET_ACK_DUPS_SHIFT};
  net_put_hdr(b, &h);
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 4, &p), NET_BAD_FLAGS);

  h = (struct net_hdr){.type = NET_ACK, .len = 8};
  net_put_hdr(b, &h);
  b[0] ^= 1;
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_MAGIC);
  b[0] ^= 1;
  b[2] = NET_VERSION + 1;
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_VERSION);
  b[2] = 1; /* before NET_F_TRAIN: refused, not guessed at */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_VERSION);
  b[2] = 2; /* before NET_F_WIRE: refused */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_VERSION);
  b[2] = 3; /* before NET_ACK_DUPS: refused */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_VERSION);
  b[2] = 4; /* before a PULL_REPLY's hold: refused */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_VERSION);
  /* A PULL_REPLY's hold: ns + 1, 0 not known, saturated not believed. */
  uint64_t held = 7;
  CHECK_EQ(net_hold_put(0), 1);
  CHECK(net_hold_get(net_hold_put(123456), &held) && held == 123456);
  CHECK(!net_hold_get(0, &held) && held == 123456);
  CHECK_EQ(net_hold_put(5000000000ull), UINT32_MAX);
  CHECK(!net_hold_get(net_hold_put(5000000000ull), &held));
  CHECK(net_hold_get(UINT32_MAX - 1, &held) && held == UINT32_MAX - 2);
  b[2] = 6; /* before a PULL_REPLY's core wait: refused */
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_VERSION);
  /* Its core wait: us, to within 1/128 below, never above; saturated at 8.4 s. */
  CHECK_EQ(net_wait_get(net_wait_put(0)), 0);
  CHECK_EQ(net_wait_get(net_wait_put(999)), 0);
  CHECK_EQ(net_wait_get(net_wait_put(255999)), 255000);
  CHECK_EQ(net_wait_get(net_wait_put(100000000000ull)), (255ull << 15) * 1000);
  for (uint64_t ns = 1000; ns < 9000000000ull; ns = ns * 3 / 2 + 777) {
    uint64_t got = net_wait_get(net_wait_put(ns));
    CHECK(got <= ns && (ns > (255ull << 15) * 1000 || got + ns / 128 + 1000 >= ns));
    CHECK_EQ(net_wait_put(ns) & ~NET_REPLY_WAIT_MASK, 0);
  }
  b[2] = NET_VERSION;
  b[3] = 0;
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_TYPE);
  b[3] = NET_TYPE_MAX;
  CHECK_EQ(net_parse(b, NET_HDR_LEN + 8, &p), NET_BAD_TYPE);
  CHECK(strcmp(net_bad_str(NET_BAD_FLAGS), "bad flags") == 0);
  CHECK(strcmp(net_bad_str(99), "?") == 0);
  CHECK(strcmp(net_type_str(NET_DATA), "DATA") == 0);
  CHECK(strcmp(net_type_str(200), "?") == 0);
}

/* A record header through the DATA body's codec, and its refusals. */
static void test_record(void) {
  uint8_t b[NET_RECORD_HDR + 8];
  struct proto_hdr h = {.type = PROTO_EAGER, .flags = 0x60, .nseg = 0x0102, .len = 8, .match = 0x1122334455667788ull,
                        .msg_len = 8, .sreq = 0xa1a2a3a4a5a6a7a8ull, .rreq = 42},
                   g;
  net_put_record(b, &h);
  CHECK_EQ(b[2], 0x01); /* nseg, big-endian */
  CHECK_EQ(b[8], 0x11); /* match */
  CHECK_EQ(net_get_record(b, sizeof b, &g), 0);
  CHECK(memcmp(&g, &h, sizeof h) == 0);
  CHECK_EQ(net_get_record(b, sizeof b - 1, &g), -1); /* payload shorter than its len */
  CHECK_EQ(net_get_record(b, NET_RECORD_HDR - 1, &g), -1);
}

/* The UDP wire's broadcast (a CONNECT to a board whose address is not
 * known): the one the interface was given, else derived from the mask, as
 * `ip addr add 10.97.0.2/24` gives none and getifaddrs then hands back the
 * address itself: the CONNECT went to its own sender. */
static void test_bcast(void) {
  uint32_t ip = htonl(0x0a610002), m24 = htonl(0xffffff00);
  CHECK_EQ(net_iface_bcast(ip, m24, htonl(0x0a6100ff)), htonl(0x0a6100ff));
  CHECK_EQ(net_iface_bcast(ip, m24, ip), htonl(0x0a6100ff));
  CHECK_EQ(net_iface_bcast(ip, m24, 0), htonl(0x0a6100ff));
  CHECK_EQ(net_iface_bcast(ip, htonl(0xfffe0000), 0), htonl(0x0a61ffff));
  CHECK_EQ(net_iface_bcast(ip, htonl(0xfffffffe), 0), 0); /* /31 */
  CHECK_EQ(net_iface_bcast(ip, htonl(0xffffffff), ip), 0); /* /32 */
  CHECK_EQ(net_iface_bcast(0, m24, 0), 0);
}

/* The pool: a window of packets sent, acked and sent again takes no new
 * buffer from the allocator; beyond `keep` free ones they go back to it;
 * none is left out once the streams are gone. */
static void test_pool(void) {
  struct net_rel r;
  uint8_t b[NET_HDR_LEN + 4] = {0};
  CHECK_EQ(pool.out, 0);
  CHECK_EQ(net_rel_init(&r, &cfg, 0, 0), 0);
  for (uint32_t i = 0; i < cfg.window; i++) CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
  uint64_t allocs = pool.allocs;
  CHECK_EQ(pool.out, cfg.window);
  emit_to = 0;
  CHECK_EQ(net_rel_on_ack(&r, cfg.window, 0, 0, emit, NULL), 0);
  CHECK_EQ(pool.out, 0);
  CHECK_EQ(pool.nfree, pool.keep);
  for (int round = 0; round < 3; round++) {
    for (uint32_t i = 0; i < cfg.window; i++) CHECK_EQ(net_rel_queue(&r, b, sizeof b, 0), 0);
    CHECK_EQ(net_rel_on_ack(&r, r.next_seq, 0, 0, emit, NULL), 0);
  }
  CHECK_EQ(pool.allocs, allocs);
  net_rel_fini(&r);
  /* More out than it keeps: the rest go back to the allocator. */
  struct net_pool small;
  net_pool_init(&small, 64, 2);
  uint8_t *x[4];
  for (int i = 0; i < 4; i++) CHECK((x[i] = net_pool_get(&small)) != NULL);
  CHECK_EQ(small.allocs, 4);
  for (int i = 0; i < 4; i++) net_pool_put(&small, x[i]);
  CHECK_EQ(small.nfree, 2);
  CHECK_EQ(small.out, 0);
  CHECK(net_pool_get(&small) == x[1]); /* the last one kept, first */
  net_pool_put(&small, x[1]);
  net_pool_fini(&small);
  CHECK_EQ(small.nfree, 0);
}

int main(void) {
  test_pool();
  test_bcast();
  test_wire();
  test_record();
  test_edges();
  test_rings();
  test_measured_rto();
  test_close_helpers();
  test_resend_bound();
  test_sack_after_timeout();
  test_tail_probe();
  test_cwnd();
  test_cwnd_undo();
  test_cwnd_after_undo();
  test_dups_said();
  test_clean();
  for (uint64_t seed = 1; seed <= 5; seed++) test_lossy(seed * 0x9E3779B97F4A7C15ull);
  test_dead();
  CHECK_EQ(pool.out, 0); /* every stream gave back what it kept */
  net_pool_fini(&pool);
  CHECK_DONE("test_net_rel");
  return 0;
}
