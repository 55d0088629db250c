/* SPDX-License-Identifier: MIT */
/* A byte pattern of the unit tests (with check.h): fill a buffer, check
 * it arrived whole. */
#ifndef FMX_TESTS_PATTERN_H
#define FMX_TESTS_PATTERN_H

#include <stddef.h>
#include <stdint.h>

#include "check.h"

static inline void fill(uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(i * 7 + seed);
}

static inline void check_fill(const uint8_t *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (uint8_t)(i * 7 + seed)) {
      CHECK_EQ(p[i], (uint8_t)(i * 7 + seed));
      return;
    }
}

#endif
