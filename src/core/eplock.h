/* SPDX-License-Identifier: MIT */
/*
 * ep->lock, biased to the thread that opened the endpoint (docs/protocol.md,
 * Endpoint lock). An MPI rank, or
 * any program that drives an endpoint from one thread, takes and gives it
 * back with plain stores: no atomic read-modify-write on every call (two
 * per call with a mutex: 12-19% of the 8 B message rate, 5-8% of the ping-pong
 * half round trip, measured with the lock compiled out).
 *
 * The owner announces itself (owner_in = 1) and then reads the mode; any
 * other thread takes the mutex, sets the mode to REVOKED, and fences every
 * thread of the process (membarrier PRIVATE_EXPEDITED), so that the owner
 * either is seen inside (and is waited for) or sees REVOKED and takes the
 * mutex too: the asymmetric Dekker of ep_wake, with the cost on the rare
 * side. fmx's own threads (the listener, the offload channels) are that
 * rare side; an application thread other than the owner that takes the
 * lock more than EPL_MAX_REVOKES times turns the bias off for good: the
 * endpoint is shared, and every thread then takes the mutex, as before.
 * Without membarrier, and under TSan (which does not model it), the bias is
 * off from the start.
 */
#ifndef FMX_CORE_EPLOCK_H
#define FMX_CORE_EPLOCK_H

#include <pthread.h>

enum { EPL_OFF = 0, EPL_BIASED, EPL_REVOKED };

struct ep_lock {
  pthread_mutex_t mu;
  const void *owner; /* the owner thread's token, fixed at init */
  int mode;          /* EPL_*: written under mu only */
  int owner_in;      /* the owner holds the lock without mu */
  int held_fast;     /* the holder came in by the owner's path (read by it at unlock) */
  unsigned revokes;  /* by application threads other than the owner */
  /* While the holder runs application code that may call fmx back (an
   * unexpected-message handler, ep_nest_begin), its own takes and gives
   * only count: it holds the lock already. Other threads wait as ever. */
  const void *nest_owner; /* the holder's token, or NULL */
  unsigned nest_depth;
};

/* This thread's token (its address is unique among live threads). */
extern __thread char epl_token;

void ep_lock_init(struct ep_lock *l);
void ep_lock_fini(struct ep_lock *l);
void ep_lock_slow(struct ep_lock *l);
void ep_unlock_slow(struct ep_lock *l);
int ep_trylock_slow(struct ep_lock *l);
/* Called once by each thread of fmx's own: it takes endpoint locks rarely,
 * and never becomes an owner or turns a bias off. */
void ep_lock_library_thread(void);

/* The owner's way in: 1 if it holds the lock now (the bias stands). */
static inline int ep_lock_fast(struct ep_lock *l) {
  if (l->owner != &epl_token) return 0;
  __atomic_store_n(&l->owner_in, 1, __ATOMIC_RELAXED);
  __atomic_signal_fence(__ATOMIC_SEQ_CST); /* the other side fences for us */
  if (__atomic_load_n(&l->mode, __ATOMIC_ACQUIRE) == EPL_BIASED) {
    l->held_fast = 1;
    return 1;
  }
  __atomic_store_n(&l->owner_in, 0, __ATOMIC_RELEASE);
  return 0;
}

/* The holder, inside application code it called (ep_nest_begin)? */
static inline int ep_lock_nested(struct ep_lock *l) {
  return __builtin_expect(__atomic_load_n(&l->nest_owner, __ATOMIC_RELAXED) == &epl_token, 0);
}

static inline void ep_lock_take(struct ep_lock *l) {
  if (ep_lock_nested(l)) {
    l->nest_depth++;
    return;
  }
  if (!ep_lock_fast(l)) ep_lock_slow(l);
}

static inline void ep_lock_give(struct ep_lock *l) {
  if (__builtin_expect(l->nest_depth != 0, 0)) {
    l->nest_depth--;
    return;
  }
  if (l->held_fast) {
    l->held_fast = 0;
    __atomic_store_n(&l->owner_in, 0, __ATOMIC_RELEASE);
    return;
  }
  ep_unlock_slow(l);
}

/* 0 taken, nonzero busy. */
static inline int ep_lock_try(struct ep_lock *l) {
  if (ep_lock_nested(l)) return 1; /* busy: its holder is in application code */
  return ep_lock_fast(l) ? 0 : ep_trylock_slow(l);
}

/* The holder is about to run application code that may call fmx on this
 * endpoint (and ends it): those calls find the lock theirs. */
static inline void ep_nest_begin(struct ep_lock *l) { __atomic_store_n(&l->nest_owner, &epl_token, __ATOMIC_RELAXED); }
static inline void ep_nest_end(struct ep_lock *l) { __atomic_store_n(&l->nest_owner, NULL, __ATOMIC_RELAXED); }

#define ep_lock(ep) ep_lock_take(&(ep)->lock)
#define ep_unlock(ep) ep_lock_give(&(ep)->lock)
#define ep_trylock(ep) ep_lock_try(&(ep)->lock)

#endif
