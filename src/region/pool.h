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
 * receiver copies out of the owner's pool (mapped at connect). A record's
 * buffer is free again once the ring's tail has passed the record (the
 * receiver pops it after copying out; shm.c keeps the pairs); a chunk's
 * once the receiver cleared its state word, on its own cache line. A
 * buffer's pages are touched only where written, and freed record buffers
 * are reused last-in first-out: a pool costs the memory of what is in
 * flight, not its size (chunks go round, pool.c says why).
 *
 * The owner keeps, per buffer, whom it is lent to: a partner that goes away
 * gives its buffers back, and no partner holds more than half the pool, so
 * one peer that stops taking its messages cannot stop our sends to others.
 */
#ifndef FMX_REGION_POOL_H
#define FMX_REGION_POOL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define POOL_MAGIC 0x464d5850u /* "FMXP" */
#define POOL_VERSION 1
/* Two classes of buffers: records' payloads (a medium fragment, a long
 * RTS), and the ring engine's chunks, longer and fewer. A buffer's index
 * runs over both, records' first. */
enum { POOL_REC = 0, POOL_CHUNK = 1, POOL_CLASSES };

struct pool_hdr {
  uint32_t magic;
  uint32_t version;
  uint64_t size;
  uint64_t state_off;
  struct { uint64_t n, size, off; } cls[POOL_CLASSES];
};

/* A buffer's handover word: the owner sets it before the record that names
 * the buffer is published, the receiver clears it (release) once copied. */
struct pool_state {
  uint32_t lent;
  uint8_t pad[60];
};
_Static_assert(sizeof(struct pool_state) == 64, "pool state layout");

struct pool_class {
  uint64_t n, size, first; /* buffers first .. first + n - 1, of size bytes */
  uint8_t *data;
  uint32_t *free_stack;    /* free ones: records' a stack (the last freed on top), chunks' a queue from free_head */
  uint32_t nfree, free_head;
  uint32_t *out;           /* chunks: lent ones, in lending order (a ring of n); records: shm.c keeps them */
  uint64_t out_head, nout;
  uint64_t used;           /* records: buffers first .. first + used - 1 were lent at least once */
};

/* Our own pool (the owner's view). Records' buffers are taken under the
 * endpoint's lock (every push holds it); chunks also by offload channels,
 * which never take it: their class has `lock`. */
struct buf_pool {
  pthread_mutex_t lock;   /* POOL_CHUNK's lists */
  void *base;
  size_t size;
  int fd;
  uint64_t nbuf;          /* both classes */
  struct pool_class cls[POOL_CLASSES];
  struct pool_state *state;
  uint32_t **holder;      /* per buffer: the count of the partner it is lent to, NULL when free */
  int chunks_faulted;     /* the chunks' pages are in (the first take_chunk) */
};

/* A peer's pool, mapped to copy out of. */
struct pool_view {
  void *base;
  size_t size;
  uint64_t n[POOL_CLASSES], bsize[POOL_CLASSES];
  uint8_t *data[POOL_CLASSES];
  struct pool_state *state;
};

/* Create our pool: n[c] buffers of size[c] bytes in class c. 0 or -errno. */
int pool_create(struct buf_pool *p, const uint64_t n[POOL_CLASSES], const uint64_t size[POOL_CLASSES]);
void pool_destroy(struct buf_pool *p);
/* Lend a free chunk to the partner whose count of chunks lent is *held
 * (kept here): its index, or -1 when none is free or the partner holds
 * half the class. */
int64_t pool_take_chunk(struct buf_pool *p, uint32_t *held);
/* The partner counted in held[POOL_CHUNK] went away: its chunks come back
 * (its peer will not return them). */
void pool_forget(struct buf_pool *p, uint32_t held[POOL_CLASSES]);
/* Records' buffers (POOL_REC, under the endpoint's lock): a free one, or
 * -1; and one given back (its record consumed, or never sent). */
static inline int64_t pool_get(struct buf_pool *p) {
  struct pool_class *k = &p->cls[POOL_REC];
  if (!k->nfree) return -1;
  uint32_t i = k->free_stack[--k->nfree];
  if (i - k->first >= k->used) k->used = i - k->first + 1;
  return (int64_t)i;
}
/* The record buffer pool_get would give next was never lent: its pages
 * were never touched. Records come off the stack in index order until
 * they come back, so the never-lent ones are those past `used`. */
static inline int pool_next_is_fresh(const struct buf_pool *p) {
  const struct pool_class *k = &p->cls[POOL_REC];
  return k->nfree && k->free_stack[k->nfree - 1] - k->first >= k->used;
}
static inline void pool_put(struct buf_pool *p, uint32_t i) {
  struct pool_class *k = &p->cls[POOL_REC];
  k->free_stack[k->nfree++] = i;
}
static inline uint8_t *pool_buf(const struct buf_pool *p, uint64_t i) {
  const struct pool_class *c = &p->cls[i >= p->cls[POOL_CHUNK].first];
  return c->data + (i - c->first) * c->size;
}
static inline uint64_t pool_class_size(const struct buf_pool *p, int c) { return p->cls[c].size; }

/* Map a peer's pool from its fd (sealed, every number checked). 0, or -errno
 * with *why set. */
int pool_view_attach(struct pool_view *v, int fd, const char **why);
void pool_view_detach(struct pool_view *v);
/* The peer's buffer i holding len bytes, or NULL when i or len is out of
 * its pool (a peer bug or an attack). */
static inline const uint8_t *pool_view_buf(const struct pool_view *v, uint64_t i, uint64_t len) {
  if (!v->base) return NULL;
  int c = i >= v->n[POOL_REC];
  uint64_t k = c ? i - v->n[POOL_REC] : i;
  if (k >= v->n[c] || len > v->bsize[c]) return NULL;
  return v->data[c] + k * v->bsize[c];
}
/* Done with the peer's buffer i (checked by pool_view_buf). */
static inline void pool_view_release(const struct pool_view *v, uint64_t i) {
  __atomic_store_n(&v->state[i].lent, 0, __ATOMIC_RELEASE);
}

#endif
