/* SPDX-License-Identifier: MIT */
/*
 * vmsplice: one copy by the kernel, no rights over the peer. After the
 * receiver's CTS the sender vmsplice(2)s its pages into the connection's pipe
 * of this direction (no copy: the pipe references the pages), the receiver
 * readv(2)s them straight into its buffer (the one copy). The pipes are
 * created by the connector and passed in the hello (shm/connect.c), only
 * when this engine may be used (chan_pipes_wanted: forced, or measured by
 * fmx_tune); their default size, 64 KiB, is what one call moves at most.
 *
 * A pipe is unframed: one transfer per direction at a time, on both sides.
 * The receiver asks vmsplice only when no vmsplice receive from this
 * channel is in flight (else ring); a receive that ended before reading all
 * its bytes leaves the rest to come into the pipe, which is then never used
 * again. The sender pushes for one CTS at a time (pipe_tx_owner).
 *
 * The pipe holds references to the sender's pages, not a copy: what the
 * receiver reads is the buffer as it is when read, so the send buffer must
 * not change until the send completes (the API's contract; the sender
 * completes on FIN, after the receiver read everything).
 *
 * SIGPIPE: vmsplice into a pipe whose reader died raises SIGPIPE on the
 * calling thread (there is no MSG_NOSIGNAL for pipes). The push blocks
 * SIGPIPE in this thread's mask around its vmsplice calls and, when one
 * fails with EPIPE, takes the signal it raised (sigtimedwait, no wait) unless
 * one was already pending before. No process-wide handler is touched.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "bulk/conn.h"

#define VMS_IOV 64

static int vms_probe(char *reason, size_t len) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) < 0) {
    snprintf(reason, len, "pipe2: %s", strerror(errno));
    return -errno;
  }
  char src[256], dst[sizeof src] = {0};
  for (size_t i = 0; i < sizeof src; i++) src[i] = (char)(i * 7 + 1);
  struct iovec iov = {src, sizeof src};
  ssize_t n = vmsplice(fds[1], &iov, 1, SPLICE_F_NONBLOCK);
  int e = errno;
  ssize_t got = n == (ssize_t)sizeof src ? read(fds[0], dst, sizeof dst) : -1;
  close(fds[0]);
  close(fds[1]);
  if (n < 0) {
    snprintf(reason, len, "vmsplice: %s", strerror(e));
    return -e;
  }
  if (got != (ssize_t)sizeof src || memcmp(src, dst, sizeof src) != 0) {
    snprintf(reason, len, "vmsplice then read through a pipe returned wrong data");
    return -EIO;
  }
  snprintf(reason, len, "available");
  return 0;
}

static int vms_usable(const struct bulk_peer *p, const struct bulk_conn *c) {
  return c && c->pipe_tx >= 0 && c->pipe_rx >= 0;
}

/* Receiver: take the pipe of the connection the RTS came on; -1 when another
 * receive uses it, an earlier one broke it, or there is none (then ring). */
static int vmsplice_claim(struct bulk_xfer *x) {
  struct bulk_conn *c = x->conn;
  if (!c || c->pipe_rx < 0 || c->pipe_rx_broken) return -ENODEV;
  if (c->pipe_rx_owner) {
    if (x->env->active(x->env, c->pipe_rx_owner, 0, &bulk_vmsplice)) return -EBUSY; /* in flight */
    /* Its owner ended (error, timeout, cancel) before reading all its
     * bytes: the rest may still come. */
    c->pipe_rx_broken = 1;
    return -EPIPE;
  }
  c->pipe_rx_owner = x->id;
  return 0;
}

static int vms_recv_progress(struct bulk_xfer *x) {
  struct bulk_conn *c = x->conn;
  struct iovec iov[VMS_IOV];
  uint64_t len = x->want - x->done;
  if (len > fmx_cfg.chunk_max) len = fmx_cfg.chunk_max;
  int n = bulk_iov_local(x->segs, x->nseg, x->done, len, iov, VMS_IOV);
  ssize_t got;
  do got = readv(c->pipe_rx, iov, n);
  while (got < 0 && errno == EINTR);
  if (got < 0 && errno == EAGAIN) return BULK_MORE;
  if (got <= 0) {
    /* EOF: every writer is gone, the peer died. */
    c->pipe_rx_broken = 1;
    return got == 0 ? -EPIPE : -errno;
  }
  x->done += (uint64_t)got;
  x->env->counters[CNT_BULK_VMSPLICE_BYTES] += (uint64_t)got;
  bulk_conn_wake(c); /* room in the pipe */
  if (x->done < x->want) return BULK_MORE;
  c->pipe_rx_owner = 0;
  return BULK_DONE;
}

static int vms_send_progress(struct bulk_xfer *s) {
  struct bulk_conn *c = s->conn;
  if (!c || c->pipe_tx < 0) return -EPROTO; /* asked for by a peer that has no pipe from us */
  uint64_t me = s->id;
  if (c->pipe_tx_owner && c->pipe_tx_owner != me && s->env->active(s->env, c->pipe_tx_owner, 1, &bulk_vmsplice))
    return BULK_MORE; /* wait our turn */
  c->pipe_tx_owner = me;
  sigset_t pipe_set, old, pending;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  int was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  int rc = BULK_MORE, moved = 0;
  uint64_t pushed = 0;
  /* At most FMX_CHUNK_MAX per call; a full pipe stops us sooner. */
  while (s->done < s->want && pushed < fmx_cfg.chunk_max) {
    struct iovec iov[VMS_IOV];
    uint64_t len = s->want - s->done;
    if (len > fmx_cfg.chunk_max - pushed) len = fmx_cfg.chunk_max - pushed;
    int n = bulk_iov_local(s->segs, s->nseg, s->done, len, iov, VMS_IOV);
    ssize_t k = vmsplice(c->pipe_tx, iov, (unsigned long)n, SPLICE_F_NONBLOCK);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN) break;
      if (errno == EPIPE) {
        if (!was_pending) {
          struct timespec zero = {0, 0};
          while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR) {
          }
        }
        rc = -EPIPE;
      } else {
        rc = -errno;
      }
      break;
    }
    if (k == 0) break;
    s->done += (uint64_t)k;
    pushed += (uint64_t)k;
    moved = 1;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (moved) bulk_conn_wake(c);
  if (rc < 0) {
    c->pipe_tx_owner = 0;
    return rc;
  }
  if (s->done == s->want) {
    c->pipe_tx_owner = 0;
    return BULK_DONE;
  }
  return BULK_MORE;
}

const struct fmx_bulk_engine bulk_vmsplice = {
    .name = "vmsplice",
    .cost_cfg = &fmx_cfg.cost_vmsplice,
    .cost_var = "FMX_COST_VMSPLICE",
    .probe = vms_probe,
    .usable = vms_usable,
    .needs_cts = 1,
    .wire_id = 2,
    .kernel_copy = 1,
    .cnt_msgs = CNT_BULK_VMSPLICE,
    .recv_start = vmsplice_claim,
    .fallback = &bulk_ring,
    .recv_progress = vms_recv_progress,
    .send_progress = vms_send_progress,
};
