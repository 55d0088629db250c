/* SPDX-License-Identifier: MIT */
/* MX's library and endpoint calls, connections and names, over fmx. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/utsname.h>

#include "mx/mx_int.h"

static int inited;

/* The open endpoints, for what MX asks of an address without its
 * endpoint (mx_decompose_endpoint_addr2). A reader calls into fmx, which
 * may hold an endpoint's lock and run an unexpected-message handler that
 * reads here again: glibc's rwlock lets a reader in while another reads
 * (a writer that waits does not shut readers out), and writers call no
 * fmx under it. */
static struct mx_endpoint *open_eps;
static pthread_rwlock_t open_eps_lock = PTHREAD_RWLOCK_INITIALIZER;

static void eps_add(struct mx_endpoint *e) {
  pthread_rwlock_wrlock(&open_eps_lock);
  e->next = open_eps;
  open_eps = e;
  pthread_rwlock_unlock(&open_eps_lock);
}

static void eps_remove(struct mx_endpoint *e) {
  pthread_rwlock_wrlock(&open_eps_lock);
  struct mx_endpoint **pp = &open_eps;
  while (*pp && *pp != e) pp = &(*pp)->next;
  if (*pp) *pp = e->next;
  pthread_rwlock_unlock(&open_eps_lock);
}

int mx_addr_session(mx_endpoint_addr_t addr, uint32_t *session) {
  fmx_endpoint_addr_t a = mx_to_fmx_addr(addr);
  int found = -1;
  pthread_rwlock_rdlock(&open_eps_lock);
  for (struct mx_endpoint *e = open_eps; e && found < 0; e = e->next)
    if (fmx_get_info(e->ep, FMX_INFO_PEER_SESSION, &a, sizeof a, session, sizeof *session) == FMX_SUCCESS) found = 0;
  pthread_rwlock_unlock(&open_eps_lock);
  return found;
}

int mx_ready(void) { return __atomic_load_n(&inited, __ATOMIC_ACQUIRE); }

MX_FACE mx_return_t mx__init_api(int api) {
  if (api == 0 || (api >> 8) != (MX_API >> 8))
    return mx_fail(NULL, MX_BAD_LIB_VERSION, "mx_init: the program was built for MX API 0x%x, this is 0x%x", api,
                   MX_API);
  if (mx_ready()) return mx_fail(NULL, MX_ALREADY_INITIALIZED, "mx_init");
  fmx_return_t rc = fmx_init();
  if (rc != FMX_SUCCESS && rc != FMX_ALREADY_INITIALIZED) return mx_check(NULL, rc, "mx_init");
  __atomic_store_n(&inited, 1, __ATOMIC_RELEASE);
  return MX_SUCCESS;
}

MX_FACE mx_return_t mx_finalize(void) {
  if (!mx_ready()) return mx_fail(NULL, MX_NOT_INITIALIZED, "mx_finalize");
  __atomic_store_n(&inited, 0, __ATOMIC_RELEASE);
  return mx_check(NULL, fmx_finalize(), "mx_finalize");
}

MX_FACE mx_return_t mx_open_endpoint(uint32_t board_number, uint32_t endpoint_id, uint32_t endpoint_key,
                                     mx_param_t *params_array, uint32_t params_count, mx_endpoint_t *endpoint) {
  if (!mx_ready()) return mx_fail(NULL, MX_NOT_INITIALIZED, "mx_open_endpoint");
  if (!endpoint) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_open_endpoint: NULL endpoint pointer");
  if (params_count && !params_array) return mx_fail(NULL, MX_BAD_PARAM_LIST, "mx_open_endpoint: NULL parameters");
  if (board_number != 0 && board_number != MX_ANY_NIC)
    return mx_fail(NULL, MX_BOARD_UNKNOWN, "mx_open_endpoint: board %u (this host has board 0)", board_number);
  struct mx_endpoint *e = calloc(1, sizeof *e);
  if (!e) return mx_fail(NULL, MX_NO_RESOURCES, "mx_open_endpoint: out of memory");
  fmx_endpoint_param_t fp[4];
  uint32_t nfp = 0;
  for (uint32_t i = 0; i < params_count; i++) {
    switch (params_array[i].key) {
      case MX_PARAM_ERROR_HANDLER:
        e->handler = params_array[i].val.error_handler;
        break;
      case MX_PARAM_UNEXP_QUEUE_MAX: /* fmx's unexpected queue is bounded by memory alone */
        break;
      case MX_PARAM_CONTEXT_ID:
        if (nfp < 4) {
          fp[nfp].key = FMX_PARAM_CONTEXT_ID;
          fp[nfp].val.context_id.bits = params_array[i].val.context_id.bits;
          fp[nfp].val.context_id.shift = params_array[i].val.context_id.shift;
          nfp++;
        }
        break;
      default: {
        mx_return_t r = mx_fail(e, MX_BAD_PARAM_NAME, "mx_open_endpoint: parameter key %d", params_array[i].key);
        free(e);
        return r;
      }
    }
  }
  fmx_return_t rc = fmx_open_endpoint(0, endpoint_id == MX_ANY_ENDPOINT ? FMX_ANY_ENDPOINT : endpoint_id,
                                      endpoint_key, fp, nfp, &e->ep);
  if (rc != FMX_SUCCESS) {
    mx_return_t r = mx_check(e, rc, "mx_open_endpoint");
    free(e);
    return r;
  }
  if (fmx_get_info(e->ep, FMX_INFO_ENDPOINT_ID, NULL, 0, &e->eid, sizeof e->eid) != FMX_SUCCESS) e->eid = endpoint_id;
  eps_add(e);
  *endpoint = e;
  return MX_SUCCESS;
}

MX_FACE mx_return_t mx_close_endpoint(mx_endpoint_t e) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_close_endpoint");
  eps_remove(e);
  fmx_return_t rc = fmx_close_endpoint(e->ep);
  if (rc != FMX_SUCCESS) eps_add(e);
  mx_return_t r = mx_check(e, rc, "mx_close_endpoint");
  if (rc == FMX_SUCCESS) free(e);
  return r;
}

MX_FACE mx_return_t mx_wakeup(mx_endpoint_t e) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_wakeup");
  return mx_check(e, fmx_wakeup(e->ep), "mx_wakeup");
}

MX_FACE mx_return_t mx_progress(mx_endpoint_t e) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_progress");
  return mx_check(e, fmx_progress(e->ep), "mx_progress");
}

/* Progress runs inside calls only (there is no progression thread to stop):
 * both are accepted and change nothing. */
MX_FACE mx_return_t mx_disable_progression(mx_endpoint_t e) {
  return e ? MX_SUCCESS : mx_fail(NULL, MX_BAD_ENDPOINT, "mx_disable_progression");
}

MX_FACE mx_return_t mx_reenable_progression(mx_endpoint_t e) {
  return e ? MX_SUCCESS : mx_fail(NULL, MX_BAD_ENDPOINT, "mx_reenable_progression");
}

MX_FACE mx_return_t mx_connect(mx_endpoint_t e, uint64_t nic_id, uint32_t endpoint_id, uint32_t key,
                               uint32_t timeout, mx_endpoint_addr_t *addr) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_connect");
  if (!addr) return mx_fail(e, MX_BAD_ENDPOINT, "mx_connect: NULL address pointer");
  fmx_endpoint_addr_t a;
  /* A connect woken by mx_wakeup or out of time is MX_TIMEOUT (not a
   * success with no result, as waits are). */
  fmx_return_t rc = fmx_connect(e->ep, nic_id, endpoint_id, key, mx_timeout(timeout), &a);
  if (rc == FMX_SUCCESS) *addr = mx_from_fmx_addr(a);
  return mx_check(e, rc, "mx_connect");
}

MX_FACE mx_return_t mx_iconnect(mx_endpoint_t e, uint64_t nic_id, uint32_t eid, uint32_t key, uint64_t match_info,
                                void *context, mx_request_t *request) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_iconnect");
  if (!request) return mx_fail(e, MX_BAD_REQUEST, "mx_iconnect: NULL request pointer");
  fmx_request_t r = NULL;
  fmx_return_t rc = fmx_iconnect(e->ep, nic_id, eid, key, match_info, context, &r);
  if (rc == FMX_SUCCESS) *request = (mx_request_t)r;
  return mx_check(e, rc, "mx_iconnect");
}

MX_FACE mx_return_t mx_disconnect(mx_endpoint_t e, mx_endpoint_addr_t addr) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_disconnect");
  return mx_check(e, fmx_disconnect(e->ep, mx_to_fmx_addr(addr)), "mx_disconnect");
}

MX_FACE mx_return_t mx_get_endpoint_addr(mx_endpoint_t e, mx_endpoint_addr_t *addr) {
  if (!e) return mx_fail(NULL, MX_BAD_ENDPOINT, "mx_get_endpoint_addr");
  fmx_endpoint_addr_t a;
  fmx_return_t rc = fmx_get_endpoint_addr(e->ep, &a);
  if (rc == FMX_SUCCESS && addr) *addr = mx_from_fmx_addr(a);
  return mx_check(e, rc, "mx_get_endpoint_addr");
}

MX_FACE mx_return_t mx_decompose_endpoint_addr(mx_endpoint_addr_t addr, uint64_t *nic_id, uint32_t *endpoint_id) {
  return mx_check(NULL, fmx_decompose_endpoint_addr(mx_to_fmx_addr(addr), nic_id, endpoint_id),
                  "mx_decompose_endpoint_addr");
}

/* --- names ---------------------------------------------------------------- */

uint64_t mx_local_nic(void) {
  uint64_t nic = 0;
  if (fmx_get_info(NULL, FMX_INFO_NIC_ID, NULL, 0, &nic, sizeof nic) != FMX_SUCCESS) nic = 0;
  return nic;
}

void mx_local_name(char *buf, size_t len) {
  struct utsname u;
  if (uname(&u) != 0) snprintf(u.nodename, sizeof u.nodename, "localhost");
  snprintf(buf, len, "%.*s:0", (int)(len > 3 ? len - 3 : 0), u.nodename);
}

MX_FACE mx_return_t mx_hostname_to_nic_id(char *hostname, uint64_t *nic_id) {
  char mine[MX_MAX_HOSTNAME_LEN];
  if (!hostname || !nic_id) return mx_fail(NULL, MX_BAD_HOSTNAME_ARGS, "mx_hostname_to_nic_id");
  mx_local_name(mine, sizeof mine);
  if (!strcmp(hostname, mine) || !strcmp(hostname, "localhost")) {
    *nic_id = mx_local_nic();
    return MX_SUCCESS;
  }
  fmx_return_t rc = fmx_hostname_to_nic_id(hostname, nic_id);
  return rc == FMX_SUCCESS ? MX_SUCCESS
                           : mx_fail(NULL, MX_HOST_NOT_FOUND, "mx_hostname_to_nic_id: '%.80s' is not in the peer table",
                                     hostname);
}

MX_FACE mx_return_t mx_nic_id_to_hostname(uint64_t nic_id, char *hostname) {
  if (!hostname) return mx_fail(NULL, MX_BAD_HOSTNAME_ARGS, "mx_nic_id_to_hostname");
  if (nic_id == mx_local_nic()) {
    mx_local_name(hostname, MX_MAX_HOSTNAME_LEN);
    return MX_SUCCESS;
  }
  fmx_return_t rc = fmx_nic_id_to_hostname(nic_id, hostname, MX_MAX_HOSTNAME_LEN);
  return rc == FMX_SUCCESS ? MX_SUCCESS
                           : mx_fail(NULL, MX_HOST_NOT_FOUND, "mx_nic_id_to_hostname: %012" PRIx64 " is not in the peer table",
                                     nic_id);
}

MX_FACE mx_return_t mx_board_number_to_nic_id(uint32_t board_number, uint64_t *nic_id) {
  if (board_number != 0 || !nic_id)
    return mx_fail(NULL, MX_BOARD_UNKNOWN, "mx_board_number_to_nic_id: board %u", board_number);
  *nic_id = mx_local_nic();
  return MX_SUCCESS;
}

MX_FACE mx_return_t mx_nic_id_to_board_number(uint64_t nic_id, uint32_t *board_number) {
  if (!board_number || nic_id != mx_local_nic())
    return mx_fail(NULL, MX_BOARD_UNKNOWN, "mx_nic_id_to_board_number: %012" PRIx64 " is not a board of this host",
                   nic_id);
  *board_number = 0;
  return MX_SUCCESS;
}
