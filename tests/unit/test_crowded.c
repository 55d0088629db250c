/* SPDX-License-Identifier: MIT */
/* When fmx gives the core away (docs/progress.md): fmx_idle yields only
 * when ranks outnumber cores (FMX_CROWDED auto: the partners on this host,
 * the endpoint itself included, outnumber the hardware threads; on; off),
 * and a crowded wait yields. (An uncrowded wait yields too, past 5 us,
 * until a yield comes back a time slice later: that is timing, measured by
 * bench/apps.py, not asserted here.) Each case runs in a child of its own,
 * FMX_CROWDED set before fmx_init; the counter of yields tells what
 * happened. Crowded, a message longer than a fragment goes eager when the
 * ring takes it now, rendezvous when its receiver has yet to read what we
 * sent before (proto/send.c, crowded_rndv); the send counters tell. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "eps.h"

#define YIELDS "polls that gave the core away (sched_yield)"
#define MAX_EPS 10

static int npus(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* Open n endpoints, the first connected to every other one. */
static void open_connected(fmx_endpoint_t *e, int n) {
  for (int i = 0; i < n; i++) e[i] = open_ep(FMX_ANY_ENDPOINT, 7);
  for (int i = 1; i < n; i++) connect_to(e[0], e[i], 7);
}

/* A receive nothing matches, waited for 20 ms: yields counted. */
static uint64_t yields_in_wait(fmx_endpoint_t e) {
  uint64_t before = counter_of(e, YIELDS);
  char buf[8];
  fmx_seg_t seg = {buf, sizeof buf};
  fmx_request_t r;
  fmx_status_t st;
  uint32_t res = 1;
  CHECK_EQ(fmx_irecv(e, &seg, 1, 0x77, ~0ull, NULL, &r), FMX_SUCCESS);
  CHECK_EQ(fmx_wait(e, &r, 20, &st, &res), FMX_SUCCESS);
  CHECK_EQ(res, 0);
  uint32_t done = 0;
  CHECK_EQ(fmx_cancel(e, &r, &done), FMX_SUCCESS);
  return counter_of(e, YIELDS) - before;
}

static uint64_t idle_yields(fmx_endpoint_t e, int n) {
  uint64_t before = counter_of(e, YIELDS);
  for (int i = 0; i < n; i++) CHECK_EQ(fmx_idle(e), FMX_SUCCESS);
  return counter_of(e, YIELDS) - before;
}

static void case_auto(void) {
  fmx_endpoint_t e[MAX_EPS];
  open_connected(e, 2); /* two partners here: not more than the cores */
  if (npus() >= 2) CHECK_EQ(idle_yields(e[0], 100), 0);
  int n = npus() + 2; /* ourselves and npus + 1 others: crowded */
  if (n <= MAX_EPS) {
    for (int i = 2; i < n; i++) {
      e[i] = open_ep(FMX_ANY_ENDPOINT, 7);
      connect_to(e[0], e[i], 7);
    }
    CHECK_EQ(idle_yields(e[0], 100), 100);
    CHECK(yields_in_wait(e[0]) > 0);
  }
}

static void case_on(void) {
  fmx_endpoint_t e[1];
  open_connected(e, 1);
  CHECK_EQ(idle_yields(e[0], 50), 50);
  CHECK(yields_in_wait(e[0]) > 0);
}

#define RNDV "rendezvous sends"
#define MEDIUM "eager sends in fragments (medium class, longer than FMX_EAGER_FRAG)"

/* Two messages longer than a fragment to a receiver that reads neither
 * yet: the first finds the ring empty and goes eager; the second finds the
 * first unread and goes rendezvous. Both arrive whole. */
static void case_on_classes(void) {
  fmx_endpoint_t e[2];
  open_connected(e, 2);
  fmx_endpoint_addr_t to = connect_to(e[0], e[1], 7);
  enum { LEN = 24 * 1024 };
  static char out[2][LEN], in[2][LEN];
  for (int m = 0; m < 2; m++) memset(out[m], 'a' + m, LEN);
  uint64_t rndv = counter_of(e[0], RNDV), medium = counter_of(e[0], MEDIUM);
  fmx_request_t s[2], r[2];
  for (int m = 0; m < 2; m++) {
    fmx_seg_t seg = {out[m], LEN};
    CHECK_EQ(fmx_isend(e[0], &seg, 1, to, 0x100 + (uint64_t)m, NULL, &s[m]), FMX_SUCCESS);
  }
  CHECK_EQ(counter_of(e[0], MEDIUM) - medium, 1);
  CHECK_EQ(counter_of(e[0], RNDV) - rndv, 1);
  for (int m = 0; m < 2; m++) {
    fmx_seg_t seg = {in[m], LEN};
    CHECK_EQ(fmx_irecv(e[1], &seg, 1, 0x100 + (uint64_t)m, ~0ull, NULL, &r[m]), FMX_SUCCESS);
  }
  for (int m = 0; m < 2; m++) {
    CHECK_EQ(wait_done(e[1], &r[m]).code, FMX_SUCCESS);
    CHECK_EQ(wait_done(e[0], &s[m]).code, FMX_SUCCESS);
    CHECK(memcmp(in[m], out[m], LEN) == 0);
  }
}

static void case_off(void) {
  fmx_endpoint_t e[MAX_EPS];
  int n = npus() + 2 <= MAX_EPS ? npus() + 2 : MAX_EPS;
  open_connected(e, n);
  CHECK_EQ(idle_yields(e[0], 100), 0);
}

static void in_child(const char *mode, void (*fn)(void)) {
  pid_t pid = fork();
  CHECK(pid >= 0);
  if (pid == 0) {
    if (mode) setenv("FMX_CROWDED", mode, 1);
    else unsetenv("FMX_CROWDED");
    CHECK_EQ(fmx_init(), FMX_SUCCESS);
    fn();
    _exit(0);
  }
  int status = 0;
  CHECK_EQ(waitpid(pid, &status, 0), pid);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    fprintf(stderr, "test_crowded: case FMX_CROWDED=%s failed\n", mode ? mode : "(unset)");
    exit(1);
  }
}

int main(void) {
  CHECK_EQ(fmx_idle(NULL), FMX_BAD_ENDPOINT);
  in_child(NULL, case_auto);
  in_child("on", case_on);
  in_child("on", case_on_classes);
  in_child("off", case_off);
  printf("test_crowded: ok\n");
  return 0;
}
