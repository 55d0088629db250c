/* SPDX-License-Identifier: MIT */
/* The asynchronous copy API (fmx.h, docs/copy.md) over bulk/copy.c: the
 * checks, the threshold below which the caller copies at once, and the
 * waits. */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "base/config.h"
#include "base/errors.h"
#include "bulk/copy.h"
#include "bulk/engine.h"
#include "core/api.h"
#include "core/fmx_int.h"
#include "platform/sys.h"

/* The bytes a list holds, or UINT64_MAX when it is malformed. */
static uint64_t total(const fmx_seg_t *s, uint32_t n) {
  uint64_t t = 0;
  for (uint32_t i = 0; i < n; i++) {
    if (s[i].len && !s[i].ptr) return UINT64_MAX;
    if (s[i].len > UINT64_MAX - 1 - t) return UINT64_MAX;
    t += s[i].len;
  }
  return t;
}

API fmx_return_t fmx_copy_asyncv(const fmx_seg_t *dst, uint32_t nd, const fmx_seg_t *src, uint32_t ns,
                                 fmx_copy_t *handle) {
  if (!lib_ready()) return FMX_NOT_INITIALIZED;
  if (!handle) return FMX_BAD_REQUEST;
  *handle = NULL;
  if (nd > FMX_MAX_SEGMENTS || ns > FMX_MAX_SEGMENTS) return FMX_SEGMENTS_BAD_COUNT;
  if ((nd && !dst) || (ns && !src)) return FMX_BAD_ADDRESS;
  uint64_t len = total(src, ns), room = total(dst, nd);
  if (len == UINT64_MAX || room == UINT64_MAX || room < len) return FMX_BAD_ADDRESS;
  if (len == 0) return FMX_SUCCESS;
  struct bulk_copy *c = NULL;
  if (len >= fmx_cfg.copy_async_threshold && bulk_copy_start(dst, nd, src, ns, len, &c) == 0) {
    *handle = (fmx_copy_t)c;
    return FMX_SUCCESS;
  }
  /* Short, or no channel could take it: the caller copies now. */
  return bulk_copy_now(dst, nd, src, ns, len) == 0 ? FMX_SUCCESS : FMX_NO_RESOURCES;
}

API fmx_return_t fmx_copy_async(void *dst, const void *src, size_t len, fmx_copy_t *handle) {
  fmx_seg_t d = {dst, len}, s = {(void *)src, len};
  return fmx_copy_asyncv(&d, 1, &s, 1, handle);
}

/* Done: free it, say so; its outcome. */
static fmx_return_t finish(fmx_copy_t *handle, int st, uint32_t *result) {
  bulk_copy_free((struct bulk_copy *)*handle);
  *handle = NULL;
  *result = 1;
  return st == BULK_DONE ? FMX_SUCCESS : fmx_code(st);
}

API fmx_return_t fmx_copy_test(fmx_copy_t *handle, uint32_t *result) {
  if (!handle || !result) return FMX_BAD_REQUEST;
  *result = 0;
  if (!*handle) {
    *result = 1;
    return FMX_SUCCESS;
  }
  int st = bulk_copy_poll((struct bulk_copy *)*handle, NULL);
  return st == BULK_MORE ? FMX_SUCCESS : finish(handle, st, result);
}

API fmx_return_t fmx_copy_wait(fmx_copy_t *handle, uint32_t timeout_ms, uint32_t *result) {
  if (!handle || !result) return FMX_BAD_REQUEST;
  *result = 0;
  if (!*handle) {
    *result = 1;
    return FMX_SUCCESS;
  }
  struct bulk_copy *c = (struct bulk_copy *)*handle;
  uint64_t start = sys_now_ns(), spin = fmx_cfg.spin_us * 1000ull;
  uint64_t deadline = timeout_ms == FMX_TIMEOUT_INFINITE ? UINT64_MAX : start + timeout_ms * 1000000ull;
  for (;;) {
    int st = bulk_copy_poll(c, NULL);
    if (st != BULK_MORE) return finish(handle, st, result);
    uint64_t now = sys_now_ns();
    if (now >= deadline) return FMX_SUCCESS;
    if (now - start < spin) {
      sched_yield();
      continue;
    }
    uint64_t left = deadline - now;
    bulk_copy_sleep(c, left > 100000000ull ? 100000000 : (int64_t)left);
  }
}
