/* SPDX-License-Identifier: MIT */
/* adapt (bulk/adapt.c), the receiver's online choice of engine: fed with
 * transfer times of a synthetic host (ns per byte per engine), it starts
 * from the topology's suggestion, finds the fastest engine and keeps it,
 * tries the others rarely once settled, follows a host whose speeds change,
 * never picks an unusable engine, offload or coop, ignores unclean samples,
 * and starts a new size class from the nearest one that timed the
 * suggestion. */
#include <string.h>

#include "bulk/engine.h"
#include "check.h"
#include "base/config.h"
#include "core/tunables.h"
#include "platform/sys.h"

static uint64_t counters[CNT_MAX];
static struct bulk_env ep = {.counters = counters};
static struct bulk_tables tab; /* what adapt keeps of p */
static struct bulk_peer p = {.tab = &tab};
/* What rndv.c marks a transfer with. */
#define ADAPT 1     /* adapt chose its engine */
#define OFFLOADED 2 /* a channel moved it */
static int usable[BULK_MAX_ENGINES], n;
static double speed[BULK_MAX_ENGINES]; /* ns per byte of each engine on the synthetic host */
static int overlapped;
static double cold; /* ns per byte the next message costs on top (a cold first transfer) */
/* cma's first `cold_runs` messages after another engine's cost 1 ns per
 * byte more (a kernel copy cold again after a run of another engine). */
static int cold_runs, cma_cold_left, last_engine = -1;

static int idx(const struct fmx_bulk_engine *e) {
  for (int i = 0; i < n; i++)
    if (bulk_engines[i] == e) return i;
  return -1;
}

/* One message of len bytes: pick, then report its time as a clean sample
 * (flags as rndv.c sets them; the clock moved back by the synthetic time). */
static const struct fmx_bulk_engine *message(uint64_t len, const struct fmx_bulk_engine *prior, uint8_t flags) {
  const struct fmx_bulk_engine *e = adapt_pick(&ep, &p, len, usable, n, prior);
  struct bulk_xfer x;
  memset(&x, 0, sizeof x);
  x.engine = e;
  x.env = &ep;
  x.peer = &p;
  x.want = len;
  x.adapt = (flags & ADAPT) != 0;
  x.offloaded = (flags & OFFLOADED) != 0;
  double extra = cold;
  cold = 0;
  if (e == &bulk_cma && last_engine != idx(e)) cma_cold_left = cold_runs;
  if (e == &bulk_cma && cma_cold_left > 0) extra += 1.0, cma_cold_left--;
  last_engine = idx(e);
  x.adapt_ns = sys_now_ns() - (uint64_t)((speed[idx(e)] + extra) * (double)len);
  adapt_wait_ns = 0;
  x.adapt_seq = ep.starts + (uint64_t)overlapped; /* another receive started meanwhile */
  adapt_record(&x);
  return e;
}

/* n messages; how many went to engine e. */
static int run(int count, uint64_t len, const struct fmx_bulk_engine *e) {
  int on = 0;
  for (int k = 0; k < count; k++) on += message(len, &bulk_cma, ADAPT) == e;
  return on;
}

int main(void) {
  tunables_load();
  for (n = 0; bulk_engines[n]; n++) usable[n] = 1;
  int cma = idx(&bulk_cma), ring = idx(&bulk_ring), coop = idx(&bulk_coop), vms = idx(&bulk_vmsplice),
      off = idx(&bulk_offload);
  CHECK(cma >= 0 && ring >= 0 && coop >= 0 && vms >= 0 && off >= 0);
  offload_in_wait = 1; /* samples are taken inside a wait */

  /* A class met first (no smaller one timed anything): the topology's
   * engine is the fastest, but its first transfer is cold (20x slower): it
   * moves as many messages as a try, the fastest counts, and it is kept. */
  speed[cma] = 0.05, speed[ring] = 0.1, speed[coop] = 0.01, speed[vms] = 0.18, speed[off] = 0.01;
  cold = 1.0;
  CHECK(message(64 << 10, &bulk_cma, ADAPT) == &bulk_cma);
  for (int k = 0; k < 40; k++) message(64 << 10, &bulk_cma, ADAPT);
  CHECK_EQ(tab.adapt[16].inc - 1, cma);
  CHECK_EQ(counters[CNT_ADAPT_CHANGES], 0);
  memset(&tab, 0, sizeof tab);

  /* The topology says ring; cma is the faster, but its first three
   * messages after a run of ring are slow (seen: its first two 1 MiB
   * transfers after ring's at 6 GB/s, warm 17-23): a try of four finds its
   * speed, and adapt moves to cma. */
  cold_runs = 3;
  for (int k = 0; k < 200; k++) message(64 << 10, &bulk_ring, ADAPT);
  CHECK_EQ(tab.adapt[16].inc - 1, cma);
  cold_runs = 0;
  memset(&tab, 0, sizeof tab);
  memset(counters, 0, sizeof counters);

  /* ring 2x faster than cma, vmsplice in between; offload and coop
   * (faster still here) are never candidates. */
  speed[cma] = 0.2, speed[ring] = 0.1, speed[coop] = 0.01, speed[vms] = 0.18, speed[off] = 0.01;
  uint64_t len = 256 << 10;
  /* The first message of a class goes the topology's way. */
  CHECK(message(len, &bulk_cma, ADAPT) == &bulk_cma);
  /* Within the first rounds it settles on ring. */
  int tried_other = 0;
  for (int k = 0; k < 40; k++) {
    const struct fmx_bulk_engine *e = message(len, &bulk_cma, ADAPT);
    tried_other += e == &bulk_offload || e == &bulk_coop;
  }
  CHECK_EQ(tried_other, 0);
  CHECK_EQ(tab.adapt[18].inc - 1, ring);
  /* Settled: of the next 20000 messages at most 2% try the others. */
  uint64_t tries0 = counters[CNT_ADAPT_TRIES];
  int on_ring = run(20000, len, &bulk_ring);
  CHECK(on_ring >= 20000 - 20000 / 50);
  CHECK(counters[CNT_ADAPT_TRIES] - tries0 == (uint64_t)(20000 - on_ring));
  CHECK_EQ(tab.adapt[18].inc - 1, ring);

  /* The host changes: ring becomes 3x slower than vmsplice. The choice
   * follows within one long round (ADAPT_SPAN_MAX messages and the tries). */
  uint64_t changes0 = counters[CNT_ADAPT_CHANGES];
  speed[ring] = 0.54;
  run(1024 + 16, len, &bulk_vmsplice);
  CHECK_EQ(tab.adapt[18].inc - 1, vms);
  CHECK(counters[CNT_ADAPT_CHANGES] > changes0);
  /* ... and stays there. */
  CHECK(run(500, len, &bulk_vmsplice) >= 500 - 500 / 20);

  /* Unclean samples do not count: if only unclean ones came, nothing
   * changes even when the incumbent became the slowest. */
  speed[vms] = 5;
  for (int k = 0; k < 3000; k++) message(len, &bulk_cma, 0);                           /* not adapt's */
  for (int k = 0; k < 3000; k++) message(len, &bulk_cma, ADAPT | OFFLOADED); /* a channel moved it */
  offload_in_wait = 0;
  for (int k = 0; k < 3000; k++) message(len, &bulk_cma, ADAPT); /* completed outside a wait */
  offload_in_wait = 1;
  overlapped = 1;
  for (int k = 0; k < 3000; k++) message(len, &bulk_cma, ADAPT); /* not alone throughout */
  overlapped = 0;
  CHECK_EQ(tab.adapt[18].inc - 1, vms);
  speed[vms] = 0.18;

  /* A transfer matched outside a wait (no one would time it) takes what
   * the class kept and tries nothing; a class with no choice yet, the
   * topology's suggestion. */
  uint64_t kept_tries = counters[CNT_ADAPT_TRIES];
  for (int k = 0; k < 100; k++) CHECK(adapt_kept(&p, len, usable, n, &bulk_cma) == &bulk_vmsplice);
  CHECK(adapt_kept(&p, 1ull << 30, usable, n, &bulk_ring) == &bulk_ring);
  usable[vms] = 0;
  CHECK(adapt_kept(&p, len, usable, n, &bulk_cma) == &bulk_cma);
  usable[vms] = 1;
  CHECK_EQ(counters[CNT_ADAPT_TRIES], kept_tries);

  /* A new class starts from the nearest smaller class that timed the
   * topology's suggestion (cma here) and chose another (vmsplice). */
  uint64_t big = 1 << 20;
  CHECK(message(big, &bulk_cma, ADAPT) == &bulk_vmsplice);
  /* An engine no longer usable with the peer is never picked; the
   * incumbent gone, the class starts again from the prior. */
  usable[vms] = 0;
  CHECK(run(3000, big, &bulk_vmsplice) == 0);
  usable[ring] = 0;
  CHECK(run(100, big, &bulk_cma) == 100);
  /* Nothing usable among the candidates: the prior itself. */
  usable[cma] = 0;
  CHECK(message(big, &bulk_ring, ADAPT) == &bulk_ring);

  /* Outside a wait, a transfer counts only within a timed pass
   * (fmx_test_some's: adapt_in_pass), and is timed from its own start. */
  for (int k = 0; k < n; k++) usable[k] = 1;
  uint64_t huge = 1ull << 24;
  struct adapt_class *hc = &tab.adapt[24];
  offload_in_wait = 0;
  for (int k = 0; k < 50; k++) message(huge, &bulk_ring, ADAPT);
  CHECK(hc->win == 0 && hc->best[cma] == 0 && hc->best[vms] == 0);
  adapt_in_pass = 1;
  for (int k = 0; k < 50; k++) message(huge, &bulk_ring, ADAPT);
  adapt_in_pass = 0;
  CHECK(hc->win > 0 || hc->best[cma] > 0 || hc->best[vms] > 0);

  CHECK_DONE("test_adapt");
  return 0;
}
