/* SPDX-License-Identifier: MIT */
/*
 * mx_cancel - mx_cancel between two processes of this host (a pair,
 * mx_test.h), as Open-MX has it:
 *   - an unmatched receive: result 1, the request is gone, and the message
 *     it was posted for goes to the next receive posted (for each class:
 *     8 B, 20 KB, 1 MiB);
 *   - a receive its message matched already: result 0, and it completes
 *     with the message;
 *   - a send: MX_BAD_REQUEST (with MX_ERRORS_RETURN), and the send still
 *     completes.
 */
#include "mx_test.h"

#define M_C 0x2000000000000000ull
static const uint32_t sizes[] = {8, 20000, 1 << 20};
#define N (sizeof sizes / sizeof *sizes)

int main(void) {
  mxt_prog = "mx_cancel";
  struct mxt t;
  mxt_pair(&t, NULL, 0);
  unsigned char *a = mxt_alloc(1 << 20), *b = mxt_alloc(1 << 20);
  if (mxt_role) { /* child: sends */
    for (uint32_t i = 0; i < N; i++) {
      mxt_barrier(&t, 0x10 + i); /* the parent cancelled its first receive */
      mxt_fill(a, sizes[i], i);
      mx_segment_t seg = {a, sizes[i]};
      mx_request_t s;
      MXT_OK(mx_isend(t.ep, &seg, 1, t.peer, M_C | i, NULL, &s));
      mxt_wait_ok(t.ep, &s, sizes[i], "send");
    }
    /* Matched before the cancel: sent before the barrier message. */
    mxt_fill(a, 100, 77);
    mx_segment_t seg = {a, 100};
    mx_request_t s;
    MXT_OK(mx_isend(t.ep, &seg, 1, t.peer, M_C | 0x77, NULL, &s));
    mx_request_t s2 = s;
    uint32_t result = 9;
    mx_return_t r = mx_cancel(t.ep, &s2, &result);
    MXT_EXPECT(r == MX_BAD_REQUEST, "mx_cancel of a send: %s, expected MX_BAD_REQUEST", mx_strerror(r));
    mxt_wait_ok(t.ep, &s, 100, "send after a refused cancel");
    mxt_barrier(&t, 0x20);
  } else {
    for (uint32_t i = 0; i < N; i++) {
      mx_segment_t sa = {a, sizes[i]}, sb = {b, sizes[i]};
      mx_request_t ra, rb;
      uint32_t result = 0;
      memset(a, 0, sizes[i]);
      MXT_OK(mx_irecv(t.ep, &sa, 1, M_C | i, MX_MATCH_MASK_NONE, NULL, &ra));
      MXT_OK(mx_cancel(t.ep, &ra, &result));
      MXT_EXPECT(result == 1, "cancel of an unmatched receive: result %u", result);
      MXT_OK(mx_irecv(t.ep, &sb, 1, M_C | i, MX_MATCH_MASK_NONE, NULL, &rb));
      mxt_barrier(&t, 0x10 + i);
      mxt_wait_ok(t.ep, &rb, sizes[i], "the receive posted after the cancel");
      mxt_check(b, sizes[i], i, "after cancel");
      for (uint32_t k = 0; k < sizes[i]; k++)
        MXT_EXPECT(a[k] == 0, "the cancelled receive's buffer was written (byte %u of %u)", k, sizes[i]);
      mx_status_t st;
      MXT_OK(mx_test_any(t.ep, 0, 0, &st, &result));
      MXT_EXPECT(!result, "the cancelled receive completed (match 0x%" PRIx64 ")", st.match_info);
    }
    mx_segment_t seg = {b, 100};
    mx_request_t r;
    uint32_t result = 9;
    MXT_OK(mx_irecv(t.ep, &seg, 1, M_C | 0x77, MX_MATCH_MASK_NONE, NULL, &r));
    mxt_barrier(&t, 0x20); /* its message came before the barrier's: matched */
    MXT_OK(mx_cancel(t.ep, &r, &result));
    MXT_EXPECT(result == 0, "cancel of a matched receive: result %u", result);
    mxt_wait_ok(t.ep, &r, 100, "the matched receive");
    mxt_check(b, 100, 77, "matched receive");
    printf("mx_cancel: unmatched receives of %zu classes, a matched one, a send\n", N);
  }
  free(a);
  free(b);
  return mxt_end(&t);
}
