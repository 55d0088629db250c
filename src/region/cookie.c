/* SPDX-License-Identifier: MIT */
/* Declared regions and their cookies (cookie.h). */
#include "region/cookie.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "platform/sys.h"

static uint32_t slot(const struct region_table *t, uint64_t cookie) {
  /* The cookie is random already: its low bits spread evenly. */
  return (uint32_t)(cookie & (t->nbucket - 1));
}

static int grow(struct region_table *t) {
  uint32_t nb = t->nbucket ? 2 * t->nbucket : 16;
  struct region_entry **b = calloc(nb, sizeof *b);
  if (!b) return -ENOMEM;
  struct region_table n = {.bucket = b, .nbucket = nb, .n = t->n};
  for (uint32_t i = 0; i < t->nbucket; i++) {
    struct region_entry *e = t->bucket[i], *next;
    for (; e; e = next) {
      next = e->next;
      uint32_t s = slot(&n, e->cookie);
      e->next = b[s];
      b[s] = e;
    }
  }
  free(t->bucket);
  *t = n;
  return 0;
}

const struct region_entry *region_table_find(const struct region_table *t, uint64_t cookie) {
  if (!t->nbucket) return NULL;
  for (const struct region_entry *e = t->bucket[slot(t, cookie)]; e; e = e->next)
    if (e->cookie == cookie) return e;
  return NULL;
}

int region_table_add(struct region_table *t, const fmx_seg_t *segs, uint32_t nseg, uint32_t access,
                     uint64_t *cookie) {
  if (t->n >= t->nbucket && grow(t) < 0) return -ENOMEM;
  struct region_entry *e = calloc(1, sizeof *e);
  fmx_seg_t *copy = nseg ? malloc(nseg * sizeof *copy) : NULL;
  if (!e || (nseg && !copy)) {
    free(e);
    free(copy);
    return -ENOMEM;
  }
  uint32_t n = 0;
  for (uint32_t i = 0; i < nseg; i++) {
    if (!segs[i].len) continue; /* nothing to reach there */
    copy[n++] = segs[i];
    e->len += segs[i].len;
  }
  e->segs = copy;
  e->nseg = n;
  e->access = access;
  do e->cookie = sys_random64();
  while (!e->cookie || region_table_find(t, e->cookie));
  uint32_t s = slot(t, e->cookie);
  e->next = t->bucket[s];
  t->bucket[s] = e;
  t->n++;
  *cookie = e->cookie;
  return 0;
}

int region_table_del(struct region_table *t, uint64_t cookie) {
  if (!t->nbucket) return -ENOENT;
  for (struct region_entry **pp = &t->bucket[slot(t, cookie)]; *pp; pp = &(*pp)->next) {
    struct region_entry *e = *pp;
    if (e->cookie != cookie) continue;
    *pp = e->next;
    free(e->segs);
    free(e);
    t->n--;
    return 0;
  }
  return -ENOENT;
}

void region_table_fini(struct region_table *t) {
  for (uint32_t i = 0; i < t->nbucket; i++) {
    struct region_entry *e = t->bucket[i], *next;
    for (; e; e = next) {
      next = e->next;
      free(e->segs);
      free(e);
    }
  }
  free(t->bucket);
  memset(t, 0, sizeof *t);
}

fmx_return_t region_check(const struct region_entry *e, uint64_t off, uint64_t len, uint32_t access) {
  if (!(e->access & access)) return FMX_ACCESS_DENIED;
  if (off > e->len || len > e->len - off) return FMX_REGION_OUT_OF_RANGE;
  return FMX_SUCCESS;
}

uint32_t region_slice(const struct region_entry *e, uint64_t off, uint64_t len, fmx_seg_t *out) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < e->nseg && len; i++) {
    uint64_t sl = e->segs[i].len;
    if (off >= sl) {
      off -= sl;
      continue;
    }
    uint64_t take = sl - off < len ? sl - off : len;
    out[n++] = (fmx_seg_t){(uint8_t *)e->segs[i].ptr + off, take};
    off = 0;
    len -= take;
  }
  return n;
}
