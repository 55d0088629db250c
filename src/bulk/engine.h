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

#include "base/counters.h"
#include "bulk/conn.h"
#include "bulk/xfer.h"
#include "platform/copy.h"

/* progress return values */
#define BULK_MORE 0
#define BULK_DONE 1
/* negative: -errno (base/errors.h: -ESRCH/-EPIPE the peer is gone, -EFAULT a
 * buffer is gone, -EPROTO the peer broke the protocol). Every engine works on a struct bulk_xfer
 * (bulk/xfer.h); the calls without "offload" in their name run under the
 * endpoint's lock. */

struct fmx_bulk_engine {
  const char *name;
  /* Measured cost per topology level ("L3:3.1:8200;NUMA:..."), written by
   * fmx_tune into the tuning file: FMX_COST_<NAME>. "" = not measured. */
  const char *const *cost_cfg;
  const char *cost_var; /* that tunable's name, for messages */
  /* Peer-independent probe (a real attempt); 0 usable, else -errno and reason. */
  int (*probe)(char *reason, size_t len);
  /* Usable with this peer (from its connect-time probe), over c, what the
   * connection lends the engines (NULL: nothing; bulk/conn.h)? */
  int (*usable)(const struct bulk_peer *p, const struct bulk_conn *c);
  /* Needs a CTS so the sender pushes (ring) or joins (coop), or the
   * receiver pulls alone (cma). */
  int needs_cts;
  /* The receiver copies (all or part) itself: a waiting receiver has work
   * and never sleeps on it. */
  int receiver_copies;
  /* It copies through a peer's mapped fmx_mem_alloc region when the RTS
   * announced one (r->xsrc), needing no CMA rights then (cma, coop). */
  int maps_peer;
  /* The kernel copies (cma, vmsplice): with the `rep movsb` of
   * copy_user_generic, so it meets 4K aliasing (platform/copy.h) where the
   * two buffers' page offsets make it, and nothing here can step around. */
  int kernel_copy;
  /* The engine's number on the wire (the receiver names it to the
   * sender; 0: ring, the default). */
  uint8_t wire_id;
  /* Messages it moved: an enum fmx_counter. */
  int cnt_msgs;
  /* Optional, on the receiver before the CTS: claim what the transfer needs
   * (a shared area, a pipe) and set x->tag. 0, or -errno (-EBUSY: in use,
   * -ENODEV: the connection lends none): the message then goes `fallback`
   * (an engine with no recv_start). */
  int (*recv_start)(struct bulk_xfer *x);
  const struct fmx_bulk_engine *fallback;
  /* Bounded work (a chunk); counts the bytes it copied. */
  int (*recv_progress)(struct bulk_xfer *x);
  int (*send_progress)(struct bulk_xfer *x);
  /* Optional, on the sender when the CTS names the engine: 0, or -errno
   * (the send fails). */
  int (*send_start)(struct bulk_xfer *x);
  /* Optional: the transfer is over on this side, whatever the outcome
   * (bulk_end). */
  void (*end)(struct bulk_xfer *x);
  /* Offload step, run by a channel (offload.c) without the endpoint lock:
   * bounded work on the receive x from *done on, adds to *done what the
   * transfer advanced and to *moved what this call copied. BULK_MORE,
   * BULK_DONE or -errno. NULL: the engine cannot be offloaded. */
  int (*offload_step)(struct bulk_xfer *x, uint64_t *done, uint64_t *moved);
  /* The sender's part, likewise (ring: fill slots for a computing sender). */
  int (*offload_send_step)(struct bulk_xfer *x, uint64_t *done, uint64_t *moved);
  /* The channel only helps (coop: it takes stripes beside receiver and
   * sender, recv_progress still completes); else it moves everything and
   * the application only polls the job's status word. */
  int offload_helps;
};

extern const struct fmx_bulk_engine bulk_cma;
extern const struct fmx_bulk_engine bulk_ring;
extern const struct fmx_bulk_engine bulk_coop;
extern const struct fmx_bulk_engine bulk_vmsplice;
extern const struct fmx_bulk_engine bulk_offload;
extern const struct fmx_bulk_engine bulk_pull;

/* The engine a wire id names (ring for 0 or one unknown). */
const struct fmx_bulk_engine *bulk_for_wire(unsigned id);
extern const struct fmx_bulk_engine *const bulk_engines[];

const struct fmx_bulk_engine *bulk_find(const char *name);

/* Parse a cost spec "LEVEL[@FROM]:STARTUP_US:MBPS[;...]" (LEVEL one of CPU
 * L1 L2 L3 NUMA SYS, enum topo_level order; an entry applies to messages of
 * FROM bytes and more, FROM 0 when absent) and take the segments of `level`,
 * or of the nearest level measured. Returns 0 (exact level), 1 (another
 * level), -ENODATA (empty spec) or -EINVAL (malformed: out->n = 0). */
int bulk_cost_parse(const char *spec, int level, struct bulk_model *out);
/* The name of a topology level in cost specs ("L3", "NUMA", ...). */
const char *bulk_level_name(int level);
/* The level a cost spec names ("L3"), or -1. */
int bulk_level_parse(const char *name);
/* Predicted microseconds for len bytes: the segment with the largest
 * from <= len (the first segment below all of them). */
double bulk_cost_time(const struct bulk_model *m, uint64_t len);
/* Among n models the cheapest usable one (usable[i] && models[i].n) for len;
 * -1 if none. Ties go to the lower index. */
int bulk_cost_pick(const struct bulk_model *m, const int *usable, int n, uint64_t len);
/* The engine for a message of `len` bytes from p (receiver's choice), on
 * the endpoint env; crowded: 0, or the ranks here when they outnumber the
 * cores (bulk.c: one copy, unless the two-copy chunks of them all stay in
 * the last-level cache);
 * *offload says whether a channel should run it (offload.c): 0 no,
 * OFFLOAD_NOW, or OFFLOAD_AWAY (if the application stays out of fmx). */
#define OFFLOAD_NOW 1
#define OFFLOAD_AWAY 2
/* *adapt (may be NULL) is set when adapt.c chose it: time the transfer. */
/* how: BULK_SEL_MAPPED, the sender's buffer is mapped here (an
 * fmx_mem_alloc region): auto then takes coop, which copies through the
 * mapping; BULK_SEL_ALIASED, the receiver's buffer starts less than a line
 * past the sender's modulo 4 KiB (copy_aliases): auto then takes ring, not
 * an engine whose copy is the kernel's (measured on an EPYC, 1 MiB: cma
 * 424-458 us, ring 55; docs/engines.md). */
#define BULK_SEL_MAPPED 1
#define BULK_SEL_ALIASED 2
/* BULK_SEL_EXCHANGE: the receiver has a rendezvous send of its own to the
 * same peer in flight (an exchange: both ends send at once). Up to twice
 * FMX_COPY_NT_THRESHOLD, auto then takes cma (ring where cma is refused)
 * and adapt times nothing (bulk.c). */
#define BULK_SEL_EXCHANGE 4
/* c: what the connection the RTS came on lends the engines (bulk/conn.h). */
/* What the engines took for p (its tables), given back: its owner, as
 * the peer goes. */
void bulk_peer_fini(struct bulk_peer *p);
/* Why CMA is usable with p or not, whole (its reason and the system
 * call's error), in buf or a constant. */
const char *bulk_cma_why(const struct bulk_peer *p, char *buf, size_t len);
const struct fmx_bulk_engine *bulk_select(struct bulk_env *env, struct bulk_peer *p, const struct bulk_conn *c,
                                          uint64_t len, int how, int crowded, int *offload, int *adapt);
/* Start x (its fields filled, engine chosen): the engine's recv_start,
 * or its fallback when that is busy. */
void bulk_recv_start(struct bulk_xfer *x);
/* One bounded step of x under the endpoint's lock (its job's outcome when
 * a channel runs it): BULK_MORE, BULK_DONE or -errno. */
int bulk_progress(struct bulk_xfer *x);
/* x, which was moving, is over (either side, any outcome): its engine
 * lets go of it. */
static inline void bulk_end(struct bulk_xfer *x) {
  if (x->engine && x->engine->end) x->engine->end(x);
}
/* x ended well on the receiver: count it (messages, mapped copies) and
 * let adapt time it. */
void bulk_recv_done(struct bulk_xfer *x);

/* Offload channels (offload.c) and their jobs (offload_job.c). */
/* Nonzero while this thread waits in ep_wait: it is idle and copies what it
 * matches itself. */
extern __thread int offload_in_wait;
/* Nonzero in offload channels: their progress leaves deferred transfers
 * alone (they hand them to a job instead of copying under the lock). */
extern __thread int offload_in_channel;

/* Adaptive choice (adapt.c), where no cost was measured. */
/* When this thread's outermost ep_wait began (wait.c stamps it). */
extern __thread uint64_t adapt_wait_ns;
/* Nonzero during a progress pass that is timed like a wait's though no
 * wait runs: fmx_test_some's, which an MPI over the provider calls back to
 * back while it waits (core/api.c). A transfer is then timed from its own
 * start, and adapt tries engines as in a wait; offload is not affected. */
extern __thread int adapt_in_pass;
/* Whether a transfer matched or finished now is timed (adapt_record). */
static inline int adapt_timed(void) { return offload_in_wait || adapt_in_pass; }
/* The engine for the next message of len bytes from p, among the usable
 * ones (usable[i] for bulk_engines[i], n of them); prior is the topology's
 * suggestion, tried first. */
const struct fmx_bulk_engine *adapt_pick(struct bulk_env *env, struct bulk_peer *p, uint64_t len, const int *usable,
                                         int n, const struct fmx_bulk_engine *prior);
/* The engine adapt found fastest for len bytes from p, with no try of
 * another: for a transfer no one would time (matched outside a wait);
 * prior where the class has no choice yet. */
const struct fmx_bulk_engine *adapt_kept(const struct bulk_peer *p, uint64_t len, const int *usable, int n,
                                         const struct fmx_bulk_engine *prior);
/* A receive x (x->adapt) finished well: its time counts if clean. */
void adapt_record(struct bulk_xfer *x);
/* Start the channels if not yet (a real attempt): 0, or -errno with the reason. */
int offload_probe(char *reason, size_t len);
/* Hand x (its engine chosen, started) to the next channel, round-robin:
 * 0, or -errno (-ENODEV no channels, -EINVAL the engine has no offload
 * step for that side, -ENOMEM; the application copies). */
int offload_start(struct bulk_xfer *x);
/* Application: the job's status word; when final, releases the job and
 * returns BULK_DONE (x->done set) or -errno; else BULK_MORE. */
int offload_poll(struct bulk_xfer *x);
/* Stop and join the channels (fmx_finalize, every endpoint closed); the
 * next offload starts them again. */
void offload_shutdown(void);
/* Watched work began, or an application thread left ep_wait with some:
 * channel 0, asleep until then, looks again. */
void offload_kick(void);
/* The channels, started if they are not: 0, or -errno (none can run). */
int offload_up(void);
/* A job that is not a transfer (the asynchronous copy API, bulk/copy.c):
 * the next channel runs fn(arg, &done, &moved) until it returns BULK_DONE
 * or -errno. 0 and *job, or -ENODEV (no channels) / -ENOMEM. */
int offload_submit(int (*fn)(void *arg, uint64_t *done, uint64_t *moved), void *arg, struct offload_job **job);
/* Its status word: BULK_MORE while it runs, then BULK_DONE or -errno;
 * *done (if given): the bytes fn reported so far. */
int offload_job_status(struct offload_job *job, uint64_t *done);
/* Sleep until the status word changes, at most ns (a futex wait on it). */
void offload_job_sleep(struct offload_job *job, int64_t ns);
/* Free it once the channel has let go (after its status is final). */
void offload_job_free(struct offload_job *job);
/* Channel 0's work while it has no job, given by the core
 * (core/progress.c): pending() says whether there is some, run() does one
 * round of it, and may sleep only through the calls below, so that a job
 * queued to channel 0 still wakes it; with none, channel 0 sleeps until
 * offload_kick, or at most look() ns when that is not 0, and asks again.
 * thread_init() runs first in every channel (the core marks its threads). */
void offload_set_idle(int (*pending)(void), void (*run)(void), uint64_t (*look)(void), void (*thread_init)(void));
/* run(): nap up to ns on channel 0's own condition while still(arg) and no
 * job is queued; offload_kick ends it. */
void offload_idle_nap(int (*still)(void *), void *arg, uint64_t ns);
/* run(): channel 0 sleeps on the endpoint descriptor d (a job queued to it
 * wakes d); 1 if a job is already queued (then do not sleep). */
int offload_idle_watch(struct ep_desc *d);
/* run(): done with that descriptor. */
void offload_idle_done(void);
/* Anyone: if channel 0 sleeps on d, wake it (d is no longer worth it). */
void offload_idle_leave(struct ep_desc *d);
/* Stop the channel's work on x (at most one step later) and release the
 * job; before a transfer ends with an error or its endpoint closes. */
void offload_detach(struct bulk_xfer *x);
/* The copy routine for user-space copies into a destination of msg_len
 * bytes: FMX_COPY if forced (and usable), else non-temporal above
 * FMX_COPY_NT_THRESHOLD, else memcpy. */
copy_fn bulk_copy_fn(uint64_t msg_len);
/* Copy [off, off + len) between x's segments and a peer's
 * (remote, in pid's address space) with process_vm_readv (write 0) or
 * process_vm_writev (write 1): the shared part of cma and coop. Returns the
 * bytes moved (len), or -errno; -EFAULT when a side's segments fall short. */
ssize_t bulk_cma_range(pid_t pid, int write, const struct bulk_xfer *x, const struct proto_seg *remote,
                       uint32_t nremote, uint64_t off, uint64_t len);
/* The same, through m (the peer's fmx_mem_alloc region mapped here) when
 * m is not NULL: plain copies with the message's copy routine; -EFAULT when
 * a piece falls outside m. */
ssize_t bulk_remote_range(const struct region_map *m, pid_t pid, int write, const struct bulk_xfer *x,
                          const struct proto_seg *remote, uint32_t nremote, uint64_t off, uint64_t len);
/* iovecs covering [off, off+len) of local segments. */
int bulk_iov_local(const fmx_seg_t *segs, uint32_t nseg, uint64_t off, uint64_t len, struct iovec *iov, int max);
/* iovecs covering [off, off+len) of remote segments. */
int bulk_iov_remote(const struct proto_seg *s, uint32_t n, uint64_t off, uint64_t len, struct iovec *iov, int max);

#endif
