/* SPDX-License-Identifier: MIT */
/*
 * An endpoint's shared descriptor (a memfd page every peer maps): the
 * futex word a sleeper waits on and the count of sleepers, so that a peer
 * (a process, an offload channel) that published something can wake it.
 * Below every layer that wakes: the core sleeps on it, transports and bulk
 * engines ring it.
 */
#ifndef FMX_PLATFORM_WAKE_H
#define FMX_PLATFORM_WAKE_H

#include <stdint.h>

struct ep_desc {
  uint32_t magic;
  uint32_t version;
  _Alignas(64) uint32_t wake_seq; /* futex word */
  uint32_t sleepers;              /* threads blocked (or about to) on wake_seq */
  uint32_t closed;
};
#define EP_DESC_MAGIC 0x464d5844u /* "FMXD" */
#define EP_DESC_VERSION 1
#define EP_DESC_SIZE 4096

/* Wake a peer that may sleep on its descriptor (1 if it did). Dekker
 * pattern: we publish (a record, a freed slot), then read `sleepers`; the
 * sleeper counts itself in `sleepers`, then looks again. One side needs a
 * full fence between its store and its load. With membarrier the sleeper
 * pays it (a system call on the slow path it is taking anyway, ep_wait)
 * and every send skips its mfence, which on x86 would wait for the
 * published line to leave the store buffer. Without membarrier (old
 * kernels), the waker fences. Inline: every push calls it. */
extern int ep_asym_fence; /* membarrier gives the sleeper the fence (wake.c; fmx_init sets it) */
/* Bump the futex word and wake its sleepers. */
void ep_wake_sleepers(struct ep_desc *d);
static inline int ep_wake(struct ep_desc *d) {
  if (!d) return 0;
#ifdef __SANITIZE_THREAD__
  /* TSan does not model fences: an RMW gives the same order, slower. */
  if (!__atomic_fetch_add(&d->sleepers, 0, __ATOMIC_SEQ_CST)) return 0;
#else
  if (!ep_asym_fence)
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
  else
    __atomic_signal_fence(__ATOMIC_SEQ_CST); /* compiler barrier only */
  if (!__atomic_load_n(&d->sleepers, __ATOMIC_RELAXED)) return 0;
#endif
  ep_wake_sleepers(d);
  return 1;
}

#endif
