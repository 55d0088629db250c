/* SPDX-License-Identifier: MIT */
/*
 * pull: the bytes of a rendezvous from another host, moved by the
 * transport that carries the records (net's pull protocol: the receiver
 * asks for blocks of frames, the sender answers from its buffer, lost
 * frames are asked again; docs/protocol.md). The engine only hands the
 * transfer to what the connection lends (bulk/conn.h, struct
 * bulk_pull_ops): no other engine reaches a remote host's memory, and this
 * one reaches nothing else.
 */
#include <errno.h>
#include <stdio.h>

#include "bulk/engine.h"

/* Nothing to measure here: it serves the partners of other hosts, whatever
 * FMX_BULK says, and no others. */
static const char *const no_cost = "";

static int pull_probe(char *reason, size_t len) {
  snprintf(reason, len, "other hosts only (the net transport's pull protocol)");
  return 0;
}

static int pull_usable(const struct bulk_peer *p, const struct bulk_conn *c) {
  (void)p;
  return c && c->pull;
}

static int pull_recv_start(struct bulk_xfer *x) {
  return x->conn && x->conn->pull ? x->conn->pull->recv_start(x->conn->pull_arg, x) : -EPROTO;
}

static int pull_recv_progress(struct bulk_xfer *x) {
  return x->conn && x->conn->pull ? x->conn->pull->recv_progress(x->conn->pull_arg, x) : -EPROTO;
}

static int pull_send_start(struct bulk_xfer *x) {
  return x->conn && x->conn->pull ? x->conn->pull->send_start(x->conn->pull_arg, x) : -EPROTO;
}

/* The sender's part is the lender's (it answers pulls as they come): it
 * ends with the receiver's FIN. */
static int pull_send_progress(struct bulk_xfer *x) {
  return x->conn && x->conn->pull ? BULK_MORE : -EPROTO;
}

static void pull_end(struct bulk_xfer *x) {
  if (x->conn && x->conn->pull) x->conn->pull->end(x->conn->pull_arg, x);
}

/* A receive whose pull could not start: the partner is gone (-ESRCH:
 * unreachable), or no memory for its state. */
static int pull_refused(struct bulk_xfer *x) {
  return x->start_err ? x->start_err : -ENOMEM;
}

static const struct fmx_bulk_engine pull_failed = {
    .name = "pull",
    .cnt_msgs = CNT_BULK_PULL,
    .recv_progress = pull_refused,
};

const struct fmx_bulk_engine bulk_pull = {
    .name = "pull",
    .cost_cfg = &no_cost,
    .cost_var = "",
    .probe = pull_probe,
    .usable = pull_usable,
    .needs_cts = 1,
    .receiver_copies = 0, /* the bytes come when the sender sends them: a waiter sleeps on the socket */
    .wire_id = 3,
    .cnt_msgs = CNT_BULK_PULL,
    .recv_start = pull_recv_start,
    .fallback = &pull_failed,
    .recv_progress = pull_recv_progress,
    .send_start = pull_send_start,
    .send_progress = pull_send_progress,
    .end = pull_end,
};
