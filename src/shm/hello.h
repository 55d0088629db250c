/* SPDX-License-Identifier: MIT */
/* Internal to src/shm: the handshake's wire, shared by connect.c and
 * listen.c (the layout of struct shm_hello is in connect.h). */
#ifndef FMX_SHM_HELLO_H
#define FMX_SHM_HELLO_H

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

#include "shm/connect.h"

/* HELLO: descriptor, pool, link, pipe read end, pipe write end;
 * REPLY: descriptor, pool. */
#define SHM_MAX_FDS 5

/* The address of (uid, board, eid)'s abstract socket; returns its length. */
socklen_t shm_addr(struct sockaddr_un *sa, unsigned uid, uint32_t board, uint32_t eid);
/* Send a hello/reply with up to SHM_MAX_FDS fds. 0 or -errno. */
int shm_hello_send(int fd, const struct shm_hello *h, const int *fds, int nfds);
/* Receive one without blocking: 0, -EAGAIN (nothing yet), -EPROTO
 * (malformed: every fd closed), -EMFILE (our fd table could not take the
 * passed fds), -ECONNRESET (the peer closed with our message unread: its
 * answer, if any, is lost). fds[] gets up to SHM_MAX_FDS fds, -1 where
 * absent. */
int shm_hello_recv(int fd, struct shm_hello *h, int fds[SHM_MAX_FDS]);
/* Close the fds of a received hello that are still open. */
void shm_close_fds(int fds[SHM_MAX_FDS]);
/* Wait until fd has `ev`, up to timeout_ms (-1: forever). 0 or -ETIMEDOUT. */
int shm_wait_fd(int fd, short ev, int timeout_ms);
/* Our hello (or reply) of `type`. */
void shm_hello_fill(struct fmx_endpoint *ep, struct shm_hello *h, int type);
/* Register what a handshake brought (ep->lock held): the partner, or NULL
 * when its descriptor or pool is not a sealed memfd of the right form (or
 * out of memory). */
struct partner *shm_adopt(struct fmx_endpoint *ep, const struct shm_hello *h, pid_t pid, int desc_fd, int pool_fd,
                          struct shm_link *ch);

#endif
