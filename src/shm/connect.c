/* SPDX-License-Identifier: MIT */
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

#include "core/config.h"
#include "core/fmx_int.h"
#include "core/log.h"
#include "platform/sys.h"
#include "shm/channel.h"

int shm_socket_name(char *buf, size_t len, unsigned uid, uint32_t board, uint32_t eid) {
  /* Abstract namespace: leading NUL, not NUL-terminated, gone with the fd. */
  int n = snprintf(buf + 1, len - 1, "fmx/%u/%u/%u", uid, board, eid);
  buf[0] = '\0';
  return n + 1;
}

static socklen_t make_addr(struct sockaddr_un *sa, unsigned uid, uint32_t board, uint32_t eid) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  int n = shm_socket_name(sa->sun_path, sizeof sa->sun_path, uid, board, eid);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n);
}

int shm_listen(struct fmx_endpoint *ep) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -errno;
  struct sockaddr_un sa;
  socklen_t sl = make_addr(&sa, (unsigned)getuid(), ep->board, ep->eid);
  if (bind(fd, (struct sockaddr *)&sa, sl) < 0 || listen(fd, 64) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  ep->listen_fd = fd;
  return 0;
}

#define MAX_FDS 4 /* descriptor, channel, pipe read end, pipe write end */

/* Send a hello/reply with up to MAX_FDS fds. */
static int send_msg(int fd, const struct shm_hello *h, const int *fds, int nfds) {
  struct iovec iov = {(void *)h, sizeof *h};
  union {
    char buf[CMSG_SPACE(MAX_FDS * sizeof(int))];
    struct cmsghdr align;
  } u;
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (nfds) {
    memset(&u, 0, sizeof u);
    m.msg_control = u.buf;
    m.msg_controllen = CMSG_SPACE((size_t)nfds * sizeof(int));
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN((size_t)nfds * sizeof(int));
    memcpy(CMSG_DATA(c), fds, (size_t)nfds * sizeof(int));
  }
  ssize_t n;
  do n = sendmsg(fd, &m, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  return n == (ssize_t)sizeof *h ? 0 : -1;
}

/* Receive a hello/reply; fds[] gets up to MAX_FDS received fds (-1 when
 * absent), more are closed. Anything malformed closes every received fd and
 * fails. */
static int recv_msg(int fd, struct shm_hello *h, int fds[MAX_FDS], int timeout_ms) {
  for (int i = 0; i < MAX_FDS; i++) fds[i] = -1;
  struct pollfd p = {fd, POLLIN, 0};
  int r;
  do r = poll(&p, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  if (r <= 0) return -ETIMEDOUT;
  struct iovec iov = {h, sizeof *h};
  union {
    char buf[CMSG_SPACE(2 * MAX_FDS * sizeof(int))]; /* room to take (and close) extra fds */
    struct cmsghdr align;
  } u;
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  m.msg_control = u.buf;
  m.msg_controllen = sizeof u.buf;
  ssize_t n;
  do n = recvmsg(fd, &m, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  int got = 0;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    int tmp[2 * MAX_FDS];
    if (k > 2 * MAX_FDS) k = 2 * MAX_FDS; /* cannot be: the buffer holds no more */
    memcpy(tmp, CMSG_DATA(c), (size_t)k * sizeof(int));
    for (int i = 0; i < k; i++) {
      if (got < MAX_FDS)
        fds[got++] = tmp[i];
      else
        close(tmp[i]);
    }
  }
  if (n != (ssize_t)sizeof *h || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) || h->magic != SHM_HELLO_MAGIC ||
      h->version != SHM_HELLO_VERSION) {
    for (int i = 0; i < MAX_FDS; i++)
      if (fds[i] >= 0) close(fds[i]), fds[i] = -1;
    return -EPROTO;
  }
  return 0;
}

static struct ep_desc *map_desc(int fd) {
  struct ep_desc *d = mmap(NULL, EP_DESC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (d == MAP_FAILED) return NULL;
  if (d->magic != EP_DESC_MAGIC || d->version != EP_DESC_VERSION) {
    munmap(d, EP_DESC_SIZE);
    return NULL;
  }
  return d;
}

/* Real attempt: read the peer's probe word with process_vm_readv. */
static void probe_cma(struct partner *p, uint64_t addr, uint64_t val) {
  if (!fmx_cfg.cma) {
    p->cma_ok = 0;
    snprintf(p->cma_reason, sizeof p->cma_reason, "disabled by FMX_CMA=0");
    return;
  }
  uint64_t got = 0;
  struct iovec l = {&got, sizeof got}, r = {(void *)(uintptr_t)addr, sizeof got};
  ssize_t n = sys_cma_copy(p->pid, 0, &l, 1, &r, 1, sizeof got);
  if (n == (ssize_t)sizeof got && got == val) {
    p->cma_ok = 1;
    snprintf(p->cma_reason, sizeof p->cma_reason, "available");
    return;
  }
  p->cma_ok = 0;
  if (n < 0)
    snprintf(p->cma_reason, sizeof p->cma_reason, "process_vm_readv on peer pid %d: %s%s", (int)p->pid,
             strerror((int)-n), n == -EPERM ? " (ptrace rights: Yama ptrace_scope, container, other uid)" : "");
  else
    snprintf(p->cma_reason, sizeof p->cma_reason, "process_vm_readv on peer read a wrong value (pid namespace?)");
  log_warn_once("FMX-CMA-PROBE", "cma unusable with peer pid %d: %s; ring engine used", (int)p->pid, p->cma_reason);
}

/* Register what a handshake brought. Called with ep->lock held. */
static struct partner *adopt(struct fmx_endpoint *ep, const struct shm_hello *h, pid_t pid, int desc_fd,
                             struct channel *ch) {
  struct partner *p = ep_partner_find(ep, h->eid, h->session);
  if (!p) {
    p = ep_partner_new(ep);
    if (!p) return NULL;
    p->nic = h->nic;
    p->eid = h->eid;
    p->session = h->session;
    p->pid = pid;
    p->same_process = pid == getpid();
    ep->nsiblings += p->same_process;
    p->desc = map_desc(desc_fd);
    int pfd = sys_pidfd_open(pid);
    p->pidfd = pfd >= 0 ? pfd : -1;
    if (!p->desc) {
      ep_partner_fail(ep, p, PARTNER_DISCONNECTED, FMX_REMOTE_ENDPOINT_UNREACHABLE);
      return NULL;
    }
    probe_cma(p, h->probe_addr, h->probe_val);
    p->cpu = h->cpu;
  }
  if (ch) {
    if (p->nchan < 2)
      p->chan[p->nchan++] = ch;
    else
      chan_destroy(ch);
  }
  return p;
}

static void fill_hello(struct fmx_endpoint *ep, struct shm_hello *h, int type) {
  memset(h, 0, sizeof *h);
  h->magic = SHM_HELLO_MAGIC;
  h->version = SHM_HELLO_VERSION;
  h->type = (uint32_t)type;
  h->eid = ep->eid;
  h->session = ep->session;
  h->board = ep->board;
  h->nic = ep->nic;
  h->probe_addr = (uint64_t)(uintptr_t)&ep->probe_word;
  h->probe_val = ep->probe_word;
  h->cpu = ep->cpu;
}

/* The acceptor side of one handshake (watcher thread). */
static void accept_one(struct fmx_endpoint *ep, int fd) {
  struct shm_hello h, rep;
  int fds[MAX_FDS];
  fill_hello(ep, &rep, SHM_REPLY);
  /* A silent client must not hold the watcher for long. */
  int r = recv_msg(fd, &h, fds, 1000);
  if (r < 0 || h.type != SHM_HELLO || fds[0] < 0 || fds[1] < 0) {
    if (r == 0)
      for (int i = 0; i < MAX_FDS; i++)
        if (fds[i] >= 0) close(fds[i]);
    pthread_mutex_lock(&ep->lock);
    CNT(ep, CONNECT_REFUSED);
    pthread_mutex_unlock(&ep->lock);
    log_info("FMX-CONN-MALFORMED", "endpoint %u: malformed connect request dropped", ep->eid);
    rep.status = FMX_BAD_ERROR;
    send_msg(fd, &rep, NULL, 0);
    return;
  }
  struct ucred cred;
  socklen_t cl = sizeof cred;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != getuid()) {
    rep.status = FMX_ACCESS_DENIED;
    log_warn("FMX-CONN-UID", "endpoint %u: connect from uid %d refused (same uid only)", ep->eid, (int)cred.uid);
  } else if (h.key != ep->key) {
    rep.status = FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY;
    log_info("FMX-CONN-KEY", "endpoint %u: connect from endpoint %u with a wrong key refused", ep->eid, h.eid);
  } else {
    struct channel *ch = chan_attach(fds[1]);
    if (!ch) {
      rep.status = FMX_BAD_ERROR;
      log_warn("FMX-CONN-CHAN", "endpoint %u: malformed channel from pid %d refused", ep->eid, (int)cred.pid);
    } else {
      /* The vmsplice pipes are optional: without them (or with anything
       * else in their place) the connection just has no vmsplice engine. */
      if ((h.flags & SHM_F_PIPES) && fds[2] >= 0 && fds[3] >= 0 && chan_pipes_attach(ch, fds[2], fds[3]) == 0) {
        fds[2] = fds[3] = -1;
        rep.flags |= SHM_F_PIPES;
      }
      pthread_mutex_lock(&ep->lock);
      struct partner *p = ep->closing ? NULL : adopt(ep, &h, cred.pid, fds[0], ch);
      if (!p) chan_destroy(ch);
      pthread_mutex_unlock(&ep->lock);
      rep.status = p ? FMX_SUCCESS : FMX_NO_RESOURCES;
    }
  }
  pthread_mutex_lock(&ep->lock);
  if (rep.status == FMX_SUCCESS)
    CNT(ep, CONNECT_OK);
  else
    CNT(ep, CONNECT_REFUSED);
  pthread_mutex_unlock(&ep->lock);
  send_msg(fd, &rep, &ep->desc_fd, rep.status == FMX_SUCCESS ? 1 : 0);
  for (int i = 0; i < MAX_FDS; i++)
    if (fds[i] >= 0) close(fds[i]);
}

fmx_return_t shm_connect(struct fmx_endpoint *ep, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                         struct partner **out) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (fd < 0) return FMX_NO_SYSTEM_RESOURCES;
  struct sockaddr_un sa;
  socklen_t sl = make_addr(&sa, (unsigned)getuid(), ep->board, eid);
  if (connect(fd, (struct sockaddr *)&sa, sl) < 0) {
    int e = errno;
    close(fd);
    return e == ECONNREFUSED || e == ENOENT ? FMX_REMOTE_ENDPOINT_BAD_ID : FMX_NO_SYSTEM_RESOURCES;
  }
  int chan_fd;
  struct channel *ch = chan_create(&chan_fd);
  if (!ch) {
    close(fd);
    return FMX_NO_SYSTEM_RESOURCES;
  }
  struct shm_hello h, rep;
  fill_hello(ep, &h, SHM_HELLO);
  h.key = key;
  int fds[MAX_FDS] = {ep->desc_fd, chan_fd, -1, -1};
  int nfds = 2;
  if (chan_pipes_wanted() && chan_pipes_create(ch, &fds[2]) == 0) {
    h.flags |= SHM_F_PIPES;
    nfds = 4;
  }
  fmx_return_t rc = FMX_SUCCESS;
  int rfds[MAX_FDS] = {-1, -1, -1, -1};
  if (send_msg(fd, &h, fds, nfds) < 0) {
    rc = FMX_REMOTE_ENDPOINT_CLOSED;
  } else {
    int r = recv_msg(fd, &rep, rfds, timeout_ms == FMX_TIMEOUT_INFINITE ? -1 : (int)timeout_ms);
    if (r == -ETIMEDOUT)
      rc = FMX_TIMEOUT;
    else if (r < 0 || rep.type != SHM_REPLY)
      rc = FMX_REMOTE_ENDPOINT_CLOSED;
    else if (rep.status != FMX_SUCCESS)
      rc = (fmx_return_t)rep.status;
    else if (rfds[0] < 0)
      rc = FMX_BAD_ERROR;
  }
  struct ucred cred;
  socklen_t cl = sizeof cred;
  if (rc == FMX_SUCCESS && (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != getuid()))
    rc = FMX_ACCESS_DENIED;
  close(fd);
  close(chan_fd);
  /* The peer's pipe ends are the peer's now: keeping a copy would hide its
   * death (no EOF, no EPIPE). */
  for (int i = 2; i < nfds; i++) close(fds[i]);
  if (rc != FMX_SUCCESS) {
    chan_destroy(ch);
    for (int i = 0; i < MAX_FDS; i++)
      if (rfds[i] >= 0) close(rfds[i]);
    return rc;
  }
  if (!(rep.flags & SHM_F_PIPES) && ch->pipe_tx >= 0) {
    close(ch->pipe_tx);
    close(ch->pipe_rx);
    ch->pipe_tx = ch->pipe_rx = -1;
  }
  pthread_mutex_lock(&ep->lock);
  struct partner *p = adopt(ep, &rep, cred.pid, rfds[0], ch);
  pthread_mutex_unlock(&ep->lock);
  for (int i = 0; i < MAX_FDS; i++)
    if (rfds[i] >= 0) close(rfds[i]);
  if (!p) {
    chan_destroy(ch);
    return FMX_NO_RESOURCES;
  }
  shm_watcher_kick(ep);
  *out = p;
  return FMX_SUCCESS;
}

/* The watcher: sleeps in poll() on the listening socket, its control
 * eventfd and every peer's pidfd, so connects are answered and deaths seen
 * even while the application computes and never calls fmx. */
static void *watcher_main(void *arg) {
  struct fmx_endpoint *ep = arg;
  struct pollfd *pf = NULL;
  struct partner **who = NULL;
  size_t cap = 0;
  for (;;) {
    pthread_mutex_lock(&ep->lock);
    if (ep->closing) {
      pthread_mutex_unlock(&ep->lock);
      break;
    }
    size_t need = 2 + ep->npartners;
    if (need > cap) {
      struct pollfd *npf = realloc(pf, need * sizeof *pf);
      if (npf) pf = npf;
      struct partner **nw = realloc(who, need * sizeof *who);
      if (nw) who = nw;
      if (npf && nw) cap = need;
    }
    size_t n = 0;
    if (cap >= 2) {
      pf[n++] = (struct pollfd){ep->listen_fd, POLLIN, 0};
      pf[n++] = (struct pollfd){ep->ctl_fd, POLLIN, 0};
      for (uint32_t i = 0; i < ep->npartners && n < cap; i++) {
        struct partner *p = ep->partners[i];
        if (p && p->state == PARTNER_ALIVE && p->pidfd >= 0) {
          who[n] = p;
          pf[n++] = (struct pollfd){p->pidfd, POLLIN, 0};
        }
      }
    }
    pthread_mutex_unlock(&ep->lock);
    if (n < 2) {
      usleep(10000);
      continue;
    }
    int r = poll(pf, n, -1);
    if (r < 0) continue;
    if (pf[1].revents) {
      uint64_t v;
      if (read(ep->ctl_fd, &v, sizeof v) < 0) { /* nothing to do: it is a level */ }
    }
    if (pf[0].revents & POLLIN) {
      int c = accept4(ep->listen_fd, NULL, NULL, SOCK_CLOEXEC);
      if (c >= 0) {
        accept_one(ep, c);
        close(c);
      }
    }
    for (size_t i = 2; i < n; i++) {
      if (!pf[i].revents) continue;
      pthread_mutex_lock(&ep->lock);
      /* The partner may have been released meanwhile: check it is still ours. */
      struct partner *p = who[i];
      int found = 0;
      for (uint32_t k = 0; k < ep->npartners; k++) found |= ep->partners[k] == p;
      if (found && p->state == PARTNER_ALIVE && p->pidfd == pf[i].fd) {
        CNT(ep, PEER_DEATH);
        log_info("FMX-PEER-DEAD", "endpoint %u: peer endpoint %u (pid %d) died", ep->eid, p->eid, (int)p->pid);
        ep_partner_fail(ep, p, PARTNER_DEAD, FMX_REMOTE_ENDPOINT_UNREACHABLE);
      }
      pthread_mutex_unlock(&ep->lock);
    }
  }
  free(pf);
  free(who);
  return NULL;
}

int shm_watcher_start(struct fmx_endpoint *ep) {
  ep->ctl_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (ep->ctl_fd < 0) return -errno;
  /* The watcher must not take signals meant for the application. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = pthread_create(&ep->watcher, NULL, watcher_main, ep);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r) {
    close(ep->ctl_fd);
    ep->ctl_fd = -1;
    return -r;
  }
  ep->watcher_running = 1;
  return 0;
}

void shm_watcher_kick(struct fmx_endpoint *ep) {
  uint64_t one = 1;
  if (ep->ctl_fd >= 0 && write(ep->ctl_fd, &one, sizeof one) < 0) { /* counter saturated: already kicked */ }
}

void shm_watcher_stop(struct fmx_endpoint *ep) {
  if (!ep->watcher_running) return;
  shm_watcher_kick(ep); /* ep->closing is already set */
  pthread_join(ep->watcher, NULL);
  ep->watcher_running = 0;
  close(ep->ctl_fd);
  ep->ctl_fd = -1;
}
