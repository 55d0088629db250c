/* SPDX-License-Identifier: MIT */
/* fmx_mem_alloc regions and peers' regions mapped here (see region.h). */
#include "region/region.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "platform/sys.h"

#ifndef SYS_pidfd_getfd
#define SYS_pidfd_getfd 438
#endif

struct region {
  uint8_t *base;
  uint64_t len;
  int fd;
  uint64_t ino;
};

static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct region *regs;
static uint32_t nregs, regs_cap;

__attribute__((visibility("default"))) fmx_return_t fmx_mem_alloc(size_t len, void **ptr) {
  if (!ptr) return FMX_BAD_ADDRESS;
  *ptr = NULL;
  if (len == 0) return FMX_BAD_ADDRESS;
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  if (len > UINT64_MAX - page) return FMX_NO_RESOURCES;
  uint64_t size = (len + page - 1) / page * page;
  int fd = sys_memfd("fmx-mem", size); /* sealed: it cannot shrink under a peer */
  if (fd < 0) return FMX_NO_SYSTEM_RESOURCES;
  struct stat st;
  void *p = fstat(fd, &st) == 0 ? sys_map_shared(fd, size) : NULL;
  if (!p) {
    close(fd);
    return FMX_NO_SYSTEM_RESOURCES;
  }
  pthread_mutex_lock(&reg_lock);
  if (nregs == regs_cap) {
    uint32_t cap = regs_cap ? 2 * regs_cap : 16;
    struct region *n = realloc(regs, cap * sizeof *n);
    if (!n) {
      pthread_mutex_unlock(&reg_lock);
      munmap(p, size);
      close(fd);
      return FMX_NO_RESOURCES;
    }
    regs = n;
    regs_cap = cap;
  }
  regs[nregs] = (struct region){p, size, fd, (uint64_t)st.st_ino};
  __atomic_store_n(&nregs, nregs + 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&reg_lock);
  *ptr = p;
  return FMX_SUCCESS;
}

__attribute__((visibility("default"))) fmx_return_t fmx_mem_free(void *ptr) {
  if (!ptr) return FMX_SUCCESS;
  pthread_mutex_lock(&reg_lock);
  for (uint32_t i = 0; i < nregs; i++) {
    if (regs[i].base != ptr) continue;
    struct region r = regs[i];
    regs[i] = regs[nregs - 1];
    __atomic_store_n(&nregs, nregs - 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&reg_lock);
    /* A peer that mapped it keeps the pages until its endpoint closes. */
    munmap(r.base, r.len);
    close(r.fd);
    return FMX_SUCCESS;
  }
  pthread_mutex_unlock(&reg_lock);
  return FMX_BAD_ADDRESS;
}

/* [a, a + l) lies inside the region. */
static int holds(const struct region *g, uintptr_t a, uint64_t l) {
  uintptr_t b = (uintptr_t)g->base;
  return a >= b && l <= g->len && a - b <= g->len - l;
}

int region_find(const fmx_seg_t *segs, uint32_t nseg, struct region_ref *ref) {
  if (!__atomic_load_n(&nregs, __ATOMIC_ACQUIRE)) return 0;
  int found = 0;
  pthread_mutex_lock(&reg_lock);
  const struct region *hit = NULL;
  for (uint32_t s = 0; s < nseg; s++) {
    uintptr_t a = (uintptr_t)segs[s].ptr;
    uint64_t l = segs[s].len;
    if (!l) continue;
    const struct region *in = hit && holds(hit, a, l) ? hit : NULL;
    for (uint32_t i = 0; !in && i < nregs; i++)
      if (holds(&regs[i], a, l)) in = &regs[i];
    if (!in || (hit && in != hit)) {
      hit = NULL;
      break;
    }
    hit = in;
  }
  if (hit) {
    *ref = (struct region_ref){(uint64_t)hit->fd, hit->ino, (uint64_t)(uintptr_t)hit->base, hit->len};
    found = 1;
  }
  pthread_mutex_unlock(&reg_lock);
  return found;
}

/* Take the peer's fd and check it is the sealed region it announced. */
static int take_fd(int pidfd, const struct region_ref *ref) {
  if (ref->fd > 0x7fffffff || ref->len == 0) return -EINVAL;
  long fd = syscall(SYS_pidfd_getfd, pidfd, (int)ref->fd, 0);
  if (fd < 0) return -errno;
  struct stat st;
  if (sys_memfd_check((int)fd, ref->len, ref->len, NULL) < 0 || fstat((int)fd, &st) != 0 ||
      (uint64_t)st.st_ino != ref->ino) {
    close((int)fd);
    return -ESTALE;
  }
  return (int)fd;
}

const struct region_map region_identity = {.ino = 0, .base = 0, .len = UINT64_MAX, .addr = NULL};

const struct region_map *region_map_peer(struct region_cache **cache, int pidfd, uint32_t peer_eid,
                                         const struct region_ref *ref) {
  if (!fmx_cfg.xmem || pidfd < 0) return NULL;
  struct region_cache *c = *cache;
  for (uint32_t i = 0; c && i < c->n; i++)
    if (c->m[i].ino == ref->ino && c->m[i].base == ref->base && c->m[i].len == ref->len) return &c->m[i];
  if (!c) c = *cache = sys_zalloc(sizeof *c);
  if (!c || c->n == REGION_MAPS) return NULL;
  int fd = take_fd(pidfd, ref);
  void *a = fd >= 0 ? sys_map_shared(fd, ref->len) : NULL;
  if (fd >= 0) close(fd);
  if (!a) {
    log_info("FMX-XMEM-UNMAPPED", "a region of endpoint %u (%llu bytes) cannot be mapped here (%s): cma used",
             peer_eid, (unsigned long long)ref->len, fd < 0 ? strerror(-fd) : "mmap failed");
    return NULL;
  }
  c->m[c->n] = (struct region_map){ref->ino, ref->base, ref->len, a};
  return &c->m[c->n++];
}

void region_cache_release(struct region_cache **cache) {
  struct region_cache *c = *cache;
  if (!c) return;
  for (uint32_t i = 0; i < c->n; i++) munmap(c->m[i].addr, c->m[i].len);
  free(c);
  *cache = NULL;
}
