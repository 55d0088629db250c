/* SPDX-License-Identifier: MIT */
/*
 * util.h - helpers of the perf kernels that know nothing of fmx or MPI: time, size
 * parsing and printing, the verification pattern. Included by the kernels and
 * both drivers (fmx_perf, fmx_perf_mpi).
 */
#ifndef FMX_PERF_UTIL_H
#define FMX_PERF_UTIL_H

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double now(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline bool parse_u64(const char *s, uint64_t *out, bool suffix)
{
  char *end;
  if (!s || *s < '0' || *s > '9')
    return false;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno)
    return false;
  unsigned shift = 0;
  if (suffix && *end) {
    switch (*end) {
    case 'k': case 'K': shift = 10; break;
    case 'm': case 'M': shift = 20; break;
    case 'g': case 'G': shift = 30; break;
    default: return false;
    }
    end++;
    if (*end == 'i' && end[1] == 'B')
      end += 2;
    else if (*end == 'B')
      end++;
  }
  if (*end || (shift && v > (UINT64_MAX >> shift)))
    return false;
  *out = (uint64_t)v << shift;
  return true;
}

static inline const char *human_size(uint64_t s, char *buf, size_t len)
{
  if (s && s % (1u << 30) == 0)
    snprintf(buf, len, "%" PRIu64 "G", s >> 30);
  else if (s && s % (1u << 20) == 0)
    snprintf(buf, len, "%" PRIu64 "M", s >> 20);
  else if (s && s % 1024 == 0)
    snprintf(buf, len, "%" PRIu64 "K", s >> 10);
  else
    snprintf(buf, len, "%" PRIu64, s);
  return buf;
}

/* Data pattern: word w of a message is seed ^ (w * golden); seed differs with
 * size, iteration and direction, so stale data from an earlier message shows. */
static inline uint64_t pat_seed(uint64_t size, uint64_t iter, int dir)
{
  uint64_t z = size * 0x9e3779b97f4a7c15ull + (iter << 1) + (uint64_t)dir + 1;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

static inline uint64_t pat_word(uint64_t seed, size_t i)
{
  return seed ^ ((uint64_t)(i / 8) * 0x9e3779b97f4a7c15ull);
}

/* Word by word: byte b of word w is (pat_word >> 8b), on any byte order. */
static inline void pat_fill(uint8_t *p, size_t len, uint64_t seed)
{
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = pat_word(seed, i);
    size_t n = len - i < 8 ? len - i : 8;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 8) {
      memcpy(p + i, &v, 8);
      continue;
    }
#endif
    for (size_t b = 0; b < n; b++)
      p[i + b] = (uint8_t)(v >> (8 * b));
  }
}

/* Count wrong bytes; *first, *got and *want describe the first of them. */
static inline size_t pat_errors(const uint8_t *p, size_t len, uint64_t seed, size_t *first,
                         uint8_t *got, uint8_t *want)
{
  size_t bad = 0;
  for (size_t i = 0; i < len; i += 8) {
    uint64_t v = pat_word(seed, i);
    size_t n = len - i < 8 ? len - i : 8;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    if (n == 8 && memcmp(p + i, &v, 8) == 0)
      continue;
#endif
    for (size_t b = 0; b < n; b++)
      if (p[i + b] != (uint8_t)(v >> (8 * b)) && bad++ == 0) {
        *first = i + b;
        *got = p[i + b];
        *want = (uint8_t)(v >> (8 * b));
      }
  }
  return bad;
}

#endif /* FMX_PERF_UTIL_H */
