/* SPDX-License-Identifier: MIT */
/* The core's registry of transports (the ops table: transport/transport.h). */
#ifndef FMX_CORE_TRANSPORT_H
#define FMX_CORE_TRANSPORT_H

#include "transport/transport.h"

/* The registry (core/transport.c). */
void transport_register(const struct fmx_transport_ops *t);
/* Register the transports fmx has (fmx_init). */
void transports_init(void);
/* The transport that reaches endpoints of this host. */
const struct fmx_transport_ops *transport_local(void);
/* The one that serves an endpoint's partner to itself (ep->self). */
const struct fmx_transport_ops *transport_self(void);
/* fini of every registered transport. */
void transports_fini(void);

#endif
