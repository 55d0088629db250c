/* SPDX-License-Identifier: MIT */
#ifndef FMX_CORE_INTROSPECT_H
#define FMX_CORE_INTROSPECT_H

#include <stdint.h>

#include "fmx.h"

/* fmx_get_info for the introspection keys (FMX_INFO_ENGINE_COUNT ..
 * FMX_INFO_TOPOLOGY): 1 and *rc when key is one of them, else 0. */
int introspect_info(uint32_t key, const void *in, uint32_t in_len, void *out, uint32_t out_len, fmx_return_t *rc);

#endif
