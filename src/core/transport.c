/* SPDX-License-Identifier: MIT */
/* The registry of transports: the one place that names them. Adding a
 * transport is one file behind struct fmx_transport_ops and one line in
 * transports_init. */
#include "core/transport.h"

#include "core/fmx_int.h"
#include "self/self.h"
#include "shm/shm.h"

#define MAX_TRANSPORTS 4

static const struct fmx_transport_ops *registered[MAX_TRANSPORTS];
static int nregistered;

void transport_register(const struct fmx_transport_ops *t) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i] == t) return;
  if (nregistered < MAX_TRANSPORTS) registered[nregistered++] = t;
}

void transports_init(void) {
  transport_register(&self_transport);
  transport_register(&shm_transport);
}

const struct fmx_transport_ops *transport_local(void) { return &shm_transport; }

const struct fmx_transport_ops *transport_self(void) { return &self_transport; }

void *transport_state(struct partner *p) { return p->tpd; }

void transport_wake_own(struct fmx_endpoint *ep) { ep_wake(ep->desc); }

void transports_fini(void) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i]->fini) registered[i]->fini();
}
