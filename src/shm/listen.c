/* SPDX-License-Identifier: MIT */
/* The listening side: the endpoint's socket (and who holds its name when
 * it is taken), the handshakes in flight, and the watcher thread that
 * serves them and watches the peers' pidfds. */
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

/* Who holds a name we could not bind: connect to it (sending nothing) and
 * read its credentials. 1: a process of ours, 0: another user's (or a
 * socket that takes no connection: a bare bind, the squatter's cheapest
 * form), with uid and pid when known (-1 otherwise). */
static int holder_is_ours(const struct sockaddr_un *sa, socklen_t sl, long *uid, long *pid) {
  *uid = *pid = -1;
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return 1; /* cannot tell: assume the ordinary case */
  int ours = 0;
  if (connect(fd, (const struct sockaddr *)sa, sl) == 0) {
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cl) == 0) {
      *uid = cred.uid;
      *pid = cred.pid;
      ours = cred.uid == getuid();
    }
  } else if (errno == EAGAIN) {
    ours = 1; /* a busy listener of any user: its backlog is full; say busy */
  }
  close(fd);
  return ours;
}

int shm_listen(struct fmx_endpoint *ep) {
  int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    int e = errno;
    if (e == EMFILE || e == ENFILE)
      log_warn("FMX-FDS", "endpoint %u: no file descriptor for its socket (RLIMIT_NOFILE %llu): %s", shm_eid(ep),
               sys_nofile_limit(), strerror(e));
    return -e;
  }
  struct sockaddr_un sa;
  socklen_t sl = shm_addr(&sa, (unsigned)getuid(), transport_ep(ep)->board, shm_eid(ep));
  /* With FMX_SHM=0 the name only holds the id: bound, not listening, so
   * that a process with shared memory on that connects to it is refused
   * (connect.c: no such endpoint, once FMX_CONNECT_WAIT_MS has passed
   * for one not open yet), not left waiting for a handshake nobody
   * serves (no watcher runs, shm_ep_open). */
  if (bind(fd, (struct sockaddr *)&sa, sl) < 0 || (fmx_cfg.shm && listen(fd, 64) < 0)) {
    int e = errno;
    close(fd);
    if (e != EADDRINUSE) return -e;
    /* Abstract names have no permissions: any local user may bind ours
     * first. Say who holds it, so a squatter is not mistaken for a busy id. */
    long uid, pid;
    if (holder_is_ours(&sa, sl, &uid, &pid)) {
      log_info("FMX-EP-BUSY", "endpoint id %u on board %u is open in pid %ld", shm_eid(ep), transport_ep(ep)->board,
               pid);
      return -EADDRINUSE;
    }
    if (!fmx_cfg.shm && uid < 0) {
      /* Our own endpoints with FMX_SHM=0 hold their names the same way:
       * said at info level, as a busy id is (FMX_ANY_ENDPOINT meets one
       * per endpoint of the job), so a squatter's bare bind goes unsaid
       * here (without shared memory nothing of ours goes to it). */
      log_info("FMX-EP-BUSY",
               "endpoint id %u on board %u is held by a socket that accepts no connection: an endpoint opened "
               "with FMX_SHM=0, or another user's",
               shm_eid(ep), transport_ep(ep)->board);
      return -EADDRINUSE;
    }
    if (uid >= 0)
      log_error("FMX-EP-SQUATTED",
                "endpoint id %u on board %u: its socket name is held by uid %ld (pid %ld), not by this user: "
                "refused (another user took the name first)",
                shm_eid(ep), transport_ep(ep)->board, uid, pid);
    else /* a warning: it may be one of our own with FMX_SHM=0 */
      log_warn("FMX-EP-SQUATTED",
               "endpoint id %u on board %u: its socket name is held by a socket that accepts no connection "
               "(another user may have bound it, or it is an endpoint opened with FMX_SHM=0): refused",
               shm_eid(ep), transport_ep(ep)->board);
    return -EACCES;
  }
  shm_ep(ep)->listen_fd = fd;
  shm_ep(ep)->listening = 1;
  shm_ep(ep)->probe_word = sys_random64();
  return 0;
}

static void count(struct fmx_endpoint *ep, int ok) {
  transport_up->lock(ep);
  if (ok)
    TRANSPORT_CNT(ep, CONNECT_OK);
  else
    TRANSPORT_CNT(ep, CONNECT_REFUSED);
  transport_up->unlock(ep);
}

/* A reply that carries only a status: never blocks (a peer that does not
 * read loses it, nothing else). */
static void refuse(int fd, struct fmx_endpoint *ep, fmx_return_t status) {
  struct shm_hello rep;
  shm_hello_fill(ep, &rep, SHM_REPLY);
  rep.status = status;
  struct iovec iov = {&rep, sizeof rep};
  struct msghdr m = {0};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  if (sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) { /* the peer is gone or not reading: nothing owed */ }
}

/* The acceptor side of one handshake whose HELLO is readable (watcher
 * thread). The peer's uid was checked at accept. 1 when done (fd to
 * close), 0 when nothing was there after all. */
static int serve_hello(struct fmx_endpoint *ep, int fd, const struct ucred *cred) {
  struct shm_hello h, rep;
  int fds[SHM_MAX_FDS];
  shm_hello_fill(ep, &rep, SHM_REPLY);
  int r = shm_hello_recv(fd, &h, fds);
  if (r == -EAGAIN) return 0;
  /* Closed with nothing sent: another endpoint of ours asking who holds
   * this id (holder_is_ours, when its fmx_open_endpoint found the name
   * taken), not a connect: neither refused nor logged (every 2-rank
   * fmx_perf run counted one refusal and logged FMX-CONN-MALFORMED). */
  if (r == -ENOTCONN) return 1;
  if (r == -EMFILE) {
    count(ep, 0);
    log_warn("FMX-FDS", "endpoint %u: connect request from pid %d lost its descriptors: this process is out of file "
             "descriptors (RLIMIT_NOFILE %llu)", shm_eid(ep), (int)cred->pid, sys_nofile_limit());
    refuse(fd, ep, FMX_NO_SYSTEM_RESOURCES);
    return 1;
  }
  int nolink = r == 0 && (h.flags & SHM_F_NOLINK);
  if (r < 0 || h.type != SHM_HELLO || fds[0] < 0 || fds[1] < 0 || (!nolink && fds[2] < 0)) {
    shm_close_fds(fds);
    count(ep, 0);
    log_info("FMX-CONN-MALFORMED", "endpoint %u: malformed connect request from pid %d dropped", shm_eid(ep),
             (int)cred->pid);
    refuse(fd, ep, FMX_BAD_ERROR);
    return 1;
  }
  if (h.key != transport_ep(ep)->key) {
    rep.status = FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY;
    log_info("FMX-CONN-KEY", "endpoint %u: connect from endpoint %u with a wrong key refused", shm_eid(ep), h.eid);
  } else if (nolink) {
    /* It shares the link we made when we connected to it, if we have
     * that partner still. */
    transport_up->lock(ep);
    struct partner *p = transport_ep(ep)->closing ? NULL : transport_up->peer_find(ep, h.eid, h.session);
    if (p && shm_peer(p)->nlink > 0 && transport_peer(p)->state == PARTNER_ALIVE)
      p = shm_adopt(ep, &h, cred->pid, fds[0], fds[1], NULL);
    else p = NULL;
    transport_up->unlock(ep);
    rep.status = p ? FMX_SUCCESS : FMX_BUSY;
    if (!p) rep.flags |= SHM_F_NEEDLINK;
  } else {
    const char *why = NULL;
    struct shm_link *ch = link_attach(fds[2], &why);
    if (!ch) {
      rep.status = FMX_BAD_ERROR;
      log_warn("FMX-CONN-LINK", "endpoint %u: link from pid %d refused: %s", shm_eid(ep), (int)cred->pid, why);
    } else {
      /* The vmsplice pipes are optional: without them (or with anything
       * else in their place) the connection just has no vmsplice engine. */
      if ((h.flags & SHM_F_PIPES) && fds[3] >= 0 && fds[4] >= 0 && chan_pipes_attach(ch, fds[3], fds[4]) == 0) {
        fds[3] = fds[4] = -1;
        rep.flags |= SHM_F_PIPES;
      }
      transport_up->lock(ep);
      struct partner *p = transport_ep(ep)->closing ? NULL : shm_adopt(ep, &h, cred->pid, fds[0], fds[1], ch);
      if (!p) link_destroy(ch);
      transport_up->unlock(ep);
      rep.status = p ? FMX_SUCCESS : FMX_NO_RESOURCES;
      if (!p)
        log_warn("FMX-CONN-DESC", "endpoint %u: connect from pid %d refused: its descriptor is %s", shm_eid(ep),
                 (int)cred->pid,
                 transport_ep(ep)->closing ? "unused (closing)" : "or pool not a sealed memfd of its form");
    }
  }
  /* A peer that offered to share a link we no longer have is asked for
   * one (BUSY, NEEDLINK) and connects again at once: not a refusal (it was
   * counted as one: "connections refused" read 1 after a plain 2-rank
   * run). */
  if (!(rep.flags & SHM_F_NEEDLINK)) count(ep, rep.status == FMX_SUCCESS);
  int ours[2] = {transport_ep(ep)->desc_fd, shm_pool_fd(ep)};
  shm_hello_send(fd, &rep, ours, rep.status == FMX_SUCCESS ? 2 : 0);
  shm_close_fds(fds);
  return 1;
}

/* ---- the watcher -------------------------------------------------------- */

/* Handshakes in flight, the watcher's own (no lock): each connection is
 * served when its HELLO is readable, never waited for, and dropped at its
 * deadline, so a silent or slow client cannot hold the endpoint's
 * connects or its death watch (seen: 60 idle connections of another user
 * made every connect of the owner time out). */
struct handshake {
  int fd;
  struct ucred cred;
  uint64_t deadline;
};
struct handshakes {
  struct handshake *v;
  size_t n, cap;
  uint64_t accept_after; /* out of fds: accept again from then */
};

static void hs_drop(struct handshakes *hs, size_t i) {
  close(hs->v[i].fd);
  hs->v[i] = hs->v[--hs->n];
}

/* Accept what waits: another user's connection is closed at once (a status
 * reply, nothing read); ours is queued with its deadline, at most
 * FMX_HANDSHAKES_PER_UID of one uid at a time. */
static void accept_all(struct fmx_endpoint *ep, struct handshakes *hs) {
  for (int k = 0; k < 64; k++) {
    int c = accept4(shm_ep(ep)->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (c < 0) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
        log_warn("FMX-FDS", "endpoint %u: cannot accept a connect request: %s (RLIMIT_NOFILE %llu); it waits",
                 shm_eid(ep), strerror(errno), sys_nofile_limit());
        hs->accept_after = sys_now_ns() + 100000000ull;
      }
      return;
    }
    struct ucred cred;
    socklen_t cl = sizeof cred;
    if (getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cred, &cl) < 0 || cred.uid != getuid()) {
      count(ep, 0);
      log_warn("FMX-CONN-UID", "endpoint %u: connect from uid %d (pid %d) refused (same uid only)", shm_eid(ep),
               (int)cred.uid, (int)cred.pid);
      refuse(c, ep, FMX_ACCESS_DENIED);
      close(c);
      continue;
    }
    uint64_t same = 0;
    for (size_t i = 0; i < hs->n; i++) same += hs->v[i].cred.uid == cred.uid;
    if (same >= fmx_cfg.handshakes_per_uid || (hs->n == hs->cap && hs->cap >= 4096)) {
      count(ep, 0);
      log_warn("FMX-CONN-BUSY", "endpoint %u: connect from pid %d refused: %llu handshakes of uid %d in flight",
               shm_eid(ep), (int)cred.pid, (unsigned long long)same, (int)cred.uid);
      refuse(c, ep, FMX_BUSY);
      /* Closing with its HELLO unread would reset the connection and the
       * peer might lose our reply (ECONNRESET) before it reads it. */
      struct shm_hello junk;
      int jfds[SHM_MAX_FDS];
      if (shm_hello_recv(c, &junk, jfds) == 0) shm_close_fds(jfds);
      close(c);
      continue;
    }
    if (hs->n == hs->cap) {
      size_t cap = hs->cap ? hs->cap * 2 : 16;
      struct handshake *v = realloc(hs->v, cap * sizeof *v);
      if (!v) {
        refuse(c, ep, FMX_NO_RESOURCES);
        close(c);
        continue;
      }
      hs->v = v;
      hs->cap = cap;
    }
    hs->v[hs->n++] = (struct handshake){c, cred, sys_now_ns() + fmx_cfg.handshake_ms * 1000000ull};
  }
}

/* Partners the watcher polls, snapshotted under the lock with their
 * generation: a slot reused meanwhile (ep_partner_reap) is not mistaken
 * for the one that died. */
struct watched {
  struct partner *p;
  uint32_t gen;
};

/* The watcher: sleeps in poll() on the listening socket, its control
 * eventfd, the handshakes in flight and every peer's pidfd, so connects
 * are answered and deaths seen even while the application computes and
 * never calls fmx. */
static void *watcher_main(void *arg) {
  struct fmx_endpoint *ep = arg;
  struct pollfd *pf = NULL;
  struct watched *who = NULL;
  size_t cap = 0;
  struct handshakes hs = {0};
  transport_up->thread_init();
  for (;;) {
    transport_up->lock(ep);
    if (transport_ep(ep)->closing) {
      transport_up->unlock(ep);
      break;
    }
    size_t npeers = 0;
    for (struct partner *p = NULL; (p = transport_up->peer_next(ep, &shm_transport, p)) != NULL;) npeers++;
    size_t need = 2 + hs.n + npeers;
    if (need > cap) {
      struct pollfd *npf = realloc(pf, need * sizeof *pf);
      if (npf) pf = npf;
      struct watched *nw = realloc(who, need * sizeof *who);
      if (nw) who = nw;
      if (npf && nw) cap = need;
    }
    uint64_t now = sys_now_ns();
    size_t n = 0, nhs = 0;
    if (cap >= need) {
      int accepting = now >= hs.accept_after;
      pf[n++] = (struct pollfd){accepting ? shm_ep(ep)->listen_fd : -1, POLLIN, 0};
      pf[n++] = (struct pollfd){shm_ep(ep)->ctl_fd, POLLIN, 0};
      for (size_t i = 0; i < hs.n; i++) pf[n++] = (struct pollfd){hs.v[i].fd, POLLIN, 0};
      nhs = hs.n;
      for (struct partner *p = NULL; (p = transport_up->peer_next(ep, &shm_transport, p)) != NULL;) {
        struct transport_peer *t = transport_peer(p);
        if (t->state == PARTNER_ALIVE && t->bulk->pidfd >= 0) {
          who[n] = (struct watched){p, t->gen};
          pf[n++] = (struct pollfd){t->bulk->pidfd, POLLIN, 0};
        }
      }
    }
    transport_up->unlock(ep);
    if (n < 2) {
      usleep(10000);
      continue;
    }
    /* Sleep until the nearest handshake deadline (or the accept pause). */
    uint64_t wake = now < hs.accept_after ? hs.accept_after : UINT64_MAX;
    for (size_t i = 0; i < nhs; i++)
      if (hs.v[i].deadline < wake) wake = hs.v[i].deadline;
    int timeout = wake == UINT64_MAX ? -1 : wake <= now ? 0 : (int)((wake - now + 999999) / 1000000);
    int r = poll(pf, n, timeout);
    if (r < 0) continue;
    if (pf[1].revents) {
      uint64_t v;
      if (read(shm_ep(ep)->ctl_fd, &v, sizeof v) < 0) { /* nothing to do: it is a level */ }
    }
    /* Handshakes first (pf[2..2+nhs) are hs.v[0..nhs) until one is dropped:
     * walk backwards so dropping (swap with the last) keeps the rest). */
    now = sys_now_ns();
    for (size_t i = nhs; i-- > 0;) {
      struct handshake *h = &hs.v[i];
      if (pf[2 + i].revents && serve_hello(ep, h->fd, &h->cred)) {
        hs_drop(&hs, i);
      } else if (now >= h->deadline) {
        count(ep, 0);
        log_info("FMX-CONN-SLOW", "endpoint %u: connect from pid %d sent no request in %llu ms: dropped", shm_eid(ep),
                 (int)h->cred.pid, (unsigned long long)fmx_cfg.handshake_ms);
        hs_drop(&hs, i);
      }
    }
    if (pf[0].revents & POLLIN) accept_all(ep, &hs);
    for (size_t i = 2 + nhs; i < n; i++) {
      if (!pf[i].revents) continue;
      transport_up->lock(ep);
      /* The partner may have been failed or its slot reused meanwhile. */
      struct partner *p = who[i].p;
      struct transport_peer *t = transport_peer(p);
      if (t->gen == who[i].gen && t->state == PARTNER_ALIVE && t->bulk->pidfd == pf[i].fd) {
        TRANSPORT_CNT(ep, PEER_DEATH);
        log_info("FMX-PEER-DEAD", "endpoint %u: peer endpoint %u (pid %d) died", shm_eid(ep), t->eid,
                 (int)t->bulk->pid);
        transport_up->peer_fail(ep, p, PARTNER_DEAD, FMX_REMOTE_ENDPOINT_UNREACHABLE);
      }
      transport_up->unlock(ep);
    }
  }
  while (hs.n) hs_drop(&hs, hs.n - 1);
  free(hs.v);
  free(pf);
  free(who);
  return NULL;
}

int shm_watcher_start(struct fmx_endpoint *ep) {
  struct shm_ep *se = shm_ep(ep);
  se->ctl_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (se->ctl_fd < 0) return -errno;
  /* The watcher must not take signals meant for the application. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int r = pthread_create(&se->watcher, NULL, watcher_main, ep);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (r) {
    close(se->ctl_fd);
    return -r;
  }
  se->watcher_running = 1;
  return 0;
}

void shm_watcher_kick(struct fmx_endpoint *ep) {
  struct shm_ep *se = shm_ep(ep);
  uint64_t one = 1;
  if (se->watcher_running && write(se->ctl_fd, &one, sizeof one) < 0) { /* counter saturated: already kicked */ }
}

void shm_watcher_stop(struct fmx_endpoint *ep) {
  struct shm_ep *se = shm_ep(ep);
  if (!se->watcher_running) return;
  shm_watcher_kick(ep); /* the endpoint is marked closing already */
  pthread_join(se->watcher, NULL);
  se->watcher_running = 0;
  close(se->ctl_fd);
}

void shm_unlisten(struct fmx_endpoint *ep) {
  struct shm_ep *se = shm_ep(ep);
  if (se->listening) close(se->listen_fd);
  se->listening = 0;
}
