/* SPDX-License-Identifier: MIT */
/*
 * The asynchronous copy API's engine (issue 16; the I/OAT ADCE paper's
 * design on CPU threads): one copy of this process's memory, from a list
 * of segments into another, run by one offload channel (offload.c: copies
 * dealt round robin, the channels pinned off a bound application thread's
 * core), completed through the job's status word. The channel copies a
 * chunk at a time with the copy routine of bulk_copy_fn (non-temporal
 * stores above FMX_COPY_NT_THRESHOLD), so the status word also tells how
 * far it got.
 */
#include "bulk/copy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "bulk/engine.h"
#include "platform/sys.h"

#define CHUNK (1u << 20) /* bytes per step: progress reported that often */

struct bulk_copy {
  struct offload_job *job;
  copy_fn fn;
  uint64_t len;
  uint32_t nd, ns;
  uint32_t di, si;   /* channel: the segments it is in */
  uint64_t doff, soff;
  fmx_seg_t seg[];   /* nd destination segments, then ns source segments */
};

/* Copy up to max bytes from the cursor on; returns what it copied. */
static uint64_t copy_some(struct bulk_copy *c, uint64_t max) {
  const fmx_seg_t *d = c->seg, *s = c->seg + c->nd;
  uint64_t moved = 0;
  while (moved < max && c->si < c->ns && c->di < c->nd) {
    uint64_t dl = d[c->di].len - c->doff, sl = s[c->si].len - c->soff, n = max - moved;
    if (n > dl) n = dl;
    if (n > sl) n = sl;
    if (n) c->fn((char *)d[c->di].ptr + c->doff, (const char *)s[c->si].ptr + c->soff, n);
    moved += n;
    c->doff += n;
    c->soff += n;
    if (c->doff == d[c->di].len) c->di++, c->doff = 0;
    if (c->soff == s[c->si].len) c->si++, c->soff = 0;
  }
  return moved;
}

static int step(void *arg, uint64_t *done, uint64_t *moved) {
  struct bulk_copy *c = arg;
  uint64_t n = copy_some(c, CHUNK);
  *done += n;
  *moved = n;
  return *done >= c->len || !n ? BULK_DONE : BULK_MORE;
}

static struct bulk_copy *make(const fmx_seg_t *dst, uint32_t nd, const fmx_seg_t *src, uint32_t ns, uint64_t len) {
  struct bulk_copy *c = malloc(sizeof *c + ((size_t)nd + ns) * sizeof(fmx_seg_t));
  if (!c) return NULL;
  memset(c, 0, sizeof *c);
  c->fn = bulk_copy_fn(len);
  c->len = len;
  c->nd = nd;
  c->ns = ns;
  if (nd) memcpy(c->seg, dst, nd * sizeof *dst);
  if (ns) memcpy(c->seg + nd, src, ns * sizeof *src);
  return c;
}

int bulk_copy_now(const fmx_seg_t *dst, uint32_t nd, const fmx_seg_t *src, uint32_t ns, uint64_t len) {
  if (nd == 1 && ns == 1) { /* the common case: no list to build */
    if (len) bulk_copy_fn(len)(dst[0].ptr, src[0].ptr, len);
    return 0;
  }
  struct bulk_copy *c = make(dst, nd, src, ns, len);
  if (!c) return -ENOMEM;
  copy_some(c, len);
  free(c);
  return 0;
}

int bulk_copy_start(const fmx_seg_t *dst, uint32_t nd, const fmx_seg_t *src, uint32_t ns, uint64_t len,
                    struct bulk_copy **out) {
  struct bulk_copy *c = make(dst, nd, src, ns, len);
  if (!c) return -ENOMEM;
  int r = offload_submit(step, c, &c->job);
  if (r < 0) {
    free(c);
    return r;
  }
  *out = c;
  return 0;
}

int bulk_copy_poll(struct bulk_copy *c, uint64_t *done) { return offload_job_status(c->job, done); }

void bulk_copy_sleep(struct bulk_copy *c, int64_t ns) { offload_job_sleep(c->job, ns); }

void bulk_copy_free(struct bulk_copy *c) {
  if (!c) return;
  offload_job_free(c->job);
  free(c);
}
