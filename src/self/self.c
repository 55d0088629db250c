/* SPDX-License-Identifier: MIT */
/*
 * The self transport: records from an endpoint to itself (MX's "self"
 * path). A pushed record is copied into memory of its own and queued; a
 * poll hands the queue to the protocol in order. No shared memory, no
 * system call. Both ends share one address space, so a rendezvous to
 * oneself is one plain copy from the sender's buffer (ops.same_space).
 *
 * The queue holds at most FMX_RING_SIZE bytes of payload, as an shm ring
 * would: a sender that outruns its own receives finds it full and its
 * records wait in the partner's queue (proto); nothing is lost. Out of
 * memory reads the same: the record waits and is pushed on a later pass.
 */
#include "self/self.h"

#include <stdlib.h>
#include <string.h>

#include "base/config.h"
#include "base/list.h"

struct self_rec {
  struct list_node node;
  struct proto_hdr hdr;
  uint8_t data[];
};

/* The partner's private state (ops.partner_size, zeroed). */
struct self_peer {
  struct list_node q; /* struct self_rec, in push order */
  uint64_t bytes;     /* payload queued */
};

static struct self_peer *peer_of(struct partner *p) {
  struct self_peer *s = transport_state(p);
  if (!s->q.next) list_init(&s->q); /* first use */
  return s;
}

static size_t self_max_payload(struct partner *p) {
  (void)p;
  return fmx_cfg.ring_size / 2; /* what an shm ring takes in one record */
}

static int self_push(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h, const struct iovec *iov,
                     int iovcnt) {
  struct self_peer *s = peer_of(p);
  if (h->len > self_max_payload(p) || (s->bytes && s->bytes + h->len > fmx_cfg.ring_size)) return -1;
  struct self_rec *rec = malloc(sizeof *rec + h->len);
  if (!rec) return -1;
  rec->hdr = *h;
  record_gather(rec->data, iov, iovcnt, h->len);
  s->bytes += h->len;
  list_add_tail(&s->q, &rec->node);
  transport_wake_own(ep); /* another thread of ours may sleep waiting for it */
  return 0;
}

/* What was queued when the poll began: a record a delivery pushes to
 * ourselves (a CTS, a FIN) waits for the next poll, as in a ring. */
static void self_poll(struct fmx_endpoint *ep, struct partner *p, transport_deliver_fn deliver) {
  struct self_peer *s = peer_of(p);
  if (list_empty(&s->q)) return;
  struct list_node *last = s->q.prev;
  for (int more = 1; more && !list_empty(&s->q);) {
    struct self_rec *rec = list_entry(s->q.next, struct self_rec, node);
    more = &rec->node != last;
    list_del(&rec->node);
    s->bytes -= rec->hdr.len;
    int gone = deliver(ep, p, NULL, &rec->hdr, rec->data);
    free(rec);
    if (gone) break;
  }
}

static void self_release(struct fmx_endpoint *ep, struct partner *p) {
  (void)ep;
  struct self_peer *s = peer_of(p);
  while (!list_empty(&s->q)) {
    struct self_rec *rec = list_entry(s->q.next, struct self_rec, node);
    list_del(&rec->node);
    free(rec);
  }
  s->bytes = 0;
}

const struct fmx_transport_ops self_transport = {
    .name = "self",
    .partner_size = sizeof(struct self_peer),
    .same_space = 1,
    .push = self_push,
    .max_payload = self_max_payload,
    .poll = self_poll,
    .release = self_release,
};
