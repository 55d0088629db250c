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
/* The NIC id of this host's board: the first transport that has one (net:
 * its interface's MAC), else an id derived from the machine id. */
uint64_t transports_nic(void);
/* The transport that reaches other hosts' boards, or NULL. */
const struct fmx_transport_ops *transport_remote(void);
/* Start the transports beyond the local one on ep (net): listen and open
 * each; one that cannot start is left off for ep (logged), never fatal.
 * Those with a progress verb are listed in ep->prog. */
void transports_ep_open(struct fmx_endpoint *ep);
/* Stop them (ep closing, its lock not held). */
void transports_ep_close(struct fmx_endpoint *ep);
/* Whether tp runs on ep. */
int transport_on(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp);
/* A descriptor a sleeping waiter of ep also polls, and the longest it may
 * sleep (transport timers), or -1 (ep's lock held). */
int transports_wait_fd(struct fmx_endpoint *ep, uint64_t *max_ns);
/* fini of every registered transport. */
void transports_fini(void);

#endif
