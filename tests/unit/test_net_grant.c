/* SPDX-License-Identifier: MIT */
/*
 * A receiver's grants (src/net/grant.c) on a made-up clock: slow start,
 * one cut per loss episode, the floor at the measured bandwidth-delay
 * product, a silence, the binary search back; then the budget driving a
 * simulated switch port (1 Gb/s, 64 KB of buffer, tail drop) fed by
 * senders that answer runs of frames as one burst each, as the pull
 * protocol asks them (shortest remaining first, a quarter of the budget a
 * run, a gap in the answers a loss): the port stays busy and drops few,
 * and with the network's wait read (net_grant_delay) its queue stays
 * short of the buffer, senders that wait for cores or not; and which
 * losses of one partner read as a tail drop.
 * The wire and clock are simulated because this is the algorithm alone;
 * bench/incast.py and tests/system/test_incast.py run it on a real port.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "net/grant.h"

#define US 1000ull
#define UNIT 1432ull

static void basics(void) {
  struct net_grant g;
  net_grant_init(&g, 4u << 20, UNIT, 65507);
  CHECK_EQ(g.budget, 65507);
  CHECK_EQ(net_grant_room(&g), 65507);
  CHECK_EQ(net_grant_floor(&g), 65507 / 2);
  /* Slow start: what comes is added. */
  uint64_t t = 1000 * US;
  net_grant_asked(&g, 65507, t);
  CHECK_EQ(net_grant_room(&g), 0);
  net_grant_rtt(&g, 100 * US, t + 100 * US);
  net_grant_came(&g, 65507, t + 1200 * US);
  CHECK_EQ(g.inflight, 0);
  CHECK_EQ(g.budget, 2 * 65507);
  /* The rate of that sample (a millisecond or longer): 65507 B in 1.2 ms,
   * times the shortest wait for a first frame. */
  CHECK_EQ(net_grant_bdp(&g), 5458);
  /* A loss halves it; the loss of what was asked before that cut does not
   * (the same episode); of what was asked after, it does. */
  t += 2000 * US;
  CHECK_EQ(net_grant_lost(&g, t - 10 * US, t), 1);
  CHECK_EQ(g.budget, 65507);
  CHECK_EQ(net_grant_lost(&g, t - 5 * US, t + 50 * US), 0);
  CHECK_EQ(g.budget, 65507);
  CHECK_EQ(g.cuts, 1);
  /* Past slow start: one step a budget's worth, half the way back to where
   * it lost, at most an eighth of itself. */
  net_grant_asked(&g, 65507, t + 60 * US);
  net_grant_came(&g, 65507, t + 160 * US);
  CHECK_EQ(g.budget, 65507 + 65507 / 8);
  /* Never below the floor. */
  for (int i = 0; i < 20; i++) {
    uint64_t at = t + (uint64_t)(i + 1) * 10000 * US;
    CHECK_EQ(net_grant_lost(&g, at - 1, at), 1);
  }
  CHECK_EQ(g.budget, net_grant_floor(&g));
  /* A silence: a loss first, the floor the second time. */
  net_grant_init(&g, 4u << 20, UNIT, 65507);
  g.budget = 1 << 20;
  CHECK_EQ(net_grant_silence(&g, 0, t - 1, t), 1);
  CHECK_EQ(g.budget, 1 << 19);
  CHECK_EQ(net_grant_silence(&g, 1, t - 1, t + 1), 2);
  CHECK_EQ(g.budget, net_grant_floor(&g));
  CHECK_EQ(g.resets, 1);
  /* Back by a binary search toward where it lost, then probing past it. */
  uint64_t lost_at = g.lost_at, prev = g.budget, steps = 0;
  g.thresh = g.budget; /* past slow start */
  while (g.budget < lost_at && steps < 100) {
    net_grant_asked(&g, g.budget, t);
    net_grant_came(&g, g.budget, t + 10 * US);
    CHECK(g.budget > prev && g.budget - prev <= prev / 8 + UNIT);
    prev = g.budget;
    steps++;
  }
  CHECK(steps < 100);
  /* Bytes of a pull that ended leave; the cap holds. */
  net_grant_asked(&g, 5000, t);
  net_grant_forget(&g, 9000);
  CHECK_EQ(g.inflight, 0);
  net_grant_init(&g, 100000, UNIT, 65507);
  for (int i = 0; i < 10; i++) {
    net_grant_asked(&g, g.budget, t);
    net_grant_came(&g, g.budget, t + 10 * US);
  }
  CHECK_EQ(g.budget, 100000);
}

/* A rate sample of `bytes` over 1.2 ms ending at *t (and *t moved on). */
static void sample_rate(struct net_grant *g, uint64_t bytes, uint64_t *t) {
  net_grant_asked(g, bytes, *t);
  net_grant_came(g, bytes, *t + 1200 * US);
  *t += 1200 * US;
}

/* n samples of the network's wait `ns`, `step` apart from *t (moved on):
 * the cuts they made. */
static int feed(struct net_grant *g, uint64_t ns, int n, uint64_t step, uint64_t *t) {
  int cuts = 0;
  for (int i = 0; i < n; i++, *t += step) cuts += net_grant_delay(g, ns, *t);
  return cuts;
}

/* The queue's delay (net_grant_delay): no cut before a rate is measured,
 * nor without a loss read as a queue's within NET_GRANT_LOSSY_NS (a
 * silence is none), nor while the smoothed delay is at the target or
 * under it; past it a cut by the delay's share beyond the target, at most
 * half, once a round trip, never below the floor; one sample far beyond
 * moves the smoothed delay an eighth of the way; and such a cut is no
 * loss's episode. */
static void delays(void) {
  struct net_grant g;
  uint64_t t = 1000 * US;
  net_grant_init(&g, 4u << 20, UNIT, 65507);
  CHECK_EQ(net_grant_lost(&g, t - 1, t), 1);
  CHECK_EQ(net_grant_delay(&g, 5000 * US, t + 10 * US), 0); /* no rate yet: no target */
  CHECK_EQ(net_grant_delay_target(&g), 0);

  net_grant_init(&g, 4u << 20, UNIT, 65507);
  net_grant_rtt(&g, 100 * US, t);
  net_grant_away(&g, 100000 * US, t); /* a sender off its core 100 ms: the floor is half the first budget */
  sample_rate(&g, 65507, &t); /* 54.6 MB/s */
  for (int i = 0; i < 6; i++) {
    net_grant_asked(&g, g.budget, t);
    net_grant_came(&g, g.budget, t + 10 * US);
  }
  uint64_t target = net_grant_delay_target(&g), path = 50 * US, b0 = g.budget, step = 10 * US;
  CHECK(target > 500 * US && target < 700 * US); /* the floor's 32 KiB at 54.6 MB/s */
  CHECK(b0 >= 64 * net_grant_floor(&g));
  CHECK_EQ(net_grant_delay(&g, path, t), 0); /* the path */
  CHECK_EQ(feed(&g, path + 3 * target, 40, step, &t), 0); /* no loss yet */
  CHECK_EQ(g.budget, b0);
  CHECK_EQ(g.qdelay_ns, 3 * target);
  CHECK(g.qsmooth_ns > 2 * target);
  CHECK_EQ(net_grant_silence(&g, 0, t, t), 1); /* halved, as for a loss, but no queue's */
  b0 = g.budget;
  CHECK_EQ(feed(&g, path + 3 * target, 40, step, &t), 0);
  CHECK_EQ(g.budget, b0);

  CHECK_EQ(net_grant_lost(&g, t - 1, t), 1); /* a queue's loss: the delay counts now */
  uint64_t b1 = g.budget, lost = t;
  CHECK_EQ(net_grant_delay(&g, path + 3 * target, t + g.srtt_ns / 2), 0); /* within a round trip of the cut */
  t += g.srtt_ns;
  CHECK_EQ(net_grant_delay(&g, path + 3 * target, t), 1); /* 2/3 beyond: half at most */
  CHECK_EQ(g.budget, b1 / 2);
  CHECK_EQ(g.delay_cuts, 1);
  CHECK_EQ(net_grant_delay(&g, path + 3 * target, t + g.srtt_ns / 2), 0); /* once a round trip */
  /* The queue drains: the smoothed delay comes down (within the round
   * trip, no cut), and under the target nothing is cut. */
  CHECK_EQ(feed(&g, path, 40, US, &t), 0);
  CHECK(g.qsmooth_ns <= target);
  uint64_t b2 = g.budget;
  CHECK_EQ(feed(&g, path + target / 2, 20, g.srtt_ns, &t), 0);
  CHECK_EQ(g.budget, b2);
  /* One frame far beyond: an eighth of it, not a cut. */
  CHECK_EQ(net_grant_delay(&g, path + 4 * target, t), 0);
  /* Just beyond the target: once the smoothed delay passes it, a small
   * cut, its share beyond the target. */
  int cut = 0;
  for (int i = 0; i < 40 && !cut; i++, t += g.srtt_ns) cut = net_grant_delay(&g, path + 5 * target / 4, t);
  CHECK(cut);
  CHECK(g.budget < b2 && g.budget >= b2 - b2 / 5);
  /* A loss of what was asked after the loss's cut and before the delay's:
   * a new episode, the budget the delay cut began from halved, not the
   * one it left. */
  b2 = g.lost_at; /* where the delay cut began */
  CHECK_EQ(net_grant_lost(&g, lost + 1, t), 1);
  CHECK_EQ(g.budget, b2 / 2 > net_grant_floor(&g) ? b2 / 2 : net_grant_floor(&g));
  CHECK_EQ(net_grant_lost(&g, t - 1, t + 1), 0); /* of its episode */
  t += 2;
  lost = t - 1;
  /* Never below the floor. */
  for (int i = 0; i < 40; i++) {
    t += g.srtt_ns;
    net_grant_delay(&g, path + 8 * target, t);
    CHECK(g.budget >= net_grant_floor(&g));
  }
  CHECK_EQ(g.budget, net_grant_floor(&g));
  CHECK_EQ(net_grant_delay(&g, path + 8 * target, t + g.srtt_ns), 0);

  /* Past NET_GRANT_LOSSY_NS with no loss: the delay is the hosts' again. */
  t = lost + NET_GRANT_LOSSY_NS + 10 * US;
  sample_rate(&g, 65507, &t);
  for (int i = 0; i < 4; i++) {
    net_grant_asked(&g, g.budget, t);
    net_grant_came(&g, g.budget, t + 10 * US);
  }
  b0 = g.budget;
  CHECK(net_grant_delay_target(&g) > 0);
  CHECK(b0 > net_grant_floor(&g));
  CHECK_EQ(net_grant_delay(&g, path, t), 0);
  CHECK_EQ(feed(&g, path + 8 * target, 40, g.srtt_ns, &t), 0);
  CHECK_EQ(g.budget, b0);
}

/* ---- a port ---------------------------------------------------------- */

#define PORT_NS_PER_FRAME 11456ull /* (1432 + 60 B of headers) at 1 Gb/s: 125 B/us */
#define PORT_FRAMES 43             /* 64 KB of such frames */
#define SENDER_NS (20 * US)        /* a PULL to a sender and its answer leaving it */
#define LINE_NS (5 * US)           /* port to receiver */
#define MAXQ 4096

struct frame {
  uint32_t run, stamp; /* the run it answers, and which sending of it */
};
struct run {
  uint32_t n, came;
  uint64_t sent_at; /* when it enters the port */
  int pending;      /* not yet in the port */
  int again;
  uint32_t stamp; /* its last sending, in the order runs enter the port */
};

static struct run runs[200000];
static uint32_t nruns;
static struct frame q[MAXQ];
static uint32_t qh, qn;
static uint64_t dropped, delivered, maxq, maxq_late, dropped_late, bdp_seen;
/* From when the port's queue is measured again: past slow start's
 * overshoot, before a rate is measured (net_grant_delay_target). */
#define LATE_NS (20000 * US)
static uint64_t clock_now;
static uint32_t stamps;

static void to_port(uint32_t r) {
  runs[r].stamp = ++stamps;
  for (uint32_t i = 0; i < runs[r].n; i++) {
    if (qn >= PORT_FRAMES) {
      dropped++;
      dropped_late += clock_now >= LATE_NS;
      continue;
    }
    q[(qh + qn++) % MAXQ] = (struct frame){r, runs[r].stamp};
    if (qn > maxq) maxq = qn;
    if (qn > maxq_late && clock_now >= LATE_NS) maxq_late = qn;
  }
}

/* Run r lost frames: what is missing enters the port anew; asked_at
 * keeps the newest of the asks lost. */
static void ask_again(struct run *r, uint64_t now, uint64_t *asked_at) {
  if (r->sent_at - SENDER_NS > *asked_at) *asked_at = r->sent_at - SENDER_NS;
  r->n -= r->came;
  r->came = 0;
  r->again = 1;
  r->pending = 1;
  r->sent_at = now + SENDER_NS;
}

/* A sender's hold of run r's PULL (its wait for a core): none, or with
 * `holds`, one run in four held 0.1-3 ms, the same every time. */
static uint64_t hold_of(uint32_t r, int holds) {
  uint32_t h = r * 2654435761u;
  return holds && (h >> 30) == 0 ? (100 + (h >> 8) % 2900) * US : 0;
}

/* K senders of `bytes` each, pulled in turn; the budget reads the
 * network's wait (net_grant_delay) when `delay`, its senders holding
 * PULLs when `holds`. Returns goodput over the port rate. */
static double incast(int k, uint64_t bytes, int delay, int holds) {
  struct net_grant g;
  net_grant_init(&g, 4u << 20, UNIT, 65507);
  memset(runs, 0, sizeof runs);
  nruns = 0;
  qh = qn = 0;
  dropped = delivered = maxq = maxq_late = dropped_late = 0;
  uint64_t total = (uint64_t)k * ((bytes + UNIT - 1) / UNIT), asked = 0, got = 0;
  uint64_t now = 0, port_next = 0;
  uint32_t low = 0; /* the oldest run not complete */
  stamps = 0;
  struct frame line[64];
  uint64_t line_at[64];
  uint32_t lh = 0, ln = 0;
  clock_now = 0;
  while (got < total && now < 10000000 * US) {
    /* Grant: runs of a quarter of the budget, at most a block (44 frames). */
    for (;;) {
      uint64_t n = g.budget / 4 / UNIT;
      if (n > 44) n = 44;
      if (n < 1) n = 1;
      if (n > total - asked) n = total - asked;
      if (!n || (g.inflight && net_grant_room(&g) < n * UNIT)) break;
      CHECK(nruns < sizeof runs / sizeof runs[0]);
      runs[nruns] = (struct run){(uint32_t)n, 0, now + SENDER_NS + hold_of(nruns, holds), 1, 0, 0};
      nruns++;
      asked += n;
      net_grant_asked(&g, n * UNIT, now);
    }
    for (uint32_t r = low; r < nruns; r++)
      if (runs[r].pending && runs[r].sent_at <= now) {
        runs[r].pending = 0;
        to_port(r);
      }
    /* The port sends a frame when its time has come. */
    if (qn && now >= port_next) {
      CHECK(ln < 64);
      line[(lh + ln) % 64] = q[qh];
      line_at[(lh + ln++) % 64] = now + LINE_NS;
      qh = (qh + 1) % MAXQ;
      qn--;
      port_next = now + PORT_NS_PER_FRAME;
    }
    /* The receiver: frames in, a gap in the runs a loss. */
    while (ln && line_at[lh] <= now) {
      struct frame f = line[lh];
      lh = (lh + 1) % 64;
      ln--;
      struct run *r = &runs[f.run];
      if (f.stamp != r->stamp) continue; /* an answer to a sending given up (cannot be: sendings end in order) */
      if (!r->came && !r->again) {
        uint64_t hold = hold_of(f.run, holds), wait = now - (r->sent_at - SENDER_NS - hold);
        net_grant_rtt(&g, wait, now);
        net_grant_away(&g, hold, now);
        if (delay) net_grant_delay(&g, wait - hold, now);
      }
      r->came++;
      got++;
      delivered++;
      net_grant_came(&g, UNIT, now);
      int lost = 0;
      uint64_t asked_at = 0;
      for (uint32_t o = low; o < nruns; o++)
        if (!runs[o].pending && runs[o].stamp < f.stamp && runs[o].came < runs[o].n) {
          ask_again(&runs[o], now, &asked_at);
          lost = 1;
        }
      if (lost) net_grant_lost(&g, asked_at, now);
      while (low < nruns && !runs[low].pending && runs[low].came == runs[low].n) low++;
    }
    /* A tail lost with nothing behind it: asked again after a wait. */
    if (!ln && !qn && low < nruns && !runs[low].pending && now - g.came_ns > 2000 * US) {
      uint64_t asked_at = 0;
      for (uint32_t o = low; o < nruns; o++)
        if (!runs[o].pending && runs[o].came < runs[o].n) ask_again(&runs[o], now, &asked_at);
      net_grant_silence(&g, 0, asked_at, now);
    }
    now += US;
    clock_now = now;
  }
  clock_now = 0;
  CHECK_EQ(got, total);
  bdp_seen = net_grant_bdp(&g);
  double ideal = (double)total * PORT_NS_PER_FRAME;
  printf("  %d senders%s%s: %.3f of the port, %llu dropped of %llu delivered, queue at most %llu frames, "
         "budget %llu, BDP %llu, cuts %llu on a loss, %llu on a delay; after 20 ms: %llu dropped, queue at most %llu\n",
         k, delay ? ", delay read" : "", holds ? ", holds" : "", ideal / (double)now, (unsigned long long)dropped,
         (unsigned long long)delivered, (unsigned long long)maxq, (unsigned long long)g.budget,
         (unsigned long long)net_grant_bdp(&g), (unsigned long long)g.cuts, (unsigned long long)g.delay_cuts,
         (unsigned long long)dropped_late, (unsigned long long)maxq_late);
  return ideal / (double)now;
}

/* The floor: the bytes the path holds (the rate measured times the
 * network's shortest wait) plus what comes while someone waits for a
 * core (the longest such wait, windowed), between two frames and half
 * the first budget. */
static void floors(void) {
  struct net_grant g;
  uint64_t t = 1000 * US;
  net_grant_init(&g, 4u << 20, UNIT, 65507);
  CHECK_EQ(net_grant_floor(&g), 65507 / 2); /* nothing measured */
  net_grant_rtt(&g, 100 * US, t);
  sample_rate(&g, 65507, &t);                /* 54.6 MB/s */
  net_grant_delay(&g, 100 * US, t);          /* the path: 100 us */
  uint64_t path = net_grant_bdp(&g);
  CHECK(path > 2 * UNIT && path < 65507 / 2);
  CHECK_EQ(net_grant_floor(&g), path);
  net_grant_away(&g, 200 * US, t);           /* a sender held a PULL 200 us: three times the path's */
  CHECK(net_grant_floor(&g) >= 3 * path - 3 && net_grant_floor(&g) <= 3 * path + 3);
  net_grant_away(&g, 10000 * US, t);         /* 10 ms: the most */
  CHECK_EQ(net_grant_floor(&g), 65507 / 2);
  t += 2 * NET_GRANT_EPOCH_NS;               /* two windows with no wait */
  net_grant_away(&g, 0, t);
  net_grant_delay(&g, 100 * US, t);
  sample_rate(&g, 65507, &t);
  CHECK(net_grant_floor(&g) < 65507 / 2);
  net_grant_init(&g, 4u << 20, UNIT, 65507);
  net_grant_rtt(&g, 100 * US, t);
  sample_rate(&g, 65507, &t);
  net_grant_delay(&g, 1 * US, t);            /* a path of a microsecond: two frames */
  CHECK_EQ(net_grant_floor(&g), 2 * UNIT);
}

/* Which losses of one partner read as a queue's: the end of a run, and
 * neither a whole run (a lost PULL) nor random frames. */
static void tails(void) {
  const uint64_t run = (1ull << 44) - 1; /* frames 0..43 */
  CHECK(net_grant_tail(0xfull << 40, 0, 44));
  CHECK(net_grant_tail(run & ~1ull, 0, 44)); /* all but the first */
  CHECK(!net_grant_tail(0x7ull << 41, 0, 44)); /* 3 in a row: random loss does that */
  CHECK(!net_grant_tail(run, 0, 44));          /* none came: the PULL was lost */
  CHECK(!net_grant_tail(1ull << 3 | 1ull << 17 | 1ull << 43, 0, 44));
  CHECK(!net_grant_tail(0xfull << 40, 0, 43)); /* the run ended before them */
  CHECK(!net_grant_tail(0xfull << 8, 8, 12));  /* a run too short to tell */
  CHECK(net_grant_tail(0xfull << 60, 20, 64)); /* a run to the end of a block */
  CHECK(!net_grant_tail(~0ull, 0, 64));
  CHECK(net_grant_tail(~1ull, 0, 64));
  CHECK(!net_grant_tail(~0ull, 0, 65)); /* no block has more than 64 frames */
  CHECK(!net_grant_tail(~0ull, 9, 5));
  /* A burst of 44 into a queue with room for r: the frames past r are
   * dropped, read as a tail drop when 4 or more are and one came. */
  for (unsigned r = 0; r <= 44; r++) {
    uint64_t missing = run & ~((1ull << r) - 1);
    CHECK_EQ(net_grant_tail(missing, 0, 44), r >= 1 && 44 - r >= 4);
  }
  /* 10% random loss over 100,000 runs of 44 frames: about 10 read (0.1^4
   * of them), never a hundred. */
  srand(47);
  unsigned read = 0;
  for (int i = 0; i < 100000; i++) {
    uint64_t missing = 0;
    for (unsigned f = 0; f < 44; f++)
      if (rand() % 10 == 0) missing |= 1ull << f;
    read += (unsigned)net_grant_tail(missing, 0, 44);
  }
  printf("  10%% random loss: %u of 100000 runs read as a tail drop\n", read);
  CHECK(read < 100);
}

int main(void) {
  basics();
  delays();
  floors();
  tails();
  /* 3, 15 and 1,000 senders of 1 MiB, 64 KiB and 16 KiB into one port. */
  const struct {
    int k;
    uint64_t bytes;
  } cases[] = {{3, 16u << 20}, {15, 1u << 20}, {1000, 64u << 10}, {1000, 16u << 10}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    for (int delay = 0; delay < 2; delay++) {
      double share = incast(cases[i].k, cases[i].bytes, delay, 0);
      CHECK(share >= 0.9);
      CHECK(dropped * 100 <= delivered); /* at most 1% */
      /* Read, the delay keeps the queue short of the buffer once a rate
       * is measured: slow start's overshoot is the only loss. */
      if (delay) CHECK(dropped_late == 0 && maxq_late < PORT_FRAMES);
      /* Nobody waits for a core: the floor is the path's bytes, and the
       * queue stays within two bandwidth-delay products (and a frame). */
      if (delay) CHECK(maxq_late * UNIT <= 2 * bdp_seen + UNIT);
    }
    /* Senders that wait for cores (a held run comes as a burst on top of
     * the others): reading the delay loses no more, nor moves less. */
    double loss_only = incast(cases[i].k, cases[i].bytes, 0, 1);
    uint64_t loss_only_dropped = dropped;
    CHECK(incast(cases[i].k, cases[i].bytes, 1, 1) >= loss_only - 0.01);
    CHECK(dropped <= loss_only_dropped);
  }
  CHECK_DONE("test_net_grant");
  return 0;
}
