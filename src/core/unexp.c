/* SPDX-License-Identifier: MIT */
/*
 * The application's unexpected-message handler (fmx_set_unexp_handler,
 * MX's mx_register_unexp_handler): the protocol shows it each tagged
 * message no posted receive takes (proto_take_arriving), in the middle of
 * a progress pass. It runs with the endpoint's lock held, nested
 * (ep_nest_begin): the calls it makes back on this endpoint find the lock
 * theirs, other threads wait for the pass as for any other. No progress is
 * made inside it (ep_progress_locked returns at once), so the record being
 * delivered is not delivered again under it; closing or disconnecting
 * from inside it is refused.
 */
#include "base/log.h"
#include "core/api.h"

API fmx_return_t fmx_set_unexp_handler(fmx_endpoint_t ep, fmx_unexp_handler_t handler, void *context) {
  if (!ep) return FMX_BAD_ENDPOINT;
  ep_lock(ep);
  ep->unexp_fn = handler;
  ep->unexp_ctx = context;
  ep->pe.unexp_hook = handler != NULL;
  ep_unlock(ep);
  return FMX_SUCCESS;
}

int ep_unexp_call(struct fmx_endpoint *ep, struct partner *p, uint64_t match, uint64_t len, const void *data) {
  fmx_unexp_handler_t fn = ep->unexp_fn;
  if (!fn || ep_in_handler(ep)) return 0;
  CNT(ep, UNEXP_HANDLER);
  ep_nest_begin(&ep->lock);
  fmx_unexp_action_t a = fn(ep->unexp_ctx, ep_partner_addr(p), match, len, data);
  ep_nest_end(&ep->lock);
  if (a == FMX_UNEXP_FINISHED) return 1;
  if (a != FMX_UNEXP_CONTINUE)
    log_warn_once("FMX-UNEXP-ACTION",
                  "endpoint %u: the unexpected-message handler returned %d, neither FMX_UNEXP_CONTINUE nor "
                  "FMX_UNEXP_FINISHED: taken as FMX_UNEXP_CONTINUE (the message is kept)",
                  ep->t.eid, (int)a);
  return 0;
}
