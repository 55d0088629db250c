/* SPDX-License-Identifier: MIT */
/* What the core asks of the protocol (proto_int.h: proto's own). */
#ifndef FMX_PROTO_PROTO_H
#define FMX_PROTO_PROTO_H

#include "core/fmx_int.h"

struct bulk_conn;

/* Start a send request (eager or rendezvous); the request is queued if the
 * ring has no room. */
void proto_send_start(struct fmx_endpoint *ep, struct fmx_request *r);
/* An eager message of one record with nothing queued before it, pushed at
 * once from the caller's segments (its request is made after): 1, or 0
 * when it must take proto_send_start. */
int proto_send_now(struct fmx_endpoint *ep, struct partner *p, const fmx_seg_t *segs, uint32_t nseg, uint64_t len,
                   uint64_t match);
/* Post a receive: take an unexpected message or queue it. */
void proto_recv_post(struct fmx_endpoint *ep, struct fmx_request *r);
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
void medium_reset(struct partner *p);
/* Bounded work on every transfer in progress. */
void rndv_progress(struct fmx_endpoint *ep);

#endif
