/* SPDX-License-Identifier: MIT */
/*
 * Many peers on one endpoint, for the scale tests and bench
 * (tests/system/test_crowd.py, bench/crowd.py).
 *
 *   fmx_crowd serve --base B
 *       opens endpoint B, prints {"rss_kib":R} once open, then receives
 *       whatever comes; each line on stdin ("m") prints
 *       {"rss_kib":R,"received":N,"partners":P,"pass_ns":T} (P: connections
 *       accepted or made, counted; T: the mean time of a call to
 *       fmx_progress with nothing to do); a line "s" sends a synchronous
 *       message (fmx_issend, 64 B, match 1) to the first sender of each
 *       partner, waits for all and prints {"called":N,"answered":A,
 *       "failed":F,"error":"first error"}; stops when stdin closes.
 *   fmx_crowd dial --target B --eps E --msgs M --size S [--wait 1]
 *       opens E endpoints, connects each to endpoint B of the board
 *       FMX_SYS_NIC names (fmx_connect_async, or fmx_connect with --wait 1),
 *       sends M messages of S bytes from each at once, waits for them and
 *       prints {"eps":E,"sent":N,"failed":F,"error":"first error","ms":T};
 *       then keeps its endpoints open, progressing, until stdin closes,
 *       each with a receive posted for match 1 (serve's "s").
 *
 * Every wait is bounded (WAIT_MS): a failure, never a hang.
 */
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "fmx.h"
#include "prog.h"

#define KEY 0x5eed
#define WAIT_MS 60000
#define PASSES 2000

static void prog_who(FILE *f) { fputs("fmx_crowd: ", f); }

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Resident set of this process, KiB (/proc/self/status VmRSS). */
static long rss_kib(void) {
  FILE *f = fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && fgets(line, sizeof line, f))
    if (!strncmp(line, "VmRSS:", 6)) v = strtol(line + 6, NULL, 10);
  if (f) fclose(f);
  return v;
}

/* serve's "s": a synchronous send to each source (in order, each once),
 * all waited for. */
static void call_back(fmx_endpoint_t ep, const fmx_endpoint_addr_t *src, int n) {
  static uint8_t msg[64];
  fmx_request_t *r = calloc((size_t)n + 1, sizeof *r);
  if (!r) FAIL("no memory");
  int sent = 0, answered = 0, failed = 0;
  fmx_return_t first = FMX_SUCCESS;
  for (int i = 0; i < n; i++) {
    if (i && !memcmp(&src[i], &src[i - 1], sizeof *src)) continue;
    fmx_seg_t seg = {msg, sizeof msg};
    OK(fmx_issend(ep, &seg, 1, src[i], 1, NULL, &r[sent++]));
  }
  for (int i = 0; i < sent; i++) {
    fmx_status_t st;
    uint32_t done = 0;
    OK(fmx_wait(ep, &r[i], WAIT_MS, &st, &done));
    if (!done) FAIL("a call back not complete after %d ms", WAIT_MS);
    if (st.code == FMX_SUCCESS) answered++;
    else if (failed++ == 0) first = st.code;
  }
  printf("{\"called\":%d,\"answered\":%d,\"failed\":%d,\"error\":\"%s\"}\n", sent, answered, failed,
         fmx_strerror(first));
  fflush(stdout);
  free(r);
}

static int addr_cmp(const void *a, const void *b) { return memcmp(a, b, sizeof(fmx_endpoint_addr_t)); }

static void serve(uint32_t base) {
  fmx_endpoint_t ep;
  OK(fmx_open_endpoint(0, base, KEY, NULL, 0, &ep));
  fmx_endpoint_addr_t *src = NULL; /* every message's source */
  int nsrc = 0, capsrc = 0;
  printf("{\"rss_kib\":%ld}\n", rss_kib());
  fflush(stdout);
  static uint8_t buf[1 << 16];
  uint64_t got = 0;
  for (;;) {
    struct pollfd in = {0, POLLIN, 0};
    if (poll(&in, 1, 0) > 0) {
      char line[16];
      if (!fgets(line, sizeof line, stdin)) break; /* closed */
      if (line[0] == 's') {
        qsort(src, (size_t)nsrc, sizeof *src, addr_cmp);
        call_back(ep, src, nsrc);
        continue;
      }
      /* What a pass of progress costs with this many partners (idle). */
      struct timespec a, b;
      clock_gettime(CLOCK_MONOTONIC, &a);
      for (int i = 0; i < PASSES; i++) OK(fmx_progress(ep));
      clock_gettime(CLOCK_MONOTONIC, &b);
      long pass_ns = ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec)) / PASSES;
      printf("{\"rss_kib\":%ld,\"received\":%" PRIu64 ",\"partners\":%" PRIu64 ",\"pass_ns\":%ld}\n", rss_kib(),
             got, prog_counter(ep, "connections accepted or made"), pass_ns);
      fflush(stdout);
    }
    fmx_status_t st;
    if (!prog_take_one(ep, buf, sizeof buf, &st)) continue;
    got++;
    if (nsrc == capsrc) {
      capsrc = capsrc ? 2 * capsrc : 256;
      if (!(src = realloc(src, (size_t)capsrc * sizeof *src))) FAIL("no memory");
    }
    src[nsrc++] = st.source;
  }
  free(src);
  OK(fmx_close_endpoint(ep));
}

static void dial(uint32_t target, int eps, int msgs, size_t size, int wait) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max; /* a few descriptors per endpoint (its own, not per peer) */
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  uint64_t nic = FMX_ANY_NIC;
  const char *name = getenv("FMX_SYS_NIC");
  if (name) OK(fmx_hostname_to_nic_id(name, &nic));
  fmx_endpoint_t *ep = calloc((size_t)eps, sizeof *ep);
  fmx_request_t *req = calloc((size_t)eps * (size_t)msgs + 1, sizeof *req);
  int *owner = calloc((size_t)eps * (size_t)msgs + 1, sizeof *owner); /* each request's endpoint */
  uint8_t *msg = calloc(1, size ? size : 1);
  if (!ep || !req || !owner || !msg) FAIL("no memory");
  for (int i = 0; i < eps; i++) OK(fmx_open_endpoint(0, FMX_ANY_ENDPOINT, KEY, NULL, 0, &ep[i]));
  uint64_t t0 = now_ms();
  int n = 0, sent = 0, failed = 0;
  fmx_return_t first = FMX_SUCCESS;
  for (int i = 0; i < eps; i++) {
    fmx_endpoint_addr_t a;
    fmx_return_t rc = wait ? fmx_connect(ep[i], nic, target, KEY, WAIT_MS, &a)
                           : fmx_connect_async(ep[i], nic, target, KEY, WAIT_MS, &a);
    if (rc != FMX_SUCCESS) {
      failed += msgs;
      if (first == FMX_SUCCESS) first = rc;
      continue;
    }
    for (int k = 0; k < msgs; k++) {
      fmx_seg_t seg = {msg, (uint32_t)size};
      owner[n] = i;
      OK(fmx_isend(ep[i], &seg, 1, a, (uint64_t)i << 16 | (uint64_t)k, NULL, &req[n++]));
    }
  }
  /* Every endpoint progresses its own: wait on each in turn, a slice at
   * a time, until all are done or WAIT_MS passes. */
  int *done = calloc((size_t)n + 1, sizeof *done), left = n;
  if (!done) FAIL("no memory");
  while (left && now_ms() - t0 < WAIT_MS) {
    for (int k = 0; k < n; k++) {
      if (done[k]) continue;
      fmx_status_t st;
      uint32_t res = 0;
      OK(fmx_test(ep[owner[k]], &req[k], &st, &res));
      if (!res) continue;
      done[k] = 1;
      left--;
      if (st.code == FMX_SUCCESS) sent++;
      else {
        failed++;
        if (first == FMX_SUCCESS) first = st.code;
      }
    }
  }
  if (left) FAIL("%d sends not complete after %d ms", left, WAIT_MS);
  printf("{\"eps\":%d,\"sent\":%d,\"failed\":%d,\"error\":\"%s\",\"ms\":%" PRIu64 "}\n", eps, sent, failed,
         fmx_strerror(first), now_ms() - t0);
  fflush(stdout);
  /* A send completes once its bytes are kept for resending: the
   * endpoints go on progressing (a resend, an ack) until stdin closes,
   * each with a receive posted for serve's call back. */
  static uint8_t back[64];
  fmx_request_t *rr = calloc((size_t)eps, sizeof *rr);
  if (!rr) FAIL("no memory");
  for (int i = 0; i < eps; i++) {
    fmx_seg_t seg = {back, sizeof back};
    OK(fmx_irecv(ep[i], &seg, 1, 1, FMX_MATCH_MASK_NONE, NULL, &rr[i]));
  }
  for (;;) {
    struct pollfd in = {0, POLLIN, 0};
    if (poll(&in, 1, 1) > 0) {
      char line[16];
      if (!fgets(line, sizeof line, stdin)) break;
    }
    for (int i = 0; i < eps; i++) {
      fmx_status_t st;
      uint32_t res = 0;
      if (rr[i]) OK(fmx_test(ep[i], &rr[i], &st, &res)); /* a request tested complete is 0 */
      else OK(fmx_progress(ep[i]));
    }
  }
  free(rr);
  for (int i = 0; i < eps; i++) OK(fmx_close_endpoint(ep[i]));
  free(done);
  free(ep);
  free(req);
  free(owner);
  free(msg);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: fmx_crowd serve|dial [options]\n");
    return 2;
  }
  uint32_t base = 7, target = 7;
  int eps = 1, msgs = 1, wait = 0;
  size_t size = 64;
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *o = argv[i], *v = argv[i + 1];
    if (!strcmp(o, "--base")) base = (uint32_t)atoi(v);
    else if (!strcmp(o, "--target")) target = (uint32_t)atoi(v);
    else if (!strcmp(o, "--eps")) eps = atoi(v);
    else if (!strcmp(o, "--msgs")) msgs = atoi(v);
    else if (!strcmp(o, "--size")) size = strtoull(v, NULL, 0);
    else if (!strcmp(o, "--wait")) wait = atoi(v);
    else FAIL("unknown option %s", o);
  }
  if (eps < 1 || msgs < 0 || size > (1u << 30)) FAIL("bad --eps, --msgs or --size");
  OK(fmx_init());
  if (!strcmp(argv[1], "serve")) serve(base);
  else if (!strcmp(argv[1], "dial")) dial(target, eps, msgs, size, wait);
  else FAIL("unknown mode %s", argv[1]);
  OK(fmx_finalize());
  return 0;
}
