/* SPDX-License-Identifier: MIT */
/* The protocol's own declarations, shared by its files (proto.h: what the
 * core asks of it). */
#ifndef FMX_PROTO_PROTO_INT_H
#define FMX_PROTO_PROTO_INT_H

#include "proto/proto.h"

struct bulk_conn;

/* The core's side (proto_init). */
extern const struct proto_core *proto_up; /* proto.c */

/* send.c */
/* Send a control record that belongs to no request (a FIN refusing an
 * RTS): queued in memory of its own when the ring is full; without that
 * memory the connection is given up (proto_abort). */
void proto_send_ctl(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h);

/* The medium class or rendezvous per size class, measured by the receiver
 * (classes.c). proto_class_step: one message of the class in mode (0
 * medium, 1 rendezvous) that took ns per 4 KiB (UINT64_MAX: not a clean
 * sample); returns the mode to ask of the sender. proto_class_adapts: the
 * choice is measured with p. proto_class_start: a message of len bytes
 * from p begins (its first record): a stamp, and *snap, for
 * proto_class_done; 0 when it is not timed (nothing else may be in
 * progress). proto_class_done: it ended in mode (both: timed while p had
 * records of ours to take); may push a HINT.
 * proto_class_hint: the sender takes a HINT. proto_class_wants_rndv: the
 * partner asked for messages of len bytes by rendezvous. */
int proto_class_step(struct proto_class *k, int mode, uint64_t ns);
int proto_class_adapts(struct fmx_endpoint *ep, struct partner *p);
uint64_t proto_class_start(struct fmx_endpoint *ep, struct partner *p, uint64_t len, uint64_t *snap);
void proto_class_done(struct fmx_endpoint *ep, struct partner *p, uint64_t len, int mode, uint64_t start,
                      uint64_t snap, int both);
/* What the class k counts a mode's fastest recent message at: ns per 4 KiB
 * as the receiver timed it, twice that for the medium class while k is
 * judged an exchange's (k->xleft; classes.c). */
uint64_t proto_class_cost(const struct proto_class *k, int mode);
void proto_class_hint(struct partner *p, const struct proto_hdr *h);
int proto_class_wants_rndv(const struct proto_peer *pp, uint64_t len);
/* Send the receive m's CTS or FIN to m->partner: kept in m while it waits
 * for ring room (never allocates; m is freed only once it has gone). */
void proto_send_ctl_of(struct fmx_endpoint *ep, struct proto_msg *m, const struct proto_hdr *h);
/* We lack memory for something p sent that must be kept (an unexpected
 * message, a control record): rather than lose it silently, the
 * connection goes down on both sides, every request with p completing
 * with `code` here and at the peer. `what` names it in the log. */
void proto_abort(struct fmx_endpoint *ep, struct partner *p, fmx_return_t code, const char *what);

/* recv.c */
/* An unexpected message from h's fields with a `bytes` buffer (not filled);
 * NULL when out of memory, and the connection with p is then down
 * (proto_abort). */
struct unexp_msg *proto_unexp_new(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane,
                                  const struct proto_hdr *h, size_t bytes);
/* A matched receive takes a message from p: status fields. */
void proto_fill_status(struct proto_msg *m, struct partner *p, uint64_t match, uint64_t msg_len);
/* The status's data and flags from a record's (or unexpected message's)
 * flags and data word (PROTO_F_DATA, PROTO_F_UNTAGGED). */
void proto_fill_data(struct proto_msg *m, unsigned hflags, uint64_t imm);
/* The receive that takes a message of msg_len bytes matching `match` from
 * p: the first posted one, or, when that is a multi-receive buffer, a
 * slice of it made a receive of its own; NULL: none (or no memory for the
 * slice: the message waits as an unexpected one). */
struct proto_msg *proto_take_posted(struct fmx_endpoint *ep, struct match_queues *mq, uint64_t match,
                                    struct partner *p, uint64_t msg_len);
/* proto_take_posted for a message arriving; when none takes a tagged one
 * the application's handler sees it first (data: its bytes when all are
 * here, else NULL) and a receive it posted may take it. *dropped = 1: the
 * handler took it (FMX_UNEXP_FINISHED), the caller drops it. */
struct proto_msg *proto_take_arriving(struct fmx_endpoint *ep, struct partner *p, uint64_t match, uint64_t msg_len,
                                      unsigned hflags, const void *data, int *dropped);
/* Posting the multi-receive buffer b: the unexpected messages of mq that
 * fit take slices of it, as many as there is room for; then it is posted
 * unless it is full. u is the first such message (still queued). */
void proto_multi_post(struct fmx_endpoint *ep, struct match_queues *mq, struct proto_msg *b, struct unexp_msg *u);
/* A receive being posted takes the unexpected message u (out of its
 * queue), which is freed. */
void proto_take_unexpected(struct fmx_endpoint *ep, struct proto_msg *r, struct unexp_msg *u);
/* A matched receive takes a whole eager message: copy what fits, complete. */
void proto_eager_complete(struct fmx_endpoint *ep, struct proto_msg *m, struct partner *p, uint64_t match,
                          const void *data, uint64_t len);

/* medium.c: eager messages in fragments, receiving side */
void medium_first(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                  const void *payload);
void medium_next(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                 const void *payload);
/* Another record came on lane: a medium message in flight there was cut
 * short (malformed), its receive fails. Nothing when none is. */
void medium_cut(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane);

/* rndv.c */
void rndv_recv_start(struct fmx_endpoint *ep, struct proto_msg *m, struct partner *p, struct bulk_conn *lane,
                     uint64_t msg_len, uint64_t sreq, struct proto_seg *segs, uint32_t nseg, unsigned flags);
/* The matched receive m cannot take the rendezvous sreq from p: it
 * completes with code, and an error FIN tells the sender. */
void rndv_recv_refuse(struct fmx_endpoint *ep, struct proto_msg *m, struct partner *p, uint64_t sreq,
                      fmx_return_t code);
void rndv_on_cts(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h);
void rndv_on_fin(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h);
/* A peer's code in a FIN or RGRANT, as one of ours (anything else:
 * FMX_MESSAGE_ABORTED). */
fmx_return_t rndv_peer_code(uint64_t code);

/* rma.c: the owner's side of region accesses, and the reader's grant */
void rma_on_get(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h);
void rma_on_put(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                const void *payload);
void rma_on_grant(struct fmx_endpoint *ep, struct partner *p, struct bulk_conn *lane, const struct proto_hdr *h,
                  const void *payload);

#endif
