/* SPDX-License-Identifier: MIT */
/*
 * Bulk engines: how the bytes of a rendezvous message move. Each engine is
 * one file behind this table; segment walking and completion live once in
 * bulk.c and proto/rndv.c.
 *
 * Receiver-driven engines (cma) implement recv_*; sender-driven ones (ring,
 * vmsplice) also implement send_* which run on the sender after the receiver's CTS.
 * progress functions do bounded work (one chunk) so a 1 GiB copy does not
 * stall small messages to other peers.
 */
#ifndef FMX_BULK_ENGINE_H
#define FMX_BULK_ENGINE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "core/fmx_int.h"

/* progress return values */
#define BULK_MORE 0
#define BULK_DONE 1
/* negative: -(fmx_return_t) */

struct fmx_bulk_engine {
  const char *name;
  /* Measured cost per topology level ("L3:3.1:8200;NUMA:..."), written by
   * fmx_tune into the tuning file: FMX_COST_<NAME>. "" = not measured. */
  const char *const *cost_cfg;
  const char *cost_var; /* that tunable's name, for messages */
  /* Peer-independent probe (a real attempt); 0 usable, else -1 and reason. */
  int (*probe)(char *reason, size_t len);
  /* Usable with this peer (from its connect-time probe)? */
  int (*usable)(struct fmx_endpoint *ep, struct partner *p);
  /* Needs a CTS so the sender pushes (ring) or joins (coop), or the
   * receiver pulls alone (cma). */
  int needs_cts;
  /* The receiver copies (all or part) itself: a waiting receiver has work
   * and never sleeps on it. */
  int receiver_copies;
  int (*recv_progress)(struct fmx_endpoint *ep, struct fmx_request *r);
  int (*send_progress)(struct fmx_endpoint *ep, struct fmx_request *s);
};

extern const struct fmx_bulk_engine bulk_cma;
extern const struct fmx_bulk_engine bulk_ring;
extern const struct fmx_bulk_engine bulk_coop;
extern const struct fmx_bulk_engine bulk_vmsplice;

/* coop (bulk/coop.c): publish a matched receive's transfer in its channel;
 * 0, or -1 when that channel direction already carries one. */
int coop_publish(struct fmx_request *r);
/* vmsplice (bulk/vmsplice.c): take the pipe of the channel a matched
 * receive's RTS came on; 0, or -1 when that pipe is in use by another
 * receive, broken by an earlier one, or absent. */
int vmsplice_claim(struct fmx_endpoint *ep, struct fmx_request *r);
extern const struct fmx_bulk_engine *const bulk_engines[];

const struct fmx_bulk_engine *bulk_find(const char *name);

/* Parse a cost spec "LEVEL[@FROM]:STARTUP_US:MBPS[;...]" (LEVEL one of CPU
 * L1 L2 L3 NUMA SYS, enum topo_level order; an entry applies to messages of
 * FROM bytes and more, FROM 0 when absent) and take the segments of `level`,
 * or of the nearest level measured. Returns 0 (exact level), 1 (another
 * level), -1 (empty spec) or -2 (malformed: out->n = 0). */
int bulk_cost_parse(const char *spec, int level, struct bulk_model *out);
/* The name of a topology level in cost specs ("L3", "NUMA", ...). */
const char *bulk_level_name(int level);
/* Predicted microseconds for len bytes: the segment with the largest
 * from <= len (the first segment below all of them). */
double bulk_cost_time(const struct bulk_model *m, uint64_t len);
/* Among n models the cheapest usable one (usable[i] && models[i].n) for len;
 * -1 if none. Ties go to the lower index. */
int bulk_cost_pick(const struct bulk_model *m, const int *usable, int n, uint64_t len);
/* The engine for a message of `len` bytes from p (receiver's choice). */
const struct fmx_bulk_engine *bulk_select(struct fmx_endpoint *ep, struct partner *p, uint64_t len);
/* The copy routine for user-space copies into a destination of msg_len
 * bytes: FMX_COPY if forced (and usable), else non-temporal above
 * FMX_COPY_NT_THRESHOLD, else memcpy. */
copy_fn bulk_copy_fn(uint64_t msg_len);
/* iovecs covering [off, off+len) of the request's own segments. */
int bulk_iov_local(const struct fmx_request *r, uint64_t off, uint64_t len, struct iovec *iov, int max);
/* iovecs covering [off, off+len) of remote segments. */
int bulk_iov_remote(const struct proto_seg *s, uint32_t n, uint64_t off, uint64_t len, struct iovec *iov, int max);

#endif
