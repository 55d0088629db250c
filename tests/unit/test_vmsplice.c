/* SPDX-License-Identifier: MIT */
/* The vmsplice engine on a bare pipe: its probe, a transfer larger than the
 * pipe in bounded steps, a dead reader (EPIPE, and no SIGPIPE reaching the
 * process), a dead writer (EOF), and what the pipe holds: references to the
 * sender's pages, not a copy. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "bulk/engine.h"
#include "check.h"
#include "base/config.h"
#include "core/tunables.h"

/* A connection that lends the engine a bare pipe and nothing to wake: the
 * engine sees no transport, no request. No other transfer is active. */
static int none_active(struct bulk_env *env, uint64_t id, int send, const struct fmx_bulk_engine *e) {
  (void)env, (void)id, (void)send, (void)e;
  return 0;
}
static uint64_t counters[CNT_MAX];
static struct bulk_env ep = {.counters = counters, .active = none_active};
static struct bulk_peer peer;
static struct bulk_conn chan;

static void setup(int fds[2]) {
  CHECK_EQ(pipe2(fds, O_CLOEXEC | O_NONBLOCK), 0);
  memset(&chan, 0, sizeof chan);
  chan.pipe_rx = fds[0];
  chan.pipe_tx = fds[1];
  memset(&peer, 0, sizeof peer);
}

#define SEND 1
#define RECV 2
static fmx_seg_t segs[3];

static void xfer_init(struct bulk_xfer *x, int kind, void *buf, size_t len) {
  memset(x, 0, sizeof *x);
  segs[kind] = (fmx_seg_t){buf, len};
  x->send = kind == SEND;
  x->id = (uint64_t)kind << 32 | 1;
  x->segs = &segs[kind];
  x->nseg = 1;
  x->want = len;
  x->env = &ep;
  x->peer = &peer;
  x->conn = &chan;
  x->engine = &bulk_vmsplice;
}

int main(void) {
  tunables_load();
  char reason[128];
  CHECK_EQ(bulk_vmsplice.probe(reason, sizeof reason), 0);
  CHECK(strcmp(reason, "available") == 0);
  CHECK(bulk_find("vmsplice") == &bulk_vmsplice);

  /* 3 MiB through one pipe: the sender stops at a full pipe, the receiver
   * drains it; both finish, every byte in place. */
  int fds[2];
  setup(fds);
  CHECK(bulk_vmsplice.usable(&peer, &chan));
  size_t len = 3 << 20;
  char *src = malloc(len), *dst = malloc(len);
  for (size_t i = 0; i < len; i++) src[i] = (char)(i * 131 + 7);
  memset(dst, 0, len);
  struct bulk_xfer s, r;
  xfer_init(&s, SEND, src, len);
  xfer_init(&r, RECV, dst, len);
  int src_done = 0, dst_done = 0;
  for (int steps = 0; !dst_done && steps < 100000; steps++) {
    if (!src_done) {
      int rc = bulk_vmsplice.send_progress(&s);
      CHECK(rc >= 0);
      src_done = rc == BULK_DONE;
    }
    int rc = bulk_vmsplice.recv_progress(&r);
    CHECK(rc >= 0);
    dst_done = rc == BULK_DONE;
  }
  CHECK(src_done && dst_done);
  CHECK(memcmp(src, dst, len) == 0);
  CHECK_EQ(counters[CNT_BULK_VMSPLICE_BYTES], len);
  CHECK_EQ(chan.pipe_tx_owner, 0);

  /* Not a copy: a sender that writes its buffer after vmsplice and before
   * the receiver reads changes what the receiver gets. Hence the contract:
   * the send buffer is the library's until the send completes (on FIN). */
  xfer_init(&s, SEND, src, 4096);
  xfer_init(&r, RECV, dst, 4096);
  memset(src, 'a', 4096);
  CHECK_EQ(bulk_vmsplice.send_progress(&s), BULK_DONE);
  memset(src, 'b', 4096);
  CHECK_EQ(bulk_vmsplice.recv_progress(&r), BULK_DONE);
  printf("vmsplice: a write after the push %s the data read\n", dst[0] == 'b' ? "changes" : "does not change");
  close(fds[0]);

  /* The reader died: EPIPE, an error completion, and the SIGPIPE the
   * kernel raised is neither delivered (default action: death) nor left
   * pending, and the thread's mask is as it was. */
  signal(SIGPIPE, SIG_DFL);
  close(chan.pipe_tx);
  setup(fds);
  close(fds[0]);
  chan.pipe_rx = -1;
  xfer_init(&s, SEND, src, len);
  CHECK_EQ(bulk_vmsplice.send_progress(&s), -EPIPE); /* fmx_code: REMOTE_ENDPOINT_UNREACHABLE */
  sigset_t set;
  CHECK_EQ(sigpending(&set), 0);
  CHECK(!sigismember(&set, SIGPIPE));
  CHECK_EQ(pthread_sigmask(SIG_SETMASK, NULL, &set), 0);
  CHECK(!sigismember(&set, SIGPIPE));
  close(fds[1]);

  /* The writer died: EOF is an error for a receive still missing bytes. */
  setup(fds);
  close(fds[1]);
  chan.pipe_tx = -1;
  xfer_init(&r, RECV, dst, len);
  CHECK_EQ(bulk_vmsplice.recv_progress(&r), -EPIPE);
  CHECK(chan.pipe_rx_broken);
  close(fds[0]);

  free(src);
  free(dst);
  CHECK_DONE("test_vmsplice");
  return 0;
}
