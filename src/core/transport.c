/* SPDX-License-Identifier: MIT */
/* The registry of transports: the one place that names them. Adding a
 * transport is one file behind struct fmx_transport_ops and one line in
 * transports_init. */
#include "core/transport.h"

#include <stdlib.h>

#include "core/fmx_int.h"
#include "self/self.h"
#include "shm/shm.h"


static const struct fmx_transport_ops *registered[TRANSPORT_MAX];
_Static_assert(sizeof(((struct fmx_endpoint *)0)->tpe) == TRANSPORT_MAX * sizeof(void *), "one state per transport");
static int nregistered;

void transport_register(const struct fmx_transport_ops *t) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i] == t) return;
  if (nregistered < TRANSPORT_MAX) registered[nregistered++] = t;
}

void transports_init(void) {
  transport_register(&self_transport);
  transport_register(&shm_transport);
}

const struct fmx_transport_ops *transport_local(void) { return &shm_transport; }

const struct fmx_transport_ops *transport_self(void) { return &self_transport; }

void *transport_state(struct partner *p) { return p->tpd; }

void *transport_ep_state(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i] == tp) return ep->tpe[i];
  return NULL;
}

int transports_ep_init(struct fmx_endpoint *ep) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i]->ep_size && !(ep->tpe[i] = calloc(1, registered[i]->ep_size))) return -1;
  return 0;
}

void transports_ep_fini(struct fmx_endpoint *ep) {
  for (int i = 0; i < nregistered; i++) {
    if (ep->tpe[i] && registered[i]->ep_fini) registered[i]->ep_fini(ep);
    free(ep->tpe[i]);
    ep->tpe[i] = NULL;
  }
}

void transport_wake_own(struct fmx_endpoint *ep) { ep_wake(ep->desc); }

void transports_fini(void) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i]->fini) registered[i]->fini();
}
