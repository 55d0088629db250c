/* SPDX-License-Identifier: MIT */
/*
 * Adaptive spin-then-block. A waiter polls for FMX_SPIN_US, then announces
 * itself in the endpoint's shared descriptor (sleepers) and sleeps on the
 * wake_seq futex. A peer that pushes a record, frees ring room or fills a
 * bulk slot checks sleepers and bumps wake_seq (ep_wake), so a 2-core
 * machine with many busy processes does not livelock: sleepers yield the
 * cores to those with work.
 *
 * The spin adapts per endpoint: a wait that ends while spinning lets the
 * next one spin a little longer (up to FMX_SPIN_US); one that had to sleep
 * but ended within FMX_SPIN_US makes the next spin twice its length; one
 * longer than FMX_SPIN_US halves the next spin (down to FMX_SPIN_US / 64).
 * A ping-pong keeps the full spin; a rank that waits long behind others
 * (more ranks than cores) stops burning the CPU they need.
 */
#include "bulk/engine.h"
#include "base/config.h"
#include "core/fmx_int.h"
#include "core/transport.h"
#include "platform/sys.h"

#include <poll.h>
#include <time.h>

/* Longer than a small message's round trip (0.3-1 us here, more in a VM
 * under load): a wait this long is not a ping-pong about to end. */
#define YIELD_AFTER_NS 5000

/* Whether a wait past YIELD_AFTER_NS gives the core away at its clock
 * reads (now). Crowded: the one we wait for may be queued behind us. A
 * large transfer in flight: an offload channel of ours may be the one
 * moving it (as the last poll saw it). Otherwise the peer has a core of its
 * own, and a yield that finds nobody else runnable costs a system call
 * and helps: 8 B message rate 5.9 M/s against 5.4 without, 1 KiB 4.1 M/s
 * against 2.0 (2 ranks on 2 cores, paired runs, AMD EPYC VM; a burst of
 * PAUSEs instead did not help); but one that finds another task, not a
 * peer, hands it our core for a time slice: with a busy loop of another
 * process on one rank's core, 8 B half round trips took 16-30 us
 * yielding, 0.4 us not (vader 0.5). So such a yield (back after more than
 * YIELD_SLICE_NS: the busy loop's slice was 2.8 ms here, while yields with
 * nobody else runnable came back within 0.4 ms, interrupts and the host's
 * own preemption included) stops this endpoint's uncrowded yields for
 * YIELD_QUIET_NS: one time slice lost per YIELD_QUIET_NS at most. */
#define YIELD_SLICE_NS 1000000ull
#define YIELD_QUIET_NS 200000000ull
static int yield_when_long(struct fmx_endpoint *ep, uint64_t now, int inflight) {
  if (__atomic_load_n(&ep->pe.crowded, __ATOMIC_RELAXED) || inflight) return 1;
  return now >= __atomic_load_n(&ep->yield_quiet_until, __ATOMIC_RELAXED);
}

static void yield_long(struct fmx_endpoint *ep, uint64_t now) {
  ep_give_core(ep);
  uint64_t back = sys_now_ns();
  if (back - now > YIELD_SLICE_NS && !__atomic_load_n(&ep->pe.crowded, __ATOMIC_RELAXED))
    __atomic_store_n(&ep->yield_quiet_until, back + YIELD_QUIET_NS, __ATOMIC_RELAXED);
}

/* Work only we can do (a receiver-driven copy), or a pipelined transfer
 * whose peer is copying its half right now (a ring slot was filled or freed
 * within the longest spin): never sleep on it. Sleeping there costs a futex
 * wake per slot, the ring engine then moved 16 MiB at 1-2 GB/s instead of
 * 9-11 (2026-11-23). A ring transfer whose peer stopped entering the library
 * goes quiet and the waiter may sleep again. */
static int has_local_work(struct fmx_endpoint *ep) {
  struct list_node *pos;
  uint64_t now = 0;
  int work = 0;
  /* A medium message from another endpoint of this process, cut short:
   * its sender's queue holds the rest (no room in the ring or the pool
   * then), and nobody may be in fmx on that endpoint but us. */
  for (uint32_t i = 0; ep->nsiblings && i < ep->npartners; i++) {
    struct partner *p = ep->partners[i];
    const struct medium_rx *m = proto_medium(&p->pp);
    if (p->t.bulk->same_process && !p->t.bulk->is_self && m && (m[0].busy || m[1].busy)) return 3;
  }
  list_for_each(pos, &ep->pe.bulk) {
    struct proto_msg *r = list_entry(pos, struct proto_msg, bnode);
    /* Its other end is an endpoint of this process: we progress it. */
    if (r->xfer.peer->same_process && !r->xfer.peer->is_self) return 3;
    if (work) continue;
    /* A channel moving it all wakes us when done: we may sleep. */
    if (r->xfer.job && !r->xfer.engine->offload_helps) continue;
    if (!r->xfer.send && r->xfer.engine->receiver_copies) work = 1;
    else if ((now = now ? now : sys_now_ns()) - r->moved_ns < fmx_cfg.spin_us * 1000ull) work = 1;
    if (work && !ep->nsiblings) break;
  }
  return work;
}

/* One locked look: a progress pass, then check.
 * busy: 1 if we must not sleep (local work), 2 if only short sleeps (a
 * request deadline may fall meanwhile), 3 (odd: no sleep either) if we must make
 * progress on the other endpoints of this process (ep_progress_siblings).
 * start (the wait's first poll only): with a rendezvous in flight the
 * wait's start is stamped there, under the lock (adapt.c times the transfer
 * from it); else it stays 0, and a small message's wait, which ends before
 * the 16th poll reads the clock, never pays for one.
 * inflight: set to whether a large transfer is in flight. */
static int poll_once(struct fmx_endpoint *ep, int (*check)(struct fmx_endpoint *, void *), void *arg, int *busy,
                     uint64_t *start, int *inflight) {
  ep_lock(ep);
  if (start && !list_empty(&ep->pe.bulk)) {
    *start = sys_now_ns();
    if (offload_in_wait == 1) adapt_wait_ns = *start; /* the outermost wait (ep_wait counted it) */
  }
  ep_progress_locked(ep);
  int r = check(ep, arg);
  int work = busy || ep->nsiblings ? has_local_work(ep) : 0;
  if (busy) *busy = work ? work : ep->ntimed ? 2 : 0;
  if (inflight) *inflight = !list_empty(&ep->pe.bulk);
  ep_unlock(ep);
  if (!r && work == 3) ep_progress_siblings(ep);
  return r;
}

/* waited: how long this wait took in all. A wait that slept but ended
 * within the longest spin would have been caught by spinning that long: spin
 * twice as long next time (a rendezvous ping-pong whose waits are a copy
 * long must not fall into sleeping on every message, which costs a futex
 * wake on both sides). Only waits longer than the longest spin shrink it. */
static void adapt_spin(struct fmx_endpoint *ep, uint64_t spin, uint64_t max_spin, int slept, uint64_t waited) {
  uint64_t next;
  if (!slept)
    next = spin + spin / 8 + 1000;
  else if (waited < max_spin)
    next = 2 * waited > spin ? 2 * waited : spin;
  else
    next = spin / 2;
  if (next < max_spin / 64) next = max_spin / 64;
  if (next > max_spin) next = max_spin;
  __atomic_store_n(&ep->spin_ns, next, __ATOMIC_RELAXED);
}

/* Sleep until woken, at most ns. A transport whose peers cannot write
 * our wake word (net: other hosts) gives a descriptor to poll instead: it
 * turns readable when a packet arrives, and its timers bound the sleep
 * (with no partner there it gives none, only how soon to look for a
 * connect).
 * Wakes through the word (shm peers, our own threads) are then seen at the
 * next look: within SLEEP_MIXED_NS when the endpoint has partners of
 * another transport, within SLEEP_POLL_NS otherwise. */
#define SLEEP_MIXED_NS 1000000ll
#define SLEEP_POLL_NS 10000000ll
static int has_local_partners(struct fmx_endpoint *ep) {
  /* The partners in use, less ourselves and those on other hosts. */
  return ep->t.nlive > 1 + __atomic_load_n(&ep->nremote, __ATOMIC_RELAXED);
}

static void sleep_on(struct fmx_endpoint *ep, struct ep_desc *d, uint32_t seq, int64_t ns) {
  uint64_t cap = UINT64_MAX;
  ep_lock(ep);
  int fd = transports_wait_fd(ep, &cap);
  int mixed = fd >= 0 && has_local_partners(ep);
  ep_unlock(ep);
  if ((uint64_t)ns > cap) ns = (int64_t)cap;
  if (fd < 0) {
    sys_futex_wait(&d->wake_seq, seq, ns);
    return;
  }
  int64_t most = mixed ? SLEEP_MIXED_NS : SLEEP_POLL_NS;
  if (ns > most) ns = most;
  if (__atomic_load_n(&d->wake_seq, __ATOMIC_SEQ_CST) != seq) return;
  struct pollfd pfd = {.fd = fd, .events = POLLIN};
  struct timespec ts = {.tv_sec = ns / 1000000000ll, .tv_nsec = ns % 1000000000ll};
  ppoll(&pfd, 1, &ts, NULL);
}

static int wait_loop(struct fmx_endpoint *ep, uint32_t timeout_ms, int (*check)(struct fmx_endpoint *, void *), void *arg,
                     int *counted) {
  uint32_t wgen = __atomic_load_n(&ep->wakeup_gen, __ATOMIC_ACQUIRE);
  uint64_t start = 0;
  uint64_t max_spin = fmx_cfg.spin_us * 1000ull;
  uint64_t spin = __atomic_load_n(&ep->spin_ns, __ATOMIC_RELAXED);
  if (spin == 0 || spin > max_spin) spin = max_spin;
  int r = poll_once(ep, check, arg, NULL, &start, NULL);
  if (r) {
    if (spin < max_spin) adapt_spin(ep, spin, max_spin, 0, 0);
    return r;
  }
  uint64_t deadline = 0, spin_end = 0; /* from the first clock read below */
  if (counted) {
    __atomic_add_fetch(&ep->nwaiting, 1, __ATOMIC_RELAXED);
    *counted = 1;
  }
  int slept = 0;
  struct ep_desc *d = ep->pe.benv.desc;
  for (unsigned spins = 1;; spins++) {
    int busy = 0, inflight = 0;
    /* `busy` (a clock read when a transfer is in flight) and `inflight` are
     * only looked at on the polls that read the clock below: every 16th. */
    r = poll_once(ep, check, arg, spins % 16 ? NULL : &busy, NULL, spins % 16 ? NULL : &inflight);
    if (r) {
      adapt_spin(ep, spin, max_spin, slept, slept ? sys_now_ns() - start : 0);
      return r;
    }
    if (__atomic_load_n(&ep->wakeup_gen, __ATOMIC_ACQUIRE) != wgen) return 0;
    /* Reading the clock costs as much as a poll: look every 16 polls. */
    if (spins % 16) {
      /* Ranks outnumber cores (proto_ep.crowded): the one we wait for may be
       * queued behind us on this core, give it the core at every poll,
       * not every 16th past YIELD_AFTER_NS (alltoall on 2 cores, 4K/64K:
       * 8 ranks 42/232 -> 25/208 us, 32 ranks 766/6953 -> 559/6284 us). */
      if (__atomic_load_n(&ep->pe.crowded, __ATOMIC_RELAXED)) ep_give_core(ep);
      continue;
    }
    uint64_t now = sys_now_ns();
    ep_crowd_look(ep, now);
    if (!spin_end) {
      /* The first clock read, at the 16th poll: a small message's wait ends
       * before and pays for none. The wait counts from here, 16 polls late,
       * unless poll_once stamped its start (a rendezvous in flight). */
      if (!start) {
        start = now;
        if (offload_in_wait == 1) adapt_wait_ns = start;
      }
      deadline = timeout_ms == FMX_TIMEOUT_INFINITE ? UINT64_MAX : start + timeout_ms * 1000000ull;
      spin_end = start + spin;
    }
    if (now >= deadline) return 0;
    if (now < spin_end || (busy & 1)) {
      /* Past a small message's round trip, give the core to whoever may
       * be needed on it (yield_when_long). Costs a system call per 16
       * polls when nobody else is runnable. */
      if (now - start > YIELD_AFTER_NS && yield_when_long(ep, now, inflight)) yield_long(ep, now);
      continue;
    }
    __atomic_fetch_add(&d->sleepers, 1, __ATOMIC_SEQ_CST);
    uint32_t seq = __atomic_load_n(&d->wake_seq, __ATOMIC_SEQ_CST);
    /* Wakers skip their fence (ep_wake): fence every CPU for them, so a
     * record published before they read `sleepers` is visible to the poll
     * below, or they read our increment. */
    if (ep_asym_fence) sys_membarrier_global();
    r = poll_once(ep, check, arg, &busy, NULL, NULL);
    if (!r && !(busy & 1) && __atomic_load_n(&ep->wakeup_gen, __ATOMIC_ACQUIRE) == wgen) {
      /* Cap the sleep: a safety net, never the mechanism (peers wake us). */
      uint64_t left = deadline - now;
      int64_t ns = left > 1000000000ull ? 1000000000ll : (int64_t)left;
      /* A request deadline may fall while we sleep: look again soon. */
      if (busy == 2 && ns > 10000000) ns = 10000000;
      __atomic_fetch_add(&ep->counters[CNT_SLEEPS], 1, __ATOMIC_RELAXED);
      sleep_on(ep, d, seq, ns);
    }
    __atomic_fetch_sub(&d->sleepers, 1, __ATOMIC_SEQ_CST);
    slept = 1;
    if (r) {
      adapt_spin(ep, spin, max_spin, slept, sys_now_ns() - start);
      return r;
    }
    /* Back from sleep: spin a little again before the next block. */
    spin_end = sys_now_ns() + spin / 4;
  }
}

/* A sign of life for channel 0 (progress.c, app_away), given only while
 * something is watched: no clock, no locked instruction. */
static void bump_wait_gen(struct fmx_endpoint *ep) {
  __atomic_store_n(&ep->wait_gen, __atomic_load_n(&ep->wait_gen, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
}

/* While a thread waits here it is idle: what it matches it copies itself
 * (bulk_select offloads nothing automatically for it), and channel 0 does
 * not make progress on this endpoint for it (core/progress.c). */
int ep_wait(struct fmx_endpoint *ep, uint32_t timeout_ms, int (*check)(struct fmx_endpoint *, void *), void *arg) {
  /* Done already (an eager send, a message taken meanwhile): checked before
   * any progress pass, and the wait ends without its bookkeeping
   * (nwaiting, the spin's length, the clock). */
  ep_lock(ep);
  int r = check(ep, arg);
  ep_unlock(ep);
  /* From the unexpected-message handler no progress comes: a wait there
   * would only sleep out its timeout (unexp.c). */
  if (r || ep_in_handler(ep)) return r;
  int outer = offload_in_wait++ == 0, counted = 0;
  /* Something is watched: channel 0 may be looking (progress.c). */
  int life = outer && __atomic_load_n(&ep->nwatch, __ATOMIC_RELAXED) != 0;
  if (life) {
    bump_wait_gen(ep);
    progress_wait_begins(ep);
  }
  r = wait_loop(ep, timeout_ms, check, arg, outer ? &counted : NULL);
  if (outer) {
    /* Most waits are followed by another call soon (a ping-pong posts and
     * waits again): channel 0 leaves a watched endpoint alone for a moment
     * (progress.c stamps the time itself when the watch begins). */
    int watched = __atomic_load_n(&ep->nwatch, __ATOMIC_RELAXED) != 0;
    if (watched || life) __atomic_store_n(&ep->wait_left_ns, sys_now_ns(), __ATOMIC_RELAXED);
    if (counted) __atomic_sub_fetch(&ep->nwaiting, 1, __ATOMIC_RELAXED);
    if (watched) progress_kick(ep);
  }
  offload_in_wait--;
  if (life) bump_wait_gen(ep);
  return r;
}
