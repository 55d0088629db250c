/* SPDX-License-Identifier: MIT */
/*
 * mx_truncate - truncation between two processes of this host (a pair,
 * mx_test.h). The child sends messages of each class (16 B, 100 B, 20 KB,
 * 4 MiB) by mx_isend and by mx_issend; the parent receives each into a
 * buffer half as long (and the first into none at all). The receiver must
 * see MX_STATUS_TRUNCATED with msg_length the full length and xfer_length
 * what fitted, those bytes right and none past them written. The sender
 * sees it as MX has it: TRUNCATED for a synchronous send and for a
 * rendezvous (4 MiB is one whatever the tuning), success for a message
 * sent eagerly (16 B, 100 B); 20 KB may go either way, by the tuning.
 */
#include "mx_test.h"

#define M_T 0x1000000000000000ull
#define GUARD 64
static const uint32_t sizes[] = {16, 100, 20000, 4 << 20};
#define N (sizeof sizes / sizeof *sizes)

int main(void) {
  mxt_prog = "mx_truncate";
  struct mxt t;
  mxt_pair(&t, NULL, 0);
  unsigned char *buf = mxt_alloc((4 << 20) + GUARD);
  for (int sync = 0; sync < 2; sync++)
    for (uint32_t i = 0; i < N; i++) {
      uint32_t len = sizes[i], room = sync == 0 && i == 0 ? 0 : len / 2;
      uint64_t match = M_T | (uint64_t)sync << 8 | i;
      if (mxt_role) { /* child: sends */
        mxt_fill(buf, len, i);
        mx_segment_t seg = {buf, len};
        mx_request_t s;
        MXT_OK((sync ? mx_issend : mx_isend)(t.ep, &seg, 1, t.peer, match, NULL, &s));
        mx_status_t st = mxt_wait(t.ep, &s, "send");
        int eager = !sync && len <= 100, rndv = sync || len == (4u << 20);
        MXT_EXPECT(!(eager && st.code != MX_STATUS_SUCCESS) && !(rndv && st.code != MX_STATUS_TRUNCATED) &&
                       (st.code == MX_STATUS_SUCCESS || st.code == MX_STATUS_TRUNCATED),
                   "%s of %u bytes into %u: the sender sees %s", sync ? "mx_issend" : "mx_isend", len, room,
                   mx_strstatus(st.code));
        if (st.code == MX_STATUS_TRUNCATED)
          MXT_EXPECT(st.msg_length == len && st.xfer_length == room, "sender's status: msg_length %u xfer_length %u",
                     st.msg_length, st.xfer_length);
        printf("%s %8u into %8u: sender %s\n", sync ? "issend" : "isend ", len, room, mx_strstatus(st.code));
        fflush(stdout);
      } else {
        memset(buf, 0xee, room + GUARD);
        mx_segment_t seg = {buf, room};
        mx_request_t r;
        MXT_OK(mx_irecv(t.ep, &seg, 1, match, MX_MATCH_MASK_NONE, NULL, &r));
        mx_status_t st = mxt_wait(t.ep, &r, "receive");
        MXT_EXPECT(st.code == MX_STATUS_TRUNCATED, "%u bytes into %u: the receiver sees %s", len, room,
                   mx_strstatus(st.code));
        MXT_EXPECT(st.msg_length == len && st.xfer_length == room && st.match_info == match,
                   "receiver's status: msg_length %u xfer_length %u", st.msg_length, st.xfer_length);
        mxt_check(buf, room, i, "truncated receive");
        for (uint32_t k = room; k < room + GUARD; k++)
          MXT_EXPECT(buf[k] == 0xee, "%u bytes into %u: byte %u past the buffer written", len, room, k);
      }
      mxt_barrier(&t, 0x30 + i + sync * 8);
    }
  free(buf);
  return mxt_end(&t);
}
