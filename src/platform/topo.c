/* SPDX-License-Identifier: MIT */
/*
 * topo.c - machine topology (see topo.h).
 *
 * Both sources (hwloc here, or sysfs when hwloc cannot load: topo_sysfs.c)
 * are reduced to one per-CPU table (topo_int.h): for each OS CPU index, the
 * size and cpuset of its L1/L2/L3 data cache and the cpuset of its NUMA
 * node. Every query then is a bitmap
 * test on that table, so the two sources cannot answer differently, and the
 * hwloc topology itself (hundreds of KiB on a large machine) is not kept.
 */
#define _GNU_SOURCE
#include "platform/topo.h"

#include "base/log.h"
#include "platform/topo_int.h"

#include <errno.h>
#include <ctype.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct topo_state topo_state;
static pthread_once_t topo_once = PTHREAD_ONCE_INIT;
/* Serialises the test-only reloads with each other, not with queries. */
static pthread_mutex_t topo_reload_lock = PTHREAD_MUTEX_INITIALIZER;

/* --- table ------------------------------------------------------------- */

int topo_table_alloc(struct topo_state *st, int ncpus)
{
  st->cpu = calloc((size_t)ncpus, sizeof(*st->cpu));
  if (!st->cpu)
    return -ENOMEM;
  st->ncpus = ncpus;
  return 0;
}

static void topo_table_free(struct topo_state *st)
{
  for (int c = 0; c < st->ncpus; c++)
    for (int l = 0; l < TOPO_NSETS; l++)
      if (st->cpu[c].set[l])
        hwloc_bitmap_free(st->cpu[c].set[l]);
  free(st->cpu);
  st->cpu = NULL;
  st->ncpus = 0;
}

const struct topo_cpu *topo_cpu_get(const struct topo_state *st, int cpu)
{
  if (cpu < 0 || cpu >= st->ncpus || !st->cpu[cpu].present)
    return NULL;
  return &st->cpu[cpu];
}

/* Record `set` as the sharing set of `cpu` at `level` unless one is already
 * known: the innermost object wins when a level appears twice. */
void topo_cpu_set(struct topo_state *st, int cpu, int level, uint64_t size,
                         hwloc_const_bitmap_t set)
{
  struct topo_cpu *c = &st->cpu[cpu];
  if (level < 1 || level >= TOPO_NSETS || c->set[level])
    return;
  c->set[level] = hwloc_bitmap_dup(set);
  if (c->set[level])
    c->size[level] = size;
}

/* Caches beyond L3 (eDRAM L4, memory-side caches) are not described: they
 * must not land in the NUMA slot. */
void topo_cpu_cache(struct topo_state *st, int cpu, int level, uint64_t size,
                           hwloc_const_bitmap_t set)
{
  if (level >= 1 && level <= 3)
    topo_cpu_set(st, cpu, level, size, set);
}

/* --- hwloc source -------------------------------------------------------- */

static int topo_hwloc_fill(struct topo_state *st, hwloc_topology_t t)
{
  int npus = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_PU);
  if (npus <= 0)
    return -ENODEV;
  hwloc_const_bitmap_t all = hwloc_topology_get_complete_cpuset(t);
  int last = hwloc_bitmap_last(all);
  if (last < 0 || topo_table_alloc(st, last + 1) < 0)
    return -ENOMEM;

  int nnuma = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_NUMANODE);
  hwloc_obj_t pu = NULL;
  while ((pu = hwloc_get_next_obj_by_type(t, HWLOC_OBJ_PU, pu)) != NULL) {
    int cpu = (int)pu->os_index;
    if (cpu < 0 || cpu >= st->ncpus)
      continue;
    st->cpu[cpu].present = 1;
    for (hwloc_obj_t a = pu->parent; a; a = a->parent)
      if (hwloc_obj_type_is_dcache(a->type)) /* data or unified */
        topo_cpu_cache(st, cpu, (int)a->attr->cache.depth, a->attr->cache.size, a->cpuset);
    /* A CPU may be local to several NUMA nodes (DRAM plus HBM or CXL memory
     * at the same locality); "same node" means sharing any of them. */
    hwloc_bitmap_t numa = hwloc_bitmap_alloc();
    if (!numa)
      continue;
    for (int i = 0; i < nnuma; i++) {
      hwloc_obj_t n = hwloc_get_obj_by_type(t, HWLOC_OBJ_NUMANODE, (unsigned)i);
      if (n && n->cpuset && hwloc_bitmap_isset(n->cpuset, (unsigned)cpu))
        hwloc_bitmap_or(numa, numa, n->cpuset);
    }
    if (!hwloc_bitmap_iszero(numa))
      topo_cpu_set(st, cpu, TOPO_NUMA, 0, numa);
    hwloc_bitmap_free(numa);
  }

  int ncores = hwloc_get_nbobjs_by_type(t, HWLOC_OBJ_CORE);
  st->info.npus = npus;
  st->info.ncores = ncores > 0 ? ncores : npus;
  st->info.numa_nodes = nnuma > 0 ? nnuma : 1;
  hwloc_obj_t pkg = hwloc_get_obj_by_type(t, HWLOC_OBJ_PACKAGE, 0);
  const char *model = pkg ? hwloc_obj_get_info_by_name(pkg, "CPUModel") : NULL;
  if (model)
    snprintf(st->info.cpu_model, sizeof(st->info.cpu_model), "%s", model);
  return 0;
}

/* Load through hwloc: the real machine when `synthetic` is NULL. */
static int topo_hwloc_load(struct topo_state *st, const char *synthetic)
{
  hwloc_topology_t t;
  if (hwloc_topology_init(&t) < 0)
    return -ENOSYS;
  int rc = -1;
  if (synthetic) {
    if (hwloc_topology_set_synthetic(t, synthetic) < 0)
      goto out;
  } else {
    /* Describe CPUs outside our cgroup cpuset too: a peer in another
     * container on this host may run there and ask what it shares with us. */
    hwloc_topology_set_flags(t, HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED);
  }
  /* Instruction caches never decide a copy strategy; skipping them keeps
   * the data caches the only caches in each PU's ancestry. */
  hwloc_topology_set_icache_types_filter(t, HWLOC_TYPE_FILTER_KEEP_NONE);
  if (hwloc_topology_load(t) < 0)
    goto out;
  rc = topo_hwloc_fill(st, t);
  if (rc == 0)
    snprintf(st->info.src, sizeof(st->info.src), "%s", synthetic ? "synthetic" : "hwloc");
out:
  hwloc_topology_destroy(t);
  return rc;
}

/* --- summary -------------------------------------------------------------- */

static void topo_read_model(char *out, size_t len)
{
  FILE *f = fopen("/proc/cpuinfo", "re");
  if (!f)
    return;
  char line[512];
  while (fgets(line, sizeof(line), f)) {
    if (strncmp(line, "model name", 10) != 0)
      continue;
    char *v = strchr(line, ':');
    if (!v)
      continue;
    v++;
    while (*v == ' ' || *v == '\t')
      v++;
    size_t n = strcspn(v, "\n");
    while (n > 0 && isspace((unsigned char)v[n - 1]))
      n--;
    if (n > 0)
      snprintf(out, len, "%.*s", (int)n, v);
    break; /* one line is enough; hybrid parts name the same model */
  }
  fclose(f);
}

static int topo_read_virtualized(void)
{
#if defined(__x86_64__) || defined(__i386__)
  unsigned a, b, c, d;
  if (__get_cpuid(1, &a, &b, &c, &d))
    return (c >> 31) & 1;
#endif
  return 0;
}

static void topo_describe_cache(const struct topo_cpu *c, int level, struct topo_cache_info *out)
{
  memset(out, 0, sizeof(*out));
  if (!c || !c->set[level])
    return;
  out->size = c->size[level];
  out->nshare = hwloc_bitmap_weight(c->set[level]);
  /* hwloc truncates to fit and always terminates. */
  hwloc_bitmap_list_snprintf(out->cpus, sizeof(out->cpus), c->set[level]);
}

/* Fill the cache and model fields of st->info from the table. */
static void topo_summarise(struct topo_state *st)
{
  const struct topo_cpu *ref = topo_cpu_get(st, sched_getcpu());
  for (int c = 0; !ref && c < st->ncpus; c++)
    ref = topo_cpu_get(st, c);
  topo_describe_cache(ref, 1, &st->info.l1);
  topo_describe_cache(ref, 2, &st->info.l2);
  topo_describe_cache(ref, 3, &st->info.l3);
  topo_read_model(st->info.cpu_model, sizeof(st->info.cpu_model));
  /* A synthetic topology (tests) describes a machine, not this one. */
  st->info.virtualized = strcmp(st->info.src, "synthetic") != 0 && topo_read_virtualized();
  if (!st->info.cpu_model[0])
    snprintf(st->info.cpu_model, sizeof(st->info.cpu_model), "unknown");
  if (st->info.numa_nodes < 1)
    st->info.numa_nodes = 1;
}

/* --- loading ------------------------------------------------------------ */

static void topo_init_once(void)
{
  struct topo_state st = {0};
  if (topo_hwloc_load(&st, NULL) < 0) {
    topo_table_free(&st);
    memset(&st, 0, sizeof(st));
    log_warn("FMX-TOPO-HWLOC", "hwloc could not load the topology, reading /sys instead");
    if (topo_sysfs_load(&st, "/sys") < 0) {
      topo_table_free(&st);
      memset(&st, 0, sizeof(st));
      snprintf(st.info.src, sizeof(st.info.src), "none");
      /* Engines still work; only topology-derived defaults fall back. */
      log_warn("FMX-TOPO-NONE", "no topology from hwloc or /sys: cache-based defaults unused");
    }
  }
  topo_summarise(&st);
  topo_state = st;
}

static const struct topo_state *topo_ensure(void)
{
  pthread_once(&topo_once, topo_init_once);
  return &topo_state;
}

/* Swap a freshly loaded state in (tests only: see topo.h). */
static int topo_replace(int (*load)(struct topo_state *, const char *), const char *arg)
{
  if (!arg)
    return -EINVAL;
  topo_ensure(); /* so the lazy load cannot later overwrite this one */
  struct topo_state st = {0};
  if (load(&st, arg) < 0) {
    topo_table_free(&st);
    return -EINVAL;
  }
  topo_summarise(&st);
  pthread_mutex_lock(&topo_reload_lock);
  struct topo_state old = topo_state;
  topo_state = st;
  pthread_mutex_unlock(&topo_reload_lock);
  topo_table_free(&old);
  return 0;
}

int topo_load_synthetic(const char *desc)
{
  return topo_replace(topo_hwloc_load, desc);
}

int topo_load_sysfs(const char *sysfs_root)
{
  return topo_replace(topo_sysfs_load, sysfs_root);
}

/* --- queries ------------------------------------------------------------ */

const struct topo_info *topo_get(void)
{
  return &topo_ensure()->info;
}

/* This thread's allowed CPUs that the topology knows, as a bitmap the
 * caller frees; NULL when they cannot be read. */
static hwloc_bitmap_t topo_allowed(const struct topo_state *st)
{
  cpu_set_t mine;
  if (sched_getaffinity(0, sizeof mine, &mine) != 0)
    return NULL;
  hwloc_bitmap_t u = hwloc_bitmap_alloc();
  for (int c = 0; u && c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, &mine) && topo_cpu_get(st, c))
      hwloc_bitmap_set(u, (unsigned)c);
  return u;
}

/* The level spanned by this thread's allowed CPUs plus `cpu` (when known):
 * the smallest cache, else NUMA node, whose sharing set holds them all. */
static int topo_span_level(const struct topo_state *st, int cpu)
{
  hwloc_bitmap_t u = topo_allowed(st);
  if (!u)
    return TOPO_LEVEL_UNKNOWN;
  if (topo_cpu_get(st, cpu))
    hwloc_bitmap_set(u, (unsigned)cpu);
  const struct topo_cpu *f = topo_cpu_get(st, hwloc_bitmap_first(u));
  int level = f ? TOPO_LEVEL_NONE : TOPO_LEVEL_UNKNOWN;
  for (int l = TOPO_LEVEL_L1; f && l <= TOPO_NUMA; l++)
    if (f->set[l] && hwloc_bitmap_isincluded(u, f->set[l])) {
      level = l == TOPO_NUMA ? TOPO_LEVEL_NUMA : l;
      break;
    }
  hwloc_bitmap_free(u);
  return level;
}

int topo_shared_level(int cpu_a, int cpu_b)
{
  const struct topo_state *st = topo_ensure();
  if (cpu_a == TOPO_CPU_UNBOUND || cpu_b == TOPO_CPU_UNBOUND)
    return topo_span_level(st, cpu_a == TOPO_CPU_UNBOUND ? cpu_b : cpu_a);
  const struct topo_cpu *a = topo_cpu_get(st, cpu_a);
  if (!a || !topo_cpu_get(st, cpu_b))
    return TOPO_LEVEL_UNKNOWN;
  if (cpu_a == cpu_b)
    return TOPO_LEVEL_SAME_CPU;
  for (int l = TOPO_LEVEL_L1; l <= TOPO_LEVEL_L3; l++)
    if (a->set[l] && hwloc_bitmap_isset(a->set[l], (unsigned)cpu_b))
      return l;
  if (a->set[TOPO_NUMA] && hwloc_bitmap_isset(a->set[TOPO_NUMA], (unsigned)cpu_b))
    return TOPO_LEVEL_NUMA;
  return TOPO_LEVEL_NONE;
}

uint64_t topo_cache_size_shared(int cpu_a, int cpu_b)
{
  int level = topo_shared_level(cpu_a, cpu_b);
  if (level < TOPO_LEVEL_SAME_CPU || level > TOPO_LEVEL_L3)
    return 0;
  const struct topo_cpu *a = topo_cpu_get(topo_ensure(), cpu_a);
  /* One CPU shares all its caches with itself: the smallest is the first
   * present one (L1 unless the topology lacks it). */
  for (int l = level == TOPO_LEVEL_SAME_CPU ? TOPO_LEVEL_L1 : level; l <= TOPO_LEVEL_L3; l++)
    if (a->set[l])
      return a->size[l];
  return 0;
}

int topo_cache_nshare(int level, int cpu)
{
  const struct topo_cpu *c = topo_cpu_get(topo_ensure(), cpu);
  if (!c || level < 1 || level >= TOPO_NSETS || !c->set[level])
    return 0;
  return hwloc_bitmap_weight(c->set[level]);
}

int topo_current_cpu(void)
{
  return sched_getcpu();
}

int topo_home_cpu(void)
{
  const struct topo_state *st = topo_ensure();
  int cpu = sched_getcpu();
  const struct topo_cpu *c = topo_cpu_get(st, cpu);
  hwloc_bitmap_t u = c ? topo_allowed(st) : NULL;
  if (!u)
    return cpu < 0 ? -1 : cpu;
  /* Bound: every other allowed CPU is a hardware thread of this core
   * (shares its L1). */
  hwloc_bitmap_clr(u, (unsigned)cpu);
  int bound = hwloc_bitmap_iszero(u) || (c->set[TOPO_LEVEL_L1] && hwloc_bitmap_isincluded(u, c->set[TOPO_LEVEL_L1]));
  hwloc_bitmap_free(u);
  return bound ? cpu : TOPO_CPU_UNBOUND;
}
