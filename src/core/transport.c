/* SPDX-License-Identifier: MIT */
/* The registry of transports: the one place that names them. Adding a
 * transport is one file behind struct fmx_transport_ops and one line in
 * transports_init. */
#include "core/transport.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/fmx_int.h"
#include "base/log.h"
#include "net/net.h"
#include "platform/sys.h"
#include "self/self.h"
#include "shm/shm.h"


static const struct transport_core core_for_transports; /* below */
static const struct fmx_transport_ops *registered[TRANSPORT_MAX];
_Static_assert(sizeof(((struct fmx_endpoint *)0)->tpe) == TRANSPORT_MAX * sizeof(void *), "one state per transport");
static int nregistered;

void transport_register(const struct fmx_transport_ops *t) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i] == t) return;
  if (nregistered < TRANSPORT_MAX) registered[nregistered++] = t;
}

void transports_init(void) {
  transport_up = &core_for_transports;
  transport_register(&self_transport);
  transport_register(&shm_transport);
  transport_register(&net_transport);
}

uint64_t transports_nic(void) {
  for (int i = 0; i < nregistered; i++) {
    uint64_t n = registered[i]->nic ? registered[i]->nic() : 0;
    if (n) return n;
  }
  return sys_host_id();
}

const struct fmx_transport_ops *transport_remote(void) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i]->remote) return registered[i];
  return NULL;
}

void transports_ep_open(struct fmx_endpoint *ep) {
  for (int i = 0; i < nregistered; i++) {
    const struct fmx_transport_ops *tp = registered[i];
    if (!tp->remote) continue;
    int r = tp->listen ? tp->listen(ep) : 0;
    if (r == 0 && tp->open) r = tp->open(ep);
    if (r < 0) {
      if (r != -ENODEV) /* no interface: nothing to say */
        log_warn("FMX-NET-OFF", "endpoint %u: transport %s not started: %s; this endpoint reaches this host only",
                 ep->t.eid, tp->name, strerror(-r));
      if (tp->close) tp->close(ep);
      continue;
    }
    ep->on[ep->non++] = tp;
    if (tp->progress) ep->prog[ep->nprog++] = tp;
  }
}

void transports_ep_close(struct fmx_endpoint *ep) {
  for (int i = 0; i < ep->non; i++)
    if (ep->on[i]->close) ep->on[i]->close(ep);
  ep->non = ep->nprog = 0;
}

int transport_on(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp) {
  for (int i = 0; i < ep->non; i++)
    if (ep->on[i] == tp) return 1;
  return 0;
}

int transports_wait_fd(struct fmx_endpoint *ep, uint64_t *max_ns) {
  for (int i = 0; i < ep->non; i++)
    if (ep->on[i]->wait_fd) return ep->on[i]->wait_fd(ep, max_ns);
  return -1;
}

const struct fmx_transport_ops *transport_local(void) { return &shm_transport; }

const struct fmx_transport_ops *transport_self(void) { return &self_transport; }

void *transport_state(struct partner *p) { return (char *)p + PARTNER_HEAD; }

struct partner *transport_partner(void *state) { return (struct partner *)((char *)state - PARTNER_HEAD); }

void *transport_ep_state(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i] == tp) return ep->tpe[i];
  return NULL;
}

int transports_ep_init(struct fmx_endpoint *ep) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i]->ep_size && !(ep->tpe[i] = calloc(1, registered[i]->ep_size))) return -ENOMEM;
  return 0;
}

void transports_ep_fini(struct fmx_endpoint *ep) {
  for (int i = 0; i < nregistered; i++) {
    if (ep->tpe[i] && registered[i]->ep_fini) registered[i]->ep_fini(ep);
    free(ep->tpe[i]);
    ep->tpe[i] = NULL;
  }
}

/* ---- what a transport asks of the core (transport/transport.h) ---- */

struct transport_ep *transport_ep(struct fmx_endpoint *ep) { return &ep->t; }

struct transport_peer *transport_peer(struct partner *p) { return &p->t; }

static void wake_own(struct fmx_endpoint *ep) { ep_wake(ep->pe.benv.desc); }

static void lock(struct fmx_endpoint *ep) { ep_lock(ep); }

static void unlock(struct fmx_endpoint *ep) { ep_unlock(ep); }

static struct partner *peer_new(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp) {
  ep_partner_reap(ep);
  return ep_partner_new(ep, tp);
}

static void peer_joined(struct fmx_endpoint *ep, struct partner *p) {
  ep->nsiblings += p->t.bulk->same_process;
}

static struct partner *peer_next(struct fmx_endpoint *ep, const struct fmx_transport_ops *tp,
                                    struct partner *prev) {
  for (uint32_t i = prev ? prev->index + 1 : 0; i < ep->npartners; i++) {
    struct partner *p = ep->partners[i];
    if (p->pp.tp == tp && !p->reaped) return p;
  }
  return NULL;
}

static int peer_lending(struct partner *p) { return proto_sending_rndv(&p->pp); }

static int peer_waited(struct partner *p) { return proto_has_msgs(&p->pp); }

static void progress(struct fmx_endpoint *ep) { ep_progress_locked(ep); }

static uint32_t wakeups(struct fmx_endpoint *ep) { return __atomic_load_n(&ep->wakeup_gen, __ATOMIC_ACQUIRE); }

static const struct transport_core core_for_transports = {
    .wake_own = wake_own,
    .lock = lock,
    .unlock = unlock,
    .thread_init = ep_lock_library_thread,
    .peer_new = peer_new,
    .peer_find = ep_partner_find,
    .peer_joined = peer_joined,
    .peer_ready = ep_connects_ready,
    .peer_fail = ep_partner_fail,
    .peer_down = ep_partner_down,
    .peer_next = peer_next,
    .peer_lending = peer_lending,
    .peer_waited = peer_waited,
    .progress = progress,
    .wakeups = wakeups,
};

void transports_fini(void) {
  for (int i = 0; i < nregistered; i++)
    if (registered[i]->fini) registered[i]->fini();
}
