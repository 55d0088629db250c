/* SPDX-License-Identifier: MIT */
/* What the fuzz targets share: reading fields off the input, and a memfd
 * holding input bytes as a peer would hand one over. */
#ifndef FMX_FUZZ_INPUT_H
#define FMX_FUZZ_INPUT_H

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The next `want` bytes of the input into out, zeros past its end; how
 * many came from the input. */
static inline size_t fuzz_take(const uint8_t **d, size_t *n, void *out, size_t want) {
  size_t k = want < *n ? want : *n;
  memcpy(out, *d, k);
  memset((uint8_t *)out + k, 0, want - k);
  *d += k;
  *n -= k;
  return k;
}

/* A memfd of len bytes starting with the n bytes at page, sealed against
 * shrinking and growing when `sealed` (what fmx accepts from a peer). */
static inline int fuzz_memfd(size_t len, const void *page, size_t n, int sealed) {
  int fd = memfd_create("fuzz", MFD_ALLOW_SEALING | MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, (off_t)len) != 0) abort();
  if (n && pwrite(fd, page, n, 0) != (ssize_t)n) abort();
  if (sealed && fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) != 0) abort();
  return fd;
}

#endif
