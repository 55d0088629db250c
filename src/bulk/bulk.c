/* SPDX-License-Identifier: MIT */
/* The shared part of the bulk engines: registry, selection, chunking. */
#include <errno.h>
#include <string.h>

#include "bulk/engine.h"
#include "core/config.h"
#include "core/log.h"
#include "platform/topo.h"

#include <stdio.h>

const struct fmx_bulk_engine *const bulk_engines[] = {&bulk_cma, &bulk_ring, NULL};

const struct fmx_bulk_engine *bulk_find(const char *name) {
  for (int i = 0; bulk_engines[i]; i++)
    if (strcmp(bulk_engines[i]->name, name) == 0) return bulk_engines[i];
  return NULL;
}

static const char *const level_names[] = {"CPU", "L1", "L2", "L3", "NUMA", "SYS"};
#define NLEVELS ((int)(sizeof level_names / sizeof level_names[0]))

int bulk_cost_parse(const char *spec, int level, struct bulk_cost *out) {
  if (!spec || !*spec) return -1;
  char buf[256];
  if (strlen(spec) >= sizeof buf) return -2;
  strcpy(buf, spec);
  int best = -1, best_dist = NLEVELS + 1;
  struct bulk_cost best_c = {0, 0};
  char *save = NULL;
  for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
    char name[8];
    double st, bw;
    int used = 0;
    if (sscanf(tok, " %7[A-Z0-9] : %lf : %lf %n", name, &st, &bw, &used) != 3 || tok[used] != '\0')
      return -2;
    int l = -1;
    for (int i = 0; i < NLEVELS; i++)
      if (strcmp(name, level_names[i]) == 0) l = i;
    /* A cost is a time and a bandwidth: both finite, bandwidth positive. */
    if (l < 0 || !(st >= 0 && st < 1e9) || !(bw > 0 && bw < 1e9)) return -2;
    int d = l > level ? l - level : level - l;
    if (d < best_dist) {
      best_dist = d;
      best = l;
      best_c = (struct bulk_cost){st, bw};
    }
  }
  if (best < 0) return -2;
  *out = best_c;
  return best == level ? 0 : 1;
}

double bulk_cost_time(const struct bulk_cost *c, uint64_t len) { return c->startup_us + (double)len / c->mbps; }

int bulk_cost_pick(const struct bulk_cost *cost, const int *known, int n, uint64_t len) {
  int best = -1;
  double best_t = 0;
  for (int i = 0; i < n; i++) {
    if (!known[i]) continue;
    double t = bulk_cost_time(&cost[i], len);
    if (best < 0 || t < best_t) {
      best = i;
      best_t = t;
    }
  }
  return best;
}

/* The peer's measured costs, once per partner: the level of the two CPUs
 * (as they were at connect time; unknown counts as NUMA, the cautious
 * guess) picks each engine's entry. */
static void partner_costs(struct partner *p, int my_cpu) {
  int level = my_cpu >= 0 && p->cpu >= 0 ? topo_shared_level(my_cpu, p->cpu) : TOPO_LEVEL_UNKNOWN;
  if (level < 0) level = TOPO_LEVEL_NUMA;
  for (int i = 0; bulk_engines[i] && i < BULK_MAX_ENGINES; i++) {
    const struct fmx_bulk_engine *e = bulk_engines[i];
    int rc = bulk_cost_parse(*e->cost_cfg, level, &p->cost[i]);
    p->cost_known[i] = rc >= 0;
    if (rc == -2)
      log_warn_once("FMX-COST-BAD", "%s='%s' is malformed (want LEVEL:STARTUP_US:MBPS;...); ignored",
                    e->cost_var, *e->cost_cfg);
  }
  p->cost_ready = 1;
}

const struct fmx_bulk_engine *bulk_select(struct fmx_endpoint *ep, struct partner *p, uint64_t len) {
  const struct fmx_bulk_engine *e = NULL;
  if (strcmp(fmx_cfg.bulk, "auto") != 0) {
    e = bulk_find(fmx_cfg.bulk);
    if (!e) log_warn_once("FMX-BULK-UNKNOWN", "FMX_BULK=%s is no engine; automatic selection used", fmx_cfg.bulk);
  }
  if (!e) {
    /* Measured costs (fmx_tune) decide among the engines usable with this
     * peer. Without them: the one copy of cma beats the two copies of ring
     * wherever cma is allowed (docs/engines.md). */
    if (!p->cost_ready) partner_costs(p, ep->cpu);
    int known[BULK_MAX_ENGINES] = {0}, n = 0;
    for (; bulk_engines[n] && n < BULK_MAX_ENGINES; n++)
      known[n] = p->cost_known[n] && bulk_engines[n]->usable(ep, p);
    int i = bulk_cost_pick(p->cost, known, n, len);
    e = i >= 0 ? bulk_engines[i] : &bulk_cma;
  }
  if (!e->usable(ep, p)) {
    if (e != &bulk_ring) {
      CNT(ep, BULK_FALLBACK);
      log_info("FMX-BULK-FALLBACK", "engine %s unusable with endpoint %u (%s): ring used", e->name, p->eid,
               p->cma_reason);
    }
    e = &bulk_ring;
  }
  return e;
}

copy_fn bulk_copy_fn(uint64_t msg_len) {
  if (strcmp(fmx_cfg.copy, "auto") != 0) {
    const struct fmx_copy_routine *c = NULL;
    int rc = copy_select_forced(fmx_cfg.copy, &c);
    if (rc == 0 && c) return c->fn;
    log_warn_once("FMX-COPY-UNKNOWN", "FMX_COPY=%s: %s; automatic choice used", fmx_cfg.copy,
                  rc == -ENOTSUP ? "this CPU cannot run it" : "no such copy routine");
  }
  /* copy_select goes non-temporal above half the cache it is given. */
  return copy_select(msg_len, 2 * fmx_cfg.copy_nt_threshold)->fn;
}

int bulk_iov_local(const struct fmx_request *r, uint64_t off, uint64_t len, struct iovec *iov, int max) {
  int n = 0;
  for (uint32_t i = 0; i < r->nseg && len && n < max; i++) {
    uint64_t sl = r->segs[i].len;
    if (off >= sl) {
      off -= sl;
      continue;
    }
    uint64_t take = sl - off < len ? sl - off : len;
    iov[n++] = (struct iovec){(char *)r->segs[i].ptr + off, take};
    len -= take;
    off = 0;
  }
  return n;
}

int bulk_iov_remote(const struct proto_seg *s, uint32_t nseg, uint64_t off, uint64_t len, struct iovec *iov,
                    int max) {
  int n = 0;
  for (uint32_t i = 0; i < nseg && len && n < max; i++) {
    uint64_t sl = s[i].len;
    if (off >= sl) {
      off -= sl;
      continue;
    }
    uint64_t take = sl - off < len ? sl - off : len;
    iov[n++] = (struct iovec){(void *)(uintptr_t)(s[i].addr + off), take};
    len -= take;
    off = 0;
  }
  return n;
}
