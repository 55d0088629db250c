/* SPDX-License-Identifier: MIT */
/*
 * kernels.h - the benchmark kernels shared by fmx_perf and fmx_perf_mpi:
 * options, the run configuration rank 0 hands to the others, the kernels
 * (pingpong, bw, alltoall, overlap) and the output (table or JSON lines).
 */
#ifndef FMX_PERF_KERNELS_H
#define FMX_PERF_KERNELS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "comm.h"

#define PERF_MAX_SIZES 128
#define PERF_MAX_WINDOW 1024
#define PERF_MAX_NP 256

/* PERF_COPYLIMIT and PERF_CACHEPOLLUTION are fmx_perf's single-process
 * modes (tools/perf/copymodes.h): perf_run never sees them. */
enum perf_kernel { PERF_PINGPONG = 1, PERF_BW, PERF_ALLTOALL, PERF_OVERLAP, PERF_MSGRATE, PERF_COPYLIMIT,
                   PERF_CACHEPOLLUTION, PERF_COPY_OVERLAP, PERF_COPY_POLLUTION };

/* Command line of both drivers. The fields after `native` exist only in
 * fmx_perf, which starts its own ranks. */
struct perf_opts {
  const char *prog; /* "fmx_perf" or "fmx_perf_mpi" */
  enum perf_kernel kernel;
  uint64_t sizes[PERF_MAX_SIZES];
  uint32_t nsizes;
  uint64_t iters; /* 0: scaled to the size */
  uint32_t window;
  uint32_t compute_us; /* overlap's Tcompute; 0: 1.2 x Tcopy */
  uint32_t timeout_ms;
  bool verify, json, quiet;
  bool native;
  /* native only */
  const char *engine;
  bool mem_lib; /* --mem fmx|mpi: buffers from fmx_mem_alloc / MPI_Alloc_mem */
  uint32_t buf_offset[2]; /* --buf-offset: bytes into its page a buffer starts (rank 0, others) */
  int np;
  int cores[PERF_MAX_NP];
  int ncores;
  bool no_spawn;
  bool counters; /* --counters: print the endpoint's counters at the end */
  int rank;
  long endpoint_id;
  /* Across hosts: --server (rank 1, waits for a client) or --client
   * HOST[:EP] (rank 0, connects to the server's endpoint). */
  bool server;
  const char *client;
};

/* Sent by rank 0 to every other rank (same binary, same host: a raw struct). */
struct perf_config {
  uint32_t magic, kernel, nsizes, window, verify, np;
  uint32_t compute_us; /* overlap: --compute, 0 for 1.2 x Tcopy */
  uint64_t sizes[PERF_MAX_SIZES];
  uint64_t iters[PERF_MAX_SIZES];  /* measured iterations */
  uint64_t warmup[PERF_MAX_SIZES]; /* same unit as iters */
};

extern struct perf_opts perf_opt;
/* "pingpong", "bw", ... as on the command line. */
const char *perf_kernel_name(enum perf_kernel k);
extern int perf_rank; /* -1: a supervising parent; for messages */

void perf_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
#define perf_die(...) (perf_msg(__VA_ARGS__), exit(1))

/* Parse argv into perf_opt (exit 2 with a message on bad input, 0 after
 * --help). `native`: accept fmx_perf's own options (--np, --engine, ...). */
void perf_parse_args(int argc, char **argv, const char *prog, bool native);

/* Run the configured kernel on every rank of c; rank 0 prints. Returns 0. */
int perf_run(struct perf_comm *c);

/* Re-arm the watchdog: a rank silent for the run's timeout dies with a
 * message instead of hanging (MPI has no timed wait). */
void perf_watchdog(void);

#endif /* FMX_PERF_KERNELS_H */
