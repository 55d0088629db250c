/* SPDX-License-Identifier: MIT */
/*
 * copy.h - the copy routines every user-space copy of message bytes goes
 * through (DESIGN.md section 6, "Copy routines").
 *
 * Routines, in table order:
 *   memcpy     the C library's memcpy; always usable
 *   regular    memcpy, except where its rep movsb meets 4K aliasing (the
 *              destination less than a line past the source modulo 4 KiB,
 *              2 KiB and more): there the avx2 loop (copy.c); always usable.
 *              The regular-store choice of copy_select, and copy_regular
 *   movsb      `rep movsb`; x86-64 with ERMS (enhanced rep movsb)
 *   avx2       AVX2 loads and regular 32-byte stores; x86-64 AVX2
 *   avx2_nt    AVX2 loads, 32-byte non-temporal (streaming) stores; x86-64 AVX2
 *   avx512_nt  AVX-512 loads, 64-byte non-temporal stores; x86-64 AVX-512F
 *   avx2_nt_clean  avx2_nt that also flushes (CLFLUSHOPT) each whole source
 *              line once read: no cache keeps either side. Never chosen by
 *              copy_select; x86-64 AVX2 + CLFLUSHOPT
 * Usability is decided from CPUID at run time (the CPU and the OS must both
 * support the instructions); the file is compiled without -mavx flags, so
 * one build runs everywhere. Other architectures have memcpy and regular
 * (which is memcpy there) only.
 *
 * Why two kinds of store. A regular store first reads the destination line
 * into the cache (read-for-ownership) and later writes it back: three
 * memory passes (src read, dst read, dst write) where two suffice, and the
 * destination evicts whatever was cached. A non-temporal store writes whole
 * lines through write-combining buffers straight to memory: no RFO, no
 * pollution, but the data is not in cache afterwards. So NT wins exactly when
 * the data would not have stayed in cache anyway: when the copy does not fit
 * in the cache the reader of the destination will use. See copy_select.
 *
 * Every routine has memcpy's contract: dst and src do not overlap, n may be
 * 0, no alignment is required, and no byte outside [src, src+n) is read nor
 * outside [dst, dst+n) written (the NT routines copy the unaligned head and
 * tail with memcpy). The NT routines end with an sfence, so their stores are
 * ordered before any later store (a release flag written after the copy is
 * seen after the data by another core).
 *
 * Thread safety: every function may be called from any thread at any time.
 */
#ifndef FMX_PLATFORM_COPY_H
#define FMX_PLATFORM_COPY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef void (*copy_fn)(void *dst, const void *src, size_t n);

struct fmx_copy_routine {
  const char *name;    /* "memcpy", "regular", "movsb", "avx2", "avx2_nt", "avx512_nt", "avx2_nt_clean" */
  copy_fn fn;          /* memcpy's contract, see above */
  bool nontemporal;    /* stores bypass the cache */
  bool (*usable)(void); /* this CPU and OS can run fn; cheap after the first call */
};

/* The whole table, usable or not (for fmx_info and the benchmarks); *count
 * receives its length. Entries are valid for the life of the process. */
const struct fmx_copy_routine *copy_routines(size_t *count);

/* The routine called `name`, usable or not; NULL if there is none. */
const struct fmx_copy_routine *copy_routine_find(const char *name);

/*
 * The routine for a copy of n bytes, given cache_bytes, the cache the
 * destination would live in until it is read. The caller decides (this
 * module does not read the topology); the default to pass is the copying
 * core's share of the last-level cache, topo l3.size / l3.nshare (l2 where
 * there is no L3): on the 2-vCPU Ice Lake of issue 4 (48 MiB L3, 2 sharing)
 * that is 24 MiB, so NT from 12 MiB, where regular stores measurably fall to
 * DRAM speed (16 MiB: 5 GB/s regular, 9-11 GB/s NT) while up to 8 MiB a
 * regular copy followed by a read of the destination beats NT. 0 means
 * unknown. n is the whole destination this copy is part of (the whole
 * message when a message is copied in chunks): a 64 MiB message copied in
 * 128 KiB chunks evicts the cache just the same.
 *
 *   n <= cache_bytes / 2  regular stores: `regular` (glibc's memcpy
 *                         already picks vector moves or rep movsb by size;
 *                         movsb alone was never faster, copy.c; but its
 *                         rep movsb is stepped around where 4K aliasing
 *                         makes it 10-20x slower);
 *   n >  cache_bytes / 2  the preferred usable non-temporal routine
 *                         (avx2_nt, else avx512_nt, else memcpy).
 * Half, because a regular copy keeps both the source and the destination in
 * that cache: past half, the copy evicts its own first lines before the
 * reader comes, so caching them was pure cost. cache_bytes == 0 (unknown
 * cache) never picks NT. Never returns NULL.
 */
const struct fmx_copy_routine *copy_select(size_t n, size_t cache_bytes);

/*
 * The override for the FMX_COPY tunable, resolved once (at endpoint open),
 * not per copy. name NULL, "" or "auto": *out = NULL (no override: call
 * copy_select per copy), returns 0. The name of a usable routine: *out = it,
 * returns 0. Returns -ENOENT for an unknown name and -ENOTSUP for a routine
 * this CPU cannot run; *out is then NULL, so a caller that only warns can go
 * on with copy_select.
 */
int copy_select_forced(const char *name, const struct fmx_copy_routine **out);

/*
 * Hand the cache lines of [p, p + len) over to the cache all cores share
 * (x86 CLDEMOTE: out of this core's L1 and L2, into the L3), so that
 * another core that reads them next finds them there, clean, instead of
 * snooping them out of ours. A hint: nothing changes in memory. For lines
 * written for one reader that waits for them (shm/shm.c); a writer that
 * goes on writing loses by it (a stream handing over the first message of
 * each window of 16 ran 5-8% slower: the writer seems to wait for the
 * stores of those lines). Usable where copy_hand_over_usable() says so;
 * elsewhere it does nothing.
 */
bool copy_hand_over_usable(void);
void copy_hand_over(const void *p, size_t len);

/*
 * Ask for the cache lines of [p, p + len) for writing, now (x86
 * PREFETCHW): the read-for-ownership of lines another core read last runs
 * in the background, not in the stores that come later. A hint: nothing
 * changes in memory, and nothing faults. For lines this core will write
 * soon and nobody reads meanwhile (shm/eager_ring.c). Usable where
 * copy_own_usable() says so; elsewhere it does nothing.
 */
bool copy_own_usable(void);
void copy_own(const void *p, size_t len);
/* Ask for the cache lines of [p, p + len) for reading, now (a hint, every
 * CPU; nothing faults), so that they travel together rather than as a
 * copy reaches each. */
void copy_fetch(const void *p, size_t len);

/* Convenience: copy_select(n, cache_bytes)->fn(dst, src, n). */
void copy_bytes(void *dst, const void *src, size_t n, size_t cache_bytes);

/* The routine `regular` called directly: what every copy of message bytes
 * that is not a bulk engine's (eager and medium payloads in and out of
 * cells, unexpected buffers, net packets) uses instead of memcpy. Inline,
 * so a short copy costs a test more than memcpy. The window and why:
 * copy.c, "4K aliasing". */
#define COPY_ALIAS_BITS 4096 /* the low address bits a core compares: 12 */
#define COPY_ALIAS_WINDOW 64 /* a cache line; the slow window measured is 1..31 */
/* glibc moves shorter copies with vector registers, not rep movsb: they do
 * not meet it (2 KiB at distance 16: 64.9 GB/s, as at distance 0). */
#define COPY_ALIAS_MIN 2048
void copy_aliased(void *dst, const void *src, size_t n);
/* The window in force: COPY_ALIAS_WINDOW where this CPU's rep movsb stalls
 * on 4K aliasing, 0 where it does not (copy_alias_set; FMX_COPY_ALIAS).
 * COPY_ALIAS_WINDOW until set. */
extern unsigned copy_alias_window;
/* dst lies less than a line past src modulo 4 KiB on a CPU where a rep
 * movsb (glibc's or the kernel's, which CMA and vmsplice copy with) from
 * src to dst meets 4K aliasing. */
static inline int copy_aliases(uint64_t dst, uint64_t src) {
  uint64_t dist = (dst - src) & (COPY_ALIAS_BITS - 1);
  return dist && dist < __atomic_load_n(&copy_alias_window, __ATOMIC_RELAXED);
}
/* Time rep movsb against the avx2 loop on copies whose destination lies 16
 * bytes past the source modulo 4 KiB (a malloc'd buffer filled from a
 * page-aligned one): 1 when rep movsb takes more than twice the loop's
 * time there, the stall copy_regular steps around; 0 otherwise, or where
 * either cannot run. About 0.3 ms at most (copy.c). */
int copy_alias_measure(void);
/* Step around 4K aliasing (on = 1) or not (0), for every later copy. */
void copy_alias_set(int on);
static inline void copy_regular(void *dst, const void *src, size_t n) {
  if (n >= COPY_ALIAS_MIN && copy_aliases((uintptr_t)dst, (uintptr_t)src))
    copy_aliased(dst, src, n);
  else
    memcpy(dst, src, n);
}

/* Copy len bytes between the segment list segs (from byte off of it) and
 * buf: into the segments (to_segs = 1) or out of them. fn is the copy
 * routine, NULL for copy_regular. Stops where the segments end. */
struct fmx_seg;
void copy_segs(const struct fmx_seg *segs, uint32_t nseg, uint64_t off, void *buf, uint64_t len, int to_segs,
               copy_fn fn);

#endif /* FMX_PLATFORM_COPY_H */
