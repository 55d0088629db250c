/* SPDX-License-Identifier: MIT */
/*
 * What the MX test programs share (myriexpress.h alone): checked calls,
 * checked waits, a byte pattern, and the two ways a program finds its
 * peer:
 *   - self: the program talks to its own endpoint (MX's "self" path);
 *   - pair: the program forks; parent (role 0) and child (role 1) each
 *     open an endpoint, tell each other its address through pipes and
 *     connect, so messages go between two processes of the host.
 * The parent's exit status is 0 only when both sides passed.
 */
#ifndef MX_TEST_H
#define MX_TEST_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "mx_extensions.h"
#include "myriexpress.h"

#define MXT_KEY 0x4d58u

static const char *mxt_prog = "mx_test";
static int mxt_role;   /* 0: parent (or self), 1: child */
static int mxt_paired; /* mxt_pair ran: messages name the side */

static void mxt_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void mxt_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (mxt_paired)
    fprintf(stderr, "%s[%s]: ", mxt_prog, mxt_role ? "child" : "parent");
  else
    fprintf(stderr, "%s: ", mxt_prog);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

#define MXT_OK(call)                                                                                                 \
  do {                                                                                                               \
    mx_return_t r_ = (call);                                                                                         \
    if (r_ != MX_SUCCESS) mxt_fail("line %d: %s: %s", __LINE__, #call, mx_strerror(r_));                           \
  } while (0)
#define MXT_EXPECT(cond, ...)                                                                                        \
  do {                                                                                                               \
    if (!(cond)) mxt_fail(__VA_ARGS__);                                                                              \
  } while (0)

static inline double mxt_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for a request (bounded: 60 s, then the program fails) and return
 * its status; the code is the caller's to check. */
static inline mx_status_t mxt_wait(mx_endpoint_t ep, mx_request_t *req, const char *what) {
  mx_status_t st;
  uint32_t result = 0;
  MXT_OK(mx_wait(ep, req, 60000, &st, &result));
  MXT_EXPECT(result, "%s: not complete after 60 s", what);
  return st;
}

/* Wait, and the request must have succeeded with len bytes. */
static inline mx_status_t mxt_wait_ok(mx_endpoint_t ep, mx_request_t *req, uint32_t len, const char *what) {
  mx_status_t st = mxt_wait(ep, req, what);
  MXT_EXPECT(st.code == MX_STATUS_SUCCESS, "%s: %s", what, mx_strstatus(st.code));
  MXT_EXPECT(st.xfer_length == len, "%s: %u bytes, expected %u", what, st.xfer_length, len);
  return st;
}

static inline unsigned char mxt_byte(uint64_t i, uint32_t seed) { return (unsigned char)(i * 131 + seed * 7 + (i >> 9)); }
static inline void mxt_fill(void *buf, uint64_t len, uint32_t seed) {
  unsigned char *b = buf;
  for (uint64_t i = 0; i < len; i++) b[i] = mxt_byte(i, seed);
}
static inline void mxt_check(const void *buf, uint64_t len, uint32_t seed, const char *what) {
  const unsigned char *b = buf;
  for (uint64_t i = 0; i < len; i++)
    MXT_EXPECT(b[i] == mxt_byte(i, seed), "%s: byte %" PRIu64 " of %" PRIu64 " is 0x%02x, expected 0x%02x", what, i,
               len, b[i], mxt_byte(i, seed));
}

static inline void *mxt_alloc(size_t len) {
  void *p = malloc(len ? len : 1);
  MXT_EXPECT(p, "out of memory (%zu bytes)", len);
  return p;
}

/* The endpoint's counter whose label begins with `label` (mx_get_info's
 * MX_COUNTERS_*); UINT32_MAX when there is none. */
static inline uint32_t mxt_counter(mx_endpoint_t ep, const char *label) {
  uint32_t n = 0, v = UINT32_MAX;
  MXT_OK(mx_get_info(ep, MX_COUNTERS_COUNT, NULL, 0, &n, sizeof n));
  char *labels = mxt_alloc((size_t)n * MX_MAX_STR_LEN);
  uint32_t *values = mxt_alloc((size_t)n * sizeof *values);
  MXT_OK(mx_get_info(ep, MX_COUNTERS_LABELS, NULL, 0, labels, n * MX_MAX_STR_LEN));
  MXT_OK(mx_get_info(ep, MX_COUNTERS_VALUES, NULL, 0, values, n * (uint32_t)sizeof *values));
  for (uint32_t i = 0; i < n && v == UINT32_MAX; i++)
    if (!strncmp(labels + (size_t)i * MX_MAX_STR_LEN, label, strlen(label))) v = values[i];
  free(labels);
  free(values);
  return v;
}

struct mxt {
  mx_endpoint_t ep;
  mx_endpoint_addr_t peer;
  pid_t child; /* pair mode, in the parent */
};

/* Our endpoint's (nic, eid). */
static inline void mxt_whoami(mx_endpoint_t ep, uint64_t *nic, uint32_t *eid) {
  mx_endpoint_addr_t me;
  MXT_OK(mx_get_endpoint_addr(ep, &me));
  MXT_OK(mx_decompose_endpoint_addr(me, nic, eid));
}

static inline void mxt_open(struct mxt *t, mx_param_t *params, uint32_t nparams) {
  mx_set_error_handler(MX_ERRORS_RETURN);
  MXT_OK(mx_init());
  MXT_OK(mx_open_endpoint(MX_ANY_NIC, MX_ANY_ENDPOINT, MXT_KEY, params, nparams, &t->ep));
}

/* Self: the peer is our own endpoint. */
static inline void mxt_self(struct mxt *t, mx_param_t *params, uint32_t nparams) {
  uint64_t nic;
  uint32_t eid;
  memset(t, 0, sizeof *t);
  mxt_open(t, params, nparams);
  mxt_whoami(t->ep, &nic, &eid);
  MXT_OK(mx_connect(t->ep, nic, eid, MXT_KEY, 10000, &t->peer));
}

/* Pair: returns in both processes, with mxt_role 0 (parent) or 1 (child). */
static inline void mxt_pair(struct mxt *t, mx_param_t *params, uint32_t nparams) {
  int down[2], up[2]; /* parent -> child, child -> parent */
  memset(t, 0, sizeof *t);
  mxt_paired = 1;
  fflush(NULL);
  MXT_EXPECT(pipe(down) == 0 && pipe(up) == 0, "pipe");
  pid_t pid = fork();
  MXT_EXPECT(pid >= 0, "fork");
  mxt_role = pid == 0;
  t->child = pid;
  int rd = mxt_role ? down[0] : up[0], wr = mxt_role ? up[1] : down[1];
  close(mxt_role ? down[1] : up[1]);
  close(mxt_role ? up[0] : down[0]);
  mxt_open(t, params, nparams);
  uint64_t me[2], them[2];
  uint32_t eid;
  mxt_whoami(t->ep, &me[0], &eid);
  me[1] = eid;
  MXT_EXPECT(write(wr, me, sizeof me) == (ssize_t)sizeof me, "pipe write");
  MXT_EXPECT(read(rd, them, sizeof them) == (ssize_t)sizeof them, "the other process is gone");
  close(rd);
  close(wr);
  MXT_OK(mx_connect(t->ep, them[0], (uint32_t)them[1], MXT_KEY, 10000, &t->peer));
}

/* Both sides meet: a zero-byte message each way (match: `tag`). */
static inline void mxt_barrier(struct mxt *t, uint64_t tag) {
  mx_request_t s, r;
  MXT_OK(mx_irecv(t->ep, NULL, 0, tag, MX_MATCH_MASK_NONE, NULL, &r));
  MXT_OK(mx_isend(t->ep, NULL, 0, t->peer, tag, NULL, &s));
  mxt_wait_ok(t->ep, &s, 0, "barrier send");
  mxt_wait_ok(t->ep, &r, 0, "barrier receive");
}

/* Close, finalize; in the parent of a pair, the child's status joins ours. */
static inline int mxt_end(struct mxt *t) {
  MXT_OK(mx_close_endpoint(t->ep));
  MXT_OK(mx_finalize());
  if (mxt_role == 1) exit(0);
  if (t->child > 0) {
    int status = 0;
    MXT_EXPECT(waitpid(t->child, &status, 0) == t->child, "waitpid");
    MXT_EXPECT(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the child failed (status 0x%x)", status);
  }
  printf("%s: ok\n", mxt_prog);
  return 0;
}

#endif
