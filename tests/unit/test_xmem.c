/* SPDX-License-Identifier: MIT */
/* fmx_mem_alloc memory: its API and errors, and large messages from and
 * into it between two endpoints (sizes, the switch from eager at one
 * fragment, segment lists, truncation, a
 * receive into malloc'd memory, two regions in one message, a region freed
 * and another allocated in its place, every engine forced, FMX_XMEM=0):
 * every byte arrives, and the counters say when the mapping was used. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "base/config.h"
#include "core/fmx_int.h"
#include "fmx.h"

static fmx_endpoint_t a, b;
static fmx_endpoint_addr_t a_to_b;

static uint64_t counter(fmx_endpoint_t ep, int which) {
  uint64_t v[CNT_MAX];
  CHECK_EQ(fmx_get_info(ep, FMX_INFO_COUNTER_VALUES, NULL, 0, v, sizeof v), FMX_SUCCESS);
  return v[which];
}

static uint8_t pat(uint64_t seed, uint64_t i) { return (uint8_t)((i * 131 + seed * 7 + (i >> 12)) & 0xff); }

static void api_errors(void) {
  void *p = (void *)1;
  CHECK_EQ(fmx_mem_alloc(0, &p), FMX_BAD_ADDRESS);
  CHECK(p == NULL);
  CHECK_EQ(fmx_mem_alloc(4096, NULL), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_mem_free(NULL), FMX_SUCCESS);
  void *m = malloc(64);
  CHECK_EQ(fmx_mem_free(m), FMX_BAD_ADDRESS); /* not ours */
  free(m);
  CHECK_EQ(fmx_mem_alloc(10000, &p), FMX_SUCCESS);
  CHECK(p && ((uintptr_t)p & 4095) == 0);
  for (size_t i = 0; i < 12288; i++) CHECK_EQ(((uint8_t *)p)[i], 0); /* zeroed, rounded to pages */
  CHECK_EQ(fmx_mem_free((uint8_t *)p + 4096), FMX_BAD_ADDRESS); /* not its start */
  CHECK_EQ(fmx_mem_free(p), FMX_SUCCESS);
  CHECK_EQ(fmx_mem_free(p), FMX_BAD_ADDRESS); /* twice */
}

struct sender {
  const fmx_seg_t *segs;
  uint32_t nseg;
};

/* The sending endpoint's own thread waits on the send, so it is in fmx and
 * takes coop stripes (storing straight into a mapped receive buffer). */
static void *send_wait(void *arg) {
  struct sender *s = arg;
  fmx_request_t r;
  fmx_status_t st;
  uint32_t res = 0;
  CHECK_EQ(fmx_isend(a, s->segs, s->nseg, a_to_b, 9, NULL, &r), FMX_SUCCESS);
  while (!res) CHECK_EQ(fmx_wait(a, &r, 10000, &st, &res), FMX_SUCCESS);
  CHECK_EQ(st.code, FMX_SUCCESS);
  return NULL;
}

/* Send `in` (segments) to `out` (segments) with the sender in its own
 * thread; returns the receive's status. */
static fmx_status_t xfer(const fmx_seg_t *in, uint32_t nin, const fmx_seg_t *out, uint32_t nout) {
  fmx_request_t rr;
  CHECK_EQ(fmx_irecv(b, out, nout, 9, ~0ull, NULL, &rr), FMX_SUCCESS);
  struct sender s = {in, nin};
  pthread_t t;
  pthread_create(&t, NULL, send_wait, &s);
  fmx_status_t st;
  uint32_t res = 0;
  while (!res) CHECK_EQ(fmx_wait(b, &rr, 10000, &st, &res), FMX_SUCCESS);
  pthread_join(t, NULL);
  return st;
}

static void fill(uint8_t *p, uint64_t len, uint64_t seed) {
  for (uint64_t i = 0; i < len; i++) p[i] = pat(seed, i);
}

/* The receive got exactly the first `len` bytes of the pattern, in order,
 * across its segments. */
static void check_segs(const fmx_seg_t *out, uint32_t n, uint64_t len, uint64_t seed) {
  uint64_t k = 0;
  for (uint32_t s = 0; s < n; s++)
    for (uint64_t i = 0; i < out[s].len && k < len; i++, k++) CHECK_EQ(((uint8_t *)out[s].ptr)[i], pat(seed, k));
  CHECK_EQ(k, len);
}

/* len bytes of a pattern from `from` to `to` (one segment each): every
 * byte arrives; returns how many receives went through a mapping (0 or 1). */
static uint64_t copy_one(uint8_t *from, uint8_t *to, uint64_t len, uint64_t seed) {
  fill(from, len, seed);
  fmx_seg_t in = {from, len}, out = {to, len};
  uint64_t recv0 = counter(b, CNT_XMEM_RECV);
  fmx_status_t st = xfer(&in, 1, &out, 1);
  CHECK_EQ(st.code, FMX_SUCCESS);
  CHECK_EQ(st.xfer_length, len);
  check_segs(&out, 1, len, seed);
  return counter(b, CNT_XMEM_RECV) - recv0;
}

/* Region to region, several sizes: mapped (the receiver counts it), and
 * the sender stores stripes into the receiver's region too. */
static void region_to_region(void) {
  static const uint64_t sizes[] = {1 << 20, (4 << 20) + 13, 16 << 20};
  uint8_t *src, *dst;
  CHECK_EQ(fmx_mem_alloc(16 << 20, (void **)&src), FMX_SUCCESS);
  CHECK_EQ(fmx_mem_alloc(16 << 20, (void **)&dst), FMX_SUCCESS);
  uint64_t recv0 = counter(b, CNT_XMEM_RECV), pushed0 = counter(a, CNT_XMEM_SEND_BYTES);
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    fill(src, sizes[k], k);
    memset(dst, 0, 16 << 20);
    fmx_seg_t in = {src, sizes[k]}, out = {dst, sizes[k]};
    fmx_status_t st = xfer(&in, 1, &out, 1);
    CHECK_EQ(st.code, FMX_SUCCESS);
    CHECK_EQ(st.xfer_length, sizes[k]);
    check_segs(&out, 1, sizes[k], k);
  }
  CHECK_EQ(counter(b, CNT_XMEM_RECV) - recv0, 3);
  CHECK(counter(a, CNT_XMEM_SEND_BYTES) > pushed0); /* the sender stored some stripes itself */
  char eng[32] = "";
  CHECK_EQ(fmx_get_info(b, FMX_INFO_LAST_BULK_ENGINE, NULL, 0, eng, sizeof eng), FMX_SUCCESS);
  CHECK(strncmp(eng, "coop", 4) == 0);

  /* Longer than one eager fragment (FMX_EAGER_FRAG, 16 KiB unless set)
   * goes rendezvous through the mapping, where malloc'd memory would go
   * eager (medium class); up to one fragment stays eager. */
  uint64_t frag = fmx_cfg.eager_frag;
  recv0 = counter(b, CNT_XMEM_RECV);
  uint64_t eager0 = counter(a, CNT_SEND_EAGER);
  for (uint64_t len = frag; len <= frag + 1; len++) {
    fill(src, len, len);
    memset(dst, 0, len + 64);
    fmx_seg_t in = {src, len}, out = {dst, len};
    fmx_status_t st = xfer(&in, 1, &out, 1);
    CHECK_EQ(st.code, FMX_SUCCESS);
    check_segs(&out, 1, len, len);
    for (uint64_t i = len; i < len + 64; i++) CHECK_EQ(dst[i], 0);
  }
  CHECK_EQ(counter(a, CNT_SEND_EAGER) - eager0, 1);
  CHECK_EQ(counter(b, CNT_XMEM_RECV) - recv0, 1);

  /* Segment lists inside one region on both sides, odd lengths. */
  fmx_seg_t in3[3] = {{src + 5, 300001}, {src + (2 << 20), 1 << 20}, {src + (8 << 20) + 7, 777777}};
  fmx_seg_t out2[2] = {{dst + 1, 1000003}, {dst + (4 << 20), 2 << 20}};
  uint64_t total = 300001 + (1 << 20) + 777777;
  for (int s = 0; s < 3; s++)
    for (uint64_t i = 0, k = (s ? in3[0].len : 0) + (s == 2 ? in3[1].len : 0); i < in3[s].len; i++, k++)
      ((uint8_t *)in3[s].ptr)[i] = pat(50, k);
  recv0 = counter(b, CNT_XMEM_RECV);
  fmx_status_t st = xfer(in3, 3, out2, 2);
  CHECK_EQ(st.code, FMX_SUCCESS);
  CHECK_EQ(st.xfer_length, total);
  check_segs(out2, 2, total, 50);
  CHECK_EQ(counter(b, CNT_XMEM_RECV) - recv0, 1);

  /* Truncation: the receive takes what fits, nothing past it. */
  fill(src, 3 << 20, 60);
  memset(dst, 0x5a, 4 << 20);
  fmx_seg_t in = {src, 3 << 20}, out = {dst, 2 << 20};
  st = xfer(&in, 1, &out, 1);
  CHECK_EQ(st.code, FMX_MESSAGE_TRUNCATED);
  CHECK_EQ(st.xfer_length, 2 << 20);
  check_segs(&out, 1, 2 << 20, 60);
  for (uint64_t i = 2 << 20; i < 4 << 20; i++) CHECK_EQ(dst[i], 0x5a);

  /* Into malloc'd memory: mapped source, the receiver copies alone. */
  uint8_t *heap = malloc(4 << 20);
  CHECK(heap != NULL);
  pushed0 = counter(a, CNT_XMEM_SEND_BYTES);
  CHECK_EQ(copy_one(src, heap, 4 << 20, 70), 1);
  CHECK_EQ(counter(a, CNT_XMEM_SEND_BYTES), pushed0);

  /* One message from two regions: not announced (cma, coop or ring), every
   * byte still arrives. */
  uint8_t *other;
  CHECK_EQ(fmx_mem_alloc(1 << 20, (void **)&other), FMX_SUCCESS);
  fill(src, 1 << 20, 80);
  for (uint64_t i = 0; i < (1 << 20); i++) other[i] = pat(80, (1 << 20) + i);
  fmx_seg_t two[2] = {{src, 1 << 20}, {other, 1 << 20}};
  out = (fmx_seg_t){heap, 2 << 20};
  recv0 = counter(b, CNT_XMEM_RECV);
  st = xfer(two, 2, &out, 1);
  CHECK_EQ(st.code, FMX_SUCCESS);
  check_segs(&out, 1, 2 << 20, 80);
  CHECK_EQ(counter(b, CNT_XMEM_RECV), recv0);
  free(heap);

  /* Freed and allocated again (often the same fd number, a new inode): the
   * receiver maps the new region, never reuses the old mapping. */
  CHECK_EQ(fmx_mem_free(other), FMX_SUCCESS);
  CHECK_EQ(fmx_mem_alloc(1 << 20, (void **)&other), FMX_SUCCESS);
  CHECK_EQ(copy_one(other, dst, 1 << 20, 90), 1);
  CHECK_EQ(fmx_mem_free(other), FMX_SUCCESS);

  /* Every engine forced: correct bytes; cma and coop read through the
   * mapping, ring and vmsplice do not. FMX_XMEM=0: never mapped. */
  static const char *const engines[] = {"cma", "coop", "ring", "vmsplice", "offload"};
  for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
    CHECK_EQ(config_set("FMX_BULK", engines[e], "environment"), 0);
    int through_map = !strcmp(engines[e], "cma") || !strcmp(engines[e], "coop") || !strcmp(engines[e], "offload");
    CHECK_EQ(copy_one(src, dst, 5 << 20, 100 + e), (uint64_t)through_map);
  }
  CHECK_EQ(config_set("FMX_BULK", "auto", "environment"), 0);
  CHECK_EQ(config_set("FMX_XMEM", "0", "environment"), 0);
  CHECK_EQ(copy_one(src, dst, 2 << 20, 120), 0);
  CHECK_EQ(config_set("FMX_XMEM", "1", "environment"), 0);

  CHECK_EQ(fmx_mem_free(src), FMX_SUCCESS);
  CHECK_EQ(fmx_mem_free(dst), FMX_SUCCESS);
}

int main(void) {
  api_errors(); /* before fmx_init too */
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 71, NULL, 0, &a), FMX_SUCCESS);
  CHECK_EQ(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, 72, NULL, 0, &b), FMX_SUCCESS);
  uint32_t eb;
  fmx_get_info(b, FMX_INFO_ENDPOINT_ID, NULL, 0, &eb, sizeof eb);
  CHECK_EQ(fmx_connect(a, FMX_ANY_NIC, eb, 72, 5000, &a_to_b), FMX_SUCCESS);
  region_to_region();
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_xmem");
  return 0;
}
