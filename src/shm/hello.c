/* SPDX-License-Identifier: MIT */
/* The handshake's wire (one shm_hello with its fds), shared by the
 * connecting side (connect.c) and the listening one (listen.c), and what
 * both do with a peer's answer: map its descriptor, probe CMA, adopt it. */
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
#include "bulk/engine.h"
#include "platform/sys.h"
#include "shm/link.h"
#include "shm/hello.h"
#include "shm/shm.h"

int shm_socket_name(char *buf, size_t len, unsigned uid, uint32_t board, uint32_t eid) {
  /* Abstract namespace: leading NUL, not NUL-terminated, gone with the fd. */
  int n = snprintf(buf + 1, len - 1, "fmx/%u/%u/%u", uid, board, eid);
  buf[0] = '\0';
  return n + 1;
}

socklen_t shm_addr(struct sockaddr_un *sa, unsigned uid, uint32_t board, uint32_t eid) {
  memset(sa, 0, sizeof *sa);
  sa->sun_family = AF_UNIX;
  int n = shm_socket_name(sa->sun_path, sizeof sa->sun_path, uid, board, eid);
  return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + (size_t)n);
}

void shm_close_fds(int fds[SHM_MAX_FDS]) {
  for (int i = 0; i < SHM_MAX_FDS; i++)
    if (fds[i] >= 0) close(fds[i]), fds[i] = -1;
}


/* Send a hello/reply with up to SHM_MAX_FDS fds. */
int shm_hello_send(int fd, const struct shm_hello *h, const int *fds, int nfds) {
  struct iovec iov = {(void *)h, sizeof *h};
  union {
    char buf[CMSG_SPACE(SHM_MAX_FDS * sizeof(int))];
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
  return n == (ssize_t)sizeof *h ? 0 : n < 0 ? -errno : -EIO;
}

/* Wait until fd is readable (POLLIN) or writable, up to timeout_ms (-1:
 * forever). 0, or -ETIMEDOUT. */
int shm_wait_fd(int fd, short ev, int timeout_ms) {
  struct pollfd p = {fd, ev, 0};
  int r;
  do r = poll(&p, 1, timeout_ms);
  while (r < 0 && errno == EINTR);
  return r > 0 ? 0 : -ETIMEDOUT;
}

/* Receive a hello/reply without blocking; fds[] gets up to SHM_MAX_FDS
 * received fds (-1 when absent), more are closed. Anything malformed
 * closes every received fd and fails (-EPROTO); fds the kernel could not
 * install because we are out of descriptors give -EMFILE; nothing there
 * yet, -EAGAIN; the peer closed without sending a byte, -ENOTCONN. */
int shm_hello_recv(int fd, struct shm_hello *h, int fds[SHM_MAX_FDS]) {
  for (int i = 0; i < SHM_MAX_FDS; i++) fds[i] = -1;
  struct iovec iov = {h, sizeof *h};
  union {
    char buf[CMSG_SPACE(2 * SHM_MAX_FDS * sizeof(int))]; /* room to take (and close) extra fds */
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
  if (n < 0 && errno == EAGAIN) return -EAGAIN;
  if (n < 0 && errno == ECONNRESET) return -ECONNRESET;
  if (n == 0 && !(m.msg_flags & MSG_CTRUNC)) return -ENOTCONN;
  int got = 0;
  for (struct cmsghdr *c = n >= 0 ? CMSG_FIRSTHDR(&m) : NULL; c; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
    int tmp[2 * SHM_MAX_FDS];
    if (k > 2 * SHM_MAX_FDS) k = 2 * SHM_MAX_FDS; /* cannot be: the buffer holds no more */
    memcpy(tmp, CMSG_DATA(c), (size_t)k * sizeof(int));
    for (int i = 0; i < k; i++) {
      if (got < SHM_MAX_FDS)
        fds[got++] = tmp[i];
      else
        close(tmp[i]);
    }
  }
  int rc = 0;
  if (n != (ssize_t)sizeof *h || (m.msg_flags & MSG_TRUNC) || h->magic != SHM_HELLO_MAGIC ||
      h->version != SHM_HELLO_VERSION)
    rc = -EPROTO;
  else if (m.msg_flags & MSG_CTRUNC)
    /* The kernel sets it when it cannot install the passed fds: our
     * table is full (our buffer has room for twice what a peer may send). */
    rc = -EMFILE;
  if (rc)
    shm_close_fds(fds);
  return rc;
}

/* The peer's descriptor page: a sealed memfd of exactly EP_DESC_SIZE. */
static struct ep_desc *map_desc(int fd) {
  if (sys_memfd_check(fd, EP_DESC_SIZE, EP_DESC_SIZE, NULL) < 0) return NULL;
  struct ep_desc *d = mmap(NULL, EP_DESC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (d == MAP_FAILED) return NULL;
  if (d->magic != EP_DESC_MAGIC || d->version != EP_DESC_VERSION) {
    munmap(d, EP_DESC_SIZE);
    return NULL;
  }
  return d;
}

/* Real attempt: read the peer's probe word with process_vm_readv. */
static void probe_cma(struct bulk_peer *b, uint64_t addr, uint64_t val) {
  b->cma_errno = 0;
  if (!fmx_cfg.cma) {
    b->cma_ok = 0;
    b->cma_reason = "disabled by FMX_CMA=0";
    return;
  }
  uint64_t got = 0;
  struct iovec l = {&got, sizeof got}, r = {(void *)(uintptr_t)addr, sizeof got};
  ssize_t n = sys_cma_copy(b->pid, 0, &l, 1, &r, 1, sizeof got);
  if (n == (ssize_t)sizeof got && got == val) {
    b->cma_ok = 1;
    b->cma_reason = "available";
    return;
  }
  b->cma_ok = 0;
  b->cma_errno = n < 0 ? (int)-n : 0;
  b->cma_reason = n < 0 ? "process_vm_readv on the peer" : "process_vm_readv on the peer read a wrong value (pid namespace?)";
  char why[160];
  log_warn_once("FMX-CMA-PROBE", "cma unusable with peer pid %d: %s; ring engine used", (int)b->pid,
                bulk_cma_why(b, why, sizeof why));
}

/* Register what a handshake brought. Called with the endpoint's lock held. */
struct partner *shm_adopt(struct fmx_endpoint *ep, const struct shm_hello *h, pid_t pid, int desc_fd, int pool_fd,
                          struct shm_link *ch) {
  struct partner *p = transport_up->peer_find(ep, h->eid, h->session);
  if (!p && !ch) return NULL; /* no link: only a partner that has one */
  if (!p) {
    p = transport_up->peer_new(ep, &shm_transport);
    if (!p) return NULL;
    struct transport_peer *t = transport_peer(p);
    t->nic = h->nic;
    t->eid = t->bulk->eid = h->eid;
    t->session = h->session;
    t->bulk->pid = pid;
    t->bulk->same_process = pid == getpid();
    t->bulk->cpu = h->cpu;
    transport_up->peer_joined(ep, p);
    shm_peer(p)->desc = map_desc(desc_fd);
    int pfd = sys_pidfd_open(pid);
    t->bulk->pidfd = pfd >= 0 ? pfd : -1;
    const char *why;
    if (!shm_peer(p)->desc || shm_peer_attach(ep, p, pool_fd, &why) < 0) {
      transport_up->peer_fail(ep, p, PARTNER_DISCONNECTED, FMX_REMOTE_ENDPOINT_UNREACHABLE);
      return NULL;
    }
    probe_cma(t->bulk, h->probe_addr, h->probe_val);
  }
  if (ch) {
    struct shm_peer *sp = shm_peer(p);
    ch->bulk.pool = sp->pool;
    ch->bulk.pool_held = sp->pool_held;
    ch->bulk.peer_pool = &sp->peer;
    ch->bulk.wake = shm_conn_wake;
    ch->bulk.wake_arg = p;
    if (sp->nlink == 1 && shm_link_chosen(ep, p, ch)) sp->switch_tx = 1;
    if (sp->nlink < 2)
      sp->link[sp->nlink++] = ch;
    else
      link_destroy(ch);
  }
  return p;
}

void shm_hello_fill(struct fmx_endpoint *ep, struct shm_hello *h, int type) {
  memset(h, 0, sizeof *h);
  h->magic = SHM_HELLO_MAGIC;
  h->version = SHM_HELLO_VERSION;
  h->type = (uint32_t)type;
  h->eid = shm_eid(ep);
  h->session = transport_ep(ep)->session;
  h->board = transport_ep(ep)->board;
  h->nic = transport_ep(ep)->nic;
  h->probe_addr = (uint64_t)(uintptr_t)&shm_ep(ep)->probe_word;
  h->probe_val = shm_ep(ep)->probe_word;
  h->cpu = transport_ep(ep)->bulk->cpu;
}

