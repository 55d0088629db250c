/* SPDX-License-Identifier: MIT */
/* cma: the receiver reads the sender's buffer with process_vm_readv, a
 * single copy by the kernel (KNEM's INLINE_COPY, without a module). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bulk/engine.h"
#include "base/config.h"
#include "platform/sys.h"

/* A real attempt on another process: fork a child and read its memory, as a
 * peer would. Reading oneself would succeed even where Yama forbids peers. */
static int cma_probe(char *reason, size_t len) {
  if (!fmx_cfg.cma) {
    snprintf(reason, len, "disabled by FMX_CMA=0");
    return -ENOTSUP;
  }
  static volatile uint64_t word = 0x666d78636d61ull;
  int pipefd[2];
  if (pipe(pipefd) < 0) {
    snprintf(reason, len, "probe: pipe: %s", strerror(errno));
    return -errno;
  }
  pid_t child = fork();
  if (child < 0) {
    int e = errno;
    snprintf(reason, len, "probe: fork: %s", strerror(e));
    close(pipefd[0]);
    close(pipefd[1]);
    return -e;
  }
  if (child == 0) {
    char c;
    close(pipefd[1]);
    if (read(pipefd[0], &c, 1) < 0) { /* parent gone: exit anyway */ }
    _exit(0);
  }
  close(pipefd[0]);
  uint64_t got = 0;
  struct iovec l = {&got, sizeof got}, r = {(void *)&word, sizeof word};
  ssize_t n = sys_cma_copy(child, 0, &l, 1, &r, 1, sizeof got);
  close(pipefd[1]);
  waitpid(child, NULL, 0);
  if (n == (ssize_t)sizeof got && got == word) {
    snprintf(reason, len, "available");
    return 0;
  }
  if (n < 0)
    snprintf(reason, len, "process_vm_readv refused: %s%s", strerror((int)-n),
             n == -EPERM ? " (no ptrace rights: Yama ptrace_scope, seccomp or container)" : "");
  else
    snprintf(reason, len, "process_vm_readv read a wrong value");
  return n < 0 ? (int)n : -EIO;
}

static int cma_usable(const struct bulk_peer *p, const struct bulk_conn *c) {
  return fmx_cfg.cma && p->cma_ok;
}

/* One call per FMX_CHUNK_MAX: small first chunks only add system calls
 * here (the kernel pins each call's pages itself, nothing overlaps), and
 * the cap bounds how long this progress call stalls other peers. Also the
 * engine's offload step (an offload channel pulling). */
static int cma_pull(struct bulk_xfer *x, uint64_t *done, uint64_t *moved) {
  uint64_t len = x->want - *done < fmx_cfg.chunk_max ? x->want - *done : fmx_cfg.chunk_max;
  ssize_t n = bulk_remote_range(x->xsrc, x->peer->pid, 0, x, x->rsegs, x->nrseg, *done, len);
  if (n < 0) return (int)n; /* -ESRCH: the peer died; -EFAULT: a buffer is gone */
  *done += len;
  *moved = len;
  return *done == x->want ? BULK_DONE : BULK_MORE;
}

static int cma_recv_progress(struct bulk_xfer *x) {
  uint64_t moved = 0;
  int rc = cma_pull(x, &x->done, &moved);
  x->env->counters[CNT_BULK_CMA_BYTES] += moved;
  return rc;
}

const struct fmx_bulk_engine bulk_cma = {
    .name = "cma",
    .cost_cfg = &fmx_cfg.cost_cma,
    .cost_var = "FMX_COST_CMA",
    .probe = cma_probe,
    .usable = cma_usable,
    .needs_cts = 0,
    .receiver_copies = 1,
    .maps_peer = 1,
    .kernel_copy = 1,
    .cnt_msgs = CNT_BULK_CMA,
    .recv_progress = cma_recv_progress,
    .send_progress = NULL,
    .offload_step = cma_pull,
};
