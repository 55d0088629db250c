/* SPDX-License-Identifier: MIT */
/* The shared part of the bulk engines: registry, selection, chunking. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "base/log.h"
#include "platform/sys.h"
#include "platform/topo.h"

const struct fmx_bulk_engine *const bulk_engines[] = {&bulk_cma, &bulk_ring, &bulk_coop, &bulk_vmsplice, &bulk_offload,
                                                      &bulk_pull, NULL};

const struct fmx_bulk_engine *bulk_for_wire(unsigned id) {
  for (int i = 0; id && bulk_engines[i]; i++)
    if (bulk_engines[i]->wire_id == id) return bulk_engines[i];
  return &bulk_ring;
}

const struct fmx_bulk_engine *bulk_find(const char *name) {
  for (int i = 0; bulk_engines[i]; i++)
    if (strcmp(bulk_engines[i]->name, name) == 0) return bulk_engines[i];
  return NULL;
}

static const char *const level_names[] = {"CPU", "L1", "L2", "L3", "NUMA", "SYS"};
#define NLEVELS ((int)(sizeof level_names / sizeof level_names[0]))

const char *bulk_level_name(int level) { return level >= 0 && level < NLEVELS ? level_names[level] : "?"; }

int bulk_level_parse(const char *name) {
  for (int i = 0; i < NLEVELS; i++)
    if (strcmp(name, level_names[i]) == 0) return i;
  return -1;
}

int bulk_cost_parse(const char *spec, int level, struct bulk_model *out) {
  out->n = 0;
  if (!spec || !*spec) return -ENODATA;
  char buf[256];
  if (strlen(spec) >= sizeof buf) return -EINVAL;
  strcpy(buf, spec);
  struct {
    int level;
    struct bulk_cost c;
  } e[16];
  int ne = 0, best_dist = NLEVELS + 1, best = -1;
  char *save = NULL;
  for (char *tok = strtok_r(buf, ";", &save); tok; tok = strtok_r(NULL, ";", &save)) {
    char name[8];
    double st, bw;
    unsigned long long from = 0;
    int used = 0;
    if (ne == 16) return -EINVAL;
    if (sscanf(tok, " %7[A-Z0-9] @ %llu : %lf : %lf %n", name, &from, &st, &bw, &used) != 4 &&
        sscanf(tok, " %7[A-Z0-9] : %lf : %lf %n", name, &st, &bw, &used) != 3)
      return -EINVAL;
    if (tok[used] != '\0') return -EINVAL;
    int l = bulk_level_parse(name);
    /* A cost is a time and a bandwidth: both finite, bandwidth positive. */
    if (l < 0 || !(st >= 0 && st < 1e9) || !(bw > 0 && bw < 1e9)) return -EINVAL;
    e[ne].level = l;
    e[ne++].c = (struct bulk_cost){st, bw, from};
    int d = l > level ? l - level : level - l;
    if (d < best_dist) best_dist = d, best = l;
  }
  if (best < 0) return -EINVAL;
  /* The chosen level's segments, sorted by `from` (insertion; a handful). */
  for (int i = 0; i < ne; i++) {
    if (e[i].level != best) continue;
    if (out->n == BULK_COST_SEGS) return out->n = 0, -EINVAL;
    int j = out->n++;
    while (j > 0 && out->seg[j - 1].from > e[i].c.from) out->seg[j] = out->seg[j - 1], j--;
    out->seg[j] = e[i].c;
  }
  return best == level ? 0 : 1;
}

double bulk_cost_time(const struct bulk_model *m, uint64_t len) {
  int k = 0;
  while (k + 1 < m->n && m->seg[k + 1].from <= len) k++;
  return m->seg[k].startup_us + (double)len / m->seg[k].mbps;
}

int bulk_cost_pick(const struct bulk_model *m, const int *usable, int n, uint64_t len) {
  int best = -1;
  double best_t = 0;
  for (int i = 0; i < n; i++) {
    if (!usable[i] || m[i].n == 0) continue;
    double t = bulk_cost_time(&m[i], len);
    if (best < 0 || t < best_t) {
      best = i;
      best_t = t;
    }
  }
  return best;
}

/* The peer's measured costs, once per partner: the level of the two CPUs
 * (as they were at connect time, or the CPUs an unbound side may run on:
 * topo_home_cpu; unknown counts as NUMA, the cautious guess) picks each
 * engine's entry. 0, or -ENOMEM (the level set, nothing measured: the
 * topology's choice until a later transfer finds memory). */
static int peer_costs(struct bulk_peer *p, int my_cpu) {
  int level = my_cpu != -1 && p->cpu != -1 ? topo_shared_level(my_cpu, p->cpu) : TOPO_LEVEL_UNKNOWN;
  if (level < 0) level = TOPO_LEVEL_NUMA;
  p->level = level;
  p->tab = calloc(1, sizeof *p->tab);
  if (!p->tab) return -ENOMEM;
  for (int i = 0; bulk_engines[i] && i < BULK_MAX_ENGINES; i++) {
    const struct fmx_bulk_engine *e = bulk_engines[i];
    int rc = bulk_cost_parse(*e->cost_cfg, level, &p->tab->cost[i]);
    if (rc == -EINVAL)
      log_warn_once("FMX-COST-BAD", "%s='%s' is malformed (want LEVEL[@FROM]:STARTUP_US:MBPS;...); ignored",
                    e->cost_var, *e->cost_cfg);
  }
  return 0;
}

void bulk_peer_fini(struct bulk_peer *p) {
  free(p->tab);
  p->tab = NULL;
}

static const struct fmx_bulk_engine *cma_or_ring(const struct bulk_peer *p, const struct bulk_conn *c) {
  return bulk_cma.usable(p, c) ? &bulk_cma : &bulk_ring;
}

/* No measured cost: from the topology. Two cores that share an L2 or an L3
 * (not one core, nor its hardware threads, where ring's two copies would
 * take turns on it), and a message larger than one core's L2: ring, whose
 * slots (one L2 in all) keep both copies in cache and put both cores to
 * work, where the kernel's single copy pins and walks every page of a
 * cache-cold buffer (measured 2-3x faster from 2-4 MiB on a Xeon, from
 * 512 KiB on an EPYC: docs/engines.md). Not within one process: cma needs
 * nothing from the sending endpoint, ring needs a thread progressing it.
 * Else cma, else ring. */

static const struct fmx_bulk_engine *untuned(const struct bulk_peer *p, const struct bulk_conn *c, uint64_t len) {
  uint64_t l2 = topo_get()->l2.size;
  if (!bulk_cma.usable(p, c)) return &bulk_ring;
  if (l2 && len >= l2 && p->level >= TOPO_LEVEL_L2 && p->level <= TOPO_LEVEL_L3 && !p->same_process) return &bulk_ring;
  return &bulk_cma;
}

/* Ranks outnumber cores (bulk_select): the ring engine while what its
 * copies touch of the ranks that share the last-level cache fits in it,
 * else cma; ring where cma is refused. A chunk line written by the sender
 * must still be in the cache when the receiver reads it, after every other
 * rank on those cores has had its turn; each byte a rank moves touches three
 * lines there (its source, its chunk, its destination: an L3 that takes
 * what L2 evicts takes all three), and a rank has at most its pool's chunks
 * (two transfers' slots) in flight. `ranks` spread over the host's PUs: a
 * cache shared by nshare of npus PUs serves ranks x nshare / npus of them.
 * On a 2-core EPYC (L3 32 MiB, 1 MiB of chunks per rank), alltoall of 1 MiB
 * (docs/protocol.md, Memory): 8 ranks (24 MiB touched) ring 6.55 ms, cma
 * 7.1-8.2; 16 ranks (48) ring 35-47 ms, cma 29-36; 32 ranks (96) ring
 * 154-195 ms, cma 102-118. And never where the topology's rule gives a
 * lone pair cma (untuned): crowding takes from ring what makes it win (a
 * second core working beside the first), it adds nothing. On an Intel Xeon
 * VM (L2 2 MiB, an L3 of 480 MiB that the host shares with other guests),
 * where ring lost at 1 MiB even to a lone pair (94 against 50-60 us), the
 * cache test kept ring for every rank count (alltoall of 1 MiB, 8 ranks
 * ring 6.1 ms, cma 4.9; 32 ranks 156 MiB of shared memory against Open
 * MPI's 8.5, docs/performance.md): in a VM it is not made. */
static const struct fmx_bulk_engine *crowded_engine(struct bulk_peer *p, const struct bulk_conn *c, uint64_t len,
                                                    uint64_t ranks) {
  const struct fmx_bulk_engine *lone = untuned(p, c, len);
  if (lone != &bulk_ring) return lone;
  const struct topo_info *t = topo_get();
  const struct topo_cache_info *llc = t->l3.size ? &t->l3 : &t->l2;
  uint64_t npus = t->npus > 0 ? (uint64_t)t->npus : 1, nshare = llc->nshare > 0 ? (uint64_t)llc->nshare : npus;
  uint64_t sharing = (ranks * nshare + npus - 1) / npus;
  uint64_t touched = 3ull * 2ull * fmx_cfg.bulk_slots * fmx_cfg.bulk_slot_size;
  /* Within one process as before: one copy, no sender that must push. In
   * a VM the L3 figure is the host's (topo.h): nothing is known to fit.
   * Alltoall on the Xeon VM, 2026-11-27, 4 ranks on 2 cores, 4 MiB: ring
   * (the 480 MiB "fit") 4683-4912 us, cma 3461-3865, Open MPI vader 3929. */
  int fits = llc->size && !t->virtualized && !p->same_process && bulk_ring.usable(p, c) && sharing * touched <= llc->size;
  return fits || !bulk_cma.usable(p, c) ? &bulk_ring : &bulk_cma;
}

/* The cache a copy is given (bulk_copy_fn; the exchange rule in
 * bulk_select): twice FMX_COPY_NT_THRESHOLD, past half of which a copy
 * goes non-temporal. */
static uint64_t copy_cache_given(void) { return 2 * fmx_cfg.copy_nt_threshold; }

const char *bulk_cma_why(const struct bulk_peer *p, char *buf, size_t len) {
  if (!p->cma_reason) return "not probed";
  if (!p->cma_errno) return p->cma_reason;
  snprintf(buf, len, "%s: %s%s", p->cma_reason, strerror(p->cma_errno),
           p->cma_errno == EPERM ? " (ptrace rights: Yama ptrace_scope, container or uid)" : "");
  return buf;
}

const struct fmx_bulk_engine *bulk_select(struct bulk_env *env, struct bulk_peer *p, const struct bulk_conn *c,
                                          uint64_t len, int how, int crowded_here, int *offload, int *adapt) {
  const struct fmx_bulk_engine *e = NULL;
  int mapped = how & BULK_SEL_MAPPED;
  *offload = 0;
  if (adapt) *adapt = 0;
  if (strcmp(fmx_cfg.bulk, "auto") != 0) {
    e = bulk_find(fmx_cfg.bulk);
    if (!e) log_warn_once("FMX-BULK-UNKNOWN", "FMX_BULK=%s is no engine; automatic selection used", fmx_cfg.bulk);
  }
  if (!p->tab) peer_costs(p, env->cpu);
  const struct bulk_model *cost = p->tab ? p->tab->cost : NULL;
  if (e == &bulk_offload) {
    /* Forced: cma run by a channel; ring where cma is refused. */
    *offload = OFFLOAD_NOW;
    e = cma_or_ring(p, c);
  } else if (!e) {
    /* Measured costs (fmx_tune) decide among the engines usable with this
     * peer; offload competes as one more. Whoever is idle moves the bytes:
     * a thread waiting in fmx copies itself; one that matched from fmx_test
     * or irecv, or a channel matching while the application computes, may
     * hand it to a channel. */
    int usable[BULK_MAX_ENGINES] = {0}, n = 0, off = -1;
    for (; bulk_engines[n] && n < BULK_MAX_ENGINES; n++) {
      usable[n] = bulk_engines[n]->usable(p, c);
      if (bulk_engines[n] == &bulk_offload) off = n;
    }
    int may_offload = off >= 0 && usable[off] && !offload_in_wait;
    if (off >= 0) usable[off] = 0;
    /* The sender's buffer mapped here: one copy by plain loads and stores,
     * by whoever is in fmx (coop through the mapping, region/region.h). No
     * engine measured without a mapping competes with that. */
    int i = mapped || !cost ? -1 : bulk_cost_pick(cost, usable, n, len);
    e = mapped ? &bulk_coop : i >= 0 ? bulk_engines[i] : untuned(p, c, len);
    /* Ranks outnumber cores: what a pair measures alone says nothing, and
     * no round of adapt tries the engines. One copy (cma) wins once what
     * the two-copy engine touches for every rank no longer fits in the
     * last-level cache (each copy then goes to memory); while it fits, its
     * two copies in cache beat cma's one, which pins and walks the pages
     * (crowded_engine). */
    int crowded = !mapped && i < 0 && crowded_here;
    if (crowded) e = crowded_engine(p, c, len, (uint64_t)crowded_here);
    /* Both ends send at once (an exchange): each core copies what it
     * receives, and ring's second copy is the peer's core's time, which it
     * needs for its own receive. One copy by the receiver wins while the
     * message stays within the cache a copy is given (bulk_copy_fn: twice
     * FMX_COPY_NT_THRESHOLD); past it both stream from memory, where ring's
     * non-temporal copy-out moves less (2 ranks' alltoall on the Xeon VM,
     * 2026-11-28, cma against ring: 1 MiB 51 / 150 us, 4 MiB 356-382 / 605,
     * 8 MiB 731-787 / 1190-1236, 16 MiB 1470-1799 / 2401-2444; 32 MiB
     * 5249-6337 / 4927-4991, 64 MiB 12942-14325 / 11312-11626; the cache
     * given there is 16 MiB). Nor does adapt time it: the receiver's clock
     * flatters ring in an exchange (it timed ring at 11.7 GB/s against cma's
     * 10.1, kept it, and a 4 MiB exchange took 760 us instead of 373). */
    int exchange = !mapped && !crowded && i < 0 && (how & BULK_SEL_EXCHANGE) && len <= copy_cache_given();
    if (exchange) e = cma_or_ring(p, c);
    if (!crowded && !exchange && !mapped && i < 0 && fmx_cfg.adapt && adapt && len < fmx_cfg.offload_threshold &&
        !p->same_process && p->tab) {
      /* Nothing measured offline: measure online, starting from the
       * topology's suggestion (adapt.c). Not from the offload switch on:
       * there every engine streams from memory, the topology's rule holds
       * on the hosts measured (docs/engines.md), and a round of slower
       * engines costs the most. Not within one process: a thread waiting
       * on one endpoint for a message from another endpoint of its process
       * would wait forever for an engine the sender must push (ring), when
       * no thread makes progress on the sending endpoint. Only a transfer
       * matched inside a wait or a timed pass (adapt_timed) is timed: one
       * matched from fmx_test or irecv takes what the class kept and tries
       * nothing, since a try no one times only costs. */
      if (adapt_timed()) {
        e = adapt_pick(env, p, len, usable, n, e);
        *adapt = 1;
      } else {
        e = adapt_kept(p, len, usable, n, e);
      }
    }
    if (may_offload && cost && cost[off].n && !mapped) {
      /* Measured (FMX_BULK=offload): cma run by a channel, ring without CMA. */
      if (i < 0 || bulk_cost_time(&cost[off], len) < bulk_cost_time(&cost[i], len)) {
        *offload = OFFLOAD_AWAY;
        e = cma_or_ring(p, c);
      }
    } else if (may_offload && len >= fmx_cfg.offload_threshold) {
      /* The topology's switch, on whichever engine was chosen. */
      *offload = OFFLOAD_AWAY;
      if (!e->offload_step) e = untuned(p, c, len);
    }
    /* Whatever measured or adapted: where the kernel's copy would meet 4K
     * aliasing, ring's two copies step around it (copy_regular). */
    if ((how & BULK_SEL_ALIASED) && !mapped && e->kernel_copy && bulk_ring.usable(p, c)) {
      env->counters[CNT_BULK_ALIASED]++;
      e = &bulk_ring;
    }
  }
  if (strcmp(fmx_cfg.offload, "on") == 0 && !p->is_self) *offload = OFFLOAD_NOW;
  if (!(mapped && e->maps_peer) && !e->usable(p, c)) {
    if (e != &bulk_ring) {
      env->counters[CNT_BULK_FALLBACK]++;
      char why[160];
      log_info("FMX-BULK-FALLBACK", "engine %s unusable with endpoint %u (%s): ring used", e->name, p->eid,
               e == &bulk_vmsplice ? "the connection has no pipes" : bulk_cma_why(p, why, sizeof why));
    }
    e = &bulk_ring;
  }
  if (!e->offload_step) *offload = 0;
  return e;
}

void bulk_recv_start(struct bulk_xfer *x) {
  x->tag = 0;
  x->start_err = x->engine->recv_start ? x->engine->recv_start(x) : 0;
  if (x->start_err) x->engine = x->engine->fallback;
}

int bulk_progress(struct bulk_xfer *x) {
  const struct fmx_bulk_engine *e = x->engine;
  if (x->send) return x->job ? offload_poll(x) : e->send_progress(x);
  return x->job && !e->offload_helps ? offload_poll(x) : e->recv_progress(x);
}

void bulk_recv_done(struct bulk_xfer *x) {
  x->env->counters[x->engine->cnt_msgs]++;
  if (x->xsrc && x->xsrc != &region_identity) x->env->counters[CNT_XMEM_RECV]++;
  adapt_record(x);
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
  return copy_select(msg_len, copy_cache_given())->fn;
}

#define CMA_IOV 64

ssize_t bulk_cma_range(pid_t pid, int write, const struct bulk_xfer *x, const struct proto_seg *remote,
                       uint32_t nremote, uint64_t off, uint64_t len) {
  struct iovec l[CMA_IOV], rm[CMA_IOV];
  uint64_t moved = 0;
  /* Segment lists longer than CMA_IOV iovecs take several calls. */
  while (moved < len) {
    int nl = bulk_iov_local(x->segs, x->nseg, off + moved, len - moved, l, CMA_IOV);
    int nr = bulk_iov_remote(remote, nremote, off + moved, len - moved, rm, CMA_IOV);
    uint64_t cl = 0, cr = 0, n = len - moved;
    for (int i = 0; i < nl; i++) cl += l[i].iov_len;
    for (int i = 0; i < nr; i++) cr += rm[i].iov_len;
    if (cl < n) n = cl;
    if (cr < n) n = cr;
    if (n == 0) return -EFAULT; /* segments shorter than announced */
    ssize_t got = sys_cma_copy(pid, write, l, (size_t)nl, rm, (size_t)nr, n);
    if (got < 0) return got;
    if ((uint64_t)got < n) return -EFAULT;
    moved += n;
  }
  return (ssize_t)moved;
}

ssize_t bulk_remote_range(const struct region_map *m, pid_t pid, int write, const struct bulk_xfer *x,
                          const struct proto_seg *remote, uint32_t nremote, uint64_t off, uint64_t len) {
  if (!m) return bulk_cma_range(pid, write, x, remote, nremote, off, len);
  copy_fn fn = bulk_copy_fn(x->want);
  struct iovec l[CMA_IOV], rm[CMA_IOV];
  uint64_t moved = 0;
  while (moved < len) {
    int nl = bulk_iov_local(x->segs, x->nseg, off + moved, len - moved, l, CMA_IOV);
    int nr = bulk_iov_remote(remote, nremote, off + moved, len - moved, rm, CMA_IOV);
    uint64_t step = 0, ao = 0, bo = 0;
    for (int a = 0, b = 0; a < nl && b < nr;) {
      uint64_t n = l[a].iov_len - ao < rm[b].iov_len - bo ? l[a].iov_len - ao : rm[b].iov_len - bo;
      /* Checked per piece: the peer may rewrite segments in shared memory. */
      uint8_t *there = region_at(m, (uint64_t)(uintptr_t)rm[b].iov_base + bo, n);
      if (!there) return -EFAULT;
      uint8_t *here = (uint8_t *)l[a].iov_base + ao;
      if (write)
        fn(there, here, n);
      else
        fn(here, there, n);
      step += n;
      if ((ao += n) == l[a].iov_len) a++, ao = 0;
      if ((bo += n) == rm[b].iov_len) b++, bo = 0;
    }
    if (step == 0) return -EFAULT; /* segments shorter than announced */
    moved += step;
  }
  return (ssize_t)moved;
}

int bulk_iov_local(const fmx_seg_t *segs, uint32_t nseg, uint64_t off, uint64_t len, struct iovec *iov, int max) {
  int n = 0;
  for (uint32_t i = 0; i < nseg && len && n < max; i++) {
    uint64_t sl = segs[i].len;
    if (off >= sl) {
      off -= sl;
      continue;
    }
    uint64_t take = sl - off < len ? sl - off : len;
    iov[n++] = (struct iovec){(char *)segs[i].ptr + off, take};
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
