/* SPDX-License-Identifier: MIT */
/*
 * Same-host discovery and connect, without files:
 *  - each endpoint listens on the abstract Unix socket "\0fmx/<uid>/<board>/<eid>";
 *  - connect = one SOCK_SEQPACKET exchange: HELLO {key, our eid/session,
 *    CMA probe address} with our descriptor and pool memfds, a new link
 *    memfd and the peer's ends of the link's two pipes (vmsplice),
 *    answered by REPLY {status, its session, its probe address} with its
 *    descriptor and pool memfds. A pair has one link: who connects to a
 *    peer that already connected to it sends none (SHM_F_NOLINK) and both
 *    use the peer's; two that connect at once make two, and both ends
 *    move to the one the lower endpoint id made (shm.c);
 *  - the acceptor checks the key and the peer's uid (SO_PEERCRED): abstract
 *    sockets have no file permissions, so the uid in the name is only a
 *    namespace and the credential check is what keeps other users out;
 *  - both sides open a pidfd of the other: the watcher thread sees a peer die.
 */
#ifndef FMX_SHM_CONNECT_H
#define FMX_SHM_CONNECT_H

#include <stdint.h>

#include "fmx.h"

struct fmx_endpoint;
struct partner;

#define SHM_HELLO_MAGIC 0x464d5848u /* "FMXH" */
#define SHM_HELLO_VERSION 3 /* 2: cpu, 3: the pool fd */
enum { SHM_HELLO = 1, SHM_REPLY = 2 };

struct shm_hello {
  uint32_t magic;
  uint32_t version;
  uint32_t type;
  uint32_t status; /* REPLY: fmx_return_t */
  uint32_t key;
  uint32_t eid;
  uint32_t session;
  uint32_t board;
  uint64_t nic;
  uint64_t probe_addr; /* a word the peer may read with process_vm_readv */
  uint64_t probe_val;
  int32_t cpu; /* the CPU the sender's process runs on (a hint), -1 unknown, -2 unbound (topo_home_cpu) */
  uint32_t flags; /* SHM_F_*; 0 from a peer that predates them */
};
/* HELLO: the two vmsplice pipe ends follow the link fd; REPLY: the
 * listener took them (else the connector closes its ends). */
#define SHM_F_PIPES 0x1
/* HELLO: no link (fds: descriptor and pool only): we have the one the
 * peer made when it connected to us; REPLY with FMX_BUSY: we have none with
 * you, send one (the connector tries again at once, with a link). */
#define SHM_F_NOLINK 0x2
#define SHM_F_NEEDLINK 0x4
_Static_assert(sizeof(struct shm_hello) == 64, "hello layout");

/* Bind the listening socket; 0, or -errno (-EADDRINUSE: id taken). */
int shm_listen(struct fmx_endpoint *ep);
/* The abstract socket name of (uid, board, eid); returns the address length. */
int shm_socket_name(char *buf, size_t len, unsigned uid, uint32_t board, uint32_t eid);
/* Start/stop the watcher thread (accepts connects, watches peers' pidfds). */
int shm_watcher_start(struct fmx_endpoint *ep);
void shm_watcher_stop(struct fmx_endpoint *ep);
/* Stop listening (the endpoint closes; shm_ep_fini does it too). */
void shm_unlisten(struct fmx_endpoint *ep);
/* Tell the watcher the set of pidfds changed. */
void shm_watcher_kick(struct fmx_endpoint *ep);
/* Handshake with (board, eid) on this host. Called without ep->lock. */
fmx_return_t shm_connect(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                         struct partner **out);

#endif
