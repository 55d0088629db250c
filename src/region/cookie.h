/* SPDX-License-Identifier: MIT */
/*
 * Declared regions (KNEM's cookies): an endpoint's table of segment lists
 * that peers holding the cookie may read or write (fmx_region_create,
 * docs/regions.md). The owner's protocol looks a cookie up when a peer
 * asks (proto/rma.c) and hands the engines the slice asked for; the table
 * never leaves this process, so a cookie is worth something only to the
 * endpoint that made it, and only while it lives.
 *
 * A cookie is 64 random bits (getrandom), never 0 and never that of
 * another live region of the table: guessing one of n live regions takes
 * about 2^64 / n tries, each a record to the owner, counted (RMA_REFUSED).
 */
#ifndef FMX_REGION_COOKIE_H
#define FMX_REGION_COOKIE_H

#include <stdint.h>

#include "fmx.h"

struct region_entry {
  struct region_entry *next; /* hash chain */
  uint64_t cookie;
  uint64_t len;              /* sum of segs */
  uint32_t access;           /* FMX_REGION_READ | FMX_REGION_WRITE */
  uint32_t nseg;
  fmx_seg_t *segs;           /* the owner's copy of the list, without empty segments */
};

struct region_table {
  struct region_entry **bucket; /* a power of two of them */
  uint32_t nbucket, n;
};

/* Declare segs (checked by the caller) with access: 0 and *cookie, or
 * -ENOMEM. */
int region_table_add(struct region_table *t, const fmx_seg_t *segs, uint32_t nseg, uint32_t access,
                     uint64_t *cookie);
/* Forget cookie: 0, or -ENOENT when the table has no such region. */
int region_table_del(struct region_table *t, uint64_t cookie);
/* The live region of cookie, or NULL. */
const struct region_entry *region_table_find(const struct region_table *t, uint64_t cookie);
/* Free every region (the endpoint closes). */
void region_table_fini(struct region_table *t);

/* What a peer's request to region e for [off, off + len) with `access`
 * (FMX_REGION_READ or FMX_REGION_WRITE) gets: FMX_SUCCESS, or
 * FMX_ACCESS_DENIED, FMX_REGION_OUT_OF_RANGE. */
fmx_return_t region_check(const struct region_entry *e, uint64_t off, uint64_t len, uint32_t access);
/* The segments of e covering [off, off + len) (checked by region_check)
 * into out (room for e->nseg): their count. */
uint32_t region_slice(const struct region_entry *e, uint64_t off, uint64_t len, fmx_seg_t *out);

#endif
