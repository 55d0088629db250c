/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the connect handshake as a local peer sends it to a live
 * endpoint. The input builds a HELLO (raw bytes, or a valid one of another
 * endpoint of ours with 32-bit patches) and the fds that go with it: the
 * descriptor, the pool and the link, each either the real thing or a
 * sealed memfd holding input bytes (or absent), the vmsplice pipes, and
 * stray fds. It is sent to endpoint E over its socket; the listener thread
 * answers or closes. A crash or hang of the listener is the finding; E must
 * still answer the next one.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/fmx_int.h"
#include "fmx.h"
#include "fuzz_input.h"
#include "shm/link.h"
#include "shm/connect.h"
#include "shm/hello.h"
#include "shm/shm.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define KEY_E 0x1234
static fmx_endpoint_t E, F;
static struct shm_hello tmpl;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  setenv("FMX_LOG", "error", 0); /* every refused input logs a line otherwise */
  if (fmx_init() != FMX_SUCCESS) abort();
  if (fmx_open_endpoint(0, FMX_ANY_ENDPOINT, KEY_E, NULL, 0, &E) != FMX_SUCCESS) abort();
  if (fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 0x5678, NULL, 0, &F) != FMX_SUCCESS) abort();
  shm_hello_fill(F, &tmpl, SHM_HELLO); /* F's identity, as F's connect would send it */
  tmpl.key = KEY_E;
  return 0;
}

/* A memfd of 4 KiB x (1 + sz % 8) starting with up to 256 input bytes,
 * sealed or not as sz's top bit says. */
static int forged(const uint8_t **d, size_t *n) {
  uint8_t sz = 0, page[256];
  fuzz_take(d, n, &sz, 1);
  size_t k = fuzz_take(d, n, page, sizeof page);
  return fuzz_memfd(4096 * (1 + sz % 8), page, k, sz & 0x80);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* Accepted hellos leave partners in E (F's identity under sessions the
   * input chose; a peer of our uid is trusted that far): a fresh E now and
   * then keeps long runs flat, and closes one with many partners. */
  if (E->t.nlive > 64) {
    if (fmx_close_endpoint(E) != FMX_SUCCESS) abort();
    if (fmx_open_endpoint(0, FMX_ANY_ENDPOINT, KEY_E, NULL, 0, &E) != FMX_SUCCESS) abort();
  }
  uint8_t mode = 0, which = 0;
  fuzz_take(&data, &size, &mode, 1);
  fuzz_take(&data, &size, &which, 1);
  struct shm_hello h;
  if (mode & 1) {
    fuzz_take(&data, &size, &h, sizeof h);
  } else {
    h = tmpl;
    h.flags = which & 0x40 ? SHM_F_PIPES : 0;
    if (which & 0x80) h.flags |= SHM_F_NOLINK;
    for (int i = 0; i < (mode >> 1) % 8; i++) { /* 32-bit patches */
      uint8_t at;
      uint32_t v;
      fuzz_take(&data, &size, &at, 1);
      fuzz_take(&data, &size, &v, sizeof v);
      memcpy((uint8_t *)&h + (at % (sizeof h / 4)) * 4, &v, sizeof v);
    }
  }
  int fds[8], nfds = 0, link_fd = -1, pipes[2][2] = {{-1, -1}, {-1, -1}};
  struct shm_link *ch = NULL;
  /* descriptor, pool, link: real (bit set) or forged, unless left out */
  if (!(which & 0x01)) fds[nfds++] = which & 0x02 ? dup(F->t.desc_fd) : forged(&data, &size);
  if (!(which & 0x04)) fds[nfds++] = which & 0x08 ? dup(shm_pool_fd(F)) : forged(&data, &size);
  if (!(which & 0x10)) {
    if (which & 0x20) {
      ch = link_create(&link_fd);
      if (!ch) abort();
      fds[nfds++] = link_fd;
    } else {
      fds[nfds++] = forged(&data, &size);
    }
  }
  if (h.flags & SHM_F_PIPES) {
    if (pipe2(pipes[0], O_CLOEXEC | O_NONBLOCK) || pipe2(pipes[1], O_CLOEXEC | O_NONBLOCK)) abort();
    fds[nfds++] = pipes[0][0]; /* its read end of our direction */
    fds[nfds++] = pipes[1][1]; /* its write end of the other */
  }
  if (mode & 0x80) fds[nfds++] = open("/dev/null", O_RDONLY | O_CLOEXEC); /* a stray fd */

  struct sockaddr_un sa;
  uint32_t eid;
  fmx_get_info(E, FMX_INFO_ENDPOINT_ID, NULL, 0, &eid, sizeof eid);
  socklen_t sl = shm_addr(&sa, (unsigned)getuid(), 0, eid);
  int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (s < 0 || connect(s, (struct sockaddr *)&sa, sl) != 0) abort(); /* E must keep listening */
  shm_hello_send(s, &h, fds, nfds);
  for (int i = 0; i < nfds; i++) close(fds[i]);
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++)
      if (pipes[i][j] >= 0 && pipes[i][j] != pipes[0][0] && pipes[i][j] != pipes[1][1]) close(pipes[i][j]);
  if (ch) link_destroy(ch);
  /* E answers, or closes: within its handshake timeout at worst. */
  struct pollfd p = {s, POLLIN, 0};
  if (poll(&p, 1, 10000) != 1) abort();
  struct shm_hello rep;
  int rfds[SHM_MAX_FDS];
  if (shm_hello_recv(s, &rep, rfds) == 0) shm_close_fds(rfds);
  close(s);
  return 0;
}
