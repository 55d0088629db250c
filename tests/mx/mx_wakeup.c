/* SPDX-License-Identifier: MIT */
/*
 * mx_wakeup - mx_wakeup ends blocking calls on an endpoint: a thread
 * blocked with MX_INFINITE in mx_wait (a receive nothing matches),
 * mx_wait_any, mx_peek and mx_probe returns MX_SUCCESS with result 0; two
 * threads blocked at once in mx_wait both return; a thread blocked in
 * mx_connect (to an endpoint id nobody opened, MX_INFINITE) returns
 * MX_TIMEOUT. The main thread calls mx_wakeup every 20 ms until the
 * blocked threads are back (at most 30 s, then it fails).
 *
 * For the connect: fmx waits for an endpoint that is not open for
 * FMX_CONNECT_WAIT_MS only (1 s); run with it long (the test sets 600000)
 * so that only the wakeup can end the call.
 */
#include <pthread.h>

#include "mx_test.h"

enum call { C_WAIT, C_WAIT_ANY, C_PEEK, C_PROBE, C_CONNECT, C_NCALLS };
static const char *names[] = {"mx_wait", "mx_wait_any", "mx_peek", "mx_probe", "mx_connect"};

struct blocked {
  struct mxt *t;
  enum call call;
  mx_request_t req;
  mx_return_t rc;
  uint32_t result;
  int done;
};

static void *block(void *arg) {
  struct blocked *b = arg;
  mx_status_t st;
  b->result = 99;
  switch (b->call) {
    case C_WAIT: b->rc = mx_wait(b->t->ep, &b->req, MX_INFINITE, &st, &b->result); break;
    case C_WAIT_ANY: b->rc = mx_wait_any(b->t->ep, MX_INFINITE, 0x42, MX_MATCH_MASK_NONE, &st, &b->result); break;
    case C_PEEK: b->rc = mx_peek(b->t->ep, MX_INFINITE, &b->req, &b->result); break;
    case C_PROBE: b->rc = mx_probe(b->t->ep, MX_INFINITE, 0x42, MX_MATCH_MASK_NONE, &st, &b->result); break;
    case C_CONNECT: {
      uint64_t nic;
      uint32_t eid;
      mx_endpoint_addr_t addr;
      mxt_whoami(b->t->ep, &nic, &eid);
      b->rc = mx_connect(b->t->ep, nic, eid ? eid - 1 : eid + 1, MXT_KEY, MX_INFINITE, &addr);
      break;
    }
    default: break;
  }
  __atomic_store_n(&b->done, 1, __ATOMIC_RELEASE);
  return NULL;
}

/* Start n threads blocked in the given calls; wake until all are back. */
static void run(struct mxt *t, struct blocked *b, int n) {
  pthread_t th[4];
  for (int i = 0; i < n; i++) {
    b[i].t = t;
    MXT_EXPECT(pthread_create(&th[i], NULL, block, &b[i]) == 0, "pthread_create");
  }
  double end = mxt_now() + 30;
  for (;;) {
    int back = 0;
    for (int i = 0; i < n; i++) back += __atomic_load_n(&b[i].done, __ATOMIC_ACQUIRE);
    if (back == n) break;
    MXT_EXPECT(mxt_now() < end, "%d of %d blocked calls still blocked after 30 s of mx_wakeup", n - back, n);
    usleep(20000);
    MXT_OK(mx_wakeup(t->ep));
  }
  for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
}

int main(void) {
  mxt_prog = "mx_wakeup";
  struct mxt t;
  mxt_self(&t, NULL, 0);
  for (enum call c = C_WAIT; c < C_NCALLS; c++) {
    struct blocked b[2];
    memset(b, 0, sizeof b);
    int n = c == C_WAIT ? 2 : 1;
    for (int i = 0; i < n; i++) {
      b[i].call = c;
      if (c == C_WAIT || c == C_PEEK) MXT_OK(mx_irecv(t.ep, NULL, 0, 0x100 + i, MX_MATCH_MASK_NONE, NULL, &b[i].req));
    }
    run(&t, b, n);
    for (int i = 0; i < n; i++) {
      if (c == C_CONNECT) {
        MXT_EXPECT(b[i].rc == MX_TIMEOUT, "%s woken: %s, expected MX_TIMEOUT", names[c], mx_strerror(b[i].rc));
        continue;
      }
      MXT_EXPECT(b[i].rc == MX_SUCCESS && b[i].result == 0, "%s woken: %s, result %u", names[c],
                 mx_strerror(b[i].rc), b[i].result);
      if (c == C_WAIT || c == C_PEEK) { /* still pending: cancel it */
        uint32_t cancelled = 0;
        MXT_OK(mx_cancel(t.ep, &b[i].req, &cancelled));
        MXT_EXPECT(cancelled == 1, "cancel after a wakeup: result %u", cancelled);
      }
    }
    printf("%s: woken\n", names[c]);
  }
  return mxt_end(&t);
}
