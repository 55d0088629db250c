/* SPDX-License-Identifier: MIT */
/* The connecting side of the handshake. */
#include "shm/connect.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/config.h"
#include "base/log.h"
#include "platform/sys.h"
#include "shm/link.h"
#include "shm/hello.h"
#include "shm/shm.h"

/* Connect the socket to the name of (our uid, board, eid). An endpoint not
 * open yet is waited for (MX's mx_connect waits), up to `wait_ms`; a
 * listener whose backlog is full, up to the deadline; either wait ends
 * at an fmx_wakeup on ep (FMX_TIMEOUT, as MX's connect has it). */
static fmx_return_t dial(struct fmx_endpoint *ep, int fd, const struct sockaddr_un *sa, socklen_t sl,
                         uint64_t wait_ns, uint64_t deadline) {
  uint64_t start = sys_now_ns();
  uint32_t woken = transport_up->wakeups(ep);
  useconds_t nap = 500;
  for (;;) {
    if (connect(fd, (const struct sockaddr *)sa, sl) == 0) return FMX_SUCCESS;
    int e = errno;
    uint64_t now = sys_now_ns();
    if (e == EINTR) continue;
    if (e == ECONNREFUSED || e == ENOENT) {
      if (now - start >= wait_ns || now >= deadline) return FMX_REMOTE_ENDPOINT_BAD_ID;
    } else if (e == EAGAIN) {
      if (now >= deadline) return FMX_TIMEOUT;
    } else {
      return FMX_NO_SYSTEM_RESOURCES;
    }
    if (transport_up->wakeups(ep) != woken) return FMX_TIMEOUT;
    usleep(nap);
    if (nap < 20000) nap *= 2;
  }
}

/* Milliseconds until the deadline, rounded up, for poll(); -1: none. */
static int ms_left(uint64_t deadline) {
  uint64_t now = sys_now_ns();
  return deadline == UINT64_MAX ? -1 : now >= deadline ? 0 : (int)((deadline - now + 999999) / 1000000);
}

/* One handshake with (board, eid), up to the deadline. */
/* We have a live partner with endpoint eid that has a link (it
 * connected to us): a connect of ours need not make another. */
static int has_link_with(struct fmx_endpoint *ep, uint32_t eid) {
  int found = 0;
  transport_up->lock(ep);
  for (struct partner *p = NULL; !found && (p = transport_up->peer_next(ep, &shm_transport, p)) != NULL;)
    found = transport_peer(p)->state == PARTNER_ALIVE && transport_peer(p)->eid == eid && shm_peer(p)->nlink > 0;
  transport_up->unlock(ep);
  return found;
}

/* One handshake with (board, eid), up to the deadline; with_link: send a
 * link even if we share one already (the peer said it has none with
 * us: *needs_link). */
static fmx_return_t handshake(struct fmx_endpoint *ep, uint32_t eid, uint32_t key, uint64_t deadline, int with_link,
                              int *needs_link, struct partner **out) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    int e = errno;
    log_warn("FMX-FDS", "endpoint %u: connect to endpoint %u: no socket: %s (RLIMIT_NOFILE %llu)", shm_eid(ep), eid,
             strerror(e), sys_nofile_limit());
    return FMX_NO_SYSTEM_RESOURCES;
  }
  struct sockaddr_un sa;
  socklen_t sl = shm_addr(&sa, (unsigned)getuid(), transport_ep(ep)->board, eid);
  fmx_return_t rc = dial(ep, fd, &sa, sl, fmx_cfg.connect_wait_ms * 1000000ull, deadline);
  if (rc != FMX_SUCCESS) {
    close(fd);
    return rc;
  }
  /* Who listens is checked before anything is sent: any local user may
   * bind our name first, and the HELLO carries our key and memfds. */
  struct ucred cred;
  socklen_t cl = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != getuid()) {
    log_warn("FMX-CONN-SQUAT", "endpoint %u: connect to endpoint %u refused: its name is held by uid %d (pid %d), "
             "not by this user; nothing sent", shm_eid(ep), eid, (int)cred.uid, (int)cred.pid);
    close(fd);
    return FMX_ACCESS_DENIED;
  }
  int link_fd = -1;
  struct shm_link *ch = NULL;
  struct shm_hello h, rep;
  shm_hello_fill(ep, &h, SHM_HELLO);
  h.key = key;
  int fds[SHM_MAX_FDS] = {transport_ep(ep)->desc_fd, shm_pool_fd(ep), -1, -1, -1};
  int nfds = 2;
  if (!with_link && has_link_with(ep, eid)) {
    h.flags |= SHM_F_NOLINK;
  } else {
    if ((ch = link_create(&link_fd)) == NULL) {
      log_warn("FMX-CONN-NOMEM", "endpoint %u: connect to endpoint %u: no link memory or descriptor: %s "
               "(RLIMIT_NOFILE %llu)", shm_eid(ep), eid, strerror(errno), sys_nofile_limit());
      close(fd);
      return FMX_NO_SYSTEM_RESOURCES;
    }
    ch->ours = 1;
    fds[nfds++] = link_fd;
    if (link_pipes_wanted() && link_pipes_create(ch, &fds[3]) == 0) {
      h.flags |= SHM_F_PIPES;
      nfds = 5;
    }
  }
  int rfds[SHM_MAX_FDS] = {-1, -1, -1, -1, -1};
  if (shm_wait_fd(fd, POLLOUT, ms_left(deadline)) < 0) {
    rc = FMX_TIMEOUT;
  } else if (shm_hello_send(fd, &h, fds, nfds) < 0) {
    /* Refused at accept (another uid, too many handshakes): the status
     * reply may wait in our queue although the peer closed. */
    int r = shm_hello_recv(fd, &rep, rfds);
    rc = r == 0 && rep.type == SHM_REPLY && rep.status != FMX_SUCCESS ? (fmx_return_t)rep.status
         : r == -ECONNRESET                                           ? FMX_BUSY /* as below */
                                                                      : FMX_REMOTE_ENDPOINT_CLOSED;
  } else {
    int r;
    for (;;) {
      if (shm_wait_fd(fd, POLLIN, ms_left(deadline)) < 0) {
        r = -ETIMEDOUT;
        break;
      }
      if ((r = shm_hello_recv(fd, &rep, rfds)) != -EAGAIN) break;
    }
    if (r == -ETIMEDOUT)
      rc = FMX_TIMEOUT;
    else if (r == -ECONNRESET)
      /* Refused at accept while our HELLO was on its way: the listener
       * closed with it unread and its answer went with the connection.
       * Refusals there are BUSY (our uid's handshakes at its cap), or out
       * of descriptors: try again while the timeout lasts (5 connects of 8
       * against 40 idle handshakes got this reset, test_trust). */
      rc = FMX_BUSY;
    else if (r == -EMFILE)
      rc = FMX_NO_SYSTEM_RESOURCES;
    else if (r < 0 || rep.type != SHM_REPLY)
      rc = FMX_REMOTE_ENDPOINT_CLOSED;
    else if (rep.status != FMX_SUCCESS)
      rc = (fmx_return_t)rep.status;
    else if (rfds[0] < 0 || rfds[1] < 0)
      rc = FMX_BAD_ERROR;
    if (rc == FMX_BUSY && (rep.flags & SHM_F_NEEDLINK)) *needs_link = 1;
    if (r == -EMFILE)
      log_warn("FMX-FDS", "endpoint %u: connect to endpoint %u: the reply's descriptor was lost: this process is out "
               "of file descriptors (RLIMIT_NOFILE %llu)", shm_eid(ep), eid, sys_nofile_limit());
  }
  close(fd);
  if (link_fd >= 0) close(link_fd);
  /* The peer's pipe ends are the peer's now: keeping a copy would hide its
   * death (no EOF, no EPIPE). */
  for (int i = 3; i < nfds; i++) close(fds[i]);
  if (rc != FMX_SUCCESS) {
    link_destroy(ch);
    shm_close_fds(rfds);
    return rc;
  }
  if (ch && !(rep.flags & SHM_F_PIPES) && ch->bulk.pipe_tx >= 0) {
    close(ch->bulk.pipe_tx);
    close(ch->bulk.pipe_rx);
    ch->bulk.pipe_tx = ch->bulk.pipe_rx = -1;
  }
  transport_up->lock(ep);
  struct partner *p = shm_adopt(ep, &rep, cred.pid, rfds[0], rfds[1], ch);
  transport_up->unlock(ep);
  shm_close_fds(rfds);
  if (!p && !ch) {
    *needs_link = 1; /* the partner we meant to share a link with is gone: make one */
    return FMX_BUSY;
  }
  if (!p) {
    log_warn("FMX-CONN-DESC", "endpoint %u: connect to endpoint %u: its descriptor or pool is not a sealed memfd of its form",
             shm_eid(ep), eid);
    link_destroy(ch);
    return FMX_REMOTE_ENDPOINT_CLOSED;
  }
  shm_watcher_kick(ep);
  *out = p;
  return FMX_SUCCESS;
}

fmx_return_t shm_connect(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                         struct partner **out) {
  (void)nic; /* this host's */
  uint64_t deadline = timeout_ms == FMX_TIMEOUT_INFINITE ? UINT64_MAX : sys_now_ns() + timeout_ms * 1000000ull;
  /* FMX_BUSY: the peer has as many of our uid's handshakes in flight as it
   * takes (FMX_HANDSHAKES_PER_UID); they end within FMX_HANDSHAKE_MS, so
   * try again while the timeout lasts. */
  int with_link = 0;
  for (;;) {
    int needs_link = 0;
    fmx_return_t rc = handshake(ep, eid, key, deadline, with_link, &needs_link, out);
    if (rc != FMX_BUSY || sys_now_ns() >= deadline) return rc;
    if (needs_link && !with_link) {
      with_link = 1; /* at once: nothing to wait for */
      continue;
    }
    usleep(2000);
  }
}
