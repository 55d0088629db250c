/* SPDX-License-Identifier: MIT */
/* fmx_get_info's answers: how a value is handed out, and the introspection
 * keys (engines, tunables, topology) that let tools need only fmx.h. */
#ifndef FMX_CORE_INTROSPECT_H
#define FMX_CORE_INTROSPECT_H

#include <stddef.h>
#include <stdint.h>

#include "fmx.h"

/* Copy n bytes of v to out: FMX_BAD_INFO_LENGTH when out holds fewer. */
fmx_return_t info_put(void *out, uint32_t out_len, const void *v, size_t n);
/* Copy the string s to out, cut to fit and NUL-terminated. */
fmx_return_t info_put_str(void *out, uint32_t out_len, const char *s);

/* fmx_get_info for the introspection keys (FMX_INFO_ENGINE_COUNT ..
 * FMX_INFO_TOPOLOGY): 1 and *rc when key is one of them, else 0. */
int introspect_info(uint32_t key, const void *in, uint32_t in_len, void *out, uint32_t out_len, fmx_return_t *rc);

#endif
