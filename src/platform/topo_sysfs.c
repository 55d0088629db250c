/* SPDX-License-Identifier: MIT */
/*
 * topo_sysfs.c - the topology from /sys/devices/system/cpu when hwloc
 * cannot load (topo.h; docs/topology.md): caches, cores and NUMA nodes
 * into the same per-CPU table hwloc fills.
 */
#define _GNU_SOURCE
#include "platform/topo_int.h"

#include <errno.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* First line of a small sysfs file, without its newline. */
static int topo_read_line(const char *path, char *buf, size_t len)
{
  FILE *f = fopen(path, "re");
  if (!f)
    return -errno;
  char *s = fgets(buf, (int)len, f);
  fclose(f);
  if (!s)
    return -EIO;
  buf[strcspn(buf, "\n")] = '\0';
  return 0;
}

/* A cpu list file ("0-3,8") into a new bitmap; NULL if absent or empty. */
static hwloc_bitmap_t topo_read_list(const char *path)
{
  char buf[4096];
  if (topo_read_line(path, buf, sizeof(buf)) < 0)
    return NULL;
  hwloc_bitmap_t set = hwloc_bitmap_alloc();
  if (set && (hwloc_bitmap_list_sscanf(set, buf) < 0 || hwloc_bitmap_iszero(set))) {
    hwloc_bitmap_free(set);
    set = NULL;
  }
  return set;
}

/* The kernel writes cache sizes as "%uK"; accept M and G too. */
static uint64_t topo_parse_size(const char *s)
{
  char *end;
  uint64_t v = strtoull(s, &end, 10);
  switch (toupper((unsigned char)*end)) {
  case 'K': return v << 10;
  case 'M': return v << 20;
  case 'G': return v << 30;
  default: return v;
  }
}

static void topo_sysfs_caches(struct topo_state *st, const char *root, int cpu)
{
  char path[512], buf[64];
  /* index0..N are usually dense, but nothing says so: probe a few more. */
  for (int i = 0; i < 16; i++) {
    snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/cache/index%d/level", root, cpu, i);
    if (topo_read_line(path, buf, sizeof(buf)) < 0)
      continue;
    int level = atoi(buf);
    snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/cache/index%d/type", root, cpu, i);
    if (topo_read_line(path, buf, sizeof(buf)) == 0 && strcmp(buf, "Instruction") == 0)
      continue;
    snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/cache/index%d/size", root, cpu, i);
    uint64_t size = topo_read_line(path, buf, sizeof(buf)) == 0 ? topo_parse_size(buf) : 0;
    snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/cache/index%d/shared_cpu_list",
             root, cpu, i);
    hwloc_bitmap_t set = topo_read_list(path);
    if (!set)
      continue;
    topo_cpu_cache(st, cpu, level, size, set);
    hwloc_bitmap_free(set);
  }
}

/* 1 if `cpu` is the first online CPU of its core (so each core counts once). */
static int topo_sysfs_core_leader(const char *root, int cpu, hwloc_const_bitmap_t online)
{
  char path[512];
  /* core_cpus_list appeared in Linux 5.7; thread_siblings_list is older. */
  snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/core_cpus_list", root, cpu);
  hwloc_bitmap_t set = topo_read_list(path);
  if (!set) {
    snprintf(path, sizeof(path), "%s/devices/system/cpu/cpu%d/topology/thread_siblings_list",
             root, cpu);
    set = topo_read_list(path);
  }
  if (!set)
    return 1;
  hwloc_bitmap_and(set, set, online);
  int first = hwloc_bitmap_first(set);
  hwloc_bitmap_free(set);
  return first < 0 || first == cpu;
}

static void topo_sysfs_numa(struct topo_state *st, const char *root, hwloc_const_bitmap_t online)
{
  char path[512];
  snprintf(path, sizeof(path), "%s/devices/system/node/online", root);
  hwloc_bitmap_t nodes = topo_read_list(path);
  if (!nodes) {
    /* No NUMA support in the kernel: one node holding every CPU. */
    st->info.numa_nodes = 1;
    for (int c = 0; c < st->ncpus; c++)
      if (st->cpu[c].present)
        topo_cpu_set(st, c, TOPO_NUMA, 0, online);
    return;
  }
  st->info.numa_nodes = hwloc_bitmap_weight(nodes);
  int n;
  hwloc_bitmap_foreach_begin(n, nodes) {
    snprintf(path, sizeof(path), "%s/devices/system/node/node%d/cpulist", root, n);
    hwloc_bitmap_t cpus = topo_read_list(path); /* NULL for memory-only nodes */
    if (cpus) {
      int c;
      hwloc_bitmap_foreach_begin(c, cpus) {
        if (c < st->ncpus && st->cpu[c].present)
          topo_cpu_set(st, c, TOPO_NUMA, 0, cpus);
      }
      hwloc_bitmap_foreach_end();
      hwloc_bitmap_free(cpus);
    }
  }
  hwloc_bitmap_foreach_end();
  hwloc_bitmap_free(nodes);
}

int topo_sysfs_load(struct topo_state *st, const char *root)
{
  char path[512];
  snprintf(path, sizeof(path), "%s/devices/system/cpu/online", root);
  hwloc_bitmap_t online = topo_read_list(path);
  if (!online)
    return -EIO;
  int rc = topo_table_alloc(st, hwloc_bitmap_last(online) + 1);
  if (rc == 0) {
    int cpu;
    hwloc_bitmap_foreach_begin(cpu, online) {
      st->cpu[cpu].present = 1;
      st->info.npus++;
      st->info.ncores += topo_sysfs_core_leader(root, cpu, online);
      topo_sysfs_caches(st, root, cpu);
    }
    hwloc_bitmap_foreach_end();
    topo_sysfs_numa(st, root, online);
    snprintf(st->info.src, sizeof(st->info.src), "sysfs");
  }
  hwloc_bitmap_free(online);
  return rc;
}
