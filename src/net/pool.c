/* SPDX-License-Identifier: MIT */
/* An endpoint's packet buffers: see pool.h. */
#include <stdlib.h>
#include <string.h>

#include "net/pool.h"

void net_pool_init(struct net_pool *p, size_t size, uint32_t keep) {
  memset(p, 0, sizeof *p);
  p->size = size < sizeof(void *) ? sizeof(void *) : size;
  p->keep = keep;
}

void net_pool_fini(struct net_pool *p) {
  while (p->free) {
    void *b = p->free;
    memcpy(&p->free, b, sizeof p->free);
    free(b);
  }
  p->nfree = 0;
}

uint8_t *net_pool_get(struct net_pool *p) {
  uint8_t *b = p->free;
  if (b) {
    memcpy(&p->free, b, sizeof p->free);
    p->nfree--;
  } else if ((b = malloc(p->size)) != NULL) {
    p->allocs++;
  } else {
    return NULL;
  }
  p->out++;
  return b;
}

void net_pool_put(struct net_pool *p, uint8_t *b) {
  if (!b) return;
  p->out--;
  if (p->nfree >= p->keep) {
    free(b);
    return;
  }
  memcpy(b, &p->free, sizeof p->free);
  p->free = b;
  p->nfree++;
}
