/* SPDX-License-Identifier: MIT */
#include "shm/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform/sys.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))

static void layout(struct pool_hdr *h, uint64_t nbuf, uint64_t buf_size) {
  memset(h, 0, sizeof *h);
  h->magic = POOL_MAGIC;
  h->version = POOL_VERSION;
  h->nbuf = nbuf;
  h->buf_size = buf_size;
  h->state_off = 4096;
  h->data_off = ALIGN_UP(h->state_off + nbuf * sizeof(struct pool_state), 4096);
  h->size = h->data_off + nbuf * buf_size;
}

int pool_create(struct shm_pool *p, uint64_t nbuf, uint64_t buf_size) {
  struct pool_hdr h;
  memset(p, 0, sizeof *p);
  p->fd = -1;
  if (nbuf < 2 || nbuf > (1u << 20) || buf_size < 4096 || buf_size % 4096) return -EINVAL;
  layout(&h, nbuf, buf_size);
  p->free_stack = calloc(nbuf, sizeof *p->free_stack);
  p->out = calloc(nbuf, sizeof *p->out);
  p->holder = calloc(nbuf, sizeof *p->holder);
  if (!p->free_stack || !p->out || !p->holder) goto nomem;
  p->fd = sys_memfd("fmx-pool", h.size);
  if (p->fd < 0) {
    int e = p->fd;
    pool_destroy(p);
    return e;
  }
  p->base = sys_map_shared(p->fd, h.size);
  if (!p->base) goto nomem;
  memcpy(p->base, &h, sizeof h);
  p->size = h.size;
  p->nbuf = nbuf;
  p->buf_size = buf_size;
  p->state = (struct pool_state *)((uint8_t *)p->base + h.state_off);
  p->data = (uint8_t *)p->base + h.data_off;
  /* Buffer 0 on top: the first sends touch the first pages. */
  for (uint64_t i = 0; i < nbuf; i++) p->free_stack[i] = (uint32_t)(nbuf - 1 - i);
  p->nfree = (uint32_t)nbuf;
  pthread_mutex_init(&p->lock, NULL);
  return 0;
nomem:
  pool_destroy(p);
  return -ENOMEM;
}

void pool_destroy(struct shm_pool *p) {
  if (p->base) {
    munmap(p->base, p->size);
    pthread_mutex_destroy(&p->lock);
  }
  if (p->fd >= 0) close(p->fd);
  free(p->free_stack);
  free(p->out);
  free(p->holder);
  memset(p, 0, sizeof *p);
  p->fd = -1;
}

static int is_back(const struct shm_pool *p, uint32_t i) {
  return p->holder[i] == NULL || __atomic_load_n(&p->state[i].lent, __ATOMIC_ACQUIRE) == 0;
}

static void back(struct shm_pool *p, uint32_t i) {
  if (p->holder[i]) (*p->holder[i])--;
  p->holder[i] = NULL;
  p->free_stack[p->nfree++] = i;
}

/* Take back what receivers returned: from the oldest lent buffer on while
 * they are back (peers mostly return in order); when that frees nothing
 * and none is free, or `all`, every lent one (one slow peer must not hide
 * the others' returns). */
static void reclaim(struct shm_pool *p, int all) {
  int any = 0;
  while (p->nout && is_back(p, p->out[p->out_head])) {
    back(p, p->out[p->out_head]);
    p->out_head = (p->out_head + 1) % p->nbuf;
    p->nout--;
    any = 1;
  }
  if (!all && (any || p->nfree)) return;
  uint64_t kept = 0;
  for (uint64_t k = 0; k < p->nout; k++) {
    uint32_t i = p->out[(p->out_head + k) % p->nbuf];
    if (is_back(p, i))
      back(p, i);
    else
      p->out[(p->out_head + kept++) % p->nbuf] = i;
  }
  p->nout = kept;
}

int64_t pool_take(struct shm_pool *p, uint32_t *held) {
  pthread_mutex_lock(&p->lock);
  int64_t i = -1;
  uint64_t share = p->nbuf / 2;
  reclaim(p, *held >= share); /* at its share: are its own ones back? */
  if (*held < share && p->nfree) {
    i = p->free_stack[--p->nfree];
    p->holder[i] = held;
    (*held)++;
    __atomic_store_n(&p->state[i].lent, 1, __ATOMIC_RELAXED); /* published by the record naming it */
    p->out[(p->out_head + p->nout++) % p->nbuf] = (uint32_t)i;
  }
  pthread_mutex_unlock(&p->lock);
  return i;
}

void pool_forget(struct shm_pool *p, uint32_t *held) {
  if (!p->base) return;
  pthread_mutex_lock(&p->lock);
  for (uint64_t i = 0; i < p->nbuf; i++)
    if (p->holder[i] == held) p->holder[i] = NULL; /* back at the next reclaim */
  *held = 0;
  pthread_mutex_unlock(&p->lock);
}

int pool_view_attach(struct shm_pool_view *v, int fd, const char **why) {
  memset(v, 0, sizeof *v);
  uint64_t fsize;
  int err = sys_memfd_check(fd, 4096, 1ull << 40, &fsize);
  if (err < 0) {
    *why = sys_memfd_error(err);
    return -1;
  }
  *why = "a malformed pool";
  void *base = sys_map_shared(fd, (size_t)fsize);
  if (!base) return -1;
  struct pool_hdr h;
  memcpy(&h, base, sizeof h); /* one snapshot: the peer may keep writing */
  int ok = h.magic == POOL_MAGIC && h.version == POOL_VERSION && h.size == fsize && h.nbuf >= 2 &&
           h.nbuf <= (1u << 20) && h.buf_size >= 4096 && h.buf_size <= (1ull << 30) && h.state_off >= sizeof h &&
           h.state_off + h.nbuf * sizeof(struct pool_state) <= h.data_off && h.data_off <= fsize &&
           h.nbuf * h.buf_size <= fsize - h.data_off;
  if (!ok) {
    munmap(base, (size_t)fsize);
    return -1;
  }
  v->base = base;
  v->size = (size_t)fsize;
  v->nbuf = h.nbuf;
  v->buf_size = h.buf_size;
  v->state = (struct pool_state *)((uint8_t *)base + h.state_off);
  v->data = (uint8_t *)base + h.data_off;
  return 0;
}

void pool_view_detach(struct shm_pool_view *v) {
  if (v->base) munmap(v->base, v->size);
  memset(v, 0, sizeof *v);
}
