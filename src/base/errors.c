/* SPDX-License-Identifier: MIT */
#include "base/errors.h"

#include <errno.h>

fmx_return_t fmx_code(int err) {
  switch (err) {
    case 0:
      return FMX_SUCCESS;
    case -ESRCH:
    case -EPIPE:
    case -EHOSTUNREACH:
      return FMX_REMOTE_ENDPOINT_UNREACHABLE;
    case -ECONNRESET:
      return FMX_REMOTE_ENDPOINT_CLOSED;
    case -EFAULT:
    case -EPROTO:
      return FMX_MESSAGE_ABORTED;
    case -EMSGSIZE:
      return FMX_MESSAGE_TRUNCATED;
    case -ETIMEDOUT:
      return FMX_TIMEOUT;
    case -ECANCELED:
      return FMX_CANCELLED;
    case -EADDRINUSE:
    case -EBUSY:
      return FMX_BUSY;
    case -EACCES:
    case -EPERM:
      return FMX_ACCESS_DENIED;
    default:
      return err < 0 && err > -4096 ? FMX_NO_SYSTEM_RESOURCES : FMX_BAD_ERROR;
  }
}
