/* SPDX-License-Identifier: MIT */
/* Out of memory for a message an endpoint sent to itself (FMX_FAULT_ALLOC=2:
 * the unexpected message's allocation fails): the connection to itself is
 * given up as one to a peer would be (proto_abort; the self transport has
 * no peer to tell), nothing crashes, and later sends to itself complete
 * with an error instead of vanishing. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fmx.h"

/* A send of s to me, waited for: it ends with code. */
static void send_ends(fmx_endpoint_t ep, fmx_seg_t *s, fmx_endpoint_addr_t me, uint64_t match, fmx_return_t code) {
  fmx_request_t sr;
  fmx_status_t st;
  uint32_t res = 0;
  CHECK_EQ(fmx_isend(ep, s, 1, me, match, NULL, &sr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(ep, &sr, 10000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  CHECK_EQ(st.code, code);
}

/* FMX_FAULT_ALLOC=1: the first allocation is the sender's state of its
 * messages with itself (proto_live, taken at its first message in
 * flight): that send completes with an error, and the connection is given
 * up (a peer would wait for the message otherwise). */
static void first_send_state(void) {
  setenv("FMX_FAULT_ALLOC", "1", 1);
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  fmx_endpoint_t ep;
  fmx_endpoint_addr_t me;
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 0x5e1f, NULL, 0, &ep), FMX_SUCCESS);
  CHECK_EQ(fmx_get_endpoint_addr(ep, &me), FMX_SUCCESS);
  char buf[8] = "12345678";
  fmx_seg_t s = {buf, sizeof buf};
  send_ends(ep, &s, me, 1, FMX_NO_SYSTEM_RESOURCES);
  send_ends(ep, &s, me, 2, FMX_REMOTE_ENDPOINT_UNREACHABLE);
  CHECK_EQ(fmx_close_endpoint(ep), FMX_SUCCESS);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
}

int main(void) {
  setenv("FMX_LOG", "none", 0);
  /* In a child of its own: the settings are read once a process. */
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    first_send_state();
    CHECK_DONE("test_self_nomem (first send's state)");
    fflush(stdout);
    _exit(0);
  }
  int wst = 0;
  CHECK_EQ(waitpid(pid, &wst, 0), pid);
  CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
  /* FMX_FAULT_ALLOC=2: the state is taken, the unexpected message's
   * allocation fails. */
  setenv("FMX_FAULT_ALLOC", "2", 1);
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  fmx_endpoint_t ep;
  fmx_endpoint_addr_t me;
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 0x5e1f, NULL, 0, &ep), FMX_SUCCESS);
  CHECK_EQ(fmx_get_endpoint_addr(ep, &me), FMX_SUCCESS);
  char buf[8] = "12345678", in[8];
  fmx_seg_t s = {buf, sizeof buf}, r = {in, sizeof in};
  fmx_request_t sr, rr;
  fmx_status_t st;
  uint32_t res = 0;
  /* Unexpected: no receive posted, its allocation fails (the second: the
   * first is the send's state of messages). */
  CHECK_EQ(fmx_isend(ep, &s, 1, me, 1, NULL, &sr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(ep, &sr, 10000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 1);
  /* A progress pass takes it from the queue, unexpected: no memory for it. */
  CHECK_EQ(fmx_iprobe(ep, 1, ~0ull, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  CHECK_EQ(fmx_irecv(ep, &r, 1, 1, ~0ull, NULL, &rr), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(ep, &rr, 200, &st, &res), FMX_SUCCESS); /* the message is gone with the connection */
  CHECK_EQ(res, 0);
  CHECK_EQ(fmx_cancel(ep, &rr, &res), FMX_SUCCESS);
  /* The connection to ourselves is down: a send says so. */
  send_ends(ep, &s, me, 2, FMX_REMOTE_ENDPOINT_UNREACHABLE);
  CHECK_EQ(fmx_close_endpoint(ep), FMX_SUCCESS);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_self_nomem");
  return 0;
}
