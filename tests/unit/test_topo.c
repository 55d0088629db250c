/* SPDX-License-Identifier: MIT */
/*
 * test_topo.c - the topology module: the real machine (hwloc and the sysfs
 * fallback must agree), hwloc synthetic topologies of known shape, and a
 * hand-made sysfs tree.
 */
#define _GNU_SOURCE
#include "platform/topo.h"

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                   \
  do {                                                                                     \
    if (!(cond)) {                                                                         \
      fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond);                      \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fputc('\n', stderr);                                                                 \
      failures++;                                                                          \
    }                                                                                      \
  } while (0)

#define CHECK_INT(got, want)                                                               \
  CHECK((long long)(got) == (long long)(want), "got %lld, want %lld", (long long)(got),     \
        (long long)(want))

#define MiB (1024ull * 1024)
#define KiB 1024ull

/* --- first use from several threads at once ------------------------------ */

static void *first_use(void *arg)
{
  *(const struct topo_info **)arg = topo_get();
  (void)topo_shared_level(0, 0);
  return NULL;
}

/* Must run before anything else touches the module: the lazy load is what
 * is being raced (run under -DFMX_TSAN=ON to check the once-init). */
static void test_concurrent_init(void)
{
  pthread_t th[4];
  const struct topo_info *seen[4] = {0};
  for (int i = 0; i < 4; i++)
    CHECK(pthread_create(&th[i], NULL, first_use, &seen[i]) == 0, "pthread_create");
  for (int i = 0; i < 4; i++)
    pthread_join(th[i], NULL);
  for (int i = 0; i < 4; i++)
    CHECK(seen[i] && seen[i] == topo_get() && seen[i]->npus >= 1, "thread %d saw %p", i,
          (const void *)seen[i]);
}

/* --- real machine --------------------------------------------------------- */

#define MAXCPU 64 /* enough to compare the two sources; more adds nothing */

static void test_real(void)
{
  const struct topo_info *ti = topo_get();
  CHECK(ti != NULL, "topo_get returned NULL");
  CHECK(strcmp(ti->src, "hwloc") == 0, "src = %s (hwloc could not load?)", ti->src);
  CHECK(ti->ncores >= 1, "ncores = %d", ti->ncores);
  CHECK(ti->npus >= ti->ncores, "npus %d < ncores %d", ti->npus, ti->ncores);
  CHECK(ti->numa_nodes >= 1, "numa_nodes = %d", ti->numa_nodes);
  CHECK(ti->cpu_model[0] != '\0', "empty cpu model");

  int cur = topo_current_cpu();
  CHECK(cur >= 0, "sched_getcpu failed");
  CHECK_INT(topo_shared_level(cur, cur), 0);
  CHECK_INT(topo_shared_level(-1, cur), -1);
  CHECK_INT(topo_shared_level(cur, 1 << 20), -1);

  /* Every machine this runs on reports an L2; an L3 wherever sysfs lists a
   * level-3 cache (some virtual machines hide it). */
  CHECK(ti->l2.size > 0, "no L2 size");
  CHECK(ti->l2.nshare >= 1 && ti->l2.cpus[0], "L2 nshare %d cpus '%s'", ti->l2.nshare,
        ti->l2.cpus);
  FILE *f = fopen("/sys/devices/system/cpu/cpu0/cache/index3/level", "r");
  if (f) {
    fclose(f);
    CHECK(ti->l3.size > 0, "sysfs has a level-3 cache but l3.size is 0");
    CHECK(ti->l3.nshare >= ti->l2.nshare, "L3 shared by %d < L2 by %d", ti->l3.nshare,
          ti->l2.nshare);
  }
  CHECK(topo_cache_size_shared(cur, cur) > 0, "a CPU shares no cache with itself");
  printf("real: %s, %d cores, %d PUs, %d NUMA, L1 %" PRIu64 " L2 %" PRIu64 " L3 %" PRIu64
         " (%s)\n",
         ti->cpu_model, ti->ncores, ti->npus, ti->numa_nodes, ti->l1.size, ti->l2.size,
         ti->l3.size, ti->src);

  /* The fallback must describe this machine as hwloc does. */
  static int level[MAXCPU][MAXCPU];
  static uint64_t size[MAXCPU][MAXCPU];
  int n = ti->npus < MAXCPU ? ti->npus : MAXCPU;
  struct topo_info hw = *ti;
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      level[a][b] = topo_shared_level(a, b);
      size[a][b] = topo_cache_size_shared(a, b);
    }
  CHECK_INT(topo_load_sysfs("/sys"), 0);
  ti = topo_get();
  CHECK(strcmp(ti->src, "sysfs") == 0, "src = %s", ti->src);
  CHECK_INT(ti->ncores, hw.ncores);
  CHECK_INT(ti->npus, hw.npus);
  CHECK_INT(ti->numa_nodes, hw.numa_nodes);
  CHECK_INT(ti->l2.size, hw.l2.size);
  CHECK_INT(ti->l3.size, hw.l3.size);
  CHECK(strcmp(ti->cpu_model, hw.cpu_model) == 0, "model '%s' vs '%s'", ti->cpu_model,
        hw.cpu_model);
  for (int a = 0; a < n; a++)
    for (int b = 0; b < n; b++) {
      CHECK(topo_shared_level(a, b) == level[a][b], "cpus %d,%d: sysfs level %d, hwloc %d", a,
            b, topo_shared_level(a, b), level[a][b]);
      CHECK(topo_cache_size_shared(a, b) == size[a][b], "cpus %d,%d: sysfs size %" PRIu64
            ", hwloc %" PRIu64, a, b, topo_cache_size_shared(a, b), size[a][b]);
    }
}

/* --- synthetic topologies ----------------------------------------------- */

static int load(const char *desc)
{
  int rc = topo_load_synthetic(desc);
  CHECK(rc == 0, "hwloc rejected synthetic '%s'", desc);
  return rc;
}

static void test_synthetic(void)
{
  /* Two PUs under one L2, pairs of L2s under one L3. */
  if (load("pack:1 l3:1(size=16MiB) l2:2(size=1MiB) l1d:2(size=32KiB) core:1 pu:1") == 0) {
    const struct topo_info *ti = topo_get();
    CHECK(strcmp(ti->src, "synthetic") == 0, "src = %s", ti->src);
    CHECK_INT(ti->ncores, 4);
    CHECK_INT(ti->npus, 4);
    CHECK_INT(ti->numa_nodes, 1);
    CHECK_INT(ti->l3.size, 16 * MiB);
    CHECK_INT(ti->l3.nshare, 4);
    CHECK_INT(ti->l2.size, 1 * MiB);
    CHECK_INT(ti->l2.nshare, 2);
    CHECK_INT(ti->l1.size, 32 * KiB);
    CHECK_INT(ti->l1.nshare, 1);
    CHECK_INT(topo_shared_level(0, 0), 0);
    CHECK_INT(topo_shared_level(0, 1), 2);
    CHECK_INT(topo_shared_level(1, 0), 2);
    CHECK_INT(topo_shared_level(0, 2), 3);
    CHECK_INT(topo_shared_level(3, 1), 3);
    CHECK_INT(topo_shared_level(0, 4), -1);
    CHECK_INT(topo_cache_size_shared(0, 0), 32 * KiB);
    CHECK_INT(topo_cache_size_shared(0, 1), 1 * MiB);
    CHECK_INT(topo_cache_size_shared(0, 3), 16 * MiB);
    CHECK_INT(topo_cache_size_shared(0, 9), 0);
    CHECK_INT(topo_cache_nshare(2, 3), 2);
    CHECK_INT(topo_cache_nshare(3, 3), 4);
    CHECK_INT(topo_cache_nshare(4, 3), 4);
    CHECK_INT(topo_cache_nshare(5, 3), 0);
    CHECK_INT(topo_cache_nshare(2, 4), 0);
  }

  /* A rank the scheduler may move (affinity over several cores) is
   * TOPO_CPU_UNBOUND; what it shares with a peer is the level its allowed
   * CPUs span with the peer's, not the core each ran on when they met. */
  cpu_set_t saved, two, one;
  CPU_ZERO(&two);
  CPU_SET(0, &two);
  CPU_SET(1, &two);
  CPU_ZERO(&one);
  CPU_SET(1, &one);
  if (sched_getaffinity(0, sizeof saved, &saved) == 0 && CPU_ISSET(0, &saved) && CPU_ISSET(1, &saved) &&
      load("pack:1 l3:1(size=16MiB) l2:2(size=1MiB) l1d:2(size=32KiB) core:1 pu:1") == 0) {
    CHECK(sched_setaffinity(0, sizeof two, &two) == 0, "setaffinity 0-1");
    CHECK_INT(topo_home_cpu(), TOPO_CPU_UNBOUND);
    CHECK_INT(topo_shared_level(TOPO_CPU_UNBOUND, TOPO_CPU_UNBOUND), 2);
    CHECK_INT(topo_shared_level(TOPO_CPU_UNBOUND, 1), 2);
    CHECK_INT(topo_shared_level(2, TOPO_CPU_UNBOUND), 3);
    CHECK_INT(topo_shared_level(TOPO_CPU_UNBOUND, 9), 2); /* unknown CPU: ours alone */
    CHECK(sched_setaffinity(0, sizeof one, &one) == 0, "setaffinity 1");
    CHECK_INT(topo_home_cpu(), 1);
    CHECK_INT(topo_shared_level(TOPO_CPU_UNBOUND, 3), 3);
    CHECK_INT(topo_shared_level(TOPO_CPU_UNBOUND, 1), 1); /* one CPU: its own L1 */
    sched_setaffinity(0, sizeof saved, &saved);
  }

  /* SMT siblings share L1; no L3 at all. */
  if (load("pack:1 l2:1 l1:2 core:1 pu:2") == 0) {
    const struct topo_info *ti = topo_get();
    CHECK_INT(ti->ncores, 2);
    CHECK_INT(ti->npus, 4);
    CHECK_INT(ti->l3.size, 0);
    CHECK_INT(ti->l3.nshare, 0);
    CHECK_INT(topo_shared_level(0, 1), 1);
    CHECK_INT(topo_shared_level(1, 2), 2);
    CHECK_INT(topo_cache_nshare(1, 0), 2);
    CHECK_INT(topo_cache_nshare(3, 0), 0);
  }

  /* Distinct packages, one NUMA node for the machine: same node only. */
  if (load("pack:2 l3:1 l2:2 core:1 pu:1") == 0) {
    CHECK_INT(topo_shared_level(0, 1), 3);
    CHECK_INT(topo_shared_level(0, 2), 4);
    CHECK_INT(topo_cache_size_shared(0, 2), 0);
    CHECK_INT(topo_get()->numa_nodes, 1);
  }

  /* Distinct packages, a NUMA node each: nothing shared. */
  if (load("pack:2 numa:1 l3:1 l2:1 core:2 pu:1") == 0) {
    CHECK_INT(topo_get()->numa_nodes, 2);
    CHECK_INT(topo_shared_level(0, 1), 2);
    CHECK_INT(topo_shared_level(1, 2), 5);
    CHECK_INT(topo_shared_level(3, 0), 5);
    CHECK_INT(topo_cache_nshare(4, 0), 2);
  }

  /* A bad description is refused and the previous topology stays. */
  CHECK(topo_load_synthetic("pack:2 bogus:3") < 0, "bad description accepted");
  CHECK(topo_load_synthetic(NULL) < 0, "NULL description accepted");
  CHECK_INT(topo_get()->numa_nodes, 2);
  CHECK_INT(topo_shared_level(1, 2), 5);
}

/* --- hand-made sysfs tree --------------------------------------------------- */

static char root[64];

static void put(const char *text, const char *fmt, ...)
{
  char path[512];
  int n = snprintf(path, sizeof(path), "%s/", root);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(path + n, sizeof(path) - (size_t)n, fmt, ap);
  va_end(ap);
  /* mkdir -p of the parent */
  for (char *p = path + strlen(root) + 1; (p = strchr(p, '/')) != NULL; p++) {
    *p = '\0';
    if (mkdir(path, 0700) < 0 && errno != EEXIST)
      fprintf(stderr, "mkdir %s: %s\n", path, strerror(errno));
    *p = '/';
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "create %s: %s\n", path, strerror(errno));
    failures++;
    return;
  }
  fprintf(f, "%s\n", text);
  fclose(f);
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
  (void)sb, (void)type, (void)ftw;
  return remove(path);
}

static void put_cache(int cpu, int idx, int level, const char *type, const char *size,
                      const char *shared)
{
  const char *d = "devices/system/cpu/cpu%d/cache/index%d/%s";
  char lv[8];
  snprintf(lv, sizeof(lv), "%d", level);
  put(lv, d, cpu, idx, "level");
  put(type, d, cpu, idx, "type");
  put(size, d, cpu, idx, "size");
  put(shared, d, cpu, idx, "shared_cpu_list");
}

/* Two NUMA nodes (plus a memory-only one); node 0: one SMT core (cpus 0-1)
 * sharing L1/L2; node 1: two cores (2, 3) sharing an L2. An L3 per node,
 * one L4 for all.
 * cpu 4 is offline, index numbering has a hole on cpu 3. */
static void test_sysfs_tree(void)
{
  snprintf(root, sizeof(root), "/tmp/fmx-topo-XXXXXX");
  if (!mkdtemp(root)) {
    CHECK(0, "mkdtemp: %s", strerror(errno));
    return;
  }
  put("0-3", "devices/system/cpu/online");
  put("0-2", "devices/system/node/online");
  put("0-1", "devices/system/node/node0/cpulist");
  put("2-3", "devices/system/node/node1/cpulist");
  put("", "devices/system/node/node2/cpulist");
  for (int c = 0; c < 4; c++) {
    const char *core = c < 2 ? "0-1" : c == 2 ? "2" : "3";
    const char *l1 = c < 2 ? "0-1" : c == 2 ? "2" : "3";
    const char *l2 = c < 2 ? "0-1" : "2-3";
    const char *l3 = c < 2 ? "0-1" : "2-3";
    /* the older file name only, on cpu 3 */
    put(core, c == 3 ? "devices/system/cpu/cpu%d/topology/thread_siblings_list"
                     : "devices/system/cpu/cpu%d/topology/core_cpus_list", c);
    int i = 0;
    put_cache(c, i++, 1, "Data", "48K", l1);
    put_cache(c, i++, 1, "Instruction", "64K", l1);
    if (c == 3)
      i++;
    put_cache(c, i++, 2, "Unified", "2048K", l2);
    put_cache(c, i++, 3, "Unified", "32M", l3);
    put_cache(c, i++, 4, "Unified", "128M", "0-3"); /* not described, not NUMA either */
  }
  put("0-7", "devices/system/cpu/cpu4/cache/index0/shared_cpu_list"); /* offline: ignored */

  CHECK(topo_load_sysfs("/nonexistent") < 0, "loaded a missing tree");
  CHECK_INT(topo_load_sysfs(root), 0);
  const struct topo_info *ti = topo_get();
  CHECK(strcmp(ti->src, "sysfs") == 0, "src = %s", ti->src);
  CHECK_INT(ti->npus, 4);
  CHECK_INT(ti->ncores, 3);
  CHECK_INT(ti->numa_nodes, 3);
  CHECK_INT(topo_shared_level(0, 1), 1);
  CHECK_INT(topo_shared_level(2, 3), 2);
  CHECK_INT(topo_shared_level(3, 2), 2);
  CHECK_INT(topo_shared_level(1, 2), 5);
  CHECK_INT(topo_shared_level(0, 4), -1);
  CHECK_INT(topo_cache_size_shared(0, 1), 48 * KiB);
  CHECK_INT(topo_cache_size_shared(3, 3), 48 * KiB);
  CHECK_INT(topo_cache_size_shared(2, 3), 2 * MiB);
  CHECK_INT(topo_cache_nshare(1, 0), 2);
  CHECK_INT(topo_cache_nshare(1, 2), 1);
  CHECK_INT(topo_cache_nshare(3, 3), 2);
  CHECK_INT(topo_cache_nshare(4, 2), 2);

  if (nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
    fprintf(stderr, "warning: could not remove %s\n", root);
}

int main(void)
{
  test_concurrent_init();
  test_real();
  test_synthetic();
  test_sysfs_tree();
  if (failures) {
    fprintf(stderr, "test_topo: %d check(s) failed\n", failures);
    return 1;
  }
  printf("test_topo: ok\n");
  return 0;
}
