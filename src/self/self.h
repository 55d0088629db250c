/* SPDX-License-Identifier: MIT */
/* The self transport, as the core's registry sees it: an ops table. */
#ifndef FMX_SELF_SELF_H
#define FMX_SELF_SELF_H

#include "transport/transport.h"

extern const struct fmx_transport_ops self_transport;

#endif
