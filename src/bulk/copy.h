/* SPDX-License-Identifier: MIT */
/* The asynchronous copy API's engine (bulk/copy.c): one copy within this
 * process, from src segments into dst segments, len bytes (what src
 * holds; dst holds at least as much), run by an offload channel. */
#ifndef FMX_BULK_COPY_H
#define FMX_BULK_COPY_H

#include <stdint.h>

#include "fmx.h"

struct bulk_copy;

/* Copy now, in the calling thread: 0, or -ENOMEM (a list to walk). */
int bulk_copy_now(const fmx_seg_t *dst, uint32_t nd, const fmx_seg_t *src, uint32_t ns, uint64_t len);
/* Hand the copy to the next channel: 0 and *out, or -ENODEV (no channel
 * can run) / -ENOMEM; then nothing was copied. The segments are copied:
 * the lists may go, the memory they name may not until it is done. */
int bulk_copy_start(const fmx_seg_t *dst, uint32_t nd, const fmx_seg_t *src, uint32_t ns, uint64_t len,
                    struct bulk_copy **out);
/* BULK_MORE while it runs, BULK_DONE, or -errno; *done (if given): the
 * bytes copied so far. */
int bulk_copy_poll(struct bulk_copy *c, uint64_t *done);
/* Sleep until it may have ended, at most ns. */
void bulk_copy_sleep(struct bulk_copy *c, int64_t ns);
/* Once it ended (poll said so): free it. */
void bulk_copy_free(struct bulk_copy *c);

#endif
