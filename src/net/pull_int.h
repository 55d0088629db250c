/* SPDX-License-Identifier: MIT */
/*
 * The receiver's side of the pull protocol, shared by its three files
 * (src/net only; pull.c says the whole of the protocol): pull.c asks for
 * the runs, takes their answers and lends the engine its ops; pull_grant.c
 * chooses which pull asks next within the budget; pull_timer.c holds what
 * time does, the scheduler's tick and each partner's timer (asking again
 * after a silence, failing a silent sender). Here are a
 * transfer we pull, its blocks, and the helpers of pull.c that the timers
 * call too. The sender's side (pull_send.c) knows none of it.
 */
#ifndef FMX_NET_PULL_INT_H
#define FMX_NET_PULL_INT_H

#include <stdint.h>

#include "base/list.h"
#include "net/net_int.h"

struct pull_block {
  uint64_t missing; /* bit i: frame i of the block was asked and has not come */
  uint64_t asked_ns; /* when a run of it was last asked */
  uint64_t timed_ns; /* when the run its next first frame answers was asked (heard) */
  uint32_t asked;   /* the request stamp (its partner's) it was last asked with; 0: never */
  uint32_t oldest;  /* the stamp of the oldest request of it with frames on their way */
  uint16_t again;   /* asked more than once: its time says nothing of the line */
  uint16_t heard;   /* a frame came since its last run was asked with nothing else of it on its way */
  uint8_t lo, hi;   /* the frames of the last run asked of it (one PULL): lo..hi-1 */
  uint8_t wire;     /* how its last run was asked (enum ask_way) */
  uint8_t tried;    /* a run of it was asked as a try (ASK_BULK_TRY), maybe asked again since */
  uint8_t tlo, thi; /* the frames of the run timed_ns is of */
};

/* A transfer we pull (receiver). */
struct net_pull {
  struct list_node node;     /* in its partner's pulls */
  struct list_node gnode;    /* in the endpoint's granting, while frames are left to ask */
  int queued;
  struct net_peer *np;
  struct bulk_xfer *x;
  uint64_t unasked;          /* bytes never asked */
  uint64_t out;              /* bytes asked that have not come */
  int waited;                /* its next run waits for room in the budget */
  uint32_t frame;            /* bytes per frame */
  uint32_t nframes, bframes; /* frames, frames per block */
  uint32_t nblocks;
  uint32_t next;             /* the blocks asked from, whole or in part */
  uint32_t nextf;            /* the first frame never asked */
  uint32_t low;              /* every block before it is complete */
  uint32_t open;             /* blocks with frames asked that have not come */
  uint32_t per;              /* bytes of an answer's packet */
  int started;
  uint64_t heard_ns;         /* when a frame last came (or the pull began) */
  uint32_t silences;         /* re-asks in a row with nothing heard between them (backoff) */
  uint64_t reasked_ns;       /* when its timer last asked again */
  uint64_t asked_ns;         /* when we last asked for anything */
  /* The sender knows of it once our packets before cts_seq (its CTS among
   * them) are acked: until then it keeps our PULLs for it, the last so
   * many, or drops them (pull_send.c, net_pull_acked). */
  uint32_t cts_seq;
  uint8_t known;
  uint8_t kicks;             /* its CTS sent again so many waits in a row (doubling the wait) */
  struct pull_block *blk;
};

/* Bits first..first+n-1 of a block's bitmap. */
static inline uint64_t net_pull_run_mask(uint32_t first, uint32_t n) {
  return (n == 64 ? ~0ull : (1ull << n) - 1) << first;
}

/* pull.c, for pull_timer.c and pull_grant.c too (each described where it
 * is defined). */
/* One PULL for frames first..first+count-1 of pl (within one block). */
void net_pull_send(struct net_peer *np, struct net_pull *pl, uint32_t first, uint32_t count, uint64_t now);
/* A pull's silent waits in a row become n. */
void net_pull_silence(struct net_peer *np, struct net_pull *pl, uint32_t n);
/* How long after asking a block we wait before asking again. */
uint64_t net_pull_wait(const struct net_peer *np);
/* Ask again, after a wait, for all that pl misses. */
void net_pull_ask_missing(struct net_peer *np, struct net_pull *pl, uint64_t now);
/* Whether pl's sender knows of it (its CTS acked). */
int net_pull_known(struct net_peer *np, struct net_pull *pl);

/* pull_grant.c: the scheduler. */
/* The pulls ask for what the budget has room for (probe: one run whatever it). */
void net_pull_grant(struct fmx_endpoint *ep, uint64_t now, int probe);
/* Whether a loss is read as a queue's: several partners send to us. */
int net_pull_crowded(const struct net_ep *ne);
/* pl joins the endpoint's granting, or leaves it (once all is asked, or it ends). */
void net_pull_queue(struct net_ep *ne, struct net_pull *pl);
void net_pull_unqueue(struct net_pull *pl);

#endif
