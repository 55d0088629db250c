/* SPDX-License-Identifier: MIT */
/*
 * mx_unexp - unexpected messages and forgotten requests between two
 * processes of this host (a pair, mx_test.h). The child sends one message
 * of each class (0 B to 2 MiB: tiny, small, medium, rendezvous) with a
 * NULL request (forgotten: no completion ever comes) before the parent
 * has posted anything. The parent waits until mx_iprobe sees every one
 * with its full length, then receives them: the even ones with a request
 * it waits on, the odd ones forgotten (a NULL request, or mx_forget after
 * posting), whose bytes must still land. Afterwards no completion is left
 * to find (mx_test_any), and a final barrier tells the child that its
 * buffers may go.
 */
#include "mx_test.h"

#define M_UNEXP 0x3000000000000000ull
static const uint32_t sizes[] = {0, 8, 100, 3000, 20000, 40000, 300000, 2 << 20};
#define N (sizeof sizes / sizeof *sizes)

int main(void) {
  mxt_prog = "mx_unexp";
  struct mxt t;
  mxt_pair(&t, NULL, 0);
  unsigned char *buf[N];
  for (uint32_t i = 0; i < N; i++) buf[i] = mxt_alloc(sizes[i]);
  if (mxt_role) { /* child: every send forgotten, none waited for */
    for (uint32_t i = 0; i < N; i++) {
      mxt_fill(buf[i], sizes[i], i);
      mx_segment_t seg = {buf[i], sizes[i]};
      MXT_OK(mx_isend(t.ep, &seg, 1, t.peer, M_UNEXP | i, NULL, NULL));
    }
    mxt_barrier(&t, 0x1); /* the parent has every byte: the buffers may go */
  } else {
    for (uint32_t i = 0; i < N; i++) { /* every message arrives unexpected */
      mx_status_t st;
      uint32_t found = 0;
      double end = mxt_now() + 30;
      while (!found && mxt_now() < end) {
        MXT_OK(mx_iprobe(t.ep, M_UNEXP | i, MX_MATCH_MASK_NONE, &st, &found));
        if (!found) MXT_OK(mx_progress(t.ep));
      }
      MXT_EXPECT(found, "message %u (%u bytes) never seen by mx_iprobe", i, sizes[i]);
      MXT_EXPECT(st.msg_length == sizes[i] && st.match_info == (M_UNEXP | i), "probe of %u: length %u match 0x%" PRIx64,
                 i, st.msg_length, st.match_info);
    }
    mx_request_t req[N];
    for (uint32_t i = 0; i < N; i++) {
      memset(buf[i], 0, sizes[i]);
      mx_segment_t seg = {buf[i], sizes[i]};
      int how = i % 4; /* 0, 2: waited; 1: NULL request; 3: mx_forget */
      MXT_OK(mx_irecv(t.ep, &seg, 1, M_UNEXP | i, MX_MATCH_MASK_NONE, NULL, how == 1 ? NULL : &req[i]));
      if (how == 3) MXT_OK(mx_forget(t.ep, &req[i]));
    }
    for (uint32_t i = 0; i < N; i += 2) {
      mxt_wait_ok(t.ep, &req[i], sizes[i], "receive");
      mxt_check(buf[i], sizes[i], i, "waited receive");
    }
    for (uint32_t i = 1; i < N; i += 2) { /* forgotten: the bytes land all the same */
      double end = mxt_now() + 30;
      int same = 0;
      while (!same && mxt_now() < end) {
        same = 1;
        for (uint64_t k = 0; k < sizes[i] && same; k++) same = buf[i][k] == mxt_byte(k, i);
        if (!same) MXT_OK(mx_progress(t.ep));
      }
      mxt_check(buf[i], sizes[i], i, "forgotten receive");
    }
    mx_status_t st;
    uint32_t result = 0;
    MXT_OK(mx_test_any(t.ep, 0, 0, &st, &result));
    MXT_EXPECT(!result, "a forgotten request completed to the program (match 0x%" PRIx64 ")", st.match_info);
    mxt_barrier(&t, 0x1);
    printf("mx_unexp: %zu unexpected messages, %zu received by forgotten requests\n", N, N / 2);
  }
  for (uint32_t i = 0; i < N; i++) free(buf[i]);
  return mxt_end(&t);
}
