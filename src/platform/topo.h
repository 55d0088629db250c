/* SPDX-License-Identifier: MIT */
/*
 * topo.h - the machine topology, as the bulk-engine selector and the
 * threshold defaults need it: which caches two CPUs share, how large they
 * are, and how many CPUs compete for them (DESIGN.md section 6).
 *
 * The topology is read once, lazily, on the first call of any function here
 * (hwloc; /sys/devices/system/cpu when hwloc cannot load) and cached for the
 * life of the process. Every CPU of the host is described, including CPUs
 * outside this process's cpuset, because a peer in another container or
 * cgroup may run there.
 *
 * CPU numbers are OS indexes (as sched_getcpu() returns them).
 *
 * Thread safety: every function may be called from any thread, except
 * topo_load_synthetic/topo_load_sysfs (tests only), which replace the cached
 * topology and must not race with any other call here.
 */
#ifndef FMX_PLATFORM_TOPO_H
#define FMX_PLATFORM_TOPO_H

#include <stdint.h>

struct topo_cache_info {
  uint64_t size;  /* bytes; 0 if the machine has no such cache */
  int nshare;     /* PUs sharing it */
  char cpus[64];  /* those PUs as an hwloc list string ("0-1,4"), may be cut */
};

struct topo_info {
  int ncores;     /* physical cores (PUs if the topology has no core objects) */
  int npus;       /* hardware threads */
  int numa_nodes; /* at least 1 */
  /* Data/unified caches of the CPU the first caller of topo_get ran on (the
   * first CPU if that is unknown). Instruction caches are not described. */
  struct topo_cache_info l1, l2, l3;
  char cpu_model[64]; /* "model name" of /proc/cpuinfo, else hwloc's CPUModel */
  /* 1 when the CPU says a hypervisor runs us (CPUID.1:ECX bit 31 on x86):
   * the cache sizes are then what the hypervisor passes on, often the
   * host's whole L3 "shared" by the guest's few CPUs alone. */
  int virtualized;
  char src[32];       /* "hwloc", "sysfs" (fallback), "synthetic" (tests) or
                         "none" (nothing readable: every query says unknown) */
};

/* Levels returned by topo_shared_level. */
enum topo_level {
  TOPO_LEVEL_UNKNOWN = -1, /* a CPU number is not in the topology */
  TOPO_LEVEL_SAME_CPU = 0,
  TOPO_LEVEL_L1 = 1,
  TOPO_LEVEL_L2 = 2,
  TOPO_LEVEL_L3 = 3,
  TOPO_LEVEL_NUMA = 4, /* no shared cache, same NUMA node */
  TOPO_LEVEL_NONE = 5, /* nothing shared */
};

/* The cached summary; never NULL (zeros and "unknown" if nothing could be
 * read). Valid until process exit, or until a test reloads the topology. */
const struct topo_info *topo_get(void);

/* The lowest cache level (1..3) two CPUs share; see enum topo_level and
 * TOPO_CPU_UNBOUND. */
int topo_shared_level(int cpu_a, int cpu_b);

/* Size in bytes of the smallest cache both CPUs share (their L1 when
 * cpu_a == cpu_b), 0 if they share none or a CPU is unknown. */
uint64_t topo_cache_size_shared(int cpu_a, int cpu_b);

/* How many PUs share `cpu`'s cache of `level` (1..3; 4 gives the PUs of its
 * NUMA node). 0 if there is no such cache or the CPU is unknown. */
int topo_cache_nshare(int level, int cpu);

/* The CPU this thread runs on now (sched_getcpu), -1 if unknown. Only a
 * hint: the thread may migrate right after. */
int topo_current_cpu(void);

/* Where this thread lives: its CPU when its affinity holds that CPU alone
 * (or hardware threads of its core), TOPO_CPU_UNBOUND when the scheduler
 * may move it over several cores, -1 if unknown. topo_shared_level with
 * TOPO_CPU_UNBOUND on either side answers for this thread's allowed CPUs
 * (plus the other side's CPU): the peer is taken to be as free as we are
 * (ranks started alike), so two unbound ranks on one L3 share the L3, not
 * whichever core each ran on when they met. */
#define TOPO_CPU_UNBOUND (-2)
int topo_home_cpu(void);

/* Tests only. Replace the cached topology with an hwloc synthetic one, e.g.
 * "pack:2 l3:1 l2:2 core:1 pu:1" (see hwloc's "Synthetic topologies";
 * attributes such as "l3:1(size=16MiB)" set cache sizes). PUs are numbered
 * 0..n-1 in depth-first order. Returns 0, or -errno if hwloc rejects `desc`
 * (the previous topology is then kept). */
int topo_load_synthetic(const char *desc);

/* Tests only. Replace the cached topology with the one read from a sysfs
 * tree rooted at `sysfs_root` ("/sys" for the real one) without hwloc,
 * i.e. the fallback path. Returns 0, or -errno if no CPU could be read there
 * (the previous topology is then kept). */
int topo_load_sysfs(const char *sysfs_root);

#endif /* FMX_PLATFORM_TOPO_H */
