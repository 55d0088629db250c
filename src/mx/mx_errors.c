/* SPDX-License-Identifier: MIT */
/* MX's codes, strings and error handlers. Errors are fatal by default (the
 * handler logs and exits), as in MX; mx_set_error_handler(MX_ERRORS_RETURN),
 * FMX_MX_ERRORS_FATAL=0 (or MX_ERRORS_ARE_FATAL=0, OMX_FATAL_ERRORS=0)
 * make calls return them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "mx/mx_int.h"

mx_return_t mx_code(fmx_return_t rc) {
  switch (rc) {
    case FMX_SUCCESS: return MX_SUCCESS;
    case FMX_ALREADY_INITIALIZED: return MX_ALREADY_INITIALIZED;
    case FMX_NOT_INITIALIZED: return MX_NOT_INITIALIZED;
    case FMX_ACCESS_DENIED: return MX_NO_PERM;
    case FMX_BOARD_NOT_FOUND: return MX_BOARD_UNKNOWN;
    case FMX_BAD_ENDPOINT: return MX_BAD_ENDPOINT;
    case FMX_SEGMENTS_BAD_COUNT: return MX_BAD_SEG_CNT;
    case FMX_BAD_REQUEST: return MX_BAD_REQUEST;
    case FMX_BAD_MATCH_MASK: return MX_BAD_MATCH_MASK;
    case FMX_NO_RESOURCES: case FMX_NO_SYSTEM_RESOURCES: return MX_NO_RESOURCES;
    case FMX_BUSY: return MX_BUSY;
    case FMX_BAD_INFO_KEY: return MX_BAD_INFO_KEY;
    case FMX_BAD_ADDRESS: return MX_BAD_SEG_MEM;
    case FMX_ENDPOINT_PARAM_BAD_KEY: return MX_BAD_PARAM_NAME;
    case FMX_ENDPOINT_PARAM_BAD_VALUE: return MX_BAD_PARAM_VAL;
    case FMX_PEER_NOT_FOUND: return MX_HOST_NOT_FOUND;
    case FMX_TIMEOUT: return MX_TIMEOUT;
    case FMX_REMOTE_ENDPOINT_BAD_ID: return MX_BAD_ENDPOINT_ID;
    case FMX_REMOTE_ENDPOINT_CLOSED: case FMX_REMOTE_ENDPOINT_UNREACHABLE: return MX_CONNECTION_FAILED;
    case FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY: return MX_BAD_CONNECTION_KEY;
    case FMX_BAD_INFO_LENGTH: return MX_BAD_INFO_LENGTH;
    case FMX_NIC_ID_NOT_FOUND: return MX_NIC_NOT_FOUND;
    case FMX_BAD_LIB_ABI: return MX_BAD_LIB_VERSION;
    case FMX_BAD_MATCHING_FOR_CONTEXT_ID_MASK: return MX_BAD_MATCHING_FOR_CONTEXT_ID_MASK;
    case FMX_NOT_IMPLEMENTED: return MX_FAILURE;
    default: return MX_BAD_BAD_BAD;
  }
}

mx_status_code_t mx_status_code(fmx_return_t rc) {
  switch (rc) {
    case FMX_SUCCESS: return MX_STATUS_SUCCESS;
    case FMX_TIMEOUT: return MX_STATUS_TIMEOUT;
    case FMX_MESSAGE_TRUNCATED: return MX_STATUS_TRUNCATED;
    case FMX_CANCELLED: return MX_STATUS_CANCELLED;
    case FMX_REMOTE_ENDPOINT_CLOSED: return MX_STATUS_ENDPOINT_CLOSED;
    case FMX_REMOTE_ENDPOINT_UNREACHABLE: return MX_STATUS_ENDPOINT_UNREACHABLE;
    case FMX_REMOTE_ENDPOINT_BAD_SESSION: return MX_STATUS_BAD_SESSION;
    case FMX_REMOTE_ENDPOINT_BAD_CONNECTION_KEY: return MX_STATUS_BAD_KEY;
    case FMX_REMOTE_ENDPOINT_BAD_ID: return MX_STATUS_BAD_ENDPOINT;
    case FMX_NO_RESOURCES: case FMX_NO_SYSTEM_RESOURCES: return MX_STATUS_NO_RESOURCES;
    default: return MX_STATUS_ABORTED; /* aborted, or anything MX has no word for */
  }
}

void mx_status_from(mx_status_t *out, const fmx_status_t *in) {
  out->code = mx_status_code(in->code);
  /* A send the receiver truncated (fmx tells a rendezvous or synchronous
   * sender how much was taken): MX reports it to the sender as well. */
  if (in->code == FMX_SUCCESS && in->xfer_length < in->msg_length) out->code = MX_STATUS_TRUNCATED;
  out->source = mx_from_fmx_addr(in->source);
  out->match_info = in->match_info;
  out->msg_length = in->msg_length > UINT32_MAX ? UINT32_MAX : (uint32_t)in->msg_length;
  out->xfer_length = in->xfer_length > UINT32_MAX ? UINT32_MAX : (uint32_t)in->xfer_length;
  out->context = in->context;
}

/* MX's strings for its return codes; mx_strstatus shares them where the
 * numbers meet, as MX's does. */
static const char *const ret_str[] = {
    [MX_SUCCESS] = "Success",
    [MX_BAD_BAD_BAD] = "Internal error",
    [MX_FAILURE] = "Failure",
    [MX_ALREADY_INITIALIZED] = "Already initialized",
    [MX_NOT_INITIALIZED] = "Not initialized",
    [MX_NO_DEV] = "No device",
    [MX_NO_DRIVER] = "No driver",
    [MX_NO_PERM] = "Permission denied",
    [MX_BOARD_UNKNOWN] = "Board unknown",
    [MX_BAD_ENDPOINT] = "Bad endpoint",
    [MX_BAD_SEG_LIST] = "Bad segment list",
    [MX_BAD_SEG_MEM] = "Bad segment memory",
    [MX_BAD_SEG_CNT] = "Bad segment count",
    [MX_BAD_REQUEST] = "Bad request",
    [MX_BAD_MATCH_MASK] = "Bad match mask",
    [MX_NO_RESOURCES] = "No resources",
    [MX_BAD_ADDR_LIST] = "Bad address list",
    [MX_BAD_ADDR_COUNT] = "Bad address count",
    [MX_BAD_ROOT] = "Bad root",
    [MX_NOT_COMPLETED] = "Not completed",
    [MX_BUSY] = "Busy",
    [MX_BAD_INFO_KEY] = "Bad info key",
    [MX_BAD_INFO_VAL] = "Bad info value",
    [MX_BAD_NIC] = "Bad NIC",
    [MX_BAD_PARAM_LIST] = "Bad parameter list",
    [MX_BAD_PARAM_NAME] = "Bad parameter name",
    [MX_BAD_PARAM_VAL] = "Bad parameter value",
    [MX_BAD_HOSTNAME_ARGS] = "Bad hostname arguments",
    [MX_HOST_NOT_FOUND] = "Peer Not Found in the Table",
    [MX_REQUEST_PENDING] = "Request pending",
    [MX_TIMEOUT] = "Command Timeout",
    [MX_NO_MATCH] = "No match",
    [MX_BAD_ENDPOINT_ID] = "Bad endpoint id",
    [MX_CONNECTION_FAILED] = "Connection failed",
    [MX_BAD_CONNECTION_KEY] = "Bad connection key",
    [MX_BAD_INFO_LENGTH] = "Bad info length",
    [MX_NIC_NOT_FOUND] = "NIC not found",
    [MX_BAD_KERNEL_VERSION] = "Bad kernel version",
    [MX_BAD_LIB_VERSION] = "Bad library version",
    [MX_NIC_DEAD] = "NIC dead",
    [MX_CANCEL_NOT_SUPPORTED] = "Cancel not supported",
    [MX_CLOSE_IN_HANDLER] = "Close in handler",
    [MX_BAD_MATCHING_FOR_CONTEXT_ID_MASK] = "Matching info does not respect context id mask",
    [MX_NOT_SUPPORTED_WITH_CONTEXT_ID] = "Not supported with context ids",
};

static const char *const status_str[] = {
    [MX_STATUS_SUCCESS] = "Success",
    [MX_STATUS_PENDING] = "Pending",
    [MX_STATUS_BUFFERED] = "Buffered",
    [MX_STATUS_REJECTED] = "Rejected",
    [MX_STATUS_TIMEOUT] = "Command Timeout",
    [MX_STATUS_TRUNCATED] = "Message Truncated",
    [MX_STATUS_CANCELLED] = "Cancelled",
    [MX_STATUS_ENDPOINT_UNKNOWN] = "Remote Endpoint Unknown",
    [MX_STATUS_ENDPOINT_CLOSED] = "Remote Endpoint is Closed",
    [MX_STATUS_ENDPOINT_UNREACHABLE] = "Remote Endpoint is Unreachable",
    [MX_STATUS_BAD_SESSION] = "Bad Session",
    [MX_STATUS_BAD_KEY] = "Bad Connection Key",
    [MX_STATUS_BAD_ENDPOINT] = "Bad Endpoint",
    [MX_STATUS_BAD_RDMAWIN] = "Bad RDMA Window",
    [MX_STATUS_ABORTED] = "Aborted",
    [MX_STATUS_EVENTQ_FULL] = "Event Queue Full",
    [MX_STATUS_NO_RESOURCES] = "No Resources",
};

MX_FACE const char *mx_strerror(mx_return_t code) {
  unsigned c = (unsigned)code;
  return c < sizeof ret_str / sizeof *ret_str && ret_str[c] ? ret_str[c] : "Unknown error";
}

MX_FACE const char *mx_strstatus(mx_status_code_t status) {
  unsigned c = (unsigned)status;
  return c < sizeof status_str / sizeof *status_str && status_str[c] ? status_str[c] : "Unknown status";
}

static mx_return_t fatal_handler(char *str, mx_return_t ret) {
  char line[400];
  snprintf(line, sizeof line, "MX: %s: %s", str, mx_strerror(ret));
  fmx_log_error("FMX-MX-FATAL", line);
  exit(-1);
}

static mx_return_t return_handler(char *str, mx_return_t ret) {
  (void)str;
  return ret;
}

MX_FACE const mx_error_handler_t MX_ERRORS_ARE_FATAL = fatal_handler;
MX_FACE const mx_error_handler_t MX_ERRORS_RETURN = return_handler;

/* The library's handler; NULL: not chosen yet (the environment decides at
 * the first error). */
static mx_error_handler_t lib_handler;

/* FMX_MX_ERRORS_FATAL, which the table also reads as OMX_FATAL_ERRORS and
 * MX_ERRORS_ARE_FATAL. */
static mx_error_handler_t default_handler(void) {
  char v[8];
  return fmx_config_get("FMX_MX_ERRORS_FATAL", v, sizeof v) == FMX_SUCCESS && !strcmp(v, "0") ? return_handler
                                                                                               : fatal_handler;
}

MX_FACE mx_error_handler_t mx_set_error_handler(mx_error_handler_t handler) {
  mx_error_handler_t old = __atomic_exchange_n(&lib_handler, handler, __ATOMIC_ACQ_REL);
  return old ? old : default_handler();
}

mx_return_t mx_fail(struct mx_endpoint *e, mx_return_t code, const char *what, ...) {
  if (code == MX_SUCCESS) return MX_SUCCESS;
  char msg[256];
  va_list ap;
  va_start(ap, what);
  vsnprintf(msg, sizeof msg, what, ap);
  va_end(ap);
  mx_error_handler_t h = e && e->handler ? e->handler : __atomic_load_n(&lib_handler, __ATOMIC_ACQUIRE);
  if (!h) h = default_handler();
  return h(msg, code);
}

mx_return_t mx_check(struct mx_endpoint *e, fmx_return_t rc, const char *what) {
  if (rc == FMX_SUCCESS) return MX_SUCCESS;
  return mx_fail(e, mx_code(rc), "%s: %s", what, fmx_strerror(rc));
}
