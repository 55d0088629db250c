/* SPDX-License-Identifier: MIT */
/* Partners by (endpoint id, session): see ptab.h. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "net/ptab.h"

static uint32_t hash(const struct net_ptab *t, uint32_t eid, uint32_t session) {
  uint32_t h = (session ^ t->seed) + eid * 0x9e3779b1u;
  h ^= h >> 16;
  h *= 0x85ebca6bu;
  h ^= h >> 13;
  h *= 0xc2b2ae35u;
  h ^= h >> 16;
  return h & (t->nb - 1);
}

void net_ptab_fini(struct net_ptab *t) {
  free(t->b);
  t->b = NULL;
  t->nb = t->n = 0;
}

/* Twice the chains, every entry moved to its new one: 0, or -ENOMEM. */
static int grow(struct net_ptab *t) {
  uint32_t nb = t->nb ? t->nb * 2 : NET_PTAB_FIRST;
  struct net_ptab_entry **b = calloc(nb, sizeof *b), **old = t->b;
  if (!b) return -ENOMEM;
  uint32_t onb = t->nb;
  t->b = b;
  t->nb = nb;
  for (uint32_t i = 0; i < onb; i++)
    for (struct net_ptab_entry *e = old[i], *next; e; e = next) {
      next = e->next;
      uint32_t h = hash(t, e->eid, e->session);
      e->next = b[h];
      b[h] = e;
    }
  free(old);
  return 0;
}

int net_ptab_init(struct net_ptab *t, uint32_t seed) {
  memset(t, 0, sizeof *t);
  t->seed = seed;
  return grow(t);
}

void net_ptab_add(struct net_ptab *t, struct net_ptab_entry *e, uint32_t eid, uint32_t session) {
  net_ptab_del(t, e);
  if (t->n >= t->nb) grow(t); /* else longer chains */
  e->eid = (uint16_t)eid; /* the wire carries no more */
  e->session = session;
  uint32_t h = hash(t, eid, session);
  e->next = t->b[h];
  t->b[h] = e;
  e->in = 1;
  t->n++;
}

void net_ptab_del(struct net_ptab *t, struct net_ptab_entry *e) {
  if (!e->in) return;
  if (!t->b) { /* the table went first (its endpoint closing) */
    e->in = 0;
    return;
  }
  for (struct net_ptab_entry **pp = &t->b[hash(t, e->eid, e->session)]; *pp; pp = &(*pp)->next)
    if (*pp == e) {
      *pp = e->next;
      break;
    }
  e->next = NULL;
  e->in = 0;
  t->n--;
}

struct net_ptab_entry *net_ptab_chain(const struct net_ptab *t, uint32_t eid, uint32_t session) {
  return t->b[hash(t, eid, session)];
}
