/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the headers a peer's memfds carry, the send pool's
 * (pool_view_attach) and the link's (link_attach), as a peer that forged
 * them would hand them over: sealed memfds of a size it chose. The first
 * input byte picks the form: raw bytes (odd), or a valid header of ours
 * (a pool, or a link) with 8-byte patches from the input written over
 * its first 512 bytes, so that the checks past the magic are reached. Then
 * the buffer references a record could name (pool_view_buf): whatever is
 * accepted must lie inside the mapping, and is read whole (a read past it
 * faults).
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fmx.h"
#include "fuzz_input.h"
#include "shm/link.h"
#include "region/pool.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t sink;
static uint8_t pool_hdr[4096], chan_hdr[4096];
static size_t pool_size, link_size;

static void first_page(int fd, uint8_t *out, size_t *size) {
  struct stat st;
  if (fstat(fd, &st) != 0 || pread(fd, out, 4096, 0) != 4096) abort();
  *size = (size_t)st.st_size;
}

/* Valid headers to start from: a pool and a link of ours. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  if (fmx_init() != FMX_SUCCESS) abort();
  struct buf_pool p;
  const uint64_t n[POOL_CLASSES] = {4, 2}, sz[POOL_CLASSES] = {4096, 8192};
  if (pool_create(&p, n, sz) != 0) abort();
  first_page(p.fd, pool_hdr, &pool_size);
  pool_destroy(&p);
  int fd;
  struct shm_link *c = link_create(&fd);
  if (!c) abort();
  first_page(fd, chan_hdr, &link_size);
  link_destroy(c);
  close(fd);
  return 0;
}

static void use_pool(int fd, const uint8_t *data, size_t size) {
  const char *why;
  struct pool_view v;
  if (pool_view_attach(&v, fd, &why) != 0) return;
  /* the references a record may carry: (index, len) pairs from the input */
  for (size_t off = 0; off + 12 <= size && off < 64 * 12; off += 12) {
    uint64_t ref;
    uint32_t len;
    memcpy(&ref, data + off, sizeof ref);
    memcpy(&len, data + off + 8, sizeof len);
    const uint8_t *b = pool_view_buf(&v, ref, len);
    if (!b) continue;
    if (b < (const uint8_t *)v.base || b + len > (const uint8_t *)v.base + v.size) abort();
    uint64_t s = 0;
    for (uint32_t k = 0; k < len; k += 64) s += b[k];
    if (len) s += b[len - 1];
    sink += s;
  }
  pool_view_detach(&v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t mode = data[0], page[4096];
  data++, size--;
  int fd;
  if (mode & 1) { /* raw: 4 KiB x (1 + mode / 2 % 8) holding the input */
    size_t len = 4096 * (1 + (mode >> 1) % 8), n = size < 4096 ? size : 4096;
    fd = fuzz_memfd(len, data, n, 1);
  } else { /* one of our headers, patched */
    int is_pool = (mode >> 1) & 1;
    memcpy(page, is_pool ? pool_hdr : chan_hdr, sizeof page);
    for (size_t off = 0; off + 10 <= size && off < 32 * 10; off += 10) {
      uint16_t at;
      memcpy(&at, data + off, sizeof at);
      memcpy(page + (at % 512), data + off + 2, 8);
    }
    fd = fuzz_memfd(is_pool ? pool_size : link_size, page, sizeof page, 1);
    size_t skip = size < 320 ? size : 320;
    data += skip, size -= skip;
  }
  use_pool(fd, data, size);
  const char *why;
  struct shm_link *c = link_attach(fd, &why);
  if (c) link_destroy(c);
  close(fd);
  return 0;
}
