/* SPDX-License-Identifier: MIT */
/* The core's calls for the transports (transport.h), set by the core at
 * fmx_init before any endpoint opens. */
#include "transport/transport.h"

const struct transport_core *transport_up;
