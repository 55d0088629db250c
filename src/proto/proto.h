/* SPDX-License-Identifier: MIT */
/*
 * The protocol as the core sees it (proto_int.h: proto's own).
 *
 * The protocol keeps its state in objects of its own, which the core
 * embeds: a message (struct proto_msg) in each request, a struct
 * proto_peer in each partner, a struct proto_ep in each endpoint. The
 * endpoint and the partner stay opaque here; the protocol reaches its
 * part of them through proto_ep() and proto_peer() (their layout, the
 * core's, inlined at link time) and the transport's part through
 * transport_ep() and transport_peer(). Whatever it asks the core to do
 * (complete a request, find one by its wire id, fail a partner, watch for
 * idle progress) goes through the struct proto_core the core gives it at
 * fmx_init (proto_init): the protocol never names a function of the core.
 */
#ifndef FMX_PROTO_PROTO_H
#define FMX_PROTO_PROTO_H

#include <stddef.h>
#include <stdint.h>

#include "base/counters.h"
#include "base/list.h"
#include "bulk/xfer.h"
#include "fmx.h"
#include "platform/copy.h"
#include "proto/match.h"
#include "region/cookie.h"
#include "region/region.h"
#include "transport/record.h"
#include "transport/transport.h"

struct fmx_endpoint;
struct partner;
struct bulk_conn;

enum msg_state { MSG_PENDING = 0, MSG_MATCHED, MSG_DONE };

#define MSG_F_SYNC 0x01     /* a synchronous send: rendezvous at any size */
#define MSG_F_RNDV 0x02     /* a send that went rendezvous (an RTS) */
#define MSG_F_DEFERRED 0x04 /* matched, to be handed to an offload channel (core/progress.c) */
#define MSG_F_DATA 0x08     /* a send carrying imm (PROTO_F_DATA) */
#define MSG_F_UNTAGGED 0x10 /* untagged: a send in that space, a receive taking only from it */
#define MSG_F_REGION 0x20   /* a region access (rma.c): a write (send: RPUT), a read (receive: RGET), or the
                               owner's side of one; match = cookie, imm = offset (RPUT), the reader's id (RGRANT) */
#define MSG_F_GRANT 0x40    /* with MSG_F_REGION, a send: the owner's answer to a read (RGRANT) */
#define MSG_F_MULTI 0x80    /* a receive: a multi-receive buffer (multi.c), which matching leaves posted */

/* A record waiting for room in a ring: a send's message (ctl 0, msg the
 * send), or a control record, either a receive's CTS or FIN kept in that
 * receive (ctl 1, msg the receive, which outlives it: the core's free
 * waits, `freed`) or one with no message (ctl 1, msg NULL, allocated). */
struct out_rec {
  struct list_node node;
  struct proto_hdr hdr;
  struct proto_msg *msg;
  uint64_t off;            /* EAGER in fragments: bytes pushed so far */
  uint8_t ctl;
};

/* A message: what a send or a receive request is to the protocol. The
 * core fills the description (segments, match, status.context) and
 * reads the outcome (state, status). */
struct proto_msg {
  uint64_t id;             /* the request's name on the wire (the core's, stale once it is freed) */
  uint8_t state;           /* enum msg_state */
  uint8_t flags;           /* MSG_F_* */
  uint8_t freed;           /* the application let it go while its CTS/FIN waits for ring room */
  uint32_t nseg;
  struct partner *partner; /* opaque: the core's */
  fmx_status_t status;
  uint64_t match;
  uint64_t mask;
  struct partner *from;    /* a receive directed to one source; NULL: any */
  fmx_seg_t *segs;
  fmx_seg_t seg1;          /* storage when nseg <= 1 */
  uint64_t len;            /* sum of segs */
  struct list_node hnode;  /* posted queue (match.c) */
  struct list_node pnode;  /* its partner's messages in flight (proto_peer.msgs) */
  /* From here on, the cold part (PROTO_MSG_HOT_END): a new message does not
   * zero it, only what proto_msg_cold_init names; the rest is set where it
   * starts being used (proto_send_start, send_ctl, xfer_init, region_find).
   * Zeroing all of a request took 6% of the 8 B message rate. */
  struct out_rec out;
  /* rendezvous: the transfer the bulk engines move (bulk/xfer.h) */
  struct bulk_xfer xfer;
  uint64_t moved_ns;       /* when the engine last moved bytes (or started) */
  uint64_t class_ns, class_snap; /* receiver: a rendezvous timed for the class choice (classes.c); 0: not */
  uint8_t sending;         /* receiver: a rendezvous send of ours to its partner was in flight at its match */
  struct region_ref xref;  /* sender: the fmx_mem_alloc region holding segs; len 0: none */
  struct list_node bnode;  /* proto_ep.bulk */
  uint64_t imm;            /* a send's data: set and read only with MSG_F_DATA */
  uint64_t seq;            /* posting order: set and read only for a posted receive */
  struct proto_msg *multi_of; /* a receive made of a slice of a multi-receive buffer: that buffer */
  struct {                    /* MSG_F_MULTI: set by proto_multi_init */
    uint64_t used, min_free;
    uint32_t live;            /* slices not completed */
    uint8_t closed;           /* takes no more messages */
    fmx_return_t code;        /* what it completes with once the last slice has */
  } multi;
};

/* Bytes of a message that a new one starts with zeroed; the rest is made
 * valid by proto_msg_cold_init. */
#define PROTO_MSG_HOT_END offsetof(struct proto_msg, out)
/* What of the cold part every message reads, whatever its class: the
 * out record's queue and kind, the transfer's channel job and the peer's
 * segment list (freed with the message), the bulk list node. */
static inline void proto_msg_cold_init(struct proto_msg *m) {
  m->out.ctl = 0;
  list_init(&m->out.node);
  m->xfer.job = NULL;
  m->xfer.rsegs = NULL;
  list_init(&m->bnode);
  m->multi_of = NULL;
}

/* A medium message arriving in fragments on one lane (medium.c): into a
 * matched receive, or into a buffer until it is whole (neither: out of
 * memory, its fragments are swallowed). */
struct medium_rx {
  int busy;               /* a message in flight */
  struct bulk_conn *lane; /* the lane it comes on (NULL for a transport with one) */
  uint64_t sreq, total, got;
  uint64_t class_ns, class_snap; /* timed for the class choice (classes.c); 0: not timed */
  int class_both; /* timed while the peer still had records of ours to take (classes.c) */
  struct proto_msg *msg;
  struct unexp_msg *unexp;
};

/* The medium class against rendezvous for one size class (classes.c). */
#define PROTO_CLASSES 12 /* size classes from one fragment up */
struct proto_class {
  uint64_t best[2]; /* fastest recent clean message of each mode, ns per 4 KiB */
  uint32_t span;    /* messages of the mode in use between trials; 0: no message yet */
  uint32_t left;    /* of them, still to come */
  uint8_t mode;     /* in use: 0 medium, 1 rendezvous */
  uint8_t trial;    /* the other mode being tried */
  uint8_t got;      /* its clean messages so far */
  uint8_t seen;     /* its other messages so far */
  uint16_t xleft;   /* messages still judged as an exchange's (classes.c, proto_class_cost) */
};

/* What the protocol keeps of a partner it has messages with (proto_live):
 * taken at its first message in flight (a send, a read, a connect waited
 * for, a rendezvous or write received), record queued, medium message,
 * class timed or hint, and kept until the partner goes. */
struct proto_live {
  struct list_node outq; /* records waiting for ring room, in order */
  /* On the core's backlog (ep->backlog) while outq holds records (linked:
   * next != NULL), and the partner it is of. */
  struct list_node backlog;
  struct partner *owner;
  struct list_node msgs; /* messages in flight with it (pnode) */
  /* Per lane it delivers on, two of them: taken at its first medium
   * message (medium.c), NULL before. */
  struct medium_rx *medium;
  uint64_t rndv_mask; /* sender: size classes it asked to get by rendezvous (its HINT) */
  uint64_t asked;     /* receiver: the mask we last sent it */
  /* receiver: the class choice per size (classes.c), PROTO_CLASSES of them
   * from its first medium message or rendezvous timed; NULL before */
  struct proto_class *cls;
  /* receiver: a rendezvous send of ours to it was in flight when its last
   * rendezvous to us was matched or completed (rndv.c: the next one is half
   * an exchange too, even if it is matched before we send) */
  uint8_t exchanged;
};

/* What the protocol keeps of a partner: an idle one's bytes. */
struct proto_peer {
  const struct fmx_transport_ops *tp; /* the transport serving it (the core's choice) */
  struct proto_live *live;            /* NULL until it has messages (above) */
};

/* p's state of messages, taken now if it has none: NULL without memory. */
struct proto_live *proto_live(struct partner *p);
/* No record of ours waits for ring room to it. */
static inline int proto_outq_empty(const struct proto_peer *pp) { return !pp->live || list_empty(&pp->live->outq); }
/* Its medium messages' slots, or NULL. */
static inline struct medium_rx *proto_medium(const struct proto_peer *pp) { return pp->live ? pp->live->medium : NULL; }
/* Messages in flight with it. */
static inline int proto_has_msgs(const struct proto_peer *pp) { return pp->live && !list_empty(&pp->live->msgs); }

/* What the protocol keeps of an endpoint: what every message touches
 * first (the counters' pointer and the wake word are in benv), the large
 * match queues last. */
struct proto_ep {
  struct fmx_endpoint *ep; /* the endpoint it is part of (opaque) */
  struct bulk_env benv;    /* the endpoint as the bulk engines know it (bulk/xfer.h): its counters, its wake
                              word (the core's to set) */
  /* How many ranks (or runnable tasks) share the host's hardware threads
   * when they outnumber them, else 0 (FMX_CROWDED; core/endpoint.c,
   * set_crowded): a copy made twice may be time taken from another rank
   * (the eager limit, the engine choice). The core's, set under the lock,
   * read unlocked by waits. */
  int crowded;
  int rndv_explicit;       /* FMX_RNDV_THRESHOLD was set (not derived): it stands, crowded or not */
  struct list_node bulk;   /* messages with a transfer in progress (bnode) */
  /* The engine of the last rendezvous received and whether a channel moved
   * it: named when asked (proto_last_engine), not formatted per message. */
  const struct fmx_bulk_engine *last_engine;
  int last_offloaded;
  struct match_queues mq;  /* tagged */
  struct match_queues mqu; /* untagged (no context ids: match 0, mask 0) */
  struct list_node claimed; /* unexpected messages a matched probe took (unexp_msg.all) */
  struct region_table regions; /* regions this endpoint declared (fmx_region_create) */
  int unexp_hook;          /* the application has an unexpected-message handler (proto_core.unexp) */
  uint32_t medium_live;    /* medium messages being received */
  uint64_t medium_starts;  /* medium messages received so far (classes.c: was one alone) */
};

/* The match queues of a space: untagged (a record's PROTO_F_UNTAGGED, a
 * receive's MSG_F_UNTAGGED) or tagged. */
static inline struct match_queues *proto_mq(struct proto_ep *pe, int untagged) { return untagged ? &pe->mqu : &pe->mq; }

/* Count an event (base/counters.h), the endpoint's lock held. */
#define PROTO_CNT(pe, name) ((pe)->benv.counters[CNT_##name]++)

/* The protocol's parts of the core's objects (core/proto_up.c). */
struct proto_ep *proto_ep(struct fmx_endpoint *ep);
struct proto_peer *proto_peer(struct partner *p);

/* What the protocol asks of the core: given once, at fmx_init. Every
 * call is made with the endpoint's lock held. */
struct proto_core {
  /* m is done with code: its request completes. */
  void (*complete)(struct fmx_endpoint *ep, struct proto_msg *m, fmx_return_t code);
  /* m, which the application let go (freed), may be freed now. */
  void (*release)(struct fmx_endpoint *ep, struct proto_msg *m);
  /* The live message a peer names by id: a send (send 1) or a receive;
   * NULL when no such request lives. */
  struct proto_msg *(*lookup)(struct fmx_endpoint *ep, uint64_t id, int send);
  /* Idle progress (core/progress.c): m, a receive posted unmatched or a
   * send waiting for its CTS, may end up offloaded (watch); it matched or
   * ended (unwatch); it matched to be moved by whoever is idle (defer);
   * the send m got its CTS (send_cts). */
  void (*watch)(struct fmx_endpoint *ep, struct proto_msg *m);
  void (*unwatch)(struct fmx_endpoint *ep, struct proto_msg *m);
  void (*defer)(struct fmx_endpoint *ep, struct proto_msg *m);
  void (*send_cts)(struct fmx_endpoint *ep, struct proto_msg *m);
  /* The partner is gone (state: enum partner_state) and its messages
   * complete with code; fail takes what its transport still holds first,
   * down does not. */
  void (*peer_fail)(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code);
  void (*peer_down)(struct fmx_endpoint *ep, struct partner *p, int state, fmx_return_t code);
  /* p's queue (outq) got its first record: proto_flush it at every
   * progress pass until it empties. */
  void (*queued)(struct fmx_endpoint *ep, struct partner *p);
  /* A message of the protocol's own with p over segs (copied): a send
   * or a receive whose completion nobody sees (the owner's side of a
   * region access); NULL without memory. */
  struct proto_msg *(*internal)(struct fmx_endpoint *ep, struct partner *p, int send, const fmx_seg_t *segs,
                                uint32_t nseg);
  /* A receive of its own for one slice of the multi-receive buffer b
   * (multi_of and the rest are the protocol's to set); NULL without
   * memory. */
  struct proto_msg *(*slice)(struct fmx_endpoint *ep, struct proto_msg *b, const fmx_seg_t *seg);
  /* A tagged message from p that no posted receive takes (data: its len
   * bytes when all are here, else NULL), shown to the application's
   * handler (pe.unexp_hook): 1 when it took it (drop it), 0 to go on
   * matching. */
  int (*unexp)(struct fmx_endpoint *ep, struct partner *p, uint64_t match, uint64_t len, const void *data);
  /* p's address, as a status gives it (the core numbers its partners). */
  fmx_endpoint_addr_t (*addr)(const struct partner *p);
};
void proto_init(const struct proto_core *core);

/* A fresh endpoint's protocol state (zeroed; benv's counters, wake word
 * and CPU are the core's to set): matching with ctx_bits of context id at
 * ctx_shift. Again with other bits while nothing is posted or queued. */
void proto_ep_init(struct fmx_endpoint *ep, unsigned ctx_bits, unsigned ctx_shift);
/* Free what the endpoint's unexpected queues and claimed list hold. */
void proto_ep_fini(struct proto_ep *pe);
/* A new partner's protocol state, served by tp. */
void proto_peer_init(struct proto_peer *pp, const struct fmx_transport_ops *tp);
/* What the partner's state holds besides itself (its state of messages). */
void proto_peer_fini(struct proto_peer *pp);

/* Start a send (eager or rendezvous); queued if the ring has no room. */
void proto_send_start(struct fmx_endpoint *ep, struct proto_msg *m);
/* An eager message of one record with nothing queued before it, pushed at
 * once from the caller's segments (its request is made after): 1, or 0
 * when it must take proto_send_start. */
int proto_send_now(struct fmx_endpoint *ep, struct partner *p, const fmx_seg_t *segs, uint32_t nseg, uint64_t len,
                   uint64_t match, unsigned hflags, uint64_t imm);
/* Start a region read (rma.c): m, a receive not posted, with its partner,
 * segments, match = cookie and imm = offset set, asks the owner. A region
 * write is a send with MSG_F_REGION (proto_send_start). */
void proto_rma_read(struct fmx_endpoint *ep, struct proto_msg *m);
/* Post a receive: take an unexpected message or queue it. */
void proto_recv_post(struct fmx_endpoint *ep, struct proto_msg *m);
/* Probe: the first unexpected message that fits (info, mask) in the
 * tagged or untagged space, from `from` unless it is NULL; or NULL. With
 * claim, it leaves matching for the claimed list (a matched probe's
 * handle), where only proto_recv_claimed takes it. */
struct unexp_msg *proto_probe(struct fmx_endpoint *ep, uint64_t info, uint64_t mask, const struct partner *from,
                              int untagged, int claim);
/* What a probe reports of u: source, match info, length, flags, data. */
void proto_unexp_status(const struct unexp_msg *u, fmx_status_t *st);
/* Whether u is on the endpoint's claimed list (a handle still valid). */
int proto_is_claimed(struct proto_ep *pe, const struct unexp_msg *u);
/* The receive r (not posted) takes the claimed message u. */
void proto_recv_claimed(struct fmx_endpoint *ep, struct proto_msg *r, struct unexp_msg *u);
/* Take a posted, unmatched receive back (cancel). */
void proto_recv_unpost(struct fmx_endpoint *ep, struct proto_msg *m);
/* Cancel a posted receive: 1 if it may be freed now; 0 for a
 * multi-receive buffer with messages still arriving into it, which takes
 * no more and completes after them. */
int proto_recv_cancel(struct fmx_endpoint *ep, struct proto_msg *m);
/* Multi-receive buffers (multi.c). b, a receive of one segment not yet
 * posted, becomes one that min_free bytes must be left for. */
void proto_multi_init(struct proto_msg *b, uint64_t min_free);
/* The buffer takes no more messages (cancel, its source gone): 1 if it
 * was freed of every slice and may go now, 0 if it completes (with code)
 * when its last slice does. */
int proto_multi_close(struct fmx_endpoint *ep, struct proto_msg *b, fmx_return_t code);
/* The same, b completing at once if it can. */
void proto_multi_end(struct fmx_endpoint *ep, struct proto_msg *b, fmx_return_t code);
/* A slice of b completed (the core's completion of a message with
 * multi_of set). */
void proto_multi_slice_done(struct fmx_endpoint *ep, struct proto_msg *b);
/* p is gone: the receives posted for it alone complete with code. */
void proto_recv_fail_from(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code);
/* A record arrived from p on lane; payload follows hdr (the
 * transports' delivery, given them by the core). */
void proto_deliver(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                   const void *payload);
/* Push what waits in the partner's queue, in order. */
void proto_flush(struct fmx_endpoint *ep, struct partner *p);
/* A queued record leaves with its partner (which went down). */
void proto_out_drop(struct fmx_endpoint *ep, struct out_rec *o);
void proto_unexp_free(struct unexp_msg *u);
/* Forget what arrives from p (it failed or goes away); its receives are
 * completed by whoever fails p. */
void medium_reset(struct fmx_endpoint *ep, struct partner *p);
/* Bounded work on every transfer in progress. */
void rndv_progress(struct fmx_endpoint *ep);
/* The engines' question (bulk_env.active): whether our transfer id, a
 * send (still pushing) or a receive (still matched), runs with engine e. */
int proto_xfer_active(struct bulk_env *env, uint64_t id, int send, const struct fmx_bulk_engine *e);
/* bulk_env.receiving: a receive transfer of the endpoint is in pe->bulk. */
int proto_xfer_receiving(struct bulk_env *env);
/* Whether a rendezvous send of ours to pp's partner is in flight (its RTS
 * out, its FIN not yet in): its engine may still use what the connection
 * lends, and a receive from that partner now is half an exchange. */
int proto_sending_rndv(const struct proto_peer *pp);
/* The last rendezvous received's engine ("cma", "ring+offload"), or
 * "none", into out (len bytes, NUL-terminated). */
void proto_last_engine(const struct proto_ep *pe, char *out, size_t len);

#endif
