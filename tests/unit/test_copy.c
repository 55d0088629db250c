/* SPDX-License-Identifier: MIT */
/* The copy routines: every usable one copies exactly [src, src+n) to
 * [dst, dst+n) for every size and misalignment, and selection follows the
 * cache-derived rule. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "platform/copy.h"

#define GUARD 64          /* bytes checked untouched on each side of dst */
#define GUARD_BYTE 0xa5
#define BIG (3u << 20)    /* largest random size: several MiB, past any NT head/tail case */

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void) { /* xorshift64: reproducible, no libc state */
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}

/* Random bytes, 8 per step (the sanitizer builds pay per access). */
static void fill(uint8_t *p, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v = rnd();
    memcpy(p + i, &v, 8);
  }
  for (; i < n; i++) p[i] = (uint8_t)rnd();
}

/* The GUARD bytes on each side of [dst, dst+n) still hold GUARD_BYTE. */
static int guards_intact(const uint8_t *dst, size_t n) {
  for (size_t i = 1; i <= GUARD; i++)
    if (dst[-(ptrdiff_t)i] != GUARD_BYTE) return 0;
  for (size_t i = 0; i < GUARD; i++)
    if (dst[n + i] != GUARD_BYTE) return 0;
  return 1;
}

/* src_mem and dst_mem hold BIG + 2 * GUARD + 64 bytes each; dst gets GUARD
 * bytes of a known pattern on each side, which the copy must leave alone. */
static void check_one(const struct fmx_copy_routine *r, uint8_t *src_mem, uint8_t *dst_mem,
                      size_t n, size_t soff, size_t doff) {
  uint8_t *src = src_mem + soff;
  uint8_t *dst = dst_mem + GUARD + doff;
  fill(src, n);
  memset(dst - GUARD, GUARD_BYTE, n + 2 * GUARD);
  r->fn(dst, src, n);
  CHECK(memcmp(dst, src, n) == 0);
  CHECK(guards_intact(dst, n));
}

/* A source in a block of exactly n bytes: under ASan a read one byte before
 * or after [src, src+n) is a heap overflow report. */
static void check_exact(const struct fmx_copy_routine *r, size_t n, size_t doff, uint8_t *dst_mem) {
  uint8_t *src = malloc(n ? n : 1);
  CHECK(src != NULL);
  fill(src, n);
  uint8_t *dst = dst_mem + GUARD + doff;
  memset(dst - GUARD, GUARD_BYTE, n + 2 * GUARD);
  r->fn(dst, src, n);
  CHECK(memcmp(dst, src, n) == 0);
  CHECK(guards_intact(dst, n));
  free(src);
}

static void test_routines(void) {
  size_t count = 0;
  const struct fmx_copy_routine *t = copy_routines(&count);
  CHECK(count >= 1);
  CHECK(strcmp(t[0].name, "memcpy") == 0);
  CHECK(t[0].usable());
  size_t cap = BIG + 2 * GUARD + 64;
  uint8_t *src_mem = aligned_alloc(64, cap);
  uint8_t *dst_mem = aligned_alloc(64, cap);
  CHECK(src_mem && dst_mem);
  int tested = 0;
  for (size_t k = 0; k < count; k++) {
    const struct fmx_copy_routine *r = &t[k];
    CHECK(r->name && r->fn && r->usable);
    if (!r->usable()) {
      printf("  %s: not usable on this CPU, skipped\n", r->name);
      continue;
    }
    tested++;
    /* Every size 0..300 (covers each head/tail split of the 32- and 64-byte
     * NT loops and the NT minimum), at a spread of misalignments. */
    for (size_t n = 0; n <= 300; n++)
      for (size_t off = 0; off < 64; off += 13) {
        check_one(r, src_mem, dst_mem, n, off, (off * 5 + n) & 63);
        check_one(r, src_mem, dst_mem, n, (off * 3 + n) & 63, off);
      }
    /* Exact-size source blocks around the NT minimum and loop boundaries. */
    for (size_t n = 0; n <= 1200; n += (n < 400 ? 1 : 37)) check_exact(r, n, n & 63, dst_mem);
    /* Random sizes up to BIG with src and dst each misaligned by 0..63. */
    for (int i = 0; i < 60; i++) {
      size_t n = (size_t)(rnd() % (i < 30 ? 70000 : BIG));
      check_one(r, src_mem, dst_mem, n, (size_t)(rnd() & 63), (size_t)(rnd() & 63));
    }
    check_one(r, src_mem, dst_mem, BIG, 63, 1);
    check_exact(r, BIG - 7, 17, dst_mem);
    printf("  %s: ok\n", r->name);
  }
  CHECK(tested >= 1);
  free(src_mem);
  free(dst_mem);
}

static void test_find(void) {
  size_t count = 0;
  const struct fmx_copy_routine *t = copy_routines(&count);
  for (size_t k = 0; k < count; k++) CHECK(copy_routine_find(t[k].name) == &t[k]);
  CHECK(copy_routine_find("memcpy") == &t[0]);
  CHECK(copy_routine_find("no_such_copy") == NULL);
  CHECK(copy_routine_find("") == NULL);
  CHECK(copy_routine_find("auto") == NULL);
  CHECK(copy_routine_find(NULL) == NULL);
#if defined(__x86_64__)
  CHECK(copy_routine_find("movsb") != NULL);
  CHECK(copy_routine_find("avx2_nt") != NULL && copy_routine_find("avx2_nt")->nontemporal);
  CHECK(copy_routine_find("avx512_nt") != NULL && copy_routine_find("avx512_nt")->nontemporal);
  CHECK(copy_routine_find("avx2_nt_clean") != NULL && copy_routine_find("avx2_nt_clean")->nontemporal);
#endif
  CHECK(!copy_routine_find("memcpy")->nontemporal);
}

static void test_select(void) {
  size_t count = 0;
  const struct fmx_copy_routine *t = copy_routines(&count);
  int have_nt = 0;
  for (size_t k = 0; k < count; k++) have_nt |= t[k].nontemporal && t[k].usable();

  size_t caches[] = {32u << 10, 1u << 20, 1280u << 10, 48u << 20, 3u << 20};
  for (size_t c = 0; c < sizeof caches / sizeof caches[0]; c++) {
    size_t cache = caches[c], lim = cache / 2;
    size_t sizes[] = {0, 1, 64, 4096, lim - 1, lim, lim + 1, cache, 4 * cache};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      size_t n = sizes[i];
      const struct fmx_copy_routine *r = copy_select(n, cache);
      CHECK(r != NULL);
      CHECK(r->usable());
      if (n <= lim) CHECK(!r->nontemporal);
      else CHECK_EQ(r->nontemporal, have_nt);
    }
  }
  /* Unknown cache size: never NT. */
  CHECK(!copy_select(1ull << 30, 0)->nontemporal);
  /* Same choice for every size on one side of the threshold. */
  CHECK(copy_select(0, 1u << 20) == copy_select(512u << 10, 1u << 20));
  CHECK(copy_select((512u << 10) + 1, 1u << 20) == copy_select(1u << 30, 1u << 20));

  /* Overrides. */
  const struct fmx_copy_routine *f = &t[0];
  CHECK_EQ(copy_select_forced(NULL, &f), 0);
  CHECK(f == NULL);
  f = &t[0];
  CHECK_EQ(copy_select_forced("", &f), 0);
  CHECK(f == NULL);
  CHECK_EQ(copy_select_forced("auto", &f), 0);
  CHECK(f == NULL);
  CHECK_EQ(copy_select_forced("memcpy", &f), 0);
  CHECK(f == &t[0]);
  CHECK_EQ(copy_select_forced("bogus", &f), -ENOENT);
  CHECK(f == NULL);
  for (size_t k = 0; k < count; k++) {
    int rc = copy_select_forced(t[k].name, &f);
    if (t[k].usable()) {
      CHECK_EQ(rc, 0);
      CHECK(f == &t[k]);
    } else {
      CHECK_EQ(rc, -ENOTSUP);
      CHECK(f == NULL);
    }
  }

  /* copy_bytes, on both sides of the threshold. */
  size_t n = 200000;
  uint8_t *a = malloc(n), *b = malloc(n);
  CHECK(a && b);
  for (size_t i = 0; i < n; i++) a[i] = (uint8_t)(i * 31 + 7);
  copy_bytes(b, a, n, 4 * n);
  CHECK(memcmp(a, b, n) == 0);
  memset(b, 0, n);
  copy_bytes(b + 1, a + 3, n - 3, n / 4);
  CHECK(memcmp(a + 3, b + 1, n - 3) == 0);
  free(a);
  free(b);
}

/* copy_regular on both sides of its 4K-aliasing window (the destination
 * 1..63 bytes past the source modulo 4 KiB, from COPY_ALIAS_MIN bytes up:
 * the avx2 loop there), sizes around that minimum and the loop's 128-byte
 * step; with the window on, and off (memcpy everywhere). */
static void test_regular_window(int on) {
  copy_alias_set(on);
  size_t cap = (80000 + 2 * 4096 + 2 * GUARD + 4095) / 4096 * 4096; /* aligned_alloc: a multiple */
  uint8_t *src_mem = aligned_alloc(4096, cap), *dst_mem = aligned_alloc(4096, cap);
  CHECK(src_mem && dst_mem);
  const struct fmx_copy_routine *r = copy_routine_find("regular");
  CHECK(r && r->usable() && !r->nontemporal);
  size_t sizes[] = {0, 127, 2047, COPY_ALIAS_MIN, COPY_ALIAS_MIN + 1, COPY_ALIAS_MIN + 127, 5000, 70001};
  for (size_t d = 0; d < 4096; d += d < 70 ? 1 : d < 4020 ? 1000 : 1)
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
      /* dst - src = d (mod 4096): dst on a page, src (4096 - d) % 4096 into one. */
      size_t soff = (4096 - d) % 4096;
      CHECK(copy_aliases((uintptr_t)(dst_mem + 4096), (uintptr_t)(src_mem + soff)) == (on && d > 0 && d < 64));
      check_one(r, src_mem, dst_mem + 4096 - GUARD, sizes[i], soff, 0);
    }
  free(src_mem);
  free(dst_mem);
}

/* The probe gives a verdict and keeps no memory (ASan's leak check). Which
 * verdict is this CPU's (and a sanitizer's instrumented loop is slower):
 * test_perf.py checks that the tunable shows it. */
static void test_alias_measure(void) {
  int v = copy_alias_measure();
  CHECK(v == 0 || v == 1);
}

/* Handing lines over to the shared cache is a hint: nothing in memory
 * changes, whatever the alignment and length (0 included), and it runs
 * where the CPU lacks CLDEMOTE too (a no-op there). */
static void test_hand_over(void) {
  static uint8_t buf[4096 + 128], ref[sizeof buf];
  fill(buf, sizeof buf);
  memcpy(ref, buf, sizeof buf);
  const size_t offs[] = {0, 1, 63, 64, 65}, lens[] = {0, 1, 8, 63, 64, 65, 1000, 4096};
  for (size_t i = 0; i < sizeof offs / sizeof *offs; i++)
    for (size_t j = 0; j < sizeof lens / sizeof *lens; j++) copy_hand_over(buf + offs[i], lens[j]);
  CHECK(memcmp(buf, ref, sizeof buf) == 0);
}

int main(void) {
  test_hand_over();
  test_find();
  test_regular_window(1);
  test_regular_window(0);
  copy_alias_set(1);
  test_alias_measure();
  test_select();
  test_routines();
  CHECK_DONE("test_copy");
  return 0;
}
