/* SPDX-License-Identifier: MIT */
/*
 * run.h - between the benchmark driver (run.c: configuration, buffers,
 * progress, output) and the kernels (kernels.c), both shared by fmx_perf and
 * fmx_perf_mpi.
 */
#ifndef FMX_PERF_RUN_H
#define FMX_PERF_RUN_H

#include <stdint.h>

#include "kernels.h"

/* What rank 0 prints for one size. */
struct perf_result {
  double lat_us;                        /* the headline time, see the usage text */
  double min_us, max_us;                /* alltoall: per-rank means */
  double tc_us, tt_us, overlap;         /* overlap, receiving side */
  double copy_s_us, tt_s_us, overlap_s; /* overlap, sending side */
};

struct bufs {
  uint8_t **sbuf, **rbuf; /* window slots; all alias slot 0 unless verifying */
  uint8_t *a2a_s, *a2a_r; /* alltoall: np slots of the largest size */
  uint32_t sslots, rslots;
  perf_req_t *reqs; /* window or 2 * np */
};

/* One kernel at size index k of cfg, into *res (rank 0's numbers). */
typedef void perf_kernel_fn(struct perf_comm *c, const struct perf_config *cfg, uint32_t k, struct bufs *b,
                            struct perf_result *res);
perf_kernel_fn perf_pingpong_size, perf_bw_size, perf_alltoall_size, perf_overlap_size;

/* A message sent or received and waited for (kernels.c). */
void perf_send_wait(struct perf_comm *c, const void *buf, uint64_t len, int peer, enum perf_tag tag,
                    const char *what);
void perf_recv_wait(struct perf_comm *c, void *buf, uint64_t len, int peer, enum perf_tag tag, const char *what);
/* Every rank reports to rank 0, then rank 0 releases them all. */
void perf_barrier(struct perf_comm *c);

/* Called by every rank once per iteration or so: re-arms the watchdog about
 * once a second, and rank 0 draws the progress line (run.c). */
void perf_progress(uint64_t size, uint64_t done, uint64_t total);

#endif
