/* SPDX-License-Identifier: MIT */
#include "net/wheel.h"

static struct list_node *slot_of(struct net_wheel *w, uint64_t tick) { return &w->slot[tick % NET_WHEEL_SLOTS]; }

void net_wheel_init(struct net_wheel *w, uint64_t tick_ns, uint64_t now) {
  w->tick_ns = tick_ns ? tick_ns : 1;
  w->at = now / w->tick_ns;
  w->soonest = 0;
  w->armed = 0;
  for (int i = 0; i < NET_WHEEL_SLOTS; i++) list_init(&w->slot[i]);
}

void net_timer_init(struct net_timer *t) {
  list_init(&t->node);
  t->due = 0;
}

void net_wheel_arm(struct net_wheel *w, struct net_timer *t, uint64_t due) {
  if (net_timer_armed(t)) {
    if (t->due <= due) return;
    list_del(&t->node);
  } else {
    w->armed++;
  }
  t->due = due;
  uint64_t tick = due / w->tick_ns;
  /* The wheel is taken from its first timer's tick: an idle one skips the
   * ticks it slept through; one due before the rest takes it back. */
  if (w->armed == 1 || tick < w->at) w->at = tick;
  list_add_tail(slot_of(w, tick), &t->node);
  if (!w->soonest || due < w->soonest) w->soonest = due;
}

void net_wheel_cancel(struct net_wheel *w, struct net_timer *t) {
  if (!net_timer_armed(t)) return;
  list_del(&t->node);
  if (!--w->armed) w->soonest = 0;
}

struct net_timer *net_wheel_expire(struct net_wheel *w, uint64_t now) {
  if (!w->armed) return NULL;
  uint64_t tick = now / w->tick_ns;
  /* Behind by a turn or more: one look at every slot finds them all. */
  if (tick > w->at + NET_WHEEL_SLOTS) w->at = tick - NET_WHEEL_SLOTS;
  for (;;) {
    struct list_node *h = slot_of(w, w->at), *pos;
    uint64_t next = (w->at + 1) * w->tick_ns; /* the least a timer left here may be due */
    list_for_each(pos, h) {
      struct net_timer *t = list_entry(pos, struct net_timer, node);
      if (t->due <= now) {
        net_wheel_cancel(w, t);
        return t;
      }
      if (t->due < next) next = t->due;
    }
    if (w->at >= tick) {
      w->soonest = next;
      return NULL;
    }
    w->at++;
  }
}
