/* SPDX-License-Identifier: MIT */
/* Thin wrappers over the system calls fmx depends on. */
#ifndef FMX_PLATFORM_SYS_H
#define FMX_PLATFORM_SYS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

int sys_memfd(const char *name, size_t size);          /* fd or -errno */
/* Check a memfd received from a peer before mapping it: sealed against
 * shrinking and growing (else the peer could truncate it and make us
 * fault), a regular file of size in [min, max] (*size). 0 or -errno
 * (sys_memfd_error names it). */
int sys_memfd_check(int fd, uint64_t min, uint64_t max, uint64_t *size);
const char *sys_memfd_error(int err);
/* RLIMIT_NOFILE's soft limit, for messages (0 if unknown). */
unsigned long long sys_nofile_limit(void);
void *sys_map_shared(int fd, size_t size);             /* NULL on error (errno set) */
/* Fault in the pages of [p, p + len) of a shared mapping for writing,
 * changing nothing (an atomic add of 0 per page, 8-byte aligned p): only
 * for memory nobody else writes yet. */
void sys_fault_in(void *p, size_t len);
int sys_pidfd_open(pid_t pid);                         /* fd or -errno */
int sys_futex_wait(uint32_t *addr, uint32_t val, int64_t timeout_ns); /* shared futex */
void sys_futex_wake(uint32_t *addr);
/* process_vm_readv that loops on partial transfers: the kernel moves at most
 * 0x7ffff000 bytes per call (MAX_RW_COUNT) and stops at the first faulting
 * page. Returns bytes moved or -errno. write != 0 uses process_vm_writev. */
ssize_t sys_cma_copy(pid_t pid, int write, const struct iovec *local, size_t nlocal,
                     const struct iovec *remote, size_t nremote, size_t len);
/* Asymmetric fence (membarrier GLOBAL_EXPEDITED): register once per process;
 * 0 when available. sys_membarrier_global() then orders memory on every CPU
 * running a registered process, so the fast side can skip its fence. */
int sys_membarrier_register(void);
void sys_membarrier_global(void);
/* The same for this process's threads only (PRIVATE_EXPEDITED). */
int sys_membarrier_private_register(void);
int sys_membarrier_private(void);
/* malloc/calloc for the message paths: one place where a test can make the
 * Nth of them fail (sys_alloc_fail_at = N, 0: never; set by the core from
 * FMX_FAULT_ALLOC). */
extern uint64_t sys_alloc_fail_at;
/* The Nth allocation from now fails (0: none). */
void sys_alloc_fail_set(uint64_t n);
void *sys_alloc(size_t n);
void *sys_zalloc(size_t n);
uint64_t sys_now_ns(void);                             /* CLOCK_MONOTONIC, or the simulator's */
uint64_t sys_wall_ns(void); /* CLOCK_REALTIME (the kernel's stamps on packets received), or the simulator's */
uint64_t sys_random64(void);
/* The simulator's clock (now) and random seed (not 0) in place of the
 * real ones, for the whole process; NULL, 0: back to them. */
void sys_sim_set(uint64_t (*now)(void), uint64_t seed);
uint64_t sys_host_id(void);                            /* stable id of this host */
int sys_runnable_tasks(void); /* tasks running or runnable on this kernel now (/proc/loadavg), or -1 */

#endif
