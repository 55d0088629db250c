/* SPDX-License-Identifier: MIT */
/*
 * An endpoint's send pool: one memfd per endpoint, shared by all its
 * connections, so that shared memory grows with the peers by a small ring
 * each and not by a buffer each (docs/protocol.md, "Memory").
 *
 * Layout (offsets, never pointers):
 *
 *   [pool_hdr][state 0 .. state nbuf-1][buffer 0 .. buffer nbuf-1]
 *
 * Only the owner writes into its buffers: the payload of a record too long
 * for a connection's ring (a medium fragment, a long RTS) and the ring
 * engine's chunks. The record that names a buffer travels in the ring; the
 * receiver copies out of the owner's pool (mapped at connect) and hands
 * the buffer back by clearing its state word, on its own cache line. A
 * buffer's pages are touched only where written, and freed buffers are
 * reused last-in first-out: a pool costs the memory of what is in flight,
 * not its size.
 *
 * The owner keeps, per buffer, whom it is lent to: a partner that goes away
 * gives its buffers back, and no partner holds more than half the pool, so
 * one peer that stops taking its messages cannot stop our sends to others.
 */
#ifndef FMX_SHM_POOL_H
#define FMX_SHM_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define POOL_MAGIC 0x464d5850u /* "FMXP" */
#define POOL_VERSION 1

struct pool_hdr {
  uint32_t magic;
  uint32_t version;
  uint64_t size;
  uint64_t nbuf;
  uint64_t buf_size;
  uint64_t state_off;
  uint64_t data_off;
};

/* A buffer's handover word: the owner sets it before the record that names
 * the buffer is published, the receiver clears it (release) once copied. */
struct pool_state {
  uint32_t lent;
  uint8_t pad[60];
};
_Static_assert(sizeof(struct pool_state) == 64, "pool state layout");

/* Our own pool (the owner's view). Its lists are under `lock`: the
 * application and an offload channel (ring engine) both take buffers. */
struct shm_pool {
  pthread_mutex_t lock;
  void *base;
  size_t size;
  int fd;
  uint64_t nbuf, buf_size;
  struct pool_state *state;
  uint8_t *data;
  uint32_t *free_stack; /* free buffers, the last freed on top */
  uint32_t nfree;
  uint32_t *out;        /* lent buffers, in lending order (a ring of nbuf) */
  uint64_t out_head, nout;
  uint32_t **holder;    /* per buffer: the count of the partner it is lent to, NULL when free */
};

/* A peer's pool, mapped to copy out of. */
struct shm_pool_view {
  void *base;
  size_t size;
  uint64_t nbuf, buf_size;
  struct pool_state *state;
  uint8_t *data;
};

/* Create our pool: nbuf buffers of buf_size bytes. 0 or -errno. */
int pool_create(struct shm_pool *p, uint64_t nbuf, uint64_t buf_size);
void pool_destroy(struct shm_pool *p);
/* Lend a free buffer to the partner whose count of lent buffers is *held
 * (kept here, under the lock): its index, or -1 when none is free or the
 * partner holds half the pool. */
int64_t pool_take(struct shm_pool *p, uint32_t *held);
/* The partner counted in *held went away: its buffers come back (its peer
 * will not return them). */
void pool_forget(struct shm_pool *p, uint32_t *held);
static inline uint8_t *pool_buf(const struct shm_pool *p, uint64_t i) { return p->data + i * p->buf_size; }

/* Map a peer's pool from its fd (sealed, every number checked). 0, or -1
 * with *why set. */
int pool_view_attach(struct shm_pool_view *v, int fd, const char **why);
void pool_view_detach(struct shm_pool_view *v);
/* The peer's buffer i holding len bytes, or NULL when i or len is out of
 * its pool (a peer bug or an attack). */
static inline const uint8_t *pool_view_buf(const struct shm_pool_view *v, uint64_t i, uint64_t len) {
  if (!v->base || i >= v->nbuf || len > v->buf_size) return NULL;
  return v->data + i * v->buf_size;
}
/* Done with the peer's buffer i (checked by pool_view_buf). */
static inline void pool_view_release(const struct shm_pool_view *v, uint64_t i) {
  __atomic_store_n(&v->state[i].lent, 0, __ATOMIC_RELEASE);
}

#endif
