/* SPDX-License-Identifier: MIT */
/*
 * comm.h - what the benchmark kernels need from a message layer: ranks,
 * non-blocking tagged point-to-point, wait and test. Two backends implement
 * it: comm_fmx.c (fmx_perf) and comm_mpi.c (fmx_perf_mpi), so fmx and the
 * MPIs are measured by the same kernel code.
 *
 * Every call either succeeds or ends the process with a message (perf_die):
 * a benchmark has nothing sensible to do after a failed transfer.
 */
#ifndef FMX_PERF_COMM_H
#define FMX_PERF_COMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for any backend's request handle (fmx_request_t, MPI_Request). */
typedef union perf_req {
  uint64_t u[2];
  void *p;
} perf_req_t;

/* Tags of the kernels; small, so any MPI_TAG_UB (>= 32767) holds them. */
enum perf_tag {
  PERF_TAG_DATA = 1,
  PERF_TAG_ACK = 2,
  PERF_TAG_CONFIG = 3,
  PERF_TAG_RESULT = 4,
  PERF_TAG_BARRIER = 5,
  PERF_TAG_BYE = 6,
  PERF_TAG_HELLO = 7, /* --client to --server: who it is */
};

struct perf_comm {
  const char *name;   /* "fmx", "mpi" */
  char library[96];   /* e.g. "fmx 0.1.0", "Open MPI v4.1.4" */
  char desc[192];     /* for the table header: binding, thresholds, ... */
  int rank, size;
  /* Post a send of len bytes to rank peer / a receive from rank peer. */
  void (*isend)(struct perf_comm *c, const void *buf, uint64_t len, int peer,
                enum perf_tag tag, perf_req_t *req);
  void (*irecv)(struct perf_comm *c, void *buf, uint64_t len, int peer, enum perf_tag tag,
                perf_req_t *req);
  /* Complete a request; a receive must deliver expect_len bytes unless
   * expect_len is UINT64_MAX. `what` names it in error messages. */
  void (*wait)(struct perf_comm *c, perf_req_t *req, const char *what, uint64_t expect_len);
  /* Non-blocking completion check, same rules as wait. */
  bool (*test)(struct perf_comm *c, perf_req_t *req, const char *what, uint64_t expect_len);
  /* The engine that moved the last receive of `size` bytes ("eager", "cma",
   * ... for fmx; "mpi" for MPI). */
  void (*engine)(struct perf_comm *c, uint64_t size, char *out, size_t len);
  /* Buffer memory (fmx_perf --mem fmx: fmx_mem_alloc); NULL: posix_memalign
   * and free. */
  void *(*alloc)(size_t len);
  void (*release)(void *p);
  void *priv;
};

#endif /* FMX_PERF_COMM_H */
