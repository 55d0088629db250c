/* SPDX-License-Identifier: MIT */
/* The same-host transport, as the core's registry sees it: an ops table. */
#ifndef FMX_SHM_SHM_H
#define FMX_SHM_SHM_H

#include "transport/transport.h"

extern const struct fmx_transport_ops shm_transport;

#endif
