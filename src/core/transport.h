/* SPDX-License-Identifier: MIT */
/* The core's registry of transports (the ops table: transport/transport.h). */
#ifndef FMX_CORE_TRANSPORT_H
#define FMX_CORE_TRANSPORT_H

#include "transport/transport.h"

#define TRANSPORT_MAX 4

/* The registry (core/transport.c). */
void transport_register(const struct fmx_transport_ops *t);
/* Register the transports fmx has (fmx_init). */
void transports_init(void);
/* The transport that reaches endpoints of this host. */
const struct fmx_transport_ops *transport_local(void);
/* The one that serves an endpoint's partner to itself (ep->self). */
const struct fmx_transport_ops *transport_self(void);
/* Each transport's per-endpoint state (ops.ep_size bytes, zeroed), made
 * before it listens: 0, or -ENOMEM. */
int transports_ep_init(struct fmx_endpoint *ep);
/* ops.ep_fini of each, then the states freed (the endpoint's partners are
 * released by then). */
void transports_ep_fini(struct fmx_endpoint *ep);
/* fini of every registered transport. */
void transports_fini(void);

#endif
