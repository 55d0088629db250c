/* SPDX-License-Identifier: MIT */
/* The one place a failure (-errno) becomes an outcome (fmx_return_t). */
#include <errno.h>

#include "base/errors.h"
#include "check.h"

int main(void) {
  CHECK_EQ(fmx_code(0), FMX_SUCCESS);
  CHECK_EQ(fmx_code(-ESRCH), FMX_REMOTE_ENDPOINT_UNREACHABLE); /* the peer died (CMA) */
  CHECK_EQ(fmx_code(-EPIPE), FMX_REMOTE_ENDPOINT_UNREACHABLE); /* its pipe's read end is gone */
  CHECK_EQ(fmx_code(-ECONNRESET), FMX_REMOTE_ENDPOINT_CLOSED);
  CHECK_EQ(fmx_code(-EFAULT), FMX_MESSAGE_ABORTED); /* a buffer freed under a transfer */
  CHECK_EQ(fmx_code(-EPROTO), FMX_MESSAGE_ABORTED); /* a peer broke the protocol */
  CHECK_EQ(fmx_code(-EMSGSIZE), FMX_MESSAGE_TRUNCATED);
  CHECK_EQ(fmx_code(-ETIMEDOUT), FMX_TIMEOUT);
  CHECK_EQ(fmx_code(-ECANCELED), FMX_CANCELLED);
  CHECK_EQ(fmx_code(-EADDRINUSE), FMX_BUSY);
  CHECK_EQ(fmx_code(-EACCES), FMX_ACCESS_DENIED);
  CHECK_EQ(fmx_code(-ENOMEM), FMX_NO_SYSTEM_RESOURCES);
  CHECK_EQ(fmx_code(-EMFILE), FMX_NO_SYSTEM_RESOURCES);
  /* Not an errno (a peer's word, a bug): never success, never a crash. */
  CHECK_EQ(fmx_code(1), FMX_BAD_ERROR);
  CHECK_EQ(fmx_code(-100000), FMX_BAD_ERROR);
  CHECK_EQ(fmx_code(-2147483647 - 1), FMX_BAD_ERROR);
  CHECK_DONE("test_errors");
  return 0;
}
