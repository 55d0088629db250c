/* SPDX-License-Identifier: MIT */
/* Copy routines and their selection (see copy.h). */
#include "platform/copy.h"

#include "fmx.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "platform/sys.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>
#define COPY_X86 1
#else
#define COPY_X86 0
#endif

static void copy_libc(void *dst, const void *src, size_t n) { memcpy(dst, src, n); }

static bool copy_always(void) { return true; }

#if COPY_X86

/* CPU features, read once. Racing first callers compute the same value, so
 * a relaxed atomic store is enough (and keeps TSan quiet). */
enum {
  COPY_CPU_KNOWN = 1 << 0,
  COPY_CPU_ERMS = 1 << 1,
  COPY_CPU_AVX2 = 1 << 2,
  COPY_CPU_AVX512F = 1 << 3,
  COPY_CPU_CLFLUSHOPT = 1 << 4,
  COPY_CPU_CLDEMOTE = 1 << 5,
  COPY_CPU_PRFCHW = 1 << 6,
};
static unsigned copy_cpu_flags;

static unsigned copy_cpu(void) {
  unsigned f = __atomic_load_n(&copy_cpu_flags, __ATOMIC_RELAXED);
  if (f) return f;
  f = COPY_CPU_KNOWN;
  unsigned a, b, c, d;
  /* ERMS has no __builtin_cpu_supports name in gcc 12: CPUID leaf 7, EBX
   * bit 9. It needs no OS support, unlike the vector registers, whose XSAVE
   * state __builtin_cpu_supports checks for us. */
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    if (b & (1u << 9)) f |= COPY_CPU_ERMS;
    /* CLFLUSHOPT: leaf 7, EBX bit 23 (no OS state either). */
    if (b & (1u << 23)) f |= COPY_CPU_CLFLUSHOPT;
    /* CLDEMOTE: leaf 7, ECX bit 25 (a hint; no OS state). */
    if (c & (1u << 25)) f |= COPY_CPU_CLDEMOTE;
  }
  /* PREFETCHW: leaf 0x80000001, ECX bit 8 (a hint; no OS state). */
  if (__get_cpuid(0x80000001, &a, &b, &c, &d) && (c & (1u << 8))) f |= COPY_CPU_PRFCHW;
  __builtin_cpu_init(); /* in case we run before libgcc's constructor */
  if (__builtin_cpu_supports("avx2")) f |= COPY_CPU_AVX2;
  if (__builtin_cpu_supports("avx512f")) f |= COPY_CPU_AVX512F;
  __atomic_store_n(&copy_cpu_flags, f, __ATOMIC_RELAXED);
  return f;
}

static bool copy_movsb_usable(void) { return copy_cpu() & COPY_CPU_ERMS; }
static bool copy_avx2_usable(void) { return copy_cpu() & COPY_CPU_AVX2; }
static bool copy_avx512_usable(void) { return copy_cpu() & COPY_CPU_AVX512F; }
static bool copy_clean_usable(void) {
  unsigned need = COPY_CPU_AVX2 | COPY_CPU_CLFLUSHOPT;
  return (copy_cpu() & need) == need;
}

bool copy_hand_over_usable(void) { return copy_cpu() & COPY_CPU_CLDEMOTE; }

__attribute__((target("cldemote"))) void copy_hand_over(const void *p, size_t len) {
  const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)63), *end = (const char *)p + len;
  for (; c < end; c += 64) _cldemote((void *)(uintptr_t)c);
}

bool copy_own_usable(void) { return copy_cpu() & COPY_CPU_PRFCHW; }

void copy_own(const void *p, size_t len) {
  /* In asm, volatile: gcc takes a function that only prefetches for one
   * without effects, and drops the calls to it. */
  const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)63), *end = (const char *)p + len;
  for (; c < end; c += 64) __asm__ volatile("prefetchw %0" : : "m"(*c));
}

void copy_fetch(const void *p, size_t len) {
  const char *c = (const char *)((uintptr_t)p & ~(uintptr_t)63), *end = (const char *)p + len;
  for (; c < end; c += 64) __asm__ volatile("prefetcht0 %0" : : "m"(*c));
}

static void copy_movsb(void *dst, const void *src, size_t n) {
  /* The ABI guarantees DF = 0 (forward) at function entry. */
  __asm__ volatile("rep movsb" : "+D"(dst), "+S"(src), "+c"(n) : : "memory");
}

/* Below this many bytes the NT loop is not worth its alignment head and the
 * sfence: one unrolled iteration (4 vectors) of the widest routine plus its
 * largest head. Such copies are also far below any cache-derived NT
 * threshold, so this only matters when a routine is forced. */
#define COPY_NT_MIN (4 * 64 + 64)

/*
 * The NT loops align the destination (streaming stores need it, and a store
 * split across lines would defeat write combining) and load the source
 * unaligned: an unaligned load costs little on current cores, and shifting
 * source data by hand would cost more. The head and tail are copied with
 * memcpy, so nothing outside [src, src+n) is read.
 */
/* avx2_nt, and with AVX2_CLEAN also a flush of each source line once it is
 * read (avx2_nt_clean: CLFLUSHOPT of a clean line drops it from every cache,
 * no write-back), so the copy leaves neither side in any cache and what the
 * application had cached stays (docs/tools.md, cachepollution). That costs
 * bandwidth (one more instruction per line) and, on a dirty source, a
 * write-back per line: it is for clean sources nobody reads again soon, and
 * is never chosen automatically. Only whole lines inside [src, src+n) are
 * flushed: flushing drops no data, but a partial line is the caller's
 * neighbours'. AVX2_REGULAR is the same loop with regular stores (avx2: the
 * destination stays in cache; the copy that steps around 4K aliasing). One
 * body for the three (compiled with CLFLUSHOPT, which only avx2_nt_clean
 * executes); the constant argument lets the compiler clone it. */
enum { AVX2_REGULAR, AVX2_NT, AVX2_CLEAN };
__attribute__((target("avx2,clflushopt"))) static inline void avx2_put(unsigned char *d, __m256i v, int mode) {
  if (mode == AVX2_REGULAR)
    _mm256_store_si256((__m256i *)d, v);
  else
    _mm256_stream_si256((__m256i *)d, v);
}

__attribute__((target("avx2,clflushopt"))) static void avx2_body(void *dst, const void *src, size_t n, int mode) {
  unsigned char *d = dst;
  const unsigned char *s = src, *end = s + n;
  if (n < COPY_NT_MIN) {
    memcpy(d, s, n);
    return;
  }
  /* The next whole source line not yet flushed. */
  const unsigned char *f = s + (-(uintptr_t)s & 63);
  size_t head = (size_t)(-(uintptr_t)d & 31);
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 128; d += 128, s += 128, n -= 128) {
    __m256i v0 = _mm256_loadu_si256((const __m256i_u *)(s + 0));
    __m256i v1 = _mm256_loadu_si256((const __m256i_u *)(s + 32));
    __m256i v2 = _mm256_loadu_si256((const __m256i_u *)(s + 64));
    __m256i v3 = _mm256_loadu_si256((const __m256i_u *)(s + 96));
    avx2_put(d + 0, v0, mode);
    avx2_put(d + 32, v1, mode);
    avx2_put(d + 64, v2, mode);
    avx2_put(d + 96, v3, mode);
    if (mode == AVX2_CLEAN)
      for (; f + 64 <= s + 128; f += 64) _mm_clflushopt((void *)f);
  }
  for (; n >= 32; d += 32, s += 32, n -= 32) avx2_put(d, _mm256_loadu_si256((const __m256i_u *)s), mode);
  memcpy(d, s, n);
  if (mode == AVX2_CLEAN)
    for (; f + 64 <= end; f += 64) _mm_clflushopt((void *)f);
  /* NT stores (and flushes) are weakly ordered: fence them before any later
   * store, such as the flag that tells a peer the bytes are there. */
  if (mode != AVX2_REGULAR) _mm_sfence();
}

static void copy_avx2(void *dst, const void *src, size_t n) { avx2_body(dst, src, n, AVX2_REGULAR); }
static void copy_avx2_nt(void *dst, const void *src, size_t n) { avx2_body(dst, src, n, AVX2_NT); }
static void copy_avx2_nt_clean(void *dst, const void *src, size_t n) { avx2_body(dst, src, n, AVX2_CLEAN); }

__attribute__((target("avx512f"))) static void copy_avx512_nt(void *dst, const void *src, size_t n) {
  unsigned char *d = dst;
  const unsigned char *s = src;
  if (n < COPY_NT_MIN) {
    memcpy(d, s, n);
    return;
  }
  size_t head = (size_t)(-(uintptr_t)d & 63);
  memcpy(d, s, head);
  d += head, s += head, n -= head;
  for (; n >= 256; d += 256, s += 256, n -= 256) {
    __m512i v0 = _mm512_loadu_si512(s + 0);
    __m512i v1 = _mm512_loadu_si512(s + 64);
    __m512i v2 = _mm512_loadu_si512(s + 128);
    __m512i v3 = _mm512_loadu_si512(s + 192);
    _mm512_stream_si512((void *)(d + 0), v0);
    _mm512_stream_si512((void *)(d + 64), v1);
    _mm512_stream_si512((void *)(d + 128), v2);
    _mm512_stream_si512((void *)(d + 192), v3);
  }
  for (; n >= 64; d += 64, s += 64, n -= 64) _mm512_stream_si512((void *)d, _mm512_loadu_si512(s));
  _mm_sfence();
  memcpy(d, s, n);
}

#else
bool copy_hand_over_usable(void) { return false; }
bool copy_own_usable(void) { return false; }
void copy_fetch(const void *p, size_t len) {
  const char *c = (const char *)p, *end = c + len;
  for (; c < end; c += 64) __builtin_prefetch(c, 0, 3);
  __asm__ volatile("" : : : "memory"); /* an effect: gcc keeps the calls */
}
void copy_own(const void *p, size_t len) {
  (void)p;
  (void)len;
}
void copy_hand_over(const void *p, size_t len) { (void)p, (void)len; }
#endif /* COPY_X86 */

/*
 * 4K aliasing. A core decides whether a load may depend on an older store
 * by comparing only the low 12 bits of their addresses; `rep movsb` (glibc's
 * memcpy from 2-4 KiB up to its own NT threshold, on ERMS CPUs) streams its
 * stores so close behind its loads that when the destination is less than
 * a vector (32 B) past the source modulo 4 KiB, every load is held for the
 * store that seems to alias it. Measured on this AMD EPYC VM (Zen, FSRM;
 * glibc 2.36): 16 KiB copies at dst - src = 1..31 (mod 4096) run at
 * 1.7-2.7 GB/s, at 0 and 32..4095 at 25-60 GB/s; 4 KiB to 256 KiB alike;
 * the avx2 loop runs at 30-60 GB/s at every distance. It is the ordinary
 * case, not a corner: malloc'd buffers sit 16 bytes into a page, fmx's
 * slots and cells on page or line boundaries, so a copy out of a slot into
 * a malloc'd buffer has dst - src = 16. copy_regular steps around it: in
 * that window (taken as a whole line, 64 B: COPY_ALIAS_WINDOW) and from
 * COPY_ALIAS_MIN bytes up (copy.h) it calls copy_aliased, which copies with
 * the avx2 loop; elsewhere it calls the C library's memcpy. Only on a CPU
 * that stalls there: copy_alias_measure below.
 */
unsigned copy_alias_window = COPY_ALIAS_WINDOW;

void copy_alias_set(int on) { __atomic_store_n(&copy_alias_window, on ? COPY_ALIAS_WINDOW : 0, __ATOMIC_RELAXED); }

/*
 * Not every CPU has the stall. On an Intel Xeon VM (AVX-512, FSRM; glibc
 * 2.36, 2026-11-27) 4 KiB and 16 KiB copies at distance 16 ran 142 and 160
 * GB/s by rep movsb (230 and 248 at distance 0), and CMA moved a 1 MiB
 * ping-pong as fast at offsets 0,16 as at 0,0 (53 against 50-56 us) where
 * ring, which steering picked, took 92 us. So the window is measured, not
 * assumed: both routines timed on this core at distance 16, the best of
 * COPY_ALIAS_ROUNDS each, so a noisy round costs nothing unless it hits
 * every round of one routine. The stall counts when rep movsb takes more
 * than twice the avx2 loop's time: steering a receive to ring trades the
 * kernel's one copy for two (into a slot and out of it), and the loop in
 * the window must clearly win to be worth a routine of our own. On the AMD
 * EPYC rep movsb took 20x the loop's time; here fmx's loop (destination
 * aligned) took 1.04-1.12x rep movsb's, at 4 KiB and 16 KiB. 4 KiB a copy
 * (it stalls from 4 KiB to 256 KiB alike), COPY_ALIAS_BATCH copies a
 * timing, well above the clock's resolution: at the AMD EPYC's 2 GB/s the
 * whole probe is about 0.3 ms.
 */
#define COPY_ALIAS_ROUNDS 5
#define COPY_ALIAS_BATCH 16
#define COPY_ALIAS_PROBE 4096
int copy_alias_measure(void) {
#if COPY_X86
  if (!copy_avx2_usable() || !copy_movsb_usable()) return 0;
  /* Both sides page-aligned first, in separate pages; the destination then
   * 16 bytes in, as malloc puts a large block. */
  size_t bytes = 4 * COPY_ALIAS_PROBE;
  unsigned char *buf = aligned_alloc(COPY_ALIAS_BITS, bytes);
  if (!buf) return 0;
  memset(buf, 1, bytes);
  unsigned char *src = buf, *dst = buf + 2 * COPY_ALIAS_PROBE + 16;
  uint64_t best[2] = {UINT64_MAX, UINT64_MAX};
  for (int round = 0; round <= COPY_ALIAS_ROUNDS; round++)
    for (int k = 0; k < 2; k++) {
      uint64_t t = sys_now_ns();
      for (int i = 0; i < COPY_ALIAS_BATCH; i++) {
        if (k == 0)
          copy_movsb(dst, src, COPY_ALIAS_PROBE);
        else
          copy_avx2(dst, src, COPY_ALIAS_PROBE);
        __asm__ volatile("" : : "r"(dst) : "memory"); /* each copy is made */
      }
      t = sys_now_ns() - t;
      if (round && t < best[k]) best[k] = t; /* round 0 warms up */
    }
  free(buf);
  return best[0] / 2 > best[1];
#else
  return 0;
#endif
}

void copy_aliased(void *dst, const void *src, size_t n) {
#if COPY_X86
  if (copy_avx2_usable()) {
    copy_avx2(dst, src, n);
    return;
  }
#endif
  memcpy(dst, src, n);
}

static void copy_regular_fn(void *dst, const void *src, size_t n) { copy_regular(dst, src, n); }

static const struct fmx_copy_routine copy_table[] = {
    {"memcpy", copy_libc, false, copy_always},
    {"regular", copy_regular_fn, false, copy_always},
#if COPY_X86
    {"movsb", copy_movsb, false, copy_movsb_usable},
    {"avx2", copy_avx2, false, copy_avx2_usable},
    {"avx2_nt", copy_avx2_nt, true, copy_avx2_usable},
    {"avx512_nt", copy_avx512_nt, true, copy_avx512_usable},
    {"avx2_nt_clean", copy_avx2_nt_clean, true, copy_clean_usable},
#endif
};
#define COPY_NROUTINES (sizeof copy_table / sizeof copy_table[0])

const struct fmx_copy_routine *copy_routines(size_t *count) {
  if (count) *count = COPY_NROUTINES;
  return copy_table;
}

const struct fmx_copy_routine *copy_routine_find(const char *name) {
  if (!name) return NULL;
  for (size_t i = 0; i < COPY_NROUTINES; i++)
    if (strcmp(copy_table[i].name, name) == 0) return &copy_table[i];
  return NULL;
}

/* The NT routine to use, in order of preference; NULL if the CPU has none.
 * AVX2 first: memory-bound, 64-byte stores move no more than 32-byte ones
 * (measured equal on Ice Lake, issue 4), and 512-bit instructions can cost a
 * frequency licence on Skylake-SP-class cores and gain nothing on Zen 4's
 * 256-bit datapath. avx512_nt stays available through FMX_COPY. */
static const struct fmx_copy_routine *copy_nt(void) {
  static const char *const pref[] = {"avx2_nt", "avx512_nt"};
  for (size_t i = 0; i < sizeof pref / sizeof pref[0]; i++) {
    const struct fmx_copy_routine *r = copy_routine_find(pref[i]);
    if (r && r->usable()) return r;
  }
  return NULL;
}

const struct fmx_copy_routine *copy_select(size_t n, size_t cache_bytes) {
  /* Past half the cache the source and destination of a regular copy no
   * longer both fit: the destination's first lines are evicted before the
   * reader gets to them, so the RFO and the write-back through the cache buy
   * nothing (copy.h). */
  if (cache_bytes && n > cache_bytes / 2) {
    const struct fmx_copy_routine *r = copy_nt();
    if (r) return r;
  }
  /* Regular stores: the C library's memcpy, not rep movsb. glibc's memcpy
   * is itself a size dispatcher (vector moves below 2 KiB, rep movsb on ERMS
   * CPUs up to its own NT threshold, NT above it), so movsb alone only adds
   * its start-up cost to short copies (2x slower at 256-512 B misaligned,
   * even with FSRM, on Ice Lake) and, where the cache size is unknown, loses
   * glibc's NT path for huge ones (issue 4). movsb stays forceable. The
   * memcpy goes through copy_regular, which steps around rep movsb's 4K
   * aliasing (above). */
  return &copy_table[1];
}

int copy_select_forced(const char *name, const struct fmx_copy_routine **out) {
  *out = NULL;
  if (!name || !*name || strcmp(name, "auto") == 0) return 0;
  const struct fmx_copy_routine *r = copy_routine_find(name);
  if (!r) return -ENOENT;
  if (!r->usable()) return -ENOTSUP;
  *out = r;
  return 0;
}

void copy_bytes(void *dst, const void *src, size_t n, size_t cache_bytes) {
  copy_select(n, cache_bytes)->fn(dst, src, n);
}

void copy_segs(const struct fmx_seg *segs, uint32_t nseg, uint64_t off, void *buf, uint64_t len, int to_segs,
               copy_fn fn) {
  uint8_t *b = buf;
  for (uint32_t i = 0; i < nseg && len; i++) {
    const fmx_seg_t *s = &segs[i];
    if (off >= s->len) {
      off -= s->len;
      continue;
    }
    uint64_t n = s->len - off < len ? s->len - off : len;
    uint8_t *dst = to_segs ? (uint8_t *)s->ptr + off : b, *src = to_segs ? b : (uint8_t *)s->ptr + off;
    if (fn)
      fn(dst, src, n);
    else
      copy_regular(dst, src, n); /* no call through a pointer for the common small copy */
    b += n;
    len -= n;
    off = 0;
  }
}
