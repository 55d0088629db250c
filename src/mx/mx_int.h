/* SPDX-License-Identifier: MIT */
/* The MX face (libmyriexpress.so) over fmx.h: what its files share. It
 * reaches fmx only through the public API, as any application would. */
#ifndef FMX_MX_INT_H
#define FMX_MX_INT_H

#include <stdint.h>
#include <string.h>

#include "fmx.h"
#include "mx_extensions.h"
#include "myriexpress.h"

#define MX_FACE __attribute__((visibility("default")))

struct mx_endpoint {
  fmx_endpoint_t ep;
  mx_error_handler_t handler; /* MX_PARAM_ERROR_HANDLER, else the library's (NULL) */
  uint32_t board, eid;
  mx_unexp_handler_t unexp; /* mx_register_unexp_handler's, called through fmx's (mx_ext.c) */
  void *unexp_ctx;
  struct mx_endpoint *next; /* the process's open endpoints (mx_endpoint.c) */
};

/* The session of the endpoint addr names, as the open endpoint of this
 * process that gave addr knows it: 0, or -1 when none does (mx_endpoint.c). */
int mx_addr_session(mx_endpoint_addr_t addr, uint32_t *session);

/* mx_errors.c */
mx_return_t mx_code(fmx_return_t rc);
mx_status_code_t mx_status_code(fmx_return_t rc);
/* The outcome of a call: MX_SUCCESS, or the error handed to the handler
 * of e (the library's when e is NULL) with a message naming `what`;
 * returns what the handler returns (the fatal one does not return). */
mx_return_t mx_fail(struct mx_endpoint *e, mx_return_t code, const char *what, ...)
    __attribute__((format(printf, 3, 4)));
/* The same from an fmx code (MX_SUCCESS for FMX_SUCCESS). */
mx_return_t mx_check(struct mx_endpoint *e, fmx_return_t rc, const char *what);
int mx_ready(void); /* mx_init done, mx_finalize not yet */

/* Conversions. */
static inline uint32_t mx_timeout(uint32_t ms) { return ms == MX_INFINITE ? FMX_TIMEOUT_INFINITE : ms; }
static inline fmx_endpoint_addr_t mx_to_fmx_addr(mx_endpoint_addr_t a) {
  fmx_endpoint_addr_t f;
  memcpy(&f, &a, sizeof f);
  return f;
}
static inline mx_endpoint_addr_t mx_from_fmx_addr(fmx_endpoint_addr_t f) {
  mx_endpoint_addr_t a;
  memcpy(&a, &f, sizeof a);
  return a;
}
void mx_status_from(mx_status_t *out, const fmx_status_t *in);

/* mx_ext.c: internal symbols of MX's library that Open MPI 1.3's mtl mx
 * configure linked against (declared in no public header). */
mx_return_t mx_open_board(int i, int *handle);
mx_return_t mx__get_mapper_state(int handle, void *state);
int mx__regcache_clean(void *ptr, size_t len);

/* mx_endpoint.c: this host's board 0 (its NIC id, its name "<node>:0"). */
uint64_t mx_local_nic(void);
void mx_local_name(char *buf, size_t len);

_Static_assert(sizeof(mx_endpoint_addr_t) == sizeof(fmx_endpoint_addr_t), "an MX address holds an fmx one");
_Static_assert(sizeof(mx_status_t) == 48, "mx_status_t is 48 bytes (Open-MX's ABI)");
_Static_assert(sizeof(mx_segment_t) == 16 && sizeof(mx_param_t) == 16, "MX ABI sizes");
_Static_assert(__builtin_offsetof(mx_status_t, match_info) == 24 && __builtin_offsetof(mx_status_t, context) == 40,
               "mx_status_t layout");

#endif
