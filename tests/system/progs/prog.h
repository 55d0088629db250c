/* SPDX-License-Identifier: MIT */
/*
 * What the system tests' programs share (tests/system/progs): a failure
 * ends the program with one line on stderr, after what the program says
 * of itself (prog_who, its own to define: its name, its rank); and an
 * endpoint's counter by its label.
 */
#ifndef FMX_TEST_PROG_H
#define FMX_TEST_PROG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fmx.h"

static void prog_who(FILE *f);

#define FAIL(...)                                                                                                      \
  do {                                                                                                                 \
    prog_who(stderr);                                                                                                  \
    fprintf(stderr, __VA_ARGS__);                                                                                      \
    fputc('\n', stderr);                                                                                               \
    exit(1);                                                                                                           \
  } while (0)
#define OK(call)                                                                                                       \
  do {                                                                                                                 \
    fmx_return_t rc_ = (call);                                                                                         \
    if (rc_ != FMX_SUCCESS) FAIL("%s: %s", #call, fmx_strerror(rc_));                                                  \
  } while (0)

/* The counter of ep labelled `label` (fmx_counters' labels), UINT64_MAX
 * when there is none. */
static inline uint64_t prog_counter(fmx_endpoint_t ep, const char *label) {
  uint32_t n = 0;
  OK(fmx_get_info(ep, FMX_INFO_COUNTER_COUNT, NULL, 0, &n, sizeof n));
  uint64_t *v = calloc(n + 1, sizeof *v), r = UINT64_MAX;
  if (!v) FAIL("no memory");
  OK(fmx_get_info(ep, FMX_INFO_COUNTER_VALUES, NULL, 0, v, (uint32_t)(n * sizeof *v)));
  for (uint32_t i = 0; i < n; i++) {
    char l[128] = "";
    OK(fmx_get_info(ep, FMX_INFO_COUNTER_LABEL, &i, sizeof i, l, sizeof l));
    if (!strcmp(l, label)) r = v[i];
  }
  free(v);
  return r;
}

/* The next message come to ep, whatever its match, received into buf
 * (len bytes at most): 1 and its status in *st, or 0 when none comes
 * within 5 ms. One that was probed and does not end within 60 s fails
 * the program. */
static inline int prog_take_one(fmx_endpoint_t ep, void *buf, uint32_t len, fmx_status_t *st) {
  uint32_t res = 0, done = 0;
  OK(fmx_probe(ep, 5, 0, 0, st, &res));
  if (!res) return 0;
  fmx_seg_t seg = {buf, len};
  fmx_request_t r;
  OK(fmx_irecv(ep, &seg, 1, st->match_info, FMX_MATCH_MASK_NONE, NULL, &r));
  OK(fmx_wait(ep, &r, 60000, st, &done));
  if (!done) FAIL("receive: not complete after 60000 ms");
  return 1;
}

#endif
