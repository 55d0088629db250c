/* SPDX-License-Identifier: MIT */
/* What the protocol layer asks of a transport. The protocol (eager,
 * rendezvous, matching) never knows which transport carries a record. */
#ifndef FMX_CORE_TRANSPORT_H
#define FMX_CORE_TRANSPORT_H

#include <sys/uio.h>

#include "fmx.h"
#include "proto/proto.h"

struct fmx_endpoint;
struct partner;

struct fmx_transport_ops {
  const char *name;
  /* Queue one record (header + hdr->len payload bytes gathered from iov) to
   * the partner, in order. 0, or -1 when there is no room now (retry later). */
  int (*push)(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h, const struct iovec *iov,
              int iovcnt);
  /* Largest payload one record may carry to this partner. */
  size_t (*max_payload)(struct partner *p);
  /* Deliver every record waiting from this partner to proto_deliver(). */
  void (*poll)(struct fmx_endpoint *ep, struct partner *p);
  /* Tell the peer we give up on the connection (code: why), without a
   * record: it fails its side once it has taken what we pushed. */
  void (*abort)(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code);
  /* Release the partner's transport state (the partner is gone). */
  void (*release)(struct fmx_endpoint *ep, struct partner *p);
};

extern const struct fmx_transport_ops shm_transport;

#endif
