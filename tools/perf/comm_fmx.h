/* SPDX-License-Identifier: MIT */
/* comm_fmx.h - struct perf_comm over fmx (see comm.h). */
#ifndef FMX_PERF_COMM_FMX_H
#define FMX_PERF_COMM_FMX_H

#include <stdint.h>

#include "comm.h"

/* Open rank `rank` of `np`: an endpoint (want_eid, or any), connected to
 * every other rank. `exchange` publishes this rank's endpoint id and fills
 * all[np] with everybody's (the driver knows how: a pipe to the parent, or
 * base + rank by hand). */
void comm_fmx_open(struct perf_comm *c, int rank, int np, uint32_t want_eid,
                   void (*exchange)(uint32_t mine, uint32_t *all, int np));
void comm_fmx_close(struct perf_comm *c);

#endif /* FMX_PERF_COMM_FMX_H */
