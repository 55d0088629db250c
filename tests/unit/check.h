/* SPDX-License-Identifier: MIT */
/* Minimal assertions for the unit tests: a failure prints where and exits 1. */
#ifndef FMX_TEST_CHECK_H
#define FMX_TEST_CHECK_H
#include <stdio.h>
#include <stdlib.h>

static int check_count;
#define CHECK(cond)                                                        \
  do {                                                                     \
    __atomic_add_fetch(&check_count, 1, __ATOMIC_RELAXED);                                                        \
    if (!(cond)) {                                                         \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                             \
    }                                                                      \
  } while (0)
#define CHECK_EQ(a, b)                                                     \
  do {                                                                     \
    long long a_ = (long long)(a), b_ = (long long)(b);                    \
    __atomic_add_fetch(&check_count, 1, __ATOMIC_RELAXED);                                                        \
    if (a_ != b_) {                                                        \
      fprintf(stderr, "%s:%d: CHECK_EQ failed: %s = %lld, %s = %lld\n", __FILE__, __LINE__, #a, a_, #b, b_); \
      exit(1);                                                             \
    }                                                                      \
  } while (0)
#define CHECK_DONE(name) printf("%s: %d checks passed\n", name, check_count)
#endif
