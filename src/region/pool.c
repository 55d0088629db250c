/* SPDX-License-Identifier: MIT */
#include "region/pool.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "platform/sys.h"

#define ALIGN_UP(x, a) (((x) + (a) - 1) & ~((uint64_t)(a) - 1))
#define POOL_MAX_BUFS (1u << 20)

static int layout(struct pool_hdr *h, const uint64_t n[POOL_CLASSES], const uint64_t size[POOL_CLASSES]) {
  memset(h, 0, sizeof *h);
  h->magic = POOL_MAGIC;
  h->version = POOL_VERSION;
  h->state_off = 4096;
  uint64_t off = ALIGN_UP(h->state_off + (n[0] + n[1]) * sizeof(struct pool_state), 4096);
  for (int c = 0; c < POOL_CLASSES; c++) {
    if (n[c] < 2 || n[c] > POOL_MAX_BUFS || size[c] < 4096 || size[c] % 4096) return -EINVAL;
    h->cls[c].n = n[c];
    h->cls[c].size = size[c];
    h->cls[c].off = off;
    off += n[c] * size[c];
  }
  h->size = off;
  return 0;
}

int pool_create(struct buf_pool *p, const uint64_t n[POOL_CLASSES], const uint64_t size[POOL_CLASSES]) {
  struct pool_hdr h;
  memset(p, 0, sizeof *p);
  p->fd = -1;
  if (layout(&h, n, size) < 0) return -EINVAL;
  p->nbuf = n[0] + n[1];
  p->holder = calloc(p->nbuf, sizeof *p->holder);
  for (int c = 0; c < POOL_CLASSES; c++)
    if (!(p->cls[c].free_stack = calloc(n[c], sizeof(uint32_t)))) goto nomem;
  if (!(p->cls[POOL_CHUNK].out = calloc(n[POOL_CHUNK], sizeof(uint32_t)))) goto nomem;
  if (!p->holder) goto nomem;
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
  p->state = (struct pool_state *)((uint8_t *)p->base + h.state_off);
  for (int c = 0; c < POOL_CLASSES; c++) {
    struct pool_class *k = &p->cls[c];
    k->n = n[c];
    k->size = size[c];
    k->first = c ? n[0] : 0;
    k->data = (uint8_t *)p->base + h.cls[c].off;
    /* Records: the class's first buffer on top of the stack; chunks: first
     * in the queue. The first sends touch the first pages. */
    for (uint64_t i = 0; i < k->n; i++) k->free_stack[i] = (uint32_t)(c == POOL_REC ? k->first + k->n - 1 - i : k->first + i);
    k->nfree = (uint32_t)k->n;
  }
  pthread_mutex_init(&p->lock, NULL);
  return 0;
nomem:
  pool_destroy(p);
  return -ENOMEM;
}

void pool_destroy(struct buf_pool *p) {
  if (p->base) {
    munmap(p->base, p->size);
    pthread_mutex_destroy(&p->lock);
  }
  if (p->fd >= 0) close(p->fd);
  for (int c = 0; c < POOL_CLASSES; c++) {
    free(p->cls[c].free_stack);
    free(p->cls[c].out);
  }
  free(p->holder);
  memset(p, 0, sizeof *p);
  p->fd = -1;
}

static int is_back(const struct buf_pool *p, uint32_t i) {
  return p->holder[i] == NULL || __atomic_load_n(&p->state[i].lent, __ATOMIC_ACQUIRE) == 0;
}

/* A chunk back in the queue of free ones: chunks are reused first in,
 * first out, so the sender writes lines the receiver read a whole class
 * ago (out of its cache) and not the ones it just read: the ring engine
 * moved 16 MiB 15% slower with chunks reused last in, first out. */
static void back(struct buf_pool *p, struct pool_class *k, uint32_t i) {
  if (p->holder[i]) (*p->holder[i])--;
  p->holder[i] = NULL;
  k->free_stack[(k->free_head + k->nfree++) % k->n] = i;
}

/* Take back what receivers returned of class k: from the oldest lent
 * buffer on while they are back (peers mostly return in order); when that
 * frees nothing and none is free, or `all`, every lent one (one slow peer
 * must not hide the others' returns). */
static void reclaim(struct buf_pool *p, struct pool_class *k, int all) {
  int any = 0;
  while (k->nout && is_back(p, k->out[k->out_head])) {
    back(p, k, k->out[k->out_head]);
    if (++k->out_head == k->n) k->out_head = 0;
    k->nout--;
    any = 1;
  }
  if (!all && (any || k->nfree)) return;
  uint64_t kept = 0;
  for (uint64_t j = 0; j < k->nout; j++) {
    uint32_t i = k->out[(k->out_head + j) % k->n];
    if (is_back(p, i))
      back(p, k, i);
    else
      k->out[(k->out_head + kept++) % k->n] = i;
  }
  k->nout = kept;
}

int64_t pool_take_chunk(struct buf_pool *p, uint32_t *held) {
  struct pool_class *k = &p->cls[POOL_CHUNK];
  uint64_t share = k->n / 2;
  pthread_mutex_lock(&p->lock);
  if (!p->chunks_faulted) {
    /* The ring engine runs from here: fault its chunks in now, not in the
     * middle of its first transfers (adapt would time the faults and keep
     * cma for a while: 1 MiB ping-pong at 14 GB/s instead of 45). Never
     * lent yet, so nobody reads them: an add of 0 writes nothing. */
    sys_fault_in(k->data, k->n * k->size);
    p->chunks_faulted = 1;
  }
  int64_t i = -1;
  reclaim(p, k, *held >= share); /* at its share: are its own ones back? */
  if (*held < share && k->nfree) {
    i = k->free_stack[k->free_head];
    k->free_head = (uint32_t)((k->free_head + 1) % k->n);
    k->nfree--;
    p->holder[i] = held;
    (*held)++;
    __atomic_store_n(&p->state[i].lent, 1, __ATOMIC_RELAXED); /* published by the record naming it */
    k->out[(k->out_head + k->nout++) % k->n] = (uint32_t)i;
  }
  pthread_mutex_unlock(&p->lock);
  return i;
}

void pool_forget(struct buf_pool *p, uint32_t held[POOL_CLASSES]) {
  if (!p->base) return;
  pthread_mutex_lock(&p->lock);
  for (uint64_t i = 0; i < p->nbuf; i++)
    if (p->holder[i] == &held[POOL_CHUNK]) p->holder[i] = NULL; /* back at the next reclaim */
  held[POOL_CHUNK] = 0;
  pthread_mutex_unlock(&p->lock);
}

int pool_view_attach(struct pool_view *v, int fd, const char **why) {
  memset(v, 0, sizeof *v);
  uint64_t fsize;
  int err = sys_memfd_check(fd, 4096, 1ull << 40, &fsize);
  if (err < 0) {
    *why = sys_memfd_error(err);
    return err;
  }
  *why = "a malformed pool";
  void *base = sys_map_shared(fd, (size_t)fsize);
  if (!base) return -ENOMEM;
  struct pool_hdr h;
  memcpy(&h, base, sizeof h); /* one snapshot: the peer may keep writing */
  uint64_t n = h.cls[0].n + h.cls[1].n;
  int ok = h.magic == POOL_MAGIC && h.version == POOL_VERSION && h.size == fsize && h.state_off >= sizeof h &&
           h.cls[0].n <= POOL_MAX_BUFS && h.cls[1].n <= POOL_MAX_BUFS && h.state_off <= fsize &&
           n * sizeof(struct pool_state) <= fsize - h.state_off;
  for (int c = 0; ok && c < POOL_CLASSES; c++)
    ok = h.cls[c].size <= (1ull << 30) && h.cls[c].off >= h.state_off + n * sizeof(struct pool_state) &&
         h.cls[c].off <= fsize && h.cls[c].n * h.cls[c].size <= fsize - h.cls[c].off;
  if (!ok) {
    munmap(base, (size_t)fsize);
    return -EPROTO;
  }
  v->base = base;
  v->size = (size_t)fsize;
  v->state = (struct pool_state *)((uint8_t *)base + h.state_off);
  for (int c = 0; c < POOL_CLASSES; c++) {
    v->n[c] = h.cls[c].n;
    v->bsize[c] = h.cls[c].size;
    v->data[c] = (uint8_t *)base + h.cls[c].off;
  }
  return 0;
}

void pool_view_detach(struct pool_view *v) {
  if (v->base) munmap(v->base, v->size);
  memset(v, 0, sizeof *v);
}
