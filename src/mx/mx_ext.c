/* SPDX-License-Identifier: MIT */
/* The rest of the surface: address contexts, the session id, the unexpected
 * handler, the calls MX and Open-MX never implemented (they abort, as
 * Open-MX's did), and the internal symbols Open MPI's mtl mx configure
 * looked for. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "mx/mx_int.h"

/* Address contexts: one pointer per address, kept here (an address is a
 * process-local value; the table is small, a job's partners). */
struct addr_ctx {
  mx_endpoint_addr_t a;
  void *ctx;
};
static struct addr_ctx *actx;
static size_t nactx, capactx;
static pthread_mutex_t actx_lock = PTHREAD_MUTEX_INITIALIZER;

MX_FACE mx_return_t mx_set_endpoint_addr_context(mx_endpoint_addr_t addr, void *context) {
  pthread_mutex_lock(&actx_lock);
  size_t i = 0;
  while (i < nactx && memcmp(&actx[i].a, &addr, sizeof addr) != 0) i++;
  if (i == nactx) {
    if (nactx == capactx) {
      size_t cap = capactx ? capactx * 2 : 64;
      struct addr_ctx *n = realloc(actx, cap * sizeof *n);
      if (!n) {
        pthread_mutex_unlock(&actx_lock);
        return mx_fail(NULL, MX_NO_RESOURCES, "mx_set_endpoint_addr_context: out of memory");
      }
      actx = n;
      capactx = cap;
    }
    actx[nactx++].a = addr;
  }
  actx[i].ctx = context;
  pthread_mutex_unlock(&actx_lock);
  return MX_SUCCESS;
}

MX_FACE mx_return_t mx_get_endpoint_addr_context(mx_endpoint_addr_t addr, void **context) {
  if (!context) return mx_fail(NULL, MX_BAD_INFO_VAL, "mx_get_endpoint_addr_context: NULL output");
  *context = NULL;
  pthread_mutex_lock(&actx_lock);
  for (size_t i = 0; i < nactx; i++)
    if (!memcmp(&actx[i].a, &addr, sizeof addr)) *context = actx[i].ctx;
  pthread_mutex_unlock(&actx_lock);
  return MX_SUCCESS;
}

/* The session id: the session of the endpoint the address names (drawn
 * when it opened, new when it reopens), as the endpoint of ours that gave
 * the address knows it. fmx's address has no room for it (docs/mx.md), so
 * it is asked of the open endpoints; 0 when none of them knows the address
 * (its endpoint closed: Open-MX read it out of the address). */
MX_FACE mx_return_t mx_decompose_endpoint_addr2(mx_endpoint_addr_t addr, uint64_t *nic_id, uint32_t *endpoint_id,
                                                uint32_t *session_id) {
  if (session_id && mx_addr_session(addr, session_id) < 0) *session_id = 0;
  return mx_check(NULL, fmx_decompose_endpoint_addr(mx_to_fmx_addr(addr), nic_id, endpoint_id),
                  "mx_decompose_endpoint_addr2");
}

/* MX's handler behind fmx's: the same call with MX's types (the length
 * fits 32 bits: MX messages do). */
static fmx_unexp_action_t unexp_trampoline(void *context, fmx_endpoint_addr_t source, uint64_t match, uint64_t length,
                                           const void *data) {
  struct mx_endpoint *e = context;
  mx_unexp_handler_action_t a = e->unexp(e->unexp_ctx, mx_from_fmx_addr(source), match, (uint32_t)length, (void *)data);
  return a == MX_RECV_FINISHED ? FMX_UNEXP_FINISHED : a == MX_RECV_CONTINUE ? FMX_UNEXP_CONTINUE : (fmx_unexp_action_t)a;
}

MX_FACE mx_return_t mx_register_unexp_handler(mx_endpoint_t e, mx_unexp_handler_t handler, void *context) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_register_unexp_handler");
  /* The pair is set under fmx's lock, which the trampoline runs under. */
  fmx_return_t rc = fmx_set_unexp_handler(e->ep, NULL, NULL);
  e->unexp = handler;
  e->unexp_ctx = context;
  if (rc == FMX_SUCCESS && handler) rc = fmx_set_unexp_handler(e->ep, unexp_trampoline, e);
  return mx_check(e, rc, "mx_register_unexp_handler");
}

static void not_implemented(const char *what, const char *why) {
  char line[160];
  snprintf(line, sizeof line, "MX: %s is not implemented (%s)", what, why);
  fmx_log_error("FMX-MX-NOT-IMPLEMENTED", line);
  abort();
}

MX_FACE mx_return_t mx_register_unexp_callback(mx_endpoint_t ep, mx_matching_callback_t cb, void *ctxt) {
  (void)ep, (void)cb, (void)ctxt;
  not_implemented("mx_register_unexp_callback", "deprecated by mx_register_unexp_handler");
  return MX_FAILURE;
}

MX_FACE mx_return_t mx_iput(mx_endpoint_t endpoint, void *local_addr, uint32_t length, mx_endpoint_addr_t dest,
                            uint64_t remote_addr, void *context, mx_request_t *request) {
  (void)endpoint, (void)local_addr, (void)length, (void)dest, (void)remote_addr, (void)context, (void)request;
  not_implemented("mx_iput", "not in MX either");
  return MX_FAILURE;
}

MX_FACE mx_return_t mx_iget(mx_endpoint_t endpoint, void *local_addr, uint32_t length, mx_endpoint_addr_t dest,
                            uint64_t remote_addr, void *context, mx_request_t *request) {
  (void)endpoint, (void)local_addr, (void)length, (void)dest, (void)remote_addr, (void)context, (void)request;
  not_implemented("mx_iget", "not in MX either");
  return MX_FAILURE;
}

MX_FACE mx_return_t mx_buffered(mx_endpoint_t endpoint, mx_request_t *request, uint32_t timeout, uint32_t *result) {
  (void)endpoint, (void)request, (void)timeout, (void)result;
  not_implemented("mx_buffered", "not in MX either");
  return MX_FAILURE;
}

/* Open MPI 1.3's mtl mx configure links against these. */
MX_FACE mx_return_t mx_open_board(int i, int *handle) {
  (void)i;
  if (handle) *handle = -1;
  return MX_SUCCESS;
}

MX_FACE mx_return_t mx__get_mapper_state(int handle, void *state) {
  (void)handle;
  (void)state;
  return MX_FAILURE;
}

MX_FACE int mx__regcache_clean(void *ptr, size_t len) {
  (void)ptr;
  (void)len;
  return 0; /* fmx registers nothing: nothing to clean */
}
