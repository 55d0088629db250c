/* SPDX-License-Identifier: MIT */
/* Declared regions (fmx_region_*): reads and writes of every slice shape
 * (within a segment, across segments, the whole), from malloc'd memory
 * (CMA) and fmx_mem_alloc memory (mapped), synchronous and several in
 * flight; and every refusal leaving both sides untouched: wrong, destroyed
 * and foreign cookies, missing access, out of range. o owns the regions
 * (a thread keeps it progressing, as a busy rank would); a and b access
 * them. A peer that closes fails what waits on it. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "eps.h"
#include "fmx.h"
#include "pattern.h"

#define MAPPED "large receives copied straight from a peer's fmx_mem_alloc memory, mapped here"

static fmx_endpoint_t o, a, b;
static fmx_endpoint_addr_t a_to_o, b_to_o, a_to_a;
static int stop;
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;

static void *owner_progress(void *arg) {
  (void)arg;
  while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
    pthread_mutex_lock(&owner_lock);
    fmx_progress(o);
    pthread_mutex_unlock(&owner_lock);
  }
  return NULL;
}

/* Around the owner's copies into a region: before reading what it wrote
 * (its copy ended in a progress call, the FIN left after it, which this
 * waits out), and before asking it to write where this thread touched
 * (its next progress call comes after). The records cross shared memory
 * mapped at two addresses, where TSan sees no order. */
static void owner_sync(void) {
  pthread_mutex_lock(&owner_lock);
  pthread_mutex_unlock(&owner_lock);
}

/* A region of three uneven segments over one buffer of n bytes (in that
 * order, so offsets in the region are offsets in buf). */
static uint64_t declare3(uint8_t *buf, size_t n, uint32_t access, fmx_seg_t segs[3]) {
  segs[0] = (fmx_seg_t){buf, n / 5};
  segs[1] = (fmx_seg_t){buf + n / 5, n / 2};
  segs[2] = (fmx_seg_t){buf + n / 5 + n / 2, n - n / 5 - n / 2};
  uint64_t c = 0;
  CHECK_EQ(fmx_region_create(o, segs, 3, access, &c), FMX_SUCCESS);
  CHECK(c != 0);
  return c;
}

static void test_read_write(uint8_t *buf, size_t n) {
  fmx_seg_t segs[3];
  fill(buf, n, 11);
  uint64_t c = declare3(buf, n, FMX_REGION_READ | FMX_REGION_WRITE, segs);
  uint8_t *d = malloc(n + 1);
  /* Whole, then slices: inside the first segment, across all three, the tail. */
  const uint64_t offs[][2] = {{0, n}, {1, n / 5 - 2}, {n / 5 - 3, n / 2 + 7}, {n - 5, 5}, {n, 0}};
  for (size_t k = 0; k < sizeof offs / sizeof *offs; k++) {
    uint64_t off = offs[k][0], len = offs[k][1];
    memset(d, 0xee, n + 1);
    fmx_seg_t ds = {d, len};
    fmx_status_t st;
    CHECK_EQ(fmx_region_read(a, a_to_o, c, off, &ds, 1, &st), FMX_SUCCESS);
    CHECK_EQ(st.xfer_length, len);
    CHECK_EQ(st.msg_length, len);
    for (uint64_t i = 0; i < len; i++)
      if (d[i] != buf[off + i]) CHECK_EQ(d[i], buf[off + i]);
    CHECK_EQ(d[len], 0xee);
  }
  /* A write of a slice across segments, from two segments of ours. */
  uint64_t off = n / 5 - 3, len = n / 2 + 7;
  uint8_t *s = malloc(len);
  fill(s, len, 29);
  fmx_seg_t ss[2] = {{s, len / 3}, {s + len / 3, len - len / 3}};
  fmx_status_t st;
  owner_sync();
  CHECK_EQ(fmx_region_write(a, a_to_o, c, off, ss, 2, &st), FMX_SUCCESS);
  CHECK_EQ(st.xfer_length, len);
  owner_sync();
  check_fill(buf + off, len, 29);
  for (uint64_t i = 0; i < off; i++)
    if (buf[i] != (uint8_t)(i * 7 + 11)) CHECK_EQ(buf[i], (uint8_t)(i * 7 + 11));
  for (uint64_t i = off + len; i < n; i++)
    if (buf[i] != (uint8_t)(i * 7 + 11)) CHECK_EQ(buf[i], (uint8_t)(i * 7 + 11));
  CHECK_EQ(fmx_region_destroy(o, c), FMX_SUCCESS);
  free(s);
  free(d);
}

/* Several reads and writes in flight from two peers, completed in any order. */
static void test_async(void) {
  enum { N = 8, LEN = 256 * 1024 };
  uint8_t *buf = malloc(N * LEN);
  fill(buf, N * LEN, 5);
  fmx_seg_t seg = {buf, N * LEN};
  uint64_t c;
  CHECK_EQ(fmx_region_create(o, &seg, 1, FMX_REGION_READ | FMX_REGION_WRITE, &c), FMX_SUCCESS);
  uint8_t *d = malloc(N * LEN), *w = malloc(N * LEN);
  fill(w, N * LEN, 77);
  fmx_request_t q[2 * N];
  owner_sync();
  for (int i = 0; i < N; i++) {
    fmx_seg_t ds = {d + i * LEN, LEN}, ws = {w + i * LEN, LEN};
    /* Reads of the even blocks (a), writes of the odd ones (b). */
    if (i % 2 == 0)
      CHECK_EQ(fmx_region_iread(a, a_to_o, c, (uint64_t)i * LEN, &ds, 1, (void *)(uintptr_t)i, &q[i]), FMX_SUCCESS);
    else
      CHECK_EQ(fmx_region_iwrite(b, b_to_o, c, (uint64_t)i * LEN, &ws, 1, (void *)(uintptr_t)i, &q[i]), FMX_SUCCESS);
  }
  for (int i = 0; i < N; i++) {
    fmx_status_t st = wait_done(i % 2 ? b : a, &q[i]);
    CHECK_EQ(st.code, FMX_SUCCESS);
    CHECK(st.context == (void *)(uintptr_t)i);
    CHECK_EQ(st.match_info, c);
  }
  owner_sync();
  for (int i = 0; i < N; i++) {
    if (i % 2 == 0) {
      for (size_t k = 0; k < LEN; k++)
        if (d[i * LEN + k] != (uint8_t)((i * LEN + k) * 7 + 5)) CHECK_EQ(d[i * LEN + k], 0);
    } else {
      for (size_t k = 0; k < LEN; k++)
        if (buf[i * LEN + k] != (uint8_t)((i * LEN + k) * 7 + 77)) CHECK_EQ(buf[i * LEN + k], 0);
    }
  }
  CHECK_EQ(fmx_region_destroy(o, c), FMX_SUCCESS);
  free(buf);
  free(d);
  free(w);
}

/* One access that must be refused with code: neither side changes. */
static void refused(fmx_endpoint_t who, fmx_endpoint_addr_t to, uint64_t c, uint64_t off, uint64_t len, int write,
                    fmx_return_t code, const uint8_t *owner_buf, size_t n, unsigned seed) {
  uint8_t *x = malloc(len + 1);
  memset(x, 0x5a, len + 1);
  fmx_seg_t xs = {x, len};
  fmx_status_t st;
  fmx_return_t rc = write ? fmx_region_write(who, to, c, off, &xs, 1, &st) : fmx_region_read(who, to, c, off, &xs, 1, &st);
  CHECK_EQ(rc, code);
  CHECK_EQ(st.code, code);
  for (size_t i = 0; i <= len; i++)
    if (x[i] != 0x5a) CHECK_EQ(x[i], 0x5a);
  owner_sync();
  check_fill(owner_buf, n, seed);
  free(x);
}

static void test_refusals(void) {
  enum { N = 100000 };
  uint8_t *buf = malloc(N);
  fill(buf, N, 3);
  fmx_seg_t seg = {buf, N};
  uint64_t ro, wo, gone, other;
  CHECK_EQ(fmx_region_create(o, &seg, 1, FMX_REGION_READ, &ro), FMX_SUCCESS);
  CHECK_EQ(fmx_region_create(o, &seg, 1, FMX_REGION_WRITE, &wo), FMX_SUCCESS);
  CHECK_EQ(fmx_region_create(o, &seg, 1, FMX_REGION_READ | FMX_REGION_WRITE, &gone), FMX_SUCCESS);
  CHECK(ro != wo && wo != gone && ro != gone);
  CHECK_EQ(fmx_region_destroy(o, gone), FMX_SUCCESS);
  CHECK_EQ(fmx_region_destroy(o, gone), FMX_REGION_NOT_FOUND);
  CHECK_EQ(fmx_region_destroy(o, 0), FMX_REGION_NOT_FOUND);
  /* A region of another endpoint (b's): its cookie means nothing to o. */
  CHECK_EQ(fmx_region_create(b, &seg, 1, FMX_REGION_READ | FMX_REGION_WRITE, &other), FMX_SUCCESS);
  CHECK_EQ(fmx_region_destroy(o, other), FMX_REGION_NOT_FOUND); /* only its maker destroys it */
  refused(a, a_to_o, ro, 0, 64, 1, FMX_ACCESS_DENIED, buf, N, 3);
  refused(a, a_to_o, wo, 0, 64, 0, FMX_ACCESS_DENIED, buf, N, 3);
  refused(a, a_to_o, gone, 0, 64, 0, FMX_REGION_NOT_FOUND, buf, N, 3);
  refused(a, a_to_o, gone, 0, 64, 1, FMX_REGION_NOT_FOUND, buf, N, 3);
  refused(a, a_to_o, ro ^ 1, 0, 64, 0, FMX_REGION_NOT_FOUND, buf, N, 3);
  refused(a, a_to_o, other, 0, 64, 0, FMX_REGION_NOT_FOUND, buf, N, 3);
  refused(a, a_to_o, other, 0, 64, 1, FMX_REGION_NOT_FOUND, buf, N, 3);
  refused(a, a_to_o, ro, N - 10, 11, 0, FMX_REGION_OUT_OF_RANGE, buf, N, 3);
  refused(a, a_to_o, wo, N + 1, 0, 1, FMX_REGION_OUT_OF_RANGE, buf, N, 3);
  refused(a, a_to_o, ro, UINT64_MAX - 3, 8, 0, FMX_REGION_OUT_OF_RANGE, buf, N, 3); /* wraps: refused here */
  refused(a, a_to_o, wo, 1ull << 62, 8, 1, FMX_REGION_OUT_OF_RANGE, buf, N, 3);
  /* Bad arguments, refused at the call. */
  uint64_t c;
  fmx_request_t q;
  CHECK_EQ(fmx_region_create(o, &seg, 1, 0, &c), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_region_create(o, &seg, 1, 4, &c), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_region_create(o, &seg, 1, FMX_REGION_READ, NULL), FMX_BAD_REQUEST);
  CHECK_EQ(fmx_region_create(o, &seg, FMX_MAX_SEGMENTS + 1, FMX_REGION_READ, &c), FMX_SEGMENTS_BAD_COUNT);
  fmx_seg_t bad = {NULL, 5};
  CHECK_EQ(fmx_region_create(o, &bad, 1, FMX_REGION_READ, &c), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_region_create(NULL, &seg, 1, FMX_REGION_READ, &c), FMX_BAD_ENDPOINT);
  CHECK_EQ(fmx_region_iread(a, a_to_o, ro, 0, &bad, 1, NULL, &q), FMX_BAD_ADDRESS);
  CHECK_EQ(fmx_region_iread(a, a_to_o, ro, 0, &seg, 1, NULL, NULL), FMX_BAD_REQUEST);
  fmx_endpoint_addr_t junk = {{0x1234, 0x5678}};
  CHECK_EQ(fmx_region_iread(a, junk, ro, 0, &seg, 1, NULL, &q), FMX_BAD_ADDRESS);
  /* A read in flight is not cancellable. */
  uint8_t small[8];
  fmx_seg_t ss = {small, 8};
  CHECK_EQ(fmx_region_iread(a, a_to_o, ro, 0, &ss, 1, NULL, &q), FMX_SUCCESS);
  uint32_t res = 1;
  CHECK_EQ(fmx_cancel(a, &q, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  CHECK_EQ(wait_done(a, &q).code, FMX_SUCCESS);
  check_fill(small, 8, 3);
  CHECK_EQ(fmx_region_destroy(b, other), FMX_SUCCESS);
  CHECK_EQ(fmx_region_destroy(o, ro), FMX_SUCCESS);
  CHECK_EQ(fmx_region_destroy(o, wo), FMX_SUCCESS);
  free(buf);
}

/* An endpoint reads and writes its own region (the self path). */
static void test_self(void) {
  uint8_t buf[4096], d[4096];
  fill(buf, sizeof buf, 9);
  fmx_seg_t seg = {buf, sizeof buf}, ds = {d, 1000};
  uint64_t c;
  CHECK_EQ(fmx_region_create(a, &seg, 1, FMX_REGION_READ | FMX_REGION_WRITE, &c), FMX_SUCCESS);
  CHECK_EQ(fmx_region_read(a, a_to_a, c, 100, &ds, 1, NULL), FMX_SUCCESS);
  for (int i = 0; i < 1000; i++) CHECK_EQ(d[i], buf[100 + i]);
  memset(d, 0x42, 1000);
  CHECK_EQ(fmx_region_write(a, a_to_a, c, 3000, &ds, 1, NULL), FMX_SUCCESS);
  for (int i = 0; i < 1000; i++) CHECK_EQ(buf[3000 + i], 0x42);
  CHECK_EQ(fmx_region_destroy(a, c), FMX_SUCCESS);
}

/* The owner closes: accesses that wait on it fail, none hangs. */
static void test_owner_closes(void) {
  fmx_endpoint_t x = open_ep(FMX_ANY_ENDPOINT, 77);
  fmx_endpoint_addr_t a_to_x = connect_to(a, x, 77);
  uint8_t buf[64];
  fmx_seg_t seg = {buf, sizeof buf};
  uint64_t c;
  CHECK_EQ(fmx_region_create(x, &seg, 1, FMX_REGION_READ, &c), FMX_SUCCESS);
  fmx_request_t q;
  CHECK_EQ(fmx_region_iread(a, a_to_x, c, 0, &seg, 1, NULL, &q), FMX_SUCCESS); /* x never progresses */
  CHECK_EQ(fmx_close_endpoint(x), FMX_SUCCESS);
  fmx_return_t code = wait_done(a, &q).code;
  CHECK(code == FMX_REMOTE_ENDPOINT_CLOSED || code == FMX_REMOTE_ENDPOINT_UNREACHABLE);
  /* Afterwards at once. */
  CHECK_EQ(fmx_region_iread(a, a_to_x, c, 0, &seg, 1, NULL, &q), FMX_SUCCESS);
  code = wait_done(a, &q).code;
  CHECK(code == FMX_REMOTE_ENDPOINT_CLOSED || code == FMX_REMOTE_ENDPOINT_UNREACHABLE);
}

int main(void) {
  CHECK_EQ(fmx_init(), FMX_SUCCESS);
  o = open_ep(FMX_ANY_ENDPOINT, 7);
  a = open_ep(FMX_ANY_ENDPOINT, 8);
  b = open_ep(FMX_ANY_ENDPOINT, 9);
  a_to_o = connect_to(a, o, 7);
  b_to_o = connect_to(b, o, 7);
  CHECK_EQ(fmx_get_endpoint_addr(a, &a_to_a), FMX_SUCCESS);
  pthread_t t;
  CHECK_EQ(pthread_create(&t, NULL, owner_progress, NULL), 0);
  const size_t sizes[] = {4096, 1u << 20, 3u << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
    uint8_t *m = malloc(sizes[k]);
    test_read_write(m, sizes[k]); /* CMA */
    free(m);
    void *x = NULL;
    CHECK_EQ(fmx_mem_alloc(sizes[k], &x), FMX_SUCCESS);
    uint64_t mapped = counter_of(a, MAPPED);
    test_read_write(x, sizes[k]); /* mapped: a reads through its mapping of o's memory */
    if (sizes[k] > 4096) CHECK(counter_of(a, MAPPED) > mapped);
    CHECK_EQ(fmx_mem_free(x), FMX_SUCCESS);
  }
  CHECK(counter_of(o, "region reads answered (this endpoint owns the region)") >= 15);
  CHECK(counter_of(o, "region writes taken (this endpoint owns the region)") >= 3);
  test_async();
  test_refusals();
  CHECK_EQ(counter_of(o, "region accesses refused (cookie, access, range)"), 10); /* the wrapping one never left a */
  test_self();
  __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
  pthread_join(t, NULL);
  test_owner_closes();
  CHECK_EQ(fmx_close_endpoint(a), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(b), FMX_SUCCESS);
  CHECK_EQ(fmx_close_endpoint(o), FMX_SUCCESS);
  CHECK_EQ(fmx_finalize(), FMX_SUCCESS);
  CHECK_DONE("test_region");
  return 0;
}
