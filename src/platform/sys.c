/* SPDX-License-Identifier: MIT */
#include "platform/sys.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif

int sys_memfd(const char *name, size_t size) {
  /* memfd, not /dev/shm: the memory dies with its last mapping and fd, so a
   * SIGKILLed process leaves nothing to clean. */
  int fd = memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) return -errno;
  if (ftruncate(fd, (off_t)size) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  /* Sealed size: a peer cannot shrink it under us and make us fault, and
   * (F_SEAL_SEAL) cannot add seals of its own. Peers refuse an unsealed
   * one (sys_memfd_check). */
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  return fd;
}

int sys_memfd_check(int fd, uint64_t min, uint64_t max, uint64_t *size) {
  struct stat st;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0) return -EBADF; /* not a memfd (files, sockets, pipes have no seals) */
  if ((seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW)) return -EPERM;
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) return -EBADF;
  if ((uint64_t)st.st_size < min || (uint64_t)st.st_size > max) return -ERANGE;
  if (size) *size = (uint64_t)st.st_size;
  return 0;
}

const char *sys_memfd_error(int err) {
  switch (err) {
    case -EBADF: return "not a sealable memfd";
    case -EPERM: return "not sealed against shrinking and growing";
    case -ERANGE: return "of a wrong size";
    default: return "unusable";
  }
}

unsigned long long sys_nofile_limit(void) {
  struct rlimit rl;
  return getrlimit(RLIMIT_NOFILE, &rl) == 0 ? (unsigned long long)rl.rlim_cur : 0;
}

void *sys_map_shared(int fd, size_t size) {
  void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  return p == MAP_FAILED ? NULL : p;
}

void sys_fault_in(void *p, size_t len) {
  for (size_t off = 0; off < len; off += 4096) __atomic_fetch_add((uint64_t *)((uint8_t *)p + off), 0, __ATOMIC_RELAXED);
}

int sys_pidfd_open(pid_t pid) {
  long fd = syscall(SYS_pidfd_open, pid, 0);
  return fd < 0 ? -errno : (int)fd;
}

int sys_futex_wait(uint32_t *addr, uint32_t val, int64_t timeout_ns) {
  struct timespec ts, *tp = NULL;
  if (timeout_ns >= 0) {
    ts.tv_sec = timeout_ns / 1000000000;
    ts.tv_nsec = timeout_ns % 1000000000;
    tp = &ts;
  }
  /* Not FUTEX_PRIVATE: the word lives in memory shared with other processes. */
  long r = syscall(SYS_futex, addr, FUTEX_WAIT, val, tp, NULL, 0);
  return r < 0 ? -errno : 0;
}

void sys_futex_wake(uint32_t *addr) { syscall(SYS_futex, addr, FUTEX_WAKE, 0x7fffffff, NULL, NULL, 0); }

/* Advance an iovec cursor by n bytes. */
static void iov_advance(struct iovec *iov, size_t *niov, size_t *first, size_t n) {
  while (n && *first < *niov) {
    struct iovec *v = &iov[*first];
    if (n < v->iov_len) {
      v->iov_base = (char *)v->iov_base + n;
      v->iov_len -= n;
      return;
    }
    n -= v->iov_len;
    (*first)++;
  }
}

#define CMA_IOV_MAX 1024

ssize_t sys_cma_copy(pid_t pid, int write, const struct iovec *local, size_t nlocal,
                     const struct iovec *remote, size_t nremote, size_t len) {
  if (nlocal > CMA_IOV_MAX || nremote > CMA_IOV_MAX) return -EINVAL;
  struct iovec l[CMA_IOV_MAX], r[CMA_IOV_MAX];
  memcpy(l, local, nlocal * sizeof *l);
  memcpy(r, remote, nremote * sizeof *r);
  size_t lf = 0, rf = 0, done = 0;
  while (done < len && lf < nlocal && rf < nremote) {
    ssize_t n = write ? process_vm_writev(pid, l + lf, nlocal - lf, r + rf, nremote - rf, 0)
                      : process_vm_readv(pid, l + lf, nlocal - lf, r + rf, nremote - rf, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      return done ? (ssize_t)done : -errno;
    }
    if (n == 0) return done ? (ssize_t)done : -EFAULT;
    done += (size_t)n;
    iov_advance(l, &nlocal, &lf, (size_t)n);
    iov_advance(r, &nremote, &rf, (size_t)n);
  }
  return (ssize_t)done;
}

int sys_membarrier_register(void) {
  long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (q < 0 || !(q & MEMBARRIER_CMD_GLOBAL_EXPEDITED)) return -ENOSYS;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_GLOBAL_EXPEDITED, 0, 0) == 0 ? 0 : -errno;
}

void sys_membarrier_global(void) { syscall(SYS_membarrier, MEMBARRIER_CMD_GLOBAL_EXPEDITED, 0, 0); }

int sys_membarrier_private_register(void) {
  long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);
  if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED)) return -ENOSYS;
  return syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 ? 0 : -errno;
}

int sys_membarrier_private(void) { return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0 ? 0 : -errno; }

/* A simulated clock and random numbers (tests/sim: one process, no
 * threads, time advanced by the simulator); NULL and 0: the real ones. */
static uint64_t (*sim_clock)(void);
static uint64_t sim_seed;

void sys_sim_set(uint64_t (*now)(void), uint64_t seed) {
  sim_clock = now;
  sim_seed = seed;
}

/* A clock in ns, or the simulator's, which stands for both. */
static inline uint64_t clock_ns(clockid_t id) {
  if (__builtin_expect(sim_clock != NULL, 0)) return sim_clock();
  struct timespec ts;
  clock_gettime(id, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t sys_now_ns(void) { return clock_ns(CLOCK_MONOTONIC); }

uint64_t sys_wall_ns(void) { return clock_ns(CLOCK_REALTIME); }

uint64_t sys_random64(void) {
  if (sim_seed) { /* splitmix64: the same run gives the same sessions and seqs */
    uint64_t z = (sim_seed += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, 0) != sizeof v) v = sys_now_ns() ^ ((uint64_t)getpid() << 32);
  return v;
}

/* The host's NIC id for the shm board: derived from /etc/machine-id (or the
 * boot id), folded to 48 bits like a MAC so it fits MX's NIC id. */
uint64_t sys_host_id(void) {
  static uint64_t id;
  if (id) return id;
  char buf[64] = {0};
  FILE *f = fopen("/etc/machine-id", "r");
  if (!f) f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (!fgets(buf, sizeof buf, f)) buf[0] = 0;
    fclose(f);
  }
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (char *p = buf; *p && *p != '\n'; p++) h = (h ^ (unsigned char)*p) * 1099511628211ull;
  h &= 0xffffffffffffull;
  if (h == 0) h = 1;
  id = h;
  return id;
}

/* The kernel's count of runnable tasks (the 4th field of /proc/loadavg,
 * "R/T"), every namespace's: network namespaces on one machine share its
 * cores. One read of a short file (a few microseconds). */
int sys_runnable_tasks(void) {
  char buf[128];
  int fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  ssize_t n;
  do n = read(fd, buf, sizeof buf - 1);
  while (n < 0 && errno == EINTR);
  close(fd);
  if (n <= 0) return -1;
  buf[n] = 0;
  int running = -1;
  if (sscanf(buf, "%*s %*s %*s %d/", &running) != 1) return -1;
  return running;
}

uint64_t sys_alloc_fail_at;
static uint64_t alloc_count;

/* Only the Nth counted allocation fails, once, so a test can walk N over
 * every allocation of a run and see each failure handled. */
static int alloc_fails(void) {
  if (__builtin_expect(sys_alloc_fail_at == 0, 1)) return 0;
  return __atomic_add_fetch(&alloc_count, 1, __ATOMIC_RELAXED) == sys_alloc_fail_at;
}

void sys_alloc_fail_set(uint64_t n) {
  sys_alloc_fail_at = n;
  __atomic_store_n(&alloc_count, 0, __ATOMIC_RELAXED);
}

void *sys_alloc(size_t n) { return alloc_fails() ? NULL : malloc(n); }
void *sys_zalloc(size_t n) { return alloc_fails() ? NULL : calloc(1, n); }
