/* SPDX-License-Identifier: MIT */
/* The topology's per-CPU table, shared by its sources (topo.c: hwloc,
 * topo_sysfs.c: the fallback) and its queries. platform/ only. */
#ifndef FMX_PLATFORM_TOPO_INT_H
#define FMX_PLATFORM_TOPO_INT_H

#include <hwloc.h>
#include <stdint.h>

#include "platform/topo.h"

#define TOPO_NSETS 5 /* index 1..3: cache level, 4: NUMA node; 0 unused */
#define TOPO_NUMA 4

struct topo_cpu {
  int present;
  uint64_t size[TOPO_NSETS];       /* cache size per level, 0 if absent */
  hwloc_bitmap_t set[TOPO_NSETS];  /* CPUs sharing it; NULL if absent */
};

struct topo_state {
  struct topo_info info;
  int ncpus;            /* length of cpu[]: highest OS index + 1 */
  struct topo_cpu *cpu;
};

int topo_table_alloc(struct topo_state *st, int ncpus);
const struct topo_cpu *topo_cpu_get(const struct topo_state *st, int cpu);
/* Record `set` as the sharing set of `cpu` at `level` (1..3 caches, 4 the
 * NUMA node) unless one is known; topo_cpu_cache: caches 1..3 only. */
void topo_cpu_set(struct topo_state *st, int cpu, int level, uint64_t size, hwloc_const_bitmap_t set);
void topo_cpu_cache(struct topo_state *st, int cpu, int level, uint64_t size, hwloc_const_bitmap_t set);
/* The sysfs source: fill st from the tree at root; 0 or -errno. */
int topo_sysfs_load(struct topo_state *st, const char *root);

#endif
