/* SPDX-License-Identifier: MIT */
/* The asynchronous copy API (fmx_copy_async, run under TSan too): copies
 * below the threshold done at once (a NULL handle), above it by channels
 * (a handle that completes), with every byte checked; many copies in
 * flight over few channels; the vector form with uneven segments on both
 * sides; tests and timed waits; bad input refused with nothing copied; no
 * channels (FMX_OFFLOAD_CHANNELS=0): done at once; init again after
 * finalize. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/config.h"
#include "fmx.h"

#define N 12

static uint8_t pat(uint32_t seed, uint64_t k) { return (uint8_t)(seed * 131 + k * 7 + (k >> 12)); }

static void fill(uint8_t *b, uint64_t len, uint32_t seed) {
  for (uint64_t k = 0; k < len; k++) b[k] = pat(seed, k);
}

static void check_bytes(const uint8_t *b, uint64_t len, uint32_t seed) {
  for (uint64_t k = 0; k < len; k++)
    if (b[k] != pat(seed, k)) {
      fprintf(stderr, "byte %llu of %llu wrong\n", (unsigned long long)k, (unsigned long long)len);
      CHECK(0);
    }
}

static void wait_done(fmx_copy_t *h) {
  uint32_t result = 0;
  CHECK_EQ(fmx_copy_wait(h, 60000, &result), FMX_SUCCESS);
  CHECK_EQ(result, 1);
  CHECK(*h == NULL);
}

int main(void) {
  CHECK_EQ(fmx_copy_async(NULL, NULL, 0, NULL), FMX_NOT_INITIALIZED);
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  uint64_t thr = fmx_cfg.copy_async_threshold;
  CHECK(thr > 0);
  fmx_copy_t h;
  uint32_t result;

  /* Short: at once, NULL handle, complete. */
  uint8_t small_src[100], small_dst[100];
  fill(small_src, sizeof small_src, 1);
  CHECK_EQ(fmx_copy_async(small_dst, small_src, sizeof small_src, &h), FMX_SUCCESS);
  CHECK(h == NULL);
  check_bytes(small_dst, sizeof small_dst, 1);
  CHECK_EQ(fmx_copy_test(&h, &result), FMX_SUCCESS);
  CHECK_EQ(result, 1);

  /* Long ones, many in flight. */
  uint64_t len[N];
  uint8_t *src[N], *dst[N];
  fmx_copy_t hs[N];
  for (int i = 0; i < N; i++) {
    len[i] = thr + (uint64_t)i * 777777 + 13;
    src[i] = malloc(len[i]);
    dst[i] = malloc(len[i]);
    CHECK(src[i] && dst[i]);
    fill(src[i], len[i], 10 + i);
    CHECK_EQ(fmx_copy_async(dst[i], src[i], len[i], &hs[i]), FMX_SUCCESS);
    CHECK(hs[i] != NULL);
  }
  int polled = 0;
  for (int i = 0; i < N; i += 2) { /* half by test until done, half by wait */
    do {
      CHECK_EQ(fmx_copy_test(&hs[i], &result), FMX_SUCCESS);
      polled++;
    } while (!result);
    CHECK(hs[i] == NULL);
  }
  for (int i = 1; i < N; i += 2) wait_done(&hs[i]);
  for (int i = 0; i < N; i++) check_bytes(dst[i], len[i], 10 + i);
  CHECK(polled >= N / 2);

  /* A timed wait that ends first returns result 0, then completes. */
  CHECK_EQ(fmx_copy_async(dst[N - 1], src[N - 1], len[N - 1], &h), FMX_SUCCESS);
  CHECK_EQ(fmx_copy_wait(&h, 0, &result), FMX_SUCCESS); /* 0 ms: look once */
  if (!result) wait_done(&h);
  check_bytes(dst[N - 1], len[N - 1], 10 + N - 1);

  /* Vectors: src in 3 uneven segments (one empty), dst in 5. */
  uint64_t total = 3 * thr + 12345;
  uint8_t *vs = malloc(total), *vd = malloc(total + 64);
  CHECK(vs && vd);
  fill(vs, total, 77);
  memset(vd, 0xee, total + 64);
  fmx_seg_t s3[3] = {{vs, 1000}, {vs + 1000, 0}, {vs + 1000, total - 1000}};
  fmx_seg_t d5[5];
  uint64_t off = 0;
  for (int i = 0; i < 5; i++) {
    uint64_t l = i == 4 ? total - off : total / 7 * (uint64_t)(i + 1) / 2;
    d5[i] = (fmx_seg_t){vd + off, l};
    off += l;
  }
  CHECK_EQ(fmx_copy_asyncv(d5, 5, s3, 3, &h), FMX_SUCCESS);
  wait_done(&h);
  check_bytes(vd, total, 77);
  for (int k = 0; k < 64; k++) CHECK_EQ(vd[total + k], 0xee);

  /* Bad input: refused, nothing copied. */
  memset(vd, 0, 64);
  fmx_seg_t shortd = {vd, 10}, longs = {vs, 11}, nulls = {NULL, 5};
  CHECK_EQ(fmx_copy_asyncv(&shortd, 1, &longs, 1, &h), FMX_BAD_ADDRESS);
  CHECK_EQ(vd[0], 0);
  CHECK_EQ(fmx_copy_asyncv(&shortd, 1, &nulls, 1, &h), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_copy_asyncv(&shortd, FMX_MAX_SEGMENTS + 1, &longs, 1, &h), FMX_SEGMENTS_BAD_COUNT);
  CHECK_EQ(fmx_copy_asyncv(NULL, 2, &longs, 1, &h), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_copy_async(vd, vs, 10, NULL), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_copy_test(NULL, &result), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_copy_wait(&h, 0, NULL), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_copy_async(vd, vs, 0, &h), FMX_SUCCESS); /* nothing to do */
  CHECK(h == NULL);

  /* Finalize, init again without channels: copies done at once. */
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_EQ(config_set("FMX_OFFLOAD_CHANNELS", "0", "test"), 0);
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  fill(src[0], len[0], 99);
  CHECK_EQ(fmx_copy_async(dst[0], src[0], len[0], &h), FMX_SUCCESS);
  CHECK(h == NULL);
  check_bytes(dst[0], len[0], 99);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);

  for (int i = 0; i < N; i++) {
    free(src[i]);
    free(dst[i]);
  }
  free(vs);
  free(vd);
  CHECK_DONE("test_copy_async");
  return 0;
}
