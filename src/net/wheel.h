/* SPDX-License-Identifier: MIT */
/*
 * One timer structure for all of an endpoint's partners: a hashed timing
 * wheel. A timer sits in the slot of the tick it is due in (modulo the
 * slots); arming, moving and cancelling one is O(1), and taking those due
 * visits only the slots of the ticks that passed, so a partner with
 * nothing pending costs nothing at all, however many there are. A timer
 * due beyond one turn of the wheel stays in its slot and is passed over
 * once per turn.
 *
 * It knows no clock: the caller passes the time. Not thread-safe: the
 * endpoint's lock.
 */
#ifndef FMX_NET_WHEEL_H
#define FMX_NET_WHEEL_H

#include <stdint.h>

#include "base/list.h"

#define NET_WHEEL_SLOTS 1024

struct net_timer {
  struct list_node node; /* unlinked: not armed */
  uint64_t due;
};

struct net_wheel {
  uint64_t tick_ns;
  uint64_t at;      /* the tick taken up to: every timer of a tick before it was taken */
  uint64_t soonest; /* no timer is due before this (a lower bound; 0: none armed) */
  uint32_t armed;
  struct list_node slot[NET_WHEEL_SLOTS];
};

void net_wheel_init(struct net_wheel *w, uint64_t tick_ns, uint64_t now);
void net_timer_init(struct net_timer *t);
static inline int net_timer_armed(const struct net_timer *t) { return list_linked(&t->node); }
/* Due at `due`, or sooner where it was armed sooner already. */
void net_wheel_arm(struct net_wheel *w, struct net_timer *t, uint64_t due);
void net_wheel_cancel(struct net_wheel *w, struct net_timer *t);
/* A timer due by now, taken off the wheel (the caller arms it again if it
 * wants); NULL once none is. */
struct net_timer *net_wheel_expire(struct net_wheel *w, uint64_t now);
/* Whether a timer may be due by now (never a false no). */
static inline int net_wheel_due(const struct net_wheel *w, uint64_t now) { return w->armed && now >= w->soonest; }

#endif
