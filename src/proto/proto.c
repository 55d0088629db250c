/* SPDX-License-Identifier: MIT */
/* The protocol's objects from birth to end, and the calls the core gives
 * it (proto.h). */
#include <stdlib.h>

#include "platform/sys.h"
#include "proto/proto_int.h"

const struct proto_core *proto_up;

void proto_init(const struct proto_core *core) { proto_up = core; }

void proto_ep_init(struct fmx_endpoint *ep, unsigned ctx_bits, unsigned ctx_shift) {
  struct proto_ep *pe = proto_ep(ep);
  pe->ep = ep;
  match_init(&pe->mq, ctx_bits, ctx_shift);
  match_init(&pe->mqu, 0, 0);
  list_init(&pe->bulk);
  list_init(&pe->claimed);
  pe->benv.active = proto_xfer_active;
  pe->benv.receiving = proto_xfer_receiving;
}

void proto_ep_fini(struct proto_ep *pe) {
  for (int space = 0; space < 2; space++) {
    struct match_queues *mq = proto_mq(pe, space);
    while (!list_empty(&mq->unexp_all)) {
      struct unexp_msg *u = list_entry(mq->unexp_all.next, struct unexp_msg, all);
      match_del_unexp(mq, u);
      proto_unexp_free(u);
    }
  }
  region_table_fini(&pe->regions);
  while (!list_empty(&pe->claimed)) {
    struct unexp_msg *u = list_entry(pe->claimed.next, struct unexp_msg, all);
    list_del(&u->all);
    proto_unexp_free(u);
  }
}

void proto_peer_init(struct proto_peer *pp, const struct fmx_transport_ops *tp) {
  pp->tp = tp;
  pp->live = NULL;
}

struct proto_live *proto_live(struct partner *p) {
  struct proto_peer *pp = proto_peer(p);
  if (pp->live) return pp->live;
  struct proto_live *l = sys_zalloc(sizeof *l);
  if (!l) return NULL;
  list_init(&l->outq);
  list_init(&l->msgs);
  l->owner = p;
  return pp->live = l;
}

void proto_peer_fini(struct proto_peer *pp) {
  if (!pp->live) return;
  free(pp->live->cls);
  free(pp->live->medium);
  free(pp->live);
  pp->live = NULL;
}
