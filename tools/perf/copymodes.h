/* SPDX-License-Identifier: MIT */
/*
 * copymodes.h - fmx_perf's two single-process modes (issue 4), which measure
 * the copy routines of src/platform/copy.h rather than a message layer:
 *
 *   copylimit        copy bandwidth of each usable routine, per size, on 1
 *                    thread and on 2 threads (each pinned to its own core,
 *                    each copying its own buffers at the same time): the
 *                    ceiling every bulk engine is judged against;
 *   cachepollution   time of one pass over a small, warm probe buffer right
 *                    after one large copy, against the same pass with no
 *                    copy in between (the "none" baseline).
 *
 * Both read perf_opt (sizes, iters, cores, verify, json, quiet) and print a
 * table or JSON lines like the kernels. fmx_perf only: no ranks, no MPI.
 */
#ifndef FMX_PERF_COPYMODES_H
#define FMX_PERF_COPYMODES_H

/* Run the mode perf_opt.kernel names (PERF_COPYLIMIT or PERF_CACHEPOLLUTION).
 * Returns the exit status: 0, or 1 after a message (out of memory, a
 * --verify mismatch, a thread or pinning failure). */
int copymodes_run(void);

#endif /* FMX_PERF_COPYMODES_H */
