/* SPDX-License-Identifier: MIT */
/*
 * The self transport: records from an endpoint to itself (MX's "self"
 * path). A pushed record is copied into memory of its own and queued; a
 * poll hands the queue to the protocol in order. No shared memory, no
 * system call. Both ends share one address space, so a rendezvous to
 * oneself is one plain copy from the sender's buffer (ops.same_space).
 *
 * The queue holds at most what an endpoint's shm pool lends (FMX_POOL_BUFFERS
 * fragments of FMX_EAGER_FRAG): a sender that outruns its own receives
 * finds it full and its records wait in the partner's queue (proto);
 * nothing is lost. Out of
 * memory reads the same: the record waits and is pushed on a later pass.
 */
#include "self/self.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/config.h"

struct self_rec {
  struct self_rec *next;
  struct proto_hdr hdr;
  uint8_t data[];
};

/* The partner's private state (ops.partner_size; zeroed: an empty queue). */
struct self_peer {
  struct self_rec *head, *tail; /* in push order */
  uint64_t bytes;               /* payload queued */
};

static size_t self_max_payload(struct partner *p) {
  (void)p;
  return fmx_cfg.eager_frag; /* a medium message's fragment */
}

static int self_push(struct fmx_endpoint *ep, struct partner *p, const struct proto_hdr *h, const struct iovec *iov,
                     int iovcnt) {
  struct self_peer *s = transport_state(p);
  uint64_t cap = fmx_cfg.pool_buffers * fmx_cfg.eager_frag;
  if (h->len > self_max_payload(p) || (s->bytes && s->bytes + h->len > cap)) return -EAGAIN;
  struct self_rec *rec = malloc(sizeof *rec + h->len);
  if (!rec) return -ENOMEM;
  rec->next = NULL;
  rec->hdr = *h;
  record_gather(rec->data, iov, iovcnt, h->len);
  s->bytes += h->len;
  if (s->tail)
    s->tail->next = rec;
  else
    s->head = rec;
  s->tail = rec;
  transport_up->wake_own(ep); /* another thread of ours may sleep waiting for it */
  return 0;
}

/* Take the first record off the queue. */
static struct self_rec *take(struct self_peer *s) {
  struct self_rec *rec = s->head;
  if ((s->head = rec->next) == NULL) s->tail = NULL;
  s->bytes -= rec->hdr.len;
  return rec;
}

/* What was queued when the poll began: a record a delivery pushes to
 * ourselves (a CTS, a FIN) waits for the next poll, as in a ring. */
static void self_poll(struct fmx_endpoint *ep, struct partner *p, transport_deliver_fn deliver) {
  struct self_peer *s = transport_state(p);
  struct self_rec *last = s->tail;
  for (int more = last != NULL; more;) {
    struct self_rec *rec = take(s);
    more = rec != last;
    int gone = deliver(ep, p, NULL, &rec->hdr, rec->data);
    free(rec);
    if (gone) break;
  }
}

static void self_release(struct fmx_endpoint *ep, struct partner *p) {
  (void)ep;
  struct self_peer *s = transport_state(p);
  while (s->head) free(take(s));
}

const struct fmx_transport_ops self_transport = {
    .name = "self",
    .partner_size = sizeof(struct self_peer), /* aligned as TRANSPORT_STATE_ALIGN allows (below) */
    .same_space = 1,
    .push = self_push,
    .max_payload = self_max_payload,
    .poll = self_poll,
    .release = self_release,
};

_Static_assert(_Alignof(struct self_peer) <= TRANSPORT_STATE_ALIGN, "a partner's state is placed at that alignment");
