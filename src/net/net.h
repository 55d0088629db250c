/* SPDX-License-Identifier: MIT */
/* The net transport, as the core's registry sees it: an ops table. */
#ifndef FMX_NET_NET_H
#define FMX_NET_NET_H

#include "transport/transport.h"

extern const struct fmx_transport_ops net_transport;

#endif
