/* SPDX-License-Identifier: MIT */
/* What a provider's tables must hold for calls fmx does not offer, and
 * the close of objects that own nothing: libfabric exports no such
 * defaults. */
#include <stdlib.h>
#include <string.h>

#include "ofi/ofi_int.h"

int ofx_close_free(struct fid *fid) {
  free(fid);
  return 0;
}

int ofx_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags) {
  (void)fid, (void)bfid, (void)flags;
  return -FI_ENOSYS;
}

int ofx_no_control(struct fid *fid, int command, void *arg) {
  (void)fid, (void)command, (void)arg;
  return -FI_ENOSYS;
}

int ofx_no_ops_open(struct fid *fid, const char *name, uint64_t flags, void **ops, void *context) {
  (void)fid, (void)name, (void)flags, (void)ops, (void)context;
  return -FI_ENOSYS;
}

const char *ofx_strerror(int prov_errno, char *buf, size_t len) {
  const char *s = fmx_strerror((fmx_return_t)prov_errno);
  if (!buf || !len) return s;
  strncpy(buf, s, len - 1);
  buf[len - 1] = 0;
  return buf;
}
