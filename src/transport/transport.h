/* SPDX-License-Identifier: MIT */
/* What the protocol and the core ask of a transport: the seam every
 * transport (shm, later net) implements. The protocol (eager, rendezvous,
 * matching) never knows which transport carries a record. */
#ifndef FMX_TRANSPORT_TRANSPORT_H
#define FMX_TRANSPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "base/counters.h"
#include "bulk/xfer.h"
#include "fmx.h"
#include "transport/record.h"

struct fmx_endpoint;
struct partner;
struct bulk_conn;
struct fmx_transport_ops;

enum partner_state { PARTNER_ALIVE = 0, PARTNER_DEAD, PARTNER_CLOSED, PARTNER_DISCONNECTED };

/* What a transport reads of an endpoint (the core's, fixed once it is
 * open; closing and nlive change under the endpoint's lock). */
struct transport_ep {
  uint64_t nic;
  uint32_t board, eid, key, session;
  int desc_fd;          /* its wake word's memfd (platform/wake.h), for peers to map */
  int closing;          /* fmx_close_endpoint began */
  uint32_t nlive;       /* partners in use, ourselves included */
  uint64_t pull_min;    /* the shortest message a partner on another host pulls (net sets it); 0: no net */
  struct bulk_env *bulk; /* the endpoint as the bulk engines know it (our CPU, its counters) */
  int crowded;           /* the core's: tasks outnumber the host's hardware threads (FMX_CROWDED) */
};
/* Count an event of ep (base/counters.h), its lock held. */
#define TRANSPORT_CNT(ep, name) (transport_ep(ep)->bulk->counters[CNT_##name]++)
#define TRANSPORT_ADD(ep, name, n) (transport_ep(ep)->bulk->counters[CNT_##name] += (n))
/* A counter that is a gauge (its value now). */
#define TRANSPORT_SET(ep, name, v) (transport_ep(ep)->bulk->counters[CNT_##name] = (v))

/* What a transport reads and fills of a partner: who it is (the
 * transport's handshake fills nic, eid, session and bulk's first part:
 * pid, pidfd, CPU, CMA rights) and the core's view of it (state, gen). */
struct transport_peer {
  uint64_t nic;
  uint32_t eid;
  uint32_t session;
  uint32_t gen;  /* the core's: bumped when the partner's slot is reused */
  int state;     /* the core's: enum partner_state */
  struct bulk_peer *bulk; /* the core's, for the handshake to fill; one shared and read-only for a partner on another host */
};

/* ---- The core's side of the seam (core/transport.c). The endpoint and
 * the partner stay opaque: a transport reaches its views of them and its
 * private state through the four calls below (their layout, the core's,
 * inlined at link time), and asks the core to act through transport_up.
 * ---- */

/* How a transport hands the protocol a record that arrived from p (the
 * core gives it to poll: transports never call the protocol). lane: the
 * transport's connection it came on, opaque to the protocol: what that
 * connection lends the bulk engines (bulk/conn.h; shm: its link's), or
 * NULL when the transport lends them nothing. Returns nonzero once p is no
 * longer alive: deliver nothing more from it. */
typedef int (*transport_deliver_fn)(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane,
                                    const struct proto_hdr *h, const void *payload);

struct transport_ep *transport_ep(struct fmx_endpoint *ep);
struct transport_peer *transport_peer(struct partner *p);
/* The transport's private state of partner p: partner_size bytes, zeroed
 * when the partner is made (core/partner.c), aligned to
 * TRANSPORT_STATE_ALIGN (a state needs no more). */
#define TRANSPORT_STATE_ALIGN 8
void *transport_state(struct partner *p);
/* The partner whose private state `state` is (transport_state's inverse). */
struct partner *transport_partner(void *state);
/* The transport's private state of endpoint ep: ep_size bytes, zeroed
 * when the endpoint is made, before listen. */
void *transport_ep_state(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp);
/* What a transport asks the core to do: given at fmx_init
 * (transports_init sets transport_up), called through transport_up; a
 * transport never names a function of the core. */
struct transport_core {
  /* Wake the threads of ours that sleep waiting on ep (a record to
   * ourselves arrived: nobody else would). */
  void (*wake_own)(struct fmx_endpoint *ep);
  /* The endpoint's lock (the core's): partners are made, found and failed
   * under it. */
  void (*lock)(struct fmx_endpoint *ep);
  void (*unlock)(struct fmx_endpoint *ep);
  /* A thread of the transport's own (shm's watcher) starts. */
  void (*thread_init)(void);
  /* A new partner served by tp (lock held), its state zeroed; NULL when
   * out of memory. Partners gone for good are reaped first. */
  struct partner *(*peer_new)(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp);
  /* The live partner with that endpoint id and session, or NULL. */
  struct partner *(*peer_find)(struct fmx_endpoint *ep, uint32_t eid, uint32_t session);
  /* The handshake filled p's view (transport_peer): the core counts it. */
  void (*peer_joined)(struct fmx_endpoint *ep, struct partner *p);
  /* The handshake of a partner dialed (dial) is done: what waits for it
   * (fmx_iconnect's requests) completes. Lock held. */
  void (*peer_ready)(struct fmx_endpoint *ep, struct partner *p);
  /* The partner died or left (state: enum partner_state): its requests
   * complete with code. fail takes what its connection still holds
   * first; down does not. */
  void (*peer_fail)(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code);
  void (*peer_down)(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code);
  /* The partners tp serves that are not reaped, in slot order: start with
   * prev NULL; NULL at the end. Lock held. */
  struct partner *(*peer_next)(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp, struct partner *prev);
  /* A rendezvous we send to p is in flight: its engine may still use what
   * the connection we sent its RTS on lends (bulk/conn.h). */
  int (*peer_lending)(struct partner *p);
  /* Something of ours waits for p: a send it has not completed, a receive
   * from it not filled yet. */
  int (*peer_waited)(struct partner *p);
  /* One progress pass on ep, its lock held (a transport that waits for a
   * handshake answer makes progress meanwhile: packets for its other
   * partners keep moving). */
  void (*progress)(struct fmx_endpoint *ep);
  /* How many times fmx_wakeup was called on ep: a connect that waits
   * reads it first and gives up (FMX_TIMEOUT) when it changes. */
  uint32_t (*wakeups)(struct fmx_endpoint *ep);
};
extern const struct transport_core *transport_up; /* transport/seam.c */

/* A transport: how records reach the partners it serves. Registered
 * explicitly (transport_register, at fmx_init); every partner points to
 * the one that serves it (partner->tp). Verbs:
 *   listen   claim endpoint id ep->eid for ep: 0, or -errno (-EADDRINUSE:
 *            taken by us, -EACCES: by another user); NULL: nothing to claim
 *   open     start serving ep (incoming connections, peers' deaths): 0 or
 *            -errno; NULL: nothing to start
 *   close    stop serving ep (its lock not held): after it nothing of the
 *            transport runs for ep; NULL: nothing to stop
 *   connect  handshake with endpoint eid of board nic (key checked by the
 *            peer), called without ep->lock: the partner in *out (NULL for
 *            self: the core makes ep->self). The core chose the transport
 *            by nic: shm for this host's, net for another's.
 *   dial     connect without waiting (ep->lock held): the partner at once,
 *            its handshake carried on by progress; records pushed to it
 *            wait (-EAGAIN) until it completes, and fail with it (the
 *            partner fails: a wrong key, no answer within timeout_ms).
 *            NULL: the core connects and waits
 *   dialing  1 while p's handshake (dial) is under way; it ends with
 *            transport_core.peer_ready or with the partner's failure
 *   push     queue one record (header + hdr->len payload bytes gathered
 *            from iov) to the partner, in order: 0, or -EAGAIN when there is
 *            no room now, -ENOMEM (retry later either way)
 *   max_payload  the largest payload one record may carry to the partner:
 *            at least TRANSPORT_MIN_PAYLOAD (a tiny message always fits)
 *   eager_max    the longest message worth sending eagerly to the partner,
 *            where the transport's rendezvous has costs of its own (net:
 *            the pull protocol); NULL: the protocol's thresholds
 *   batch    bytes > 0: the records pushed to one partner from now on,
 *            that many payload bytes in all, may leave together (net: one
 *            GSO send); 0: what waits leaves now. Pushes between the two
 *            run no progress. NULL: every record leaves as it is pushed
 *   poll     deliver every record waiting from the partner, in order, with
 *            the deliver callback it is given (NULL: progress does it)
 *   progress the endpoint's share of a progress pass (lock held): take
 *            what arrived for any partner, including handshakes, and run
 *            the transport's timers (NULL: nothing beyond poll)
 *   wait_fd  a descriptor a sleeping waiter polls (readable: something
 *            arrived), and in *max_ns the longest it may sleep before the
 *            transport's timers are due; -1 when none (NULL: none)
 *   nic      the NIC id this host is known by through the transport (the
 *            board's), 0 when it has none (NULL: none)
 *   conn     what the connection our records to p go on lends the bulk
 *            engines (the sender's side of a rendezvous): NULL, or the op
 *            NULL, when nothing
 *   unread   1 when p has not yet taken every record we pushed to it, 0
 *            when it has (NULL: cannot be seen)
 *   abort    tell the peer we give up on the connection (code: why),
 *            without a record: it fails its side once it has taken what we
 *            pushed (NULL: no peer to tell)
 *   release  free the partner's transport state (the partner is gone)
 *   ep_fini  free the endpoint's transport state (every partner released;
 *            called even when open or listen never ran or failed)
 *   fini     the library finalizes (every endpoint closed) */
/* What every transport carries in one record (its max_payload is never
 * less): a message this short is eager without asking the transport. */
#define TRANSPORT_MIN_PAYLOAD 64

struct fmx_transport_ops {
  const char *name;
  size_t tiny_max; /* the largest payload that travels in the record's first cache line */
  size_t partner_size; /* its private state per partner (transport_state) */
  size_t ep_size;      /* its private state per endpoint (transport_ep_state) */
  /* Its partners share our address space (self): a rendezvous is a plain
   * copy from the addresses the RTS names, by the receiver. */
  int same_space;
  int (*listen)(struct fmx_endpoint *ep);
  int (*open)(struct fmx_endpoint *ep);
  void (*close)(struct fmx_endpoint *ep);
  /* Its partners are on other hosts: nothing of their memory is
   * reachable from here (no CMA, no mapping), and records travel over a
   * network (net). */
  int remote;
  fmx_return_t (*connect)(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                          struct partner **out);
  fmx_return_t (*dial)(struct fmx_endpoint *ep, uint64_t nic, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                       struct partner **out);
  int (*dialing)(struct partner *p);
  int (*push)(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h, const struct iovec *iov,
              int iovcnt);
  size_t (*max_payload)(struct partner *p);
  uint64_t (*eager_max)(struct partner *p);
  void (*batch)(struct fmx_endpoint *ep, uint64_t bytes);
  int (*unread)(struct partner *p);
  void (*poll)(struct fmx_endpoint *ep, struct partner *p, transport_deliver_fn deliver);
  void (*progress)(struct fmx_endpoint *ep, transport_deliver_fn deliver);
  int (*wait_fd)(struct fmx_endpoint *ep, uint64_t *max_ns);
  uint64_t (*nic)(void);
  struct bulk_conn *(*conn)(struct partner *p);
  void (*abort)(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code);
  void (*release)(struct fmx_endpoint *ep, struct partner *p);
  void (*ep_fini)(struct fmx_endpoint *ep);
  void (*fini)(void);
};

#endif
