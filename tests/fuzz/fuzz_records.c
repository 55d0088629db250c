/* SPDX-License-Identifier: MIT */
/*
 * Fuzz target: the records a peer writes into our ring, read by the
 * protocol (proto_deliver and all it calls: matching, eager and medium
 * data, rendezvous and region records, CTS and FIN for any request id).
 * Per input, a fresh pair of endpoints of this process: the input first
 * posts up to three receives on b (tagged or untagged, of a size it
 * chooses, so that records meet posted receives as well as the
 * unexpected queue), then writes records from a into a's ring to b, each
 * a raw 40-byte header from the input with its payload (len clamped to
 * what the input holds and the ring takes), and b makes progress after
 * each. Whatever b accepts must leave it consistent: closing both
 * endpoints frees everything (LeakSanitizer) and nothing reads or writes
 * out of bounds (ASan).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/fmx_int.h"
#include "fmx.h"
#include "fuzz_input.h"
#include "shm/eager_ring.h"
#include "shm/link.h"
#include "shm/shm.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_PAYLOAD 4096
#define MAX_RECORDS 32

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc, (void)argv;
  setenv("FMX_RING_SIZE", "64K", 1);
  setenv("FMX_LOG", "error", 1); /* each malformed record is logged once per process otherwise */
  if (fmx_init() != FMX_SUCCESS) abort();
  return 0;
}

static uint32_t eid_of(fmx_endpoint_t ep) {
  uint32_t e = 0;
  fmx_get_info(ep, FMX_INFO_ENDPOINT_ID, NULL, 0, &e, sizeof e);
  return e;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fmx_endpoint_t a, b;
  fmx_endpoint_addr_t a_to_b, b_to_a;
  if (fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 1, NULL, 0, &a) != FMX_SUCCESS) abort();
  if (fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 2, NULL, 0, &b) != FMX_SUCCESS) abort();
  if (fmx_connect(a, FMX_ANY_NIC, eid_of(b), 2, 1000, &a_to_b) != FMX_SUCCESS) abort();
  if (fmx_connect(b, FMX_ANY_NIC, eid_of(a), 1, 1000, &b_to_a) != FMX_SUCCESS) abort();

  /* Receives on b: (flags, size, match) each. */
  uint8_t nrecv = 0;
  fuzz_take(&data, &size, &nrecv, 1);
  static uint8_t rbuf[3][1 << 16];
  fmx_request_t rq[3];
  for (int i = 0; i < (nrecv & 3); i++) {
    uint8_t f = 0;
    uint16_t len = 0;
    uint64_t match = 0;
    fuzz_take(&data, &size, &f, 1);
    fuzz_take(&data, &size, &len, 2);
    fuzz_take(&data, &size, &match, 8);
    fmx_seg_t seg = {rbuf[i], len};
    if (f & 1)
      fmx_irecvx(b, &seg, 1, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &rq[i]);
    else if (f & 2)
      fmx_irecv_multi(b, rbuf[i], len, f >> 2, NULL, 0, 0, FMX_MSG_UNTAGGED, NULL, &rq[i]);
    else
      fmx_irecv(b, &seg, 1, match, f & 4 ? 0 : ~0ull, NULL, &rq[i]);
  }

  struct partner *p = ep_partner_from_addr(a, a_to_b);
  static uint8_t payload[MAX_PAYLOAD];
  for (int k = 0; k < MAX_RECORDS && size >= sizeof(struct proto_hdr); k++) {
    struct proto_hdr h;
    fuzz_take(&data, &size, &h, sizeof h);
    if (h.len > size) h.len = (uint32_t)size;
    if (h.len > MAX_PAYLOAD) h.len = MAX_PAYLOAD;
    fuzz_take(&data, &size, payload, h.len);
    if (!p || p->t.state != PARTNER_ALIVE) break; /* b dropped a for what it wrote */
    struct iovec iov = {payload, h.len};
    if (shm_ring_push(&shm_peer(p)->link[0]->tx, &h, &iov, h.len ? 1 : 0) != 0) break; /* ring full */
    for (int i = 0; i < 4; i++) fmx_progress(b);
  }
  for (int i = 0; i < 4; i++) {
    fmx_progress(a);
    fmx_progress(b);
  }
  /* Closing frees what b still holds: posted and matched receives, the
   * unexpected queue, transfers in progress. */
  fmx_close_endpoint(a);
  fmx_close_endpoint(b);
  return 0;
}
