/* SPDX-License-Identifier: MIT */
/* Intrusive doubly-linked lists (circular, with a head node). */
#ifndef FMX_BASE_LIST_H
#define FMX_BASE_LIST_H

#include <stddef.h>

struct list_node {
  struct list_node *next, *prev;
};

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))
#define list_entry(ptr, type, member) container_of(ptr, type, member)

static inline void list_init(struct list_node *h) { h->next = h->prev = h; }
static inline int list_empty(const struct list_node *h) { return h->next == h; }
static inline int list_linked(const struct list_node *n) { return n->next != NULL && n->next != n; }

static inline void list_add_tail(struct list_node *h, struct list_node *n) {
  n->prev = h->prev;
  n->next = h;
  h->prev->next = n;
  h->prev = n;
}

static inline void list_del(struct list_node *n) {
  n->prev->next = n->next;
  n->next->prev = n->prev;
  n->next = n->prev = n; /* so list_linked() says no and a second del is harmless */
}

#define list_for_each(pos, head) for ((pos) = (head)->next; (pos) != (head); (pos) = (pos)->next)
#define list_for_each_safe(pos, tmp, head) \
  for ((pos) = (head)->next, (tmp) = (pos)->next; (pos) != (head); (pos) = (tmp), (tmp) = (pos)->next)

#endif
