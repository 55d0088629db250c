/* SPDX-License-Identifier: MIT */
/* Internal to fmx_perf's copy kernels (copymodes.c, copylimit.c,
 * cachepollution.c). */
#ifndef FMX_PERF_COPYMODES_INT_H
#define FMX_PERF_COPYMODES_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "copymodes.h"
#include "fmx.h"
#include "kernels.h"

typedef void (*copy_fn)(void *dst, const void *src, size_t len);

/* The library's topology (fmx_get_info), read once. */
extern fmx_topology_t g_topo;

/* A comment line: in the table on stdout; beside JSON on stderr (not --quiet). */
void note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The progress line on stderr (a tty: one line redrawn; else a line when done). */
void progress(const char *mode, const char *what, uint64_t size, uint64_t iters, bool done);
/* A JSON row's common head (the caller adds its fields and the brace). */
void json_head(const char *kernel, int np, uint64_t size, uint64_t iters, double lat_us, double mbps,
               const char *routine);
/* bytes (rounded up to pages), 4 KiB aligned, every page written with fill. */
uint8_t *alloc_touched(size_t bytes, int fill);
/* Pin the calling thread to core: 0, or the error (told). */
int pin_self(int core);
/* The median of v[0..n) (sorts v). */
double median(double *v, size_t n);
/* fmx_copy_async and its wait (an offload channel's copy; done at once by
 * the caller below FMX_COPY_ASYNC_THRESHOLD); dies if it fails. */
void async_copy(uint8_t *dst, const uint8_t *src, size_t size);
int copylimit(const fmx_copy_routine_t *rt, size_t nrt);
int cachepollution(const fmx_copy_routine_t *rt, size_t nrt);
int copyoverlap(void);

#endif
