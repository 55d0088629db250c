/* SPDX-License-Identifier: MIT */
/*
 * The one internal error convention (README, "Conventions"):
 * - a call that can fail returns int: >= 0 on success (a count, a value,
 *   a state such as BULK_MORE/BULK_DONE), a negative errno on failure;
 * - an outcome, what the application reads (a request's status, an API
 *   call's result) or a peer sends as one (a FIN's code, a connect's
 *   answer), is an fmx_return_t: positive, never negated, never returned
 *   where an errno may be.
 * fmx_code is the one place a failure becomes an outcome.
 */
#ifndef FMX_BASE_ERRORS_H
#define FMX_BASE_ERRORS_H

#include "fmx.h"

/* The outcome of err (0 or a negative errno; anything else, from a peer
 * for example, gives FMX_BAD_ERROR):
 *   -ESRCH, -EPIPE, -EHOSTUNREACH   REMOTE_ENDPOINT_UNREACHABLE (the peer is gone)
 *   -ECONNRESET                     REMOTE_ENDPOINT_CLOSED (it closed its endpoint)
 *   -EFAULT, -EPROTO                MESSAGE_ABORTED (a buffer is gone, a peer broke the protocol)
 *   -EMSGSIZE                       MESSAGE_TRUNCATED
 *   -ETIMEDOUT                      TIMEOUT
 *   -ECANCELED                      CANCELLED
 *   -EADDRINUSE, -EBUSY             BUSY
 *   -EACCES, -EPERM                 ACCESS_DENIED
 *   -ENOMEM and other system errors NO_SYSTEM_RESOURCES */
fmx_return_t fmx_code(int err);

#endif
