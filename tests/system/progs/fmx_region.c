/* SPDX-License-Identifier: MIT */
/*
 * Regions between processes (tests/system/test_region.py).
 *
 *   fmx_region owner --base E --size N [--mem fmx]
 *       Endpoint E declares N bytes (pattern 1) read/write, and a
 *       read-only copy; sends both cookies to whoever says hello; serves
 *       until told "done", then checks that the second half holds the
 *       peer's pattern 2 and the read-only one is untouched. Prints
 *       "cookie HEX" when declared and "owner ok" at the end.
 *   fmx_region peer --base E --size N [--loops L]
 *       Endpoint E+1: hello, gets the cookies, reads the first half
 *       (checks pattern 1), writes pattern 2 into the second half, is
 *       refused a write to the read-only region, then "done". With
 *       --loops, reads the whole region L times first (the owner may be
 *       killed meanwhile: the error is printed, exit 3). Prints "peer ok".
 *   fmx_region guess --base E --cookie HEX
 *       Another user's try: connect to E and read with the cookie.
 *       Prints the outcome's code name.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fmx.h"
#include "prog.h"

#define KEY 0x5eed
#define T_HELLO 1
#define T_COOKIE 2
#define T_DONE 3

static fmx_endpoint_t ep;

static void prog_who(FILE *f) { fputs("fmx_region: ", f); }

static uint8_t pat(uint64_t i, int seed) { return (uint8_t)(i * 13 + (uint64_t)seed * 71); }

static fmx_status_t wait_req(fmx_request_t *r) {
  fmx_status_t st;
  uint32_t done = 0;
  OK(fmx_wait(ep, r, 60000, &st, &done));
  if (!done) {
    fprintf(stderr, "not complete after 60 s\n");
    exit(1);
  }
  return st;
}

static uint8_t *buffer(uint64_t n, int mem) {
  void *p = NULL;
  if (mem) OK(fmx_mem_alloc(n, &p));
  else p = malloc(n);
  if (!p) exit(1);
  return p;
}

static void unbuffer(uint8_t *p, int mem) {
  if (mem) OK(fmx_mem_free(p));
  else free(p);
}

static void owner(uint64_t n, int mem) {
  uint8_t *buf = buffer(n, mem), *ro = buffer(n, mem);
  for (uint64_t i = 0; i < n; i++) buf[i] = ro[i] = pat(i, 1);
  fmx_seg_t seg = {buf, n}, rseg = {ro, n};
  uint64_t c[2];
  OK(fmx_region_create(ep, &seg, 1, FMX_REGION_READ | FMX_REGION_WRITE, &c[0]));
  OK(fmx_region_create(ep, &rseg, 1, FMX_REGION_READ, &c[1]));
  printf("cookie %" PRIx64 "\n", c[0]);
  fflush(stdout);
  char hello;
  fmx_seg_t hs = {&hello, 1};
  fmx_request_t r;
  OK(fmx_irecv(ep, &hs, 1, T_HELLO, ~0ull, NULL, &r));
  fmx_status_t st = wait_req(&r);
  fmx_seg_t cs = {c, sizeof c};
  OK(fmx_isend(ep, &cs, 1, st.source, T_COOKIE, NULL, &r));
  wait_req(&r);
  OK(fmx_irecv(ep, NULL, 0, T_DONE, ~0ull, NULL, &r)); /* serves accesses while it waits */
  wait_req(&r);
  for (uint64_t i = 0; i < n; i++)
    if (buf[i] != pat(i, i < n / 2 ? 1 : 2) || ro[i] != pat(i, 1)) {
      fprintf(stderr, "owner: byte %" PRIu64 " wrong\n", i);
      exit(1);
    }
  OK(fmx_region_destroy(ep, c[0]));
  OK(fmx_region_destroy(ep, c[1]));
  unbuffer(buf, mem);
  unbuffer(ro, mem);
  printf("owner ok\n");
}

/* tries: the owner may not be open yet (retried while it is not there). */
static fmx_endpoint_addr_t connect_owner(uint32_t eid, int tries) {
  fmx_endpoint_addr_t a;
  for (int i = 0; i < tries; i++) {
    fmx_return_t rc = fmx_connect(ep, FMX_ANY_NIC, eid, KEY, 5000, &a);
    if (rc == FMX_SUCCESS) return a;
    if (rc != FMX_REMOTE_ENDPOINT_BAD_ID || i + 1 == tries) {
      printf("%s\n", fmx_strerror(rc));
      exit(0);
    }
    struct timespec ts = {0, 10000000};
    nanosleep(&ts, NULL);
  }
  fprintf(stderr, "endpoint %u never appeared\n", eid);
  exit(1);
}

static void peer(uint32_t owner_eid, uint64_t n, int loops) {
  fmx_endpoint_addr_t o = connect_owner(owner_eid, 3000);
  uint64_t c[2];
  fmx_seg_t cs = {c, sizeof c};
  fmx_request_t r, s;
  OK(fmx_irecv(ep, &cs, 1, T_COOKIE, ~0ull, NULL, &r));
  char hello = 'h';
  fmx_seg_t hs = {&hello, 1};
  OK(fmx_isend(ep, &hs, 1, o, T_HELLO, NULL, &s));
  wait_req(&s);
  wait_req(&r);
  uint8_t *d = malloc(n);
  for (int l = 0; l < loops; l++) {
    fmx_seg_t ds = {d, n};
    fmx_return_t rc = fmx_region_read(ep, o, c[0], 0, &ds, 1, NULL);
    if (rc != FMX_SUCCESS) {
      printf("read: %s\n", fmx_strerror(rc));
      exit(3);
    }
  }
  fmx_seg_t half = {d, n / 2};
  OK(fmx_region_read(ep, o, c[0], 0, &half, 1, NULL));
  for (uint64_t i = 0; i < n / 2; i++)
    if (d[i] != pat(i, 1)) {
      fprintf(stderr, "peer: read byte %" PRIu64 " wrong\n", i);
      exit(1);
    }
  for (uint64_t i = n / 2; i < n; i++) d[i] = pat(i, 2);
  fmx_seg_t rest = {d + n / 2, n - n / 2};
  OK(fmx_region_write(ep, o, c[0], n / 2, &rest, 1, NULL));
  fmx_return_t rc = fmx_region_write(ep, o, c[1], 0, &rest, 1, NULL);
  if (rc != FMX_ACCESS_DENIED) {
    fprintf(stderr, "peer: write to a read-only region: %s\n", fmx_strerror(rc));
    exit(1);
  }
  OK(fmx_isend(ep, NULL, 0, o, T_DONE, NULL, &r));
  wait_req(&r);
  free(d);
  printf("peer ok\n");
}

static void guess(uint32_t owner_eid, uint64_t cookie) {
  fmx_endpoint_addr_t o = connect_owner(owner_eid, 1);
  uint8_t d[64];
  fmx_seg_t ds = {d, sizeof d};
  printf("%s\n", fmx_strerror(fmx_region_read(ep, o, cookie, 0, &ds, 1, NULL)));
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fmx_region owner|peer|guess [--base E] [--size N] [--mem fmx] [--loops L] [--cookie C]\n");
    return 2;
  }
  uint32_t base = 200;
  uint64_t n = 1 << 20, cookie = 0;
  int mem = 0, loops = 0;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--base")) base = (uint32_t)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--size")) n = strtoull(argv[i + 1], NULL, 0);
    else if (!strcmp(argv[i], "--mem")) mem = !strcmp(argv[i + 1], "fmx");
    else if (!strcmp(argv[i], "--loops")) loops = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--cookie")) cookie = strtoull(argv[i + 1], NULL, 16);
    else return 2;
  }
  OK(fmx_init());
  int own = !strcmp(argv[1], "owner");
  OK(fmx_open_endpoint(0, own ? base : FMX_ANY_ENDPOINT, KEY, NULL, 0, &ep));
  if (own) owner(n, mem);
  else if (!strcmp(argv[1], "peer")) peer(base, n, loops);
  else if (!strcmp(argv[1], "guess")) guess(base, cookie);
  else return 2;
  OK(fmx_close_endpoint(ep));
  OK(fmx_finalize());
  return 0;
}
