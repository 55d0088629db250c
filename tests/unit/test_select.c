/* SPDX-License-Identifier: MIT */
/* The bulk-engine selector: cost specs (what fmx_tune writes), the cheapest
 * engine per size, and decisions against synthetic topologies (two packages:
 * CPUs 0,1 share an L3; CPU 2 shares nothing with CPU 0), measured or not,
 * offloaded or not. */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "bulk/engine.h"
#include "check.h"
#include "base/config.h"
#include "core/tunables.h"
#include "platform/topo.h"

static uint64_t counters[CNT_MAX];

/* The engine's name, "+offload" when a channel is to run it; how: the
 * BULK_SEL_* flags. */
static const char *pick_how(int my_cpu, int peer_cpu, int cma_ok, uint64_t len, int how) {
  static char name[32];
  struct bulk_env ep = {.counters = counters, .cpu = my_cpu};
  static struct bulk_peer p;
  bulk_peer_fini(&p);
  memset(&p, 0, sizeof p);
  p.cpu = peer_cpu;
  p.cma_ok = cma_ok;
  struct bulk_conn conn = {.pipe_tx = -1, .pipe_rx = -1}; /* slots and coop areas; no pipes */
  int off = 0;
  const struct fmx_bulk_engine *e = bulk_select(&ep, &p, &conn, len, how, 0, &off, NULL);
  snprintf(name, sizeof name, "%s%s", e->name, off ? "+offload" : "");
  return name;
}

static const char *pick(int my_cpu, int peer_cpu, int cma_ok, uint64_t len) {
  return pick_how(my_cpu, peer_cpu, cma_ok, len, 0);
}

/* 4K aliasing (platform/copy.h): where the kernel's copy would meet it,
 * automatic selection takes ring; a forced engine and a mapped sender's
 * buffer are left alone. The window as on a CPU that stalls there
 * (FMX_COPY_ALIAS=1), whatever this one measured; off, nothing aliases. */
static void test_aliased(void) {
  copy_alias_set(0);
  CHECK(!copy_aliases(0x10010, 0x20000));
  copy_alias_set(1);
  CHECK(!copy_aliases(0x10000, 0x20000));
  CHECK(copy_aliases(0x10010, 0x20000));   /* malloc'd receive buffer, page-aligned slot or buffer */
  CHECK(copy_aliases(0x10000 + 63, 0x20000));
  CHECK(!copy_aliases(0x10000 + 64, 0x20000));
  CHECK(!copy_aliases(0x10000, 0x20010));  /* the other way: 4080 */
  CHECK(copy_aliases(0x5, 0xfff8));        /* across the wrap */
  uint64_t before = counters[CNT_BULK_ALIASED];
  CHECK(strcmp(pick_how(0, 2, 1, 1 << 15, 0), "cma") == 0);
  CHECK(strcmp(pick_how(0, 2, 1, 1 << 15, BULK_SEL_ALIASED), "ring") == 0);
  CHECK_EQ(counters[CNT_BULK_ALIASED], before + 1);
  CHECK(strcmp(pick_how(0, 2, 1, 1 << 15, BULK_SEL_ALIASED | BULK_SEL_MAPPED), "coop") == 0);
  CHECK(strcmp(pick_how(0, 2, 0, 1 << 15, BULK_SEL_ALIASED), "ring") == 0);
  CHECK_EQ(config_set("FMX_BULK", "cma", "environment"), 0);
  CHECK(strcmp(pick_how(0, 2, 1, 1 << 15, BULK_SEL_ALIASED), "cma") == 0);
  CHECK_EQ(config_set("FMX_BULK", "auto", "environment"), 0);
  CHECK_EQ(counters[CNT_BULK_ALIASED], before + 1);
  copy_alias_set(fmx_cfg.copy_alias);
}

/* Ranks outnumber cores (bulk.c, crowded_engine): where a lone pair would
 * take ring, ring while three lines per chunk byte (source, chunk,
 * destination) of the ranks sharing the L3 fit in it, else cma. Topology
 * of main's: 4 PUs, 2 per 32 MiB L3. */
static void test_crowded(void) {
  CHECK_EQ(config_set("FMX_BULK_SLOTS", "8", "environment"), 0);
  CHECK_EQ(config_set("FMX_BULK_SLOT_SIZE", "128K", "environment"), 0);
  struct bulk_env ep = {.counters = counters, .cpu = 0};
  struct bulk_conn conn = {.pipe_tx = -1, .pipe_rx = -1};
  struct {
    int ranks, cma_ok;
    const char *want;
  } cases[] = {
      /* 2 MiB of chunks, 6 MiB touched per rank; half the ranks share one L3. */
      {10, 1, "ring"}, /* 5 x 6 = 30 MiB */
      {11, 1, "cma"},  /* 6 x 6 = 36 MiB */
      {32, 1, "cma"},
      {32, 0, "ring"}, /* cma refused */
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    struct bulk_peer p = {.cpu = 1, .cma_ok = cases[k].cma_ok};
    int off = 0;
    const struct fmx_bulk_engine *e = bulk_select(&ep, &p, &conn, 1 << 20, 0, cases[k].ranks, &off, NULL);
    CHECK(strcmp(e->name, cases[k].want) == 0);
    bulk_peer_fini(&p);
  }
  CHECK_EQ(config_set("FMX_BULK_SLOT_SIZE", "64K", "environment"), 0);
  /* 1 MiB of chunks, 3 MiB touched: 20 ranks (10 x 3 = 30 MiB) ring, 22 (33 MiB) cma. */
  struct bulk_peer p = {.cpu = 1, .cma_ok = 1};
  int off = 0;
  CHECK(strcmp(bulk_select(&ep, &p, &conn, 1 << 20, 0, 20, &off, NULL)->name, "ring") == 0);
  bulk_peer_fini(&p);
  memset(&p, 0, sizeof p);
  p.cpu = 1;
  p.cma_ok = 1;
  CHECK(strcmp(bulk_select(&ep, &p, &conn, 1 << 20, 0, 22, &off, NULL)->name, "cma") == 0);
  /* Where a lone pair gets cma (shorter than one L2, or on one core), so
   * do crowded ranks, however much fits. */
  bulk_peer_fini(&p);
  memset(&p, 0, sizeof p);
  p.cpu = 1;
  p.cma_ok = 1;
  CHECK(strcmp(bulk_select(&ep, &p, &conn, 512 << 10, 0, 4, &off, NULL)->name, "cma") == 0);
  CHECK(strcmp(bulk_select(&ep, &p, &conn, 1 << 20, 0, 4, &off, NULL)->name, "ring") == 0);
  bulk_peer_fini(&p);
  memset(&p, 0, sizeof p);
  p.cpu = 0;
  p.cma_ok = 1;
  CHECK(strcmp(bulk_select(&ep, &p, &conn, 1 << 20, 0, 4, &off, NULL)->name, "cma") == 0);
  bulk_peer_fini(&p);
}

int main(void) {
  struct bulk_model c;
  tunables_load();
  CHECK_EQ(config_set("FMX_OFFLOAD_THRESHOLD", "16M", "environment"), 0);
  test_aliased();

  /* Parsing: exact level, nearest level, segments, empty, malformed. */
  CHECK_EQ(bulk_cost_parse("L3:2.5:9000", TOPO_LEVEL_L3, &c), 0);
  CHECK(c.n == 1 && fabs(c.seg[0].startup_us - 2.5) < 1e-9 && fabs(c.seg[0].mbps - 9000) < 1e-9);
  CHECK_EQ(bulk_cost_parse("L2:1:100;NUMA:4:400", TOPO_LEVEL_L3, &c), 1);
  CHECK(c.n == 1 && fabs(c.seg[0].mbps - 100) < 1e-9); /* L2 and NUMA equally near: the first */
  CHECK_EQ(bulk_cost_parse("L2:1:100; SYS:7:700", TOPO_LEVEL_NONE, &c), 0);
  CHECK(fabs(c.seg[0].startup_us - 7) < 1e-9);
  /* Segments of one level, given in any order, sorted by their start. */
  CHECK_EQ(bulk_cost_parse("L3@4194304:0:2000;L2:9:9;L3:1:10000", TOPO_LEVEL_L3, &c), 0);
  CHECK_EQ(c.n, 2);
  CHECK_EQ(c.seg[0].from, 0);
  CHECK_EQ(c.seg[1].from, 4194304);
  CHECK(fabs(bulk_cost_time(&c, 1000000) - 101) < 1e-9);   /* 1 + 1e6 / 1e4 */
  CHECK(fabs(bulk_cost_time(&c, 8000000) - 4000) < 1e-9);  /* 0 + 8e6 / 2e3 */
  CHECK_EQ(bulk_cost_parse("", TOPO_LEVEL_L3, &c), -ENODATA);
  CHECK_EQ(bulk_cost_parse(NULL, TOPO_LEVEL_L3, &c), -ENODATA);
  const char *bad[] = {"L3", "L3:1", "L9:1:2", "L3:1:0", "L3:-1:5", "L3:1:2x", "l3:1:2", "L3:nan:5",
                       "L3:1:inf", ";", "L3@:1:2", "L3@x:1:2", "L3@1:1:2;L3@2:1:2;L3@3:1:2;L3@4:1:2;L3@5:1:2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    int rc = bulk_cost_parse(bad[i], TOPO_LEVEL_L3, &c);
    if (rc != -EINVAL) fprintf(stderr, "accepted '%s'\n", bad[i]);
    CHECK_EQ(rc, -EINVAL);
    CHECK_EQ(c.n, 0); /* nothing taken */
  }

  /* The cheapest engine: low startup wins small, high bandwidth wins big. */
  struct bulk_model two[2] = {{1, {{2, 4000, 0}}}, {1, {{10, 8000, 0}}}};
  int usable[2] = {1, 1};
  CHECK_EQ(bulk_cost_pick(two, usable, 2, 1 << 15), 0);
  CHECK_EQ(bulk_cost_pick(two, usable, 2, 64 << 20), 1);
  CHECK_EQ(bulk_cost_pick(two, usable, 2, 64000), 0); /* the crossover: a tie goes low */
  usable[0] = 0;
  CHECK_EQ(bulk_cost_pick(two, usable, 2, 1 << 15), 1);
  usable[1] = 0;
  CHECK_EQ(bulk_cost_pick(two, usable, 2, 1 << 15), -1);
  /* Segments: engine 0 falls out of cache at 4 MiB, engine 1 does not. */
  struct bulk_model seg[2] = {{2, {{1, 10000, 0}, {0, 2000, 4 << 20}}}, {1, {{5, 6000, 0}}}};
  usable[0] = usable[1] = 1;
  CHECK_EQ(bulk_cost_pick(seg, usable, 2, 1 << 20), 0);
  CHECK_EQ(bulk_cost_pick(seg, usable, 2, 8 << 20), 1);

  /* No measured costs, from the topology (two packages; CPUs 0 and 1 share
   * a 32 MiB L3, each has a 1 MiB L2; CPU 2 shares nothing with 0): ring
   * from one L2's size between cores sharing a cache, else cma; cma refused:
   * ring; from the offload threshold on, run by a channel. */
  CHECK_EQ(topo_load_synthetic("pack:2 l3:1(size=32MiB) l2:2(size=1MiB) core:1 pu:1"), 0);
  CHECK_EQ(topo_get()->l2.size, 1 << 20);
  CHECK(strcmp(pick(0, 1, 1, (1 << 20) - 1), "cma") == 0);
  CHECK(strcmp(pick(0, 1, 1, 1 << 20), "ring") == 0);
  CHECK(strcmp(pick(0, 2, 1, 1 << 20), "cma") == 0); /* across packages */
  CHECK(strcmp(pick(1, 1, 1, 1 << 20), "cma") == 0); /* both on one CPU */
  CHECK(strcmp(pick(-1, 1, 1, 4 << 20), "cma") == 0); /* unknown CPU: NUMA */
  CHECK(strcmp(pick(0, 1, 0, 1 << 15), "ring") == 0);
  CHECK(strcmp(pick(0, 1, 1, 64 << 20), "ring+offload") == 0);
  CHECK(strcmp(pick(0, 2, 1, 64 << 20), "cma+offload") == 0);
  CHECK(strcmp(pick(0, 2, 0, 64 << 20), "ring+offload") == 0);
  CHECK(strcmp(pick(0, 2, 1, (16 << 20) - 1), "cma") == 0);
  /* A thread waiting in fmx copies what it matches itself. */
  offload_in_wait = 1;
  CHECK(strcmp(pick(0, 2, 1, 64 << 20), "cma") == 0);
  offload_in_wait = 0;
  CHECK_EQ(config_set("FMX_OFFLOAD", "off", "environment"), 0);
  CHECK(strcmp(pick(0, 2, 1, 64 << 20), "cma") == 0);
  CHECK_EQ(config_set("FMX_OFFLOAD", "auto", "environment"), 0);
  CHECK_EQ(config_set("FMX_OFFLOAD_CHANNELS", "0", "environment"), 0);
  CHECK(strcmp(pick(0, 2, 1, 64 << 20), "cma") == 0);
  CHECK_EQ(config_set("FMX_OFFLOAD_CHANNELS", "2", "environment"), 0);
  /* FMX_OFFLOAD=on: any engine with an offload step, from any size. */
  CHECK_EQ(config_set("FMX_OFFLOAD", "on", "environment"), 0);
  CHECK(strcmp(pick(0, 1, 1, 1 << 15), "cma+offload") == 0);
  CHECK(strcmp(pick(0, 1, 1, 1 << 20), "ring+offload") == 0);
  CHECK_EQ(config_set("FMX_BULK", "coop", "environment"), 0);
  CHECK(strcmp(pick(0, 1, 1, 1 << 20), "coop+offload") == 0);
  CHECK_EQ(config_set("FMX_BULK", "vmsplice", "environment"), 0);
  /* (no pipes on this connection: ring, offloaded) */
  CHECK(strcmp(pick(0, 1, 1, 1 << 20), "ring+offload") == 0);
  CHECK_EQ(config_set("FMX_OFFLOAD", "off", "environment"), 0);
  CHECK_EQ(config_set("FMX_BULK", "offload", "environment"), 0);
  CHECK(strcmp(pick(0, 1, 1, 4096), "cma+offload") == 0); /* forced beats off */
  CHECK(strcmp(pick(0, 1, 0, 4096), "ring+offload") == 0);
  CHECK_EQ(config_set("FMX_BULK", "auto", "environment"), 0);
  CHECK_EQ(config_set("FMX_OFFLOAD", "auto", "environment"), 0);

  /* Measured costs on a two-package machine: ring wins large messages
   * between cores that share the L3, cma everything across packages. */
  CHECK_EQ(topo_shared_level(0, 1), TOPO_LEVEL_L3);
  CHECK_EQ(topo_shared_level(0, 2), TOPO_LEVEL_NUMA); /* one NUMA node */
  CHECK_EQ(config_set("FMX_COST_CMA", "L3:2:4000;NUMA:2:3000", "environment"), 0);
  CHECK_EQ(config_set("FMX_COST_RING", "L3:10:8000;NUMA:10:1500", "environment"), 0);
  CHECK(strcmp(pick(0, 1, 1, 1 << 15), "cma") == 0);
  CHECK(strcmp(pick(0, 1, 1, 8 << 20), "ring") == 0);
  CHECK(strcmp(pick(0, 2, 1, 8 << 20), "cma") == 0);
  /* No offload cost measured (a ping-pong cannot: its receiver waits), so
   * the topology's switch still applies to receives matched outside a wait. */
  CHECK(strcmp(pick(0, 1, 1, 64 << 20), "ring+offload") == 0);
  CHECK(strcmp(pick(0, 2, 1, 64 << 20), "cma+offload") == 0);
  /* A measured offload cost competes like an engine's: cma run by a
   * channel (ring where cma is refused). */
  CHECK_EQ(config_set("FMX_COST_OFFLOAD", "L3:30:9000;NUMA:30:9000", "environment"), 0);
  CHECK(strcmp(pick(0, 1, 1, 64 << 20), "cma+offload") == 0);
  CHECK(strcmp(pick(0, 1, 1, 1 << 15), "cma") == 0);
  CHECK(strcmp(pick(0, 2, 0, 64 << 20), "ring+offload") == 0);
  CHECK_EQ(config_set("FMX_COST_OFFLOAD", "", "environment"), 0);
  /* A peer that refuses CMA leaves ring, whatever the costs. */
  CHECK(strcmp(pick(0, 2, 0, 1 << 15), "ring") == 0);
  /* Unknown CPUs count as NUMA. */
  CHECK(strcmp(pick(-1, 1, 1, 8 << 20), "cma") == 0);
  /* Only one engine measured: it is chosen whenever usable. */
  CHECK_EQ(config_set("FMX_COST_CMA", "", "environment"), 0);
  CHECK(strcmp(pick(0, 1, 1, 1 << 15), "ring") == 0);
  /* A malformed spec is ignored (warned once), not half-used. */
  CHECK_EQ(config_set("FMX_COST_RING", "L3:fast", "environment"), 0);
  CHECK(strcmp(pick(0, 1, 1, 64 << 20), "ring+offload") == 0); /* untuned */
  /* FMX_BULK forces, costs or not. */
  CHECK_EQ(config_set("FMX_COST_RING", "L3:10:8000", "environment"), 0);
  CHECK_EQ(config_set("FMX_BULK", "cma", "environment"), 0);
  CHECK(strcmp(pick(0, 1, 1, 64 << 20), "cma") == 0); /* and not offloaded */
  CHECK_EQ(config_set("FMX_BULK", "auto", "environment"), 0);
  CHECK_EQ(config_set("FMX_COST_RING", "", "environment"), 0);
  test_crowded();
  CHECK_DONE("test_select");
  return 0;
}
