/* SPDX-License-Identifier: MIT */
/* The shared part of the bulk engines: registry, selection, chunking. */
#include <errno.h>
#include <string.h>

#include "bulk/engine.h"
#include "core/config.h"
#include "core/log.h"

const struct fmx_bulk_engine *const bulk_engines[] = {&bulk_cma, &bulk_ring, NULL};

const struct fmx_bulk_engine *bulk_find(const char *name) {
  for (int i = 0; bulk_engines[i]; i++)
    if (strcmp(bulk_engines[i]->name, name) == 0) return bulk_engines[i];
  return NULL;
}

const struct fmx_bulk_engine *bulk_select(struct fmx_endpoint *ep, struct partner *p, uint64_t len) {
  const struct fmx_bulk_engine *e = NULL;
  if (strcmp(fmx_cfg.bulk, "auto") != 0) {
    e = bulk_find(fmx_cfg.bulk);
    if (!e) log_warn_once("FMX-BULK-UNKNOWN", "FMX_BULK=%s is no engine; automatic selection used", fmx_cfg.bulk);
  }
  /* Without a topology-driven cost model yet (see docs/engines.md), the one
   * copy of cma beats the two copies of ring whenever cma is allowed. */
  if (!e) e = &bulk_cma;
  if (!e->usable(ep, p)) {
    if (e != &bulk_ring) {
      CNT(ep, BULK_FALLBACK);
      log_info("FMX-BULK-FALLBACK", "engine %s unusable with endpoint %u (%s): ring used", e->name, p->eid,
               p->cma_reason);
    }
    e = &bulk_ring;
  }
  return e;
}

copy_fn bulk_copy_fn(uint64_t msg_len) {
  if (strcmp(fmx_cfg.copy, "auto") != 0) {
    const struct fmx_copy_routine *c = NULL;
    int rc = copy_select_forced(fmx_cfg.copy, &c);
    if (rc == 0 && c) return c->fn;
    log_warn_once("FMX-COPY-UNKNOWN", "FMX_COPY=%s: %s; automatic choice used", fmx_cfg.copy,
                  rc == -ENOTSUP ? "this CPU cannot run it" : "no such copy routine");
  }
  /* copy_select goes non-temporal above half the cache it is given. */
  return copy_select(msg_len, 2 * fmx_cfg.copy_nt_threshold)->fn;
}

int bulk_iov_local(const struct fmx_request *r, uint64_t off, uint64_t len, struct iovec *iov, int max) {
  int n = 0;
  for (uint32_t i = 0; i < r->nseg && len && n < max; i++) {
    uint64_t sl = r->segs[i].len;
    if (off >= sl) {
      off -= sl;
      continue;
    }
    uint64_t take = sl - off < len ? sl - off : len;
    iov[n++] = (struct iovec){(char *)r->segs[i].ptr + off, take};
    len -= take;
    off = 0;
  }
  return n;
}

int bulk_iov_remote(const struct proto_seg *s, uint32_t nseg, uint64_t off, uint64_t len, struct iovec *iov,
                    int max) {
  int n = 0;
  for (uint32_t i = 0; i < nseg && len && n < max; i++) {
    uint64_t sl = s[i].len;
    if (off >= sl) {
      off -= sl;
      continue;
    }
    uint64_t take = sl - off < len ? sl - off : len;
    iov[n++] = (struct iovec){(void *)(uintptr_t)(s[i].addr + off), take};
    len -= take;
    off = 0;
  }
  return n;
}
