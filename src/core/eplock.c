/* SPDX-License-Identifier: MIT */
/* ep->lock's slow side: the mutex, and revoking the owner's bias
 * (eplock.h). */
#include "core/eplock.h"

#include <sched.h>
#include <unistd.h>

#include "platform/sys.h"

/* Application threads other than the owner may take an endpoint's lock
 * this often (each time a membarrier) before the bias goes for good. */
#define EPL_MAX_REVOKES 16

__thread char epl_token;
static __thread int epl_library;

void ep_lock_library_thread(void) { epl_library = 1; }

/* Registered at every endpoint's open, not once: a child of fork() has a
 * new address space whose registration starts empty. */
void ep_lock_init(struct ep_lock *l) {
  pthread_mutex_init(&l->mu, NULL);
  l->owner = &epl_token;
  l->owner_in = 0;
  l->held_fast = 0;
  l->revokes = 0;
  l->nest_owner = NULL;
  l->nest_depth = 0;
#ifdef __SANITIZE_THREAD__
  l->mode = EPL_OFF;
#else
  l->mode = sys_membarrier_private_register() == 0 ? EPL_BIASED : EPL_OFF;
#endif
}

void ep_lock_fini(struct ep_lock *l) { pthread_mutex_destroy(&l->mu); }

/* With mu held: make sure the owner is out and stays out until we give mu
 * back (mode REVOKED), or for good (mode OFF). */
static void revoke_bias(struct ep_lock *l) {
  if (l->mode != EPL_BIASED || l->owner == &epl_token) return;
  __atomic_store_n(&l->mode, EPL_REVOKED, __ATOMIC_RELAXED);
  /* Every thread of ours passes a full barrier: the owner's owner_in = 1
   * is visible below, or its next read of the mode sees REVOKED. */
  if (sys_membarrier_private() != 0) {
    /* Refused after registering (a seccomp filter added since): end the
     * bias, and give the owner's store the time a store buffer needs to
     * drain, by far, before looking at it. */
    __atomic_store_n(&l->mode, EPL_OFF, __ATOMIC_RELAXED);
    usleep(1000);
  }
  for (unsigned spins = 0; __atomic_load_n(&l->owner_in, __ATOMIC_ACQUIRE); spins++)
    if (spins > 64) sched_yield(); /* it may be preempted inside (2 cores) */
  if (!epl_library && ++l->revokes > EPL_MAX_REVOKES) __atomic_store_n(&l->mode, EPL_OFF, __ATOMIC_RELAXED);
}

void ep_lock_slow(struct ep_lock *l) {
  pthread_mutex_lock(&l->mu);
  revoke_bias(l);
  l->held_fast = 0;
}

int ep_trylock_slow(struct ep_lock *l) {
  if (pthread_mutex_trylock(&l->mu) != 0) return 1;
  /* Busy if the owner is inside: no fence spent to find it out. */
  if (l->mode == EPL_BIASED && l->owner != &epl_token && __atomic_load_n(&l->owner_in, __ATOMIC_ACQUIRE)) {
    pthread_mutex_unlock(&l->mu);
    return 1;
  }
  revoke_bias(l);
  l->held_fast = 0;
  return 0;
}

void ep_unlock_slow(struct ep_lock *l) {
  if (l->mode == EPL_REVOKED) __atomic_store_n(&l->mode, EPL_BIASED, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&l->mu);
}
