/* SPDX-License-Identifier: MIT */
/* What the protocol and the core ask of a transport: the seam every
 * transport (shm, later net) implements. The protocol (eager, rendezvous,
 * matching) never knows which transport carries a record. */
#ifndef FMX_TRANSPORT_TRANSPORT_H
#define FMX_TRANSPORT_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "fmx.h"
#include "transport/record.h"

struct fmx_endpoint;
struct partner;
struct bulk_conn;
struct fmx_transport_ops;

/* How a transport hands the protocol a record that arrived from p (the
 * core gives it to poll: transports never call up by name). lane: the
 * transport's connection it came on, opaque to the protocol: what that
 * connection lends the bulk engines (bulk/conn.h; shm: its channel's), or
 * NULL when the transport lends them nothing. Returns nonzero once p is no
 * longer alive: deliver nothing more from it. */
typedef int (*transport_deliver_fn)(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane,
                                    const struct proto_hdr *h, const void *payload);

/* The transport's private state of partner p: partner_size bytes, zeroed
 * when the partner is made (core/endpoint.c). */
void *transport_state(struct partner *p);
/* The transport's private state of endpoint ep: ep_size bytes, zeroed
 * when the endpoint is made, before listen. */
void *transport_ep_state(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp);
/* Wake the threads of ours that sleep waiting on ep (a record to
 * ourselves arrived: nobody else would). */
void transport_wake_own(struct fmx_endpoint *ep);

/* A transport: how records reach the partners it serves. Registered
 * explicitly (transport_register, at fmx_init); every partner points to
 * the one that serves it (partner->tp). Verbs:
 *   listen   claim endpoint id ep->eid for ep: 0, or -errno (-EADDRINUSE:
 *            taken by us, -EACCES: by another user); NULL: nothing to claim
 *   open     start serving ep (incoming connections, peers' deaths): 0 or
 *            -errno; NULL: nothing to start
 *   close    stop serving ep (its lock not held): after it nothing of the
 *            transport runs for ep; NULL: nothing to stop
 *   connect  handshake with endpoint eid of this transport's reach (key
 *            checked by the peer), called without ep->lock: the partner in
 *            *out (NULL for self: the core makes ep->self)
 *   push     queue one record (header + hdr->len payload bytes gathered
 *            from iov) to the partner, in order: 0, or -1 when there is no
 *            room now (retry later)
 *   max_payload  the largest payload one record may carry to the partner
 *   poll     deliver every record waiting from the partner, in order, with
 *            the deliver callback it is given
 *   conn     what the connection our records to p go on lends the bulk
 *            engines (the sender's side of a rendezvous): NULL, or the op
 *            NULL, when nothing
 *   abort    tell the peer we give up on the connection (code: why),
 *            without a record: it fails its side once it has taken what we
 *            pushed (NULL: no peer to tell)
 *   release  free the partner's transport state (the partner is gone)
 *   ep_fini  free the endpoint's transport state (every partner released;
 *            called even when open or listen never ran or failed)
 *   fini     the library finalizes (every endpoint closed) */
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
  fmx_return_t (*connect)(struct fmx_endpoint *ep, uint32_t eid, uint32_t key, uint32_t timeout_ms,
                          struct partner **out);
  int (*push)(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h, const struct iovec *iov,
              int iovcnt);
  size_t (*max_payload)(struct partner *p);
  void (*poll)(struct fmx_endpoint *ep, struct partner *p, transport_deliver_fn deliver);
  struct bulk_conn *(*conn)(struct partner *p);
  void (*abort)(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code);
  void (*release)(struct fmx_endpoint *ep, struct partner *p);
  void (*ep_fini)(struct fmx_endpoint *ep);
  void (*fini)(void);
};

#endif
