/* SPDX-License-Identifier: MIT */
/*
 * What a bulk engine works on: a transfer (struct bulk_xfer), between our
 * local segments and a remote description (the peer's pid and segments, a
 * mapping of its region, or the per-connection area a transport lends,
 * bulk/conn.h), with a peer the engines know by struct bulk_peer and an
 * endpoint they know by struct bulk_env. An engine never sees a request,
 * a record or a protocol flag: the protocol fills a transfer from its
 * records and reads back want/done and the outcome.
 */
#ifndef FMX_BULK_XFER_H
#define FMX_BULK_XFER_H

#include <stdint.h>
#include <sys/types.h>

#include "fmx.h"
#include "platform/wake.h"
#include "region/region.h"

struct bulk_conn;
struct fmx_bulk_engine;
struct offload_job;

/* A bulk engine's cost with one peer, in segments: for len >= from,
 * time(len) = startup_us + len / mbps (MB/s = bytes per microsecond); the
 * segments follow the cache regimes (in cache, out of it). bulk/engine.h. */
struct bulk_cost {
  double startup_us, mbps;
  uint64_t from;
};
#define BULK_COST_SEGS 4
struct bulk_model {
  int n; /* segments, sorted by from; 0 = not measured */
  struct bulk_cost seg[BULK_COST_SEGS];
};
#define BULK_MAX_ENGINES 8

/* The receiver's own measurement of the engines for one size class (a
 * power of two) of one peer, where nothing was measured (bulk/adapt.c). */
#define ADAPT_CLASSES 40
struct adapt_class {
  uint8_t inc;   /* the engine in use: bulk_engines[] index + 1; 0 = none yet */
  uint8_t probe; /* within a round: the next index to try */
  uint8_t skip;  /* engines (bit i: bulk_engines[i]) this round leaves out */
  uint8_t rounds; /* rounds ended (saturates) */
  uint8_t timed;  /* engines (bit i) timed in some round */
  uint32_t left; /* messages on inc before the next round */
  uint32_t span; /* the last such run */
  float best[BULK_MAX_ENGINES]; /* fastest clean transfer this round, ns per byte; 0 = none */
  float last[BULK_MAX_ENGINES]; /* the same, of the last round ended */
  /* The engine in use, recent only: the fastest of its last ADAPT_WINDOW
   * clean transfers and of the window before (the machine changes). */
  float win, prev_win;
  uint32_t nwin;
};

/* What the engines learn of a peer that they move bytes with (3.5 KiB: a
 * peer on another host never has it, bulk_peer.tab). */
struct bulk_tables {
  struct bulk_model cost[BULK_MAX_ENGINES]; /* per bulk_engines[] index */
  struct adapt_class adapt[ADAPT_CLASSES];  /* per size class, when cost[] is empty */
};

/* A peer as the engines know it. The transport's handshake fills the
 * first part; the engines keep their own state of the peer after it. */
struct bulk_peer {
  pid_t pid;
  int pidfd;        /* -1 when none: its death is seen another way */
  uint32_t eid;     /* its endpoint id (messages, region cache keys) */
  int cpu;          /* its CPU from the handshake (a hint), -1 unknown */
  int cma_errno;    /* why not, when a system call said so (0: none) */
  uint8_t is_self;      /* our own endpoint */
  uint8_t same_process; /* another endpoint of this process (or ourselves) */
  uint8_t cma_ok;       /* process_vm_readv/writev work on it (its probe) */
  /* The engines' own (and tab, xmem). */
  int8_t level;         /* topology level shared with us (enum topo_level), from the first transfer */
  const char *cma_reason; /* why (not), a constant string: a partner keeps no text of its own */
  struct bulk_tables *tab;   /* what they learn of it, taken at its first transfer (NULL before, for a peer on
                              * another host, and where memory lacked); bulk_peer_fini frees it */
  struct region_cache *xmem; /* its fmx_mem_alloc regions mapped here (region/region.c) */
};

/* An endpoint as the engines know it (one per endpoint, filled by its
 * owner). Everything but `active` is read or written under the endpoint's
 * lock; offload channels (offload.c) touch only `desc`. */
struct bulk_env {
  uint64_t *counters; /* the endpoint's, base/counters.h */
  struct ep_desc *desc; /* its wake word: a channel wakes it when a job ends */
  int cpu;              /* our CPU at open, -1 unknown */
  uint64_t starts;      /* receive transfers started (adapt.c times one only when alone) */
  /* Is our transfer `id` (send: a send, else a receive) still moving with
   * engine e? An engine that shares something per connection (ring's
   * slots, vmsplice's pipe) asks before taking it from a stale owner. */
  int (*active)(struct bulk_env *env, uint64_t id, int send, const struct fmx_bulk_engine *e);
  /* Is a receive transfer of ours moving now (NULL: unknown)? A coop
   * sender busy with one leaves its stripes to the peer meanwhile. */
  int (*receiving)(struct bulk_env *env);
};

struct bulk_xfer {
  const struct fmx_bulk_engine *engine;
  struct bulk_env *env;
  struct bulk_peer *peer;
  struct bulk_conn *conn; /* what the connection lends the engines (bulk/conn.h), or NULL */
  /* Ours: stable while the transfer runs. */
  const fmx_seg_t *segs;
  uint32_t nseg;
  uint8_t send;      /* we are the sender (engines that push) */
  uint8_t adapt;     /* adapt.c chose the engine: time the transfer */
  uint8_t offloaded; /* an offload channel moved (or helped move) it */
  uint32_t tag;      /* an engine's tag for this transfer, carried to the sender (coop: its generation) */
  int start_err;     /* why the engine's recv_start refused it (its fallback reports it) */
  uint64_t id;       /* ours, unique on the endpoint while it runs */
  uint64_t peer_id;  /* the peer's id of it (a receiver's: the sender's; a
                      * sender's: the receiver's, which names ring slots) */
  /* The peer's side (receiver): its segments, and its region mapped here
   * (xsrc, NULL: reach it with CMA). */
  struct proto_seg *rsegs;
  uint32_t nrseg;
  const struct region_map *xsrc;
  uint64_t want; /* bytes to move */
  uint64_t done; /* bytes moved */
  uint64_t adapt_ns, adapt_seq; /* when it started, env->starts then (adapt) */
  struct offload_job *job;      /* the offload channel's job moving it, or NULL */
};

#endif
