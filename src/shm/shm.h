/* SPDX-License-Identifier: MIT */
/* The same-host transport, as the core's registry sees it: an ops table;
 * and its state per endpoint and per partner, for src/shm and the bulk
 * engines that use its connections. */
#ifndef FMX_SHM_SHM_H
#define FMX_SHM_SHM_H

#include <pthread.h>

#include "region/pool.h"
#include "transport/transport.h"

extern const struct fmx_transport_ops shm_transport;

/* Per endpoint (transport_ep_state): its socket, its watcher thread, its
 * send pool. Zeroed when made: each part says whether it is set up. */
struct shm_ep {
  int listening;  /* listen_fd is ours (shm_listen) */
  int listen_fd;
  int watcher_running; /* the watcher runs, ctl_fd is open (listen.c) */
  int ctl_fd;          /* eventfd: tells the watcher thread to rescan or quit */
  pthread_t watcher;
  uint64_t probe_word; /* peers read it to prove CMA works (hello.c) */
  struct buf_pool pool;
  int pool_ready;
  uint32_t ring_for;    /* ep->nlive when ring_cells was set */
  uint64_t ring_cells;  /* the cells of a ring our sends use (shm.c) */
  int handover;         /* replies' records go to the shared cache (shm.c, hand_over) */
  int own_ahead;        /* the ring's next cells are taken for writing ahead (shm.c, shm_push) */
};

/* Per partner (transport_state). */
struct shm_peer {
  struct shm_ep *ep;         /* our endpoint's state */
  struct ep_desc *desc;      /* its endpoint's descriptor, mapped: to wake it */
  struct buf_pool *pool;     /* ours, to lend buffers from */
  uint32_t pool_held[POOL_CLASSES]; /* our buffers it holds, per class */
  struct pool_view peer; /* its pool, to copy out of */
  /* Both ends connected at once: two links. Both ends move their
   * sending to the one the lower endpoint id made (shm.c, switch_tx), so
   * the other's rings stop taking pages. */
  int switch_tx;             /* link[1] is that one: send on it once safe */
  uint32_t pushes;           /* while switch_tx: pushes since the last look */
  uint64_t tx_medium_left;   /* bytes of the medium message we push still to come */
  struct shm_link *link[2];   /* we send on link[0]; we poll every one but rx_done */
  int nlink;
  /* Replies (shm.c, hand_over): heard, records of its taken since our
   * last push; answered, that push answered some. */
  uint8_t heard, answered;
  uint8_t quiet; /* our last push had heard nothing since the one before it */
  /* A reply was pushed: the next cells of our ring are taken for writing
   * at a poll that finds nothing, once the peer has read it (shm.c). */
  uint8_t own_pending;
  /* Of two links, the one the peer will push on no more (shm.c,
   * retire_rx): polled no longer. */
  struct shm_link *rx_done;
};

static inline struct shm_peer *shm_peer(struct partner *p) { return transport_state(p); }
static inline struct shm_ep *shm_ep(struct fmx_endpoint *ep) { return transport_ep_state(ep, &shm_transport); }
/* Our endpoint id (for names and messages). */
static inline uint32_t shm_eid(struct fmx_endpoint *ep) { return transport_ep(ep)->eid; }
/* Of two links with p, whether ch is the one both ends send on: the one
 * the lower endpoint id made. */
int shm_link_chosen(struct fmx_endpoint *ep, struct partner *p, const struct shm_link *ch);

/* Make the endpoint's pool (at listen). 0 or -errno. */
int shm_pool_open(struct fmx_endpoint *ep);
/* Our pool's fd, to pass in a handshake. */
int shm_pool_fd(struct fmx_endpoint *ep);
/* Link a new partner to our pool and map its pool from pool_fd: 0, or -errno
 * with *why set. */
int shm_peer_attach(struct fmx_endpoint *ep, struct partner *p, int pool_fd, const char **why);
/* Wake the partner (a struct partner *) if it sleeps: what a link's
 * bulk_conn calls when an engine filled a slot or a stripe. */
void shm_conn_wake(void *partner);

#endif
