/* SPDX-License-Identifier: MIT */
/*
 * mx_wait_any - context ids and wait_any between two processes of this
 * host (a pair, mx_test.h). Both endpoints split their matching space with
 * MX_PARAM_CONTEXT_ID (4 bits at shift 60). The child sends K messages in
 * each of contexts 1, 2 and 3 and collects its sends' completions with
 * mx_wait_any, context by context; the parent posts every receive, then
 * collects context 3 first, then 1, then 2, with mx_wait_any and
 * mx_test_any whose match and mask name one context: each returns only
 * its context's requests, in order. Also checked: a wait_any for an empty
 * context times out with result 0, and mx_irecv refuses a mask that does
 * not cover the context bits (MX_BAD_MATCHING_FOR_CONTEXT_ID_MASK) or a
 * match outside its mask (MX_BAD_MATCH_MASK).
 */
#include "mx_test.h"

#define SHIFT 60
#define CTX(c) ((uint64_t)(c) << SHIFT)
#define CTX_MASK CTX(0xf)
#define K 8

static uint32_t len_of(uint32_t c, uint32_t i) { return (c * 1000 + i * 517) % 70000; }

/* Collect K completions of context c with wait_any (any = 1) or test_any. */
static void collect(struct mxt *t, uint32_t c, int any_wait, const char *what) {
  for (uint32_t i = 0; i < K; i++) {
    mx_status_t st;
    uint32_t result = 0;
    double end = mxt_now() + 60;
    while (!result && mxt_now() < end) {
      if (any_wait)
        MXT_OK(mx_wait_any(t->ep, 1000, CTX(c), CTX_MASK, &st, &result));
      else
        MXT_OK(mx_test_any(t->ep, CTX(c), CTX_MASK, &st, &result));
    }
    MXT_EXPECT(result, "%s: context %u: completion %u never came", what, c, i);
    MXT_EXPECT(st.code == MX_STATUS_SUCCESS, "%s: %s", what, mx_strstatus(st.code));
    MXT_EXPECT(st.match_info == (CTX(c) | i), "%s: context %u: got match 0x%" PRIx64 ", expected 0x%" PRIx64, what, c,
               st.match_info, CTX(c) | i);
    MXT_EXPECT(st.xfer_length == len_of(c, i) && (uintptr_t)st.context == (c << 8 | i),
               "%s: context %u message %u: %u bytes, context %p", what, c, i, st.xfer_length, st.context);
  }
}

int main(void) {
  mxt_prog = "mx_wait_any";
  mx_param_t p = {.key = MX_PARAM_CONTEXT_ID};
  p.val.context_id.bits = 4;
  p.val.context_id.shift = SHIFT;
  struct mxt t;
  mxt_pair(&t, &p, 1);
  static unsigned char bufs[3][K][70000];
  if (mxt_role) { /* child: sends */
    mxt_barrier(&t, 0x1); /* the parent's receives are posted */
    for (uint32_t c = 1; c <= 3; c++)
      for (uint32_t i = 0; i < K; i++) {
        mxt_fill(bufs[c - 1][i], len_of(c, i), c << 8 | i);
        mx_segment_t seg = {bufs[c - 1][i], len_of(c, i)};
        mx_request_t req; /* collected by mx_wait_any below */
        MXT_OK(mx_isend(t.ep, &seg, 1, t.peer, CTX(c) | i, (void *)(uintptr_t)(c << 8 | i), &req));
      }
    for (uint32_t c = 3; c >= 1; c--) collect(&t, c, 1, "send");
    mxt_barrier(&t, 0x2);
    return mxt_end(&t);
  }
  /* parent: receives */
  mx_request_t bad;
  uint32_t result = 7;
  mx_status_t st;
  mx_return_t r = mx_irecv(t.ep, NULL, 0, CTX(1), CTX_MASK >> 1, NULL, &bad);
  MXT_EXPECT(r == MX_BAD_MATCHING_FOR_CONTEXT_ID_MASK, "a mask without the context bits: %s", mx_strerror(r));
  r = mx_irecv(t.ep, NULL, 0, CTX(1) | 0x10, CTX_MASK | 0xf, NULL, &bad);
  MXT_EXPECT(r == MX_BAD_MATCH_MASK, "a match outside its mask: %s", mx_strerror(r));
  for (uint32_t c = 1; c <= 3; c++)
    for (uint32_t i = 0; i < K; i++) {
      mx_segment_t seg = {bufs[c - 1][i], sizeof bufs[c - 1][i]};
      mx_request_t req;
      MXT_OK(mx_irecv(t.ep, &seg, 1, CTX(c) | i, MX_MATCH_MASK_NONE, (void *)(uintptr_t)(c << 8 | i), &req));
    }
  mxt_barrier(&t, 0x1);
  collect(&t, 3, 1, "receive");
  collect(&t, 1, 0, "receive");
  collect(&t, 2, 1, "receive");
  for (uint32_t c = 1; c <= 3; c++)
    for (uint32_t i = 0; i < K; i++) mxt_check(bufs[c - 1][i], len_of(c, i), c << 8 | i, "context message");
  MXT_OK(mx_wait_any(t.ep, 100, CTX(5), CTX_MASK, &st, &result));
  MXT_EXPECT(result == 0, "wait_any on an empty context: result %u", result);
  mxt_barrier(&t, 0x2);
  return mxt_end(&t);
}
